"""The instructors' page walks through one class (section "One class, start to finish"): the
example class in ``examples/class/`` is what ``tests/example_class.py`` writes, and each
command of the section, run on it as the page shows it, prints what the page shows, writes
the files it shows and makes every number of the section true.

The class is graded once (one real chapter notebook, five students, in the sandbox), and
once more after the edit the page shows, which regrades one exercise outside the kernel.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import example_class
from tinyk.courseware.checkout import NOTEBOOKS, ROOT, STUDENTS, ZH
from tinyk.courseware.exercises import BEGIN_HIDDEN, nbgrader, source_text
from tinyk.grading import batch as class_batch
from tinyk.grading import cli
from tinyk.grading.cli import parser
from tinyk.grading.regrade import REGRADED
from tinyk.learner import mistakes

pytestmark = pytest.mark.xdist_group("example-class")  # one worker grades the class, once
SLOW = pytest.mark.slow  # one chapter notebook graded for five students, in the sandbox

PAGE = ROOT / "book" / "instructors.md"
HEADING = "## One class, start to finish"
# The section's code blocks, in order: each command, then what it prints; after the grade,
# a row of grades.csv; after the export, canvas.csv; before the last grade, the edited line.
LAYOUT = ["bash", "bash", "text", "text", "bash", "text", "bash", "text", "text", "bash", "text", "python",
          "bash", "text"]
# the last grade: after the edit
COMMANDS = ["release", "grade", "report", "export", "similarity", "grade"]
# Release is not run here: it runs nbgrader's generate_assignment, as grading does, and
# test_grading.py releases every chapter notebook and checks that no hidden test is left.
RUN = COMMANDS[1:]
EXIT_STATUS = {"export": 1}  # the page says so: two students are not on both lists
TEST_CELL = "ex_05_3_4_test"
PROGRESS = re.compile(r"^grading: +\d+%\|")
PAIR = re.compile(r"^(\S+): (\S+) and (\S+): (\d+)% and (\d+)%$")


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(HEADING) == 1, f"{PAGE}: expected one {HEADING!r}"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def _blocks() -> list[tuple[str, str]]:
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", _section(), re.M | re.S)
    assert [lang for lang, _ in blocks] == LAYOUT, "the section's code blocks changed: update LAYOUT"
    return blocks


def _run(command: str, *before: str) -> tuple[int, list[str]]:
    """Run a ``tinyk`` grading line of the page (``before``: options put ahead of its command);
    its exit status, and the lines it printed on stdout and stderr, in the order printed,
    without the progress bar."""
    argv = shlex.split(command)
    assert argv[0] == "tinyk", command
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = cli.main([*before, *argv[1:]])
    return code, [line for line in re.split(r"[\r\n]+", said.getvalue()) if line and not PROGRESS.match(line)]


def _rows(text: str) -> dict[tuple[str, str], dict]:
    """A gradebook's rows by (student, exercise)."""
    return {(r["student"], r["exercise"]): r for r in csv.DictReader(io.StringIO(text))}


def _edited_checkout(base: Path, line: str) -> Path:
    """A copy of the checkout's 05.3 sources (the English and the Chinese student version, for
    what the grader reads of a checkout) with the line of 05.3.4's hidden tests that starts as
    the page's ``line`` replaced by it; returns its notebooks folder."""
    course = base / "course"
    for path in (Path("_config.yml"), Path(STUDENTS) / ZH / f"{example_class.NOTEBOOK}.ipynb"):
        (course / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, course / path)
    source = ROOT / NOTEBOOKS / f"{example_class.NOTEBOOK}.ipynb"
    nb = json.loads(source.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if nbgrader(c).get("grade_id") == TEST_CELL)
    start = line.split(" in ")[0]
    lines = source_text(cell).splitlines(keepends=True)
    hidden = next(i for i, text in enumerate(lines) if text.strip() == BEGIN_HIDDEN)
    found = [i for i, text in enumerate(lines) if text.strip().startswith(start)]
    assert len(found) == 1 and found[0] > hidden, f"one line of {TEST_CELL}'s hidden tests starts {start!r}"
    old = lines[found[0]]
    assert old.strip() != line.strip(), "the page's line is the test's line already"
    lines[found[0]] = old[: len(old) - len(old.lstrip())] + line.strip() + "\n"
    cell["source"] = lines
    (course / NOTEBOOKS).mkdir()
    (course / NOTEBOOKS / source.name).write_text(json.dumps(nb), encoding="utf-8")
    return course / NOTEBOOKS


@dataclass
class Walkthrough:
    """What the section's commands did: the folder they ran in, each command (but the
    release), its exit status and printed lines, the gradebook after the first grade, and
    the students graded in full by the first grade and by the last."""

    work: Path
    commands: list[str]
    printed: list[tuple[int, list[str]]]
    first: str
    graded: tuple[list[str], list[str]]


@pytest.fixture(scope="session")
def walkthrough(tmp_path_factory) -> Walkthrough:
    """The section's commands, run in order in an empty folder that sees the checkout's
    ``examples/``, the second grade after the page's edit."""
    base = tmp_path_factory.mktemp("walkthrough")
    work = base / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    blocks = _blocks()
    commands = [text.strip() for lang, text in blocks if lang == "bash"][1:]
    edited = _edited_checkout(base, next(text for lang, text in blocks if lang == "python"))
    printed, graded, first = [], ([], []), ""
    real = class_batch.grade_answers
    here = Path.cwd()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(class_batch, "grade_answers",
                      lambda name, *a: graded[bool(first)].append(name) or real(name, *a))
        os.chdir(work)
        try:
            for k, command in enumerate(commands):
                regrade = command in commands[:k]  # the same grade, after the edit
                if regrade:
                    first = (work / "grades.csv").read_text(encoding="utf-8")
                printed.append(_run(command, *(["--source", str(edited)] if regrade else [])))
        finally:
            os.chdir(here)
    return Walkthrough(work, commands, printed, first, graded)


def test_the_example_class_is_what_its_module_writes():
    assert example_class.stale() == [], f"examples/class/ is stale: run {example_class.RUN}"


def test_the_example_class_is_five_folders_a_roster_and_one_notebook():
    folder = ROOT / example_class.FOLDER
    students = sorted(p.name for p in (folder / "submissions").iterdir())
    assert students == ["ada", "ben", "cleo", "dan", "eve"]
    for student in students:
        assert [p.name for p in (folder / "submissions" / student).iterdir()] == ["05_3_rope.ipynb"]
    with (folder / "roster.csv").open(encoding="utf-8") as f:
        assert [r["folder"] for r in csv.DictReader(f)] == ["ada", "ben", "cleo", "dan", "fay"]
    # the wrong answers are the exercise tests', which make the mistakes the page names
    written = example_class.answers()
    for student, mistake in (("ben", "05.3.2:half-split-pairing"), ("dan", "05.3.4:rows-restart-at-0")):
        grade_id, code = example_class.mistake_case(mistake)
        assert written[student] == {grade_id: code} and mistakes.by_id(mistake)
        assert f"`{mistake.split(':')[1]}`" in _section()


@SLOW
def test_each_command_prints_what_the_page_shows(walkthrough):
    assert [shlex.split(c)[1] for c in walkthrough.commands] == RUN
    shown = [text.strip().splitlines() for lang, text in _blocks() if lang == "text"]
    outputs = [shown[0], shown[2], shown[3], shown[5], shown[6]]  # a command's, not a file's
    assert len(walkthrough.commands) == len(walkthrough.printed) == len(outputs) == len(RUN)
    for command, (code, lines), expected in zip(walkthrough.commands, walkthrough.printed, outputs,
                                                strict=True):
        assert code == EXIT_STATUS.get(shlex.split(command)[1], 0), (command, lines)
        if shlex.split(command)[1] == "similarity":  # which of a pair comes first is copydetect's order
            lines, expected = sorted(map(_unordered, lines)), sorted(map(_unordered, expected))
        assert lines == expected, command


def _unordered(line: str) -> tuple:
    match = PAIR.match(line)
    if not match:
        return (line,)
    exercise, a, b, share_a, share_b = match.groups()
    return (exercise, *sorted([(a, share_a), (b, share_b)]))


def test_the_release_command_names_a_chapter_notebook():
    release = next(text for lang, text in _blocks() if lang == "bash")
    argv = shlex.split(release)
    assert argv[0] == "tinyk", release
    args = parser("tinyk").parse_args(argv[1:])
    assert args.command == "release" and args.notebook == [example_class.NOTEBOOK]
    assert (ROOT / NOTEBOOKS / f"{example_class.NOTEBOOK}.ipynb").is_file()


def _table() -> list[list[str]]:
    """The section's table of points: its header's cells, then each student's."""
    lines = _section().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| student |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    rows = [lines[start], *lines[start + 2 : end]]  # the header, not the |---| line under it
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _named(row: dict) -> str:
    """What the page's table names of a gradebook row: its status, unless it is ``ok``; then
    the name of the mistake its detail ends with, if any."""
    mistake = re.search(r"; mistake [\d.]+:(\S+)$", row["detail"])
    return row["status"] if row["status"] != "ok" else mistake.group(1) if mistake else ""


@SLOW
def test_grades_csv_holds_the_pages_points_mistakes_and_statuses(walkthrough):
    rows = _rows(walkthrough.first)
    header, *students = _table()
    exercises = [f"ex_{number.replace('.', '_')}_test" for number in header[1:]]
    assert len(rows) == 20 == len(students) * len(exercises)  # "20 row(s)"
    assert [rows["ada", e]["max_points"] for e in exercises] == ["2", "3", "2", "2"]  # "out of 2, 3, 2 and 2"
    shown = {(student, exercise): (cell.partition(", ")[0], cell.partition(", ")[2].strip("`"))
             for student, *cells in students for exercise, cell in zip(exercises, cells, strict=True)}
    assert {key: (row["points"], _named(row)) for key, row in rows.items()} == shown
    # "An exercise left as released scores 0 with the status ok, its detail naming the
    # NotImplementedError": ben's, cleo's and dan's three each
    left = [row for row in rows.values() if (row["status"], row["points"], _named(row)) == ("ok", "0", "")]
    assert len(left) == 9 and all("NotImplementedError" in row["detail"] for row in left)
    assert {rows["eve", e]["detail"] for e in exercises} == {"assigns math.isclose"}
    shown_row = [text.strip() for lang, text in _blocks() if lang == "text"][1]
    assert shown_row in walkthrough.first.splitlines()


@SLOW
def test_the_report_exports_and_similarity_say_what_the_page_says(walkthrough):
    work, printed = walkthrough.work, walkthrough.printed
    page = (work / "report" / "index.html").read_text(encoding="utf-8")
    # "5 students who submitted (100%), 1 with full marks (20%), none timed out and 1 tampering (20%)"
    row = r"05_3_rope</th><td>5 \(100%\)</td><td>1 \(20%\)</td><td>0 \(0%\)</td><td>1 \(20%\)</td>"
    assert re.search(row, page)
    assert page.count("<figure>") == 4  # a chart per exercise
    canvas = [text.strip().splitlines() for lang, text in _blocks() if lang == "text"][4]
    assert (work / "canvas.csv").read_text(encoding="utf-8").splitlines() == canvas
    pairs = [PAIR.match(line).groups() for line in printed[RUN.index("similarity")][1] if PAIR.match(line)]
    ada = [int(s) for _, a, b, *shares in pairs if "ada" in (a, b) for s in shares]
    assert ada and all(65 <= s <= 75 for s in ada)  # "about 70%"
    above = [{a, b} for _, a, b, share_a, share_b in pairs if max(int(share_a), int(share_b)) >= 90]
    assert above == [{"ben", "cleo"}]  # what --threshold 0.9 would list


@SLOW
def test_the_edited_test_regrades_only_its_exercise(walkthrough):
    in_full, again = walkthrough.graded
    assert sorted(in_full) == ["ada", "ben", "cleo", "dan", "eve"]
    assert again == [], "no student graded again in full"
    before = _rows(walkthrough.first)
    after = _rows((walkthrough.work / "grades.csv").read_text(encoding="utf-8"))
    assert before.keys() == after.keys()
    # only the 05.3.4 rows of the students graded normally changed: the same points, marked
    changed = {key for key in after if after[key] != before[key]}
    assert changed == {(student, TEST_CELL) for student in ("ada", "ben", "cleo", "dan")}
    assert all(after[k]["points"] == before[k]["points"] for k in changed)
    assert all(after[k]["detail"].endswith(REGRADED) for k in changed)
    assert after["eve", TEST_CELL]["status"] == "tampering"
