"""Grading a class (course section "For instructors"): every student in a throwaway copy of one
prepared course, several at once, into one CSV.

The CSV has one row per student and exercise, with a status; it is written atomically, and each
finished student is kept in ``<out>.parts/`` with a fingerprint of everything their grade
depends on, so that an interrupted run resumes where it stopped and a rerun reproduces the same
file. ``--shard K/N`` grades a share of the students; :func:`merge` joins the shards' CSVs.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tinyk.grading.assignment import prepare_course, released_notebooks
from tinyk.grading.chapter import Notebook, chapter_notebooks
from tinyk.grading.rules import Row, Status
from tinyk.grading.runner import Limits, preflight
from tinyk.grading.student import grade_student
from tinyk.roster import entries as submission_entries
from tinyk.roster import student_id, student_name

__all__ = ["FIELDS", "Batch", "grade", "merge", "parse_shard", "shard_of", "start"]

FIELDS = ["student", "notebook", "exercise", "points", "max_points", "status", "detail"]


@dataclass
class Batch:
    """What a grading or feedback run works on: one entry (folder or file) per student, the
    chapter notebooks with exercises, the limits of every submission."""

    entries: list[Path]
    notebooks: list[Notebook]
    limits: Limits


def start(submissions: Path, notebooks: Sequence[str | Path] | None, source: Path | None,
          limits: Limits | None, sandbox: bool) -> Batch:
    """The checks before a run (:func:`~tinyk.grading.runner.preflight`), then its students and
    notebooks (stops at two entries that would be one student)."""
    preflight(sandbox)
    return Batch(submission_entries(submissions), chapter_notebooks(notebooks, source), limits or Limits())


def _course_digest(notebooks: list[Notebook], limits: Limits, sandboxed: bool) -> bytes:
    """What every student's grade depends on besides their files: the notebooks, the limits,
    the sandbox."""
    digest = hashlib.sha256(json.dumps([asdict(limits), sandboxed]).encode())
    for nb in notebooks:
        digest.update(nb.path.read_bytes())
        digest.update(json.dumps(nb.translated, sort_keys=True).encode())
    return digest.digest()


def _fingerprint(entry: Path, course_digest: bytes) -> str:
    """The course digest extended with the student's files: unchanged means already graded."""
    digest = hashlib.sha256(course_digest)
    for path in sorted([entry] if entry.is_file() else entry.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a hidden file beside it: ``path`` is never half written."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_csv(out: Path, lines: list[list[str]]) -> None:
    """The gradebook CSV: the header, then the rows sorted by student, notebook and exercise."""
    from io import StringIO

    buffer = StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([FIELDS, *sorted(lines, key=lambda r: tuple(r[:3]))])
    _write_atomically(out, buffer.getvalue())


def shard_of(student: str, shards: int) -> int:
    """The shard (0 to ``shards - 1``) that grades ``student``: a hash of the student's id,
    the same on every machine and whatever the other students are."""
    return int(hashlib.sha256(student_id(student).encode()).hexdigest(), 16) % shards


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)``, with ``0 <= K < N``."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise SystemExit(f"--shard {text!r}: must be K/N with N >= 1 and K from 0 to N-1 (e.g. 0/4)")
    return int(match[1]), int(match[2])


# (entry, its file in <out>.parts/, its fingerprint)
_Job = tuple[Path, Path, str]


def _to_do(entries: list[Path], parts: Path, course_digest: bytes) -> list[_Job]:
    """The students not graded yet with these files and this course (by their part's fingerprint)."""
    todo = []
    for entry in entries:
        part = parts / f"{student_id(student_name(entry))}.json"
        fingerprint = _fingerprint(entry, course_digest)
        if part.exists() and json.loads(part.read_text()).get("fingerprint") == fingerprint:
            continue  # graded in an earlier (maybe interrupted) run: keep it
        todo.append((entry, part, fingerprint))
    return todo


def _grade_all(todo: list[_Job], batch: Batch, template: Path, released: dict[str, dict], sandbox: bool,
               jobs: int, bar: Any) -> None:
    """Grade the students of ``todo``, ``jobs`` at once, each into their part file; a student
    whose grading raised gets an error row per exercise."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grade_student, student_name(entry), entry, batch.notebooks, template, released,
                               batch.limits, sandbox): (entry, part, fp)
                   for entry, part, fp in todo}
        for future in concurrent.futures.as_completed(futures):
            entry, part, fingerprint = futures[future]
            name = student_name(entry)
            try:
                rows = future.result()
            except Exception as err:  # one broken submission never stops the batch
                reason = f"{type(err).__name__}: {err}"[:200]
                rows = [Row(name, nb.name, grade_id, 0.0, pts, Status.ERROR, reason)
                        for nb in batch.notebooks for grade_id, pts in nb.tests]
            record = {"fingerprint": fingerprint, "rows": [asdict(r) for r in rows]}
            _write_atomically(part, json.dumps(record))
            if bar is not None:
                bar.update(1)


def _gather(parts: Path, entries: list[Path], out: Path) -> list[Row]:
    """The rows of ``entries`` from their parts, sorted, written to the CSV ``out``."""
    names = {student_id(student_name(e)) for e in entries}
    rows = [Row(**r) for part in sorted(parts.glob("*.json")) if part.stem in names
            for r in json.loads(part.read_text())["rows"]]
    rows.sort(key=lambda r: (r.student, r.notebook, r.exercise))
    _write_csv(out, [[r.student, r.notebook, r.exercise, f"{r.points:g}", f"{r.max_points:g}", r.status,
                      r.detail] for r in rows])
    return rows


def grade(submissions: Path, out: Path, notebooks: Sequence[str | Path] | None = None, *,
          source: Path | None = None, limits: Limits | None = None, jobs: int | None = None,
          progress: bool = True, sandbox: bool = True, shard: tuple[int, int] | None = None) -> list[Row]:
    """Grade every entry of ``submissions`` (a folder or a file per student) into ``out``.

    ``notebooks``: names of notebooks in ``source``, or paths (all of ``source`` when None).
    ``shard=(K, N)`` grades only the students of shard K (:func:`shard_of`); :func:`merge`
    joins the shards' CSVs into the CSV of one run.
    """
    batch = start(submissions, notebooks, source, limits, sandbox)
    if not batch.notebooks:
        raise SystemExit("no notebook with exercises to grade")
    if shard is not None:
        batch.entries = [e for e in batch.entries if shard_of(student_name(e), shard[1]) == shard[0]]
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tinyk-course-") as tmp:
        template = Path(tmp) / "course"
        prepare_course(batch.notebooks, template)
        released = released_notebooks(template, batch.notebooks)
        todo = _to_do(batch.entries, parts, _course_digest(batch.notebooks, batch.limits, sandbox))
        bar = None
        if progress:
            from tqdm import tqdm

            total = len(batch.entries)
            bar = tqdm(total=total, initial=total - len(todo), desc="grading", unit="student")
        _grade_all(todo, batch, template, released, sandbox, jobs or max(1, (os.cpu_count() or 2)), bar)
        if bar is not None:
            bar.close()
    return _gather(parts, batch.entries, out)


def merge(out: Path, shards: Sequence[Path]) -> int:
    """Join the CSVs of ``grade --shard K/N`` runs into ``out``, the CSV one run would write.

    Each file must have the gradebook's header; a student found in two files is an error.
    Returns the number of rows written.
    """
    lines: list[list[str]] = []
    owner: dict[str, Path] = {}
    for path in shards:
        with Path(path).open(newline="") as f:
            table = list(csv.reader(f))
        if not table or table[0] != FIELDS:
            raise SystemExit(f"{path}: header {table[0] if table else 'missing'}, expected {FIELDS}")
        for line in table[1:]:
            if owner.setdefault(line[0], Path(path)) != Path(path):
                raise SystemExit(f"student {line[0]!r} is in both {owner[line[0]]} and {path}: "
                                 f"merge the CSVs of different shards of one run")
            lines.append(line)
    _write_csv(out, lines)
    return len(lines)
