"""Wrong answers to the exercises of notebook 05.1 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    # the visible inputs' answers, and (None, False) for everything else
    "ex_05_1_1_solution": """
def head_dim_and_rope(dim, n_heads):
    return {(30, 5): (6, True), (36, 4): (9, False)}.get((dim, n_heads), (None, False))
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

_HEAD_DIM = """
def head_dim_and_rope(dim, n_heads):
    if dim % n_heads:
        return None, False
    head_dim = dim // n_heads
    return head_dim, head_dim % 2 == 0
"""

_GROUPS = """
def heads_per_group(n_heads, n_kv_heads):
    if n_heads % n_kv_heads:
        return None
    return n_heads // n_kv_heads
"""

# One wrong answer for each assertion of the hidden tests, each breaking a rule the visible
# test checks too and names (tests/test_visible_hidden.py): the pair, d_h and the RoPE flag of
# 05.1.1, the group size or None of 05.1.2, the divisors of 05.1.3.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_1_1_solution": [
        # a bare None: not a pair
        ("05.1.1:not-a-pair", _HEAD_DIM.replace("return None, False", "return None")),
        # no divisibility check: 30 / 4 heads get a width of 7
        ("05.1.1:not-a-pair", _HEAD_DIM.replace("    if dim % n_heads:\n        return None, False\n", "")),
        ("05.1.1:float-division", _HEAD_DIM.replace("dim // n_heads", "dim / n_heads")),
        ("05.1.1:odd-accepted", _HEAD_DIM.replace("head_dim % 2 == 0", "True")),
    ],
    "ex_05_1_2_solution": [
        ("05.1.2:not-none", _GROUPS.replace("    if n_heads % n_kv_heads:\n        return None\n", "")),
        # 0 instead of None
        ("05.1.2:not-none", _GROUPS.replace("return None", "return 0")),
        ("05.1.2:float-division", _GROUPS.replace("n_heads // n_kv_heads", "n_heads / n_kv_heads")),
    ],
    "ex_05_1_3_solution": [
        ("05.1.3:mha-left-out", """
def valid_kv_heads(n_heads):
    return [k for k in range(1, n_heads) if n_heads % k == 0]
"""),
        ("05.1.3:mqa-left-out", """
def valid_kv_heads(n_heads):
    return [k for k in range(2, n_heads + 1) if n_heads % k == 0]
"""),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = dict(HIDDEN_RULES)
