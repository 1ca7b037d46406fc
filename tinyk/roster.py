"""Who is who in a folder of submissions, and what a gradebook status means (course: the
instructors' page): shared by the grader (:mod:`tinyk.grading`), the class report, the LMS
export and the similarity check."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

__all__ = ["STATUSES", "entries", "student_id", "student_name"]

STATUSES = {
    "ok": "graded normally (the points say whether the answer passed)",
    "missing": "no submission for this notebook",
    "unreadable": "the file is not a notebook (empty, not JSON, or not nbformat 4)",
    "tests-modified": "an exercise cell was edited, deleted, duplicated, moved or retyped, or its nbgrader "
                      "metadata changed; restored from the release and graded with the original tests",
    "tampering": "the submission rebinds names the tests rely on (e.g. math.isclose); scored 0",
    "timeout": "a cell ran past the per-cell timeout, or the submission past the total time limit",
    "memory-limit": "the submission ran out of its memory limit",
    "kernel-died": "the kernel exited (e.g. os._exit or a crash); nbgrader could not finish",
    "error": "grading failed for a reason shown in the detail column",
}


def entries(submissions: Path) -> list[Path]:
    """One folder or file per student, hidden files left out; stops, naming both, at two
    entries that would be one student (the same id, :func:`student_id`)."""
    entries = sorted(p for p in submissions.iterdir() if not p.name.startswith("."))
    owners: dict[str, Path] = {}
    for entry in entries:
        other = owners.setdefault(student_id(student_name(entry)), entry)
        if other != entry:
            raise SystemExit(f"{other.name!r} ({other.name!a}) and {entry.name!r} ({entry.name!a}) "
                             f"in {submissions} are one student to the grader: their names are the same "
                             f"text once Unicode-normalised (NFC), or a folder and a file of one name; "
                             f"rename or merge one of them")
    return entries


def student_name(entry: Path) -> str:
    """A folder's name, or a single file's name without ``.ipynb``."""
    return entry.stem if entry.is_file() else entry.name


def student_id(name: str) -> str:
    """The id a student is graded under (nbgrader's student, the file in ``<out>.parts/``,
    the feedback folder): the name itself when it is plain ASCII (letters, digits, ``_``,
    ``-``); otherwise an ASCII form of it (accents dropped, other characters replaced by
    ``_``) and the first 8 hex digits of the SHA-256 of its NFC form, so that ``josé`` and
    ``josè`` stay two students, each with the same id on every run and machine."""
    exact = unicodedata.normalize("NFC", name)
    if re.fullmatch(r"[A-Za-z0-9_-]+", exact):
        return exact
    plain = unicodedata.normalize("NFKD", exact).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", plain).strip("_") or "student"
    return f"{slug}-{hashlib.sha256(exact.encode()).hexdigest()[:8]}"
