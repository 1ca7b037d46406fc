"""Who is who in a folder of submissions (course: the instructors' page): one entry per
student (:func:`entries`), their name (:func:`student_name`) and the id they are graded under
(:func:`student_id`), and the entries that would be one student (:func:`collisions`). Shared
by the grader (:mod:`tinyk.grading`), the class report, the feedback and the similarity check;
how a submitted file is read: :mod:`tinyk.reports.submitted_files`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from pathlib import Path

__all__ = ["collisions", "entries", "student_id", "student_name"]


def entries(submissions: Path) -> list[Path]:
    """One folder or file per student, hidden files left out, sorted (two entries that would be
    one student are both listed: :func:`collisions`)."""
    return sorted(p for p in submissions.iterdir() if not p.name.startswith("."))


def collisions(found: list[Path]) -> dict[Path, str]:
    """The entries that would be one student to the grader (the same id, :func:`student_id`),
    each with a sentence naming them all and why: neither is graded, and no other student is
    held up."""
    groups: dict[str, list[Path]] = {}
    for entry in found:
        groups.setdefault(student_id(student_name(entry)), []).append(entry)
    said = {}
    for sid, group in groups.items():
        if len(group) < 2:
            continue
        names = [student_name(e) for e in group]
        if len(set(names)) < len(names):
            why = "a folder and a file of one name"
        elif len({unicodedata.normalize("NFC", n) for n in names}) < len(names):
            why = "their names are the same text once Unicode-normalised (NFC)"
        else:
            why = f"{sid!r} is the grader id of another of them"
        both = " and ".join(f"{e.name!r} ({e.name!a})" for e in group)
        for entry in group:
            said[entry] = (f"not graded: {both} in {entry.parent} are one student to the grader "
                           f"(id {sid!r}): {why}; rename or merge one of them")
    return said


def student_name(entry: Path) -> str:
    """A folder's name, or a single file's name without ``.ipynb`` (a symbolic link, which is
    never followed, counts as a file)."""
    try:
        folder = stat.S_ISDIR(os.lstat(entry).st_mode)
    except OSError:
        folder = False
    return entry.name if folder else entry.stem


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
