"""Architecture checks with a JSON record (course section 05.7).

    python -m tinyk check --section architecture --out qa/checks.json

Each check states a claim, measures it in float64 and compares the measurement with a
tolerance. The record says what was checked and, as plainly, what these checks do **not**
establish: they test algebraic and numerical properties of the parts, not the upstream
model as a whole, and nothing about GPU kernels.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from tinyk.model import RMSNorm, apply_rotary_emb, precompute_freqs_cis, repeat_kv

__all__ = ["CheckResult", "SECTIONS", "run_checks", "record", "NOT_PROVEN"]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)

NOT_PROVEN = [
    "that the whole upstream model (its training script, tokenizer and data) is reproduced",
    "anything about GPU kernels or FlashAttention: every check runs on the CPU",
    "that a trained model extrapolates to longer texts than it was trained on",
]


@dataclass
class CheckResult:
    """One check: its name, the claim, the measured value, the tolerance, pass or fail."""

    name: str
    claim: str
    measured: float
    tolerance: float
    passed: bool


def _check(name: str, claim: str, measure: Callable[[], float], tolerance: float) -> CheckResult:
    value = float(measure())
    return CheckResult(name, claim, value, tolerance, bool(value <= tolerance))


def _rope_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 6, 4, 8, generator=g, dtype=torch.float64)  # B×T×H_q×d_h
    k = torch.randn(2, 6, 2, 8, generator=g, dtype=torch.float64)  # B×T×H_kv×d_h
    return q, k


def _rope_keeps_norms() -> float:
    q, k = _rope_inputs(0)
    cos, sin = precompute_freqs_cis(8, 6, dtype=torch.float64)
    rq, rk = apply_rotary_emb(q, k, cos, sin)
    return max((rq.norm(dim=-1) - q.norm(dim=-1)).abs().max().item(),
               (rk.norm(dim=-1) - k.norm(dim=-1)).abs().max().item())


def _rope_shift_keeps_scores() -> float:
    q, k = _rope_inputs(1)
    cos, sin = precompute_freqs_cis(8, 1100, dtype=torch.float64)
    worst = 0.0
    base = None
    for shift in (0, 1, 17, 1000):
        rq, rk = apply_rotary_emb(q, k, cos[shift : shift + 6], sin[shift : shift + 6])
        scores = torch.einsum("bthd,bshd->bhts", rq[:, :, ::2], rk)  # query heads 0, 2 vs K/V 0, 1
        base = scores if base is None else base
        worst = max(worst, (scores - base).abs().max().item())
    return worst


def _gradcheck_gap(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> float:
    """Largest gap between autograd's and a central finite difference's Jacobian."""
    analytical = torch.autograd.functional.jacobian(fn, inputs)
    worst = 0.0
    eps = 1e-6
    for i, x in enumerate(inputs):
        jacobian = analytical[i] if isinstance(analytical, tuple) else analytical  # output × x
        for j in range(x.numel()):
            plus, minus = [t.detach().clone() for t in inputs], [t.detach().clone() for t in inputs]
            plus[i].view(-1)[j] += eps
            minus[i].view(-1)[j] -= eps
            numeric = (fn(*plus) - fn(*minus)) / (2 * eps)
            exact = jacobian.reshape(*numeric.shape, -1)[..., j]
            worst = max(worst, (numeric - exact).abs().max().item())
    return worst


def _rmsnorm_autograd_vs_finite_differences() -> float:
    g = torch.Generator().manual_seed(2)
    norm = RMSNorm(6, eps=1e-5).double()
    with torch.no_grad():
        norm.weight.copy_(torch.rand(6, generator=g, dtype=torch.float64) + 0.5)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64)
    return _gradcheck_gap(norm, x)


def _rope_autograd_vs_finite_differences() -> float:
    q, k = _rope_inputs(3)
    q, k = q[:1, :3, :2, :4].contiguous(), k[:1, :3, :1, :4].contiguous()
    cos, sin = precompute_freqs_cis(4, 3, dtype=torch.float64)
    def rotate_both(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([t.reshape(-1) for t in apply_rotary_emb(a, b, cos, sin)])

    return _gradcheck_gap(rotate_both, q, k)


def _gqa_repeat_order() -> float:
    heads = torch.arange(2.0).view(1, 1, 2, 1)
    expanded = repeat_kv(heads, 2).flatten().tolist()
    x = torch.randn(2, 3, 3, 4, generator=torch.Generator().manual_seed(4))
    mismatch = (repeat_kv(x, 4) - x.repeat_interleave(4, dim=2)).abs().max().item()
    return mismatch + (0.0 if expanded == [0.0, 0.0, 1.0, 1.0] else 1.0)


SECTIONS: dict[str, list[tuple[str, str, Callable[[], float], float]]] = {
    "architecture": [
        ("rope_keeps_norms", "rotating q and k keeps every head vector's length (float64)",
         _rope_keeps_norms, 1e-12),
        ("rope_common_shift_keeps_scores", "shifting all positions by 1, 17 or 1000 leaves every "
         "q·k unchanged (float64)", _rope_shift_keeps_scores, 1e-10),
        ("rmsnorm_autograd_matches_finite_differences", "RMSNorm's autograd Jacobian equals a "
         "central finite difference (float64)", _rmsnorm_autograd_vs_finite_differences, 1e-7),
        ("rope_autograd_matches_finite_differences", "RoPE's autograd Jacobian equals a central "
         "finite difference (float64)", _rope_autograd_vs_finite_differences, 1e-7),
        ("gqa_repeat_order", "repeat_kv expands K/V heads [0, 1] to [0, 0, 1, 1], as "
         "repeat_interleave does", _gqa_repeat_order, 0.0),
    ],
}


def run_checks(section: str = "architecture") -> list[CheckResult]:
    """Run every check of ``section``."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}; choose one of {sorted(SECTIONS)}")
    return [_check(name, claim, fn, tol) for name, claim, fn, tol in SECTIONS[section]]


def record(results: list[CheckResult], section: str) -> dict:
    """The JSON record: environment, each check, and what the checks do not prove."""
    return {
        "section": section,
        "environment": {"python": platform.python_version(), "torch": torch.__version__.split("+")[0],
                        "device": "cpu"},
        "checks": [asdict(r) for r in results],
        "all_passed": all(r.passed for r in results),
        "not_proven": NOT_PROVEN,
    }


def write_record(results: list[CheckResult], section: str, path: Path) -> None:
    """Write the record atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(record(results, section), indent=2) + "\n")
    tmp.replace(path)
