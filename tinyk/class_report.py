"""The class report: what a class got wrong, from ``grades.csv`` (course section "For instructors").

    python -m tinyk.grading report grades.csv --out report/

Writes, into one folder, with nothing fetched from elsewhere (figures are inline SVG):

- ``index.html`` and ``index.zh.html``: the class page in English and in Chinese. Per
  notebook, the share of the class that submitted it, scored full marks, ran out of time or
  tampered with the checks; per exercise, the distribution of scores (a bar chart) and the
  catalogued mistakes its failed tests named (:mod:`tinyk.mistakes`, the ids the grader puts
  in the ``detail`` column), most common first, as a share of the whole class;
- ``class_report.csv``: the same numbers, one per line;
- ``students/<id>.html`` and ``students/<id>.zh.html``: each student's points per exercise,
  the mistakes named and a link to the exercise, with its hints, on the course site. Never
  the detail column: a hidden test's message stays with the instructor.

Reading ``grades.csv`` stops at the first problem, naming the line, the field and the rule.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tinyk import mistakes

__all__ = [
    "ClassReport",
    "GradesError",
    "exercise_links",
    "mistake_lines",
    "read_grades",
    "report_main",
    "report_rows",
    "summarise",
    "write_report",
]

FIELDS = ["student", "notebook", "exercise", "points", "max_points", "status", "detail"]
STATUS_ZH = {
    "ok": "正常评分",
    "missing": "未提交",
    "unreadable": "无法读取",
    "tests-modified": "测试被改动",
    "tampering": "篡改检查",
    "timeout": "超时",
    "memory-limit": "超出内存",
    "kernel-died": "内核退出",
    "error": "评分出错",
}
_WORDS = {
    "en": {
        "title": "Class report",
        "students": "students",
        "student": "student",
        "notebooks": "Notebooks",
        "exercises": "Exercises",
        "notebook": "notebook",
        "submitted": "submitted",
        "full": "full marks",
        "timeout": "timed out",
        "tampering": "tampering",
        "other": "other statuses",
        "caption_nb": "Completion, time-outs and tampering by notebook: students (share of the class)",
        "mean": "mean",
        "points": "points",
        "of_class": "of the class",
        "none": "No catalogued mistake was named in this exercise's failures.",
        "mistakes": "Most common named mistakes",
        "chart": "Scores in exercise {0}: students per score",
        "axis_x": "points",
        "axis_y": "students",
        "student_list": "Students",
        "total": "total",
        "exercise": "exercise",
        "status": "status",
        "mistake": "mistake named",
        "hints": "exercise and hints",
        "open": "open",
        "your_title": "Your grades",
        "caption_student": "Points per exercise",
        "other_lang": "中文",
        "intro": "{0} student(s), {1} notebook(s), {2} exercise(s), from {3}.",
        "caption_students": "Students and their total points",
        "page": "page",
    },
    "zh": {
        "title": "班级报告",
        "students": "名学生",
        "student": "学生",
        "notebooks": "笔记本",
        "exercises": "练习",
        "notebook": "笔记本",
        "submitted": "已提交",
        "full": "满分",
        "timeout": "超时",
        "tampering": "篡改检查",
        "other": "其他状态",
        "caption_nb": "各笔记本的完成、超时和篡改情况：学生人数（占全班比例）",
        "mean": "平均",
        "points": "分",
        "of_class": "全班",
        "none": "这道练习的失败中没有出现目录中的错误。",
        "mistakes": "最常见的已知错误",
        "chart": "练习 {0} 的得分：每个分数的学生人数",
        "axis_x": "得分",
        "axis_y": "学生人数",
        "student_list": "学生",
        "total": "总分",
        "exercise": "练习",
        "status": "状态",
        "mistake": "出现的错误",
        "hints": "练习与提示",
        "open": "打开",
        "your_title": "你的成绩",
        "caption_student": "各练习得分",
        "other_lang": "English",
        "intro": "{0} 名学生，{1} 个笔记本，{2} 道练习，数据来自 {3}。",
        "caption_students": "学生及其总分",
        "page": "页面",
    },
}


class GradesError(ValueError):
    """``grades.csv`` cannot be read: the message names the line, the field, the value and the rule."""


@dataclass(frozen=True)
class Grade:
    """One row of ``grades.csv``."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: str
    detail: str


def read_grades(path: Path) -> list[Grade]:
    """The rows of a gradebook CSV (``python -m tinyk.grading grade``), checked."""
    from tinyk.roster import STATUSES

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GradesError(f"{path}: no such file") from None
    except UnicodeDecodeError as err:
        raise GradesError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    table = list(csv.reader(text.splitlines()))
    if not table:
        raise GradesError(
            f"{path} is empty: expected the header {','.join(FIELDS)} and one row per student and exercise"
        )
    missing = [name for name in FIELDS if name not in table[0]]
    if missing:
        raise GradesError(f"{path}: the header lacks the column(s) {missing}; a gradebook has {FIELDS}")
    column = {name: table[0].index(name) for name in FIELDS}
    grades = []
    for number, line in enumerate(table[1:], 2):
        if not any(cell.strip() for cell in line):
            continue
        if len(line) != len(table[0]):
            raise GradesError(f"{path} line {number}: {len(line)} field(s), the header has {len(table[0])}")
        cell = {name: line[i] for name, i in column.items()}
        numbers = {}
        for name in ("points", "max_points"):
            try:
                numbers[name] = float(cell[name])
            except ValueError:
                numbers[name] = math.nan
            if not math.isfinite(numbers[name]) or numbers[name] < 0:
                raise GradesError(f"{path} line {number}: {name} {cell[name]!r} must be a number >= 0")
        if numbers["points"] > numbers["max_points"]:
            raise GradesError(
                f"{path} line {number}: points {cell['points']} is more than max_points {cell['max_points']}"
            )
        if cell["status"] not in STATUSES:
            raise GradesError(
                f"{path} line {number}: status {cell['status']!r} is not one of {sorted(STATUSES)}"
            )
        for name in ("student", "notebook", "exercise"):
            if not cell[name]:
                raise GradesError(f"{path} line {number}: {name} is empty")
        grades.append(
            Grade(
                cell["student"],
                cell["notebook"],
                cell["exercise"],
                numbers["points"],
                numbers["max_points"],
                cell["status"],
                cell["detail"],
            )
        )
    if not grades:
        raise GradesError(f"{path} has a header but no row")
    return grades


@dataclass
class ClassReport:
    """The class's numbers: ``students`` (sorted), ``exercises`` (notebook -> [(exercise,
    max points)]), ``scores`` ((notebook, exercise) -> {student: points}), ``statuses``
    (notebook -> status -> students with that status in at least one exercise),
    ``full_marks`` (notebook -> students with every point), ``mistakes`` (exercise ->
    Counter of mistake ids, each student counted once)."""

    students: list[str]
    exercises: dict[str, list[tuple[str, float]]]
    scores: dict[tuple[str, str], dict[str, float]]
    statuses: dict[str, dict[str, set[str]]]
    full_marks: dict[str, set[str]]
    mistakes: dict[str, Counter]
    by_student: dict[str, list[Grade]]

    def share(self, count: int) -> str:
        """``count`` students as a whole percentage of the class, ``"34%"``."""
        return f"{round(100 * count / len(self.students))}%"


def summarise(grades: Sequence[Grade]) -> ClassReport:
    """Count the class: every student of ``grades`` is the class (the share's denominator)."""
    students = sorted({g.student for g in grades})
    exercises: dict[str, dict[str, float]] = defaultdict(dict)
    scores: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    statuses: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    per_notebook: dict[tuple[str, str], list[Grade]] = defaultdict(list)
    named: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    by_student: dict[str, list[Grade]] = defaultdict(list)
    for g in grades:
        exercises[g.notebook][g.exercise] = max(g.max_points, exercises[g.notebook].get(g.exercise, 0.0))
        scores[(g.notebook, g.exercise)][g.student] = g.points
        statuses[g.notebook][g.status].add(g.student)
        per_notebook[(g.notebook, g.student)].append(g)
        by_student[g.student].append(g)
        for mistake_id in mistakes.mistakes_in(g.detail):
            named[g.exercise][mistake_id].add(g.student)
    full = {
        nb: {
            s
            for (notebook, s), rows in per_notebook.items()
            if notebook == nb and all(r.points >= r.max_points for r in rows)
        }
        for nb in exercises
    }
    return ClassReport(
        students,
        {nb: sorted(ex.items()) for nb, ex in sorted(exercises.items())},
        dict(scores),
        {nb: dict(st) for nb, st in statuses.items()},
        full,
        {ex: Counter({m: len(s) for m, s in ids.items()}) for ex, ids in named.items()},
        dict(by_student),
    )


def _label(mistake_id: str, lang: str) -> str:
    try:
        found = mistakes.by_id(mistake_id)
    except KeyError:
        return (
            f"{mistake_id} (not in this version's catalogue)"
            if lang == "en"
            else f"{mistake_id}（不在本版目录中）"
        )
    return found.en if lang == "en" else found.zh


def _exercise_name(grade_id: str) -> str:
    return mistakes.exercise_of(grade_id) or grade_id


def _ranked(report: ClassReport, exercise: str) -> list[tuple[str, int]]:
    return sorted(report.mistakes.get(exercise, Counter()).items(), key=lambda item: (-item[1], item[0]))


def mistake_lines(report: ClassReport, lang: str = "en") -> list[str]:
    """One sentence per named mistake, exercise by exercise, most common first:
    ``"05.3.2: 34% of the class (17 of 50): <label>"``."""
    lines = []
    for exercises in report.exercises.values():
        for exercise, _ in exercises:
            for mistake_id, count in _ranked(report, exercise):
                share, n = report.share(count), len(report.students)
                lines.append(
                    f"{_exercise_name(exercise)}: {share} of the class ({count} of {n}): "
                    f"{_label(mistake_id, 'en')}"
                    if lang == "en"
                    else f"{_exercise_name(exercise)}：全班 {share}（{n} 人中 {count} 人）："
                    f"{_label(mistake_id, 'zh')}"
                )
    return lines


# ----------------------------------------------------------------------------- links to the exercises


def exercise_links(source: Path | None, site: str | None) -> dict[str, str]:
    """Test-cell grade_id -> the address of its exercise (prompt and hints) on the course site:
    the page of its notebook and the anchor of its ``Exercise 05.N.k`` heading. Empty without
    the notebooks or the site's address."""
    from tinyk.course import EXERCISE_HEADING, heading_anchor
    from tinyk.exercises import is_test, nbgrader, source_text

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


def _in_language(url: str, lang: str, site: str | None) -> str:
    """The Chinese edition of a page lives under ``zh/`` of the site."""
    return url.replace(site, f"{site}zh/", 1) if lang == "zh" and site else url


# ----------------------------------------------------------------------------- HTML

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #999;padding:.2rem .5rem;text-align:left}
caption{text-align:left;font-weight:bold;padding:.3rem 0}figure{margin:.5rem 0}a{color:#0645ad}
svg text{font-size:11px;fill:#111}"""


def _page(lang: str, title: str, body: str, other: str) -> str:
    words = _WORDS[lang]
    return (
        f'<!DOCTYPE html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}">\n<head>\n'
        f'<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n"
        f'<p><a href="{html.escape(other)}" hreflang="{"en" if lang == "zh" else "zh-CN"}">'
        f"{words['other_lang']}</a></p>\n{body}</main>\n</body>\n</html>\n"
    )


def _histogram(values: list[float], max_points: float, title: str, ident: str, lang: str) -> str:
    """An inline SVG bar chart of students per score: a bar per whole point when the maximum
    is at most 10 whole points, else 10 equal bins."""
    words = _WORDS[lang]
    whole = max_points == int(max_points) and max_points <= 10
    edges = (
        [float(k) for k in range(int(max_points) + 1)] if whole else [max_points * k / 10 for k in range(11)]
    )
    counts = [0] * (len(edges) - (0 if whole else 1))
    for v in values:
        if whole:
            counts[min(int(v), len(counts) - 1)] += 1
        else:
            counts[min(int(10 * v / max_points), 9) if max_points else 0] += 1
    labels = [f"{e:g}" for e in edges] if whole else [f"{edges[k]:.3g}–{edges[k + 1]:.3g}" for k in range(10)]
    width, height, left, bottom = 40 * len(counts) + 60, 180, 40, 30
    top = max(counts) or 1
    bars = []
    for k, (count, label) in enumerate(zip(counts, labels, strict=True)):
        h = (height - bottom - 20) * count / top
        x = left + 40 * k + 5
        bars.append(
            f'<rect x="{x}" y="{height - bottom - h:.1f}" width="30" height="{h:.1f}" fill="#3b6ea5">'
            f"<title>{html.escape(label)}: {count}</title></rect>"
            f'<text x="{x + 15}" y="{height - bottom + 14}" text-anchor="middle">{html.escape(label)}</text>'
            f'<text x="{x + 15}" y="{height - bottom - h - 3:.1f}" text-anchor="middle">{count}</text>'
        )
    desc = "; ".join(
        f"{label} {words['points']}: {count}" for label, count in zip(labels, counts, strict=True)
    )
    return (
        f'<figure>\n<svg role="img" aria-labelledby="{ident}-t {ident}-d" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{ident}-t">{html.escape(title)}</title><desc id="{ident}-d">{html.escape(desc)}</desc>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#111"/>'
        f'{"".join(bars)}<text x="{width / 2}" y="{height - 2}" text-anchor="middle">{words["axis_x"]}</text>'
        f'<text x="10" y="{(height - bottom) / 2}" transform="rotate(-90 10 {(height - bottom) / 2})" '
        f'text-anchor="middle">{words["axis_y"]}</text></svg>\n'
        f"<figcaption>{html.escape(title)}</figcaption>\n</figure>\n"
    )


def _count(report: ClassReport, students: set[str]) -> str:
    return f"{len(students)} ({report.share(len(students))})"


def _class_page(report: ClassReport, lang: str, source_name: str) -> str:
    w = _WORDS[lang]
    n_exercises = sum(len(ex) for ex in report.exercises.values())
    intro = w["intro"].format(len(report.students), len(report.exercises), n_exercises, source_name)
    body = [
        f"<h1>{w['title']}</h1>\n<p>{html.escape(intro)}</p>\n",
        f"<h2>{w['notebooks']}</h2>\n<table>\n<caption>{w['caption_nb']}</caption>\n<thead><tr>"
        f'<th scope="col">{w["notebook"]}</th><th scope="col">{w["submitted"]}</th>'
        f'<th scope="col">{w["full"]}</th><th scope="col">{w["timeout"]}</th>'
        f'<th scope="col">{w["tampering"]}</th><th scope="col">{w["other"]}</th></tr></thead>\n<tbody>\n',
    ]
    for notebook in report.exercises:
        statuses = report.statuses.get(notebook, {})
        absent = statuses.get("missing", set())
        submitted = set(report.students) - absent
        others = ", ".join(
            f"{s if lang == 'en' else STATUS_ZH[s]}: {len(v)}"
            for s, v in sorted(statuses.items())
            if s not in ("ok", "timeout", "tampering")
        )
        body.append(
            f'<tr><th scope="row">{html.escape(notebook)}</th><td>{_count(report, submitted)}</td>'
            f"<td>{_count(report, report.full_marks.get(notebook, set()))}</td>"
            f"<td>{_count(report, statuses.get('timeout', set()))}</td>"
            f"<td>{_count(report, statuses.get('tampering', set()))}</td>"
            f"<td>{html.escape(others)}</td></tr>\n"
        )
    body.append("</tbody>\n</table>\n")
    body.append(f"<h2>{w['exercises']}</h2>\n")
    for notebook, exercises in report.exercises.items():
        body.append(f"<h3>{html.escape(notebook)}</h3>\n")
        for exercise, max_points in exercises:
            name = _exercise_name(exercise)
            values = list(report.scores[(notebook, exercise)].values())
            mean = sum(values) / len(values)
            body.append(f"<h4>{html.escape(name)} ({max_points:g} {w['points']})</h4>\n")
            body.append(f"<p>{w['mean']}: {mean:.2f} / {max_points:g}</p>\n")
            body.append(_histogram(values, max_points, w["chart"].format(name), f"h-{exercise}", lang))
            ranked = _ranked(report, exercise)
            if not ranked:
                body.append(f"<p>{w['none']}</p>\n")
                continue
            body.append(f"<h5>{w['mistakes']}</h5>\n<ul>\n")
            for mistake_id, count in ranked:
                n = len(report.students)
                text = (
                    f"{report.share(count)} of the class ({count} of {n}): {_label(mistake_id, lang)}"
                    if lang == "en"
                    else f"全班 {report.share(count)}（{n} 人中 {count} 人）：{_label(mistake_id, lang)}"
                )
                body.append(f"<li>{html.escape(text)} <code>{html.escape(mistake_id)}</code></li>\n")
            body.append("</ul>\n")
    body.append(
        f"<h2>{w['student_list']}</h2>\n<table>\n<caption>{w['caption_students']}</caption>\n<thead><tr>"
        f'<th scope="col">{w["student"]}</th><th scope="col">{w["total"]}</th>'
        f"</tr></thead>\n<tbody>\n"
    )
    for student in report.students:
        rows = report.by_student[student]
        page = f"students/{_page_name(student, lang)}"
        body.append(
            f'<tr><th scope="row"><a href="{html.escape(page)}">{html.escape(student)}</a></th>'
            f"<td>{sum(r.points for r in rows):g} / {sum(r.max_points for r in rows):g}</td></tr>\n"
        )
    body.append("</tbody>\n</table>\n")
    return "".join(body)


def _page_name(student: str, lang: str) -> str:
    from tinyk.roster import student_id as _student_id

    return f"{_student_id(student)}{'.zh' if lang == 'zh' else ''}.html"


def _student_page(
    report: ClassReport, student: str, lang: str, links: dict[str, str], site: str | None
) -> str:
    """One student's page: points, status, the mistakes named, the exercise's link. Never the detail."""
    from tinyk.roster import STATUSES

    w = _WORDS[lang]
    body = [
        f"<h1>{w['your_title']}: {html.escape(student)}</h1>\n<table>\n<caption>{w['caption_student']}"
        f'</caption>\n<thead><tr><th scope="col">{w["exercise"]}</th><th scope="col">{w["points"]}</th>'
        f'<th scope="col">{w["status"]}</th><th scope="col">{w["mistake"]}</th>'
        f'<th scope="col">{w["hints"]}</th></tr></thead>\n<tbody>\n'
    ]
    for g in sorted(report.by_student[student], key=lambda g: (g.notebook, g.exercise)):
        status = (
            (g.status if g.status == "ok" else f"{g.status}: {STATUSES[g.status]}")
            if lang == "en"
            else STATUS_ZH[g.status]
        )
        named = "; ".join(_label(m, lang) for m in mistakes.mistakes_in(g.detail))
        link = links.get(g.exercise)
        cell = (
            f'<a href="{html.escape(_in_language(link, lang, site))}">{w["open"]} '
            f"{html.escape(_exercise_name(g.exercise))}</a>"
            if link
            else ""
        )
        body.append(
            f'<tr><th scope="row">{html.escape(_exercise_name(g.exercise))}</th>'
            f"<td>{g.points:g} / {g.max_points:g}</td><td>{html.escape(status)}</td>"
            f"<td>{html.escape(named)}</td><td>{cell}</td></tr>\n"
        )
    body.append("</tbody>\n</table>\n")
    return "".join(body)


# ----------------------------------------------------------------------------- CSV and the folder


def report_rows(report: ClassReport) -> list[list[str]]:
    """``class_report.csv``: section, notebook, exercise, item, students, share, label.

    ``score``: students per exact score of an exercise; ``status``: students with that
    status in a notebook (and ``full-marks``); ``mistake``: students whose failure named it."""
    n = len(report.students)
    rows = [["section", "notebook", "exercise", "item", "students", "share", "label"]]
    for notebook, exercises in report.exercises.items():
        rows.append(
            [
                "status",
                notebook,
                "",
                "full-marks",
                str(len(report.full_marks.get(notebook, set()))),
                f"{len(report.full_marks.get(notebook, set())) / n:.4f}",
                "every point of the notebook",
            ]
        )
        for status, students in sorted(report.statuses.get(notebook, {}).items()):
            rows.append(["status", notebook, "", status, str(len(students)), f"{len(students) / n:.4f}", ""])
        for exercise, _ in exercises:
            for points, count in sorted(Counter(report.scores[(notebook, exercise)].values()).items()):
                rows.append(["score", notebook, exercise, f"{points:g}", str(count), f"{count / n:.4f}", ""])
            for mistake_id, count in _ranked(report, exercise):
                rows.append(
                    [
                        "mistake",
                        notebook,
                        exercise,
                        mistake_id,
                        str(count),
                        f"{count / n:.4f}",
                        _label(mistake_id, "en"),
                    ]
                )
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
        (out / name).write_text(
            _page(lang, _WORDS[lang]["title"], _class_page(report, lang, grades_csv.name), other),
            encoding="utf-8",
        )
        for student in report.students:
            page = _student_page(report, student, lang, links, site)
            other_page = _page_name(student, "zh" if lang == "en" else "en")
            (out / "students" / _page_name(student, lang)).write_text(
                _page(lang, f"{_WORDS[lang]['your_title']}: {student}", page, other_page), encoding="utf-8"
            )
    with (out / "class_report.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(report_rows(report))
    return report


def report_main(grades_csv: Path, out: Path, source: Path | None) -> int:
    """``python -m tinyk.grading report``: write the report, print the named mistakes;
    exit status 2, with the reason on stderr, when ``grades_csv`` cannot be read."""
    import sys

    from tinyk.course import NotACheckout, site_url

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
