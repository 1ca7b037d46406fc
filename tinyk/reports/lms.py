"""Grades out to a learning management system (course section "For instructors").

    python -m tinyk.grading export grades.csv --format canvas|moodle|gradescope --roster roster.csv --out F

One row per student of the roster, one column per notebook: the student's points in that
notebook (the sum over its exercises), out of the notebook's maximum (the sum of their
``max_points``). The roster is a CSV with the columns ``folder`` (the student's folder or
file name in the submissions, as in ``grades.csv``) and ``lms_id`` (the student's identifier
in the LMS), and optionally ``name``, ``first_name``, ``last_name``, ``email`` and
``section``. A student graded but not on the roster, or on the roster but not graded, is
listed on stderr and makes the exit status 1; the roster's ungraded students are written
with empty cells, never left out.

The formats, as their documentation describes the import (UTF-8 CSV, a header row, fields
with commas or quotes in double quotes, lines ending in CRLF, RFC 4180); the sources and a
small example file of each are in ``tests/fixtures/lms/``, which the tests compare with:

- ``canvas``: the Gradebook's CSV, as Canvas exports it for editing and importing again:
  the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one
  column per assignment, a new column creating a new assignment, and a ``Points Possible``
  row under the header, written as Canvas's export writes it (``    Points Possible``, four
  spaces first). ``ID`` is Canvas's user id (the roster's ``lms_id``); ``Student`` is
  ``last_name, first_name`` when the roster has both (Canvas's sortable name), else
  ``name``. Sources: Ohio State's guide "Import a CSV file to Carmen Grades"
  (teaching.resources.osu.edu), which lists the columns Student Name or Student ID or SIS
  User ID, SIS Login ID, Section, and the assignment columns; Canvas's gradebook exporter.
- ``moodle``: Moodle's CSV grade import (Grades > Import > CSV file) reads the layout of
  Moodle's own grade export and maps columns by hand in its preview; its documentation's
  tip is to map the ``ID number`` column to ``useridnumber`` (or ``Email address`` to
  ``useremail``). Columns, as the export's: ``First name``, ``Last name``, ``ID number``
  (the roster's ``lms_id``), ``Institution``, ``Department`` (both empty), ``Email
  address``, then one column per notebook, each mapped to a grade item whose maximum is the
  notebook's. Without ``first_name`` in the roster, ``First name`` holds ``name``. Source:
  MoodleDocs, "Grade import".
- ``gradescope``: Gradescope identifies a student by the email address of its roster
  (whose columns are a name and ``Email``, unique per student, and optionally ``SID``); the
  file has ``Name``, ``Email`` (the roster's ``lms_id``), ``SID``, then one score column per
  notebook. Gradescope documents no CSV import of scores: the identifying columns are its
  roster's, the score columns are for a script or for reading. Source: Gradescope Help,
  "Adding Students and Staff".

No cell runs as a formula in a spreadsheet: a cell that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return, and is not a number, is written with a single quote first
(:func:`tinyk.reports.inert.csv_cell`, as OWASP's "CSV Injection" guidance recommends). The scores
and ``-1.5`` stay numbers; a student named ``=HYPERLINK(...)`` reaches the spreadsheet and the
LMS as ``'=HYPERLINK(...)``, shown as typed, quote included. The LMS matches students by the
identifier column, never by name; an ``lms_id`` that would get the quote would not match, so
the export names it on stderr (exit status 1).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import sys
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tinyk.reports.gradebook import GradesError, read_grades
from tinyk.reports.inert import csv_cell, write_csv

__all__ = ["FORMATS", "Export", "Student", "export", "export_main", "read_roster"]

FORMATS = ("canvas", "moodle", "gradescope")
NAME_PARTS = ("first_name", "last_name")
CANVAS_POINTS_POSSIBLE = "    Points Possible"  # the second row's first field, as Canvas exports it


@dataclass(frozen=True)
class Student:
    """One roster row."""

    folder: str
    lms_id: str
    name: str = ""
    email: str = ""
    section: str = ""
    first_name: str = ""
    last_name: str = ""

    def full_name(self) -> str:
        """``name``, else ``first_name last_name``, else the folder's name."""
        return self.name or " ".join(n for n in (self.first_name, self.last_name) if n) or self.folder

    def sortable_name(self) -> str:
        """Canvas's ``Student``: ``last_name, first_name`` when both are known."""
        both = self.first_name and self.last_name
        return f"{self.last_name}, {self.first_name}" if both else self.full_name()


@dataclass
class Export:
    """What :func:`export` wrote: the rows, the students graded but not on the roster
    (``unknown``), those on the roster with no grade (``missing``), and the identifiers
    (``lms_id``) written with a quote first (``quoted``, :func:`tinyk.reports.inert.csv_cell`)."""

    rows: list[list[str]]
    unknown: list[str]
    missing: list[str]
    students: int
    notebooks: list[str]
    quoted: list[str] = dataclasses.field(default_factory=list)


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def read_roster(path: Path) -> list[Student]:
    """The roster CSV: ``folder`` and ``lms_id`` required in every row, ``name``,
    ``first_name``, ``last_name``, ``email``, ``section`` optional; a folder or an lms_id
    listed twice is an error."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (FileNotFoundError, UnicodeDecodeError) as err:
        raise GradesError(f"roster {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("folder", "lms_id") if c not in (reader.fieldnames or [])]
    if missing:
        raise GradesError(f"roster {path}: the header lacks {missing}; a roster has folder, lms_id and "
                          f"optionally name, first_name, last_name, email, section")
    students, folders, ids = [], set(), set()
    for number, row in enumerate(reader, 2):
        if None in row or any(v is None for v in row.values()):
            raise GradesError(f"roster {path} line {number}: not as many fields as the header")
        folder, lms_id = _key(row["folder"].strip()), row["lms_id"].strip()
        for field, value in (("folder", folder), ("lms_id", lms_id)):
            if not value:
                raise GradesError(f"roster {path} line {number}: {field} is empty")
        if folder in folders:
            raise GradesError(f"roster {path} line {number}: folder {folder!r} is listed twice")
        if lms_id in ids:
            raise GradesError(f"roster {path} line {number}: lms_id {lms_id!r} is listed twice")
        folders.add(folder)
        ids.add(lms_id)
        optional = {k: (row.get(k) or "").strip() for k in ("name", "email", "section", *NAME_PARTS)}
        students.append(Student(folder, lms_id, **optional))
    return students


def export(grades_csv: Path, roster_csv: Path, fmt: str) -> Export:
    """The rows of the LMS file in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise GradesError(f"--format {fmt!r}: choose one of {list(FORMATS)}")
    grades, roster = read_grades(grades_csv), read_roster(roster_csv)
    points: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    maximum: dict[str, dict[str, float]] = defaultdict(dict)  # notebook -> exercise -> max points
    for g in grades:
        points[_key(g.student)][g.notebook] += g.points
        maximum[g.notebook][g.exercise] = g.max_points
    notebooks = sorted(maximum)
    totals = [f"{sum(maximum[nb].values()):g}" for nb in notebooks]
    known = {s.folder for s in roster}
    unknown = sorted({_key(g.student) for g in grades} - known)
    missing = sorted(s.folder for s in roster if s.folder not in points)

    def scores(s: Student) -> list[str]:
        mine = points.get(s.folder)
        return [f"{mine[nb]:g}" if mine is not None else "" for nb in notebooks]

    if fmt == "canvas":
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *notebooks],
                [CANVAS_POINTS_POSSIBLE, "", "", "", "", *totals]]
        rows += [[s.sortable_name(), s.lms_id, "", "", s.section, *scores(s)] for s in roster]
    elif fmt == "moodle":
        rows = [["First name", "Last name", "ID number", "Institution", "Department", "Email address",
                 *notebooks]]
        rows += [[s.first_name or s.full_name(), s.last_name if s.first_name else "", s.lms_id, "", "",
                  s.email, *scores(s)] for s in roster]
    else:
        rows = [["Name", "Email", "SID", *notebooks]]
        rows += [[s.full_name(), s.lms_id, "", *scores(s)] for s in roster]
    quoted = [s.lms_id for s in roster if csv_cell(s.lms_id) != s.lms_id]
    return Export(rows, unknown, missing, len(roster), notebooks, quoted)


def export_main(grades_csv: Path, fmt: str, roster_csv: Path, out: Path) -> int:
    """``python -m tinyk.grading export``: 0 when every student matched, 1 when some were
    unknown or missing (listed on stderr, the file written all the same), 2 on bad input."""
    try:
        result = export(grades_csv, roster_csv, fmt)
    except GradesError as err:
        print(f"export: {err}", file=sys.stderr)
        return 2
    with Path(out).open("w", newline="", encoding="utf-8") as f:
        write_csv(f, result.rows)
    print(f"{result.students} student(s), {len(result.notebooks)} notebook(s) written to {out} ({fmt})")
    for name in result.unknown:
        print(f"export: {name!r} is graded in {grades_csv} but not on the roster {roster_csv}: "
              f"not exported; add them to the roster", file=sys.stderr)
    for name in result.missing:
        print(f"export: {name!r} is on the roster but has no grade in {grades_csv}: exported with "
              f"empty cells", file=sys.stderr)
    for lms_id in result.quoted:
        print(f"export: lms_id {lms_id!r} starts like a spreadsheet formula: written as "
              f"{csv_cell(lms_id)!r}, which the LMS will not match to its student", file=sys.stderr)
    return 1 if result.unknown or result.missing or result.quoted else 0
