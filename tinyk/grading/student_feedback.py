"""nbgrader's HTML feedback for every student, with no hidden test in it (course section "For
instructors").

Each submission is graded as :func:`tinyk.grading.batch.grade` grades it, by the verdict: the
notebook runs once, in the sandbox, and its cells' outputs come back from that run
(:mod:`tinyk.grading.shown_outputs`). nbgrader's autograde writes them into a course made from
the released notebooks, whose test cells hold only the visible tests, and renders its pages;
a test cell shows the error it failed with only when the line that raised it is not a hidden
test's. Nothing of the student's runs in the page (:mod:`tinyk.reports.inert`): their Markdown and
HTML are cleaned before nbgrader renders them, and the page carries a Content-Security-Policy
that lets no script run.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyk.courseware.exercises import is_test, nbgrader
from tinyk.grading.answers_only import judge_submission, verdict_rows
from tinyk.grading.assignment import prepare_course, released_notebooks
from tinyk.grading.ast_guard import one_parse_at_a_time
from tinyk.grading.batch import Batch, start
from tinyk.grading.chapter import ASSIGNMENT, Notebook
from tinyk.grading.runner import Limits, autograde_outputs, run_nbgrader
from tinyk.grading.submission import submit
from tinyk.learner.mistakes import by_id, mistakes_in
from tinyk.reports.gradebook_schema import Row, Status
from tinyk.reports.inert import inert_notebook, page_problems, with_csp
from tinyk.reports.submitters import student_id, student_name

__all__ = ["feedback", "notes"]


def notes(row: Row, cell: dict) -> list[str]:
    """What the feedback adds under a test cell, from the graded run: its points when the
    cell's own output (the error of a visible test, or none) does not explain them, a status
    other than ok, and the catalogued mistake the verdict named (:mod:`tinyk.learner.mistakes`). Only
    the points, the status's fixed description and the catalogue's label: never the detail,
    which may quote a hidden test's message."""
    found = [f"The mistake: {by_id(found).en} ({found})." for found in mistakes_in(row.detail)]
    failed_here = any(out.get("output_type") == "error" for out in cell.get("outputs", []))
    graded = row.status in (Status.OK, Status.TESTS_MODIFIED)  # the tests ran to their end
    if graded and row.points < row.max_points and not failed_here:
        found.append(f"A hidden test failed: {row.points:g} of {row.max_points:g} points.")
    if row.status != Status.OK:
        found.append(f"{row.status}: {row.status.description}. {row.points:g} of {row.max_points:g} points.")
    return found


def _show_notebook(gradebook: Any, course: Path, sid: str, notebook: str, rows: list[Row]) -> None:
    """One notebook of the shown run: the graded points in its gradebook, the notes under its
    test cells."""
    import nbformat
    from nbgrader.api import MissingEntry

    path = course / "autograded" / sid / ASSIGNMENT / f"{notebook}.ipynb"
    if not path.exists():
        return
    shown = nbformat.read(path, as_version=4)
    cells = {nbgrader(c).get("grade_id"): c for c in shown.cells if is_test(c)}
    for row in (r for r in rows if r.notebook == notebook):
        try:
            grade = gradebook.find_grade(row.exercise, notebook, ASSIGNMENT, sid)
        except MissingEntry:
            continue
        grade.auto_score, grade.manual_score = row.points, None
        cell = cells.get(row.exercise)
        if cell is not None:
            cell.outputs += [nbformat.v4.new_output("display_data", {"text/plain": text})
                             for text in notes(row, cell)]
    gradebook.db.commit()
    nbformat.write(shown, path)


def _show_grades(course: Path, sid: str, rows: list[Row]) -> None:
    """Put the graded run's points into the shown run's gradebook and notebooks (see
    :func:`feedback`), for ``generate_feedback`` to render."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for notebook in dict.fromkeys(r.notebook for r in rows):
            _show_notebook(gradebook, course, sid, notebook, rows)


def _make_inert(course: Path, sid: str) -> None:
    """The student's notebooks of the shown run, rendered inertly by nbgrader: Markdown and
    HTML cleaned, scripts and widgets dropped (:func:`tinyk.reports.inert.inert_notebook`)."""
    import nbformat

    for path in sorted((course / "autograded" / sid / ASSIGNMENT).glob("*.ipynb")):
        nbformat.write(inert_notebook(nbformat.read(path, as_version=4)), path)


def _inert_pages(folder: Path, sid: str) -> None:
    """nbgrader's pages in ``folder`` with the Content-Security-Policy and without its
    MathJax script (:func:`tinyk.reports.inert.with_csp`; TeX shows as written); a page in which
    :func:`tinyk.reports.inert.page_problems` still finds something to run is removed, and said on
    stderr."""
    for page in sorted(folder.rglob("*.html")):
        text = with_csp(page.read_text(encoding="utf-8"))
        problems = page_problems(text)
        if problems:
            page.unlink()
            print(f"{sid}: no feedback in {page.name}, it would hold {'; '.join(problems[:3])}",
                  file=sys.stderr)
        else:
            page.write_text(text, encoding="utf-8")


@dataclass
class _Courses:
    """The course a feedback run shows: made from the released notebooks (``visible``, visible
    tests only), which come from a course prepared from the sources; the points come from the
    verdict with the sources' tests."""

    shown: Path
    visible: list[Notebook]
    shown_released: dict[str, dict]
    released: dict[str, dict]  # the student versions as students got them (their answers' stubs)


def _prepare(tmp: Path, chosen: list[Notebook]) -> _Courses:
    template = tmp / "course"
    prepare_course(chosen, template)  # only for its release: the sources' tests are the verdict's
    release_dir = template / "release" / ASSIGNMENT
    shown = tmp / "shown"  # the released notebooks as sources: visible tests only
    visible = [Notebook(release_dir / f"{nb.name}.ipynb", nb.name, nb.tests, nb.translated) for nb in chosen]
    prepare_course(visible, shown)
    return _Courses(shown, visible, released_notebooks(shown, chosen), released_notebooks(template, chosen))


def _feedback_of(entry: Path, batch: Batch, courses: _Courses, work: Path, out_dir: Path,
                 sandbox: bool) -> None:
    """One student's feedback, written under ``out_dir/<student id>/`` (a line on stderr when
    there is none to give): their notebooks judged once by the verdict, its outputs and points
    written into the shown course by nbgrader's autograde, rendered by its generate_feedback."""
    from tinyk.grading.shown_outputs import write  # nbgrader's preprocessor: the instructor extra

    name, chosen = student_name(entry), batch.notebooks
    sid = student_id(name)
    course = work / "course"
    shutil.copytree(courses.shown, course)
    try:
        to_grade = submit(course, sid, entry, courses.visible, courses.shown_released)[1]
    except ValueError as err:  # a single file while several notebooks are chosen
        print(f"{sid}: no feedback, {err}", file=sys.stderr)
        return
    if not to_grade:
        return
    outputs: dict[str, list] = {}
    flags, verdicts = judge_submission(entry, chosen, courses.shown_released, batch.limits, sandbox,
                                       outputs=outputs, stubs=courses.released)
    rows = verdict_rows(name, chosen, flags, verdicts)
    shown = work / "outputs.json"
    sources = {nb.name: json.loads(nb.path.read_text(encoding="utf-8")) for nb in chosen}
    write(shown, sources, outputs, verdicts)
    run = autograde_outputs(course, sid, shown)
    if run.returncode != 0:
        raise RuntimeError(f"nbgrader autograde failed: {(run.stdout + run.stderr).strip()[-300:]}")
    _show_grades(course, sid, rows)
    _make_inert(course, sid)
    run_nbgrader(["generate_feedback", ASSIGNMENT, f"--student={sid}", "--force"], course)
    produced = course / "feedback" / sid / ASSIGNMENT
    if produced.exists():
        _inert_pages(produced, sid)
        shutil.copytree(produced, out_dir / sid, dirs_exist_ok=True)


def _one_student(entry: Path, batch: Batch, courses: _Courses, tmp: Path, out_dir: Path,
                 sandbox: bool) -> str | None:
    """:func:`_feedback_of` one student in a folder of their own, removed after; a failure of
    the grader's own run is said (on stderr) and costs no other student their feedback.
    Returns the student's id when it failed so."""
    sid = student_id(student_name(entry))
    work = tmp / "students" / sid
    try:
        _feedback_of(entry, batch, courses, work, out_dir, sandbox)
        return None
    except Exception as err:  # one broken run never stops the others
        why = f"{type(err).__name__}: {err}"[:200]
        print(f"{sid}: no feedback, the grader's run failed: {why}", file=sys.stderr)
        return sid
    finally:
        shutil.rmtree(work, ignore_errors=True)


def feedback(submissions: Path, out_dir: Path, notebooks: Sequence[str | Path] | None = None, *,
             source: Path | None = None, limits: Limits | None = None, sandbox: bool = True,
             jobs: int | None = None, progress: bool = False) -> list[str]:
    """nbgrader's HTML feedback for every student, written under ``out_dir/<student id>/``,
    with no hidden test in it; ``jobs`` students at once (default: one per core), as
    :func:`~tinyk.grading.batch.grade` grades them, with a progress bar on stderr with ``progress``.
    Returns the ids of the students whose run failed in the grader itself (sorted).

    Each submission is judged once by the verdict (:mod:`tinyk.grading.verdict`, with the hidden
    tests, in the grader's process), as :func:`~tinyk.grading.batch.grade` grades it, and the
    outputs of its cells come from that run; they are shown in a course made from the
    released notebooks, whose test cells hold only the visible tests. A test cell shows the
    error of a visible test only: neither a hidden test's source nor its message reaches the
    page (nor anything printed while a test called the student's code). A test cell that
    failed only in the hidden tests says so, with its points.
    """
    batch = start(submissions, notebooks, source, limits, sandbox)
    with tempfile.TemporaryDirectory(prefix="tinyk-feedback-") as tmp:
        courses = _prepare(Path(tmp), batch.notebooks)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(batch.entries), desc="feedback", unit="student")
        # the threads parse Python one tree at a time, as grade's do (tinyk.grading.ast_guard)
        workers, failed = jobs or os.cpu_count() or 2, []
        with one_parse_at_a_time(), concurrent.futures.ThreadPoolExecutor(workers) as pool:
            for future in concurrent.futures.as_completed(
                    [pool.submit(_one_student, entry, batch, courses, Path(tmp), out_dir, sandbox)
                     for entry in batch.entries]):
                failed += [sid] if (sid := future.result()) else []
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()
    return sorted(failed)
