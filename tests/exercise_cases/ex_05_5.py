"""Wrong answers to the exercises of notebook 05.5 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_5_1_solution": """
def swiglu_width(dim, multiple_of):
    return 2048
""",
    "ex_05_5_2_solution": """
import torch
def swiglu(x, w1, w2, w3):
    return torch.full((1, 2), 12 * torch.sigmoid(torch.tensor(2.0)).item())
""",
    "ex_05_5_3_solution": """
def prenorm_block(x, attention, mlp, norm1, norm2):
    return 6 * x + 1
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
