"""Wrong answers to the exercises of notebook 05.6 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_6_1_solution": """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    return 19_008
""",
    "ex_05_6_2_solution": """
def last_real_position(mask):
    return 3
""",
    "ex_05_6_3_solution": """
def step_rows(finished, next_tokens, eos, pad):
    return [7, 0, 2], [False, True, True]
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
