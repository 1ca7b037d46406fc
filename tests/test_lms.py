"""LMS export (``python -m tinyk.grading export``): each system's file laid out as the example
from its documentation in ``tests/fixtures/lms/`` (see its README for the sources), odd
names, and students who are not on both lists reported, never dropped."""

from __future__ import annotations

import codecs
import csv
import io
import re
from pathlib import Path

import pytest

from tinyk.grading import cli
from tinyk.reports import gradebook_schema

FIXTURES = Path(__file__).parent / "fixtures" / "lms"
ODD = 'Zoë, "Z" Ünal'
ROSTER = [["folder", "lms_id", "name", "email", "section", "first_name", "last_name"],
          [ODD, "1001", 'Ünal, Zoë "Z"', "zoe@example.org", "Sec, A", "", ""],
          ["bob", "1002", "", "bob@example.org", "B", "Bob", "Builder"],
          ["dana", "1003", "Dana", "dana@example.org", "B", "", ""]]  # dana has no grade
GRADES = [[ODD, "05_3_rope", "ex_05_3_1_test", "2", "2", "ok", ""],
          [ODD, "05_3_rope", "ex_05_3_2_test", "1.5", "3", "ok", ""],
          [ODD, "05_4_gqa", "ex_05_4_3_test", "0", "2", "missing", ""],
          ["bob", "05_3_rope", "ex_05_3_1_test", "0", "2", "timeout", ""],
          ["bob", "05_3_rope", "ex_05_3_2_test", "3", "3", "ok", ""],
          ["bob", "05_4_gqa", "ex_05_4_3_test", "2", "2", "ok", ""],
          ["eve", "05_3_rope", "ex_05_3_1_test", "2", "2", "ok", ""]]  # eve is not on the roster
NOTEBOOKS, MAXIMA = ["05_3_rope", "05_4_gqa"], ["5", "2"]
SCORES = [["3.5", "0"], ["3", "2"], ["", ""]]  # per roster row: points per notebook, dana's empty
# Where the documented examples' grade columns begin: Canvas names an assignment "title (id)";
# Moodle's export names a grade item "<type>: <name> (Real)" and ends with its own time;
# Gradescope's roster has none.
GRADE_COLUMN = {"canvas": r".+ \(\d+\)", "moodle": r".+: .+ \(Real\)|Last downloaded from this course",
                "gradescope": r"(?!)"}
ID_COLUMN = {"canvas": "ID", "moodle": "ID number", "gradescope": "Email"}  # holds the roster's lms_id
NAMES = {"canvas": ("Student", ['Ünal, Zoë "Z"', "Builder, Bob", "Dana"]),  # Canvas's sortable name
         "moodle": ("First name", ['Ünal, Zoë "Z"', "Bob", "Dana"]),
         "gradescope": ("Name", ['Ünal, Zoë "Z"', "Bob Builder", "Dana"])}
SPECIAL = re.compile("Points Possible")  # Canvas's importer takes the row whose first field matches


def _write(path, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def _layout(raw: bytes, fmt: str) -> dict:
    """What the comparison looks at: the file's rows, where its grade columns begin, which rows
    are special (not a student), and how it is written (BOM, line ends, the header's line)."""
    text = raw.decode("utf-8")  # fails on anything but UTF-8
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = rows[0]
    first = next((i for i, c in enumerate(header) if re.fullmatch(GRADE_COLUMN[fmt], c)), len(header))
    return {"rows": rows, "identity": header[:first], "first": first,
            "special": [i for i, r in enumerate(rows) if i and SPECIAL.search(r[0])],
            "bom": raw.startswith(codecs.BOM_UTF8), "crlf": raw.count(b"\n") == raw.count(b"\r\n"),
            "plain_header": text.split("\r\n", 1)[0] == ",".join(header),
            "widths": {len(r) for r in rows}}


@pytest.mark.parametrize("fmt", sorted(GRADE_COLUMN))
def test_each_file_is_laid_out_as_its_systems_documented_example(tmp_path, capsys, fmt):
    grades = _write(tmp_path / "grades.csv", [gradebook_schema.FIELDS, *GRADES])
    roster = _write(tmp_path / "roster.csv", ROSTER)
    out = tmp_path / f"{fmt}.csv"
    code = cli.main(["export", str(grades), "--format", fmt, "--roster", str(roster), "--out", str(out)])
    printed, err = capsys.readouterr()
    assert code == 1
    assert "'eve' is graded" in err and "not on the roster" in err
    assert "'dana' is on the roster but has no grade" in err
    assert "3 student(s), 2 notebook(s)" in printed
    documented, ours = _layout((FIXTURES / f"{fmt}.csv").read_bytes(), fmt), _layout(out.read_bytes(), fmt)
    # the identifying columns: the same names in the same order; then one column per notebook
    k = documented["first"]  # our notebooks' names are not the example's: its layout says where they begin
    assert documented["identity"] and ours["rows"][0] == [*documented["identity"], *NOTEBOOKS]
    assert ID_COLUMN[fmt] in documented["identity"] and NAMES[fmt][0] in documented["identity"]
    # the same special rows, in the same place, with the same identifying cells
    assert ours["special"] == documented["special"]
    for i in documented["special"]:
        assert ours["rows"][i][:k] == documented["rows"][i][:k]
        assert ours["rows"][i][k:] == MAXIMA
    # written alike: UTF-8 without a BOM, commas, CRLF, every row as wide as the header
    for key in ("bom", "crlf", "plain_header"):
        assert ours[key] == documented[key], key
    assert ours["widths"] == {len(ours["rows"][0])} and documented["widths"] == {len(documented["rows"][0])}
    # the students: every roster row, in the roster's order, identified and scored
    students = [r for i, r in enumerate(ours["rows"]) if i and i not in ours["special"]]
    header = ours["rows"][0]
    assert [r[header.index(ID_COLUMN[fmt])] for r in students] == ["1001", "1002", "1003"]
    assert [r[header.index(NAMES[fmt][0])] for r in students] == NAMES[fmt][1]
    assert [r[k:] for r in students] == SCORES
    assert b'"\xc3\x9cnal, Zo\xc3\xab ""Z"""' in out.read_bytes()  # quoted, inner quotes doubled (RFC 4180)


def test_the_comparison_fails_a_file_laid_out_otherwise():
    canvas = (FIXTURES / "canvas.csv").read_bytes()
    documented = _layout(canvas, "canvas")
    # the former Canvas file: "Points Possible" without Canvas's four spaces
    moved = _layout(canvas.replace(b"    Points Possible", b"Points Possible"), "canvas")
    assert moved["rows"][1][:moved["first"]] != documented["rows"][1][:documented["first"]]
    swapped = _layout(canvas.replace(b"Student,ID", b"ID,Student"), "canvas")
    assert swapped["identity"] != documented["identity"]
    assert not _layout(canvas.replace(b"\r\n", b"\n"), "canvas")["crlf"]
    with pytest.raises(UnicodeDecodeError):
        _layout(canvas.decode("utf-8").encode("latin-1"), "canvas")


def test_every_student_matched_exits_0(tmp_path, capsys):
    grades = _write(tmp_path / "grades.csv", [gradebook_schema.FIELDS, *GRADES[:6]])
    roster = _write(tmp_path / "roster.csv", ROSTER[:3])
    out = tmp_path / "x.csv"
    assert cli.main(["export", str(grades), "--format", "moodle", "--roster", str(roster),
                         "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("rows,message", [
    ([["folder", "name"], ["bob", "Bob"]], "the header lacks ['lms_id']"),
    ([["folder", "lms_id"], ["bob", "1"], ["bob", "2"]], "folder 'bob' is listed twice"),
    ([["folder", "lms_id"], ["bob", "1"], ["ann", "1"]], "lms_id '1' is listed twice"),
    ([["folder", "lms_id"], ["bob", ""]], "line 2: lms_id is empty"),
    ([["folder", "lms_id"], ["bob", "1", "extra"]], "line 2: not as many fields as the header"),
])
def test_a_malformed_roster_stops_with_the_line_and_the_field(tmp_path, capsys, rows, message):
    grades = _write(tmp_path / "grades.csv", [gradebook_schema.FIELDS, *GRADES])
    roster = _write(tmp_path / "roster.csv", rows)
    code = cli.main(["export", str(grades), "--format", "canvas", "--roster", str(roster),
                         "--out", str(tmp_path / "x.csv")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
