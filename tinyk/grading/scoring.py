"""The points of a student's run, in the course's gradebook (course section "For instructors").

After ``nbgrader autograde``: every test cell's score is taken again by the course's rule
(:func:`rescore`); the verdict outside the kernel (:mod:`tinyk.verdict`) replaces it for every
exercise it decides (:func:`judge`); and the gradebook and the autograded notebooks give the
student's rows (:func:`read_rows`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from tinyk.exercises import is_test, nbgrader
from tinyk.grading.chapter import ASSIGNMENT, Notebook
from tinyk.grading.rules import Finding, Row, Status, cell_problem, points_of_test, rows_for, with_verdict
from tinyk.grading.runner import Limits, say_once, total_limit
from tinyk.grading.sandbox import Sandbox, sandbox_argv
from tinyk.roster import student_id

if TYPE_CHECKING:  # imports torch: only when grading
    from tinyk.answer_server import AnswerServer

__all__ = ["answers_prefix", "judge", "read_rows", "rescore", "say_shared"]


def _gradebook(course: Path):  # -> nbgrader.api.Gradebook, imported only when grading
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def _autograded(course: Path, sid: str, nb: Notebook) -> Path:
    return course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb"


def rescore(course: Path, sid: str, notebooks: list[Notebook]) -> None:
    """Replace nbgrader's recorded score of every graded test cell by
    :func:`~tinyk.grading.rules.points_of_test` of the autograded notebook, in the course's
    gradebook (where the CSV and the feedback read it). nbgrader scores a test cell 0 as soon
    as it printed anything on stderr, so a correct answer that warns would lose its points."""
    from nbgrader.api import MissingEntry

    with _gradebook(course) as gradebook:
        for nb in notebooks:
            graded = _autograded(course, sid, nb)
            if not graded.exists():
                continue
            cells = {nbgrader(c).get("grade_id"): c for c in json.loads(graded.read_text())["cells"]
                     if is_test(c)}
            for grade_id, max_points in nb.tests:
                if grade_id not in cells:
                    continue
                try:
                    grade = gradebook.find_grade(grade_id, nb.name, ASSIGNMENT, sid)
                except MissingEntry:
                    continue
                grade.auto_score = points_of_test(cells[grade_id], max_points)
            gradebook.db.commit()


def _verdicts(pairs: list[tuple[Notebook, Path]], prefix: list[str], limits: Limits,
              timed_out: dict[str, dict[str, str]]) -> list[list[dict]]:
    """:func:`tinyk.verdict.judge` of each (source notebook, submitted notebook), one learner's
    process serving them all, within the student's total time limit (a learner's process that
    answers each of a test's calls just within the per-cell timeout cannot hold the run for
    hours); ``timed_out``: by notebook, the exercises whose answer or test ran past the
    per-cell timeout in the kernel, which are not run again."""
    from tinyk import verdict

    server = verdict.AnswerServer(prefix, limits.cell_timeout, limits.memory_mb)
    try:
        server.start()  # importing torch over there: other students' verdicts go on meanwhile
        server.limit_total(total_limit(limits, len(pairs)))
        # one test cell at a time in this process (verdict.TEST_CELL_LOCK); the notebooks' cells
        # of other students' verdicts run in their own processes meanwhile
        return [[asdict(v) for v in verdict.judge(json.loads(nb.path.read_text()),
                                                  json.loads(path.read_text()),
                                                  server, timed_out.get(nb.name))] for nb, path in pairs]
    finally:
        say_shared(server)
        server.close()


def say_shared(server: AnswerServer) -> None:
    """Say once a run, on stderr, when a sandboxed learner's process could not give each
    notebook namespaces of its own (:meth:`~tinyk.answer_server.AnswerServer.notebook`)."""
    if server.prefix and server.shared:
        say_once(f"a clean start for each notebook's verdict unavailable ({server.shared}): a "
                 f"student's answers share one sandbox across their notebooks in the verdict")


def _timed_out(course: Path, sid: str, nb: Notebook) -> dict[str, str]:
    """The exercises of ``nb`` whose answer or test cell ran past the per-cell timeout in the
    kernel's run, with that reason."""
    graded = _autograded(course, sid, nb)
    if not graded.exists():
        return {}
    executed = json.loads(graded.read_text())
    problems = {grade_id: cell_problem(executed, grade_id, 0.0, points) for grade_id, points in nb.tests}
    return {grade_id: detail for grade_id, (status, detail) in problems.items() if status == Status.TIMEOUT}


def answers_prefix(sandbox: Sandbox | None, limits: Limits) -> list[str]:
    """The command line the learner's answers run under: the sandbox's, in a scratch folder
    of their own ([] without the sandbox)."""
    if sandbox is None:
        return []
    scratch = sandbox.scratch.parent / "answers"
    scratch.mkdir(exist_ok=True)
    return sandbox_argv(scratch, sandbox.runtime, limits.threads, memory_mb=limits.memory_mb)


def _reasons(course: Path, sid: str, pairs: list[tuple[Notebook, Path]], limits: Limits,
             sandbox: Sandbox | None) -> dict[tuple[str, str], str]:
    """Why each exercise the verdict decides failed, by (notebook, grade_id) ('' when it
    passed); when the grader's own run fails, every one of them fails with that reason."""
    prefix = answers_prefix(sandbox, limits)
    results, problem = None, ""
    try:
        results = _verdicts(pairs, prefix, limits,
                            {nb.name: _timed_out(course, sid, nb) for nb, _ in pairs})
    except Exception as err:  # the grader's own failure: no points rather than the kernel's
        problem = f"{type(err).__name__}: {err}"[:200]
    found: dict[tuple[str, str], str] = {}
    for index, (nb, _) in enumerate(pairs):
        verdicts = {v["grade_id"]: v for v in results[index]} if results is not None else {}
        for grade_id, _ in nb.tests:
            verdict = verdicts.get(grade_id)
            found[nb.name, grade_id] = (f"the grader's run failed: {problem}" if verdict is None
                                        else "" if verdict["passed"] else verdict["detail"])
    return found


def judge(course: Path, sid: str, notebooks: list[Notebook], limits: Limits,
          sandbox: Sandbox | None) -> dict[tuple[str, str], str]:
    """The verdict outside the student's kernel (:mod:`tinyk.verdict`): the student's notebook
    runs again in the sandbox, every cell but the test cells, through IPython, and the test
    cells here, in a process of the grader's. Its result replaces the kernel's score of every exercise it
    decides, in the gradebook. Returns why each of those exercises failed, by (notebook,
    grade_id) ('' when it passed)."""
    from nbgrader.api import MissingEntry

    pairs = [(nb, course / "submitted" / sid / ASSIGNMENT / f"{nb.name}.ipynb") for nb in notebooks]
    pairs = [(nb, path) for nb, path in pairs if path.exists() and nb.tests]
    if not pairs:
        return {}
    found = _reasons(course, sid, pairs, limits, sandbox)
    worth = {(nb.name, grade_id): points for nb, _ in pairs for grade_id, points in nb.tests}
    with _gradebook(course) as gradebook:
        for (notebook, grade_id), why in found.items():
            try:
                grade = gradebook.find_grade(grade_id, notebook, ASSIGNMENT, sid)
            except MissingEntry:
                continue
            grade.auto_score = 0.0 if why else worth[notebook, grade_id]
        gradebook.db.commit()
    return found


def read_rows(name: str, course: Path, notebooks: list[Notebook], to_grade: list[Notebook],
              flags: dict[str, Finding], failure: Finding | None,
              verdicts: dict[tuple[str, str], str]) -> list[Row]:
    """The rows of one student from the course's gradebook and autograded notebooks
    (:func:`~tinyk.grading.rules.rows_for` of each notebook, with the verdict's reasons)."""
    from nbgrader.api import MissingEntry

    sid = student_id(name)
    rows: list[Row] = []
    with _gradebook(course) as gradebook:
        for nb in notebooks:
            def score(grade_id: str, nb: Notebook = nb) -> float | None:
                try:
                    return float(gradebook.find_grade(grade_id, nb.name, ASSIGNMENT, sid).score)
                except MissingEntry:
                    return None

            graded = _autograded(course, sid, nb)
            executed = json.loads(graded.read_text()) if nb in to_grade and graded.exists() else None
            rows += [with_verdict(row, verdicts.get((nb.name, row.exercise)))
                     for row in rows_for(name, nb, flags.get(nb.name), failure, executed, score)]
    return rows
