"""A decoder made of a state dict's tensors and the learner's ten parts, and of nothing else of
the course's parts (course: the instructors' page, grading; 05.10's capstone).

In the grader's run of a notebook, the process that runs the learner's code holds no class,
function or code object of a part the notebook's exercises ask for (:func:`tinyk.grading.withheld.withhold`).
05.10.3's test puts the learner's ten parts into SmolLM2: in that process the file's weights
are loaded as plain tensors (:func:`tinyk.interop.gguf.gguf_weights`), no ``tinyk`` model is built,
and :func:`assemble` builds the model from those tensors and the learner's parts. What holds
them together is no part of the build track: the token embedding and the tied head, each
layer's q/k/v/o projections and its KV cache, the call of the learner's ``decoder_block``
with its four callables, and :class:`tinyk.Transformer`'s forward pass (its input checks, the
RoPE rows and the mask that the learner's ``rope_tables``, ``token_positions`` and
``causal_padding_mask`` give, the loss by their ``shifted_loss``). Every part is the
learner's, each call of it watched and named as :func:`tinyk.learner.parts.build_model` does
(:func:`tinyk.learner.part_compare.call_part`); none is ``tinyk``'s own, so all ten must be given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.learner.own_code import trusted
from tinyk.learner.part_checks import check_kind
from tinyk.learner.part_compare import PART_NAMES, PartError, call_part, reject_unknown
from tinyk.model import KVCacheProtocol, ModelConfig, Transformer
from tinyk.translations.package_catalogue import say

__all__ = ["LearnersModel", "assemble"]


def _named(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, each call watched, a stub or a crash reported as a :class:`PartError` naming it."""
    return functools.partial(call_part, name, fn)


def _within(state: Mapping[str, Tensor], prefix: str) -> dict[str, Tensor]:
    """The tensors of ``state`` under ``prefix``, named without it."""
    return {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)}


class _Weight(nn.Module):
    """``x Wᵀ`` with a matrix of the state dict (no bias, no initialisation of its own)."""

    def __init__(self, weight: Tensor) -> None:
        super().__init__()
        tied = isinstance(weight, nn.Parameter)  # the head: the embedding's own matrix
        self.weight = weight if tied else nn.Parameter(weight, requires_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight)


class _Projections(nn.Module):
    """One layer's q/k/v/o projections and its cache, around the learner's ``apply_rope`` and
    ``gqa_attention`` (which gets the mask as the model gives it: None for a causal call)."""

    def __init__(self, config: ModelConfig, layer_id: int, state: Mapping[str, Tensor],
                 parts: Mapping[str, Any]) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.sizes = (config.n_heads, config.n_kv_heads, config.head_dim)
        self.wq, self.wk, self.wv, self.wo = (_Weight(state[f"{name}.weight"])
                                              for name in ("wq", "wk", "wv", "wo"))
        self.rotate = _named("apply_rope", parts["apply_rope"])
        self.attend = _named("gqa_attention", parts["gqa_attention"])

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None = None,
                cache: KVCacheProtocol | None = None) -> Tensor:
        B, T, _ = x.shape
        n_q, n_kv, d_h = self.sizes
        q, k = self.rotate(self.wq(x).view(B, T, n_q, d_h), self.wk(x).view(B, T, n_kv, d_h), cos, sin)
        v = self.wv(x).view(B, T, n_kv, d_h)
        if cache is not None:
            k, v = cache.update(self.layer_id, k, v)  # B×T_k×H_kv×d_h
        heads = self.attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask)  # B×H_q×T×d_h
        return self.wo(heads.transpose(1, 2).reshape(B, T, n_q * d_h))


class _Layer(nn.Module):
    """A layer: the learner's norms and MLP (modules of their classes, holding the state dict's
    tensors), the projections, and the learner's ``decoder_block`` that calls them."""

    def __init__(self, config: ModelConfig, layer_id: int, state: Mapping[str, Tensor],
                 parts: Mapping[str, Any]) -> None:
        super().__init__()
        self.attention_norm = _module(parts, "RMSNorm", _within(state, "attention_norm."), config.dim,
                                      eps=config.norm_eps)
        self.attention = _Projections(config, layer_id, _within(state, "attention."), parts)
        self.ffn_norm = _module(parts, "RMSNorm", _within(state, "ffn_norm."), config.dim,
                                eps=config.norm_eps)
        self.feed_forward = _module(parts, "SwiGLU", _within(state, "feed_forward."), config.dim,
                                    config.mlp_hidden_dim)
        self.block = parts["decoder_block"]

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None = None,
                cache: KVCacheProtocol | None = None) -> Tensor:
        def attention(y: Tensor) -> Tensor:
            return self.attention(y, cos, sin, mask, cache)

        # the callables are the model's: the watch of the learner's block looks through them
        return call_part("decoder_block", self.block, x, trusted(attention), trusted(self.feed_forward),
                         trusted(self.attention_norm), trusted(self.ffn_norm))


def _module(parts: Mapping[str, Any], name: str, state: dict[str, Tensor], *args: Any,
            **kwargs: Any) -> nn.Module:
    """An instance of the learner's class ``name`` holding ``state``'s tensors, its calls watched."""
    module = call_part(name, parts[name], *args, **kwargs)
    try:
        module.load_state_dict(state, assign=True)  # the same tensors, not copies
    except RuntimeError as err:
        raise PartError(name, say("its state_dict does not fit tinyk's {module}: {error}",
                                  module={"SwiGLU": "MLP"}.get(name, name), error=err)) from None
    module.forward = _named(name, module.forward)
    return module


class LearnersModel(Transformer):
    """A :class:`tinyk.Transformer` (its forward pass, its input checks, ``generate`` and
    :class:`tinyk.KVCache` work with it) whose every part is the learner's: see the module's text."""

    def __init__(self, config: ModelConfig, state: Mapping[str, Tensor], parts: Mapping[str, Any]) -> None:
        nn.Module.__init__(self)  # not Transformer's, which builds tinyk's own layers
        self.config = config
        self.tok_embeddings = nn.Embedding.from_pretrained(state["tok_embeddings.weight"], freeze=True)
        self.dropout = nn.Identity()
        self.layers = nn.ModuleList(_Layer(config, i, _within(state, f"layers.{i}."), parts)
                                    for i in range(config.n_layers))
        self.norm = _module(parts, "RMSNorm", _within(state, "norm."), config.dim, eps=config.norm_eps)
        self.output = _Weight(self.tok_embeddings.weight)  # tied: one matrix, two roles
        cos, sin = call_part("rope_tables", parts["rope_tables"], config.head_dim, config.max_seq_len,
                             config.rope_theta)
        self.register_buffer("freqs_cos", torch.as_tensor(cos, dtype=torch.float32), persistent=False)
        self.register_buffer("freqs_sin", torch.as_tensor(sin, dtype=torch.float32), persistent=False)
        self.token_positions = _named("token_positions", parts["token_positions"])
        self.causal_padding_mask = _named("causal_padding_mask", parts["causal_padding_mask"])
        self.shifted_loss = _named("shifted_loss", parts["shifted_loss"])
        self.eval()


def assemble(config: ModelConfig, state: Mapping[str, Tensor], parts: Mapping[str, Any]) -> LearnersModel:
    """The model of ``config`` made of ``state``'s tensors (shared, not copied) and the learner's
    ``parts``, all ten of :data:`tinyk.learner.part_compare.PART_NAMES`; a part that is not given,
    of the wrong kind, a stub or that crashes while the model is built is a :class:`PartError`
    naming it."""
    reject_unknown(parts)
    for name in PART_NAMES:
        if name not in parts:
            raise PartError(name, "not given: the model is assembled from the learner's parts alone")
        check_kind(name, parts[name])
    return LearnersModel(config, state, parts)
