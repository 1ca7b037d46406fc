"""tinyk: a small LLaMA-style decoder, taken apart section by section (course chapter 05).

The model lives in :mod:`tinyk.model`, read top to bottom in the chapter's order, beside the
rest of the model core: :mod:`tinyk.config_rules` (what a configuration must satisfy),
:mod:`tinyk.generation` (per-row stopping, padding and the KV cache), :mod:`tinyk.data` and
:mod:`tinyk.training` (the 05.7 experiment) and :mod:`tinyk.environment` (the run-time
switches). The rest of the package is laid out by job, each subpackage importing the core and
never the reverse (the README's layout table says which may import which):

- :mod:`tinyk.interop`: Hugging Face (with its half-split RoPE), the upstream code's quirks, GGUF (SmolLM2);
- :mod:`tinyk.web`: the decoder as an ONNX graph, for a page that runs it;
- :mod:`tinyk.lessons`: what the notebooks use besides the model (figures, sliders, shown code,
  traces, 05.7's checks);
- :mod:`tinyk.learner`: the learner's own parts checked and run in a model;
- :mod:`tinyk.courseware`, :mod:`tinyk.grading`, :mod:`tinyk.reports`: the course's files, its
  grader and its class reports;
- :mod:`tinyk.translations`: the Chinese edition's tools and the package's own words.

This module alone re-exports names: those a learner imports (``from tinyk import ...``).
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
