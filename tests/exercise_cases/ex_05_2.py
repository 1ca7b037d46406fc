"""Wrong answers to the exercises of notebook 05.2 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_2_1_solution": """
import math
def rms(x, eps=0.0):
    return math.sqrt(12.5 + eps)
""",
    # the right numbers, but 1/r detached from the graph: the gradients are wrong
    "ex_05_2_2_solution": """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        inv_r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps).detach()
        return (x32 * inv_r).to(x.dtype) * self.weight
""",
    "ex_05_2_3_solution": """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    r = 12.5 ** 0.5
    off = -12 / (2 * r**3)
    bracket = torch.tensor([[1 / r - 9 / (2 * r**3), off], [off, 1 / r - 16 / (2 * r**3)]],
                           dtype=torch.float64)
    return gamma[:2, None] * bracket
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

# Solutions with one classic mistake each, which must lose the exercise's points, and the
# words the visible test's message must contain. Keyed by the solution cell's grade_id; each
# value is a list of (name, source, expected_words).
MISTAKES: dict[str, list[tuple[str, ...]]] = {
    "ex_05_2_1_solution": [
        ("eps_outside_the_square_root", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / len(x)) + eps
""", "inside the square root"),
        ("sum_instead_of_mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) + eps)
""", "mean of the squares"),
    ],
    "ex_05_2_2_solution": [
        ("subtracts_the_mean", _rmsnorm(f"""
        {_WIDE}
        x32 = x32 - x32.mean(-1, keepdim=True)
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
"""), "no mean is subtracted"),
        ("computes_in_the_input_dtype", _rmsnorm("""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
"""), "computing in the input dtype"),
        ("multiplies_by_the_weight_before_casting_back", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)
"""), "before casting back"),
        ("downcasts_float64_to_float32", _rmsnorm("""
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
"""), "never downcast"),
        ("eps_outside_the_square_root", _rmsnorm(f"""
        {_WIDE}
        return (x32 / (x32.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)).to(x.dtype) * self.weight
"""), "inside the square root"),
        ("normalises_over_the_first_axis", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(0, keepdim=True) + self.eps)).to(x.dtype) * self.weight
"""), "last axis"),
        # borrowed: tinyk's own module, or PyTorch's fused rms_norm
        ("subclasses_tinyk_rmsnorm", """
import tinyk


class RMSNorm(tinyk.RMSNorm):
    pass
""", "not allowed here"),
        ("calls_torch_rms_norm", _rmsnorm(f"""
        {_WIDE}
        normalised = torch.nn.functional.rms_norm(x32, (x32.shape[-1],), eps=self.eps)
        return normalised.to(x.dtype) * self.weight
"""), "not allowed here"),
    ],
    "ex_05_2_3_solution": [
        ("forgets_the_gains", _JACOBIAN.replace("GAINS * ", ""), "multiplies row i"),
        ("gains_scale_columns", _JACOBIAN.replace("GAINS", "gamma[None, :]"), "multiplies row i"),
        ("outer_term_without_1_over_d",
         _JACOBIAN.replace("(d * r**3)", "r**3").replace("GAINS", "gamma[:, None]"),
         "(d r³)"),
    ],
}
