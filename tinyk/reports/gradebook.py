"""Reading ``grades.csv`` and counting the class (course section "For instructors").

:func:`read_grades` checks the gradebook the grader writes (``python -m tinyk.grading grade``)
and stops at the first problem, naming the line, the field, the value and the rule;
:func:`summarise` counts what the class report (:mod:`tinyk.reports.class_report`) and the LMS export
(:mod:`tinyk.reports.lms`) show.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tinyk.learner import mistakes
from tinyk.reports.gradebook_schema import FIELDS, STATUSES, Row
from tinyk.reports.inert import csv_value

__all__ = ["ClassReport", "GradesError", "read_grades", "summarise"]

class GradesError(ValueError):
    """``grades.csv`` cannot be read: the message names the line, the field, the value and the rule."""


def _table(path: Path) -> list[list[str]]:
    """The CSV's lines, the header first, checked to have every column of :data:`FIELDS`."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as f:  # a quoted cell's \r kept
            text = f.read()
    except FileNotFoundError:
        raise GradesError(f"{path}: no such file") from None
    except UnicodeDecodeError as err:
        raise GradesError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    # each cell as the grader had it: the quote that kept a formula from running taken off
    table = [[csv_value(cell) for cell in line] for line in csv.reader(io.StringIO(text, newline=""))]
    if not table:
        raise GradesError(
            f"{path} is empty: expected the header {','.join(FIELDS)} and one row per student and exercise"
        )
    missing = [name for name in FIELDS if name not in table[0]]
    if missing:
        raise GradesError(f"{path}: the header lacks the column(s) {missing}; a gradebook has {FIELDS}")
    return table


def _points(where: str, cell: dict[str, str]) -> tuple[float, float]:
    """The row's points and max_points: numbers, at least 0, the points at most the maximum."""
    numbers = {}
    for name in ("points", "max_points"):
        try:
            numbers[name] = float(cell[name])
        except ValueError:
            numbers[name] = math.nan
        if not math.isfinite(numbers[name]) or numbers[name] < 0:
            raise GradesError(f"{where}: {name} {cell[name]!r} must be a number >= 0")
    if numbers["points"] > numbers["max_points"]:
        raise GradesError(f"{where}: points {cell['points']} is more than max_points {cell['max_points']}")
    return numbers["points"], numbers["max_points"]


def _grade(where: str, cell: dict[str, str]) -> Row:
    """One row's grade, checked: its points, a known status, a student, notebook and exercise."""
    points, max_points = _points(where, cell)
    if cell["status"] not in STATUSES:
        raise GradesError(f"{where}: status {cell['status']!r} is not one of {sorted(STATUSES)}")
    for name in ("student", "notebook", "exercise"):
        if not cell[name]:
            raise GradesError(f"{where}: {name} is empty")
    return Row(cell["student"], cell["notebook"], cell["exercise"], points, max_points, cell["status"],
                 cell["detail"])


def read_grades(path: Path) -> list[Row]:
    """The rows of a gradebook CSV (``python -m tinyk.grading grade``), checked; blank lines skipped."""
    table = _table(path)
    column = {name: table[0].index(name) for name in FIELDS}
    grades = []
    for number, line in enumerate(table[1:], 2):
        if not any(cell.strip() for cell in line):
            continue
        if len(line) != len(table[0]):
            raise GradesError(f"{path} line {number}: {len(line)} field(s), the header has {len(table[0])}")
        grades.append(_grade(f"{path} line {number}", {name: line[i] for name, i in column.items()}))
    if not grades:
        raise GradesError(f"{path} has a header but no row")
    return grades


@dataclass
class ClassReport:
    """The class's numbers: ``students`` (sorted), ``exercises`` (notebook -> [(exercise,
    max points)]), ``scores`` ((notebook, exercise) -> {student: points}), ``statuses``
    (notebook -> status -> students with that status in at least one exercise),
    ``full_marks`` (notebook -> students with every point), ``mistakes`` (exercise ->
    Counter of mistake ids, each student counted once)."""

    students: list[str]
    exercises: dict[str, list[tuple[str, float]]]
    scores: dict[tuple[str, str], dict[str, float]]
    statuses: dict[str, dict[str, set[str]]]
    full_marks: dict[str, set[str]]
    mistakes: dict[str, Counter]
    by_student: dict[str, list[Row]]

    def share(self, count: int) -> str:
        """``count`` students as a whole percentage of the class, ``"34%"``."""
        return f"{round(100 * count / len(self.students))}%"

    def ranked(self, exercise: str) -> list[tuple[str, int]]:
        """(mistake id, students) of an exercise, the most common first, then by id."""
        return sorted(self.mistakes.get(exercise, Counter()).items(), key=lambda item: (-item[1], item[0]))


def _full_marks(grades: Sequence[Row]) -> dict[str, set[str]]:
    """Notebook -> the students with every point of it."""
    rows: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for g in grades:
        rows[(g.notebook, g.student)].append(g)
    full: dict[str, set[str]] = {g.notebook: set() for g in grades}
    for (notebook, student), theirs in rows.items():
        if all(r.points >= r.max_points for r in theirs):
            full[notebook].add(student)
    return full


def summarise(grades: Sequence[Row]) -> ClassReport:
    """Count the class: every student of ``grades`` is the class (the share's denominator)."""
    exercises: dict[str, dict[str, float]] = defaultdict(dict)
    scores: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    statuses: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    named: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    by_student: dict[str, list[Row]] = defaultdict(list)
    for g in grades:
        exercises[g.notebook][g.exercise] = max(g.max_points, exercises[g.notebook].get(g.exercise, 0.0))
        scores[(g.notebook, g.exercise)][g.student] = g.points
        statuses[g.notebook][g.status].add(g.student)
        by_student[g.student].append(g)
        for mistake_id in mistakes.mistakes_in(g.detail):
            named[g.exercise][mistake_id].add(g.student)
    return ClassReport(
        sorted(by_student),
        {nb: sorted(ex.items()) for nb, ex in sorted(exercises.items())},
        dict(scores),
        {nb: dict(st) for nb, st in statuses.items()},
        _full_marks(grades),
        {ex: Counter({m: len(s) for m, s in ids.items()}) for ex, ids in named.items()},
        dict(by_student),
    )
