"""Visible = hidden for 05.7, 05.9 and 05.10, check by check (course format, "Exercises").

tests/test_visible_hidden.py proves, rule by rule, that each wrong answer of ``HIDDEN_RULES``
fails the visible test (which names the mistake) and the hidden part. Here, for these three
notebooks, every check of a hidden part is accounted for: the hidden ``assert`` statements
and the ``check_parts`` call (outside the functions the cell defines). Either a planted wrong
answer fails there first (when it fails on a statement that is no check, a call that raises,
the check after it is the one that would have judged the result), or the check is listed in
``REPEATS`` with the visible check it repeats on other inputs: a wrong answer that breaks it
breaks that visible check, so it never gets this far.

05.10.3 (the capstone) is the one exercise whose hidden part needs SmolLM2: its planted answers
(``CAPSTONE_HIDDEN`` in tests/exercise_cases/ex_05_10.py) run here with the visible part
unchecked, which stops at ``check_parts`` before any model is loaded.
"""

from __future__ import annotations

import ast

import pytest

from tests.exercise_cases.ex_05_10 import CAPSTONE_HIDDEN
from tests.test_visible_hidden import CELLS, HIDDEN_RULES, _parts, _run, hidden_failure
from tinyk.learner import mistakes

NOTEBOOKS = ("05.7", "05.9", "05.10")
EXERCISES = sorted(g for g in CELLS if mistakes.exercise_of(g).rsplit(".", 1)[0] in NOTEBOOKS)

# grade_id -> {a hidden check's first line: the visible check it repeats}.
REPEATS: dict[str, dict[str, str]] = {
    "ex_05_7_3_solution": {
        "assert type(got) is int and got == 9 * 64 + 64 * 64 * 2 + 2 * 64 * 16 + 3 * 64 * 192 + 3 * 64, got":
            "a Transformer counted with its tied weight once: the visible tiny experiment, 19,008",
    },
    "ex_05_9_3_solution": {
        'assert torch.allclose(got, out.last_loss, atol=1e-05), "differs from the text version\'s last_loss"':
            "each target's -log p, 0.0 where ignored (id 0): the visible checks on uniform and other logits",
    },
    "ex_05_10_1_solution": {
        "assert isinstance(got, torch.Tensor) and got.shape == (32,)":
            "a tensor of 32 weights: the visible test's first block",
    },
    "ex_05_10_2_solution": {
        "assert ids[row].tolist() == s + [pad] * (T - len(s)), (s, ids[row].tolist())":
            "each row, then pad_id up to the longest row: the visible batches [[1, 5, 2], [1, 2, 2]] "
            "and [[4, 9, 9, 9], [3, 9, 6, 9]]",
        "assert ids.dtype == labels.dtype == torch.long and ids.shape == labels.shape == (B, T), lengths":
            "long ids and labels of shape B×T: the visible first batch (2×3) and the second (2×4)",
        'assert torch.allclose(batch, expected, atol=1e-05), '
        '"tinyk\'s loss on the batch is not the chats\' own"':
            "the loss follows from ids and labels, which the row checks before it compare in full",
    },
    "ex_05_10_3_solution": {
        "assert (steps[0] - steps[1]).abs().max() < 0.0001, \"two tokens after a cache differ from tinyk's\"":
            "the causal triangle behind a cache (the queries are the last keys): the visible check_parts "
            "checks causal_padding_mask and gqa_attention with fewer queries than keys",
    },
}


def _checks(hidden: str) -> list[ast.stmt]:
    """The hidden part's checks, in source order: ``assert`` statements and ``check_parts``
    calls outside the functions it defines."""
    tree = ast.parse(hidden)
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)}

    def is_check(node: ast.AST) -> bool:
        if isinstance(node, ast.Assert):
            return True
        return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "check_parts")

    return sorted((n for n in ast.walk(tree) if is_check(n) and id(n) not in inside), key=lambda n: n.lineno)


def _key(check: ast.stmt) -> str:
    return ast.unparse(check).splitlines()[0]


def _failing_check(grade_id: str, wrong: str) -> str:
    """The hidden check at which ``wrong`` fails (see the module's docstring)."""
    hidden = _parts(CELLS[grade_id][1])[1]
    failure = hidden_failure(grade_id, wrong)
    lines = [frame.tb_lineno for frame in _frames(failure.__traceback__)
             if frame.tb_frame.f_code.co_filename == "<hidden>"]
    line = lines[-1]
    return next(_key(c) for c in _checks(hidden) if (c.end_lineno or c.lineno) >= line)


def _frames(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _planted(grade_id: str) -> list[tuple[str, str]]:
    return CAPSTONE_HIDDEN if grade_id == "ex_05_10_3_solution" else HIDDEN_RULES.get(grade_id, [])


def test_the_three_notebooks_have_their_exercises_and_planted_answers():
    assert len(EXERCISES) == 9, EXERCISES
    assert all(_planted(g) for g in EXERCISES), [g for g in EXERCISES if not _planted(g)]


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_every_hidden_check_fails_for_a_planted_answer_or_repeats_a_visible_one(grade_id):
    _, hidden = _parts(CELLS[grade_id][1])
    checks = [_key(c) for c in _checks(hidden)]
    assert checks, grade_id
    repeats = REPEATS.get(grade_id, {})
    assert set(repeats) <= set(checks), set(repeats) - set(checks)
    failed = {_failing_check(grade_id, wrong) for _, wrong in _planted(grade_id)}
    assert failed.isdisjoint(repeats), failed & set(repeats)  # a check a planted answer reaches is no repeat
    assert sorted(set(checks) - failed - set(repeats)) == []


@pytest.mark.parametrize("mistake_id,wrong", CAPSTONE_HIDDEN, ids=[m for m, _ in CAPSTONE_HIDDEN])
def test_a_capstone_mistake_fails_the_visible_test_naming_it_and_the_hidden_part(mistake_id, wrong):
    visible, _ = _parts(CELLS["ex_05_10_3_solution"][1])
    with pytest.raises(AssertionError) as caught:
        _run({}, wrong, visible)
    found = mistakes.match("ex_05_10_3_test", str(caught.value))
    assert found is not None and found.id == mistake_id, f"{found} named instead of {mistake_id}"
    assert _failing_check("ex_05_10_3_solution", wrong) == "check_parts(parts, seed=11)"
