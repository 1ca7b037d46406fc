"""Each of the learner's parts checked alone against ``tinyk`` (the build track of sections
05.2 to 05.6; :func:`check_parts`, re-exported by :mod:`tinyk.parts`).

The parts' names and sections, :class:`PartError`, and how one part is run and compared:
each part gets small random inputs (several shapes, float32 and bfloat16, GQA ratios 1, 2
and 4, padded batches), its output is compared with ``tinyk``'s, and the first difference
is named, with a hint when the difference is a classic mistake.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.model import (
    MLP,
    RMSNorm,
    apply_rotary_emb,
    apply_rotary_emb_half,
    causal_lm_loss,
    padding_to_attention,
    precompute_freqs_cis,
    repeat_kv,
    token_positions,
)
from tinyk.own_work import BorrowedCall, run_own, trusted

__all__ = ["PART_NAMES", "SECTIONS", "PartError", "call_part", "check_kind", "check_parts", "compare",
           "first_off", "reference_decoder_block", "reference_gqa_attention", "reference_token_positions",
           "reject_unknown"]

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


def reference_gqa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
    """``gqa_attention`` as ``tinyk`` computes it (05.4): PyTorch's fused attention with
    ``enable_gqa``, causal when no mask is given (the queries being the last keys)."""
    T, T_k = q.shape[-2], k.shape[-2]
    causal = mask is None and T > 1
    if mask is None and T != T_k and T > 1:  # queries are the last T keys: tril(T_k - T)
        mask, causal = torch.ones(T, T_k, dtype=torch.bool, device=q.device).tril(T_k - T), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                          enable_gqa=q.shape[1] != k.shape[1])


def reference_decoder_block(x: Tensor, attention: Callable[[Tensor], Tensor],
                            feed_forward: Callable[[Tensor], Tensor],
                            attention_norm: Callable[[Tensor], Tensor],
                            ffn_norm: Callable[[Tensor], Tensor]) -> Tensor:
    """``decoder_block`` as :class:`tinyk.DecoderLayer` runs it (05.5): pre-norm, two residual sums."""
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))


def reject_unknown(parts: Mapping[str, object]) -> None:
    """Raise ``ValueError`` naming any name of ``parts`` that is not a part's."""
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(f"unknown part name(s) {unknown}: the parts are {list(PART_NAMES)} "
                         f"(names are fixed, see tinyk.parts)")


def call_part(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
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


def _tensor(name: str, got: object, what: str) -> Tensor:
    if not isinstance(got, Tensor):
        raise PartError(name, f"{what} must be a torch.Tensor, got {type(got).__name__}")
    return got


def compare(name: str, got: object, expected: Tensor, what: str, atol: float = 1e-5,
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
                      f"of entries differ); {first_off(got, expected, off)}")
    for hint, value in (hints or {}).items():
        if value.shape == got.shape and torch.allclose(got.double(), value.double(), atol=1e-5, rtol=1e-4):
            detail += f"; it matches {hint}"
            break
    raise PartError(name, f"{what} differs from tinyk's: {detail}")


def first_off(got: Tensor, expected: Tensor, off: Tensor) -> str:
    """The first entry (in index order) flagged in ``off``: where, and both values."""
    where = tuple(off.nonzero()[0].tolist())
    return f"first at index {list(where)}: {float(got[where]):.6g} instead of {float(expected[where]):.6g}"


def _check_rmsnorm(cls: Any, g: torch.Generator) -> None:
    name = "RMSNorm"
    for dim, shape, dtype in ((16, (2, 3, 16), torch.float32), (8, (5, 8), torch.float32),
                              (64, (2, 7, 64), torch.bfloat16)):
        mine = call_part(name, cls, dim, eps=1e-5)
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
            got = call_part(name, mine, x)
            x32 = x.float()
            mean_subtracted = (x32 - x32.mean(-1, keepdim=True))
            hints = {"a norm that subtracts the mean (LayerNorm): RMSNorm does not":
                     (mean_subtracted * torch.rsqrt(mean_subtracted.pow(2).mean(-1, keepdim=True) + 1e-5)
                      * weight).to(dtype)}
            if dtype != torch.float32:
                hints["the norm computed in the input dtype; compute it in float32"] = \
                    (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight
            compare(name, got, expected, f"output on x of shape {shape}, {dtype}", hints=hints,
                     half_exact=True)


def _check_rope_tables(fn: Callable[..., Any], g: torch.Generator) -> None:
    for head_dim, end, theta in ((8, 16, 10000.0), (64, 40, 100000.0)):
        got = call_part("rope_tables", fn, head_dim, end, theta)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise PartError("rope_tables", "must return a tuple (cos, sin)")
        for table, expected, label in zip(got, precompute_freqs_cis(head_dim, end, theta),
                                          ("cos", "sin"), strict=True):
            compare("rope_tables", table, expected,
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
        got = call_part(name, fn, xq, xk, cos, sin)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise PartError(name, "must return a tuple (xq_rotated, xk_rotated)")
        expected = apply_rotary_emb(xq, xk, cos, sin)
        half = apply_rotary_emb_half(xq, xk, cos, sin)
        for i, label in enumerate(("rotated q", "rotated k")):
            compare(name, got[i], expected[i], f"{label} ({dtype}, {what})", atol=1e-5 if
                     dtype == torch.float32 else 1e-2, hints={
                "the half-split pairing (i with i + d_h/2); pair ADJACENT coordinates (x0, x1), "
                "(x2, x3), ...": half[i]})


def _check_repeat_kv(fn: Callable[..., Any], g: torch.Generator) -> None:
    for n_rep in (1, 2, 4):
        x = torch.randn(2, 3, 2, 4, generator=g)
        compare("repeat_kv", call_part("repeat_kv", fn, x, n_rep), repeat_kv(x, n_rep),
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
        got = call_part(name, fn, q, k, v, mask)
        expected = reference_gqa_attention(q, k, v, mask)
        kk, vv = repeat_kv(k.transpose(1, 2), n_heads // n_kv).transpose(1, 2), \
            repeat_kv(v.transpose(1, 2), n_heads // n_kv).transpose(1, 2)
        unscaled = reference_gqa_attention(q * math.sqrt(d_h), kk, vv, mask)
        tiled = reference_gqa_attention(q, k.repeat(1, n_heads // n_kv, 1, 1),
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
        compare(name, got_t, expected, what, atol=1e-5 if dtype == torch.float32 else 2e-2, hints=hints)


def _check_swiglu(cls: Any, g: torch.Generator) -> None:
    name = "SwiGLU"
    for dim, hidden in ((8, 24), (16, 40)):
        mine = call_part(name, cls, dim, hidden)
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
            compare(name, call_part(name, mine, x), ref(x), f"output for dim={dim}, hidden_dim={hidden}",
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
    got = call_part("decoder_block", fn, x, trusted(attention), trusted(feed_forward),
                    trusted(attention_norm), trusted(ffn_norm))
    expected = reference_decoder_block(x, attention, feed_forward, attention_norm, ffn_norm)
    compare("decoder_block", got, expected, "output with made-up attention, feed-forward and norms",
            hints=hints)


def _random_valid(g: torch.Generator, B: int = 4, T_k: int = 7) -> Tensor:
    lengths = torch.randint(1, T_k + 1, (B,), generator=g)
    lengths[0] = T_k - 3  # at least one padded row
    valid = torch.arange(T_k)[None, :] >= (T_k - lengths)[:, None]  # left padding
    valid[-1] = valid[-1].flip(0)  # and one right-padded row
    return valid


def _check_token_positions(fn: Callable[..., Any], g: torch.Generator) -> None:
    for _ in range(2):
        valid = _random_valid(g)
        compare("token_positions", call_part("token_positions", fn, valid), reference_token_positions(valid),
                 f"positions for valid = {valid.long().tolist()}",
                 hints={"positions 0..T-1 whatever the padding; a row's positions count its real "
                        "tokens only": torch.arange(valid.shape[1]).expand_as(valid)})


def _check_causal_padding_mask(fn: Callable[..., Any], g: torch.Generator) -> None:
    valid = _random_valid(g)
    for query_len in (valid.shape[1], 3, 1):
        expected = padding_to_attention(valid, query_len)
        first = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()[None, None] \
            & valid[:, None, None, :]
        compare("causal_padding_mask", call_part("causal_padding_mask", fn, valid, query_len), expected,
                 f"mask for valid = {valid.long().tolist()}, query_len={query_len}",
                 hints={"a causal triangle aligned to the FIRST query_len keys; the queries are "
                        "the LAST query_len keys: tril(T_k - T)": first})


def _check_shifted_loss(fn: Callable[..., Any], g: torch.Generator) -> None:
    logits = torch.randn(2, 5, 7, generator=g)
    labels = torch.randint(0, 7, (2, 5), generator=g)
    labels[0, :2] = -100
    flat = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=-100)
    hints = {"the unshifted loss; position t predicts labels[:, t + 1]": flat}
    compare("shifted_loss", call_part("shifted_loss", fn, logits, labels), causal_lm_loss(logits, labels),
             "loss on labels with ignored (-100) targets", hints=hints)
    pad = torch.randint(0, 7, (2, 5), generator=g)
    pad[1, -2:] = 0
    compare("shifted_loss", call_part("shifted_loss", fn, logits, pad, 0),
             causal_lm_loss(logits, pad, 0), "loss with ignore_index=0")
    nothing = torch.full((2, 5), -100)
    compare("shifted_loss", call_part("shifted_loss", fn, logits, nothing), causal_lm_loss(logits, nothing),
             "loss when no target is counted (must be 0.0, not NaN)")


_CHECKS: dict[str, Callable[[Any, torch.Generator], None]] = {
    "RMSNorm": _check_rmsnorm, "rope_tables": _check_rope_tables, "apply_rope": _check_apply_rope,
    "repeat_kv": _check_repeat_kv, "gqa_attention": _check_gqa_attention, "SwiGLU": _check_swiglu,
    "decoder_block": _check_decoder_block, "token_positions": _check_token_positions,
    "causal_padding_mask": _check_causal_padding_mask, "shifted_loss": _check_shifted_loss,
}


def check_kind(name: str, part: object) -> None:
    """Raise :class:`PartError` unless a class part is an ``nn.Module`` class and the others callables."""
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
    reject_unknown(given)
    g = torch.Generator().manual_seed(seed)
    checked = []
    for name in PART_NAMES:
        if name in given:
            check_kind(name, given[name])
            _CHECKS[name](given[name], g)
            checked.append(name)
    return checked

