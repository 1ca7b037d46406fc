"""A learner who sees "passed" has earned the points (course format, "Exercises"): every rule a
hidden test checks, the visible test checks too; the hidden tests only vary the inputs.

The table: ``HIDDEN_RULES`` in ``tests/exercise_cases/ex_*.py``, per exercise (the answer
cell's grade_id) a list of (catalogued mistake id, wrong answer), each wrong answer breaking one
rule a hidden test checks (the theta argument of 05.3.1, the input's dtype in 05.3.2, the
``ValueError`` of 05.3.4, ...). A notebook joins by defining its own ``HIDDEN_RULES``. Each
wrong answer runs in-process with its exercise's test cell (as in tests/test_exercises.py):

- the visible test alone fails, its message naming the mistake (the catalogue's words, and
  :func:`tinyk.learner.mistakes.match` finds that mistake and no other of the exercise);
- the test cell with its visible checks taken out (every ``assert`` and ``raise
  AssertionError`` outside the functions it defines) fails in its hidden part, and not for a
  name the visible part left undefined: the rule is one the hidden test checks, so before the
  visible test checked it too, this answer saw "passed" and lost the points. (The unchecked
  visible part may stop early, where the wrong answer breaks what it computes, e.g. loading a
  state dict with an extra entry.)

For the notebooks of ``EVERY_LINE`` (05.1, 05.4, 05.6) the table goes further: each assertion
of a hidden part is the first to fail for one of its wrong answers (the part's
``check_parts`` call taken out, which checks the same rules first), except the few of
``REPEATS``, which repeat the rule of an assertion before them and so cannot fail first.
"""

from __future__ import annotations

import ast
import importlib
import json
import traceback
from pathlib import Path

import pytest

from tinyk.courseware.checkout import notebook_paths
from tinyk.courseware.exercises import BEGIN_HIDDEN, END_HIDDEN, is_solution, is_test, nbgrader, source_text
from tinyk.learner import mistakes

HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {}
for _case in sorted((Path(__file__).parent / "exercise_cases").glob("ex_*.py")):
    _module = importlib.import_module(f"tests.exercise_cases.{_case.stem}")
    HIDDEN_RULES.update(getattr(_module, "HIDDEN_RULES", {}))


def _cells() -> dict[str, tuple[dict, dict]]:
    """grade_id of each answer cell -> (answer cell, its test cell)."""
    found = {}
    for path in notebook_paths():
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            if is_solution(cell):
                found[nbgrader(cell)["grade_id"]] = (cell, next(c for c in cells[i + 1:] if is_test(c)))
    return found


CELLS = _cells()


def _parts(test: dict) -> tuple[str, str]:
    """The test cell's visible part and its hidden part (markers gone)."""
    visible, _, hidden = source_text(test).partition(BEGIN_HIDDEN)
    return visible, hidden.replace(END_HIDDEN, "")


class _WithoutChecks(ast.NodeTransformer):
    """``assert ...`` and ``raise AssertionError(...)`` become ``pass``: the cell's checks go,
    what they compute stays. Functions the cell defines keep theirs: the hidden part calls them
    too (05.5.3's ``run_block`` checks every output's dtype)."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.Pass:
        return ast.copy_location(ast.Pass(), node)

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id == "AssertionError":
            return ast.copy_location(ast.Pass(), node)
        return node


def without_checks(source: str) -> str:
    return ast.unparse(ast.fix_missing_locations(_WithoutChecks().visit(ast.parse(source))))


def _run(namespace: dict, *sources: str) -> None:
    for src in sources:
        exec(compile(src, "<exercise>", "exec"), namespace)


CASES = [pytest.param(grade_id, mistake_id, wrong, id=f"{grade_id}-{mistake_id}-{n}")
         for grade_id, cases in HIDDEN_RULES.items() for n, (mistake_id, wrong) in enumerate(cases)]


def test_the_table_names_real_exercises_and_their_own_mistakes():
    assert HIDDEN_RULES, "no exercise_cases module defines HIDDEN_RULES"
    for grade_id, cases in HIDDEN_RULES.items():
        assert grade_id in CELLS, grade_id
        assert all(mistakes.by_id(m).exercise == mistakes.exercise_of(grade_id) for m, _ in cases), grade_id


@pytest.mark.parametrize("grade_id,mistake_id,wrong", CASES)
def test_a_hidden_rule_broken_fails_the_visible_test_which_names_it(grade_id, mistake_id, wrong):
    visible, _ = _parts(CELLS[grade_id][1])
    with pytest.raises(AssertionError) as caught:
        _run({}, wrong, visible)
    message = str(caught.value)
    assert mistakes.by_id(mistake_id).words in message.lower(), message
    found = mistakes.match(grade_id, message)
    assert found is not None and found.id == mistake_id, f"{found} named instead of {mistake_id}: {message}"


def hidden_failure(grade_id: str, wrong: str) -> BaseException:
    """What the hidden part of ``grade_id``'s test raises (compiled as ``<hidden>``) after ``wrong``
    and the visible part without its checks: an assert, or another error than the one asked for,
    never a NameError."""
    visible, hidden = _parts(CELLS[grade_id][1])
    namespace: dict = {}
    _run(namespace, wrong)
    try:
        _run(namespace, without_checks(visible))
    except Exception:  # the unchecked visible part stops where the wrong answer breaks it
        pass
    with pytest.raises(Exception) as caught:
        exec(compile(hidden, "<hidden>", "exec"), namespace)
    assert not isinstance(caught.value, NameError), caught.value
    return caught.value


@pytest.mark.parametrize("grade_id,mistake_id,wrong", CASES)
def test_the_hidden_test_checks_that_rule(grade_id, mistake_id, wrong):
    hidden_failure(grade_id, wrong)


@pytest.mark.parametrize("grade_id", sorted(HIDDEN_RULES))
def test_the_answer_passes_the_cell_without_its_visible_checks(grade_id):
    """The check above can tell: the exercise's own answer runs the unchecked cell through."""
    solution, test = CELLS[grade_id]
    visible, hidden = _parts(test)
    _run({}, source_text(solution), without_checks(visible), hidden)
    assert _top_level_asserts(visible) > 0 and _top_level_asserts(without_checks(visible)) == 0


# Exercises whose table holds, for each assertion of the hidden tests, a wrong answer that
# fails that assertion first: the rule of every hidden line is one the visible test names.
EVERY_LINE = ("ex_05_1_", "ex_05_4_", "ex_05_6_")
# Hidden assertions no answer can fail first, each with the earlier one that checks its rule.
REPEATS = {
    ("ex_05_4_3_solution", "differs from tinyk.repeat_kv"):
        "tinyk.repeat_kv copies the heads as repeat_interleave does, checked the line before",
    ("ex_05_4_4_solution", "got.masked_select(blocked)"):
        "PyTorch's attention with a boolean mask gives zeros on a row with no allowed key, compared before",
    ("ex_05_6_2_solution", "base(prompt).logits"):
        "the same positions give the same logits: the positions are compared before",
}


class _WithoutPartChecks(ast.NodeTransformer):
    """The hidden part without its ``check_parts(...)`` call, which checks the rules of the
    lines after it on its own inputs and so fails first for every wrong answer."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check_parts":
            return None
        return node


def _hidden_lines(hidden: str) -> dict[int, str]:
    """Line number -> first line of each assertion of the hidden part, outside functions."""
    tree = ast.parse(hidden)
    inside = {id(node) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for node in ast.walk(f)}
    lines = hidden.splitlines()
    return {node.lineno: lines[node.lineno - 1].strip() for node in ast.walk(tree)
            if isinstance(node, ast.Assert) and id(node) not in inside}


def _first_failing_line(wrong: str, visible: str, hidden: str) -> int | None:
    """The line of the hidden part where ``wrong`` fails first (run as above, unchecked
    visible part first), or None when it does not fail there."""
    namespace: dict = {}
    _run(namespace, wrong)
    try:
        _run(namespace, without_checks(visible))
    except Exception:
        pass
    try:
        exec(compile(hidden, "<hidden>", "exec"), namespace)
    except Exception as err:  # the line is what counts
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == "<hidden>"]
        return frames[-1].lineno if frames else None
    return None


@pytest.mark.parametrize("grade_id", sorted(g for g in HIDDEN_RULES if g.startswith(EVERY_LINE)))
def test_every_hidden_assertion_fails_first_for_one_planted_answer(grade_id):
    visible, hidden = _parts(CELLS[grade_id][1])
    hidden = ast.unparse(ast.fix_missing_locations(_WithoutPartChecks().visit(ast.parse(hidden))))
    lines = _hidden_lines(hidden)
    repeated = {n for n, text in lines.items()
                if any(g == grade_id and piece in text for g, piece in REPEATS)}
    failed = [_first_failing_line(wrong, visible, hidden) for _, wrong in HIDDEN_RULES[grade_id]]
    assert len(failed) == len(HIDDEN_RULES[grade_id]) > 0 and lines
    missing = {n: text for n, text in lines.items() if n not in failed and n not in repeated}
    assert missing == {}, f"no planted answer fails these hidden assertions first: {missing}"
    assert None not in failed, "a planted answer passes the hidden part without its check_parts call"


def test_the_repeated_assertions_exist():
    """Each entry of REPEATS names an assertion of its exercise's hidden part."""
    found = [(g, piece) for g, piece in REPEATS
             if any(piece in text for text in _hidden_lines(_parts(CELLS[g][1])[1]).values())]
    assert found == list(REPEATS)


def _top_level_asserts(source: str) -> int:
    """The ``assert`` statements of ``source`` outside the functions it defines."""
    tree = ast.parse(source)
    inside = {id(node) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for node in ast.walk(f)}
    return sum(isinstance(node, ast.Assert) and id(node) not in inside for node in ast.walk(tree))
