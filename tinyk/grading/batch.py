"""Grading a class (course section "For instructors"): every student by the verdict
(:mod:`tinyk.grading.answers_only`: their notebook run once, in the sandbox), several at once,
into one CSV.

The CSV has one row per student and exercise, with a status; it is written atomically, and each
finished student is kept in ``<out>.parts/`` with a fingerprint of everything their grade
depends on, so that an interrupted run resumes where it stopped and a rerun reproduces the same
file. After an edit to test cells only, a student is regraded in those exercises only
(:mod:`tinyk.grading.regrade`), and the run says so. ``--shard K/N`` grades a share of the
students; :func:`merge` joins the shards' CSVs.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tinyk.grading.answers_only import grade_answers
from tinyk.grading.assignment import prepare_course, released_notebooks
from tinyk.grading.ast_guard import one_parse_at_a_time
from tinyk.grading.chapter import Notebook, chapter_notebooks
from tinyk.grading.regrade import base_digest, changed_tests, course_base, regrade_student, test_digests
from tinyk.grading.runner import Limits, preflight
from tinyk.reports.gradebook_schema import FIELDS, Row, Status
from tinyk.reports.inert import csv_value, write_csv
from tinyk.reports.submitted_files import Refused, read_submitted
from tinyk.reports.submitters import collisions, student_id, student_name
from tinyk.reports.submitters import entries as submission_entries

__all__ = ["Batch", "grade", "merge", "parse_shard", "shard_of", "start"]



@dataclass
class Batch:
    """What a grading or feedback run works on: one entry (folder or file) per student, the
    chapter notebooks with exercises, the limits of every submission; and the entries that
    would be one student to the grader, not graded, each with the reason that names them
    (:func:`tinyk.reports.submitters.collisions`)."""

    entries: list[Path]
    notebooks: list[Notebook]
    limits: Limits
    collided: dict[Path, str] = field(default_factory=dict)


def start(submissions: Path, notebooks: Sequence[str | Path] | None, source: Path | None,
          limits: Limits | None, sandbox: bool) -> Batch:
    """The checks before a run (:func:`~tinyk.grading.runner.preflight`), then its students and
    notebooks. Entries that would be one student are set apart, named on stderr, and the
    run goes on with the others."""
    preflight(sandbox)
    found = submission_entries(submissions)
    collided = collisions(found)
    for reason in dict.fromkeys(collided.values()):
        print(reason, file=sys.stderr)
    return Batch([e for e in found if e not in collided], chapter_notebooks(notebooks, source),
                 limits or Limits(), collided)


def _files(entry: Path) -> list[Path]:
    """The entry and everything in it, no symbolic link followed (``os.walk`` lists a link to
    a folder as a name, and goes no further)."""
    if not stat.S_ISDIR(os.lstat(entry).st_mode):
        return [entry]
    found = []
    for folder, dirs, files in os.walk(entry):
        found += [Path(folder, name) for name in dirs + files]
    return found


def _files_digest(entry: Path) -> str:
    """A digest of a student's files (names and contents), read as the grader reads them: a
    regular file by its contents (by its size alone past
    :data:`~tinyk.reports.submitted_files.MAX_NOTEBOOK_BYTES`, which no grade reads past), a
    symbolic link by its target, never followed, and a FIFO, a device or a socket by what it
    is, never opened."""
    digest = hashlib.sha256()
    for path in sorted(_files(entry)):
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(mode):
            continue
        digest.update(path.name.encode())
        if stat.S_ISLNK(mode):
            digest.update(b"\0symbolic link\0" + os.fsencode(os.readlink(path)))
        elif not stat.S_ISREG(mode):
            digest.update(f"\0{stat.S_IFMT(mode):o}\0".encode())
        else:
            try:
                digest.update(read_submitted(path))
            except Refused as refused:  # over the bound: graded by its size
                digest.update(f"\0{refused}\0".encode())
    return digest.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a hidden file beside it: ``path`` is never half written."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_csv(out: Path, lines: list[list[str]]) -> None:
    """The gradebook CSV: the header, then the rows sorted by student, notebook and exercise,
    each cell a spreadsheet shows as text (:func:`tinyk.reports.inert.csv_cell`)."""
    from io import StringIO

    buffer = StringIO()
    write_csv(buffer, [FIELDS, *sorted(lines, key=lambda r: tuple(r[:3]))], lineterminator="\n")
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


@dataclass
class _Job:
    """A student to grade: their entry, their file in ``<out>.parts/``, what it will record
    (fingerprint, base digest, test digests), and, for a regrade, the exercises whose test
    changed and the rows of the earlier run."""

    entry: Path
    part: Path
    record: dict[str, Any]
    changed: set[tuple[str, str]] | None = None
    rows: list[Row] | None = None


def _to_do(batch: Batch, parts: Path, sandbox: bool) -> list[_Job]:
    """The students not graded yet with these files and this course (by their part's
    fingerprint); those whose tests alone changed, to regrade in those exercises only."""
    course = course_base(batch.notebooks, json.dumps([asdict(batch.limits), sandbox]))
    tests = test_digests(batch.notebooks)
    todo = []
    for entry in batch.entries:
        part = parts / f"{student_id(student_name(entry))}.json"
        base = base_digest(_files_digest(entry), course)
        # everything the grade depends on: the base (all but the tests' sources) and those sources
        fingerprint = hashlib.sha256((base + json.dumps(tests, sort_keys=True)).encode()).hexdigest()
        record = {"fingerprint": fingerprint, "base": base, "tests": tests}
        before = json.loads(part.read_text()) if part.exists() else {}
        if before.get("fingerprint") == record["fingerprint"]:
            continue  # graded in an earlier (maybe interrupted) run: keep it
        changed = changed_tests(before, record["base"], tests) if before else None
        rows = [Row(**r) for r in before["rows"]] if changed else None
        todo.append(_Job(entry, part, record, changed, rows))
    return todo


def _run_job(job: _Job, batch: Batch, released: dict[str, dict], sandbox: bool) -> list[Row]:
    if job.changed and job.rows is not None:
        return regrade_student(job.entry, batch.notebooks, released, batch.limits, sandbox, job.changed,
                               job.rows)
    return grade_answers(student_name(job.entry), job.entry, batch.notebooks, released, batch.limits, sandbox)


def _say_regraded(todo: list[_Job]) -> None:
    """What a run regraded instead of grading in full (on stderr, with the progress bar)."""
    import sys

    regraded = [job for job in todo if job.changed]
    if regraded:
        exercises = sorted({f"{g} ({n})" for job in regraded for n, g in job.changed or ()})
        print(f"regraded {len(regraded)} student(s) in the exercise(s) whose test changed, and kept the "
              f"rest of their rows: {', '.join(exercises)}", file=sys.stderr)


def _grade_all(todo: list[_Job], batch: Batch, released: dict[str, dict], sandbox: bool, jobs: int,
               bar: Any) -> None:
    """Grade (or regrade) the students of ``todo``, ``jobs`` at once, each into their part
    file; a student whose grading raised gets an error row per exercise. The threads parse
    Python one tree at a time (:mod:`tinyk.grading.ast_guard`)."""
    with one_parse_at_a_time(), concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_job, job, batch, released, sandbox): job for job in todo}
        for future in concurrent.futures.as_completed(futures):
            job = futures[future]
            name = student_name(job.entry)
            try:
                rows = future.result()
            except Exception as err:  # one broken submission never stops the batch
                reason = f"{type(err).__name__}: {err}"[:200]
                rows = [Row(name, nb.name, grade_id, 0.0, pts, Status.ERROR, reason)
                        for nb in batch.notebooks for grade_id, pts in nb.tests]
            _write_atomically(job.part, json.dumps({**job.record, "rows": [asdict(r) for r in rows]}))
            if bar is not None:
                bar.update(1)


def _collided_rows(batch: Batch) -> list[Row]:
    """An ``error`` row per exercise for each entry that would be one student with another,
    its detail naming them all (a folder and a file of one name give the same rows once)."""
    rows: dict[tuple[str, str, str], Row] = {}
    for entry, reason in batch.collided.items():
        name = student_name(entry)
        for nb in batch.notebooks:
            for grade_id, pts in nb.tests:
                row = Row(name, nb.name, grade_id, 0.0, pts, Status.ERROR, reason)
                rows.setdefault((name, nb.name, grade_id), row)
    return list(rows.values())


def _gather(parts: Path, entries: list[Path], out: Path, collided: Sequence[Row] = ()) -> list[Row]:
    """The rows of ``entries`` from their parts, and those of ``collided``, sorted, written to
    the CSV ``out``."""
    names = {student_id(student_name(e)) for e in entries}
    rows = [Row(**r) for part in sorted(parts.glob("*.json")) if part.stem in names
            for r in json.loads(part.read_text())["rows"]] + list(collided)
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
        batch.collided = {e: why for e, why in batch.collided.items()
                          if shard_of(student_name(e), shard[1]) == shard[0]}
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tinyk-course-") as tmp:
        template = Path(tmp) / "course"  # only for its release, which the checks restore from
        prepare_course(batch.notebooks, template)
        released = released_notebooks(template, batch.notebooks)
        todo = _to_do(batch, parts, sandbox)
        _say_regraded(todo)
        bar = None
        if progress:
            from tqdm import tqdm

            total = len(batch.entries)
            bar = tqdm(total=total, initial=total - len(todo), desc="grading", unit="student")
        _grade_all(todo, batch, released, sandbox, jobs or max(1, (os.cpu_count() or 2)), bar)
        if bar is not None:
            bar.close()
    return _gather(parts, batch.entries, out, _collided_rows(batch))


def merge(out: Path, shards: Sequence[Path]) -> int:
    """Join the CSVs of ``grade --shard K/N`` runs into ``out``, the CSV one run would write.

    Each file must have the gradebook's header; a student found in two files is an error.
    Returns the number of rows written.
    """
    lines: list[list[str]] = []
    owner: dict[str, Path] = {}
    for path in shards:
        with Path(path).open(newline="") as f:
            table = [[csv_value(cell) for cell in line] for line in csv.reader(f)]
        if not table or table[0] != FIELDS:
            raise SystemExit(f"{path}: header {table[0] if table else 'missing'}, expected {FIELDS}")
        for line in table[1:]:
            if owner.setdefault(line[0], Path(path)) != Path(path):
                raise SystemExit(f"student {line[0]!r} is in both {owner[line[0]]} and {path}: "
                                 f"merge the CSVs of different shards of one run")
            lines.append(line)
    _write_csv(out, lines)
    return len(lines)
