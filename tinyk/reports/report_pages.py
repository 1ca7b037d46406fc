"""The class report's HTML pages (course section "For instructors"): the class page and a page
per student, each in English and in Chinese (:mod:`tinyk.reports.report_words`), offline (no script,
no fetched file: the charts are inline SVG) and labelled for screen readers (captions, scoped
headers, a title and a description on every chart). Every page carries a
Content-Security-Policy that lets no script run and fetches nothing (:data:`tinyk.reports.inert.CSP`),
and every text of the gradebook, a student's name first, is escaped.

A student's page shows the points, the status and the mistakes named, with a link to the
exercise and its hints; never the ``detail`` column, where a hidden test's message stays with
the instructor.
"""

from __future__ import annotations

import html

from tinyk.learner import mistakes
from tinyk.reports.gradebook import ClassReport
from tinyk.reports.gradebook_schema import STATUSES
from tinyk.reports.inert import CSP_META
from tinyk.reports.report_words import exercise_name, mistake_label, share_sentence, status_label, words
from tinyk.reports.submitters import student_id

__all__ = ["class_page", "histogram", "in_language", "page", "page_name", "student_page"]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #999;padding:.2rem .5rem;text-align:left}
caption{text-align:left;font-weight:bold;padding:.3rem 0}figure{margin:.5rem 0}a{color:#0645ad}
div.table{overflow-x:auto;max-width:100%}svg{max-width:100%;height:auto}
svg text{font-size:11px;fill:#111}"""


def page(lang: str, title: str, body: str, other: str) -> str:
    """A whole page in ``lang`` around ``body``, with a link to ``other``, its other edition."""
    return (
        f'<!DOCTYPE html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}">\n<head>\n'
        f'<meta charset="utf-8">\n{CSP_META}\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n"
        f'<p><a href="{html.escape(other)}" hreflang="{"en" if lang == "zh" else "zh-CN"}">'
        f"{words(lang)['other_lang']}</a></p>\n{body}</main>\n</body>\n</html>\n"
    )


def page_name(student: str, lang: str) -> str:
    """The file of a student's page: their id (:func:`tinyk.reports.submitters.student_id`), ``.zh`` in
    Chinese."""
    return f"{student_id(student)}{'.zh' if lang == 'zh' else ''}.html"


def in_language(url: str, lang: str, site: str | None) -> str:
    """The Chinese edition of a page lives under ``zh/`` of the site."""
    return url.replace(site, f"{site}zh/", 1) if lang == "zh" and site else url


def _bins(values: list[float], max_points: float) -> tuple[list[int], list[str]]:
    """Students per bar and the bars' labels: a bar per whole point when the maximum is at
    most 10 whole points, else 10 equal bins."""
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
    return counts, labels


def _bars(counts: list[int], labels: list[str], height: int, left: int, bottom: int) -> str:
    """The SVG bars, each with its count above and its label below."""
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
    return "".join(bars)


def histogram(values: list[float], max_points: float, title: str, ident: str, lang: str) -> str:
    """An inline SVG bar chart of students per score, titled and described for screen readers."""
    w = words(lang)
    counts, labels = _bins(values, max_points)
    width, height, left, bottom = 40 * len(counts) + 60, 180, 40, 30
    ident = html.escape(ident)
    desc = "; ".join(f"{label} {w['points']}: {count}" for label, count in zip(labels, counts, strict=True))
    return (
        f'<figure>\n<svg role="img" aria-labelledby="{ident}-t {ident}-d" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{ident}-t">{html.escape(title)}</title><desc id="{ident}-d">{html.escape(desc)}</desc>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#111"/>'
        f'{_bars(counts, labels, height, left, bottom)}'
        f'<text x="{width / 2}" y="{height - 2}" text-anchor="middle">{w["axis_x"]}</text>'
        f'<text x="10" y="{(height - bottom) / 2}" transform="rotate(-90 10 {(height - bottom) / 2})" '
        f'text-anchor="middle">{w["axis_y"]}</text></svg>\n'
        f"<figcaption>{html.escape(title)}</figcaption>\n</figure>\n"
    )


def _count(report: ClassReport, students: set[str]) -> str:
    return f"{len(students)} ({report.share(len(students))})"


def _table_start(heading: str, caption: str, columns: list[str], ident: str) -> str:
    """A table's heading (``h2``, or the page's ``h1`` already made), caption and column
    headers, up to its body's opening tag. The table sits in a region of its own that scrolls
    sideways when the screen is narrower than the table (a phone), so the page itself never
    does; the region takes the keyboard focus, to be scrolled with the arrow keys, and is
    named by the table's caption."""
    header = "".join(f'<th scope="col">{c}</th>' for c in columns)
    return (f'{heading}\n<div class="table" role="region" tabindex="0" aria-labelledby="{ident}">\n<table>\n'
            f'<caption id="{ident}">{caption}</caption>\n<thead><tr>{header}</tr></thead>\n<tbody>\n')


_TABLE_END = "</tbody>\n</table>\n</div>\n"


def _notebook_table(report: ClassReport, lang: str) -> str:
    """Per notebook: submitted, full marks, timed out, tampering, the other statuses."""
    w = words(lang)
    rows = [_table_start(f"<h2>{w['notebooks']}</h2>", w["caption_nb"],
                         [w[k] for k in ("notebook", "submitted", "full", "timeout", "tampering", "other")],
                         "table-notebooks")]
    for notebook in report.exercises:
        statuses = report.statuses.get(notebook, {})
        submitted = set(report.students) - statuses.get("missing", set())
        others = ", ".join(
            f"{status_label(s, lang)}: {len(v)}"
            for s, v in sorted(statuses.items())
            if s not in ("ok", "timeout", "tampering")
        )
        rows.append(
            f'<tr><th scope="row">{html.escape(notebook)}</th><td>{_count(report, submitted)}</td>'
            f"<td>{_count(report, report.full_marks.get(notebook, set()))}</td>"
            f"<td>{_count(report, statuses.get('timeout', set()))}</td>"
            f"<td>{_count(report, statuses.get('tampering', set()))}</td>"
            f"<td>{html.escape(others)}</td></tr>\n"
        )
    rows.append(_TABLE_END)
    return "".join(rows)


def _exercise_section(report: ClassReport, notebook: str, exercise: str, max_points: float, lang: str) -> str:
    """One exercise: its mean, its chart of scores and its named mistakes, most common first."""
    w = words(lang)
    name = exercise_name(exercise)
    values = list(report.scores[(notebook, exercise)].values())
    mean = sum(values) / len(values)
    parts = [
        f"<h4>{html.escape(name)} ({max_points:g} {w['points']})</h4>\n",
        f"<p>{w['mean']}: {mean:.2f} / {max_points:g}</p>\n",
        histogram(values, max_points, w["chart"].format(name), f"h-{exercise}", lang),
    ]
    ranked = report.ranked(exercise)
    if not ranked:
        return "".join([*parts, f"<p>{w['none']}</p>\n"])
    parts.append(f"<h5>{w['mistakes']}</h5>\n<ul>\n")
    for mistake_id, count in ranked:
        label = mistake_label(mistake_id, lang)
        text = share_sentence(report.share(count), count, len(report.students), label, lang)
        parts.append(f"<li>{html.escape(text)} <code>{html.escape(mistake_id)}</code></li>\n")
    return "".join([*parts, "</ul>\n"])


def _student_table(report: ClassReport, lang: str) -> str:
    """Every student, linked to their page, with their total points."""
    w = words(lang)
    rows = [_table_start(f"<h2>{w['student_list']}</h2>", w["caption_students"], [w["student"], w["total"]],
                         "table-students")]
    for student in report.students:
        theirs = report.by_student[student]
        link = f"students/{page_name(student, lang)}"
        rows.append(
            f'<tr><th scope="row"><a href="{html.escape(link)}">{html.escape(student)}</a></th>'
            f"<td>{sum(r.points for r in theirs):g} / {sum(r.max_points for r in theirs):g}</td></tr>\n"
        )
    rows.append(_TABLE_END)
    return "".join(rows)


def class_page(report: ClassReport, lang: str, source_name: str) -> str:
    """The class page's body: the notebooks' table, each exercise, the students' table."""
    w = words(lang)
    n_exercises = sum(len(ex) for ex in report.exercises.values())
    intro = w["intro"].format(len(report.students), len(report.exercises), n_exercises, source_name)
    body = [f"<h1>{w['title']}</h1>\n<p>{html.escape(intro)}</p>\n", _notebook_table(report, lang)]
    body.append(f"<h2>{w['exercises']}</h2>\n")
    for notebook, exercises in report.exercises.items():
        body.append(f"<h3>{html.escape(notebook)}</h3>\n")
        body += [_exercise_section(report, notebook, exercise, top, lang) for exercise, top in exercises]
    body.append(_student_table(report, lang))
    return "".join(body)


def student_page(
    report: ClassReport, student: str, lang: str, links: dict[str, str], site: str | None
) -> str:
    """One student's page: points, status, the mistakes named, the exercise's link. Never the detail."""
    w = words(lang)
    body = [_table_start(f"<h1>{w['your_title']}: {html.escape(student)}</h1>", w["caption_student"],
                         [w[k] for k in ("exercise", "points", "status", "mistake", "hints")],
                         "table-points")]
    for g in sorted(report.by_student[student], key=lambda g: (g.notebook, g.exercise)):
        status = status_label(g.status, lang)
        if lang == "en" and g.status != "ok":
            status = f"{g.status}: {STATUSES[g.status]}"
        named = "; ".join(mistake_label(m, lang) for m in mistakes.mistakes_in(g.detail))
        link = links.get(g.exercise)
        cell = (f'<a href="{html.escape(in_language(link, lang, site))}">{w["open"]} '
                f"{html.escape(exercise_name(g.exercise))}</a>" if link else "")
        body.append(
            f'<tr><th scope="row">{html.escape(exercise_name(g.exercise))}</th>'
            f"<td>{g.points:g} / {g.max_points:g}</td><td>{html.escape(status)}</td>"
            f"<td>{html.escape(named)}</td><td>{cell}</td></tr>\n"
        )
    body.append(_TABLE_END)
    return "".join(body)
