"""Wrong answers to the exercises of notebook 05.2 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_2_1_solution": """
def rms(x, eps=0.0):
    return 12.5 ** 0.5
""",
    # right in float32, but always computes in float32 and applies the weight before the cast
    "ex_05_2_2_solution": """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)
""",
    "ex_05_2_3_solution": """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    r = 12.5 ** 0.5
    off = -12 / (2 * r**3)
    return torch.tensor([[1 / r - 9 / (2 * r**3), off], [off, 1 / r - 16 / (2 * r**3)]], dtype=torch.float64)
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


# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_2_2_solution": [
        ("subtracts_the_mean", _rmsnorm("""
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        x32 = x32 - x32.mean(-1, keepdim=True)
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("computes_in_the_input_dtype", _rmsnorm("""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
""")),
        ("multiplies_by_the_weight_before_casting_back", _rmsnorm("""
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)
""")),
        ("downcasts_float64_to_float32", _rmsnorm("""
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
    ],
}
