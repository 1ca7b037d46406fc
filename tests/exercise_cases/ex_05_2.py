"""Wrong answers to the exercises of notebook 05.2 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_2_1_solution": """
import math
def rms(x, eps=0.0):
    return math.sqrt(12.5 + eps)
""",
    # right for the visible inputs' at most three axes: a fourth axis comes back unnormalised
    "ex_05_2_2_solution": """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if x.ndim > 3:
            return x
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        inv_r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * inv_r).to(x.dtype) * self.weight
""",
    # the formula for the visible widths, 2 and 3, only
    "ex_05_2_3_solution": """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    d = x.shape[0]
    if d > 3:
        return torch.zeros(d, d, dtype=torch.float64)
    r = torch.sqrt(x.pow(2).mean() + eps)
    return gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))
""",
}


def _rmsnorm(forward: str) -> str:
    """A complete RMSNorm module whose ``forward`` body is ``forward`` (8-space indented)."""
    return f"""
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
{forward}
"""


_WIDE = "x32 = x.to(torch.promote_types(x.dtype, torch.float32))"

_JACOBIAN = """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    d = x.shape[0]
    r = torch.sqrt(x.pow(2).mean() + eps)
    return GAINS * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))
"""

# Wrong answers that break a rule only the hidden tests used to check (the state dict, gains
# other than one, each dtype's rounding, the gradients, the Jacobian's eps): the visible test
# must name each (tests/test_visible_hidden.py), and the cell without its visible checks must
# still fail. They are classic mistakes too: MISTAKES below holds them as well.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_2_2_solution": [
        ("05.2.2:extra-state", """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.register_buffer("eps", torch.tensor(eps))
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
"""),
        ("05.2.2:weight-before-normalising", _rmsnorm(f"""
        {_WIDE} * self.weight
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
""")),
        # right with float32 gains; with gains in the input's dtype, multiplied in float32 first
        ("05.2.2:weight-before-cast", _rmsnorm(f"""
        {_WIDE}
        normalised = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.weight.dtype == x.dtype:
            return (normalised * self.weight).to(x.dtype)
        return normalised.to(x.dtype) * self.weight
""")),
        # 1/r detached: the right numbers, the wrong gradients
        ("05.2.2:detached", _rmsnorm(f"""
        {_WIDE}
        inv_r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps).detach()
        return (x32 * inv_r).to(x.dtype) * self.weight
""")),
    ],
    "ex_05_2_3_solution": [
        ("05.2.3:eps-outside-r", _JACOBIAN.replace(" + eps)", ")").replace("GAINS", "gamma[:, None]")),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_2_1_solution": [
        ("05.2.1:eps-outside-sqrt", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / len(x)) + eps
"""),
        ("05.2.1:sum-not-mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) + eps)
"""),
        # the sum over d - 1 (a sample variance's habit): the sum itself when d = 2
        ("05.2.1:sum-not-mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / (len(x) - 1) + eps)
"""),
        ("05.2.1:mean-of-abs", """
def rms(x, eps=0.0):
    return sum(abs(v) for v in x) / len(x) + eps
"""),
        ("05.2.1:no-square-root", """
def rms(x, eps=0.0):
    return sum(v * v for v in x) / len(x) + eps
"""),
        ("05.2.1:eps-ignored", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / len(x))
"""),
        ("05.2.1:eps-before-mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt((sum(v * v for v in x) + eps) / len(x))
"""),
    ],
    "ex_05_2_2_solution": [
        ("05.2.2:subtracts-mean", _rmsnorm(f"""
        {_WIDE}
        x32 = x32 - x32.mean(-1, keepdim=True)
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.2.2:not-mean-of-squares", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        # the mean of |x|: an L1 scale
        ("05.2.2:not-mean-of-squares", _rmsnorm(f"""
        {_WIDE}
        return (x32 / (x32.abs().mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        # x / ||x||: the sum of the squares, not their mean
        ("05.2.2:not-mean-of-squares", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).sum(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.2.2:eps-ignored", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True))).to(x.dtype) * self.weight
""")),
        ("05.2.2:eps-ignored", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.weight
""")),
        ("05.2.2:no-cast-back", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)) * self.weight
""")),
        ("05.2.2:input-dtype", _rmsnorm("""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
""")),
        ("05.2.2:weight-before-cast", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)
""")),
        ("05.2.2:downcasts-float64", _rmsnorm("""
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.2.2:eps-outside-sqrt", _rmsnorm(f"""
        {_WIDE}
        return (x32 / (x32.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)).to(x.dtype) * self.weight
""")),
        # the mean without keepdim: B×T does not broadcast against B×T×d
        ("05.2.2:no-keepdim", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1) + self.eps)).to(x.dtype) * self.weight
""")),
        # the mean over dim=1: a 1-D input has no axis 1 (IndexError)
        ("05.2.2:axis-1", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.2.2:first-axis", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(0, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        # borrowed: tinyk's own module, or PyTorch's fused rms_norm
        # subclasses_tinyk_rmsnorm
        ("05.2.2:borrowed", """
import tinyk


class RMSNorm(tinyk.RMSNorm):
    pass
"""),
        # calls_torch_rms_norm
        ("05.2.2:borrowed", _rmsnorm(f"""
        {_WIDE}
        normalised = torch.nn.functional.rms_norm(x32, (x32.shape[-1],), eps=self.eps)
        return normalised.to(x.dtype) * self.weight
""")),
    ],
    "ex_05_2_3_solution": [
        # forgets_the_gains
        ("05.2.3:gains-not-per-row", _JACOBIAN.replace("GAINS * ", "")),
        # gains_scale_columns
        ("05.2.3:gains-not-per-row", _JACOBIAN.replace("GAINS", "gamma[None, :]")),
        # autograd through the package's RMSNorm: the right matrix, not the learner's formula
        ("05.2.3:borrowed", """
import torch
import tinyk
def rmsnorm_jacobian(x, gamma, eps):
    norm = tinyk.RMSNorm(x.shape[0], eps=eps).double()
    with torch.no_grad():
        norm.weight.copy_(gamma)
    return torch.autograd.functional.jacobian(norm, x)
"""),
        ("05.2.3:outer-term-without-1-over-d",
         _JACOBIAN.replace("(d * r**3)", "r**3").replace("GAINS", "gamma[:, None]")),
        # the right matrix for gains at one, transposed: the gains land on the columns
        ("05.2.3:gains-not-per-row", _JACOBIAN.replace("GAINS", "gamma[:, None]").replace(
            "(d * r**3))", "(d * r**3))).T").replace("return gamma", "return (gamma")),
        ("05.2.3:outer-term-missing",
         _JACOBIAN.replace(" - torch.outer(x, x) / (d * r**3)", "").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:outer-term-sign",
         _JACOBIAN.replace(" - torch.outer", " + torch.outer").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:identity-not-over-r",
         _JACOBIAN.replace("torch.eye(d, dtype=x.dtype) / r", "torch.eye(d, dtype=x.dtype)")
                  .replace("GAINS", "gamma[:, None]")),
        ("05.2.3:eps-outside-sqrt", _JACOBIAN.replace("torch.sqrt(x.pow(2).mean() + eps)",
                                                      "torch.sqrt(x.pow(2).mean()) + eps")
                                             .replace("GAINS", "gamma[:, None]")),
    ],
}
for _grade_id, _cases in HIDDEN_RULES.items():
    MISTAKES[_grade_id] = MISTAKES.get(_grade_id, []) + _cases
