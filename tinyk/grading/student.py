"""One student's grading run (course section "For instructors"): their submission checked and
submitted, run by ``nbgrader autograde`` within the limits, scored by the course's rules and the
verdict outside the kernel, and read back as gradebook rows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tinyk.grading.chapter import Notebook
from tinyk.grading.rules import Finding, Row, Status
from tinyk.grading.runner import Limits, autograde, total_limit
from tinyk.grading.sandbox import Sandbox
from tinyk.grading.scoring import judge, read_rows, rescore
from tinyk.grading.submission import submit
from tinyk.roster import student_id

__all__ = ["grade_student", "run_student"]


def _failure(log: str) -> Finding:
    """Why ``nbgrader autograde`` failed, from its output: the kernel died, or its first error."""
    if re.search(r"[Kk]ernel (died|dead)|DeadKernel", log):
        return Status.KERNEL_DIED, "the kernel exited while the notebook ran; no exercise could be scored"
    errors = [ln for ln in log.splitlines() if "ERROR" in ln or "Error" in ln]
    first = (errors or log.strip().splitlines() or ["nbgrader failed"])[0]
    return Status.ERROR, first[:200]


def _scored(course: Path, sid: str, to_grade: list[Notebook], sources: list[Notebook], limits: Limits,
            sandbox: Sandbox | None) -> tuple[Finding | None, dict[tuple[str, str], str]]:
    """Autograde the submitted notebooks, then rescore and judge them; returns why the whole
    run failed (None if it did not) and the verdict's reasons."""
    try:
        run = autograde(course, sid, limits, sandbox)
        if run.returncode != 0:
            return _failure(run.stdout + run.stderr), {}
        rescore(course, sid, to_grade)
        by_name = {nb.name: nb for nb in sources}
        return None, judge(course, sid, [by_name[nb.name] for nb in to_grade], limits, sandbox)
    except subprocess.TimeoutExpired:
        return (Status.TIMEOUT, f"submission ran past {total_limit(limits, len(to_grade))} s"), {}


def run_student(name: str, entry: Path, course: Path, notebooks: list[Notebook], released: dict[str, dict],
                limits: Limits, sandbox: Sandbox | None,
                sources: list[Notebook] | None = None) -> tuple[list[Row], Finding | None]:
    """Submit, run in the kernel, take the verdict and read the rows of one student, in
    ``course``; also why the whole run failed, if it did. ``sources``: the notebooks whose
    test cells (hidden tests included) the verdict runs, when ``notebooks`` are the
    released ones (the feedback's run); ``notebooks`` themselves otherwise."""
    sid = student_id(name)
    flags, to_grade = submit(course, sid, entry, notebooks, released)
    failure, verdicts = None, {}
    if to_grade:
        failure, verdicts = _scored(course, sid, to_grade, sources or notebooks, limits, sandbox)
    return read_rows(name, course, notebooks, to_grade, flags, failure, verdicts), failure


def grade_student(name: str, entry: Path, notebooks: list[Notebook], template: Path,
                  released: dict[str, dict], limits: Limits, sandboxed: bool = True) -> list[Row]:
    """Grade one student's submission in a throwaway copy of the prepared course ``template``."""
    with tempfile.TemporaryDirectory(prefix="tinyk-grade-") as tmp:
        course = Path(tmp) / "course"
        shutil.copytree(template, course)
        sandbox = (Sandbox.create(Path(tmp), limits.threads, limits.warm_kernels, limits.memory_mb)
                   if sandboxed else None)
        return run_student(name, entry, course, notebooks, released, limits, sandbox)[0]
