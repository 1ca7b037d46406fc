"""The learner's parts inside a ``tinyk`` model (the build track of sections 05.2 to 05.6).

In 05.2 to 05.6 the learner writes the decoder's parts themselves, under fixed names:

========================  =======  =====================================================
name                      section  behaves as
========================  =======  =====================================================
``RMSNorm``               05.2     :class:`tinyk.RMSNorm` (a class, same ``state_dict``)
``rope_tables``           05.3     :func:`tinyk.precompute_freqs_cis`
``apply_rope``            05.3     :func:`tinyk.apply_rotary_emb`
``repeat_kv``             05.4     :func:`tinyk.repeat_kv`
``gqa_attention``         05.4     ``scaled_dot_product_attention(..., enable_gqa=True)``
``SwiGLU``                05.5     :class:`tinyk.MLP` (a class, same ``state_dict``)
``decoder_block``         05.5     :meth:`tinyk.DecoderLayer.forward`
``token_positions``       05.6     the positions line of :meth:`tinyk.Transformer.forward`
``causal_padding_mask``   05.6     :func:`tinyk.model.padding_to_attention`
``shifted_loss``          05.6     :func:`tinyk.model.causal_lm_loss`
========================  =======  =====================================================

Three tools, used by the 05.6 checkpoint and the 05.10 capstone:

- :func:`check_parts` runs each given part **alone** against ``tinyk`` on small random
  inputs (several shapes, float32 and bfloat16, GQA ratios 1, 2 and 4, padded batches) and
  raises :class:`PartError` naming the first part that is still a stub or disagrees, and
  what differs (with a hint when the difference is a classic mistake).
- :func:`build_model` returns a copy of a :class:`tinyk.Transformer` that runs the given
  parts (any subset; the missing ones are ``tinyk``'s own) with the same weights. The
  parts go into the seams that :mod:`tinyk.model` exposes, so the copy runs the model's
  own forward passes around the learner's code and this module has none. A part that
  raises ``NotImplementedError`` inside the model is reported as a :class:`PartError`
  naming the part, not as a traceback from deep inside the model.
- :func:`checkpoint` prints, part by part, where each part came from and whether it
  passes, then compares the assembled model's logits and greedy tokens with ``tinyk``'s.
  It never raises for a stub: a stub or a wrong part is reported and replaced by
  ``tinyk``'s own, so a notebook with unanswered exercises still runs to the end.

Where the parts come from. Each notebook runs on its own (Colab opens one file; the grader
grades one notebook at a time), yet the parts are written in five notebooks. The design:
:func:`from_notebooks` reads the learner's own notebooks **from the folder they sit in**,
takes the solution cells (nbgrader ``solution`` cells) that define one of the names above,
runs each such cell in a fresh namespace (exercise cells are self-contained) and returns
the names it finds. The 05.6 checkpoint adds the parts defined in 05.6 itself. A part
whose notebook is absent (a notebook opened alone, as in Colab) is simply missing, and the
checkpoint says it falls back to ``tinyk``'s own. The 05.10 capstone is graded on its own,
so its solution cell holds the parts (pasted from the earlier notebooks) and its test cell
passes them to :func:`build_model` and :func:`check_parts` directly.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.generation import KVCache, generate
from tinyk.model import (
    MLP,
    DecoderLayer,
    ModelConfig,
    RMSNorm,
    Transformer,
    apply_rotary_emb,
    apply_rotary_emb_half,
    causal_lm_loss,
    padding_to_attention,
    precompute_freqs_cis,
    repeat_kv,
    token_positions,
)
from tinyk.own_work import BorrowedCall, run_own, trusted

__all__ = ["PART_NAMES", "SECTIONS", "PartError", "Parts", "check_parts", "build_model",
           "first_divergence", "from_notebooks", "defined_here", "checkpoint",
           "reference_token_positions", "smollm2"]

#: Each part's section; the order is the order in which :func:`check_parts` checks them.
SECTIONS: dict[str, str] = {
    "RMSNorm": "05.2", "rope_tables": "05.3", "apply_rope": "05.3", "repeat_kv": "05.4",
    "gqa_attention": "05.4", "SwiGLU": "05.5", "decoder_block": "05.5",
    "token_positions": "05.6", "causal_padding_mask": "05.6", "shifted_loss": "05.6",
}
PART_NAMES: tuple[str, ...] = tuple(SECTIONS)
_CLASSES = ("RMSNorm", "SwiGLU")


class PartError(AssertionError):
    """A learner's part is a stub, fails to run, or disagrees with ``tinyk``.

    An ``AssertionError``, so a graded test cell that finds a wrong part loses its points.
    ``part`` is the part's name.
    """

    def __init__(self, part: str, message: str) -> None:
        super().__init__(f"{part} (section {SECTIONS.get(part, '?')}): {message}")
        self.part = part


#: ``B×T_k`` bool -> ``B×T_k`` long, real tokens counted from 0: the model's own
#: :func:`tinyk.model.token_positions` (05.6).
reference_token_positions = token_positions


def _reference_gqa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
    T, T_k = q.shape[-2], k.shape[-2]
    causal = mask is None and T > 1
    if mask is None and T != T_k and T > 1:  # queries are the last T keys: tril(T_k - T)
        mask, causal = torch.ones(T, T_k, dtype=torch.bool, device=q.device).tril(T_k - T), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                          enable_gqa=q.shape[1] != k.shape[1])


def _tinyk_decoder_block(x: Tensor, attention: Callable[[Tensor], Tensor],
                         feed_forward: Callable[[Tensor], Tensor],
                         attention_norm: Callable[[Tensor], Tensor],
                         ffn_norm: Callable[[Tensor], Tensor]) -> Tensor:
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))


_TINYK: dict[str, Any] = {
    "RMSNorm": RMSNorm, "rope_tables": precompute_freqs_cis, "apply_rope": apply_rotary_emb,
    "repeat_kv": repeat_kv, "gqa_attention": _reference_gqa_attention, "SwiGLU": MLP,
    "decoder_block": _tinyk_decoder_block, "token_positions": reference_token_positions,
    "causal_padding_mask": padding_to_attention, "shifted_loss": causal_lm_loss,
}


def _unknown(parts: Mapping[str, object]) -> None:
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(f"unknown part name(s) {unknown}: the parts are {list(PART_NAMES)} "
                         f"(names are fixed, see tinyk.parts)")


def _call(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one part, watched (:mod:`tinyk.own_work`): a stub, a crash or a call of a
    reference implementation becomes a :class:`PartError` naming it."""
    try:
        return run_own(name, fn, *args, **kwargs)
    except PartError:
        raise
    except BorrowedCall as err:
        raise PartError(name, str(err).split(": ", 1)[1]) from None
    except NotImplementedError:
        raise PartError(name, "still a stub (it raises NotImplementedError): write its body in "
                              f"the notebook of section {SECTIONS[name]}") from None
    except Exception as err:
        raise PartError(name, f"raised {type(err).__name__}: {err}") from err


# ---------------------------------------------------------------------------
# check_parts: each part alone against tinyk
# ---------------------------------------------------------------------------


def _tensor(name: str, got: object, what: str) -> Tensor:
    if not isinstance(got, Tensor):
        raise PartError(name, f"{what} must be a torch.Tensor, got {type(got).__name__}")
    return got


def _compare(name: str, got: object, expected: Tensor, what: str, atol: float = 1e-5,
             hints: Mapping[str, Tensor] | None = None, half_exact: bool = False) -> None:
    """Raise :class:`PartError` unless ``got`` matches ``expected``; name a matching hint.

    float32/float64: within ``atol`` (absolute and relative). bfloat16/float16: within
    ``atol`` relative, or, with ``half_exact``, the same values but for 1% of the entries
    (where the order of rounding is what is being checked).
    """
    got = _tensor(name, got, what)
    if got.shape != expected.shape:
        raise PartError(name, f"{what}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
    if got.dtype != expected.dtype:
        raise PartError(name, f"{what}: dtype {got.dtype}, expected {expected.dtype}")
    if expected.dtype == torch.bool or not expected.is_floating_point():
        if torch.equal(got, expected):
            return
        where = (got != expected).nonzero()[0].tolist()
        detail = f"first difference at index {where}: {got[tuple(where)].item()} instead of " \
                 f"{expected[tuple(where)].item()}"
    else:
        if torch.isnan(got).any() and not torch.isnan(expected).any():
            detail = f"holds NaN ({int(torch.isnan(got).sum())} entries) where tinyk has none"
        else:
            diff = (got.double() - expected.double()).abs()
            if expected.dtype in (torch.float32, torch.float64):
                off = diff > atol + atol * expected.double().abs()
            elif half_exact:  # an order of rounding that matters: at most a rare 1-ulp flip
                off = (diff > 0) & (float((diff > 0).double().mean()) > 0.01)
            else:
                off = diff > atol * (1 + expected.double().abs())
            if not bool(off.any()):
                return
            detail = (f"max |difference| {float(diff.max()):.3g} ({float((diff > 0).double().mean()):.0%} "
                      f"of entries differ); {_first_off(got, expected, off)}")
    for hint, value in (hints or {}).items():
        if value.shape == got.shape and torch.allclose(got.double(), value.double(), atol=1e-5, rtol=1e-4):
            detail += f"; it matches {hint}"
            break
    raise PartError(name, f"{what} differs from tinyk's: {detail}")


def _first_off(got: Tensor, expected: Tensor, off: Tensor) -> str:
    """The first entry (in index order) flagged in ``off``: where, and both values."""
    where = tuple(off.nonzero()[0].tolist())
    return f"first at index {list(where)}: {float(got[where]):.6g} instead of {float(expected[where]):.6g}"


def _check_rmsnorm(cls: Any, g: torch.Generator) -> None:
    name = "RMSNorm"
    for dim, shape, dtype in ((16, (2, 3, 16), torch.float32), (8, (5, 8), torch.float32),
                              (64, (2, 7, 64), torch.bfloat16)):
        mine = _call(name, cls, dim, eps=1e-5)
        ref = RMSNorm(dim, eps=1e-5)
        weight = torch.randn(dim, generator=g) * 0.5 + 1.0
        if not isinstance(getattr(mine, "weight", None), nn.Parameter):
            raise PartError(name, "needs a parameter self.weight (nn.Parameter of shape (dim,))")
        if tuple(mine.weight.shape) != (dim,) or not torch.equal(mine.weight.detach(), torch.ones(dim)):
            raise PartError(name, f"self.weight must start as ones of shape ({dim},), got "
                                  f"shape {tuple(mine.weight.shape)}")
        with torch.no_grad():
            mine.load_state_dict({"weight": weight}, strict=False)  # works where the module lives elsewhere
            ref.weight.copy_(weight)
            mine.to(dtype), ref.to(dtype)  # the whole model in bfloat16, weight included
            weight = weight.to(dtype)
            x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
            expected = ref(x)
            got = _call(name, mine, x)
            x32 = x.float()
            mean_subtracted = (x32 - x32.mean(-1, keepdim=True))
            hints = {"a norm that subtracts the mean (LayerNorm): RMSNorm does not":
                     (mean_subtracted * torch.rsqrt(mean_subtracted.pow(2).mean(-1, keepdim=True) + 1e-5)
                      * weight).to(dtype)}
            if dtype != torch.float32:
                hints["the norm computed in the input dtype; compute it in float32"] = \
                    (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight
            _compare(name, got, expected, f"output on x of shape {shape}, {dtype}", hints=hints,
                     half_exact=True)


def _check_rope_tables(fn: Callable[..., Any], g: torch.Generator) -> None:
    for head_dim, end, theta in ((8, 16, 10000.0), (64, 40, 100000.0)):
        got = _call("rope_tables", fn, head_dim, end, theta)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise PartError("rope_tables", "must return a tuple (cos, sin)")
        for table, expected, label in zip(got, precompute_freqs_cis(head_dim, end, theta),
                                          ("cos", "sin"), strict=True):
            _compare("rope_tables", table, expected,
                     f"{label} table for head_dim={head_dim}, end={end}, theta={theta:g}")


def _check_apply_rope(fn: Callable[..., Any], g: torch.Generator) -> None:
    name = "apply_rope"
    B, T, d_h = 2, 5, 8
    cos_all, sin_all = precompute_freqs_cis(d_h, 32)
    for n_heads, n_kv, dtype, per_row in ((4, 2, torch.float32, False), (4, 4, torch.float32, True),
                                          (6, 3, torch.bfloat16, False)):
        xq = torch.randn(B, T, n_heads, d_h, generator=g).to(dtype)
        xk = torch.randn(B, T, n_kv, d_h, generator=g).to(dtype)
        if per_row:  # left padding: each row its own positions
            positions = torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
            cos, sin, what = cos_all[positions], sin_all[positions], "B×T×d_h/2 tables (per-row positions)"
        else:  # after a cache of 3 tokens: rows 3..7
            cos, sin, what = cos_all[3:3 + T], sin_all[3:3 + T], "T×d_h/2 tables, rows 3..7"
        got = _call(name, fn, xq, xk, cos, sin)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise PartError(name, "must return a tuple (xq_rotated, xk_rotated)")
        expected = apply_rotary_emb(xq, xk, cos, sin)
        half = apply_rotary_emb_half(xq, xk, cos, sin)
        for i, label in enumerate(("rotated q", "rotated k")):
            _compare(name, got[i], expected[i], f"{label} ({dtype}, {what})", atol=1e-5 if
                     dtype == torch.float32 else 1e-2, hints={
                "the half-split pairing (i with i + d_h/2); pair ADJACENT coordinates (x0, x1), "
                "(x2, x3), ...": half[i]})


def _check_repeat_kv(fn: Callable[..., Any], g: torch.Generator) -> None:
    for n_rep in (1, 2, 4):
        x = torch.randn(2, 3, 2, 4, generator=g)
        _compare("repeat_kv", _call("repeat_kv", fn, x, n_rep), repeat_kv(x, n_rep),
                 f"output for x of shape {tuple(x.shape)}, n_rep={n_rep}",
                 hints={"the [0, 1, 0, 1] grouping (repeat/tile); each K/V head serves a "
                        "CONTIGUOUS group: [0, 0, 1, 1] (repeat_interleave)": x.repeat(1, 1, n_rep, 1)})


def _check_gqa_attention(fn: Callable[..., Any], g: torch.Generator) -> None:
    name = "gqa_attention"
    B, d_h = 2, 8
    valid = torch.tensor([[False, False, True, True, True, True], [True, True, True, True, True, True]])
    for n_heads, n_kv, T, T_k, masked, dtype in (
            (4, 4, 6, 6, False, torch.float32), (4, 2, 6, 6, False, torch.float32),
            (8, 2, 2, 6, False, torch.float32), (4, 1, 1, 6, False, torch.float32),
            (4, 2, 6, 6, True, torch.float32), (8, 2, 3, 6, True, torch.float32),
            (4, 2, 6, 6, True, torch.bfloat16)):
        q = torch.randn(B, n_heads, T, d_h, generator=g).to(dtype)
        k = torch.randn(B, n_kv, T_k, d_h, generator=g).to(dtype)
        v = torch.randn(B, n_kv, T_k, d_h, generator=g).to(dtype)
        mask = padding_to_attention(valid, T) if masked else None
        what = (f"output for H_q={n_heads}, H_kv={n_kv}, T={T}, T_k={T_k}, {dtype}, "
                + ("a padded batch's mask (row 0's first queries see no key)" if masked else "mask=None"))
        got = _call(name, fn, q, k, v, mask)
        expected = _reference_gqa_attention(q, k, v, mask)
        kk, vv = repeat_kv(k.transpose(1, 2), n_heads // n_kv).transpose(1, 2), \
            repeat_kv(v.transpose(1, 2), n_heads // n_kv).transpose(1, 2)
        unscaled = _reference_gqa_attention(q * math.sqrt(d_h), kk, vv, mask)
        tiled = _reference_gqa_attention(q, k.repeat(1, n_heads // n_kv, 1, 1),
                                         v.repeat(1, n_heads // n_kv, 1, 1), mask)
        hints = {"attention without the 1/sqrt(d_h) scale": unscaled}
        if n_heads // n_kv > 1 and n_kv > 1:
            hints["the [0, 1, 0, 1] grouping; query head h reads K/V head h // n_rep"] = tiled
        got_t = _tensor(name, got, what)
        if masked and got_t.shape == expected.shape and torch.isnan(got_t).any():
            raise PartError(name, f"{what}: a query row with no allowed key gives NaN; it must give "
                                  f"zeros (-inf everywhere in a row softmaxes to 0/0: use a finite "
                                  f"fill value and zero the blocked weights, or a boolean mask in "
                                  f"scaled_dot_product_attention)")
        _compare(name, got_t, expected, what, atol=1e-5 if dtype == torch.float32 else 2e-2, hints=hints)


def _check_swiglu(cls: Any, g: torch.Generator) -> None:
    name = "SwiGLU"
    for dim, hidden in ((8, 24), (16, 40)):
        mine = _call(name, cls, dim, hidden)
        ref = MLP(dim, hidden)
        for key in ("w1", "w2", "w3"):
            layer = getattr(mine, key, None)
            if not isinstance(layer, nn.Linear) or layer.bias is not None:
                raise PartError(name, f"self.{key} must be an nn.Linear(..., bias=False)")
        try:
            mine.load_state_dict(ref.state_dict())
        except RuntimeError as err:
            raise PartError(name, f"its state_dict does not match tinyk.MLP's (w1: d->m gate, "
                                  f"w2: m->d down, w3: d->m up): {err}") from None
        x = torch.randn(3, 4, dim, generator=g)
        with torch.no_grad():
            ref_gate = ref.w2(F.silu(ref.w3(x)) * ref.w1(x))
            _compare(name, _call(name, mine, x), ref(x), f"output for dim={dim}, hidden_dim={hidden}",
                     hints={"the gate on w3 instead of w1 (w1 is the gate, w3 the up branch)": ref_gate})


def _check_decoder_block(fn: Callable[..., Any], g: torch.Generator) -> None:
    d = 8
    weights = [torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(2)]
    attention = lambda y: torch.tanh(y @ weights[0])
    feed_forward = lambda y: torch.sin(y @ weights[1])
    attention_norm = lambda y: y * 0.5 + 1.0
    ffn_norm = lambda y: y * y * 0.25
    x = torch.randn(2, 3, d, generator=g)
    h_post = attention_norm(x + attention(x))
    h = x + attention(attention_norm(x))
    hints = {"post-norm (norm after the sum); the block is pre-norm":
             ffn_norm(h_post + feed_forward(h_post)),
             "an overwritten residual: the second sum must add h, the first sum's result":
             attention(attention_norm(x)) + feed_forward(ffn_norm(h)),
             "the second sum adding x instead of h": x + feed_forward(ffn_norm(h))}
    got = _call("decoder_block", fn, x, trusted(attention), trusted(feed_forward), trusted(attention_norm),
                trusted(ffn_norm))
    _compare("decoder_block", got, _tinyk_decoder_block(x, attention, feed_forward, attention_norm,
                                                         ffn_norm),
             "output with made-up attention, feed-forward and norms", hints=hints)


def _random_valid(g: torch.Generator, B: int = 4, T_k: int = 7) -> Tensor:
    lengths = torch.randint(1, T_k + 1, (B,), generator=g)
    lengths[0] = T_k - 3  # at least one padded row
    valid = torch.arange(T_k)[None, :] >= (T_k - lengths)[:, None]  # left padding
    valid[-1] = valid[-1].flip(0)  # and one right-padded row
    return valid


def _check_token_positions(fn: Callable[..., Any], g: torch.Generator) -> None:
    for _ in range(2):
        valid = _random_valid(g)
        _compare("token_positions", _call("token_positions", fn, valid), reference_token_positions(valid),
                 f"positions for valid = {valid.long().tolist()}",
                 hints={"positions 0..T-1 whatever the padding; a row's positions count its real "
                        "tokens only": torch.arange(valid.shape[1]).expand_as(valid)})


def _check_causal_padding_mask(fn: Callable[..., Any], g: torch.Generator) -> None:
    valid = _random_valid(g)
    for query_len in (valid.shape[1], 3, 1):
        expected = padding_to_attention(valid, query_len)
        first = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()[None, None] \
            & valid[:, None, None, :]
        _compare("causal_padding_mask", _call("causal_padding_mask", fn, valid, query_len), expected,
                 f"mask for valid = {valid.long().tolist()}, query_len={query_len}",
                 hints={"a causal triangle aligned to the FIRST query_len keys; the queries are "
                        "the LAST query_len keys: tril(T_k - T)": first})


def _check_shifted_loss(fn: Callable[..., Any], g: torch.Generator) -> None:
    logits = torch.randn(2, 5, 7, generator=g)
    labels = torch.randint(0, 7, (2, 5), generator=g)
    labels[0, :2] = -100
    flat = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=-100)
    hints = {"the unshifted loss; position t predicts labels[:, t + 1]": flat}
    _compare("shifted_loss", _call("shifted_loss", fn, logits, labels), causal_lm_loss(logits, labels),
             "loss on labels with ignored (-100) targets", hints=hints)
    pad = torch.randint(0, 7, (2, 5), generator=g)
    pad[1, -2:] = 0
    _compare("shifted_loss", _call("shifted_loss", fn, logits, pad, 0),
             causal_lm_loss(logits, pad, 0), "loss with ignore_index=0")
    nothing = torch.full((2, 5), -100)
    _compare("shifted_loss", _call("shifted_loss", fn, logits, nothing), causal_lm_loss(logits, nothing),
             "loss when no target is counted (must be 0.0, not NaN)")


_CHECKS: dict[str, Callable[[Any, torch.Generator], None]] = {
    "RMSNorm": _check_rmsnorm, "rope_tables": _check_rope_tables, "apply_rope": _check_apply_rope,
    "repeat_kv": _check_repeat_kv, "gqa_attention": _check_gqa_attention, "SwiGLU": _check_swiglu,
    "decoder_block": _check_decoder_block, "token_positions": _check_token_positions,
    "causal_padding_mask": _check_causal_padding_mask, "shifted_loss": _check_shifted_loss,
}


def _check_kind(name: str, part: object) -> None:
    if name in _CLASSES and not (isinstance(part, type) and issubclass(part, nn.Module)):
        raise PartError(name, f"must be a class derived from nn.Module, got {part!r}")
    if name not in _CLASSES and not callable(part):
        raise PartError(name, f"must be a function, got {part!r}")


def check_parts(parts: Mapping[str, object] | None = None, /, *, seed: int = 0, **more: object) -> list[str]:
    """Check each given part alone against ``tinyk``; return the names checked, in order.

    Raises :class:`PartError` (an ``AssertionError``) for the first part, in section
    order, that is a stub, crashes, or disagrees, naming the part and what differs.
    Parts are given as a mapping, as keywords, or both: ``check_parts(RMSNorm=RMSNorm)``.
    """
    given = {**(parts or {}), **more}
    _unknown(given)
    g = torch.Generator().manual_seed(seed)
    checked = []
    for name in PART_NAMES:
        if name in given:
            _check_kind(name, given[name])
            _CHECKS[name](given[name], g)
            checked.append(name)
    return checked


# ---------------------------------------------------------------------------
# build_model: the same weights, the learner's parts
# ---------------------------------------------------------------------------


def _named(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, with a stub or a crash reported as a :class:`PartError` naming the part."""
    return functools.partial(_call, name, fn)


def _learner_block(layer: DecoderLayer, block: Callable[..., Tensor], x: Tensor, cos: Tensor,
                   sin: Tensor, mask: Tensor | None = None, cache: KVCache | None = None) -> Tensor:
    """A layer's call, handed to the learner's ``decoder_block`` with its four modules."""
    def attention(y: Tensor) -> Tensor:
        return layer.attention(y, cos, sin, mask, cache)

    return _call("decoder_block", block, x, trusted(attention), trusted(layer.feed_forward),
                 trusted(layer.attention_norm), trusted(layer.ffn_norm))


def build_model(base: Transformer, parts: Mapping[str, object] | None = None, /,
                **more: object) -> Transformer:
    """A model that runs the given parts with ``base``'s weights (``base`` is not changed).

    Parts are given as a mapping, as keywords, or both, under the names of
    :data:`PART_NAMES`; each missing part is ``tinyk``'s own. The result is a
    :class:`tinyk.Transformer` (so :func:`tinyk.generate` and :class:`tinyk.KVCache` work
    with it) with the same ``state_dict`` keys as ``base``, sharing its parameter tensors
    (nothing is copied; do not train one and expect the other unchanged), in eval mode. Its
    RoPE tables come from ``rope_tables`` when given. The parts go into the model's seams
    (``Transformer``'s ``token_positions``, ``causal_padding_mask``, ``shifted_loss``;
    ``Attention``'s ``apply_rope``, ``repeat_kv``, ``attend``; each layer's call for
    ``decoder_block``; the modules themselves for ``RMSNorm`` and ``SwiGLU``): the model
    runs ``tinyk``'s own forward passes around them. A part that raises inside the model
    (e.g. a stub's ``NotImplementedError``) surfaces as a :class:`PartError` naming it.
    """
    given = {**(parts or {}), **more}
    _unknown(given)
    for name, part in given.items():
        _check_kind(name, part)
    # A structural copy that shares base's parameter tensors: no weight is copied, so this
    # stays cheap for SmolLM2's 135M parameters.
    model = copy.deepcopy(base, memo={id(p): p for p in base.parameters()}).eval()
    for name in ("token_positions", "causal_padding_mask", "shifted_loss"):
        if name in given:
            setattr(model, name, _named(name, given[name]))
    for layer in model.layers:
        attention = layer.attention
        if "apply_rope" in given:
            attention.apply_rope = _named("apply_rope", given["apply_rope"])
        if "repeat_kv" in given:  # runs in tinyk's hand-written attention
            attention.repeat_kv = _named("repeat_kv", given["repeat_kv"])
            attention.flash = False
        if "gqa_attention" in given:  # the learner groups the heads themselves
            attention.attend = _named("gqa_attention", given["gqa_attention"])
        if "decoder_block" in given:
            layer.forward = functools.partial(_learner_block, layer, given["decoder_block"])
    _swap_modules(model, given)
    if "rope_tables" in given:
        config = model.config
        cos, sin = _call("rope_tables", given["rope_tables"], config.head_dim, config.max_seq_len,
                         config.rope_theta)
        model.freqs_cos, model.freqs_sin = cos.to(model.freqs_cos), sin.to(model.freqs_sin)
    return model.eval()


# ---------------------------------------------------------------------------
# first_divergence: where an assembled model first departs from tinyk's
# ---------------------------------------------------------------------------

# A recorded step: (label, its input, its output, the dims of each that count positions).
_Dims = tuple[tuple[int, ...], tuple[int, ...]]
_Record = tuple[str, Tensor | None, Tensor, tuple[int, ...], tuple[int, ...]]


def _recorder(model: Transformer) -> tuple[list[_Record], Callable[[], None]]:
    """Record, in the order they run, what ``model``'s modules and seams are given and
    return (section 05.10); returns the records and a function that removes the recording."""
    records: list[_Record] = []
    undo: list[Callable[[], None]] = []

    def keep(label: str, given: object, value: object, dims: _Dims) -> None:
        if isinstance(value, Tensor):
            given = given.detach() if isinstance(given, Tensor) else None
            records.append((label, given, value.detach(), *dims))

    def hook(label: str, module: nn.Module) -> None:
        handle = module.register_forward_hook(
            lambda _m, args, out: keep(label, args[0] if args else None, out, ((1,), (1,))))
        undo.append(handle.remove)

    def seam(owner: object, attr: str, labels: tuple[str, ...], dims: _Dims) -> None:
        had = attr in owner.__dict__
        inner = getattr(owner, attr)  # swapped in for this instance, or the class's own

        def recording(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            values = out if isinstance(out, tuple) else (out,)
            for i, (label, value) in enumerate(zip(labels, values[:len(labels)], strict=False)):
                keep(label, args[i] if i < len(args) else None, value, dims)
            return out

        setattr(owner, attr, recording)
        undo.append(lambda: setattr(owner, attr, inner) if had else delattr(owner, attr))

    seam(model, "token_positions", ("the token positions (token_positions)",), ((1,), (1,)))
    seam(model, "causal_padding_mask", ("the attention mask (causal_padding_mask)",), ((1,), (2, 3)))
    hook("the token embeddings", model.tok_embeddings)
    for i, layer in enumerate(model.layers):
        at = f"layer {i}"
        hook(f"{at}, the norm before attention (RMSNorm)", layer.attention_norm)
        attention = layer.attention
        seam(attention, "apply_rope", (f"{at}, attention: q after RoPE (apply_rope)",
                                       f"{at}, attention: k after RoPE (apply_rope)"), ((1,), (1,)))
        seam(attention, "repeat_kv", (f"{at}, attention: k or v repeated for the groups (repeat_kv)",),
             ((1,), (1,)))
        seam(attention, "attend", (f"{at}, attention: the weighted values (gqa_attention)",), ((2,), (2,)))
        hook(f"{at}, attention's output", attention)
        hook(f"{at}, the norm before the MLP (RMSNorm)", layer.ffn_norm)
        hook(f"{at}, the MLP (SwiGLU)", layer.feed_forward)
        hook(f"{at}, the layer's output (decoder_block)", layer)
    hook("the final norm (RMSNorm)", model.norm)
    hook("the logits", model.output)
    seam(model, "shifted_loss", ("the loss (shifted_loss)",), ((1,), ()))

    def remove() -> None:
        for step in reversed(undo):
            step()

    return records, remove


def _departure(got: Tensor, ref: Tensor, dims: tuple[int, ...], valid: Tensor | None, atol: float) -> str:
    """How ``got`` departs from ``ref`` where it counts ('' when it does not): only at real
    tokens when ``valid`` (``B×T``) says which they are (a padded slot may hold any number,
    but not NaN, which the next layer spreads to the real tokens)."""
    if got.shape != ref.shape:
        return f"shape {tuple(got.shape)} instead of {tuple(ref.shape)}"
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype} instead of {ref.dtype}"
    if ref.is_floating_point():
        diff = (got.double() - ref.double()).abs()
        off = diff > atol * (1 + ref.double().abs())
    else:
        diff, off = None, got != ref
    if valid is not None and dims and ref.ndim and ref.shape[0] == valid.shape[0]:
        for dim in dims:
            if ref.ndim > dim and ref.shape[dim] == valid.shape[1]:
                shape = [1] * ref.ndim
                shape[0], shape[dim] = valid.shape
                off = off & valid.view(shape)
    if ref.is_floating_point():  # a NaN counts even in a padded slot: it spreads to real tokens
        off = off | (got.isnan() & ~ref.isnan())
    if not bool(off.any()):
        return ""
    if diff is None:
        largest = ""
    elif bool(diff[off].isnan().any()):
        largest = f"NaN in {int(diff[off].isnan().sum())} entries where tinyk has numbers; "
    else:
        largest = f"max |difference| {float(diff[off].max()):.3g}; "
    return largest + _first_off(got, ref, off)


def first_divergence(model: Transformer, base: Transformer, input_ids: Tensor,
                     attention_mask: Tensor | None = None, labels: Tensor | None = None, *,
                     atol: float = 1e-4) -> str:
    """Where ``model`` (the learner's parts, :func:`build_model`) first departs from
    ``base`` (``tinyk``'s own) on one forward pass, or '' when nothing does (section 05.10).

    Both models run ``input_ids`` (with ``attention_mask`` and ``labels`` when given) while
    every module and seam records what it returns: the token positions and the mask, then
    layer by layer the norm, q and k after RoPE, the repeated k and v, the weighted values,
    attention's output, the second norm, the MLP and the layer's output, then the final norm,
    the logits and the loss. The first of them, in ``tinyk``'s order, that differs beyond
    ``atol`` (relative to the size of the value) at a real token is named, with the first
    entry that differs: ``"layer 0, attention: q after RoPE (apply_rope): max |difference|
    ..."``. A value the learner's code never makes (a seam its own code goes around) is
    skipped.
    """
    runs = []
    for m in (model, base):
        records, remove = _recorder(m)
        try:
            with torch.no_grad():
                m(input_ids, attention_mask, labels=labels)
        finally:
            remove()
        runs.append(records)
    valid = None if attention_mask is None else attention_mask.bool()
    mine, ours = runs
    used = [False] * len(mine)
    labels_ours = {record[0] for record in ours}
    for label, given, ref, in_dims, out_dims in ours:
        index = next((i for i, record in enumerate(mine) if record[0] == label and not used[i]), None)
        if index is None:
            continue
        used[index] = True
        _, their_given, got, _, _ = mine[index]
        found = _departure(got, ref, out_dims, valid, atol)
        if not found:
            continue
        # values only the learner's run made on the way (tinyk's fused attention never
        # calls repeat_kv, say): the difference may come from them
        extra = dict.fromkeys(record[0] for record in mine[:index] if record[0] not in labels_ours)
        after = f" (after {'; '.join(extra)}, which tinyk's own run does not make)" if extra else ""
        fed = _departure(their_given, given, in_dims, valid, atol) \
            if given is not None and their_given is not None else ""
        if fed:  # right or wrong, this step was given something else: the code that calls it differs
            return (f"{label}{after} is given a different input than in tinyk ({fed}): the code that "
                    f"calls it differs (in a layer, your decoder_block, if the model runs it)")
        return f"{label}{after}: {found}"
    return ""


def _swap_modules(model: Transformer, given: Mapping[str, Any]) -> None:
    """Replace the norms and MLPs by instances of the learner's classes, same tensors."""
    config: ModelConfig = model.config
    dtype = next(model.parameters()).dtype

    def learners(name: str, old: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:
        new = _call(name, given[name], *args, **kwargs)
        _load(new, old, name)
        try:
            new.forward = _named(name, new.forward)  # a stub's forward is reported by name
        except TypeError:  # a module that lives in the learner's process (tinyk.verdict) stays as it is
            pass
        return new.to(dtype)

    if "RMSNorm" in given:
        for layer in model.layers:
            layer.attention_norm = learners("RMSNorm", layer.attention_norm, config.dim, eps=config.norm_eps)
            layer.ffn_norm = learners("RMSNorm", layer.ffn_norm, config.dim, eps=config.norm_eps)
        model.norm = learners("RMSNorm", model.norm, config.dim, eps=config.norm_eps)
    if "SwiGLU" in given:
        for layer in model.layers:
            layer.feed_forward = learners("SwiGLU", layer.feed_forward, config.dim, config.mlp_hidden_dim)


def _load(new: nn.Module, old: nn.Module, name: str) -> None:
    try:
        new.load_state_dict(old.state_dict(), assign=True)  # the same tensors, not copies
    except RuntimeError as err:
        raise PartError(name, f"its state_dict does not fit tinyk's {type(old).__name__}: {err}") from None


@functools.cache
def smollm2() -> tuple[Transformer, Any, Any]:
    """SmolLM2-135M-Instruct as ``(model, info, tokenizer)``, loaded once per process (05.10).

    ``tinyk.gguf.load_gguf(smollm2_path())`` and ``load_tokenizer``; the notebook and its
    self-contained exercise cells share one copy instead of loading the file again. Do not
    change the returned model in place (:func:`build_model` never does).
    """
    from tinyk.gguf import load_gguf, load_tokenizer, smollm2_path

    path = smollm2_path()
    model, info = load_gguf(path)
    return model, info, load_tokenizer(path)


# ---------------------------------------------------------------------------
# from_notebooks and the checkpoint
# ---------------------------------------------------------------------------

_DEFINES = re.compile(r"^(?:def|class)\s+(\w+)", re.M)
_MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.M)


class Parts(dict):
    """``{name: part}``, plus ``origin``: ``{name: notebook file it was read from}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origin: dict[str, str] = {}


def from_notebooks(folder: str | Path = ".", pattern: str = "05_[2-6]_*.ipynb") -> Parts:
    """The parts the learner defined in their notebooks of 05.2 to 05.6 in ``folder``.

    Reads each notebook matching ``pattern`` as saved on disk, takes its solution cells
    (nbgrader ``solution: true``) that define a part's name, and runs each such cell in a
    fresh namespace (exercise cells carry their own imports).
    Returns the parts found (:class:`Parts`, a dict that also records each one's notebook).
    A cell that fails to run gives a stand-in for its parts that raises :class:`PartError`
    with the cell's error, so the checkpoint reports it like any other wrong part.
    Missing notebooks are skipped.
    """
    found = Parts()
    for path in sorted(Path(folder).glob(pattern)):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or not meta.get("solution"):
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            names = [n for n in _DEFINES.findall(source) if n in SECTIONS]
            if not names:
                continue
            namespace: dict[str, Any] = {}
            try:
                exec(compile(_MARKER.sub("", source), f"<{path.name}>", "exec"), namespace)
            except Exception as err:
                namespace = {n: _broken(n, path.name, err) for n in names}
            for n in names:
                if n in namespace:
                    found[n] = namespace[n]
                    found.origin[n] = path.name
    return found


def defined_here(namespace: Mapping[str, Any], where: str = "this notebook") -> Parts:
    """The parts defined in a notebook's own cells: ``defined_here(globals())``.

    Only objects whose ``__module__`` is the namespace's own (``__main__`` in a kernel)
    count, so a name imported from ``tinyk`` is never taken for the learner's. This is how
    a notebook opened alone (Colab) gets the parts of earlier notebooks: they are pasted in.
    """
    found = Parts()
    home = namespace.get("__name__", "__main__")
    for name in PART_NAMES:
        if name in namespace and getattr(namespace[name], "__module__", None) == home:
            found[name], found.origin[name] = namespace[name], where
    return found


def _broken(name: str, notebook: str, err: Exception) -> Callable[..., Any]:
    def fails(*args: Any, **kwargs: Any) -> Any:
        raise PartError(name, f"its cell in {notebook} fails to run: {type(err).__name__}: {err}")
    return fails


def checkpoint(parts: Mapping[str, object], base: Transformer | None = None, *, seed: int = 0) -> bool:
    """Print where each part comes from and whether it passes; compare the assembled model.

    Each part is checked alone (:func:`check_parts`); a stub or a wrong part is reported
    and replaced by ``tinyk``'s own. Then the model built from the passing parts
    (:func:`build_model`, on ``base`` or a seeded tiny model) runs a left-padded batch and
    a cached greedy generation, compared with ``tinyk``'s. Returns True when every part
    of :data:`PART_NAMES` is the learner's, passes, and the model agrees; never raises
    for a stub or a wrong part.
    """
    origin: dict[str, str] = getattr(parts, "origin", {})
    given = dict(parts)
    _unknown(given)
    passing: dict[str, Any] = {}
    print(f"{'part':21s} {'section':8s} status")
    for name in PART_NAMES:
        where = f" (from {origin[name]})" if name in origin else ""
        if name not in given:
            status = "not found: tinyk's own is used"
        else:
            try:
                check_parts({name: given[name]}, seed=seed)
                passing[name] = given[name]
                status = f"yours, agrees with tinyk{where}"
            except PartError as err:
                status = f"yours{where}, NOT used: {str(err).split(': ', 1)[1]}"
        print(f"{name:21s} {SECTIONS[name]:8s} {status}")
    missing = [name for name in PART_NAMES if name not in given]
    if missing:
        print(f"\n{len(missing)} of {len(PART_NAMES)} parts not found ({', '.join(missing)}): the "
              f"notebooks that define them were not beside this one (a notebook run alone, as on "
              f"the course's site or in Colab, sees only its own parts), so tinyk's own stand in "
              f"and checkpoint returns False. Paste your parts into this notebook, or keep your "
              f"notebooks in its folder, to check yours")
    if base is None:
        torch.manual_seed(seed)
        base = Transformer(ModelConfig.tiny())
    base = base.eval()
    model = build_model(base, passing)
    g = torch.Generator().manual_seed(seed)
    V = base.config.vocab_size
    ids = torch.randint(1, V, (2, 9), generator=g)
    valid = torch.ones(2, 9, dtype=torch.bool)
    valid[0, :4] = False  # the first row is left-padded
    with torch.no_grad():
        gap = (model(ids, valid, labels=ids).logits - base(ids, valid, labels=ids).logits)[valid].abs().max()
        loss_gap = (model(ids, valid, labels=ids).loss - base(ids, valid, labels=ids).loss).abs()
    same_tokens = torch.equal(generate(model, ids, valid, max_new_tokens=5, temperature=0),
                              generate(base, ids, valid, max_new_tokens=5, temperature=0))
    print(f"\nassembled model ({len(passing)} of {len(PART_NAMES)} parts yours), left-padded batch: "
          f"max |logit difference| {float(gap):.1e}, loss difference {float(loss_gap):.1e}; "
          f"greedy tokens with a KV cache {'the same' if same_tokens else 'DIFFERENT'}")
    agrees = float(gap) < 1e-4 and float(loss_gap) < 1e-4 and same_tokens
    if not agrees:
        where = first_divergence(model, base, ids, valid, labels=ids)
        print(f"first difference: {where}" if where else
              "first difference: none in one pass over the batch (it is in the cached generation)")
    return agrees and len(passing) == len(PART_NAMES)
