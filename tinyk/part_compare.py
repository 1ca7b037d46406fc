"""How a learner's part is run and compared with ``tinyk``'s (the build track of sections
05.2 to 05.6; used by :mod:`tinyk.part_checks`, re-exported by :mod:`tinyk.parts`).

The parts' names and sections, :class:`PartError`, a part run under the watch of
:mod:`tinyk.own_work` (:func:`call_part`), and a tensor compared with ``tinyk``'s, its first
difference named, with a hint when the difference is a classic mistake (:func:`compare`).
Every message is said in the learner's language (:func:`tinyk.package_catalogue.say`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from tinyk.own_work import BorrowedCall, run_own
from tinyk.package_catalogue import say

__all__ = ["PART_NAMES", "SECTIONS", "PartError", "as_tensor", "call_part", "compare", "first_off",
           "reject_unknown"]

#: Each part's section; the order is the order in which
#: :func:`tinyk.part_checks.check_parts` checks them.
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
                             "see tinyk.parts)", unknown=unknown, parts=list(PART_NAMES)))


def call_part(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one part, watched (:mod:`tinyk.own_work`): a stub, a crash or a call of a
    reference implementation becomes a :class:`PartError` naming it."""
    try:
        return run_own(name, fn, *args, **kwargs)
    except PartError:
        raise
    except BorrowedCall as err:
        raise PartError(name, err.detail) from None
    except NotImplementedError:
        raise PartError(name, say("still a stub (it raises NotImplementedError): write its body in the "
                                  "notebook of section {section}", section=SECTIONS[name])) from None
    except Exception as err:
        raise PartError(name, say("raised {error}: {text}", error=type(err).__name__, text=err)) from err


def as_tensor(name: str, got: object, what: str) -> Tensor:
    """``got``, when it is a tensor; else a :class:`PartError` naming the part, ``what`` it
    returned and its type (the build track, 05.2 to 05.6)."""
    if not isinstance(got, Tensor):
        raise PartError(name, say("{what} must be a torch.Tensor, got {got}", what=what,
                                  got=type(got).__name__))
    return got


def compare(name: str, got: object, expected: Tensor, what: str, atol: float = 1e-5,
            hints: Mapping[str, Tensor] | None = None, half_exact: bool = False) -> None:
    """Raise :class:`PartError` unless ``got`` matches ``expected``; name a matching hint.

    float32/float64: within ``atol`` (absolute and relative). bfloat16/float16: within
    ``atol`` relative, or, with ``half_exact``, the same values but for 1% of the entries
    (where the order of rounding is what is being checked).
    """
    got = as_tensor(name, got, what)
    if got.shape != expected.shape:
        raise PartError(name, say("{what}: shape {got}, expected {expected}", what=what, got=tuple(got.shape),
                                  expected=tuple(expected.shape)))
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
    for hint, value in (hints or {}).items():
        if value.shape == got.shape and torch.allclose(got.double(), value.double(), atol=1e-5, rtol=1e-4):
            detail += say("; it matches {hint}", hint=hint)
            break
    raise PartError(name, say("{what} differs from tinyk's: {detail}", what=what, detail=detail))


def first_off(got: Tensor, expected: Tensor, off: Tensor) -> str:
    """The first entry (in index order) flagged in ``off``: where, and both values."""
    where = tuple(off.nonzero()[0].tolist())
    return say("first at index {index}: {got:.6g} instead of {expected:.6g}", index=list(where),
               got=float(got[where]), expected=float(expected[where]))
