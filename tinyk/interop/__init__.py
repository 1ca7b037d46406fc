"""Interop: ``tinyk``'s model and other formats and code (sections 05.3, 05.4, 05.6, 05.9, 05.10).

Hugging Face ``transformers``' Llama (:mod:`~tinyk.interop.hf`), the upstream Tiny-K code's
quirks reproduced on purpose (:mod:`~tinyk.interop.upstream`), and GGUF files: their loading
(:mod:`~tinyk.interop.gguf`), dequantisation (:mod:`~tinyk.interop.gguf_quants`) and quantised
blocks (:mod:`~tinyk.interop.gguf_blocks`).

May import: the model core (``tinyk``'s top-level modules) and the package's words
(:mod:`tinyk.translations.package_catalogue`). Nothing else of ``tinyk``.
"""
