"""Wrong answers to the exercises of notebook 05.4 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_4_1_solution": """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [0, 0, 0, 1, 1, 1]
""",
    "ex_05_4_2_solution": """
def cache_bytes(*args):
    return 18_874_368
""",
    "ex_05_4_3_solution": """
import torch
def my_repeat_kv(x, n_rep):
    return torch.tensor([0.0, 0.0, 1.0, 1.0]).view(1, 1, 4, 1)
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
