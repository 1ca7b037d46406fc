"""Regrading what changed (course section "For instructors"): after an edit to test cells, a
student whose files and whose notebooks are otherwise the same is not graded again in full.
Each edited exercise is judged again outside the kernel (:mod:`tinyk.grading.verdict`: the student's
answer cells in the sandbox, the new test cell in the grader's process), its row updated, and
every other row kept from the earlier run. A test added or removed, a change to anything
but a test cell's source (a point value, prose, code), the limits or the student's files: a
full grading, as before.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tinyk.courseware.exercises import is_test, nbgrader, source_text
from tinyk.grading.answers_only import judge_submission, verdict_reason
from tinyk.grading.chapter import Notebook
from tinyk.grading.runner import Limits
from tinyk.reports.gradebook_schema import Row, Status

__all__ = ["REGRADED", "base_digest", "changed_tests", "course_base", "regrade_student", "test_digests"]

REGRADED = "regraded: its test changed"  # the end of an updated row's detail


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_digests(notebooks: list[Notebook]) -> dict[str, dict[str, str]]:
    """Each notebook's test cells, by grade_id: a digest of the source (hidden tests included)."""
    found = {}
    for nb in notebooks:
        cells = json.loads(nb.path.read_text(encoding="utf-8"))["cells"]
        found[nb.name] = {nbgrader(c)["grade_id"]: _sha(source_text(c)) for c in cells if is_test(c)}
    return found


def course_base(notebooks: list[Notebook], setting: str) -> bytes:
    """What every student's grade depends on but the test cells' sources: the notebooks with
    those sources left out, and the run's ``setting`` (limits, sandbox). Read once a run."""
    digest = hashlib.sha256(setting.encode())
    for nb in notebooks:
        source = json.loads(nb.path.read_text(encoding="utf-8"))
        for cell in source["cells"]:
            if is_test(cell):
                cell["source"] = ""
        digest.update(json.dumps([nb.name, source, nb.translated], sort_keys=True).encode())
    return digest.digest()


def base_digest(student_files: str, course: bytes) -> str:
    """Everything a student's grade depends on but the test cells' sources: the
    :func:`course_base` and a digest of their files."""
    return hashlib.sha256(course + student_files.encode()).hexdigest()


def changed_tests(record: dict, base: str, tests: dict[str, dict[str, str]]) -> set[tuple[str, str]] | None:
    """The (notebook, grade_id) whose test source changed since ``record`` (a student's part
    of an earlier run) was graded, when nothing else changed; None when the student must be
    graded in full."""
    before = record.get("tests")
    if record.get("base") != base or not isinstance(before, dict):
        return None
    if {n: sorted(t) for n, t in before.items()} != {n: sorted(t) for n, t in tests.items()}:
        return None  # a test added or removed
    changed = {(n, g) for n, ids in tests.items() for g, digest in ids.items() if before[n][g] != digest}
    return changed or None


def regrade_student(entry: Path, notebooks: list[Notebook], released: dict[str, dict], limits: Limits,
                    sandboxed: bool, changed: set[tuple[str, str]], rows: list[Row]) -> list[Row]:
    """``rows`` (a student's rows of the earlier run) with each ``changed`` exercise judged
    again (:func:`~tinyk.grading.answers_only.judge_submission`: within the student's total
    time limit, as in a full grading); a row that was not graded normally then (a timeout, a
    dead kernel, a missing notebook) stays as it was."""
    verdicts = judge_submission(entry, notebooks, released, limits, sandboxed, only=changed)[1]
    for row in rows:
        found = verdicts.get((row.notebook, row.exercise))
        if found is None or row.status not in (Status.OK, Status.TESTS_MODIFIED):
            continue
        row.points = row.max_points if found.passed else 0.0
        reason = "" if found.passed else verdict_reason(row.exercise, found.detail)
        kept = [part for part in row.detail.split("; ") if part.startswith("restored from the release")]
        row.detail = "; ".join(filter(None, [reason, *kept, REGRADED]))
    return rows
