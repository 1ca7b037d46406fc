"""The Tiny-K decoder, bottom-up, in the order of chapter 05.

Sections: 05.1 config, 05.2 RMSNorm, 05.3 RoPE, 05.4 ``repeat_kv`` and attention,
05.5 SwiGLU and the decoder layer, 05.6 the transformer and its tied vocabulary head.
Generation and the KV cache (``tinyk.generation``), the upstream's quirks
(``tinyk.interop.upstream``) and conversions (``tinyk.interop.hf``, with Hugging Face's half-split RoPE)
live beside this file and import it; this file imports none of them, nor the course's
parameter counts (``tinyk.lessons.tracing``). What the model needs from a cache is written here, as
:class:`KVCacheProtocol`.

Shape legend, used in every comment below:

    B     batch                 T     length (tokens in this call)
    d     model width (dim)     V     vocabulary size
    H_q   query heads           H_kv  key/value heads
    d_h   head width, d / H_q   m     MLP hidden width
    L     layers                T_k   key length (cached tokens + T)

State-dict names follow the upstream (``wq, wk, wv, wo, w1, w2, w3, attention_norm,
ffn_norm``) so weights and lessons carry over; everything else is spelled out in words.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.config_rules import check_config, check_logits_to_keep, keeps_every_position, refuse_changes
from tinyk.translations.package_catalogue import say

__all__ = [
    "ModelConfig",
    "KVCacheProtocol",
    "RMSNorm",
    "precompute_freqs_cis",
    "reshape_for_broadcast",
    "apply_rotary_emb",
    "repeat_kv",
    "Attention",
    "MLP",
    "DecoderLayer",
    "Transformer",
    "CausalLMOutput",
    "swiglu_hidden_dim",
    "causal_triangle",
    "padding_to_attention",
    "valid_tokens",
    "token_positions",
    "check_token_ids",
    "causal_lm_loss",
]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)


# ---------------------------------------------------------------------------
# 05.1  Fix the sizes first
# ---------------------------------------------------------------------------


def swiglu_hidden_dim(dim: int, multiple_of: int, hidden_dim: int | None = None) -> int:
    """MLP width ``m`` for model width ``dim`` (course section 05.5).

    A plain FFN of width ``4d`` holds ``8d²`` weights; three matrices hold ``3dm``, so an
    equal budget gives ``m ≈ 8d/3``. The upstream truncates that to an integer and rounds
    it **up** to a multiple of ``multiple_of`` (a memory-layout choice, not maths).
    An explicit ``hidden_dim`` skips the rule.

    Example: ``swiglu_hidden_dim(768, 64) == 2048``.
    """
    if hidden_dim is not None:
        return hidden_dim
    budget_width = int(2 * (4 * dim) / 3)  # 8d/3, truncated like the upstream
    return multiple_of * math.ceil(budget_width / multiple_of)


@refuse_changes  # assigning or deleting a field says what to do instead (tinyk.config_rules)
@dataclass(frozen=True)
class ModelConfig:
    """Every size of the decoder, validated once (course section 05.1).

    Field names are the upstream's (``k_model.py``'s ``ModelConfig``). Derived at
    construction: ``head_dim`` (``d_h = d / H_q``), ``n_rep`` (``H_q / H_kv``, query heads
    per K/V head) and ``mlp_hidden_dim`` (``m``). A rule that fails raises ``ValueError``
    (``TypeError`` for a size that is not an int) naming the field, its value, the rule and
    what to change.

    A config is frozen, so the derived sizes always match the fields they come from:
    assigning a field raises ``FrozenInstanceError``; ``dataclasses.replace(config,
    dim=64)`` builds a new, validated config instead.

    The defaults are the upstream's teaching setting (768 wide, 12 layers, 16 query heads,
    8 K/V heads, 6144 tokens): not an official LLaMA 2 configuration. ``ModelConfig.tiny()``
    is the course's CPU experiment.
    """

    model_type: ClassVar[str] = "Tiny-K"

    dim: int = 768  # d
    n_layers: int = 12  # L
    n_heads: int = 16  # H_q
    n_kv_heads: int | None = 8  # H_kv; None means H_kv = H_q (plain multi-head attention)
    vocab_size: int = 6144  # V
    hidden_dim: int | None = None  # m; None derives it from dim and multiple_of (05.5)
    multiple_of: int = 64  # m is rounded up to a multiple of this
    norm_eps: float = 1e-5  # RMSNorm's epsilon
    max_seq_len: int = 512  # longest sequence; sizes the RoPE tables and the cache
    dropout: float = 0.0
    flash_attn: bool = True  # True: PyTorch's scaled_dot_product_attention; False: by hand
    pad_token_id: int = 0
    rope_theta: float = 10000.0  # RoPE base: omega_i = theta^(-2i/d_h)

    head_dim: int = field(init=False)  # d_h
    n_rep: int = field(init=False)  # H_q / H_kv
    mlp_hidden_dim: int = field(init=False)  # m

    def __post_init__(self) -> None:
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)  # frozen: set once, here
        check_config(self)  # each rule, its message naming the field, its value and the rule
        object.__setattr__(self, "head_dim", self.dim // self.n_heads)
        object.__setattr__(self, "n_rep", self.n_heads // self.n_kv_heads)
        object.__setattr__(self, "mlp_hidden_dim",
                           swiglu_hidden_dim(self.dim, self.multiple_of, self.hidden_dim))

    @classmethod
    def upstream_default(cls) -> ModelConfig:
        """The upstream's teaching default: 82,594,560 unique parameters."""
        return cls()

    @classmethod
    def tiny(cls, vocab_size: int = 13, max_seq_len: int = 64) -> ModelConfig:
        """The course's CPU experiment (05.7): ``d=32, H_q=4, H_kv=2, m=64, L=2``.

        With the 13-symbol vocabulary of ``tinyk.data`` it has 19,008 unique parameters.
        """
        return cls(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=vocab_size,
                   hidden_dim=64, max_seq_len=max_seq_len)


# ---------------------------------------------------------------------------
# 05.2  RMSNorm rescales length, it does not subtract the mean
# ---------------------------------------------------------------------------


class RMSNorm(nn.Module):
    """``y_i = γ_i x_i / r`` with ``r = sqrt(mean_j x_j² + ε)`` (course section 05.2).

    No mean is subtracted and there is no bias: ``x = (3, 4)`` becomes ``(3, 4) / sqrt(12.5)``,
    both still positive. Normalises in float32, casts back to the input dtype, *then*
    multiplies by the weight, as the upstream and Hugging Face do. One difference: a float64
    input is normalised in float64 here, while those two always compute in float32 (the
    upstream's ``x.float()``, Hugging Face's ``.to(torch.float32)``), so float64 gradient
    checks hold to float64's precision.
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # γ, one gain per feature

    def _norm(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: Tensor) -> Tensor:
        # fp16/bf16 are upcast so x² cannot overflow; float64 is never downcast.
        compute_dtype = torch.promote_types(x.dtype, torch.float32)
        return self._norm(x.to(compute_dtype)).to(x.dtype) * self.weight


# ---------------------------------------------------------------------------
# 05.3  RoPE: relative offset inside the dot product
# ---------------------------------------------------------------------------


def precompute_freqs_cis(
    dim: int, end: int, theta: float = 10000.0, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """Real cos/sin tables of RoPE, each ``end × dim/2`` (course section 05.3).

    ``dim`` is the **head width** ``d_h``, not the model width: pair ``i`` of a head turns
    at ``ω_i = theta^(-2i/d_h)``, and row ``t`` holds ``cos(t ω_i)`` / ``sin(t ω_i)``.
    Passing ``d`` builds tables ``d/2`` wide that no longer fit a head (05.3 shows it).
    Real tables instead of complex numbers follow llama2.c (MIT) and the upstream.
    """
    if dim <= 0 or dim % 2:
        raise ValueError(say("precompute_freqs_cis: dim={dim} must be a positive even head width (RoPE "
                             "rotates pairs of coordinates)", dim=dim))
    omega = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=dtype) / dim))  # d_h/2
    angles = torch.outer(torch.arange(end, dtype=dtype), omega)  # end × d_h/2
    return torch.cos(angles), torch.sin(angles)


def reshape_for_broadcast(freqs: Tensor, x: Tensor) -> Tensor:
    """View a RoPE table so it broadcasts against ``x`` of shape ``B×T×H×d_h/2``.

    ``T×d_h/2`` (one position per step, shared by the batch) becomes ``1×T×1×d_h/2``;
    ``B×T×d_h/2`` (each row its own positions, e.g. left padding) becomes ``B×T×1×d_h/2``.
    """
    if x.ndim != 4:
        raise ValueError(say("reshape_for_broadcast: x must be B×T×H×d_h/2, got {shape}",
                             shape=tuple(x.shape)))
    if freqs.ndim == 2 and freqs.shape == (x.shape[1], x.shape[-1]):
        return freqs.view(1, x.shape[1], 1, x.shape[-1])  # 1×T×1×d_h/2
    if freqs.ndim == 3 and freqs.shape[1:] == (x.shape[1], x.shape[-1]):
        return freqs.unsqueeze(2)  # B×T×1×d_h/2
    raise ValueError(say(
        "reshape_for_broadcast: table of shape {table} does not fit x of shape {shape}; expected (T, d_h/2) "
        "= ({T}, {half}) or (B, T, d_h/2); was the table built from the model width instead of d_h?",
        table=tuple(freqs.shape), shape=tuple(x.shape), T=x.shape[1], half=x.shape[-1]))


def _rotate_adjacent(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    # x: B×T×H×d_h, pairs (x0, x1), (x2, x3), ...
    x_re, x_im = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)  # each B×T×H×d_h/2
    cos, sin = reshape_for_broadcast(cos, x_re), reshape_for_broadcast(sin, x_re)
    out_re = x_re * cos - x_im * sin
    out_im = x_re * sin + x_im * cos
    return torch.stack([out_re, out_im], dim=-1).flatten(3)  # B×T×H×d_h/2×2 -> B×T×H×d_h


def apply_rotary_emb(xq: Tensor, xk: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    """Rotate each **adjacent** pair of q and k by its position's angle (05.3).

    ``xq``: ``B×T×H_q×d_h``, ``xk``: ``B×T×H_kv×d_h``; ``cos``/``sin``: ``T×d_h/2`` rows of
    the tables for the positions of these ``T`` tokens (for cached decoding, the rows
    ``start_pos:start_pos+T``, never restarting at 0), or ``B×T×d_h/2`` for per-row
    positions. "Real/imaginary" parts are only names: everything is a real tensor. The
    pairing and the real arithmetic follow llama2.c (MIT) and the upstream.
    """
    return (_rotate_adjacent(xq, cos, sin).type_as(xq),
            _rotate_adjacent(xk, cos, sin).type_as(xk))


# ---------------------------------------------------------------------------
# 05.4  GQA reduces K/V heads, not Q heads
# ---------------------------------------------------------------------------


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """Give every query head its K/V head: ``B×T×H_kv×d_h -> B×T×(H_kv·n_rep)×d_h`` (05.4).

    Equivalent to ``torch.repeat_interleave(x, n_rep, dim=2)``; the expand-and-reshape
    follows llama2.c (MIT) and the upstream. Each K/V head serves a
    **contiguous** group of query heads; with ``H_q = 4, H_kv = 2``::

        query head   0  1  2  3
        K/V head     0  0  1  1      (not 0 1 0 1, which silently regroups the heads)
    """
    if n_rep == 1:
        return x
    B, T, n_kv_heads, head_dim = x.shape
    return (
        x[:, :, :, None, :]  # B×T×H_kv×1×d_h: a new axis for the copies
        .expand(B, T, n_kv_heads, n_rep, head_dim)  # B×T×H_kv×n_rep×d_h, no copy yet
        .reshape(B, T, n_kv_heads * n_rep, head_dim)  # B×T×H_q×d_h, head h reads K/V head h // n_rep
    )


class KVCacheProtocol(Protocol):
    """What attention needs from a KV cache (course section 05.4); ``tinyk.generation.KVCache``
    is the implementation.

    ``length`` is the number of tokens already stored: the new tokens are written at
    ``length..length+T-1``, which are also their RoPE positions when no attention mask is
    given (with one, each row's positions count its real tokens). Each layer calls ``update``
    with this call's keys and values and attends over what it returns; the model calls
    ``advance(T)`` once every layer has written.
    """

    @property
    def length(self) -> int:
        """Tokens stored so far."""
        ...

    def update(self, layer_id: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store ``B×T×H_kv×d_h`` keys/values after the stored ones; return all, ``B×T_k×H_kv×d_h``."""
        ...

    def advance(self, n_tokens: int) -> None:
        """Count ``n_tokens`` more stored tokens."""
        ...


class Attention(nn.Module):
    """Causal grouped-query self-attention (course section 05.4).

    ``wq``: ``d -> H_q·d_h``; ``wk``, ``wv``: ``d -> H_kv·d_h`` (the GQA saving);
    ``wo``: ``H_q·d_h -> d``, the projection back into the residual stream.

    Two paths compute the same thing: ``config.flash_attn=True`` calls PyTorch's
    ``scaled_dot_product_attention`` with its own grouping (``enable_gqa``; PyTorch picks a
    kernel for the device: on a CPU without dropout, its own CPU implementation of the
    flash-attention algorithm, not the GPU kernel; with dropout, its reference math path);
    ``False`` expands K/V with :func:`repeat_kv` and runs the matrix products by hand. On
    both, a query row with no allowed key (a left-padding position) gives zeros, never NaN
    (tested on a CPU).

    Seams: ``apply_rope`` (:func:`apply_rotary_emb`), ``repeat_kv`` (:func:`repeat_kv`, used by
    the hand-written path) and ``attend`` (the method below) are attributes that a function
    of the same signature may replace on one instance; ``tinyk.learner.parts`` plugs a learner's
    parts in that way.
    """

    apply_rope: Callable[[Tensor, Tensor, Tensor, Tensor], tuple[Tensor, Tensor]]
    repeat_kv: Callable[[Tensor, int], Tensor]

    def __init__(self, config: ModelConfig, layer_id: int = 0) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        self.head_dim = config.head_dim
        self.n_rep = config.n_rep
        self.wq = nn.Linear(config.dim, config.n_heads * config.head_dim, bias=False)
        self.wk = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wv = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)
        self.attn_dropout = nn.Dropout(config.dropout)  # on the attention weights
        self.resid_dropout = nn.Dropout(config.dropout)  # on the output, before the residual sum
        self.flash = config.flash_attn  # True: scaled_dot_product_attention; False: by hand
        self.apply_rope = apply_rotary_emb  # 05.3
        self.repeat_kv = repeat_kv

    def forward(
        self,
        x: Tensor,
        cos: Tensor,
        sin: Tensor,
        mask: Tensor | None = None,
        cache: KVCacheProtocol | None = None,
    ) -> Tensor:
        """``x``: ``B×T×d`` -> ``B×T×d``.

        ``mask``: ``None`` for attention without padding (causal: the ``T`` new tokens are
        the last ``T`` of the ``T_k`` keys, so each sees the whole cache and the new tokens
        up to itself), or a boolean ``B×1×T×T_k`` (True = may attend) that already holds
        causality and padding; build it with :func:`padding_to_attention`. ``cache``:
        appends this call's K/V (unexpanded, ``B×T×H_kv×d_h``) and attends over everything
        stored.
        """
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)  # B×T×H_q×d_h
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)  # B×T×H_kv×d_h
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)  # B×T×H_kv×d_h
        q, k = self.apply_rope(q, k, cos, sin)  # apply_rotary_emb
        if cache is not None:
            k, v = cache.update(self.layer_id, k, v)  # B×T_k×H_kv×d_h, stored unexpanded
        mask = self._causal_mask(mask, T, k.shape[1], x.device)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # B×H×T×d_h
        out = self.attend(q, k, v, mask)  # B×H_q×T×d_h
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)  # B×T×H_q·d_h
        return self.resid_dropout(self.wo(out))

    @staticmethod
    def _causal_mask(mask: Tensor | None, T: int, T_k: int, device: torch.device) -> Tensor | None:
        """Check a given mask's shape; without one, draw the triangle that ``is_causal`` can't."""
        if mask is not None and (mask.ndim != 4 or mask.shape[1] != 1 or mask.shape[-2:] != (T, T_k)):
            raise ValueError(say(
                "mask has shape {shape}; expected B×1×T×T_k = (B, 1, {T}, {T_k}), causality and padding "
                "together: build it from B×T_k valid-token flags with padding_to_attention(valid, T)",
                shape=tuple(mask.shape), T=T, T_k=T_k))
        if mask is None and 1 < T < T_k:
            # Queries after a cache are the last T of the T_k keys: the triangle starts at
            # T_k - T. SDPA's is_causal would draw it from the first key (top-left) instead.
            mask = causal_triangle(T, T_k, device)
        return mask

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
        """``softmax(q kᵀ / sqrt(d_h)) v``: ``q`` is ``B×H_q×T×d_h``; ``k``, ``v`` are
        ``B×H_kv×T_k×d_h``, unexpanded. ``mask``: boolean (True = may attend), or ``None``
        when ``T == T_k`` (causal) or ``T == 1`` (the one query sees every key).
        Returns ``B×H_q×T×d_h``.
        """
        dropout_p = self.attn_dropout.p if self.training else 0.0
        if self.flash:
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=mask is None and q.shape[-2] > 1,
                enable_gqa=self.n_rep > 1,
            )  # a fully masked row comes back as zeros (PyTorch >= 2.5)
        k = self.repeat_kv(k.transpose(1, 2), self.n_rep).transpose(1, 2)  # B×H_q×T_k×d_h
        v = self.repeat_kv(v.transpose(1, 2), self.n_rep).transpose(1, 2)
        return self.attention_by_hand(q, k, v, mask)

    def attention_by_hand(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
        """Attention written out (05.4), ``k`` and ``v`` already ``H_q`` heads: scaled scores,
        the mask (causal when None), softmax in float32, blocked weights set to zero."""
        T, T_k = q.shape[-2], k.shape[-2]
        if mask is None:
            mask = causal_triangle(T, T_k, q.device)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # B×H_q×T×T_k
        # The smallest finite value, not -inf: a row with no allowed key then softmaxes to a
        # uniform row instead of 0/0 = NaN, and zeroing the blocked entries leaves zeros.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores.float(), dim=-1).type_as(q).masked_fill(~mask, 0.0)
        return self.attn_dropout(probs) @ v  # B×H_q×T×d_h


# ---------------------------------------------------------------------------
# 05.5  SwiGLU, and one decoder layer
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    """SwiGLU feed-forward: ``W2(SiLU(x W1) ⊙ x W3)`` (course section 05.5).

    ``w1`` (gate) and ``w3`` (up) map ``B×T×d -> B×T×m``; the gate ``SiLU(z) = z σ(z)``
    scales the up branch element by element; ``w2`` (down) maps back to ``B×T×d`` and is
    the projection into the residual stream. Order: gate, down-projection, dropout.
    """

    def __init__(self, dim: int, hidden_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class DecoderLayer(nn.Module):
    """One pre-norm block: ``h = x + A(norm(x))``, ``y = h + M(norm(h))`` (section 05.5).

    Both sums add back the state that entered that half of the block, so the residual
    stream is never overwritten.
    """

    def __init__(self, config: ModelConfig, layer_id: int = 0) -> None:
        super().__init__()
        if not isinstance(config, ModelConfig):  # the upstream's order is (layer_id, args)
            raise TypeError(say("DecoderLayer(config, layer_id): config must be a ModelConfig, got {kind} "
                                "{config!r} (as Attention(config, layer_id))", kind=type(config).__name__,
                                config=config))
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(config.dim, eps=config.norm_eps)
        self.attention = Attention(config, layer_id)
        self.ffn_norm = RMSNorm(config.dim, eps=config.norm_eps)
        self.feed_forward = MLP(config.dim, config.mlp_hidden_dim, config.dropout)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None = None,
                cache: KVCacheProtocol | None = None) -> Tensor:
        # Attention.forward's arguments: x is B×T×d; cos, sin, mask and cache go to it untouched
        h = x + self.attention(self.attention_norm(x), cos, sin, mask, cache)  # B×T×d
        return h + self.feed_forward(self.ffn_norm(h))  # B×T×d


# ---------------------------------------------------------------------------
# 05.6  The vocabulary head, tied weights, and the output protocol
# ---------------------------------------------------------------------------


@dataclass
class CausalLMOutput:
    """What :class:`Transformer` returns: a fresh object per call, never a shared one.

    ``logits``: ``B×T×V`` (or ``B×k×V`` with ``logits_to_keep=k``); ``loss``: a scalar
    mean over counted tokens when ``labels`` were given, else ``None``.
    """

    logits: Tensor
    loss: Tensor | None = None

    def __getitem__(self, key: str) -> Tensor | None:
        return getattr(self, key)


def causal_triangle(query_len: int, key_len: int, device: torch.device | str | None = None) -> Tensor:
    """``T×T_k`` booleans, True where query ``i`` may attend key ``j``: ``j <= i + (T_k - T)``.

    The queries are the last ``T`` of the ``T_k`` keys (earlier ones are in the cache), so the
    triangle starts at ``T_k - T``; with ``T == T_k`` it is the lower triangle (05.4, 05.6).
    """
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril(key_len - query_len)


def padding_to_attention(valid: Tensor, query_len: int) -> Tensor:
    """Combine causality and a ``B×T_k`` valid-token mask into ``B×1×T×T_k`` booleans.

    The query tokens are the last ``query_len`` of the ``T_k`` keys (earlier ones are in
    the cache). Query ``i`` may attend key ``j`` when ``j`` is a real token and
    ``j <= i + (T_k - T)``. A padding query row may end up with no allowed key at all.
    """
    causal = causal_triangle(query_len, valid.shape[-1], valid.device)  # T×T_k
    return causal[None, None] & valid[:, None, None, :]  # 1×1×T×T_k & B×1×1×T_k -> B×1×T×T_k


def valid_tokens(attention_mask: Tensor, batch: int, key_len: int) -> Tensor:
    """Read a user's ``attention_mask`` as ``B×T_k`` booleans (True = real token).

    Accepted: bool or integer 0/1 flags (Hugging Face's convention), or a floating
    **additive** mask holding only 0 (allowed) and -inf (blocked). Anything else is
    refused: floats with 1.0 are flags in the wrong dtype, other values are biases this
    model does not apply, and a silent guess would be wrong one way or the other.
    """
    if attention_mask.shape != (batch, key_len):
        raise ValueError(say("attention_mask has shape {shape}; expected (B, T_k) = ({B}, {T_k}): one entry "
                             "per token, cached tokens included", shape=tuple(attention_mask.shape), B=batch,
                             T_k=key_len))
    if attention_mask.dtype == torch.bool:
        return attention_mask
    if not attention_mask.is_floating_point():
        if not ((attention_mask == 0) | (attention_mask == 1)).all():
            raise ValueError(say("attention_mask of integer dtype must hold only 0 (padding) and 1 (real "
                                 "token)"))
        return attention_mask == 1
    blocked = attention_mask == float("-inf")
    if not ((attention_mask == 0) | blocked).all():
        raise ValueError(say(
            "attention_mask is floating point, so it is read as an additive mask: 0 for an allowed position, "
            "-inf for a blocked one. It holds other values (e.g. 1.0 flags or finite biases). Pass "
            "valid-token flags as torch.bool or torch.long 0/1 instead."))
    return ~blocked


def token_positions(valid: Tensor) -> Tensor:
    """``B×T_k`` valid-token flags -> ``B×T_k`` RoPE positions that count real tokens (05.6).

    ``[F, F, T, T, T] -> [0, 0, 0, 1, 2]``: a left-padded row's first real token is at 0, as
    when its prompt runs alone; padding gets 0 too (no query attends to it).
    """
    return (valid.long().cumsum(-1) - 1).clamp(min=0)


class Transformer(nn.Module):
    """The whole decoder: embedding, ``L`` decoder layers, final norm, tied head (05.6).

    ``output.weight`` **is** ``tok_embeddings.weight`` (one ``V×d`` matrix, counted once).
    The RoPE tables are ``persistent=False`` buffers: they follow ``.to()`` but are absent
    from ``state_dict`` and are rebuilt from the config.

    Init: every linear and embedding weight from a normal distribution of mean 0 and standard
    deviation 0.02, ``N(0, 0.02²)``; the two projections that write into the residual stream
    (``wo`` and ``w2``) with standard deviation ``0.02/sqrt(2L)``, so each layer's write into
    the stream shrinks as layers are added; the RMSNorm gains start at 1. (The upstream
    scales ``w3`` instead: see ``tinyk.interop.upstream.upstream_init_`` for what that changes and
    what it does not.)
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.dim, eps=config.norm_eps)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight  # tied: one matrix, two roles
        cos, sin = precompute_freqs_cis(config.head_dim, config.max_seq_len, config.rope_theta)
        self.register_buffer("freqs_cos", cos, persistent=False)  # max_seq_len × d_h/2
        self.register_buffer("freqs_sin", sin, persistent=False)
        # Seams (05.6): functions that one instance may swap for others of the same signature.
        self.token_positions = token_positions
        self.causal_padding_mask = padding_to_attention
        self.shifted_loss = causal_lm_loss
        self.apply(self._init_weights)
        residual_std = 0.02 / math.sqrt(2 * config.n_layers)
        for name, p in self.named_parameters():
            if name.endswith(("w2.weight", "wo.weight")):
                nn.init.normal_(p, mean=0.0, std=residual_std)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        cache: KVCacheProtocol | None = None,
        logits_to_keep: int | Tensor = 0,
        check_ids: bool = True,
    ) -> CausalLMOutput:
        """Logits for every position, and the loss when ``labels`` are given.

        ``input_ids``: ``B×T`` token ids. ``attention_mask``: ``B×T_k`` valid-token flags
        (bool or 0/1), or an additive float mask of 0/-inf, where ``T_k`` counts cached
        tokens too. Each row's positions count its real tokens only, so a left-padded
        prompt gets the same RoPE angles as the same prompt alone.
        ``labels``: ``B×T``, **unshifted** like Hugging Face (position ``t`` predicts
        ``labels[:, t+1]``), ``-100`` = not counted; the loss is the mean over counted
        tokens, and ``0.0`` (not 0/0) when nothing is counted.
        ``cache``: a :class:`KVCacheProtocol` (``tinyk.generation.KVCache``); this call's
        tokens are appended at ``cache.length``. ``logits_to_keep``: which positions' logits
        are computed (:meth:`kept_positions`), in Hugging Face's forms: an int ``k > 0``, the
        last ``k``; a 1-D tensor of positions, those in every row; a ``B×k`` tensor, each
        row's own (e.g. each row's last real token, ``B×1``); ``0``, every position.
        ``check_ids=False`` skips :func:`check_token_ids` (a host sync), for callers that
        checked the ids already, like ``generate`` feeding back tokens it sampled.
        """
        self._check_inputs(input_ids, labels, cache, logits_to_keep, check_ids)
        B, T = input_ids.shape
        start_pos = cache.length if cache is not None else 0
        cos, sin, mask = self.rope_and_mask(attention_mask, B, start_pos, T, input_ids.device)
        h = self.dropout(self.tok_embeddings(input_ids))  # B×T×d
        for layer in self.layers:
            h = layer(h, cos, sin, mask, cache)  # B×T×d
        if cache is not None:
            cache.advance(T)
        logits = self.output(self.norm(self.kept_positions(h, logits_to_keep)))  # B×T×V (or B×k×V)
        loss = None if labels is None else self.shifted_loss(logits, labels)
        return CausalLMOutput(logits=logits, loss=loss)

    def rope_and_mask(self, attention_mask: Tensor | None, B: int, start_pos: int, T: int,
                       device: torch.device) -> tuple[Tensor, Tensor, Tensor | None]:
        """The RoPE rows of this call's ``T`` tokens, and the attention mask (05.6)."""
        if attention_mask is None:
            # No padding: positions start_pos..start_pos+T-1 for every row, a slice of the
            # tables, and no mask (each Attention draws the causal triangle itself).
            return self.freqs_cos[start_pos : start_pos + T], self.freqs_sin[start_pos : start_pos + T], None
        valid = valid_tokens(attention_mask, B, start_pos + T)  # B×T_k
        # A row's positions count its real tokens: left padding does not shift RoPE.
        positions = self.token_positions(valid)[:, start_pos:]  # B×T
        cos, sin = self.freqs_cos[positions], self.freqs_sin[positions]  # B×T×d_h/2
        mask = self.causal_padding_mask(valid, T)  # B×1×T×T_k
        return cos, sin, mask

    @staticmethod
    def kept_positions(h: Tensor, logits_to_keep: int | Tensor) -> Tensor:
        """The positions whose logits are wanted, ``logits_to_keep`` as Hugging Face's: an int
        ``k``, the last ``k`` (``0``: all); a 1-D tensor, those positions of every row; a
        ``B×k`` tensor, row ``b``'s positions ``logits_to_keep[b]`` (generation keeps each
        row's last real token, wherever the padding puts it). Hugging Face's boolean mask
        form is not one of them (:func:`~tinyk.config_rules.check_logits_to_keep`)."""
        if isinstance(logits_to_keep, Tensor):
            if logits_to_keep.ndim == 2:  # B×k: each row its own positions
                rows = torch.arange(h.shape[0], device=h.device)[:, None]  # B×1
                return h[rows, logits_to_keep]  # B×k×d
            return h[:, logits_to_keep]  # B×k×d: the same positions in every row
        if logits_to_keep > 0:
            return h[:, -logits_to_keep:]  # B×k×d
        return h  # B×T×d

    def _check_inputs(self, input_ids: Tensor, labels: Tensor | None, cache: KVCacheProtocol | None,
                      logits_to_keep: int | Tensor, check_ids: bool) -> None:
        if input_ids.ndim != 2 or input_ids.dtype not in (torch.int64, torch.int32):
            raise ValueError(say("input_ids must be a B×T tensor of integer ids, got shape {shape} and dtype "
                                 "{dtype}", shape=tuple(input_ids.shape), dtype=input_ids.dtype))
        B, T = input_ids.shape
        start_pos = cache.length if cache is not None else 0
        if T == 0:
            raise ValueError(say("input_ids has length 0: there is nothing to predict from"))
        if start_pos + T > self.config.max_seq_len:
            raise ValueError(say(
                "{total} tokens ({cached} cached + {T} new) exceed max_seq_len={limit}; crop the input "
                "(generate() does this without a cache) or build the model with a larger max_seq_len",
                total=start_pos + T, cached=start_pos, T=T, limit=self.config.max_seq_len))
        check_logits_to_keep(logits_to_keep, B, T, check_ids)
        if labels is not None:
            if labels.shape != input_ids.shape:
                raise ValueError(say("labels has shape {shape}; expected the shape of input_ids, {expected} "
                                     "(unshifted)", shape=tuple(labels.shape),
                                     expected=tuple(input_ids.shape)))
            if not keeps_every_position(logits_to_keep, T):
                shown = logits_to_keep.tolist() if isinstance(logits_to_keep, Tensor) else logits_to_keep
                raise ValueError(say("labels need the logits of every position, in order: logits_to_keep="
                                     "{value} does not keep the {T} of them; use logits_to_keep=0",
                                     value=shown, T=T))
        if check_ids:
            check_token_ids(input_ids, self.config.vocab_size)


def check_token_ids(input_ids: Tensor, vocab_size: int) -> None:
    """Refuse ids outside ``0..vocab_size-1`` with a clear error (section 05.6).

    The embedding would otherwise fail with a bare ``index out of range``. Reading the
    minimum and maximum back to Python waits for the computation: ``generate`` checks its
    prompt once and skips the check on the tokens it samples.
    """
    lo, hi = (int(v) for v in torch.aminmax(input_ids))
    if lo < 0 or hi >= vocab_size:
        raise ValueError(say("input_ids holds ids in [{lo}, {hi}]; the vocabulary is 0..{last}", lo=lo, hi=hi,
                             last=vocab_size - 1))


def causal_lm_loss(logits: Tensor, labels: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean next-token cross-entropy over counted tokens; 0.0 when none is counted.

    ``logits``: ``B×T×V``; ``labels``: ``B×T`` unshifted (shifted here by one).
    """
    # Shift the labels, not the logits: no copy of the B×T×V tensor.
    shifted = F.pad(labels[:, 1:], (0, 1), value=ignore_index).reshape(-1)  # B·T, last: ignored
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), shifted,
                            ignore_index=ignore_index, reduction="sum")
    counted = (shifted != ignore_index).sum()
    return total / counted.clamp(min=1)  # no 0/0: an empty batch contributes 0
