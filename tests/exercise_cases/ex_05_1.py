"""Wrong answers to the exercises of notebook 05.1 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_1_1_solution": """
def head_dim_and_rope(dim, n_heads):
    return 6, True
""",
    "ex_05_1_2_solution": """
def heads_per_group(n_heads, n_kv_heads):
    return None if n_kv_heads == 4 else 2
""",
    "ex_05_1_3_solution": """
def valid_kv_heads(n_heads):
    return [1, 2, 3, 4, 6, 12]
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {}
