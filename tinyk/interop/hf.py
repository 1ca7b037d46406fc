"""Conversion to and from Hugging Face ``transformers``' Llama (course sections 05.3 and 05.6).

The two differ in names and in one real way: Hugging Face's RoPE pairs coordinate ``i``
with ``i + d_h/2`` (``rotate_half``), ``tinyk`` pairs adjacent coordinates. The rows of
``wq`` and ``wk`` are permuted on the way (per head; ``wk`` has ``H_kv`` heads), so the two
models compute the same function. :func:`apply_rotary_emb_half` is that other RoPE, with
:func:`rotate_half` and :func:`adjacent_to_half_order`, for 05.3 to set beside the model's
adjacent one (:func:`tinyk.model.apply_rotary_emb`). ``transformers`` is an optional
dependency, imported only here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from tinyk.model import ModelConfig, Transformer, reshape_for_broadcast

if TYPE_CHECKING:
    from transformers import LlamaConfig, LlamaForCausalLM

__all__ = ["adjacent_to_half_order", "apply_rotary_emb_half", "from_hf", "from_hf_config",
           "permute_adjacent_to_half", "permute_half_to_adjacent", "rotate_half", "to_hf", "to_hf_config"]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN): Hugging Face's RoPE


def rotate_half(x: Tensor) -> Tensor:
    """``(x1, x2) -> (-x2, x1)`` for the two halves of the last axis (Hugging Face's RoPE)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_emb_half(xq: Tensor, xk: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    """RoPE in the half-split convention: coordinate ``i`` pairs with ``i + d_h/2`` (05.3).

    Same tables and shapes as :func:`apply_rotary_emb`. Applied to vectors permuted by
    :func:`adjacent_to_half_order`, it gives the adjacent convention's result, permuted.
    """
    def rotate(x: Tensor) -> Tensor:
        half = x[..., : x.shape[-1] // 2]  # B×T×H×d_h/2, only for its shape
        c, s = reshape_for_broadcast(cos, half), reshape_for_broadcast(sin, half)
        c, s = torch.cat((c, c), dim=-1), torch.cat((s, s), dim=-1)  # angle of i and i + d_h/2
        return x * c + rotate_half(x) * s

    return rotate(xq).type_as(xq), rotate(xk).type_as(xk)


def adjacent_to_half_order(head_dim: int) -> Tensor:
    """Index order taking a head from adjacent pairs to half-split: ``[0, 2, 4, …, 1, 3, 5, …]``.

    ``x_half = x_adjacent[..., adjacent_to_half_order(d_h)]``: the first coordinate of
    every pair goes to the first half, the second to the second half.
    """
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))


def permute_adjacent_to_half(w: Tensor, n_heads: int) -> Tensor:
    """Reorder the output rows of a q or k projection from adjacent to half-split (05.3).

    ``w``: ``(n_heads·d_h) × d`` (``n_heads`` is ``H_kv`` for ``wk``). This is the
    conversion Meta/llama.cpp weights need before Hugging Face's ``rotate_half`` RoPE.
    """
    out_features, in_features = w.shape
    d_h = out_features // n_heads
    # H×(d_h/2)×2×d  ->  H×2×(d_h/2)×d: second coordinates of all pairs move to the back half
    return w.view(n_heads, d_h // 2, 2, in_features).transpose(1, 2).reshape(out_features, in_features)


def permute_half_to_adjacent(w: Tensor, n_heads: int) -> Tensor:
    """Inverse of :func:`permute_adjacent_to_half`: Hugging Face layout back to adjacent pairs."""
    out_features, in_features = w.shape
    d_h = out_features // n_heads
    # H×2×(d_h/2)×d  ->  H×(d_h/2)×2×d
    return w.view(n_heads, 2, d_h // 2, in_features).transpose(1, 2).reshape(out_features, in_features)


# tinyk name -> Hugging Face name, per layer ("{i}" is the layer index)
_LAYER_NAMES = {
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.o_proj.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "feed_forward.w2.weight": "mlp.down_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}


def _convert_layers(src: dict, cfg: ModelConfig, to_hf: bool) -> dict:
    """Every layer's weights under the other library's names; q/k rows permuted per head."""
    permute = permute_adjacent_to_half if to_hf else permute_half_to_adjacent
    heads = {"attention.wq.weight": cfg.n_heads, "attention.wk.weight": cfg.n_kv_heads}
    out = {}
    for i in range(cfg.n_layers):
        for ours, theirs in _LAYER_NAMES.items():
            ours_key, theirs_key = f"layers.{i}.{ours}", f"model.layers.{i}.{theirs}"
            source, target = (ours_key, theirs_key) if to_hf else (theirs_key, ours_key)
            weight = src[source]
            out[target] = permute(weight, heads[ours]) if ours in heads else weight
    return out


def _import_transformers():  # returns the transformers module
    try:
        import transformers
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("tinyk.interop.hf needs Hugging Face transformers: "
                          "pip install transformers") from err
    return transformers


# The sizes both configs hold, under their two names (ModelConfig's, LlamaConfig's): one table
# for the conversion both ways.
_SAME_SIZES = (
    ("vocab_size", "vocab_size"),
    ("dim", "hidden_size"),
    ("n_layers", "num_hidden_layers"),
    ("n_heads", "num_attention_heads"),
    ("n_kv_heads", "num_key_value_heads"),
    ("max_seq_len", "max_position_embeddings"),
    ("norm_eps", "rms_norm_eps"),
)


def to_hf_config(config: ModelConfig) -> LlamaConfig:
    """A ``LlamaConfig`` for the same sizes; eps and weight tying set explicitly.

    (``LlamaConfig`` defaults to ``rms_norm_eps=1e-6`` and untied weights; the Tiny-K
    model uses its config's eps and always ties.)
    """
    transformers = _import_transformers()
    return transformers.LlamaConfig(
        **{theirs: getattr(config, ours) for ours, theirs in _SAME_SIZES},
        intermediate_size=config.mlp_hidden_dim,
        head_dim=config.head_dim,
        rope_theta=config.rope_theta,
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        attention_dropout=config.dropout,
        hidden_act="silu",
        pad_token_id=config.pad_token_id,
    )


def from_hf_config(hf_config: LlamaConfig) -> ModelConfig:
    """The ``ModelConfig`` of a Llama config; refuses what Tiny-K cannot represent."""
    problems = []
    if not getattr(hf_config, "tie_word_embeddings", False):
        problems.append("tie_word_embeddings=False (Tiny-K always ties the head)")
    if getattr(hf_config, "attention_bias", False) or getattr(hf_config, "mlp_bias", False):
        problems.append("biases in attention or MLP")
    head_dim = getattr(hf_config, "head_dim", None)
    if head_dim is not None and head_dim * hf_config.num_attention_heads != hf_config.hidden_size:
        problems.append(f"head_dim={head_dim} != hidden_size / num_attention_heads")
    rope = getattr(hf_config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        problems.append(f"rope_type={rope['rope_type']!r} (only plain RoPE)")
    if problems:
        raise ValueError("cannot convert this Llama config to Tiny-K: " + "; ".join(problems))
    theta = rope.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    pad = hf_config.pad_token_id if hf_config.pad_token_id is not None else 0
    return ModelConfig(
        **{ours: getattr(hf_config, theirs) for ours, theirs in _SAME_SIZES},
        hidden_dim=hf_config.intermediate_size,
        dropout=float(hf_config.attention_dropout),
        pad_token_id=pad,
        rope_theta=float(theta),
    )


def to_hf(model: Transformer) -> LlamaForCausalLM:
    """A ``LlamaForCausalLM`` computing the same logits as ``model`` (q/k rows permuted)."""
    transformers = _import_transformers()
    cfg = model.config
    dtype = next(model.parameters()).dtype
    hf = transformers.LlamaForCausalLM(to_hf_config(cfg)).to(dtype)
    src = model.state_dict()
    state = {"model.embed_tokens.weight": src["tok_embeddings.weight"],
             "model.norm.weight": src["norm.weight"],
             "lm_head.weight": src["tok_embeddings.weight"]}
    state.update(_convert_layers(src, cfg, to_hf=True))
    hf.load_state_dict(state, strict=True)
    hf.eval()
    return hf


def from_hf(hf_model: LlamaForCausalLM) -> Transformer:
    """A Tiny-K :class:`Transformer` computing the same logits as a Llama model."""
    cfg = from_hf_config(hf_model.config)
    src = hf_model.state_dict()
    dtype = src["model.embed_tokens.weight"].dtype
    state = {"tok_embeddings.weight": src["model.embed_tokens.weight"],
             "output.weight": src["model.embed_tokens.weight"],
             "norm.weight": src["model.norm.weight"]}
    state.update(_convert_layers(src, cfg, to_hf=False))
    model = Transformer(cfg).to(dtype)
    with torch.no_grad():
        model.load_state_dict(state, strict=True)
    return model.eval()
