"""Wrong answers to the exercises of notebook 05.9 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_9_1_solution": """
def rows_stopping(next_tokens, stop_id):
    return [False, True, True]
""",
    "ex_05_9_2_solution": """
def parses(source):
    return source == "x = 1"
""",
    "ex_05_9_3_solution": """
def counted_targets(targets, ignore_index):
    return 2
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {}
