"""LMS export (``python -m tinyk.grading export``): each system's columns, odd names, and
students who are not on both lists reported, never dropped."""

from __future__ import annotations

import csv

import pytest

from tinyk import grading

ODD = 'Zoë, "Z" Ünal'
ROSTER = [["folder", "lms_id", "name", "email", "section"],
          [ODD, "1001", 'Ünal, Zoë "Z"', "zoe@example.org", "Sec, A"],
          ["bob", "1002", "Bob", "bob@example.org", "B"],
          ["dana", "1003", "Dana", "dana@example.org", "B"]]  # dana has no grade
GRADES = [[ODD, "05_3_rope", "ex_05_3_1_test", "2", "2", "ok", ""],
          [ODD, "05_3_rope", "ex_05_3_2_test", "1.5", "3", "ok", ""],
          [ODD, "05_4_gqa", "ex_05_4_3_test", "0", "2", "missing", ""],
          ["bob", "05_3_rope", "ex_05_3_1_test", "0", "2", "timeout", ""],
          ["bob", "05_3_rope", "ex_05_3_2_test", "3", "3", "ok", ""],
          ["bob", "05_4_gqa", "ex_05_4_3_test", "2", "2", "ok", ""],
          ["eve", "05_3_rope", "ex_05_3_1_test", "2", "2", "ok", ""]]  # eve is not on the roster
# Header and the student rows per format, from the systems' documentation (see tinyk.lms).
EXPECTED = {
    "canvas": [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "05_3_rope", "05_4_gqa"],
               ["Points Possible", "", "", "", "", "5", "2"],
               ['Ünal, Zoë "Z"', "1001", "", "", "Sec, A", "3.5", "0"],
               ["Bob", "1002", "", "", "B", "3", "2"],
               ["Dana", "1003", "", "", "B", "", ""]],
    "moodle": [["ID number", "Email address", "Full name", "05_3_rope", "05_4_gqa"],
               ["1001", "zoe@example.org", 'Ünal, Zoë "Z"', "3.5", "0"],
               ["1002", "bob@example.org", "Bob", "3", "2"],
               ["1003", "dana@example.org", "Dana", "", ""]],
    "gradescope": [["Name", "Email", "SID", "05_3_rope", "05_4_gqa"],
                   ['Ünal, Zoë "Z"', "1001", "", "3.5", "0"],
                   ["Bob", "1002", "", "3", "2"],
                   ["Dana", "1003", "", "", ""]],
}


def _write(path, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_each_format_has_its_documented_columns_and_reports_who_is_not_on_both_lists(tmp_path, capsys, fmt):
    grades = _write(tmp_path / "grades.csv", [grading.FIELDS, *GRADES])
    roster = _write(tmp_path / "roster.csv", ROSTER)
    out = tmp_path / f"{fmt}.csv"
    code = grading.main(["export", str(grades), "--format", fmt, "--roster", str(roster), "--out", str(out)])
    printed, err = capsys.readouterr()
    assert code == 1
    assert "'eve' is graded" in err and "not on the roster" in err
    assert "'dana' is on the roster but has no grade" in err
    assert "3 student(s), 2 notebook(s)" in printed
    raw = out.read_bytes()
    assert raw.decode("utf-8")  # UTF-8, the odd name intact
    with out.open(newline="", encoding="utf-8") as f:
        assert list(csv.reader(f)) == EXPECTED[fmt]
    assert b'"\xc3\x9cnal, Zo\xc3\xab ""Z"""' in raw  # quoted, inner quotes doubled (RFC 4180)


def test_every_student_matched_exits_0(tmp_path, capsys):
    grades = _write(tmp_path / "grades.csv", [grading.FIELDS, *GRADES[:6]])
    roster = _write(tmp_path / "roster.csv", ROSTER[:3])
    out = tmp_path / "x.csv"
    assert grading.main(["export", str(grades), "--format", "moodle", "--roster", str(roster),
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
    grades = _write(tmp_path / "grades.csv", [grading.FIELDS, *GRADES])
    roster = _write(tmp_path / "roster.csv", rows)
    code = grading.main(["export", str(grades), "--format", "canvas", "--roster", str(roster),
                         "--out", str(tmp_path / "x.csv")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
