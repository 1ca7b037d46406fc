"""The class report: what a class got wrong, from ``grades.csv`` (course section "For instructors").

    python -m tinyk.grading report grades.csv --out report/

Writes, into one folder, with nothing fetched from elsewhere (figures are inline SVG):

- ``index.html`` and ``index.zh.html``: the class page in English and in Chinese. Per
  notebook, the share of the class that submitted it, scored full marks, ran out of time or
  tampered with the checks; per exercise, the distribution of scores (a bar chart) and the
  catalogued mistakes its failed tests named (:mod:`tinyk.learner.mistakes`, the ids the grader puts
  in the ``detail`` column), most common first, as a share of the whole class;
- ``class_report.csv``: the same numbers, one per line;
- ``students/<id>.html`` and ``students/<id>.zh.html``: each student's points per exercise,
  the mistakes named and a link to the exercise, with its hints, on the course site. Never
  the detail column: a hidden test's message stays with the instructor.

Reading ``grades.csv`` stops at the first problem, naming the line, the field and the rule
(:mod:`tinyk.reports.gradebook`); the pages are :mod:`tinyk.reports.report_pages`, their words
:mod:`tinyk.reports.report_words`. Only the CSV is read: the report needs no course checkout.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tinyk.reports.gradebook import ClassReport, GradesError, read_grades, summarise
from tinyk.reports.inert import write_csv
from tinyk.reports.report_pages import class_page, page, page_name, student_page
from tinyk.reports.report_words import exercise_name, mistake_label, named, share_sentence, words

__all__ = ["exercise_links", "mistake_lines", "report_main", "report_rows", "write_report"]


def mistake_lines(report: ClassReport, lang: str = "en") -> list[str]:
    """One sentence per named mistake, exercise by exercise, most common first:
    ``"05.3.2: 34% of the class (17 of 50): <label>"``."""
    lines = []
    for exercises in report.exercises.values():
        for exercise, _ in exercises:
            for mistake_id, count in report.ranked(exercise):
                sentence = share_sentence(report.share(count), count, len(report.students),
                                          mistake_label(mistake_id, lang), lang)
                lines.append(named(exercise_name(exercise), sentence, lang))
    return lines


def exercise_links(source: Path | None, site: str | None) -> dict[str, str]:
    """Test-cell grade_id -> the address of its exercise (prompt and hints) on the course site:
    the page of its notebook and the anchor of its ``Exercise 05.N.k`` heading. Empty without
    the notebooks or the site's address."""
    from tinyk.courseware.exercises import is_test, nbgrader, source_text
    from tinyk.courseware.student_markdown import EXERCISE_HEADING, heading_anchor

    if source is None or site is None or not source.is_dir():
        return {}
    links = {}
    for path in sorted(source.glob("*.ipynb")):
        heading = None
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown" and EXERCISE_HEADING.search(source_text(cell)):
                heading = EXERCISE_HEADING.findall(source_text(cell))[-1]
            if is_test(cell) and heading is not None:
                links[nbgrader(cell)["grade_id"]] = (
                    f"{site}notebooks/{path.stem}.html#{heading_anchor(heading)}"
                )
    return links


def report_rows(report: ClassReport) -> list[list[str]]:
    """``class_report.csv``: section, notebook, exercise, item, students, share, label.

    ``score``: students per exact score of an exercise; ``status``: students with that
    status in a notebook (and ``full-marks``); ``mistake``: students whose failure named it."""
    n = len(report.students)
    rows = [["section", "notebook", "exercise", "item", "students", "share", "label"]]
    for notebook, exercises in report.exercises.items():
        full = len(report.full_marks.get(notebook, set()))
        rows.append(["status", notebook, "", "full-marks", str(full), f"{full / n:.4f}",
                     "every point of the notebook"])
        for status, students in sorted(report.statuses.get(notebook, {}).items()):
            rows.append(["status", notebook, "", status, str(len(students)), f"{len(students) / n:.4f}", ""])
        for exercise, _ in exercises:
            for points, count in sorted(Counter(report.scores[(notebook, exercise)].values()).items()):
                rows.append(["score", notebook, exercise, f"{points:g}", str(count), f"{count / n:.4f}", ""])
            for mistake_id, count in report.ranked(exercise):
                rows.append(["mistake", notebook, exercise, mistake_id, str(count), f"{count / n:.4f}",
                             mistake_label(mistake_id, "en")])
    return rows


def write_report(
    grades_csv: Path, out: Path, source: Path | None = None, site: str | None = None
) -> ClassReport:
    """Read ``grades_csv`` and write the class report into the folder ``out``
    (see the module's description). ``source`` and ``site``: the chapter notebooks and the
    course site's address, for links to each exercise (none when either is None)."""
    report = summarise(read_grades(grades_csv))
    links = exercise_links(source, site)
    (out / "students").mkdir(parents=True, exist_ok=True)
    for lang, name, other in (("en", "index.html", "index.zh.html"), ("zh", "index.zh.html", "index.html")):
        title = words(lang)["title"]
        (out / name).write_text(page(lang, title, class_page(report, lang, grades_csv.name), other),
                                encoding="utf-8")
        for student in report.students:
            body = student_page(report, student, lang, links, site)
            other_page = page_name(student, "zh" if lang == "en" else "en")
            (out / "students" / page_name(student, lang)).write_text(
                page(lang, f"{words(lang)['your_title']}: {student}", body, other_page), encoding="utf-8"
            )
    with (out / "class_report.csv").open("w", newline="", encoding="utf-8") as f:
        write_csv(f, report_rows(report), lineterminator="\n")
    return report


def report_main(grades_csv: Path, out: Path, source: Path | None) -> int:
    """``python -m tinyk.grading report``: write the report, print the named mistakes;
    exit status 2, with the reason on stderr, when ``grades_csv`` cannot be read."""
    import sys

    from tinyk.courseware.addresses import site_url
    from tinyk.courseware.checkout import NotACheckout

    try:
        site = site_url(source.parent) if source is not None else None
    except (NotACheckout, ValueError, OSError):
        site = None
    try:
        report = write_report(grades_csv, out, source, site)
    except GradesError as err:
        print(f"report: {err}", file=sys.stderr)
        return 2
    for line in mistake_lines(report):
        print(line)
    print(
        f"{len(report.students)} student(s); wrote {out / 'index.html'}, {out / 'index.zh.html'}, "
        f"{out / 'class_report.csv'} and {2 * len(report.students)} student page(s) in {out / 'students'}"
    )
    return 0
