"""Wrong answers to the exercises of notebook 05.9 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_9_1_solution": """
def rows_stopping(next_tokens, stop_id):
    return [False, True, True]
""",
    "ex_05_9_2_solution": """
def snippet_verdict(snippet):
    if snippet.startswith("    def"):
        return "needs context"
    if snippet.startswith("out:\\n"):
        return "not code"
    return "parses"
""",
    "ex_05_9_3_solution": """
import math
import torch
def per_target_loss(logits, targets, ignore_index):
    if len(targets) == 2:
        return torch.tensor([0.0, math.log(3)])
    return torch.tensor([math.log(3), 0.0, math.log(3), 0.0])
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

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (name, source, words): the
# visible test's message must contain ``words`` (lowercase).
MISTAKES: dict[str, list[tuple[str, str, str]]] = {
    "ex_05_9_1_solution": [
        ("one answer for the whole batch", """
def rows_stopping(next_tokens, stop_id):
    return [bool((next_tokens == stop_id).any())] * len(next_tokens)
""", "each row gets its own answer"),
    ],
    "ex_05_9_2_solution": [
        ("never dedents: an indented method is 'not code'", _VERDICT + """
def snippet_verdict(snippet):
    return "parses" if _parses(snippet) else "not code"
""", "parses once dedented"),
        ("dedents first: a snippet that parses is 'needs context'", _VERDICT + """
def snippet_verdict(snippet):
    if _parses(textwrap.dedent(snippet)):
        return "needs context"
    return "parses" if _parses(snippet) else "not code"
""", "as it stands before dedenting"),
        ("strip() instead of dedent", _VERDICT + """
def snippet_verdict(snippet):
    if _parses(snippet):
        return "parses"
    return "needs context" if _parses(snippet.strip()) else "not code"
""", "strip() only the first line's"),
        ("runs the snippet instead of parsing it", """
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
""", "never run it"),
    ],
    "ex_05_9_3_solution": [
        ("every target counted (no ignore_index)", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    index = targets.clamp(min=0)
    return -F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1)
""", "costs exactly 0.0"),
        ("the minus sign missing", _LOSS + """
    return F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
""", "minus sign is missing"),
        ("softmax over the rows, not the classes", _LOSS + """
    return -F.log_softmax(logits, dim=0).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
""", "over the rows instead of the classes"),
        ("picks at -100 before masking", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    picked = -F.log_softmax(logits, dim=-1).gather(-1, targets[:, None]).squeeze(-1)
    return picked.masked_fill(targets == ignore_index, 0.0)
""", "-100 is not a class"),
        ("the mean instead of one loss per target", _LOSS + """
    losses = -F.log_softmax(logits, dim=-1).gather(-1, index[:, None]).squeeze(-1).masked_fill(ignored, 0.0)
    return losses.sum() / (~ignored).sum()
""", "one loss per target"),
        ("F.cross_entropy, not the learner's own code", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    return F.cross_entropy(logits, targets, ignore_index=ignore_index, reduction="none")
""", "not allowed here"),
        ("F.nll_loss on its own log-softmax", """
import torch.nn.functional as F
def per_target_loss(logits, targets, ignore_index):
    return F.nll_loss(F.log_softmax(logits, dim=-1), targets, ignore_index=ignore_index, reduction="none")
""", "not allowed here"),
        ("nn.CrossEntropyLoss, F.cross_entropy by another route", """
from torch import nn
def per_target_loss(logits, targets, ignore_index):
    return nn.CrossEntropyLoss(ignore_index=ignore_index, reduction="none")(logits, targets)
""", "not allowed here"),
    ],
}
