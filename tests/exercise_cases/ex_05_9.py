"""Wrong answers to the exercises of notebook 05.9 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_9_1_solution": """
def rows_stopping(next_tokens, stop_id):
    return [False, True, True] if len(next_tokens) == 3 else [True]
""",
    "ex_05_9_2_solution": """
def snippet_verdict(snippet):
    if snippet.startswith("    def"):
        return "needs context"
    if snippet.startswith("out:\\n") or snippet.startswith("    return ("):
        return "not code"
    return "parses"
""",
    "ex_05_9_3_solution": """
import math
import torch
def per_target_loss(logits, targets, ignore_index):
    return {1: torch.tensor([1.3133]), 2: torch.tensor([0.0, math.log(3)]),
            3: torch.tensor([2.1698, 0.0949, 0.5046]),
            4: torch.tensor([math.log(3), 0.0, math.log(3), 0.0])}.get(len(targets), torch.zeros(9))
""",
}

_VERDICT = """
import ast
import textwrap
def _parses(source):
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True
"""

_LOSS = """
import torch
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    ignored = targets == ignore_index
    index = targets.masked_fill(ignored, 0)
"""

_PICKED = _LOSS + """
    return (-F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1)).masked_fill(ignored, 0.0)
"""

# Wrong answers that break a rule only the hidden tests used to check (a batch of one row, an
# indented snippet that is not code dedented either, the target's own class, a single target):
# the visible test must name each (tests/test_visible_hidden.py), and the cell without its
# visible checks must still fail. MISTAKES below holds them as well.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_9_1_solution": [
        ("05.9.1:one-row-not-a-list", """
def rows_stopping(next_tokens, stop_id):
    return (next_tokens == stop_id).squeeze().tolist()
"""),
    ],
    "ex_05_9_2_solution": [
        ("05.9.2:judges-by-indentation", _VERDICT + """
def snippet_verdict(snippet):
    if _parses(snippet):
        return "parses"
    return "needs context" if snippet[:1] in (" ", "\\t") else "not code"
"""),
    ],
    "ex_05_9_3_solution": [
        ("05.9.3:likeliest-class", _LOSS + """
    return (-F.log_softmax(logits, dim=-1).max(-1).values).masked_fill(ignored, 0.0)
"""),
        ("05.9.3:gathers-over-rows", _PICKED.replace("gather(-1,", "gather(0,")),
        # squeeze(): a single row's loss has no axis left to index
        ("05.9.3:squeezes-one-row", _LOSS + """
    losses = -F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze()
    losses[ignored] = 0.0
    return losses
"""),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_9_1_solution": [
        *HIDDEN_RULES["ex_05_9_1_solution"],
        ("05.9.1:one-answer-for-the-batch", """
def rows_stopping(next_tokens, stop_id):
    return [bool((next_tokens == stop_id).any())] * len(next_tokens)
"""),
    ],
    "ex_05_9_2_solution": [
        *HIDDEN_RULES["ex_05_9_2_solution"],
        ("05.9.2:never-dedents", _VERDICT + """
def snippet_verdict(snippet):
    return "parses" if _parses(snippet) else "not code"
"""),
        ("05.9.2:dedents-first", _VERDICT + """
def snippet_verdict(snippet):
    if _parses(textwrap.dedent(snippet)):
        return "needs context"
    return "parses" if _parses(snippet) else "not code"
"""),
        ("05.9.2:strip-not-dedent", _VERDICT + """
def snippet_verdict(snippet):
    if _parses(snippet):
        return "parses"
    return "needs context" if _parses(snippet.strip()) else "not code"
"""),
        ("05.9.2:runs-the-snippet", """
import textwrap
def _runs(source):
    try:
        exec(source, {})
    except Exception:
        return False
    return True
def snippet_verdict(snippet):
    if _runs(snippet):
        return "parses"
    return "needs context" if _runs(textwrap.dedent(snippet)) else "not code"
"""),
    ],
    "ex_05_9_3_solution": [
        *HIDDEN_RULES["ex_05_9_3_solution"],
        ("05.9.3:probability-not-log", _LOSS + """
    return (-F.softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1)).masked_fill(ignored, 0.0)
"""),
        # the probability itself, without the minus sign
        ("05.9.3:probability-not-log", _LOSS + """
    return F.softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
"""),
        ("05.9.3:raw-logits", _LOSS + """
    return (-logits.gather(-1, index[:, None]).squeeze(-1)).masked_fill(ignored, 0.0)
"""),
        # log_probs[:, targets]: every target's column for every row
        ("05.9.3:every-target-per-row", _LOSS + """
    return (-F.log_softmax(logits, dim=-1)[:, index]).masked_fill(ignored, 0.0)
"""),
        ("05.9.3:every-target-counted", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    index = targets.clamp(min=0)
    return -F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1)
"""),
        ("05.9.3:minus-sign-missing", _LOSS + """
    return F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
"""),
        ("05.9.3:softmax-over-rows", _LOSS + """
    return -F.log_softmax(logits, dim=0).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
"""),
        ("05.9.3:picks-at-minus-100", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    picked = -F.log_softmax(logits, dim=-1).gather(-1, targets[:, None]).squeeze(-1)
    return picked.masked_fill(targets == ignore_index, 0.0)
"""),
        ("05.9.3:mean-not-per-target", _LOSS + """
    losses = -F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
    return losses.sum() / (~ignored).sum()
"""),
        # F.cross_entropy, not the learner's own code
        ("05.9.3:borrowed", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    return F.cross_entropy(logits, targets, ignore_index=ignore_index, reduction="none")
"""),
        # F.nll_loss on its own log-softmax
        ("05.9.3:borrowed", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    return F.nll_loss(F.log_softmax(logits, dim=-1), targets, ignore_index=ignore_index, reduction="none")
"""),
        # nn.CrossEntropyLoss, F.cross_entropy by another route
        ("05.9.3:borrowed", """
from torch import nn
def per_target_loss(logits, targets, ignore_index):
    return nn.CrossEntropyLoss(ignore_index=ignore_index, reduction="none")(logits, targets)
"""),
    ],
}

# The comparison's bool tensor returned as it is, or a list of its 0-d tensors.
MISTAKES["ex_05_9_1_solution"] += [
    ("05.9.1:tensor-not-list", """
def rows_stopping(next_tokens, stop_id):
    return next_tokens == stop_id
"""),
    ("05.9.1:list-of-tensors", """
def rows_stopping(next_tokens, stop_id):
    return [token == stop_id for token in next_tokens]
"""),
]
