"""Wrong answers to the exercises of notebook 05.2 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_2_1_solution": """
def rms(x, eps=0.0):
    return 12.5 ** 0.5
""",
    "ex_05_2_2_solution": """
def rms_norm(x, gamma, eps):
    return [3 / 12.5 ** 0.5, 4 / 12.5 ** 0.5]
""",
    "ex_05_2_3_solution": """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    r = 12.5 ** 0.5
    off = -12 / (2 * r**3)
    return torch.tensor([[1 / r - 9 / (2 * r**3), off], [off, 1 / r - 16 / (2 * r**3)]], dtype=torch.float64)
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
