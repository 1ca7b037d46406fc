"""Grading a student (course section "For instructors"): the verdict, which gives every
exercise its points, status and named mistake (:mod:`tinyk.grading.verdict`).

The student's notebook runs once, in the sandbox: every cell but the test cells, in order,
through IPython, each notebook's in namespaces of its own; the test cells, hidden tests
included, run in the grader's process. No notebook runs in nbgrader's kernels (``grade
--answers-only`` is the same grading, kept as a name for it):

- the checks before grading: a notebook missing, unreadable or tampering scores 0 with that
  status; one whose exercise cells were changed is restored from the release and graded as
  ``tests-modified``;
- an answer, or a test's call into it, past the per-cell timeout, and everything past the
  student's total time limit (``total_timeout`` per notebook graded), is a ``timeout``; an
  answer out of memory is a ``memory-limit``; a cell that ends the notebook's process fails
  that exercise and the next ones as ``kernel-died``;
- ``feedback`` takes the cells' outputs from this same run (``outputs`` of
  :func:`judge_submission`) for the autograded notebooks it shows; a cell that used a withheld
  part there shows its outputs of an exercise's second run, or a note (:func:`tinyk.grading.verdict.judge`);
- an exercise whose answer is still the released stub is not run a second time: it fails in
  any run (:func:`tinyk.grading.verdict.still_stubs`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from tinyk.grading.chapter import Notebook
from tinyk.grading.rules import Finding
from tinyk.grading.runner import Limits
from tinyk.grading.scoring import learner_server
from tinyk.grading.submission import checked, for_grading, submission_files
from tinyk.learner.mistakes import note
from tinyk.reports.gradebook_schema import Row, Status

if TYPE_CHECKING:  # imports torch: only when grading
    from tinyk.grading.verdict import Verdict

__all__ = ["grade_answers", "judge_submission", "verdict_reason", "verdict_rows"]

# the learner's process's limits: a reply's, a cell's (which that process keeps), the submission's
_TIMED_OUT = ("no answer within", "ran past the per-cell time limit", "ran past its total time limit")
_DIED = "its process exited while a cell ran"  # a cell ended the notebook's run, as a kernel's death


def judge_submission(entry: Path, notebooks: list[Notebook], released: dict[str, dict], limits: Limits,
                     sandboxed: bool, only: Collection[tuple[str, str]] | None = None,
                     outputs: dict[str, list[tuple[str, list[dict]]]] | None = None,
                     stubs: dict[str, dict] | None = None
                     ) -> tuple[dict[str, Finding], dict[tuple[str, str], Verdict]]:
    """What the checks before grading found in each notebook of the student's ``entry``
    (:func:`~tinyk.grading.submission.checked`), and the verdict of each exercise judged, by
    (notebook, grade_id): every exercise of every notebook that can be graded, or only those of
    ``only``; in a sandbox of their own, one learner's process for them all, within the
    student's total time limit (the learner's start not counted). ``outputs``, a dict, gets
    each graded notebook's cells with what they showed (:func:`tinyk.grading.verdict.judge`).
    ``stubs``: the student versions as students got them, by name (default: ``released``), whose
    stubs an exercise not attempted still holds (it is not run again,
    :func:`tinyk.grading.verdict.still_stubs`)."""
    from tinyk.grading import verdict

    files = submission_files(entry, notebooks)
    flags: dict[str, Finding] = {}
    graded: list[tuple[Notebook, dict, set[str] | None]] = []
    stubs = released if stubs is None else stubs
    for nb in notebooks:
        ids = None if only is None else {g for n, g in only if n == nb.name}
        if ids is not None and not ids:
            continue
        restored, flag = checked(files.get(nb.name), nb, released[nb.name])
        if flag is not None:
            flags[nb.name] = flag
        if restored is not None:  # else not graded: missing, unreadable, tampering
            graded.append((nb, for_grading(restored), ids))
    found: dict[tuple[str, str], Verdict] = {}
    if not graded:
        return flags, found
    with learner_server(limits, sandboxed, len(graded)) as server:
        for nb, restored, ids in graded:
            source = json.loads(nb.path.read_text(encoding="utf-8"))
            shown: list | None = None if outputs is None else outputs.setdefault(nb.name, [])
            release = for_grading(copy.deepcopy(stubs[nb.name])) if nb.name in stubs else None
            for v in verdict.judge(source, restored, server, only=ids, outputs=shown, released=release):
                found[nb.name, v.grade_id] = v
    return flags, found


def verdict_reason(grade_id: str, why: str) -> str:
    """A failed verdict's words in a row's detail, with the catalogued mistake it names."""
    return f"graded outside the notebook: {why}"[:300] + note(grade_id, why)


def _status(why: str) -> Status:
    """The status of an exercise whose verdict failed with ``why``."""
    if any(words in why for words in _TIMED_OUT):
        return Status.TIMEOUT
    if why.startswith(("answer: MemoryError", "test: MemoryError")):  # in the answer, or in a call into it
        return Status.MEMORY_LIMIT
    if _DIED in why:
        return Status.KERNEL_DIED
    return Status.OK


def grade_answers(name: str, entry: Path, notebooks: list[Notebook], released: dict[str, dict],
                  limits: Limits, sandboxed: bool = True) -> list[Row]:
    """The rows of one student (see the module's docstring)."""
    flags, verdicts = judge_submission(entry, notebooks, released, limits, sandboxed)
    return verdict_rows(name, notebooks, flags, verdicts)


def verdict_rows(name: str, notebooks: list[Notebook], flags: dict[str, Finding],
                 verdicts: dict[tuple[str, str], Verdict]) -> list[Row]:
    """A student's rows: each exercise's points and status from its verdict, or the checks'
    finding for a notebook not graded (:func:`judge_submission`)."""
    rows = []
    for nb in notebooks:
        flag = flags.get(nb.name)
        for grade_id, max_points in nb.tests:
            found = verdicts.get((nb.name, grade_id))
            if found is None:  # the notebook was not graded: the checks say why
                status, detail = flag or (Status.ERROR, "no verdict for this exercise")
                rows.append(Row(name, nb.name, grade_id, 0.0, max_points, status, detail))
                continue
            status = Status.OK if found.passed else _status(found.detail)
            reason = "" if found.passed else verdict_reason(grade_id, found.detail)
            if flag is not None and status == Status.OK:  # tests-modified
                status = flag[0]
            detail = "; ".join(filter(None, [reason, flag[1] if flag else ""]))
            rows.append(Row(name, nb.name, grade_id, max_points if found.passed else 0.0, max_points,
                            status, detail))
    return rows
