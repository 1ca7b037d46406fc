"""Wrong answers to the exercises of notebook 05.7 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_7_1_solution": """
import math
def entropy_of(text):
    return math.log(2)
""",
    "ex_05_7_2_solution": """
def follows_rule(line):
    return line == "3+4=4+3"
""",
    "ex_05_7_3_solution": """
def count_unique(model):
    return 19_008
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {}
