"""The catalogue of classic mistakes in the chapter's exercises (course section "For instructors").

Each mistake has a stable id (``05.3.2:half-split-pairing``: the exercise, then a name), a
short label in English (its Chinese is in the package's catalogue, ``tinyk/locale/zh_CN.po``:
:mod:`tinyk.translations.package_catalogue`), and the words its visible test prints when an answer
makes it: a lowercase piece of the failing assert's message. A visible test runs first in
its graded cell, so the same message reaches the grader, which writes the id into the
``detail`` column of ``grades.csv`` (:func:`note`); the class report counts them
(:mod:`tinyk.reports.class_report`). The course's tests hold, for every mistake, at least one wrong
answer that makes it, and check that its message names this mistake and no other.

Several wrong answers may make one mistake, when the visible test cannot tell them apart
(``tile`` and ``repeat`` give the same wrong grouping). Within an exercise the first mistake
whose words are in the message is the one named, so a specific message is listed before a
general one that it also contains.

The mistakes themselves are data, one a line: ``mistakes.tsv`` beside this module, read into
:data:`CATALOGUE` when it is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CATALOGUE", "Mistake", "by_id", "exercise_of", "match", "mistakes_in", "note", "of_exercise"]


@dataclass(frozen=True)
class Mistake:
    """One classic mistake: ``id`` (``05.N.k:name``), ``words`` (a lowercase piece of the
    visible test's message), ``en`` (a short label) and its Chinese, ``zh``."""

    id: str
    words: str
    en: str

    @property
    def zh(self) -> str:
        """The Chinese label, from the package's catalogue (``tinyk/locale/zh_CN.po``, msgid
        the English label); :class:`tinyk.translations.package_catalogue.MissingChinese` when it has none."""
        from tinyk.translations.package_catalogue import chinese

        return chinese(self.en)

    @property
    def exercise(self) -> str:
        """The exercise's number, ``05.3.2``."""
        return self.id.split(":")[0]

    @property
    def grade_id(self) -> str:
        """The grade_id of the exercise's test cell, ``ex_05_3_2_test``."""
        return f"ex_{self.exercise.replace('.', '_')}_test"


# (exercise, name, words, English) a row, each exercise's specific messages first: the data
# file beside this module, which the wheel carries (pyproject's package data).
_DATA = Path(__file__).with_name("mistakes.tsv")
_FIELDS = ("exercise", "name", "words", "en")


def _rows(text: str) -> list[tuple[str, ...]]:
    """The rows of ``mistakes.tsv``: after its opening comment, a header, then a mistake a
    line, four fields between tabs (a line opening with ``#`` is a comment on the row below).
    ``ValueError`` naming the line for a row of another width or a header of other fields."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line and not line.startswith("#")]
    if not lines or tuple(lines[0][1].split("\t")) != _FIELDS:
        raise ValueError(f"{_DATA}: the first line after the comments must be the header {_FIELDS}")
    rows = []
    for number, line in lines[1:]:
        fields = tuple(line.split("\t"))
        if len(fields) != len(_FIELDS):
            raise ValueError(f"{_DATA}:{number}: {len(fields)} fields, not {len(_FIELDS)} {_FIELDS}")
        rows.append(fields)
    return rows


_TABLE = _rows(_DATA.read_text(encoding="utf-8"))

CATALOGUE: tuple[Mistake, ...] = tuple(Mistake(f"{exercise}:{name}", words, en)
                                       for exercise, name, words, en in _TABLE)
_BY_ID = {m.id: m for m in CATALOGUE}
_NOTE = re.compile(r"(?:^|; )mistake (\d+\.\d+\.\d+:[a-z0-9-]+)(?=;|$)")


def exercise_of(grade_id: str) -> str:
    """``ex_05_3_2_test`` or ``ex_05_3_2_solution`` -> ``05.3.2`` ('' for another name)."""
    found = re.fullmatch(r"ex_(\d+)_(\d+)_(\d+)(?:_test|_solution)?", grade_id)
    return ".".join(found.groups()) if found else ""


def of_exercise(grade_id: str) -> list[Mistake]:
    """The catalogued mistakes of an exercise (by its test's or its answer's grade_id)."""
    exercise = exercise_of(grade_id)
    return [m for m in CATALOGUE if m.exercise == exercise]


def by_id(mistake_id: str) -> Mistake:
    """The mistake of that id; ``KeyError`` naming the id when the catalogue has none."""
    try:
        return _BY_ID[mistake_id]
    except KeyError:
        raise KeyError(f"no catalogued mistake {mistake_id!r} (tinyk.learner.mistakes.CATALOGUE)") from None


def match(grade_id: str, message: str) -> Mistake | None:
    """The mistake a failing test's ``message`` names: the first of the exercise's mistakes
    whose words it contains (case ignored), or None."""
    text = message.lower()
    return next((m for m in of_exercise(grade_id) if m.words in text), None)


def note(grade_id: str, message: str) -> str:
    """What the grader appends to a row's detail: ``"; mistake <id>"``, or '' when the
    message names no catalogued mistake."""
    found = match(grade_id, message)
    return f"; mistake {found.id}" if found else ""


def mistakes_in(detail: str) -> list[str]:
    """The mistake ids a row's ``detail`` carries (:func:`note`), in order."""
    return _NOTE.findall(detail)
