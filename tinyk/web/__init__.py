"""The decoder in a browser: ONNX graphs and the numbers of the book's live page (05.3 to 05.10).

:mod:`~tinyk.web.onnx_export` (the decoder as an ONNX graph), :mod:`~tinyk.web.onnx_layers` (a
deep decoder from the export of two layers), :mod:`~tinyk.web.onnx_web` (SmolLM2 for a page,
its weights the GGUF's own blocks), :mod:`~tinyk.web.playground` (what the live page runs,
computed in Python).

May import: the model core, :mod:`tinyk.interop`, the package's words. Nothing else of ``tinyk``.
"""
