"""The class report (``python -m tinyk.grading report``) on a synthetic class with known
mistakes, statuses and odd names, and on malformed gradebooks."""

from __future__ import annotations

import csv
import re

import pytest

from tinyk.courseware.addresses import site_url
from tinyk.courseware.checkout import NOTEBOOKS, course_root
from tinyk.grading import chapter, cli
from tinyk.learner import mistakes
from tinyk.reports import gradebook_schema
from tinyk.reports import submitters as roster
from tinyk.reports.class_report import exercise_links

ODD = 'Zoë, "Z" <script>'
SECRET = "assert secret_hidden_check(x)"
ANCHOR = "exercise-05-3-2-rotate-queries-and-keys"


def _class() -> list[list[str]]:
    """40 students: in 05.3.2, 14 pair the halves, 6 crop the table, 2 make a mistake of no
    catalogue; 3 others time out in 05_3_rope; in 05_4_gqa, 10 tile the heads, 2 tamper
    and 4 submit nothing."""
    students = [ODD] + [f"s{k:02d}" for k in range(1, 40)]
    rows = []
    for k, s in enumerate(students):
        timeout = 36 <= k < 39
        mistake = ("05.3.2:half-split-pairing" if k < 14 else "05.3.2:crops-table" if k < 20
                   else "05.3.2:made-up" if k < 22 else None)
        if timeout:
            rows += [[s, "05_3_rope", g, "0", m, "timeout", "the test cell ran past the per-cell timeout"]
                     for g, m in (("ex_05_3_1_test", "2"), ("ex_05_3_2_test", "3"))]
        else:
            rows.append([s, "05_3_rope", "ex_05_3_1_test", "2", "2", "ok", ""])
            detail = f"test: AssertionError: {SECRET} (hidden tests, line 9); mistake {mistake}"
            detail = detail if mistake else ""
            rows.append([s, "05_3_rope", "ex_05_3_2_test", "0" if mistake else "3", "3", "ok", detail])
        if k < 10:
            rows.append([s, "05_4_gqa", "ex_05_4_3_test", "0", "2", "ok",
                         "test: AssertionError: contiguous groups [0, 0, 1, 1]; mistake 05.4.3:tiled-groups"])
        elif k < 12:
            rows.append([s, "05_4_gqa", "ex_05_4_3_test", "0", "2", "tampering", "assigns torch.x"])
        elif k < 16:
            rows.append([s, "05_4_gqa", "ex_05_4_3_test", "0", "2", "missing", "no 05_4_gqa.ipynb"])
        else:
            rows.append([s, "05_4_gqa", "ex_05_4_3_test", "2", "2", "ok", ""])
    return rows


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The class's gradebook, as the grader writes it, and the report made from it."""
    folder = tmp_path_factory.mktemp("report")
    with (folder / "grades.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows([gradebook_schema.FIELDS, *_class()])
    return folder


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_report_counts_each_named_mistake_as_a_share_of_the_class(report, capsys):
    code, out, err = _run(capsys, "report", str(report / "grades.csv"), "--out", str(report / "out"))
    assert code == 0, err
    half, crop = mistakes.by_id("05.3.2:half-split-pairing"), mistakes.by_id("05.3.2:crops-table")
    tiled = mistakes.by_id("05.4.3:tiled-groups")
    assert out.splitlines()[:4] == [
        f"05.3.2: 35% of the class (14 of 40): {half.en}",
        f"05.3.2: 15% of the class (6 of 40): {crop.en}",
        "05.3.2: 5% of the class (2 of 40): 05.3.2:made-up (not in this version's catalogue)",
        f"05.4.3: 25% of the class (10 of 40): {tiled.en}",
    ]
    assert "40 student(s)" in out and "80 student page(s)" in out
    with (report / "out" / "class_report.csv").open(encoding="utf-8") as f:
        table = {(r["section"], r["notebook"], r["exercise"], r["item"]): (int(r["students"]), r["share"])
                 for r in csv.DictReader(f)}
    assert table[("mistake", "05_3_rope", "ex_05_3_2_test", half.id)] == (14, "0.3500")
    assert table[("mistake", "05_4_gqa", "ex_05_4_3_test", tiled.id)] == (10, "0.2500")
    assert table[("status", "05_3_rope", "", "timeout")] == (3, "0.0750")
    assert table[("status", "05_4_gqa", "", "tampering")] == (2, "0.0500")
    assert table[("status", "05_4_gqa", "", "missing")] == (4, "0.1000")
    assert table[("status", "05_3_rope", "", "full-marks")] == (40 - 22 - 3, "0.3750")
    assert table[("score", "05_3_rope", "ex_05_3_2_test", "0")] == (25, "0.6250")
    assert table[("score", "05_3_rope", "ex_05_3_2_test", "3")] == (15, "0.3750")


def test_the_pages_are_offline_labelled_in_both_languages_and_never_quote_a_hidden_test(report, capsys):
    out = report / "pages"
    assert _run(capsys, "report", str(report / "grades.csv"), "--out", str(out))[0] == 0
    english, chinese = (out / "index.html").read_text(), (out / "index.zh.html").read_text()
    assert '<html lang="en">' in english and '<html lang="zh-CN">' in chinese
    half = mistakes.by_id("05.3.2:half-split-pairing")
    assert "35% of the class (14 of 40)" in english and f"全班 35%（40 人中 14 人）：{half.zh}" in chinese
    # the notebook table: submitted, full marks, timed out, tampering, as students (share)
    row = r"05_4_gqa</th><td>36 \(90%\)</td><td>24 \(60%\)</td><td>0 \(0%\)</td><td>2 \(5%\)"
    assert re.search(row, english)
    assert english.count("<figure>") == 3 and english.count('role="img"') == 3
    assert english.count("<figcaption>") == 3 and english.count("<caption id=") == 2
    assert english.count('role="region" tabindex="0"') == 2  # a table wider than a phone scrolls alone
    pages = sorted((out / "students").glob("*.html"))
    assert len(pages) == 80
    for page in [out / "index.html", out / "index.zh.html", *pages]:
        text = page.read_text(encoding="utf-8")
        assert SECRET not in text and "secret_hidden_check" not in text, page
        assert "<script" not in text and " src=" not in text and "<link" not in text, page  # nothing fetched
    odd = out / "students" / f"{roster.student_id(ODD)}.html"
    text = odd.read_text(encoding="utf-8")
    assert html_escaped(ODD) in text and half.en in text
    links = re.findall(r'href="([^"]+)"', text)
    assert any(link.endswith(f"notebooks/05_3_rope.html#{ANCHOR}") for link in links)
    chinese_page = out / "students" / f"{roster.student_id(ODD)}.zh.html"
    assert f"/zh/notebooks/05_3_rope.html#{ANCHOR}" in chinese_page.read_text()


def html_escaped(text: str) -> str:
    import html

    return html.escape(text)


def test_every_exercise_links_to_its_prompt_on_the_site():
    root = course_root()
    links = exercise_links(root / NOTEBOOKS, site_url(root))
    tests = {gid for path in (root / NOTEBOOKS).glob("*.ipynb") for gid, _ in chapter.exercises_of(path)}
    assert set(links) == tests
    assert links["ex_05_3_2_test"] == f"{site_url(root)}notebooks/05_3_rope.html#{ANCHOR}"


@pytest.mark.parametrize("text,message", [
    ("", "is empty: expected the header"),
    ("student,notebook,points,max_points,status,detail\n", "lacks the column(s) ['exercise']"),
    ("student,notebook,exercise,points,max_points,status,detail\n", "has a header but no row"),
    ("student,notebook,exercise,points,max_points,status,detail\na,nb,ex,two,3,ok,\n",
     "line 2: points 'two' must be a number >= 0"),
    ("student,notebook,exercise,points,max_points,status,detail\na,nb,ex,nan,3,ok,\n", "points 'nan'"),
    ("student,notebook,exercise,points,max_points,status,detail\na,nb,ex,4,3,ok,\n",
     "points 4 is more than max_points 3"),
    ("student,notebook,exercise,points,max_points,status,detail\na,nb,ex,1,3,great,\n", "status 'great'"),
    ("student,notebook,exercise,points,max_points,status,detail\na,nb,ex,1,3,ok,x,y\n",
     "line 2: 8 field(s), the header has 7"),
    ("student,notebook,exercise,points,max_points,status,detail\n,nb,ex,1,3,ok,\n",
     "line 2: student is empty"),
])
def test_a_malformed_gradebook_stops_with_the_line_the_field_and_the_rule(tmp_path, capsys, text, message):
    (tmp_path / "grades.csv").write_text(text, encoding="utf-8")
    code, _, err = _run(capsys, "report", str(tmp_path / "grades.csv"), "--out", str(tmp_path / "out"))
    assert code == 2 and message in err, err
    assert not (tmp_path / "out" / "index.html").exists()
