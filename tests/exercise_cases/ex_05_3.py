"""Wrong answers to the exercises of notebook 05.3 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_3_1_solution": """
def rope_frequency(i, head_dim, theta=10000.0):
    return 1.0 if i == 0 else 0.1
""",
    "ex_05_3_2_solution": """
def rotate_pair(a, b, t, omega):
    return 0.0, 1.0
""",
    "ex_05_3_3_solution": """
import math
def rope_score(q, k, m, n, theta=10000.0):
    return math.cos(1.0)
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
