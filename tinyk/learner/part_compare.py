"""How a learner's part is run and compared with ``tinyk``'s (the build track of sections
05.2 to 05.6; used by :mod:`tinyk.learner.part_checks` and :mod:`tinyk.learner.parts`).

The parts' names and sections, :class:`PartError`, a part run under the watch of
:mod:`tinyk.learner.own_code` (:func:`call_part`), and a tensor compared with ``tinyk``'s, its first
difference named, with a hint when the difference is a classic mistake (:func:`compare`), and
each exercise's own diagnosis of a part that differs for no reason a hint names (:func:`diagnosed`).
Every message is said in the learner's language (:func:`tinyk.translations.package_catalogue.say`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from tinyk.learner.own_code import BorrowedCall, DtypeSlip, run_own
from tinyk.model import causal_triangle
from tinyk.translations.package_catalogue import say

__all__ = ["PART_NAMES", "SECTIONS", "PartError", "as_tensor", "call_part", "compare", "diagnosed",
           "first_off", "reject_unknown"]

#: Each part's section; the order is the order in which
#: :func:`tinyk.learner.part_checks.check_parts` checks them.
SECTIONS: dict[str, str] = {
    "RMSNorm": "05.2", "rope_tables": "05.3", "apply_rope": "05.3", "repeat_kv": "05.4",
    "gqa_attention": "05.4", "SwiGLU": "05.5", "decoder_block": "05.5",
    "token_positions": "05.6", "causal_padding_mask": "05.6", "shifted_loss": "05.6",
}
PART_NAMES: tuple[str, ...] = tuple(SECTIONS)


class PartError(AssertionError):
    """A learner's part is a stub, fails to run, or disagrees with ``tinyk``.

    An ``AssertionError``, so a graded test cell that finds a wrong part loses its points.
    ``part`` is the part's name, ``detail`` what is wrong with it, in the learner's language.
    """

    def __init__(self, part: str, detail: str) -> None:
        super().__init__(say("{part} (section {section}): {detail}", part=part,
                             section=SECTIONS.get(part, "?"), detail=detail))
        self.part, self.detail = part, detail


def reject_unknown(parts: Mapping[str, object]) -> None:
    """Raise ``ValueError`` naming any name of ``parts`` that is not a part's."""
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(say("unknown part name(s) {unknown}: the parts are {parts} (names are fixed, "
                             "see tinyk.learner.parts)", unknown=unknown, parts=list(PART_NAMES)))


def call_part(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one part, watched (:mod:`tinyk.learner.own_code`): a stub, a crash, a slip of the
    tensors' kind (a float mask given to ``&``) or a call of a reference implementation becomes a
    :class:`PartError` naming it."""
    try:
        return run_own(name, fn, *args, **kwargs)
    except PartError:
        raise
    except (BorrowedCall, DtypeSlip) as err:
        raise PartError(name, err.detail) from None
    except NotImplementedError:  # the stub's own (torch's is a DtypeSlip: tinyk.learner.own_code.is_stub)
        raise PartError(name, say("still a stub (it raises NotImplementedError): write its body in the "
                                  "notebook of section {section}", section=SECTIONS[name])) from None
    except Exception as err:
        raise PartError(name, say("raised {error}: {text}", error=type(err).__name__, text=err)) from err


def as_tensor(name: str, got: object, what: str) -> Tensor:
    """``got``, when it is a tensor; else a :class:`PartError` naming the part, ``what`` it
    returned and its type (the build track, 05.2 to 05.6)."""
    if got is None:  # a body with no return statement
        raise PartError(name, say("{what} must be a torch.Tensor, got None: the part returned nothing; end "
                                  "it with return ...", what=what))
    if not isinstance(got, Tensor):
        raise PartError(name, say("{what} must be a torch.Tensor, got {got}", what=what,
                                  got=type(got).__name__))
    return got


def compare(name: str, got: object, expected: Tensor, what: str, atol: float = 1e-5,
            hints: Mapping[str, Tensor | tuple[Tensor, ...]] | None = None, half_exact: bool = False) -> None:
    """Raise :class:`PartError` unless ``got`` matches ``expected``; name a matching hint.

    float32/float64: within ``atol`` (absolute and relative). bfloat16/float16: within
    ``atol`` relative, or, with ``half_exact``, the same values but for 1% of the entries
    (where the order of rounding is what is being checked).
    """
    got = as_tensor(name, got, what)
    if got.shape != expected.shape:  # a hint of that shape may name the mistake (an axis lost or added)
        raise PartError(name, say("{what}: shape {got}, expected {expected}", what=what, got=tuple(got.shape),
                                  expected=tuple(expected.shape)) + _matching(got, hints))
    if got.dtype != expected.dtype:
        raise PartError(name, say("{what}: dtype {got}, expected {expected}", what=what, got=got.dtype,
                                  expected=expected.dtype))
    if expected.dtype == torch.bool or not expected.is_floating_point():
        if torch.equal(got, expected):
            return
        where = (got != expected).nonzero()[0].tolist()
        detail = say("first difference at index {index}: {got} instead of {expected}", index=where,
                     got=got[tuple(where)].item(), expected=expected[tuple(where)].item())
    else:
        if torch.isnan(got).any() and not torch.isnan(expected).any():
            detail = say("holds NaN ({n} entries) where tinyk has none", n=int(torch.isnan(got).sum()))
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
            detail = say("max |difference| {largest:.3g} ({share:.0%} of entries differ); {first}",
                         largest=float(diff.max()), share=float((diff > 0).double().mean()),
                         first=first_off(got, expected, off))
    raise PartError(name, say("{what} differs from tinyk's: {detail}", what=what,
                              detail=detail + _matching(got, hints)))


def _matching(got: Tensor, hints: Mapping[str, Tensor | tuple[Tensor, ...]] | None) -> str:
    """"; it matches <hint>" for the first hint whose output ``got`` is, or ''; a hint's output may
    be a tuple of outputs, one for each way of writing the mistake."""
    for hint, value in (hints or {}).items():
        for wrong in value if isinstance(value, tuple) else (value,):
            if wrong.shape == got.shape and torch.allclose(got.double(), wrong.double(), atol=1e-5,
                                                           rtol=1e-4):
                return say("; it matches {hint}", hint=hint)
    return ""


def first_off(got: Tensor, expected: Tensor, off: Tensor) -> str:
    """The first entry (in index order) flagged in ``off``: where, and both values."""
    where = tuple(off.nonzero()[0].tolist())
    return say("first at index {index}: {got:.6g} instead of {expected:.6g}", index=list(where),
               got=float(got[where]), expected=float(expected[where]))


# ---------------------------------------------------------------------------
# Each exercise's own diagnosis, for a part that differs and no hint above named why: the
# part runs once more on a small input of the exercise's test, and the classic mistake its
# output matches is said in that test's words (05.2.2, 05.3.1, 05.4.4, 05.6.4), so that the
# 05.10 capstone names the mistake, not only the part (tinyk.learner.part_checks.check_parts).
# ---------------------------------------------------------------------------


def _same(got: object, wrong: Tensor) -> bool:
    """Whether a part's output ``got`` is the mistaken version ``wrong`` (to float32 precision)."""
    return (isinstance(got, Tensor) and got.shape == wrong.shape
            and torch.allclose(got.detach().double(), wrong.double(), atol=1e-5, rtol=1e-4))


def _diagnose_rmsnorm(cls: Any) -> str | None:
    """05.2.2: the mean of the squares over another axis than the last, eps ignored, or r not the
    root of the mean of the squares."""
    # the shape of the check's first output, (2, 3, 16), so that both messages speak of one input
    x = torch.randn(2, 3, 16, generator=torch.Generator().manual_seed(0)) * 2 + 0.5
    norm = call_part("RMSNorm", cls, 16, eps=1e-5)
    weight = getattr(norm, "weight", None)
    if not (isinstance(weight, Tensor) and torch.equal(weight.detach().float(), torch.ones(16))):
        return None  # the gains do not start at one: the check's message says so, no output tells more
    got = call_part("RMSNorm", norm, x.clone())  # a copy: a part may write
    right = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    if (isinstance(got, Tensor) and got.dtype == torch.float32 and torch.equal(got, got.half().float())
            and torch.allclose(got, right, atol=1e-2) and not torch.equal(right, right.half().float())):
        return say("the normalised vector cast to float16 (.half()), a fixed dtype: cast it back to x.dtype, "
                   "the input's")
    for axis in (0, 1):
        if _same(got, x * torch.rsqrt(x.pow(2).mean(axis, keepdim=True) + 1e-5)):
            return say("the mean of the squares taken over axis {axis} of a {shape} input; normalise over "
                       "the last axis (the d features of one position)", axis=axis, shape=tuple(x.shape))
    if _same(got, x * torch.rsqrt(x.pow(2).mean() + 1e-5)):
        return say("the mean of the squares taken over every entry of x; normalise over the last axis (the d "
                   "features of one position)")
    if _same(got, call_part("RMSNorm", call_part("RMSNorm", cls, 16, eps=0.5), x)):
        return say("the eps argument ignored (eps = 1e-5 and 0.5 give the same output): add self.eps, the "
                   "eps given to the constructor")
    x = x.abs() + 0.5  # positive: the mean of x has a root
    got = call_part("RMSNorm", call_part("RMSNorm", cls, 16, eps=1e-5), x.clone())
    for r in (x.mean(-1, keepdim=True), x.pow(2).sum(-1, keepdim=True), x.pow(2).sum(-1, keepdim=True) / 15,
              x.var(-1, keepdim=True)):
        if _same(got, x * torch.rsqrt(r + 1e-5)) or _same(got, x / (r + 1e-5)):
            return say("r is the root of the mean of the squares, sqrt(mean(x²) + eps), not of the mean of x "
                       "or of |x|, the sum of the squares (over d or d - 1) or the variance")
    return None


def _diagnose_gqa_attention(fn: Callable[..., Any]) -> str | None:
    """05.4.4: the causal mask applied to the weights after the softmax, or the scores over d_h."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 4, 4, generator=g) * 2 for _ in range(3))
    got = call_part("gqa_attention", fn, q, k, v, None)
    causal = causal_triangle(4, 4)
    scores = q @ k.transpose(-2, -1)
    if _same(got, ((scores / 2).softmax(-1) * causal) @ v):
        return say("the mask applied after the softmax, so the allowed weights no longer sum to 1; mask the "
                   "scores before the softmax")
    if _same(got, (scores / 4).masked_fill(~causal, float("-inf")).softmax(-1) @ v):
        return say("the scores scaled by 1/d_h instead of 1/sqrt(d_h): divide q·k by the square root of the "
                   "head width")
    if _same(got, (scores * 2).masked_fill(~causal, float("-inf")).softmax(-1) @ v):
        return say("the scores multiplied by sqrt(d_h): scale the scores by 1/sqrt(d_h), a division")
    if _same(got, (scores / math.sqrt(8)).masked_fill(~causal, float("-inf")).softmax(-1) @ v):
        return say("the scores scaled by 1/sqrt(H·d_h), the width of all heads: scale the scores by "
                   "1/sqrt(d_h), the head width")
    if _same(got, (scores / 2).masked_fill(~causal, float("-inf")).softmax(-2) @ v):
        return say("the softmax over the queries (dim=-2): each query's weights over the keys sum to 1, "
                   "softmax(dim=-1)")
    return None


def _diagnose_shifted_loss(fn: Callable[..., Any]) -> str | None:
    """05.6.4: the summed loss divided by every target, or by the counted labels, the first one included."""
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(2, 5, 7, generator=g), torch.randint(0, 7, (2, 5), generator=g)
    labels[0, :3] = -100
    total = F.cross_entropy(logits[:, :-1].reshape(-1, 7), labels[:, 1:].reshape(-1), reduction="sum")
    got = call_part("shifted_loss", fn, logits.clone(), labels.clone())  # copies: a part may write
    if _same(got, total / labels[:, 1:].numel()):
        return say("the mean over all targets: an ignored target is not counted in the denominator either")
    if _same(got, total / (labels != -100).sum()):
        return say("the denominator counts labels[:, 0], which is no position's target: divide by the "
                   "counted targets of labels[:, 1:]")
    for count in (labels.numel(), labels.shape[0], 1):
        if _same(got, total / count):
            return say("the summed loss divided by {count} (every label, the batch size or nothing): the "
                       "denominator is the number of counted targets of labels[:, 1:]", count=count)
    return None


def _diagnose_rope_tables(fn: Callable[..., Any]) -> str | None:
    """05.3.1: another exponent than -2i/d_h (or 0), degrees or radians turned again, or the columns
    reversed, on angles small enough for float32 (theta = 4)."""
    got = call_part("rope_tables", fn, 8, 4, 4.0)
    if not (isinstance(got, tuple | list) and len(got) == 2):
        return None
    two_i = torch.arange(0, 8, 2, dtype=torch.float64)
    positive = say("a positive exponent, theta^(2i/d_h); ω_i = theta^(-2i/d_h) falls with i")
    doubled = say("the exponent -4i/d_h (2i over d_h/2); ω_i = theta^(-2i/d_h)")
    integer = say("every pair turning by 1 radian per position: the exponent -2i/d_h came out 0; integer "
                  "division (//) rounds it down, use / (a float)")
    unbracketed = say("ω_i = theta^(-2i) / d_h: the division by head_dim came after the power; bracket the "
                      "exponent, theta ** (-(2i) / head_dim)")
    minus_2 = say("the exponent over d_h - 2; ω_i = theta^(-2i/d_h)")
    degrees = say("the angles turned into degrees (times 180 / π); torch.cos and torch.sin take radians")
    radians_again = say("the angles are in radians already, as torch.cos takes them; no deg2rad (nor "
                        "π / 180)")
    reversed_columns = say("column i holds pair i's angle, in order (the columns came reversed)")
    positions = torch.arange(4, dtype=torch.float64)
    for omega, cause in ((4.0 ** (two_i / 8), positive), (4.0 ** (-2 * two_i / 8), doubled),
                         (4.0 ** (0 * two_i), integer), (4.0 ** -two_i / 8, unbracketed),
                         (4.0 ** (-two_i / 6), minus_2), (4.0 ** (-two_i / 8) * 180 / math.pi, degrees),
                         (4.0 ** (-two_i / 8) * math.pi / 180, radians_again),
                         (4.0 ** (-two_i / 8).flip(0), reversed_columns)):
        angles = torch.outer(positions, omega)
        if _same(got[0], angles.cos()) and _same(got[1], angles.sin()):
            return cause
    return None


_DIAGNOSES: dict[str, Callable[[Any], str | None]] = {
    "RMSNorm": _diagnose_rmsnorm, "rope_tables": _diagnose_rope_tables,
    "gqa_attention": _diagnose_gqa_attention, "shifted_loss": _diagnose_shifted_loss,
}


def diagnosed(err: PartError, part: object) -> PartError:
    """``err``, with the classic mistake the part makes (:data:`_DIAGNOSES`) when its message
    names none yet; the same error otherwise."""
    diagnose = _DIAGNOSES.get(err.part)
    if diagnose is None or say("; it matches {hint}", hint="") in err.detail:
        return err
    try:
        cause = diagnose(part)
    except PartError:  # the part fails on this input too: the first message says enough
        return err
    if cause is None:
        return err
    return PartError(err.part, err.detail + say("; likely cause: {cause}", cause=cause))

