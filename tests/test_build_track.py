"""The build track's shape: each exercise says its points, difficulty and time and offers
hints in steps; a student notebook never shows a part's code before its exercise.

The exercise anatomy lives in ``shared/COURSE_FORMAT.md``: the idea, then the exercise (a
label line ``*3 points · medium · about 15 minutes*`` under its heading, then two or three
hints ``:::{dropdown} Hint k of n: ...``, each collapsed, before the answer cell), then the
reveal (the package's own code of the part, walked through), then a checkpoint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tinyk.courseware.checkout import notebook_paths, student_path
from tinyk.courseware.exercises import is_solution, is_test, nbgrader, source_text
from tinyk.learner.part_compare import PART_NAMES

HEADING = re.compile(r"^#{1,6}\s+Exercise\s+(\d+\.\d+\.\d+)\b.*$", re.M)
LABEL = re.compile(r"^\*(\d+) points? · (easy|medium|hard) · about (\d+) minutes\*$", re.M)
HINT = re.compile(r"^:::\{dropdown\}\s+Hint (\d) of (\d): \S.*$", re.M)
STUDENT_HINT = re.compile(r"^<summary>Hint (\d) of (\d): \S.*</summary>$", re.M)

#: The package's code that shows how a part is written, by the part it reveals.
REVEALS: dict[str, tuple[str, ...]] = {
    "RMSNorm": ("show_source(RMSNorm", "show_source(tinyk.RMSNorm"),
    "rope_tables": ("show_source(precompute_freqs_cis",),
    "apply_rope": ("show_source(apply_rotary_emb", "_rotate_adjacent)", "show_source(reshape_for_broadcast"),
    "repeat_kv": ("show_source(tinyk.repeat_kv", "show_source(repeat_kv"),
    "gqa_attention": ("Attention.forward", "Attention.attend", "Attention.attention_by_hand"),
    "SwiGLU": ("show_source(MLP",),
    "decoder_block": ("show_source(DecoderLayer",),
    "token_positions": ("rope_and_mask", "show_source(token_positions"),
    "causal_padding_mask": ("show_source(padding_to_attention",),
    "shifted_loss": ("show_source(causal_lm_loss",),
}


def _exercises(cells: list[dict]) -> list[dict]:
    """Each exercise: its number, prompt text (Markdown from its heading to its answer cell),
    the points of its graded cells, and the index of its first answer cell."""
    found: list[dict] = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and HEADING.search(source_text(cell)):
            text = source_text(cell)
            start = list(HEADING.finditer(text))[-1].start()
            found.append({"number": HEADING.findall(text)[-1], "prompt": text[start:], "points": 0,
                          "answer": None})
        elif found and cell["cell_type"] == "markdown" and found[-1]["answer"] is None:
            found[-1]["prompt"] += "\n" + source_text(cell)
        elif found and is_solution(cell) and found[-1]["answer"] is None:
            found[-1]["answer"] = i
        elif found and is_test(cell):
            found[-1]["points"] += int(nbgrader(cell).get("points", 0))
    return found


EXERCISES = [pytest.param(ex, id=f"{path.stem}:{ex['number']}")
             for path in notebook_paths() for ex in _exercises(json.loads(path.read_text())["cells"])]


def test_the_chapter_has_its_exercises():
    assert len(EXERCISES) >= 31


@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_exercise_states_points_difficulty_and_time(exercise):
    labels = LABEL.findall(exercise["prompt"])
    assert len(labels) == 1, f"{exercise['number']}: no label line '*3 points · medium · about 15 minutes*'"
    points, _, minutes = labels[0]
    assert int(points) == exercise["points"], (
        f"{exercise['number']}: the label says {points} points, the tests give {exercise['points']}")
    assert 1 <= int(minutes) <= 60


@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_exercise_offers_two_or_three_hints_in_order(exercise):
    hints = [(int(k), int(n)) for k, n in HINT.findall(exercise["prompt"])]
    assert len(hints) in (2, 3), f"{exercise['number']}: {len(hints)} hints"
    assert hints == [(k, len(hints)) for k in range(1, len(hints) + 1)], exercise["number"]


@pytest.mark.parametrize("source", notebook_paths(), ids=lambda p: p.stem)
def test_student_notebooks_collapse_each_hint(source):
    """Jupyter and Colab show each hint, and each concept check's answers, as a collapsed
    <details> block, no MyST left."""
    from tinyk.courseware.quiz import QUIZ_DIRECTIVE

    cells = json.loads(source.read_text())["cells"]
    markdown = [source_text(c) for c in cells if c["cell_type"] == "markdown"]
    expected = sum(len(HINT.findall(m)) for m in markdown)
    quizzes = sum(len(QUIZ_DIRECTIVE.findall(m)) for m in markdown)
    student = json.loads(student_path(source).read_text())["cells"]
    text = "\n".join(source_text(c) for c in student if c["cell_type"] == "markdown")
    assert len(STUDENT_HINT.findall(text)) == expected and text.count("<details>") == expected + quizzes
    assert ":::" not in text and "{quiz}" not in text
    assert expected > 0 or not _exercises(cells)


def _revealed_before_its_exercise(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    written_at: dict[str, int] = {}  # part -> index of the last graded cell of its exercise
    current: list[str] = []
    for i, cell in enumerate(cells):
        if is_solution(cell):
            current = [n for n in re.findall(r"^(?:def|class)\s+(\w+)", source_text(cell), re.M)
                       if n in PART_NAMES]
        elif is_test(cell):
            for name in current:
                written_at[name] = i
    problems = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code" or "show_source(" not in source_text(cell):
            continue
        for part, calls in REVEALS.items():
            if any(call in source_text(cell) for call in calls) and not i > written_at.get(part, len(cells)):
                problems.append(f"{path.name} cell {i}: shows the code of {part} before its exercise")
    return problems


def test_no_student_notebook_shows_a_part_before_its_exercise():
    paths = [student_path(p) for p in notebook_paths()]
    shown = [p for p in paths if "show_source(" in p.read_text()]
    assert len(shown) >= 5, "the walk-throughs of 05.2 to 05.6 show the package's code"
    problems = [problem for path in paths for problem in _revealed_before_its_exercise(path)]
    assert problems == []


def test_the_reveal_check_catches_a_walk_through_placed_first(tmp_path):
    def cell(kind, text, **meta):
        return {"cell_type": kind, "metadata": {"nbgrader": meta} if meta else {}, "source": text,
                **({"outputs": [], "execution_count": None} if kind == "code" else {})}

    solution = cell("code", "def repeat_kv(x, n_rep):\n    raise NotImplementedError()", solution=True,
                    grade=False, locked=False, grade_id="a", schema_version=3)
    test = cell("code", "assert True", grade=True, solution=False, locked=True, points=1, grade_id="b",
                schema_version=3)
    reveal = cell("code", "show_source(tinyk.repeat_kv)")
    for order, expected in (([reveal, solution, test], 1), ([solution, test, reveal], 0)):
        path = tmp_path / "nb.ipynb"
        path.write_text(json.dumps({"cells": order}))
        assert len(_revealed_before_its_exercise(path)) == expected
