"""Every exercise: valid nbgrader cells, a solution that passes, a stub that fails, and
hidden tests that a hard-coded answer to the visible asserts does not pass.

Exercise cells are self-contained (their own imports), so each runs here in a fresh
namespace, without the rest of its notebook.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from tinyk.courseware.checkout import notebook_paths
from tinyk.courseware.exercises import (
    BEGIN_HIDDEN,
    END_HIDDEN,
    END_SOLUTION,
    book_version,
    is_solution,
    is_test,
    nbgrader,
    source_text,
)
from tinyk.courseware.student_versions import released
from tinyk.learner import mistakes
from tinyk.learner.part_compare import PartError

# Wrong answers, one file per notebook in tests/exercise_cases/: GUESSES (hard-coded answers
# to the visible asserts) and MISTAKES (solutions with one classic mistake each), each entry
# (mistake id, source): the visible test's assertion message must name that mistake of the
# package's catalogue (tinyk.learner.mistakes: its words, and no other mistake of the exercise).
GUESSES: dict[str, str] = {}
MISTAKES: dict[str, list[tuple[str, str]]] = {}
RIGHT: dict[str, list[str]] = {}  # right answers in other honest styles, which must pass
for _case in sorted((Path(__file__).parent / "exercise_cases").glob("ex_*.py")):
    _module = importlib.import_module(f"tests.exercise_cases.{_case.stem}")
    GUESSES.update(_module.GUESSES)
    MISTAKES.update(_module.MISTAKES)
    RIGHT.update(getattr(_module, "RIGHT", {}))


def _exercises():
    for path in notebook_paths():
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            if is_solution(cell):
                test = next((c for c in cells[i + 1 :] if is_test(c)), None)
                yield pytest.param(path, cell, test, id=nbgrader(cell)["grade_id"])


EXERCISES = list(_exercises())


def _run(*sources: str) -> None:
    namespace: dict = {}
    for src in sources:
        exec(compile(src, "<exercise>", "exec"), namespace)


def _without_markers(cell: dict) -> str:
    return source_text(book_version({"cells": [cell]})["cells"][0]) if is_solution(cell) else "\n".join(
        line for line in source_text(cell).splitlines() if line.strip() not in (BEGIN_HIDDEN, END_HIDDEN))


def _visible_only(test_cell: dict) -> str:
    return source_text(released({"cells": [test_cell]})["cells"][0])


def test_every_runnable_notebook_with_exercises_has_at_least_three():
    per_notebook: dict[str, int] = {}
    for param in EXERCISES:
        per_notebook[param.values[0].stem] = per_notebook.get(param.values[0].stem, 0) + 1
    assert all(n >= 3 for n in per_notebook.values()), per_notebook


def test_nbgrader_metadata_is_valid_and_ids_unique():
    """The one rule set, shared with ``python -m tinyk.grading validate``."""
    from tinyk.grading.assignment import metadata_problems

    assert metadata_problems(notebook_paths()) == []


# 05.10.3's answer and its test (SmolLM2 on the ten parts) run in two other places: the
# notebooks stage executes its source notebook, and tests/test_verdict.py grades the answer
# under the grader's sandbox, its model assembled in the learner's process.
RUN_ELSEWHERE = {"ex_05_10_3_solution"}


@pytest.mark.parametrize("path,solution,test", [p for p in EXERCISES if p.id not in RUN_ELSEWHERE])
def test_solution_passes_its_tests(path, solution, test):
    assert test is not None, "a solution cell without a test cell after it"
    assert nbgrader(test)["grade_id"] == re.sub(r"_solution$", "_test", nbgrader(solution)["grade_id"])
    _run(_without_markers(solution), _without_markers(test))


@pytest.mark.parametrize("path,solution,test", EXERCISES)
def test_released_stub_fails(path, solution, test):
    stub = source_text(released({"cells": [solution]})["cells"][0])
    assert END_SOLUTION not in stub
    # an exercise not answered yet fails with its own NotImplementedError, never a diagnosis
    # of a mistake it does not make (a test that catches RuntimeError, its base, re-raises it)
    # (the capstone's check_parts says so in its own words: "still a stub")
    with pytest.raises((NotImplementedError, PartError)) as caught:
        _run(stub, _without_markers(test))
    assert caught.type is NotImplementedError or "still a stub (it raises NotImplementedError)" in str(
        caught.value)


# Exercises whose visible test runs every check its hidden test runs (the hidden part only
# repeats them on other inputs): a wrong answer that fools it must not exist, so their
# registered guess must fail the visible test itself.
VISIBLE_CATCHES_GUESSES = {"ex_05_10_3_solution"}


@pytest.mark.parametrize("path,solution,test", EXERCISES)
def test_hard_coded_guess_passes_visible_but_fails_hidden_tests(path, solution, test):
    grade_id = nbgrader(solution)["grade_id"]
    guess = GUESSES.get(grade_id)
    assert guess is not None, "register a hard-coded wrong answer for this exercise in GUESSES"
    if grade_id in VISIBLE_CATCHES_GUESSES:
        with pytest.raises(AssertionError):
            _run(guess, _visible_only(test))
        return
    _run(guess, _visible_only(test))  # the visible asserts alone are fooled...
    with pytest.raises(AssertionError):
        _run(guess, _without_markers(test))  # ...the hidden ones are not


RIGHT_CASES = [
    pytest.param(solution, test, source, id=f"{nbgrader(solution)['grade_id']}-right-{n}")
    for _, solution, test in (p.values for p in EXERCISES)
    for n, source in enumerate(RIGHT.get(nbgrader(solution)["grade_id"], []))
]


@pytest.mark.parametrize("solution,test,right", RIGHT_CASES)
def test_a_right_answer_in_another_style_passes_the_visible_and_the_hidden_tests(solution, test, right):
    """Honest learners first: an answer right in another style than the solution's (NumPy, a
    float32 computation, another formula for the same numbers) earns the points."""
    _run(right, _without_markers(test))


def test_the_right_answers_name_real_exercises():
    exercises = {nbgrader(p.values[1])["grade_id"] for p in EXERCISES}
    assert len(RIGHT_CASES) == sum(map(len, RIGHT.values())) >= 3
    assert set(RIGHT) <= exercises, sorted(set(RIGHT) - exercises)

MISTAKE_CASES = [
    pytest.param(path, solution, test, source, mistake_id,
                 id=f"{nbgrader(solution)['grade_id']}-{mistake_id}-{n}")
    for path, solution, test in (p.values for p in EXERCISES)
    for n, (mistake_id, source) in enumerate(MISTAKES.get(nbgrader(solution)["grade_id"], []))
]


@pytest.mark.parametrize("path,solution,test,wrong,mistake_id", MISTAKE_CASES)
def test_a_classic_mistake_fails_the_visible_test_names_it_and_loses_the_points(path, solution, test, wrong,
                                                                                mistake_id):
    """The learner sees the verdict the grader will give: each catalogued mistake fails the
    visible asserts, which run first in the graded cell, so it loses the points too; the
    message names what is wrong (the catalogue's words for the mistake), and the grader's
    matching (:func:`tinyk.learner.mistakes.match`, which puts the id in the gradebook's detail)
    finds this mistake, not another of the exercise."""
    grade_id = nbgrader(solution)["grade_id"]
    assert mistakes.by_id(mistake_id).exercise == mistakes.exercise_of(grade_id), mistake_id
    with pytest.raises(AssertionError) as caught:
        _run(wrong, _visible_only(test))
    words = mistakes.by_id(mistake_id).words
    assert words in str(caught.value).lower(), f"{words!r} not in the message: {caught.value}"
    found = mistakes.match(grade_id, str(caught.value))
    assert found is not None and found.id == mistake_id, f"{found} named instead of {mistake_id}"
    test_id = nbgrader(test)["grade_id"]
    assert mistakes.note(test_id, str(caught.value)) == f"; mistake {mistake_id}"


def test_every_catalogued_mistake_has_a_wrong_answer_and_a_unique_id():
    """The package's catalogue and the wrong answers here are one list: every mistake the
    grader can name is made by a wrong answer above, and every exercise it names exists."""
    made = {mistake_id for cases in MISTAKES.values() for mistake_id, _ in cases}
    ids = [m.id for m in mistakes.CATALOGUE]
    assert len(ids) == len(set(ids)) == 600  # the number the instructors' page states
    assert sorted(set(ids) - made) == []
    assert sorted(made - set(ids)) == []
    exercises = {mistakes.exercise_of(nbgrader(p.values[1])["grade_id"]) for p in EXERCISES}
    assert {m.exercise for m in mistakes.CATALOGUE} <= exercises
    assert all(m.words == m.words.lower() and m.en and m.zh for m in mistakes.CATALOGUE)


def test_an_object_equal_to_everything_does_not_pass():
    class Liar:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    liar = "class Liar:\n    def __eq__(self, other):\n        return True\n"
    for _, solution, test in (p.values for p in EXERCISES):
        name = re.search(r"^(?:def|class) (\w+)", source_text(solution), re.M).group(1)
        cheat = liar + f"def {name}(*args, **kwargs):\n    return Liar()"
        with pytest.raises((AssertionError, TypeError, ValueError)):
            _run(cheat, _without_markers(test))
    assert Liar() == 1


UNNAMED: dict[str, list[str]] = {}  # wrong answers whose cause the visible test cannot tell
for _case in sorted((Path(__file__).parent / "exercise_cases").glob("ex_*.py")):
    UNNAMED.update(getattr(importlib.import_module(f"tests.exercise_cases.{_case.stem}"), "UNNAMED", {}))
UNNAMED_CASES = [
    pytest.param(test, source, id=f"{nbgrader(solution)['grade_id']}-unnamed-{n}")
    for _, solution, test in (p.values for p in EXERCISES)
    for n, source in enumerate(UNNAMED.get(nbgrader(solution)["grade_id"], []))
]


def test_the_unnamed_wrong_answers_name_real_exercises():
    assert len(UNNAMED_CASES) == sum(map(len, UNNAMED.values())) >= 3


@pytest.mark.parametrize("test,wrong", UNNAMED_CASES)
def test_a_wrong_answer_no_mistake_explains_fails_without_a_guessed_cause(test, wrong):
    """Never a false diagnosis: where no catalogued mistake (or pair of them) fits every config the
    visible test tries, its message says what is wrong in the output and names no cause."""
    with pytest.raises(AssertionError) as caught:
        _run(wrong, _visible_only(test))
    assert "likely" not in str(caught.value), str(caught.value)
    assert mistakes.match(nbgrader(test)["grade_id"], str(caught.value)) is None, str(caught.value)
