"""tinyk: a small LLaMA-style decoder, taken apart section by section (course chapter 05).

The model lives in :mod:`tinyk.model`, read top to bottom in the chapter's order. Beside it,
each importing the model and never the reverse:

- :mod:`tinyk.generation`: generation with per-row stopping, padding and the KV cache;
- :mod:`tinyk.interop.upstream`: the upstream code's quirks, reproduced on purpose;
- :mod:`tinyk.interop.hf`, :mod:`tinyk.interop.gguf`: Hugging Face conversion (with its half-split RoPE), GGUF
  loading (SmolLM2);
- :mod:`tinyk.web.onnx_export`: the decoder as an ONNX graph, for a page that runs it;
- :mod:`tinyk.data`, :mod:`tinyk.training`, :mod:`tinyk.lessons.architecture_checks`: the 05.7 experiment;
- :mod:`tinyk.lessons.tracing` (shapes and parameter counts), :mod:`tinyk.lessons.plotting`,
  :mod:`tinyk.lessons.widgets`, :mod:`tinyk.lessons.shown_code`: for the notebooks;
- :mod:`tinyk.learner.parts`: the learner's own parts (05.2 to 05.6) checked and run in a model;
- :mod:`tinyk.courseware.exercises`, :mod:`tinyk.grading`, :mod:`tinyk.courseware.course`: the course itself;
- :mod:`tinyk.translations`, :mod:`tinyk.lessons.figure_text`: its Chinese edition, figures and printed
  output included.
"""

from tinyk.generation import KVCache, expand_kv_heads, generate, kv_cache_bytes, last_valid_index
from tinyk.interop.hf import (
    adjacent_to_half_order,
    apply_rotary_emb_half,
    permute_adjacent_to_half,
    permute_half_to_adjacent,
    rotate_half,
)
from tinyk.lessons.tracing import count_parameters, count_parameters_naive, parameter_budget
from tinyk.model import (
    MLP,
    Attention,
    CausalLMOutput,
    DecoderLayer,
    ModelConfig,
    RMSNorm,
    Transformer,
    apply_rotary_emb,
    precompute_freqs_cis,
    repeat_kv,
    reshape_for_broadcast,
    swiglu_hidden_dim,
)

__version__ = "0.1.0"

__all__ = [
    "MLP", "Attention", "CausalLMOutput", "DecoderLayer", "KVCache", "ModelConfig", "RMSNorm",
    "Transformer", "adjacent_to_half_order", "apply_rotary_emb", "apply_rotary_emb_half",
    "count_parameters", "count_parameters_naive", "expand_kv_heads", "generate",
    "kv_cache_bytes", "last_valid_index", "parameter_budget", "permute_adjacent_to_half",
    "permute_half_to_adjacent", "precompute_freqs_cis", "repeat_kv", "reshape_for_broadcast",
    "rotate_half", "swiglu_hidden_dim",
]
