"""Wrong answers to the exercises of notebook 05.7 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_7_1_solution": """
import math
def entropy_of(text):
    return {"abab": math.log(2), "aabbbb": 0.6365141682948128}.get(text, 0.0)
""",
    "ex_05_7_2_solution": """
def follows_rule(line):
    return line == "3+4=4+3"
""",
    "ex_05_7_3_solution": """
def count_unique(model):
    return 19_008 if hasattr(model, "tok_embeddings") else 16
""",
}

_ENTROPY = """
import math
from collections import Counter
def entropy_of(text):
    counts = Counter(text)
    return {sign}sum(c / len(text) * math.{log}(c / len(text)) for c in counts.values())
"""

# The rule checked position by position, as the solution does; each wrong answer leaves a check out.
_CHECKS = {"length": "len(line) == 7", "symbols": 'line[1] + line[3] + line[5] == "+=+"',
           "digits": "line[0].isdigit() and line[2].isdigit()", "swap": "line[4] == line[2]",
           "other-half": "line[6] == line[0]"}


def _rule(without: str = "") -> str:
    checks = " and ".join(check for name, check in _CHECKS.items() if name != without)
    return f"def follows_rule(line):\n    return {checks}\n"


_TWICE = """
def count_unique(model):
    return sum(p.numel() for p in model.state_dict().values())
"""

# Wrong answers that break a rule only the hidden tests used to check (the frequencies, single
# digits and the exact line, any module): the visible test must name each
# (tests/test_visible_hidden.py), and the cell without its visible checks must still fail.
# MISTAKES below holds them as well.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_7_1_solution": [
        ("05.7.1:log-of-symbol-count", """
import math
def entropy_of(text):
    return math.log(len(set(text)))
"""),
    ],
    "ex_05_7_2_solution": [
        ("05.7.2:half-the-swap", _rule(without="other-half")),
        ("05.7.2:digits-not-checked", _rule(without="digits")),
        ("05.7.2:symbols-not-checked", _rule(without="symbols")),
        # split on + and =: any numbers
        ("05.7.2:several-digits", """
def follows_rule(line):
    left, equals, right = line.partition("=")
    a, plus, b = left.partition("+")
    return bool(equals and plus and a.isdigit() and b.isdigit()) and right == f"{b}+{a}"
"""),
        # a regular expression whose $ also matches before a final newline
        ("05.7.2:strips-the-line", """
import re
def follows_rule(line):
    return re.match(r"^(\\d)\\+(\\d)=\\2\\+\\1$", line) is not None
"""),
        # the line stripped first
        ("05.7.2:strips-the-line", _rule().replace("    return", "    line = line.strip()\n    return")),
        ("05.7.2:short-line-crashes", _rule(without="length")),
    ],
    "ex_05_7_3_solution": [
        # the state dict's count, less the tied head: right for a Transformer alone
        ("05.7.3:transformer-only", """
def count_unique(model):
    return sum(p.numel() for p in model.state_dict().values()) - model.output.weight.numel()
"""),
        # every name but the head's: a layer used twice elsewhere still counts twice
        ("05.7.3:transformer-only", """
def count_unique(model):
    named = model.named_parameters(remove_duplicate=False)
    return sum(p.numel() for name, p in named if name != "output.weight")
"""),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_7_1_solution": [
        ("05.7.1:minus-sign-missing", _ENTROPY.format(sign="", log="log")),
        ("05.7.1:bits-not-nats", _ENTROPY.format(sign="-", log="log2")),
        *HIDDEN_RULES["ex_05_7_1_solution"],
    ],
    "ex_05_7_2_solution": HIDDEN_RULES["ex_05_7_2_solution"],
    "ex_05_7_3_solution": [
        ("05.7.3:tied-counted-twice", _TWICE),
        *HIDDEN_RULES["ex_05_7_3_solution"],
    ],
}

# NumPy's float64 returned, and each count divided by the number of distinct symbols.
MISTAKES["ex_05_7_1_solution"] += [
    ("05.7.1:numpy-scalar", """
import numpy as np
def entropy_of(text):
    _, counts = np.unique(list(text), return_counts=True)
    p = counts / len(text)
    return -np.sum(p * np.log(p))
"""),
    ("05.7.1:over-distinct-symbols", """
import math
from collections import Counter
def entropy_of(text):
    counts = Counter(text)
    return -sum(c / len(counts) * math.log(c / len(counts)) for c in counts.values())
"""),
]
