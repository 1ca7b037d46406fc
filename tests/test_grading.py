"""The instructors' command against a batch of hostile submissions made here.

A small assignment in the course's exercise format keeps the batch fast. A real chapter
notebook is graded end to end on the instructors' page's example class
(``tests/test_example_class.py``).
"""

from __future__ import annotations

import csv
import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import processes_left
from tests.optional import need
from tinyk.courseware.checkout import ROOT, notebook_paths
from tinyk.courseware.exercises import BEGIN_HIDDEN, END_HIDDEN, book_version, nbgrader, source_text
from tinyk.grading import assignment as grading_assignment
from tinyk.grading import batch as class_batch
from tinyk.grading import batch as grading_batch
from tinyk.grading import cli, runner, student_feedback
from tinyk.reports import gradebook_schema

# The tests that share the prepared assignment and graded batch run on one xdist worker
# (make's `--dist loadgroup`), so the batch is graded once, not once per worker. The
# fixtures are session-scoped: a worker that runs another module's test in between keeps
# them (a module-scoped fixture was torn down there and graded the batch a second time).
SHARED_BATCH = pytest.mark.xdist_group("grading-batch")
pytestmark = pytest.mark.slow  # the verdict starts a learner's process per student

SOLUTION_A = "def double(x):\n    return 2 * x"
SOLUTION_B = "def shout(word):\n    return word.upper() + '!'"


def _cell(kind: str, source: str, meta: dict | None = None) -> dict:
    cell = {"cell_type": kind, "metadata": meta or {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _drill() -> dict:
    """Two exercises: a solution cell and a test cell (visible + hidden) each."""
    def solution(gid: str, body: str) -> dict:
        return _cell("code", f"### BEGIN SOLUTION\n{body}\n### END SOLUTION",
                     {"nbgrader": {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3,
                                   "solution": True}, "cellView": "form"})

    def test(gid: str, points: int, visible: str, hidden: str) -> dict:
        return _cell("code", f"{visible}\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS",
                     {"nbgrader": {"grade": True, "grade_id": gid, "locked": True, "points": points,
                                   "schema_version": 3, "solution": False}})

    cells = [
        _cell("markdown", "# Drill\n\nExercise A: write `double(x)`."),
        solution("a_solution", SOLUTION_A),
        test("a_test", 2, "got = double(2)\nassert type(got) is int and got == 4",
             "for x in (5, -3, 0):\n    got = double(x)\n    assert type(got) is int and got == 2 * x"),
        _cell("markdown", "Exercise B: write `shout(word)`."),
        solution("b_solution", SOLUTION_B),
        test("b_test", 1, "got = shout('hi')\nassert type(got) is str and got == 'HI!'",
             "assert shout('ok') == 'OK!' and type(shout('')) is str"),
    ]
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def _answer(release: dict, a: str | None = None, b: str | None = None, edit=None) -> dict:
    """A student's copy of the release with answers put into the solution cells."""
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        gid = nbgrader(cell).get("grade_id")
        if gid == "a_solution" and a is not None:
            cell["source"] = a
        if gid == "b_solution" and b is not None:
            cell["source"] = b
    if edit:
        edit(nb)
    return nb


def _replace_test(grade_id: str, source: str):
    def edit(nb):
        for cell in nb["cells"]:
            if nbgrader(cell).get("grade_id") == grade_id:
                cell["source"] = source
    return edit


def _delete_test(grade_id: str):
    def edit(nb):
        nb["cells"] = [c for c in nb["cells"] if nbgrader(c).get("grade_id") != grade_id]
    return edit


def _cell_of(nb: dict, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if nbgrader(c).get("grade_id") == grade_id)


def _set_meta(grade_id: str, **meta):
    def edit(nb):
        nb["cells"][_cell_of(nb, grade_id)]["metadata"]["nbgrader"].update(meta)
    return edit


def _duplicate_test(grade_id: str):
    def edit(nb):
        i = _cell_of(nb, grade_id)
        copy = json.loads(json.dumps(nb["cells"][i]))
        copy["source"], copy["id"] = "pass", "a-copy"
        nb["cells"].insert(i + 1, copy)
    return edit


def _move_before(grade_id: str, other: str):
    def edit(nb):
        cell = nb["cells"].pop(_cell_of(nb, grade_id))
        nb["cells"].insert(_cell_of(nb, other), cell)
    return edit


def _retype(grade_id: str):
    def edit(nb):
        cell = nb["cells"][_cell_of(nb, grade_id)]
        cell.update(cell_type="markdown", source="pass")
        del cell["outputs"], cell["execution_count"]
    return edit


def _edits(*edits):
    def edit(nb):
        for one in edits:
            one(nb)
    return edit


WARNS = ("import sys, warnings\nwarnings.warn('from the answer cell')\n"
         "def double(x):\n    warnings.warn('from the call')\n    print('a note', file=sys.stderr)\n"
         "    return 2 * x")

FOOLS_THE_KERNEL = ("import ast\nclass NoAsserts(ast.NodeTransformer):\n"
                    "    def visit_Assert(self, node):\n        return ast.Pass()\n"
                    "get_ipython().ast_transformers.append(NoAsserts())\n"
                    "def double(x):\n    return 0")

# student -> (submission maker, expected {exercise: (points, status)})
CASES = {
    "solution": (lambda r: _answer(r, SOLUTION_A, SOLUTION_B), {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "untouched_release": (lambda r: r, {"a_test": (0, "ok"), "b_test": (0, "ok")}),
    "correct_other_code": (lambda r: _answer(r, "def double(x):\n    return x + x",
                                             "def shout(w):\n    return f'{w.upper()}!'"),
                           {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "wrong_answer": (lambda r: _answer(r, "def double(x):\n    return 3 * x", SOLUTION_B),
                     {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    "hard_coded": (lambda r: _answer(r, "def double(x):\n    return 4", SOLUTION_B),
                   {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    "edited_test": (lambda r: _answer(r, "def double(x):\n    return 0", SOLUTION_B,
                                      _replace_test("a_test", "pass")),
                    {"a_test": (0, "tests-modified"), "b_test": (1, "tests-modified")}),
    "deleted_test": (lambda r: _answer(r, SOLUTION_A, SOLUTION_B, _delete_test("b_test")),
                     {"a_test": (2, "tests-modified"), "b_test": (1, "tests-modified")}),
    "exception": (lambda r: _answer(r, "def double(x):\n    raise ValueError('no')", SOLUTION_B),
                  {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    "sys_exit": (lambda r: _answer(r, "import sys\nsys.exit(3)", SOLUTION_B),
                 {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    "os_exit": (lambda r: _answer(r, "import os\nos._exit(1)", SOLUTION_B),
                {"a_test": (0, "kernel-died"), "b_test": (0, "kernel-died")}),
    "infinite_loop": (lambda r: _answer(r, "while True:\n    pass", SOLUTION_B),
                      {"a_test": (0, "timeout"), "b_test": (1, "ok")}),
    "memory_bomb": (lambda r: _answer(r, "hog = bytearray(64 * 2**30)", SOLUTION_B),
                    {"a_test": (0, "memory-limit"), "b_test": (1, "ok")}),
    "memory_in_the_tests_call": (lambda r: _answer(r, "def double(x):\n    return bytearray(64 * 2**30)",
                                                   SOLUTION_B),
                                 {"a_test": (0, "memory-limit"), "b_test": (1, "ok")}),
    "modified_and_memory": (lambda r: _answer(r, "hog = bytearray(64 * 2**30)", SOLUTION_B,
                                              _replace_test("b_test", "pass")),
                            {"a_test": (0, "memory-limit"), "b_test": (1, "tests-modified")}),
    "huge_output": (lambda r: _answer(r, "for i in range(20_000):\n    print('x' * 100)\n" + SOLUTION_A,
                                      SOLUTION_B), {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    # 200 MiB printed, half of it written to the process's file descriptor: the cell keeps its
    # first 4 MiB (tinyk.grading.cell_outputs), the learner's stderr its first 64 KiB
    # (tinyk.grading.answer_server); the honest answer keeps its points
    "print_flood": (lambda r: _answer(r, "import os\nchunk = 'x' * 2**20\nfor i in range(100):\n"
                                         "    print(chunk)\n    os.write(1, chunk.encode())\n" + SOLUTION_A,
                                      SOLUTION_B), {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "eq_always_true": (lambda r: _answer(r, "class Liar:\n    def __eq__(self, other):\n        return True\n"
                                            "def double(x):\n    return Liar()", SOLUTION_B),
                       {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    "monkeypatch": (lambda r: _answer(r, "import builtins\nbuiltins.type = lambda x: int\n"
                                         "def double(x):\n    return 4", SOLUTION_B),
                    {"a_test": (0, "tampering"), "b_test": (0, "tampering")}),
    "warns": (lambda r: _answer(r, WARNS, SOLUTION_B), {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    # fools the kernel (every later assert becomes `pass`), not the verdict outside it
    "ast_transformer": (lambda r: _answer(r, FOOLS_THE_KERNEL, SOLUTION_B),
                        {"a_test": (0, "ok"), "b_test": (1, "ok")}),
    # nothing of the submission decides what is locked, graded or worth points
    "locked_answer": (lambda r: _answer(r, "import builtins\nbuiltins.type = lambda x: int\n"
                                           "def double(x):\n    return 4", SOLUTION_B,
                                        _set_meta("a_solution", locked=True)),
                      {"a_test": (0, "tampering"), "b_test": (0, "tampering")}),
    "duplicated_test": (lambda r: _answer(r, SOLUTION_A, SOLUTION_B, _duplicate_test("a_test")),
                        {"a_test": (2, "tests-modified"), "b_test": (1, "tests-modified")}),
    "moved_test": (lambda r: _answer(r, SOLUTION_A, SOLUTION_B, _move_before("a_test", "a_solution")),
                   {"a_test": (2, "tests-modified"), "b_test": (1, "tests-modified")}),
    "retyped_test": (lambda r: _answer(r, "def double(x):\n    return 0", SOLUTION_B, _retype("a_test")),
                     {"a_test": (0, "tests-modified"), "b_test": (1, "tests-modified")}),
    "more_points": (lambda r: _answer(r, "def double(x):\n    return 0", SOLUTION_B,
                                      _edits(_set_meta("b_test", points=100),
                                             _set_meta("a_test", locked=False, grade=False))),
                    {"a_test": (0, "tests-modified"), "b_test": (1, "tests-modified")}),
}
def _own_cell_before(grade_id: str, source: str):
    """A code cell of the student's own (no nbgrader metadata) put before ``grade_id``'s cell."""
    def edit(nb):
        nb["cells"].insert(_cell_of(nb, grade_id), {**_cell("code", source), "id": "own-cell"})
    return edit


# Notebook code as students write it, which runs in Jupyter and passes the visible test there:
# each keeps its points (the verdict runs the notebook's cells as a kernel does).
CASES.update({
    "earlier_import": (lambda r: _answer(r, "def double(x):\n    return int(math.fsum([x, x]))",
                                         SOLUTION_B, _own_cell_before("a_solution", "import math")),
                       {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "own_helper_cell": (lambda r: _answer(r, "def double(x):\n    return twice(x)", SOLUTION_B,
                                          _own_cell_before("a_solution", "def twice(x):\n    return x + x")),
                        {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "def_inside_try": (lambda r: _answer(r, "try:\n    def double(x):\n        return 2 * x\n"
                                            "except Exception as err:\n    print(err)", SOLUTION_B),
                       {"a_test": (2, "ok"), "b_test": (1, "ok")}),
    "magic_line": (lambda r: _answer(r, "%matplotlib inline\n" + SOLUTION_A, SOLUTION_B),
                   {"a_test": (2, "ok"), "b_test": (1, "ok")}),
})
# Two names that differ only in an accent are two students, each with full marks.
CASES.update({name: CASES["solution"] for name in ("jos\u00e9", "jos\u00e8")})
RAW = {"not_json": b"{ this is not a notebook", "empty_file": b""}


@pytest.fixture(scope="session")
def assignment(tmp_path_factory):
    base = tmp_path_factory.mktemp("course")
    source = base / "source"
    source.mkdir()
    (source / "drill.ipynb").write_text(json.dumps(_drill()))
    notebooks = [source / "drill.ipynb"]
    release_dir = base / "release"
    grading_assignment.release(release_dir, notebooks)
    return base, notebooks, json.loads((release_dir / "drill.ipynb").read_text())


@pytest.fixture(scope="session")
def batch(assignment):
    base, notebooks, release = assignment
    subs = base / "submissions"
    subs.mkdir()
    for student, (make, _) in CASES.items():
        (subs / student).mkdir()
        (subs / student / "drill.ipynb").write_text(json.dumps(make(release)))
    for student, data in RAW.items():
        (subs / student).mkdir()
        (subs / student / "drill.ipynb").write_bytes(data)
    (subs / "no_file").mkdir()
    shutil.copy(subs / "solution" / "drill.ipynb", subs / "single_file.ipynb")  # a file, not a folder
    # Margins of 10x and more over what an honest submission needs, so that a slow or busy
    # machine changes no status: huge_output's 20,000 printed lines (2 MB), the slowest
    # honest cell, take about a fifth of a second (the per-cell timeout, which ends the
    # infinite loop, is 5 s: the loop keeps a core busy that long); a student needs seconds,
    # not the 600 s total; the drill's kernel peaks near 800 MB of address space, the limit
    # is 16 GB, and the memory bomb asks for 64 GB.
    limits = runner.Limits(cell_timeout=5, total_timeout=600, memory_mb=16384)
    start = time.monotonic()
    rows = grading_batch.grade(subs, base / "grades.csv", notebooks, limits=limits, jobs=2, progress=False)
    return base, subs, notebooks, limits, rows, time.monotonic() - start


def _table(path: Path) -> dict[tuple[str, str], dict]:
    with path.open() as f:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}


@SHARED_BATCH
def test_release_removes_solutions_and_hidden_tests(assignment):
    _, _, release = assignment
    text = "\n".join(source_text(c) for c in release["cells"])
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "2 * x" not in text
    assert "raise NotImplementedError()" in text


@SHARED_BATCH
@pytest.mark.parametrize("student", sorted(CASES))
def test_each_submission_gets_its_points_and_status(batch, student):
    base, *_ = batch
    table = _table(base / "grades.csv")
    for exercise, (points, status) in CASES[student][1].items():
        row = table[(student, exercise)]
        assert (float(row["points"]), row["status"]) == (points, status), row


@SHARED_BATCH
def test_a_cheat_that_fools_the_kernel_scores_0_and_says_why(batch):
    """The kernel's own run of the ast_transformer student passes exercise A (its asserts are
    gone); the verdict, whose test cells run outside the student's IPython (its transformer
    acts on the student's own cells only), gives 0 and the reason."""
    base, *_ = batch
    row = _table(base / "grades.csv")[("ast_transformer", "a_test")]
    assert float(row["points"]) == 0 and row["status"] == "ok"
    assert row["detail"] == "graded outside the notebook: test: AssertionError: ", row["detail"]


@SHARED_BATCH
def test_unreadable_missing_and_single_file_submissions(batch):
    base, *_ = batch
    table = _table(base / "grades.csv")
    for student in RAW:
        assert table[(student, "a_test")]["status"] == "unreadable"
        assert float(table[(student, "a_test")]["points"]) == 0
    assert table[("no_file", "b_test")]["status"] == "missing"
    assert float(table[("single_file", "a_test")]["points"]) == 2


@SHARED_BATCH
def test_every_student_gets_every_row_within_the_limits(batch):
    base, subs, _, limits, _, seconds = batch
    students = {p.stem if p.is_file() else p.name for p in subs.iterdir()}
    table = _table(base / "grades.csv")
    assert {s for s, _ in table} == students
    assert len(table) == 2 * len(students)  # one row per student and exercise, none lost or doubled
    assert all(r["max_points"] in ("2", "1") for r in table.values())
    assert all(r["status"] in gradebook_schema.STATUSES for r in table.values())
    lost = [r for r in table.values() if float(r["points"]) < float(r["max_points"])]
    assert lost and all(r["detail"] for r in lost), [r for r in lost if not r["detail"]]  # each says why
    # each student is bounded by total_timeout; two at a time
    assert seconds < limits.total_timeout * len(students) / 2
    print(f"graded {len(students)} submissions in {seconds:.1f} s")


@SHARED_BATCH
def test_rerun_resumes_and_reproduces_the_gradebook(batch, monkeypatch):
    base, subs, notebooks, limits, _, _ = batch
    out = base / "grades.csv"
    first = out.read_text()
    (base / "grades.csv.parts" / "wrong_answer.json").unlink()  # as if interrupted before it finished
    out.unlink()
    graded = []
    real = class_batch.grade_answers
    monkeypatch.setattr(class_batch, "grade_answers", lambda name, *a: graded.append(name) or real(name, *a))
    grading_batch.grade(subs, out, notebooks, limits=limits, jobs=2, progress=False)
    assert out.read_text() == first
    assert graded == ["wrong_answer"]  # only the missing student was graded again
    assert {s for s, _ in _table(out)} >= {"jos\u00e9", "jos\u00e8"}  # neither overwrote the other
    assert not list(base.glob(".grades.csv.tmp"))


@SHARED_BATCH
def test_an_edited_test_regrades_only_its_exercise(batch, tmp_path, monkeypatch, capsys):
    """After the grading, a hidden test of exercise B gets stricter: the rerun judges B again
    outside the kernel for each student (no kernel runs), keeps A's rows as they were, and
    says what it regraded. An edit anywhere else (a point value, prose, code: the part's base
    digest) grades in full again."""
    from tinyk.grading.regrade import REGRADED, changed_tests

    base, subs, notebooks, limits, _, _ = batch
    source = tmp_path / "source" / "drill.ipynb"  # a copy of the batch's course and two of its students
    source.parent.mkdir()
    shutil.copy(notebooks[0], source)
    mine, parts = tmp_path / "subs", tmp_path / "grades.csv.parts"
    parts.mkdir()
    for name in ("solution", "wrong_answer"):
        shutil.copytree(subs / name, mine / name)
        shutil.copy(base / "grades.csv.parts" / f"{name}.json", parts)
    out = tmp_path / "grades.csv"
    graded = []
    monkeypatch.setattr(class_batch, "grade_answers", lambda name, *a: graded.append(name))
    grading_batch.grade(mine, out, [source], limits=limits, jobs=2, progress=False)
    assert graded == [], "the copied students are graded already"
    before = _table(out)
    assert {k: v["points"] for k, v in before.items()} == {
        ("solution", "a_test"): "2", ("solution", "b_test"): "1", ("wrong_answer", "a_test"): "0",
        ("wrong_answer", "b_test"): "1"}

    nb = json.loads(source.read_text())
    test = next(c for c in nb["cells"] if nbgrader(c).get("grade_id") == "b_test")
    stricter = "assert shout('a') == 'A!!'\nassert shout('ok')"
    test["source"] = source_text(test).replace("assert shout('ok')", stricter)
    source.write_text(json.dumps(nb))
    grading_batch.grade(mine, out, [source], limits=limits, jobs=2, progress=False)
    after = _table(out)
    assert graded == [], "no student graded in full"
    assert "regraded 2 student(s) in the exercise(s) whose test changed" in capsys.readouterr().err
    for student in ("solution", "wrong_answer"):
        assert after[student, "a_test"] == before[student, "a_test"]
        row = after[student, "b_test"]
        assert row["points"] == "0" and row["status"] == "ok", row
        assert row["detail"].startswith("graded outside the notebook: test: AssertionError")
        assert row["detail"].endswith(REGRADED), row

    # the part files say what the rerun compared; a changed point value is not a test's source
    record = json.loads((parts / "solution.json").read_text())
    assert changed_tests(record, record["base"], record["tests"]) is None  # nothing changed
    edited = {"drill": {**record["tests"]["drill"], "a_test": "another"}}
    assert changed_tests(record, record["base"], edited) == {("drill", "a_test")}
    assert changed_tests(record, "another base", edited) is None


def test_a_regrade_keeps_to_the_total_time_limit(assignment, tmp_path, monkeypatch):
    """A test edited after the grading calls the answer where it is slow (on a word the first
    tests never ask for), under the per-cell timeout at each call: the regrade of that exercise
    ends at the student's total time limit (1 s here) and says so, where its four calls would
    otherwise have taken their 3 s each and passed."""
    from tinyk.grading import scoring
    from tinyk.grading.regrade import REGRADED

    _, notebooks, release = assignment
    source = tmp_path / "source" / "drill.ipynb"
    source.parent.mkdir()
    shutil.copy(notebooks[0], source)
    slow = ("import time\ndef shout(word):\n    if word == 'slow':\n"
            "        time.sleep(3)\n    return word.upper() + '!'")
    (tmp_path / "subs" / "stalls").mkdir(parents=True)
    (tmp_path / "subs" / "stalls" / "drill.ipynb").write_text(json.dumps(_answer(release, SOLUTION_A, slow)))
    limits = runner.Limits(cell_timeout=30, total_timeout=600, memory_mb=16384)
    out = tmp_path / "grades.csv"
    grading_batch.grade(tmp_path / "subs", out, [source], limits=limits, jobs=1, progress=False)
    first = {k: v["points"] for k, v in _table(out).items()}
    assert first == {("stalls", "a_test"): "2", ("stalls", "b_test"): "1"}

    nb = json.loads(source.read_text())
    test = next(c for c in nb["cells"] if nbgrader(c).get("grade_id") == "b_test")
    test["source"] = source_text(test) + "\nfor _ in range(4):\n    assert shout('slow') == 'SLOW!'\n"
    source.write_text(json.dumps(nb))
    monkeypatch.setattr(scoring, "total_limit", lambda limits, notebooks: 1)
    grading_batch.grade(tmp_path / "subs", out, [source], limits=limits, jobs=1, progress=False)
    row = _table(out)["stalls", "b_test"]
    assert row["points"] == "0" and row["detail"].endswith(REGRADED), row
    assert "the submission ran past its total time limit (1 s)" in row["detail"], row


@SHARED_BATCH
def test_shards_merge_into_the_csv_of_a_single_run(batch, monkeypatch):
    """Three shards, as on three machines, each with a copy of the single run's finished
    students except one it grades again: merged, their CSVs equal the single run's."""
    base, subs, notebooks, limits, _, _ = batch
    single = (base / "grades.csv").read_text()
    graded, regrade = [], []
    real = class_batch.grade_answers
    monkeypatch.setattr(class_batch, "grade_answers", lambda name, *a: graded.append(name) or real(name, *a))
    quick = ["solution", "wrong_answer", "hard_coded", "exception", "correct_other_code", "untouched_release",
             "sys_exit", "eq_always_true", "deleted_test"]
    shards = []
    for k in range(3):
        out = base / f"shard{k}.csv"
        shutil.copytree(base / "grades.csv.parts", base / f"shard{k}.csv.parts")
        mine = [s for s in quick if grading_batch.shard_of(s, 3) == k]
        regrade.append(mine[0])
        (base / f"shard{k}.csv.parts" / f"{mine[0]}.json").unlink()
        grading_batch.grade(subs, out, notebooks, limits=limits, jobs=2, progress=False, shard=(k, 3))
        shards.append(out)
    assert sorted(graded) == sorted(regrade)
    students = [{r["student"] for r in _table(out).values()} for out in shards]
    assert all(students) and sum(map(len, students)) == len(set().union(*students))  # disjoint, none empty
    assert cli.main(["merge", str(base / "merged.csv"), *map(str, shards)]) == 0
    assert (base / "merged.csv").read_text() == single


@SHARED_BATCH
def test_each_reason_is_named_and_every_submission_checked(batch):
    base, subs, *_ = batch
    table = _table(base / "grades.csv")
    students = {p.stem if p.is_file() else p.name for p in subs.iterdir()}
    assert {s for s, _ in table} == students and len(table) == 2 * len(students)
    judged = [r for r in table.values() if r["status"] in ("ok", "timeout", "memory-limit", "tests-modified")]
    lost = [r for r in judged if float(r["points"]) < float(r["max_points"])]
    assert lost and all(r["detail"].startswith("graded outside the notebook: ") for r in lost), [
        r for r in lost if not r["detail"].startswith("graded outside the notebook: ")]  # each says why
    assert {table[s, "a_test"]["status"] for s in RAW} == {"unreadable"}
    assert table["no_file", "a_test"]["status"] == "missing"
    assert float(table["single_file", "a_test"]["points"]) == 2
    assert table["infinite_loop", "a_test"]["detail"] == (
        "graded outside the notebook: answer: TimeoutError: the cell ran past the per-cell time limit (5 s)")
    assert table["memory_bomb", "a_test"]["detail"].startswith(
        "graded outside the notebook: answer: MemoryError"), table["memory_bomb", "a_test"]
    assert table["os_exit", "a_test"]["detail"] == (
        "graded outside the notebook: answer: its process exited while a cell ran")
    assert table["ast_transformer", "a_test"]["detail"].startswith(  # acts on the student's cells only
        "graded outside the notebook: test: AssertionError"), table["ast_transformer", "a_test"]
    assert "restored from the release: a_test edited" in table["edited_test", "a_test"]["detail"]


def test_the_total_time_limit_stops_the_notebook_and_other_limits_grade_again(assignment, tmp_path):
    """Two answers that never return, with a total time limit under the per-cell timeout: the
    first is cut at the total limit, the second never starts, both are timeouts that say so.
    The run's part keeps the limits: the same files graded with others are graded again."""
    _, notebooks, release = assignment
    loops = tmp_path / "subs" / "loops"
    loops.mkdir(parents=True)
    (loops / "drill.ipynb").write_text(json.dumps(_answer(release, "while True:\n    pass",
                                                          "while True:\n    pass")))
    out = tmp_path / "grades.csv"
    short = runner.Limits(cell_timeout=60, total_timeout=1, memory_mb=16384)
    grading_batch.grade(loops.parent, out, notebooks, limits=short, jobs=1, progress=False)
    for exercise in ("a_test", "b_test"):
        row = _table(out)["loops", exercise]
        assert (row["points"], row["status"]) == ("0", "timeout"), row
        assert row["detail"] == ("graded outside the notebook: answer: the submission ran past its "
                                 "total time limit (1 s)"), row
    graded = []
    real = class_batch.grade_answers
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(class_batch, "grade_answers", lambda name, *a: graded.append(name) or real(name, *a))
        grading_batch.grade(loops.parent, out, notebooks,
                            limits=runner.Limits(cell_timeout=1, memory_mb=16384),
                            jobs=1, progress=False)
    assert graded == ["loops"]
    assert {r["status"] for r in _table(out).values()} == {"timeout"}


# What the grader refuses to read, before any kernel: one small batch beside two honest
# students, who keep their full marks. The similarity check reads the same folder.
HONEST_A = ("def double(x):\n    total = 0\n    for step in range(2):\n        total = total + x\n"
            "    if type(x) is int:\n        return int(total)\n    return total")
RENAMED_A = HONEST_A.replace("total", "acc").replace("step", "k")


def _nbformat_3(nb: dict) -> str:
    """``nb`` written as an nbformat 3 notebook, by nbformat's own v3 module."""
    from nbformat import v3

    cells = [v3.new_code_cell(input=source_text(c), metadata=c["metadata"]) if c["cell_type"] == "code"
             else v3.new_text_cell("markdown", source=source_text(c), metadata=c["metadata"])
             for c in nb["cells"]]
    old = v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)], metadata=nb["metadata"])
    return v3.writes_json(old)


def _unflagged(nb: dict) -> None:
    """The answer cell of exercise A without its nbgrader metadata: a student who edited the
    metadata (the cell keeps the release's id; an answer found by its place alone is
    ``tests/test_similarity.py``'s)."""
    del nb["cells"][_cell_of(nb, "a_solution")]["metadata"]["nbgrader"]


@pytest.fixture(scope="session")
def guarded_batch(assignment):
    """Every file the grader must not read, and two honest students, graded."""
    from nbformat import v4

    from tinyk.reports.submitted_files import MAX_NOTEBOOK_BYTES
    from tinyk.reports.submitters import student_id

    base, notebooks, release = assignment
    subs = base / "guarded"
    honest = _answer(release, HONEST_A, SOLUTION_B)
    files = {"ana": json.dumps(honest),
             "ben": json.dumps(_answer(release, "def double(x):\n    return x * 2", SOLUTION_B)),
             "old": _nbformat_3(_answer(release, RENAMED_A, SOLUTION_B)),
             "unflagged": json.dumps(_answer(release, RENAMED_A, SOLUTION_B, _unflagged)),
             "future": json.dumps({**v4.new_notebook(), "nbformat": 5}),
             "jos\u00e9": json.dumps(honest), student_id("jos\u00e9"): json.dumps(honest)}
    for name, text in files.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(text)
    for name in ("fifo", "zeros", "mirror", "folder", "huge"):
        (subs / name).mkdir()
    os.mkfifo(subs / "fifo" / "drill.ipynb")
    (subs / "zeros" / "drill.ipynb").symlink_to("/dev/zero")
    (subs / "mirror" / "drill.ipynb").symlink_to(Path("..", "ana", "drill.ipynb"))
    (subs / "twin").symlink_to("ana", target_is_directory=True)
    (subs / "folder" / "drill.ipynb").mkdir()
    with (subs / "huge" / "drill.ipynb").open("wb") as f:  # sparse: no disk, and never read
        f.truncate(MAX_NOTEBOOK_BYTES + 1)
    limits = runner.Limits(cell_timeout=30, total_timeout=600, memory_mb=16384)
    rows = grading_batch.grade(subs, base / "guarded.csv", notebooks, limits=limits, jobs=2, progress=False)
    return base, subs, {(r.student, r.exercise): r for r in rows}


NOT_READ = ", not a regular file: the grader does not read it"
NO_LINK = ": the grader follows no symbolic link"
CLASSMATE = "a symbolic link to another student's submission"
GUARDED = {  # student -> (status, the detail's start) of both rows
    "fifo": ("unreadable", "drill.ipynb is a FIFO (a named pipe)" + NOT_READ),
    "zeros": ("unreadable", "drill.ipynb is a symbolic link to /dev/zero" + NO_LINK),
    "mirror": ("unreadable", f"drill.ipynb is {CLASSMATE} (ana)" + NO_LINK),
    "twin": ("unreadable", f"twin is {CLASSMATE} (ana)" + NO_LINK),
    "folder": ("unreadable", "drill.ipynb is a folder" + NOT_READ),
    "huge": ("unreadable", "drill.ipynb is 20.0 MB (20,971,521 bytes), over the 20 MB bound on a submitted "
                           "notebook: not read"),
    "future": ("unreadable", "drill.ipynb has nbformat 5, a version nbformat "),
    "jos\u00e9": ("error", "not graded: 'jose-d994e1d0' ('jose-d994e1d0') and 'jos\u00e9' ('jos\\xe9') in "),
}


@pytest.mark.xdist_group("guarded-batch")
def test_files_the_grader_must_not_read_are_named_and_honest_rows_stay_intact(guarded_batch):
    _, subs, rows = guarded_batch
    for student in ("ana", "ben", "old"):  # honest, and an nbformat 3 notebook upgraded by nbformat
        assert [(rows[student, e].points, rows[student, e].status) for e in ("a_test", "b_test")] == [
            (2, "ok"), (1, "ok")], [rows[student, e] for e in ("a_test", "b_test")]
    # the answer cell without its metadata is found by its cell id: graded, and said
    assert [(rows["unflagged", e].points, rows["unflagged", e].status) for e in ("a_test", "b_test")] == [
        (2, "tests-modified"), (1, "tests-modified")]
    assert rows["unflagged", "a_test"].detail == (
        "restored from the release: a_solution nbgrader metadata removed (its cell found by its id)")
    for student, (status, detail) in GUARDED.items():
        for exercise in ("a_test", "b_test"):
            row = rows[student, exercise]
            assert (row.points, row.status) == (0, status) and row.detail.startswith(detail), row
    assert "cannot read (it reads 1, 2, 3, 4)" in rows["future", "a_test"].detail
    named = rows["jos\u00e9", "a_test"].detail
    assert rows["jose-d994e1d0", "a_test"].detail == named and "is the grader id of another of them" in named
    students = {p.name if p.is_dir() and not p.is_symlink() else p.stem for p in subs.iterdir()}
    assert {s for s, _ in rows} == students and len(rows) == 2 * len(students)  # every student, once


@pytest.mark.xdist_group("guarded-batch")
def test_similarity_compares_an_old_and_an_unflagged_copy_and_follows_no_link(guarded_batch):
    """The nbformat 3 copy and the copy whose answer cell lost its metadata are both paired
    with the answer they copied (and with each other); the honest independent answer is not;
    the links and the refused files are listed as not compared, none of them read."""
    need("copydetect")
    from tinyk.reports.similarity import compare

    base, subs, rows = guarded_batch
    pairs, students, skipped = compare(subs, base / "source", threshold=0.6)
    found = {(p.exercise, frozenset((p.a, p.b))): (p.share_a, p.share_b) for p in pairs
             if p.exercise == "a_solution"}  # b: the one answer all of them share
    assert set(found) == {("a_solution", frozenset(pair)) for pair in
                          (("ana", "old"), ("ana", "unflagged"), ("old", "unflagged"))}, found
    assert all(share == 1.0 for shares in found.values() for share in shares), found
    assert students == len(list(subs.iterdir())) - 2  # all but the two entries of one id
    assert skipped[0] == rows["jos\u00e9", "a_test"].detail  # the two entries of one id, once
    for student in ("fifo", "zeros", "mirror", "twin", "folder", "huge", "future"):
        assert any(why.startswith(f"{student}: {GUARDED[student][1]}") for why in skipped), (student, skipped)
    assert len(skipped) == 8, skipped


def test_the_old_mode_switches_change_nothing_and_say_so(monkeypatch, capsys):
    """``--answers-only`` and ``--cold-kernels``, from earlier command lines, grade exactly as
    without them (the same limits, the same call), and say that they have no effect."""
    from tinyk.grading import cli

    calls = []
    monkeypatch.setattr(cli, "grade", lambda *args, **kwargs: calls.append((args, kwargs)) or [])
    base = ["--source", str(ROOT / "notebooks"), "grade", "subs", "--out", "g.csv"]
    assert cli.main(base) == 0 and capsys.readouterr().err == ""
    assert cli.main([*base, "--answers-only", "--cold-kernels"]) == 0
    said = capsys.readouterr().err
    assert len(calls) == 2 and calls[0] == calls[1], calls
    for flag in ("--answers-only", "--cold-kernels"):
        assert f"{flag} has no effect: grading runs each notebook once" in said


def test_a_prepared_course_is_stamped_with_nbgraders_own_schema_version(tmp_path):
    """The grader stamps a course's new gradebook itself: with the version nbgrader's first
    ``Gradebook`` would ask ``alembic heads`` for (asked here as it asks), and nbgrader's
    tables added to it."""
    import sqlite3
    import sys

    from nbgrader.dbutil import write_alembic_ini

    from tinyk.grading.assignment import prepare_course
    from tinyk.grading.chapter import chapter_notebooks

    write_alembic_ini(str(tmp_path / "alembic.ini"), "sqlite:///unused.db")
    heads = subprocess.run([sys.executable, "-m", "alembic", "-c", str(tmp_path / "alembic.ini"), "heads"],
                           capture_output=True, text=True, check=True).stdout
    (tmp_path / "drill.ipynb").write_text(json.dumps(_drill()))
    prepare_course(chapter_notebooks([tmp_path / "drill.ipynb"], None), tmp_path / "course")
    with sqlite3.connect(tmp_path / "course" / "gradebook.db") as db:
        stamped = db.execute("SELECT version_num FROM alembic_version").fetchall()
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert stamped == [(heads.split()[0],)], (stamped, heads)
    assert {"assignment", "notebook", "grade_cells", "solution_cells", "student"} <= tables


def test_metadata_validation_finds_each_problem(tmp_path):
    nb = _drill()
    nb["cells"][2]["metadata"]["nbgrader"].pop("points")
    nb["cells"][5]["metadata"]["nbgrader"]["grade_id"] = "a_test"
    nb["cells"][4]["metadata"]["nbgrader"]["locked"] = True
    nb["cells"][5]["source"] = "assert shout('ok') == 'OK!'"  # no hidden tests
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(nb))
    problems = grading_assignment.metadata_problems([path])
    assert any("cell 2 (a_test): points None: a grade cell needs positive points" in p for p in problems)
    assert any("duplicate grade_id 'a_test'" in p for p in problems)
    assert any("cell 4 (b_solution): a solution cell must not be locked" in p for p in problems)
    assert any("needs '### BEGIN HIDDEN TESTS'" in p for p in problems)
    assert len(problems) == 4, problems


def test_metadata_rules_span_notebooks(tmp_path):
    """grade_ids are unique across all the notebooks checked together, as nbgrader needs."""
    for name in ("one", "two"):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(_drill()))
    assert grading_assignment.metadata_problems([tmp_path / "one.ipynb"]) == []
    both = grading_assignment.metadata_problems([tmp_path / "one.ipynb", tmp_path / "two.ipynb"])
    assert len(both) == 4 and all("two.ipynb" in p and "duplicate grade_id" in p for p in both)


@SHARED_BATCH
def test_validate_accepts_the_chapter_notebooks_metadata_and_runs_a_solution(assignment):
    base, _, _ = assignment
    chapter = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert grading_assignment.validate(chapter, run=False) == []
    assert grading_assignment.validate([base / "source" / "drill.ipynb"], run=True) == []


def _hidden_lines(source: dict) -> set[str]:
    """The lines of a source notebook's hidden-test blocks, stripped, blank ones left out."""
    lines, inside = set(), False
    for cell in source["cells"]:
        for line in source_text(cell).splitlines():
            if line.strip() in (BEGIN_HIDDEN, END_HIDDEN):
                inside = line.strip() == BEGIN_HIDDEN
            elif inside and line.strip():
                lines.add(line.strip())
    return lines


def _page_text(path: Path) -> str:
    """What a browser shows of an HTML page: no tags, styles or scripts, entities decoded."""
    page = re.sub(r"<style.*?</style>|<script.*?</script>", "", path.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _hidden_in(page: str, source: dict, submitted: dict) -> list[str]:
    """The source's hidden-test lines found in a feedback page, but for those that are part
    of the submission itself (a line the visible tests or the answer share with them)."""
    own = "\n".join(source_text(c) for c in submitted["cells"])
    return sorted(line for line in _hidden_lines(source) if line not in own and line in page)


SPY = ("shown = get_ipython().user_ns\nprint('the answer cell sees', shown['In'])\n"
       "def double(x):\n    print('called from', shown['In'][-1])\n    return 4")


# What a student's outputs and Markdown may hold that a browser would run, each planted in
# the feedback: HTML with a script, an event handler, a frame, an SVG with onload (as HTML
# and as an SVG output), JavaScript, Markdown with raw HTML and a javascript: link (as an
# output and as a cell of their own), HTML shown "isolated" (nbconvert's iframe) and a
# cell tag that closes its attribute. An honest table and a bold word must stay HTML.
HOSTILE_OUTPUTS = """from IPython.display import HTML, SVG, Javascript, Markdown, display
display(HTML("<script>alert('html')</script><b>bold stays</b>"))
display(HTML("<img src=x onerror=alert('img')>"))
display(HTML("<iframe src='https://evil.example/'></iframe>"))
display(HTML("<object data='x.swf'></object><embed src='x.swf'>"))
display(HTML("<svg onload=alert('svg-html')><circle r='4'/></svg>"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><circle r="4"/></svg>'))
display(Javascript("alert('js')"))
display(Markdown("**md** <script>alert('md')</script> [link](javascript:alert('md-link'))"))
display(HTML("<b>isolated</b><script>alert('isolated')</script>"), metadata={"isolated": True})
display(HTML('<table border="1" class="dataframe"><tr><th>a</th></tr><tr><td>-1.5</td></tr></table>'))
"""
HOSTILE_MARKDOWN = ("## Notes <script>alert('cell')</script>\n\n<img src=x onerror=alert('cell-img')> "
                    "[click](javascript:alert('cell-link')) <svg onload=alert('cell-svg')></svg>\n\n"
                    "<iframe srcdoc='<script>alert(1)</script>'></iframe> `a < b`")


def _hostile(release: dict) -> dict:
    """The spy (:data:`SPY`), whose answer cell also displays :data:`HOSTILE_OUTPUTS`, with a
    Markdown cell of :data:`HOSTILE_MARKDOWN` after it and a tag that would close nbconvert's
    attribute."""
    def edit(nb):
        i = _cell_of(nb, "a_solution")
        nb["cells"][i]["metadata"]["tags"] = ['x"><script>alert("tag")</script>', "ok-tag"]
        note = _cell("markdown", HOSTILE_MARKDOWN)
        note["id"] = "student-note"
        nb["cells"].insert(i + 1, note)
    return _answer(release, HOSTILE_OUTPUTS + SPY, "print(get_ipython().user_ns['In'])\n" + SOLUTION_B, edit)


@pytest.fixture(scope="session")
def feedback_run(assignment, tmp_path_factory):
    """The feedback of four students, the spy also :func:`_hostile`; their notebooks too; and
    what stock nbgrader reads of each student's course as it renders the page: the scores
    through its own gradebook API, and the autograded notebook."""
    from nbgrader.api import Gradebook

    from tinyk.grading import student_feedback
    from tinyk.grading.chapter import ASSIGNMENT

    _, notebooks, release = assignment
    students = {"warns": _answer(release, WARNS, SOLUTION_B),  # a right answer that warns
                "hard_coded": _answer(release, "def double(x):\n    return 4", SOLUTION_B),
                "wrong_answer": _answer(release, "def double(x):\n    return 3 * x", SOLUTION_B),
                "spy": _hostile(release)}
    tmp_path = tmp_path_factory.mktemp("feedback")
    subs = tmp_path / "subs"
    for name, nb in students.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(nb))
    limits = runner.Limits(cell_timeout=30, total_timeout=600, memory_mb=16384)
    read: dict[str, tuple[dict, dict]] = {}
    real = student_feedback.run_nbgrader

    def reading(args, course, *rest):  # generate_feedback's run, on the course autograde wrote
        sid = next(a.split("=", 1)[1] for a in args if a.startswith("--student="))
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            graded = gradebook.find_submission_notebook("drill", ASSIGNMENT, sid)
            scores = {grade.name: grade.score for grade in graded.grades}
        read[sid] = scores, json.loads((course / "autograded" / sid / ASSIGNMENT / "drill.ipynb").read_text())
        return real(args, course, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(student_feedback, "run_nbgrader", reading)
        student_feedback.feedback(subs, tmp_path / "feedback", notebooks, limits=limits)
    return tmp_path / "feedback", students, read


@SHARED_BATCH
def test_feedback_shows_points_and_outputs_but_no_hidden_test(assignment, feedback_run):
    """Each student's feedback shows the visible tests, the outputs of the verdict's run and
    the points; no hidden line, nor anything the student's code printed while a test called
    it (which the spy prints: the cell it is called from)."""
    _, notebooks, _ = assignment
    out, students, _ = feedback_run
    source = json.loads(notebooks[0].read_text())
    assert len(_hidden_lines(source)) == 4
    pages = {name: _page_text(out / name / "drill.html") for name in students}
    leaks = {name: _hidden_in(page, source, students[name]) for name, page in pages.items()}
    assert not any(leaks.values()), leaks
    assert "Score: 3.0 / 3.0" in pages["warns"] and "hidden test failed" not in pages["warns"]
    assert "UserWarning: from the answer cell" in pages["warns"]
    assert "UserWarning: from the call" not in pages["warns"]
    assert "A hidden test failed: 0 of 2 points." in pages["hard_coded"]
    assert "AssertionError" in pages["wrong_answer"] and "hidden test failed" not in pages["wrong_answer"]
    # the spy's answer cell printed; its prints from the test's calls stay in the grader's log
    assert "the answer cell sees" in pages["spy"] and "called from got" not in pages["spy"]


def _outputs(nb: dict, grade_id: str) -> list[dict]:
    """The outputs of a cell of a notebook as written on disk, each stream's text joined."""
    found = next(c["outputs"] for c in nb["cells"] if nbgrader(c).get("grade_id") == grade_id)
    return [{**o, "text": "".join(o["text"])} if "text" in o else o for o in found]


@SHARED_BATCH
def test_the_autograded_notebook_holds_the_verdicts_outputs_and_nbgrader_reads_its_gradebook(feedback_run):
    """The course the feedback renders is stock nbgrader's: its gradebook API gives each
    student's points (the verdict's), and the autograded notebook holds what the student's
    cells showed in the verdict's one run (prints, a warning on stderr, displays), a test
    cell the error of a visible test and nothing for a hidden one."""
    _, students, read = feedback_run
    assert sorted(read) == sorted(students)
    scores = {sid: found for sid, (found, _) in read.items()}
    assert scores == {"warns": {"a_test": 2.0, "b_test": 1.0}, "spy": {"a_test": 0.0, "b_test": 1.0},
                      "hard_coded": {"a_test": 0.0, "b_test": 1.0},
                      "wrong_answer": {"a_test": 0.0, "b_test": 1.0}}, scores
    spy = read["spy"][1]
    shown = _outputs(spy, "a_solution")
    assert [o["output_type"] for o in shown].count("display_data") >= 9, shown
    assert any("the answer cell sees" in o.get("text", "") for o in shown if o["output_type"] == "stream")
    assert [o["output_type"] for o in _outputs(spy, "b_solution")] == ["stream"], _outputs(spy, "b_solution")
    warned = _outputs(read["warns"][1], "a_solution")
    assert [(o["name"], "UserWarning: from the answer cell" in o["text"]) for o in warned] == [
        ("stderr", True)], warned
    failed = _outputs(read["wrong_answer"][1], "a_test")
    assert [(o["output_type"], o["ename"]) for o in failed] == [("error", "AssertionError")], failed
    # its hidden test failed: nothing of it shown, only the feedback's note of the points
    assert [o["data"]["text/plain"] for o in _outputs(read["hard_coded"][1], "a_test")] == [
        ["A hidden test failed: 0 of 2 points."]]
    assert _outputs(read["warns"][1], "a_test") == []


class _Elements(html.parser.HTMLParser):
    """Every element of a page (tag, attributes), as a browser's parser finds them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def _elements(page: str) -> list[tuple[str, dict]]:
    parser = _Elements()
    parser.feed(page)
    return parser.found


@SHARED_BATCH
def test_feedback_runs_nothing_a_student_displayed_or_wrote(feedback_run):
    """The hostile student's page (and every other) has no script, no event handler, no
    frame, object or embed, no javascript: address, and the Content-Security-Policy first in
    its head; what was planted shows as text; an honest table and bold word stay HTML; the
    page keeps nbgrader's styles."""
    from tinyk.reports.inert import CSP, page_problems

    out, students, _ = feedback_run
    assert sorted(students) == ["hard_coded", "spy", "warns", "wrong_answer"]
    for name in students:
        page = (out / name / "drill.html").read_text(encoding="utf-8")
        assert page_problems(page) == [], name
        found = _elements(page)
        assert not [t for t, _ in found if t in ("script", "iframe", "object", "embed", "frame")], name
        assert not [(t, a) for t, a in found for k, v in a.items() if k.startswith("on")
                    or "javascript:" in (v or "").replace(" ", "").lower()], name
        metas = [a for t, a in found if t == "meta"]
        assert metas[0] == {"http-equiv": "Content-Security-Policy", "content": CSP}, name
        assert len([t for t, _ in found if t == "style"]) >= 3, name  # bootstrap, pygments, nbgrader's
    page = (out / "spy" / "drill.html").read_text(encoding="utf-8")
    found = _elements(page)
    # each planted tag shown as text where the output or the cell shows (not only in the code)
    shown = '<div class="output_html rendered_html output_subarea">'
    for planted in ("&lt;script&gt;alert('html')&lt;/script&gt;<b>bold stays</b></div>",
                    "&lt;iframe src='https://evil.example/'&gt;&lt;/iframe&gt;</div>",
                    "&lt;svg onload=alert('svg-html')&gt;&lt;circle r='4'/&gt;&lt;/svg&gt;</div>",
                    "<b>isolated</b>&lt;script&gt;alert('isolated')&lt;/script&gt;</div>",
                    "<p><strong>md</strong> &lt;script&gt;alert('md')&lt;/script&gt; <a "):
        assert shown + planted in page, planted
    assert "Notes &lt;script&gt;alert('cell')&lt;/script&gt;" in page  # the student's Markdown cell
    assert "&lt;img src=x onerror=alert('cell-img')&gt; <a" in page
    assert "&lt;IPython.core.display.Javascript object&gt;" in page  # its text, not the script
    assert [a.get("class") for t, a in found if t == "table"] == ["dataframe"]  # the honest table
    assert [t for t, _ in found].count("b") == 2 and ("strong", {}) in found
    svg = [a["src"] for t, a in found if t == "img" and a.get("src", "").startswith("data:image/svg+xml")]
    assert len(svg) == 1  # the SVG output: an image, in which no script of it runs
    assert 'alert("tag")' not in page and "alert(&quot;tag&quot;)" not in page


def test_feedback_runs_students_at_once_and_one_failure_costs_no_other_its_feedback(assignment, tmp_path,
                                                                                    monkeypatch, capsys):
    """``feedback`` gives ``jobs`` students at once, as ``grade`` does (both are inside at the
    same moment: a barrier of two, not a clock), and a student whose run fails in the grader
    itself is named on stderr while the others get theirs."""
    import threading

    from tinyk.grading import student_feedback

    _, notebooks, release = assignment
    subs = tmp_path / "subs"
    for name in ("amy", "bo", "cy"):
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(_answer(release, SOLUTION_A, SOLUTION_B)))
    together, given = threading.Barrier(2, timeout=120), []

    def fake(entry, batch, courses, work, out_dir, sandbox):
        if entry.name in ("amy", "bo"):
            together.wait()  # raises BrokenBarrierError unless both are in at once
        if entry.name == "amy":
            raise RuntimeError("the grader broke")
        given.append(entry.name)

    monkeypatch.setattr(student_feedback, "_feedback_of", fake)
    assert student_feedback.feedback(subs, tmp_path / "feedback", notebooks, jobs=2, sandbox=False) == ["amy"]
    assert sorted(given) == ["bo", "cy"]
    said = capsys.readouterr().err
    assert "amy: no feedback, the grader's run failed: RuntimeError: the grader broke" in said


def test_feedback_runs_of_every_chapter_notebook_hold_no_hidden_test(tmp_path):
    """Feedback shows the run of the released notebook (the drill test above shows it end to
    end, a failing hidden test and a student printing the kernel's history included); here,
    for every chapter notebook, that released notebook holds not one line of a hidden test,
    while its source holds some. (Running feedback on all nine took 150 s of the unit stage.)"""
    released = grading_assignment.release(tmp_path / "release")
    assert len(released) == len(notebook_paths()) >= 9
    for path in released:
        source = json.loads((ROOT / "notebooks" / path.name).read_text())
        shown = _stripped_lines(json.loads(path.read_text()))
        only_hidden = _hidden_lines(source) - _stripped_lines(book_version(source))  # hidden blocks cut
        assert only_hidden and only_hidden & shown == set(), path.stem


def _stripped_lines(nb: dict) -> set[str]:
    return {line.strip() for cell in nb["cells"] for line in source_text(cell).splitlines()}



# The process the slow submission leaves behind: its duration names this test run, so that
# another run of the suite on the same machine neither finds nor kills it.
MARKER = ["sleep", f"3011.{os.getpid()}"]


@pytest.fixture(scope="session")
def slow_batch(assignment, tmp_path_factory):
    """A correct submission, and one that starts a background process and never finishes."""
    _, notebooks, release = assignment
    subs = tmp_path_factory.mktemp("slow") / "submissions"
    spawn = f"import subprocess\nsubprocess.Popen({MARKER!r})\nimport time\ntime.sleep(3000)\n"
    for name, nb in (("prompt_one", _answer(release, SOLUTION_A, SOLUTION_B)),
                     ("slow_student", _answer(release, spawn + SOLUTION_A, SOLUTION_B))):
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(nb))
    return subs, notebooks, runner.Limits(cell_timeout=600, total_timeout=600, memory_mb=16384)


@pytest.fixture
def short_total(monkeypatch):
    """A student's total time limit of 5 s (the honest student's cells take a fraction of a
    second of it; the slow one's would take 3,000 s)."""
    from tinyk.grading import scoring

    monkeypatch.setattr(scoring, "total_limit", lambda limits, notebooks: 5)


PAST = "graded outside the notebook: answer: the submission ran past its total time limit"


@SHARED_BATCH
def test_total_time_limit_leaves_nothing_of_the_submission_running(slow_batch, short_total):
    subs, notebooks, limits = slow_batch
    rows = grading_batch.grade(subs, subs.parent / "grades.csv", notebooks, limits=limits, jobs=2,
                               progress=False)
    assert processes_left(MARKER) == []  # neither the learner's process nor the one it started is left
    slow = [r for r in rows if r.student == "slow_student"]
    assert {(r.status, r.points) for r in slow} == {("timeout", 0.0)}
    assert slow[0].detail.startswith(PAST), slow[0]
    assert sum(r.points for r in rows if r.student == "prompt_one") == 3


@SHARED_BATCH
def test_feedback_survives_a_submission_past_the_time_limit(slow_batch, short_total):
    subs, notebooks, limits = slow_batch
    out = subs.parent / "feedback"
    student_feedback.feedback(subs, out, notebooks, limits=limits)
    assert "Score: 3.0 / 3.0" in _page_text(out / "prompt_one" / "drill.html")
    assert "timeout: " in _page_text(out / "slow_student" / "drill.html")  # its rows' status, said
    assert processes_left(MARKER) == []


@SHARED_BATCH
def test_the_total_time_limit_runs_on_the_clock(assignment, tmp_path):
    """The real clock ends a submission that never finishes (no honest one shares its limit)."""
    _, notebooks, release = assignment
    (tmp_path / "subs" / "never_ends").mkdir(parents=True)
    nb = _answer(release, "import time\ntime.sleep(10**6)\n" + SOLUTION_A, SOLUTION_B)
    (tmp_path / "subs" / "never_ends" / "drill.ipynb").write_text(json.dumps(nb))
    limits = runner.Limits(cell_timeout=10**6, total_timeout=5, memory_mb=16384)
    subs = tmp_path / "subs"
    rows = grading_batch.grade(subs, tmp_path / "grades.csv", notebooks, limits=limits, jobs=1,
                               progress=False)
    assert {(r.status, r.points, r.detail) for r in rows} == {("timeout", 0.0, f"{PAST} (5 s)")}


def test_the_verdict_keeps_to_the_total_time_limit(assignment, tmp_path, monkeypatch):
    """An answer that stays under the per-cell timeout at each call: the verdict ends at the
    student's total time limit (1 s here) and says so, where each of the test's four calls
    would otherwise have taken its 3 s."""
    from tinyk.grading import scoring

    _, notebooks, release = assignment
    slow = "import time\ndef double(x):\n    time.sleep(3)\n    return 2 * x"
    (tmp_path / "subs" / "stalls").mkdir(parents=True)
    (tmp_path / "subs" / "stalls" / "drill.ipynb").write_text(json.dumps(_answer(release, slow, SOLUTION_B)))
    monkeypatch.setattr(scoring, "total_limit", lambda limits, notebooks: 1)
    limits = runner.Limits(cell_timeout=30, total_timeout=600, memory_mb=16384)
    rows = {r.exercise: r for r in grading_batch.grade(tmp_path / "subs", tmp_path / "grades.csv", notebooks,
                                                 limits=limits, jobs=1, progress=False)}
    for exercise in ("a_test", "b_test"):  # b: after the limit, as in a kernel's run past it
        assert rows[exercise].points == 0 and rows[exercise].detail.startswith(PAST), rows[exercise]


def test_the_grading_threads_parse_python_one_tree_at_a_time(assignment, tmp_path, monkeypatch):
    """Python 3.11 fails a syntax tree built while another thread builds one (python/cpython#106905:
    "AST constructor recursion depth mismatch"), which would give the student an error row per
    exercise: every thread of a run parses under one lock, and only during the run."""
    import ast
    import threading

    _, notebooks, release = assignment
    subs = tmp_path / "subs"
    for name in ("amy", "bo"):
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(release))
    real_parse = ast.parse
    ours: set[int] = set()  # the two students' threads: any other parse passes straight through
    state = {"inside": 0, "most": 0, "entered": 0, "wait": 2.0}
    count, both, at_parse = threading.Lock(), threading.Event(), threading.Barrier(2, timeout=60)

    def builds_a_tree(*args, **kwargs):  # stands for the tree's build (what ast.parse calls)
        if threading.get_ident() not in ours:
            return compile(*args, **kwargs)
        with count:
            state["inside"] += 1
            state["entered"] += 1
            state["most"] = max(state["most"], state["inside"])
            first = state["entered"] == 1
        if state["inside"] == 2:
            both.set()
        if first:  # the other thread is at ast.parse: were there no lock, it would come in now
            both.wait(timeout=state["wait"])
        with count:
            state["inside"] -= 1
        return compile(*args, **kwargs)

    def grade_student(name, *args):
        ours.add(threading.get_ident())
        guarded.append(ast.parse is not real_parse)
        at_parse.wait()  # both threads, then both parse
        ast.parse("x = 1")
        return []

    monkeypatch.setattr(ast, "compile", builds_a_tree, raising=False)
    monkeypatch.setattr(class_batch, "grade_answers", grade_student)
    guarded: list[bool] = []
    grading_batch.grade(subs, tmp_path / "g.csv", notebooks, jobs=2, progress=False, sandbox=False)
    assert guarded == [True, True] and state["most"] == 1 and ast.parse is real_parse

    # The same two parses without the lock: both inside at once (the check can fail).
    state.update(entered=0, most=0, wait=60.0)  # the first waits for the second, not for a clock
    threads = [threading.Thread(target=grade_student, args=(name,)) for name in ("amy", "bo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert guarded == [True, True, False, False] and state["most"] == 2


def test_overlapping_guards_put_back_ast_parse_when_the_last_one_ends():
    import ast

    from tinyk.grading.ast_guard import one_parse_at_a_time

    real_parse = ast.parse
    first, second = one_parse_at_a_time(), one_parse_at_a_time()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # ended first, as a block of another thread may
    assert ast.parse is not real_parse and ast.parse("y = 2").body[0].targets[0].id == "y"
    second.__exit__(None, None, None)
    assert ast.parse is real_parse


def test_no_hidden_test_reaches_the_students_process(assignment, tmp_path, monkeypatch):
    """The learner's process is sent the notebook's cells but never a test cell: a student
    whose ``pre_run_cell`` hook prints every cell it is given sees none of them, and no request
    holds a line of a hidden test. The hidden tests run in the grader's process and still
    decide the points."""
    import pickle

    from tinyk.grading.answer_server import AnswerServer

    _, notebooks, release = assignment
    hook = "get_ipython().events.register('pre_run_cell', lambda info: print(info.raw_cell))\n"
    (tmp_path / "subs" / "hooked").mkdir(parents=True)
    (tmp_path / "subs" / "hooked" / "drill.ipynb").write_text(
        json.dumps(_answer(release, hook + "def double(x):\n    return 2 * x if x == 2 else 0", SOLUTION_B)))
    hidden = _hidden_lines(json.loads(notebooks[0].read_text()))
    sent: list[str] = []
    real = AnswerServer.send

    def send(self, request):  # everything the learner's process is given
        sent.append(repr(pickle.loads(pickle.dumps(request))))
        return real(self, request)

    monkeypatch.setattr(AnswerServer, "send", send)
    limits = runner.Limits(cell_timeout=30, total_timeout=600, memory_mb=16384)
    rows = {r.exercise: r for r in grading_batch.grade(tmp_path / "subs", tmp_path / "grades.csv", notebooks,
                                                 limits=limits, jobs=1, progress=False)}
    assert hidden and any("pre_run_cell" in text for text in sent)
    assert not [line for line in hidden if any(line in text for text in sent)]
    assert (rows["a_test"].points, rows["b_test"].points) == (0, 1)  # the hidden test still failed it
    assert "graded outside the notebook" in rows["a_test"].detail, rows["a_test"]


# 10 prints of a MiB each in 05.3.3's answer cell: 10 × (2**20 + 1) characters with their line ends
FLOOD = "for i in range(10):\n    print('x' * 2**20)\n"


def test_feedback_of_a_chapter_notebook_bounds_a_flood_and_shows_no_stand_ins_error(tmp_path):
    """Feedback on a real chapter notebook (05.3, whose demo cells use tinyk's RoPE, which the
    verdict's run withholds) for two students: one prints 10 MiB in the answer cell of 05.3.3,
    which is right, the other submits the untouched student version. The flood's page stays
    within a cell's bound, says how much it dropped, and keeps the points of 05.3.3; neither
    page shows a stand-in's error (WithheldPart, or the NameError of a name a cell using one
    could not bind), only the note of a cell that shows no output."""
    from tinyk.grading.cell_outputs import CELL_OUTPUT_LIMIT, NOTEBOOK_OUTPUT_LIMIT
    from tinyk.grading.chapter import exercises_of

    path = ROOT / "notebooks" / "05_3_rope.ipynb"
    [released] = grading_assignment.release(tmp_path / "release", [path])
    untouched = json.loads(released.read_text())
    flood = json.loads(released.read_text())
    [answer] = [c for c in json.loads(path.read_text())["cells"]
                if nbgrader(c).get("grade_id") == "ex_05_3_3_solution"]
    [cell] = [c for c in flood["cells"] if nbgrader(c).get("grade_id") == "ex_05_3_3_solution"]
    cell["source"] = FLOOD + "".join(line for line in source_text(answer).splitlines(keepends=True)
                                     if "### " not in line)
    for name, nb in (("flood", flood), ("untouched", untouched)):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / path.name).write_text(json.dumps(nb))
    limits = runner.Limits(cell_timeout=120, total_timeout=1200, memory_mb=16384)
    out = tmp_path / "feedback"
    assert student_feedback.feedback(tmp_path / "subs", out, [path], limits=limits, jobs=1) == []
    pages = {name: (out / name / "05_3_rope.html").read_text(encoding="utf-8")
             for name in ("flood", "untouched")}
    texts = {name: _page_text(out / name / "05_3_rope.html") for name in pages}
    points = dict(exercises_of(path))
    assert f"Score: {points['ex_05_3_3_test']} / {sum(points.values())}" in texts["flood"]
    dropped = 10 * (2**20 + 1) - CELL_OUTPUT_LIMIT
    assert (f"[{dropped:,} characters of output dropped: the grader keeps {CELL_OUTPUT_LIMIT:,} a cell and "
            f"{NOTEBOOK_OUTPUT_LIMIT:,} a notebook]") in texts["flood"]
    assert CELL_OUTPUT_LIMIT < len(pages["flood"]) < CELL_OUTPUT_LIMIT + 2**20, len(pages["flood"])
    assert len(pages["untouched"]) < 2**20 and f"Score: 0.0 / {sum(points.values())}" in texts["untouched"]
    note = ("[the grader shows no output of this cell: it uses tinyk's own precompute_freqs_cis, which is "
            "withheld while your notebook is graded (an exercise asks you to write it); in Colab it runs "
            "as usual]")
    assert texts["untouched"].count(note) >= 5 and "WithheldPart" not in texts["untouched"]
    assert "name 'score' is not defined" not in texts["untouched"]
    # the flood's answer used tinyk's RoPE: its second run shows the demo cells' own outputs
    assert "table shapes: (64, 16) (64, 16)" in texts["flood"] and note not in texts["flood"]
    assert "WithheldPart" not in texts["flood"]
