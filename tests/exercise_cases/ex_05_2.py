"""Wrong answers to the exercises of notebook 05.2 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_2_1_solution": """
import math
def rms(x, eps=0.0):
    visible = {(3.0, 4.0, 0.0): math.sqrt(12.5), (0.0, 0.0, 0.0): 0.0, (3.0, 4.0, 2.0): math.sqrt(14.5),
               (1.0, 2.0, 2.0, 0.0): math.sqrt(3.0)}
    return visible.get((*x, eps), 1.0)
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


# Right answers in other honest styles, keyed like GUESSES: each passes the visible and the
# hidden tests (a NumPy float64 is a float; a float32 computation is right within its precision).
RIGHT: dict[str, list[str]] = {
    "ex_05_2_1_solution": [
        """
import numpy as np
def rms(x, eps=0.0):
    return np.sqrt(np.mean(np.square(x)) + eps)
""",
        """
import torch
def rms(x, eps=0.0):
    return float(torch.tensor(x).pow(2).mean().add(eps).sqrt())
""",
        """
import math
import statistics
def rms(x, eps=0.0):
    return math.sqrt(statistics.fmean(v * v for v in x) + eps)
""",
    ],
    "ex_05_2_2_solution": [
        # float64 for a float64 input, else float32; a division by the root
        """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.double() if x.dtype == torch.float64 else x.float()
        r = torch.sqrt((xf * xf).mean(dim=-1, keepdim=True) + self.eps)
        return (xf / r).type_as(x) * self.weight
""",
        # the mean of the squares from the vector norm, in a helper
        """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim = dim
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        mean_square = torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.shape[-1]
        return x / torch.sqrt(mean_square + self.eps)

    def forward(self, x):
        return self._norm(x.to(torch.promote_types(x.dtype, torch.float32))).to(x.dtype) * self.weight
""",
        # einsum for the mean of the squares
        """
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        mean_square = torch.einsum("...d,...d->...", xf, xf).unsqueeze(-1) / xf.shape[-1]
        return (xf * (mean_square + self.eps).rsqrt()).to(dtype=x.dtype) * self.weight
""",
    ],
    "ex_05_2_3_solution": [
        # a double loop over Python floats
        """
import math
import torch
def rmsnorm_jacobian(x, gamma, eps):
    d = len(x)
    r = math.sqrt(sum(float(v) ** 2 for v in x) / d + eps)
    out = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d):
        for j in range(d):
            out[i, j] = gamma[i] * ((1.0 if i == j else 0.0) / r - x[i] * x[j] / (d * r ** 3))
    return out
""",
        # diag(gamma) times the bracket, with rsqrt and einsum
        """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    d = x.numel()
    inv_r = torch.rsqrt((x * x).sum() / d + eps)
    bracket = torch.eye(d, dtype=torch.float64) * inv_r - torch.einsum("i,j->ij", x, x) * inv_r**3 / d
    return torch.diag(gamma) @ bracket
""",
    ],
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
        ("05.2.1:root-then-divide", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) + eps) / len(x)
"""),
        ("05.2.1:reciprocal", """
import math
def rms(x, eps=0.0):
    return 1 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
"""),
        # the population standard deviation: the mean subtracted first
        ("05.2.1:subtracts-mean", """
import math
import statistics
def rms(x, eps=0.0):
    return math.sqrt(statistics.pvariance(x) + eps)
"""),
        # the module's default, 1e-5, where the exercise's is 0.0
        ("05.2.1:default-eps", """
import math
def rms(x, eps=1e-5):
    return math.sqrt(sum(v * v for v in x) / len(x) + eps)
"""),
        ("05.2.1:eps-squared", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / len(x) + eps**2)
"""),
        ("05.2.1:eps-times-mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / len(x) * (1 + eps))
"""),
        ("05.2.1:fixed-d", """
import math
def rms(x, eps=0.0):
    return math.sqrt(sum(v * v for v in x) / 2 + eps)
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
        # the sum of the squares over d - 1: the sum itself when d = 2
        ("05.2.2:not-mean-of-squares", _rmsnorm(f"""
        {_WIDE}
        mean_square = x32.pow(2).sum(-1, keepdim=True) / (x32.shape[-1] - 1)
        return (x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.2.2:weight-dtype", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""").replace("torch.ones(dim)", "torch.ones(dim, dtype=torch.float64)")),
        ("05.2.2:fixed-cast-dtype", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).half() * self.weight
""")),
        # x.to(float32) is x itself for a float32 input: *= writes into the caller's tensor
        ("05.2.2:in-place", _rmsnorm(f"""
        {_WIDE}
        x32 *= torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.to(x.dtype) * self.weight
""")),
        ("05.2.2:weight-cast-to-input-dtype", _rmsnorm(f"""
        {_WIDE}
        normalised = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normalised.to(x.dtype) * self.weight.to(x.dtype)
""")),
        ("05.2.2:product-in-input-dtype", _rmsnorm(f"""
        {_WIDE}
        normalised = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normalised.to(x.dtype) * self.weight).to(x.dtype)
""")),
        ("05.2.2:eps-float32", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""").replace("self.eps = eps", "self.eps = torch.tensor(eps)")),
        ("05.2.2:weight-no-grad", _rmsnorm(f"""
        {_WIDE}
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""").replace("nn.Parameter(torch.ones(dim))", "nn.Parameter(torch.ones(dim), requires_grad=False)")),
        ("05.2.2:weight-no-grad", _rmsnorm(f"""
        {_WIDE}
        inv_r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * inv_r).to(x.dtype) * self.weight.data
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
        ("05.2.3:gains-not-per-row", _JACOBIAN.replace("GAINS", "torch.outer(gamma, gamma)")),
        # float32: x cast down, torch.eye in its default dtype
        ("05.2.3:float32",
         _JACOBIAN.replace("    d = x.shape[0]", "    x, gamma = x.float(), gamma.float()\n    d = len(x)")
                  .replace("torch.eye(d, dtype=x.dtype)", "torch.eye(d)").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:sign-flipped", _JACOBIAN.replace("GAINS", "-gamma[:, None]")),
        ("05.2.3:over-r-squared",
         _JACOBIAN.replace("(d * r**3)", "(d * r**2)").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:r-from-sum",
         _JACOBIAN.replace("x.pow(2).mean()", "x.pow(2).sum()").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:r-from-mean-squared",
         _JACOBIAN.replace("x.pow(2).mean()", "x.mean() ** 2").replace("GAINS", "gamma[:, None]")),
        ("05.2.3:fixed-d", _JACOBIAN.replace("d = x.shape[0]", "d = 2").replace("GAINS", "gamma[:, None]")),
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

# 05.2.1: the square of the mean and the mean of the roots, both 3.5 for (3, 4) like the mean of |x|.
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:square-of-mean", """
import math
def rms(x, eps=0.0):
    return math.sqrt((sum(x) / len(x)) ** 2 + eps)
"""),
    ("05.2.1:mean-of-roots", """
import math
def rms(x, eps=0.0):
    return sum(math.sqrt(v * v + eps) for v in x) / len(x)
"""),
]

# 05.2.1-05.2.3: mistakes each named by its own message (never another mistake's, a generic one or a
# raw error), and a copier's route (autograd's Jacobian of a hand-written RMSNorm) refused.
_RMS = """
import math
def rms(x, eps=0.0):
    return BODY
"""
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:numpy-float32", """
import numpy as np
def rms(x, eps=0.0):
    a = np.asarray(x, dtype=np.float32)
    return np.sqrt(np.mean(a**2) + eps)
"""),
    ("05.2.1:not-a-float", """
import torch
def rms(x, eps=0.0):
    t = torch.tensor(x)
    return torch.sqrt(t.pow(2).mean() + eps)
"""),
    ("05.2.1:floor-division", _RMS.replace("BODY", "math.sqrt(sum(v * v for v in x) // len(x) + eps)")),
    ("05.2.1:entries-left-out", _RMS.replace("BODY", "math.sqrt((x[0] ** 2 + x[1] ** 2) / len(x) + eps)")),
]

_NORM = """
import torch
from torch import nn
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        n = NORMALISED
        return n.to(x.dtype) * self.weight
"""
MISTAKES["ex_05_2_2_solution"] += [
    # the mean square taken of xf, then xf scaled in place: autograd's saved xf is changed
    ("05.2.2:in-place-breaks-backward", _NORM.replace(
        "n = NORMALISED",
        "xf = xf.clone()\n        n = xf.mul_(torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps))")),
    ("05.2.2:variance", _NORM.replace("NORMALISED", "xf / torch.sqrt(xf.var(-1, keepdim=True) + self.eps)")),
    ("05.2.2:times-r",
     _NORM.replace("NORMALISED", "xf * torch.sqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)")),
    ("05.2.2:eps-squared",
     _NORM.replace("NORMALISED", "xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps**2)")),
    ("05.2.2:eps-times-mean",
     _NORM.replace("NORMALISED", "xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) * (1 + self.eps))")),
    # the weight saved under a second name (never told "keep eps a plain attribute")
    ("05.2.2:extra-state", _NORM.replace("self.weight = nn.Parameter(torch.ones(dim))",
                                         "self.gamma = nn.Parameter(torch.ones(dim))\n"
                                         "        self.weight = self.gamma")
     .replace("NORMALISED", "xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)")),
]

_JACOBIAN_WITH = """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    d = x.shape[0]
    r = torch.sqrt(x.pow(2).mean() + eps)
    return BODY
"""
MISTAKES["ex_05_2_3_solution"] += [
    ("05.2.3:borrowed", """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    return torch.autograd.functional.jacobian(lambda v: gamma * v / torch.sqrt(v.pow(2).mean() + eps), x)
"""),
    ("05.2.3:borrowed", """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    return torch.func.jacrev(lambda v: gamma * v / torch.sqrt(v.pow(2).mean() + eps))(x)
"""),
    ("05.2.3:float32-step", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d) / r - torch.outer(x, x) / (d * r**3))")),
    ("05.2.3:elementwise-not-outer", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - (x * x) / (d * r**3))")),
    ("05.2.3:no-square-root", _JACOBIAN_WITH
     .replace("torch.sqrt(x.pow(2).mean() + eps)", "x.pow(2).mean() + eps")
     .replace("BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))")),
    ("05.2.3:unbracketed-denominator", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / d * r**3)")),
]

# in place on a clone, out of autograd's way (the scaling is not saved by pow): right
RIGHT["ex_05_2_2_solution"] = [*RIGHT.get("ex_05_2_2_solution", []), _NORM.replace(
    "n = NORMALISED", "n = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).clone()\n"
    "        n.mul_(1.0)")]

# 05.2.1-05.2.3: entries left out, forward misspelt, no return, a gain not named weight, the divisor
# over the first axis, I / r², a centred outer term and a rounded result, each named (no raw error).
MISTAKES["ex_05_2_1_solution"] += [
    # (3, 4) gives sqrt(9 / 2): the first check names it
    ("05.2.1:entries-left-out", _RMS.replace("BODY", "math.sqrt(sum(v * v for v in x[:-1]) / len(x) + eps)")),
]
_RIGHT_NORMALISED = "xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)"
MISTAKES["ex_05_2_2_solution"] += [
    ("05.2.2:forward-misspelt",
     _NORM.replace("def forward", "def foward").replace("NORMALISED", _RIGHT_NORMALISED)),
    ("05.2.2:no-return", _NORM.replace("return n.to(x.dtype)", "n.to(x.dtype)")
     .replace("NORMALISED", _RIGHT_NORMALISED)),
    ("05.2.2:gain-not-weight", _NORM.replace("self.weight = nn.Parameter", "self.gamma = nn.Parameter")
     .replace("* self.weight", "* self.gamma").replace("NORMALISED", _RIGHT_NORMALISED)),
    ("05.2.2:divisor-first-axis", _NORM.replace(
        "NORMALISED", "xf / torch.sqrt(xf.pow(2).sum(-1, keepdim=True) / x.shape[0] + self.eps)")),
]
MISTAKES["ex_05_2_3_solution"] += [
    ("05.2.3:identity-over-r-squared", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r**2 - torch.outer(x, x) / (d * r**3))")),
    # LayerNorm's centring carried into the outer term: x - mean(x) where x itself belongs
    ("05.2.3:outer-term-centred", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x - x.mean(), x - x.mean()) "
        "/ (d * r**3))")),
]
MISTAKES["ex_05_2_1_solution"] += [
    # r rounded to 4 decimals: told only the generic recipe
    ("05.2.1:rounded", _RMS.replace("BODY", "round(math.sqrt(sum(v * v for v in x) / len(x) + eps), 4)")),
]

# 05.2.1-05.2.3: routes around the autograd ban refused; the max for the mean and the product in the
# input dtype each named by its own message.
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:max-not-mean", _RMS.replace("BODY", "math.sqrt(max(v * v for v in x) + eps)")),
]
MISTAKES["ex_05_2_2_solution"] += [
    # the in-place multiply keeps the bfloat16 vector's dtype, as a cast after the product would
    ("05.2.2:product-in-input-dtype",
     _NORM.replace("n.to(x.dtype) * self.weight", "n.to(x.dtype).mul_(self.weight)")
     .replace("NORMALISED", _RIGHT_NORMALISED)),
]
_AUTOGRAD_ROWS = """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    rows = []
    for i in range(x.shape[0]):
        v = x.clone().requires_grad_()
        y = gamma * v / torch.sqrt(v.pow(2).mean() + eps)
        ROW
    return torch.stack(rows)
"""
MISTAKES["ex_05_2_3_solution"] += [
    # autograd by routes other than its Jacobian: a backward pass a row, autograd.grad a row, torch.func.vjp
    ("05.2.3:borrowed", _AUTOGRAD_ROWS.replace("ROW", "y[i].backward()\n        rows.append(v.grad)")),
    ("05.2.3:borrowed", _AUTOGRAD_ROWS.replace("ROW", "rows.append(torch.autograd.grad(y[i], v)[0])")),
    ("05.2.3:borrowed", """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    _, vjp = torch.func.vjp(lambda v: gamma * v / torch.sqrt(v.pow(2).mean() + eps), x)
    return torch.stack([vjp(row)[0] for row in torch.eye(len(x), dtype=x.dtype)])
"""),
    # eps in the outer term's r only: entry (0, 1) is right, the diagonal is not
    ("05.2.3:identity-r-without-eps", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / x.pow(2).mean().sqrt() "
        "- torch.outer(x, x) / (d * r**3))")),
    ("05.2.3:gains-on-identity-only", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3)")),
    # the mean of |x|: 3.5 for (3, 4), as the root of the square of the mean
    ("05.2.3:r-from-mean-abs",
     _JACOBIAN_WITH.replace("torch.sqrt(x.pow(2).mean() + eps)", "x.abs().mean() + eps")
     .replace("BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))")),
    # 2 typed in for d in the outer term alone
    ("05.2.3:fixed-d", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (2 * r**3))")),
]
# torch.no_grad() around the formula: no graph is recorded, so no autograd
RIGHT["ex_05_2_3_solution"].append(_JACOBIAN_WITH.replace(
    "    return BODY", "    with torch.no_grad():\n        return gamma[:, None] * "
    "(torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))"))

# 05.2.1: the caller's list squared in place, eps as a floor or under its own root, entries doubled,
# no return.
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:no-return", _RMS.replace("return BODY", "r = math.sqrt(sum(v * v for v in x) / len(x) + eps)")),
    ("05.2.1:input-changed", """
import math
def rms(x, eps=0.0):
    for i in range(len(x)):
        x[i] = x[i] ** 2
    return math.sqrt(sum(x) / len(x) + eps)
"""),
    ("05.2.1:doubled-not-squared", _RMS.replace("BODY", "math.sqrt(sum(v * 2 for v in x) / len(x) + eps)")),
    ("05.2.1:eps-as-floor", _RMS.replace("BODY", "math.sqrt(max(sum(v * v for v in x) / len(x), eps))")),
    ("05.2.1:eps-own-root",
     _RMS.replace("BODY", "math.sqrt(sum(v * v for v in x) / len(x)) + math.sqrt(eps)")),
]

# 05.2.3: a matrix of ones where the identity belongs: 1 / r in every entry.
MISTAKES["ex_05_2_3_solution"] += [
    ("05.2.3:ones-not-identity", _JACOBIAN_WITH.replace(
        "BODY", "gamma[:, None] * (torch.ones(d, d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))")),
]

# 05.2.1: the caller's list sorted in place, then a right r: only an unsorted list shows it.
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:sorts-input", """
import math
def rms(x, eps=0.0):
    x.sort()
    return math.sqrt(sum(v * v for v in x) / len(x) + eps)
"""),
]

# 05.2.2 and 05.2.3: eps added to the sum before dividing by d, and eps squared, agree at eps = 0.5 and
# d = 2 (12.75): each is named by its own message.
_BODY = "gamma[:, None] * (torch.eye(d, dtype=x.dtype) / r - torch.outer(x, x) / (d * r**3))"
MISTAKES["ex_05_2_2_solution"] += [
    ("05.2.2:eps-before-mean",
     _NORM.replace("NORMALISED",
                   "xf * torch.rsqrt((xf.pow(2).sum(-1, keepdim=True) + self.eps) / x.shape[-1])")),
]
MISTAKES["ex_05_2_3_solution"] += [
    ("05.2.3:eps-squared", _JACOBIAN_WITH.replace("x.pow(2).mean() + eps", "x.pow(2).mean() + eps**2")
     .replace("BODY", _BODY)),
    ("05.2.3:eps-before-mean", _JACOBIAN_WITH.replace("x.pow(2).mean() + eps", "(x.pow(2).sum() + eps) / d")
     .replace("BODY", _BODY)),
]

# 05.2.1: x ** 2 on the list itself (a TypeError), and the square of the sum.
MISTAKES["ex_05_2_1_solution"] += [
    ("05.2.1:list-squared", _RMS.replace("BODY", "math.sqrt(sum(x**2) / len(x) + eps)")),
    ("05.2.1:square-of-sum", _RMS.replace("BODY", "math.sqrt(sum(x) ** 2 / len(x) + eps)")),
]
