"""The grader's bookkeeping without nbgrader: how statuses reach the CSV, the Linux and
sandbox checks, shards and their merge. Fast: nothing here starts a kernel."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import pytest

from tinyk.courseware.checkout import ROOT
from tinyk.courseware.exercises import nbgrader, source_text
from tinyk.grading import batch as grading_batch
from tinyk.grading import chapter, cli, rules, runner, sandbox, student_feedback, submission
from tinyk.reports import gradebook_schema as grading_gradebook_schema
from tinyk.reports import gradebook_schema as schema
from tinyk.reports import submitted_files
from tinyk.reports import submitters as roster

NB = chapter.Notebook(Path("drill.ipynb"), "drill", [("a_test", 2.0), ("b_test", 1.0)])


def _meta(gid: str, grade: bool) -> dict:
    return {"nbgrader": {"grade": grade, "solution": not grade, "locked": grade, "grade_id": gid,
                         "schema_version": 3, **({"points": 1} if grade else {})}}


def _statuses(rows):
    return [(r.exercise, r.points, r.status) for r in rows]


def _verdicts(**found: str) -> dict:
    """A verdict per exercise of :data:`NB`: passed, or failed with the detail given."""
    from tinyk.grading.verdict import Verdict

    return {("drill", g): Verdict(g, not found.get(g), found.get(g, "")) for g in ("a_test", "b_test")}


def test_rows_keep_the_checks_findings_and_name_each_limit():
    from tinyk.grading.answers_only import verdict_rows

    for status in ("missing", "unreadable", "tampering"):  # not graded: no verdict
        rows = verdict_rows("s", [NB], {"drill": (status, "why")}, {})
        assert {(r.status, r.points, r.detail) for r in rows} == {(status, 0.0, "why")}
    flag = ("tests-modified", "restored from the release: b_test edited")
    rows = verdict_rows("s", [NB], {"drill": flag}, _verdicts(
        a_test="answer: TimeoutError: the cell ran past the per-cell time limit (5 s)",
        b_test="answer: MemoryError: "))
    assert _statuses(rows) == [("a_test", 0.0, "timeout"), ("b_test", 0.0, "memory-limit")]
    assert all("b_test edited" in r.detail for r in rows)  # the modification is not lost either
    rows = verdict_rows("s", [NB], {"drill": flag}, _verdicts())
    assert _statuses(rows) == [("a_test", 2.0, "tests-modified"), ("b_test", 1.0, "tests-modified")]
    rows = verdict_rows("s", [NB], {}, _verdicts(a_test="answer: its process exited while a cell ran",
                                                 b_test="test: AssertionError: got 3"))
    assert _statuses(rows) == [("a_test", 0.0, "kernel-died"), ("b_test", 0.0, "ok")]
    assert rows[1].detail == "graded outside the notebook: test: AssertionError: got 3"


def test_the_status_enum_is_the_gradebook_strings():
    """One status type: its values are the CSV's strings (``STATUSES``, which the class report
    and the LMS export read), written as such by f-strings, csv and JSON."""
    statuses = list(schema.Status)
    assert [status.value for status in statuses] == list(schema.STATUSES) and len(statuses) == 9
    for status in statuses:
        assert f"{status}" == str(status) == status.value == json.loads(json.dumps(status))
        assert schema.STATUSES[status] == status.description
    buffer = io.StringIO()
    csv.writer(buffer).writerow([schema.Status.TESTS_MODIFIED])
    assert buffer.getvalue().strip() == "tests-modified"
    assert schema.Row("s", "drill", "a_test", 0.0, 2.0, "memory-limit").status is schema.Status.MEMORY_LIMIT
    with pytest.raises(ValueError, match="'passed' is not a valid Status"):
        schema.Row("s", "drill", "a_test", 0.0, 2.0, "passed")


def test_the_gradebook_has_one_schema_that_the_grader_writes_and_the_report_reads(tmp_path):
    """The columns, statuses and row are defined once (tinyk.reports.gradebook_schema): a row the grader
    writes is read back by the class report's reader as the same row."""
    from tinyk.reports.gradebook import read_grades
    from tinyk.reports.inert import write_csv

    row = schema.Row("=ann", "drill", "a_test", 1.0, 2.0, "timeout", "late; mistake 05.3.2:crops-table")
    path = tmp_path / "grades.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        write_csv(f, [schema.FIELDS, [getattr(row, name) for name in schema.FIELDS]])
    assert read_grades(path) == [row]
    assert not hasattr(roster, "STATUSES") and not hasattr(rules, "Row") and rules.Status is schema.Status


def test_the_grader_refuses_other_systems(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(SystemExit, match=r"Linux only.*'darwin'"):
        grading_batch.grade(tmp_path, tmp_path / "g.csv", [])
    help_text = _help(["grade", "--help"])
    assert "Linux only" in _help(["--help"]) and "--no-sandbox" in help_text and "--shard" in help_text


def _help(argv: list[str]) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(argv)
    return out.getvalue()


def test_a_missing_bubblewrap_stops_grading_with_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    message = r"'bwrap' is not installed.*apt-get install bubblewrap.*--no-sandbox"
    with pytest.raises(SystemExit, match=message):
        grading_batch.grade(tmp_path, tmp_path / "g.csv", [])


def test_a_bubblewrap_that_is_not_permitted_stops_grading(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: str(fake))
    with pytest.raises(SystemExit, match=r"cannot build a sandbox here \(bwrap: setting up uid map"):
        grading_batch.grade(tmp_path, tmp_path / "g.csv", [])


def test_shards_split_students_deterministically():
    students = [f"student{i:03d}" for i in range(200)]
    shards = [[s for s in students if grading_batch.shard_of(s, 4) == k] for k in range(4)]
    assert sorted(s for shard in shards for s in shard) == students  # each student in exactly one shard
    assert all(30 <= len(shard) <= 70 for shard in shards)  # spread, not all on one machine
    # a fixed function of the name (sha256), whoever else is in the class
    assert [grading_batch.shard_of(s, 4) for s in ("ann", "bob", "eve")] == [1, 1, 3]
    assert grading_batch.parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "1/0", "a/b", "-1/3"):
        with pytest.raises(SystemExit, match=f"--shard '{bad}': must be K/N"):
            grading_batch.parse_shard(bad)


def _csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([grading_gradebook_schema.FIELDS, *rows])
    return path


def test_merge_refuses_a_student_in_two_shards_and_a_foreign_file(tmp_path):
    row = ["ann", "drill", "a_test", "2", "2", "ok", ""]
    one, two = _csv(tmp_path / "0.csv", [row]), _csv(tmp_path / "1.csv", [row])
    with pytest.raises(SystemExit, match="student 'ann' is in both"):
        grading_batch.merge(tmp_path / "all.csv", [one, two])
    (tmp_path / "other.csv").write_text("name,score\nann,3\n")
    with pytest.raises(SystemExit, match=r"other.csv: header \['name', 'score'\], expected"):
        grading_batch.merge(tmp_path / "all.csv", [one, tmp_path / "other.csv"])


def test_skip_tag_empties_only_non_exercise_cells(tmp_path):
    import nbformat

    tagged = {"tags": [submission.SKIP_TAG]}
    cells = [
        {"cell_type": "code", "metadata": dict(tagged), "source": "draw_many_frames()", "outputs": [],
         "execution_count": None},
        {"cell_type": "code", "metadata": {**_meta("a_solution", False), **tagged}, "source": "answer = 1",
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {**_meta("a_test", True), **tagged}, "source": "assert answer == 1",
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "x = 2", "outputs": [], "execution_count": None},
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for i, cell in enumerate(cells):
        cell["id"] = f"c{i}"
    submission.write_for_grading(nb, tmp_path / "out.ipynb")
    written = [c.source for c in nbformat.read(tmp_path / "out.ipynb", as_version=4).cells]
    assert written == ["# skipped when grading", "answer = 1", "assert answer == 1", "x = 2"]


def test_sliders_render_no_frame_under_grading(monkeypatch):
    from tinyk.lessons.widgets import slider

    calls = []

    def draw(t):
        calls.append(t)
        return f"<p>{t}</p>"

    monkeypatch.setenv("TINYK_GRADING", "1")
    monkeypatch.setenv("TINYK_FIGURES_ZH", "1")  # the book's flag changes nothing under grading
    view = slider(draw, t=[1, 2, 3])
    assert calls == [] and "text/html" not in view._repr_mimebundle_()[0]
    assert view._repr_mimebundle_()[1] == {}
    monkeypatch.delenv("TINYK_GRADING")
    monkeypatch.delenv("TINYK_FIGURES_ZH")
    view = slider(draw, t=[1, 2, 3])
    assert calls[:3] == [1, 2, 3] and "<p>2</p>" in view._repr_mimebundle_()[0]["text/html"]


def test_course_figures_draw_no_png_under_grading(monkeypatch):
    from tinyk.lessons.plotting import figure

    fig, ax = figure()
    ax.plot([0, 1])
    assert fig._repr_png_()[:4] == b"\x89PNG"
    monkeypatch.setenv("TINYK_GRADING", "1")
    monkeypatch.setenv("TINYK_FIGURES_ZH", "1")
    assert fig._repr_png_() is None and fig._repr_mimebundle_() == ({}, {})


def _top_level_names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds at the top level, global names it reads anywhere)."""
    import symtable

    source = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))
    table = symtable.symtable(source, "cell", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    read: set[str] = set()
    tables = [table]
    while tables:
        t = tables.pop()
        tables += t.get_children()
        for s in t.get_symbols():
            if s.is_referenced() and ((t is table and not s.is_assigned()) or s.is_global()):
                read.add(s.get_name())
    return bound, read


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_cell_that_runs_reads_a_name_only_a_skipped_cell_binds(path):
    """A cell tagged skip-when-grading is emptied before grading: no cell that still runs
    (exercise cells, answers and tests, included) may read a name only such a cell binds,
    so a graded run has no NameError, and no exercise depends on a skipped cell."""
    import json

    from tinyk.courseware.exercises import source_text

    bound_by_others: set[str] = set()
    only_skipped: set[str] = set()
    reads_of_others: set[str] = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        bound, read = _top_level_names(source_text(cell))
        if submission.SKIP_TAG in cell.get("metadata", {}).get("tags", []) and not nbgrader(cell):
            only_skipped |= bound
        else:
            bound_by_others |= bound
            reads_of_others |= read
    needed = (only_skipped - bound_by_others) & reads_of_others
    assert not needed, f"{path.name}: cells that run read {sorted(needed)}, bound only by skipped cells"


def test_the_skip_check_sees_a_name_an_exercise_needs():
    bound, _ = _top_level_names("model = train()\nfor step in range(3):\n    pass")
    _, read = _top_level_names("def f(x):\n    return model(x) + x\nassert f(1) == step")
    assert {"model", "step"} <= bound and {"model", "step"} <= read and "x" not in read


def test_kernels_run_with_the_grading_switches(tmp_path):
    argv = sandbox.sandbox_argv(tmp_path, tmp_path)
    pairs = {(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--setenv"}
    assert {("TINYK_GRADING", "1"), ("MPLBACKEND", "agg"), ("OMP_NUM_THREADS", "1")} <= pairs
    assert "--unshare-all" in argv and "--clearenv" in argv
    argv = sandbox.sandbox_argv(tmp_path, tmp_path, threads=4)
    pairs = {(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--setenv"}
    assert {("OMP_NUM_THREADS", "4"), ("MKL_NUM_THREADS", "4")} <= pairs


def test_threads_must_be_positive(capsys):
    assert cli.main(["--source", str(ROOT / "notebooks"), "grade", "subs", "--out", "x.csv",
                         "--threads", "0"]) == 2
    assert "--threads must be 1 or more, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["grade", "subs", "--out", "x.csv"], ["feedback", "subs", "out"]])
@pytest.mark.parametrize("jobs", ["0", "-2", "two"])
def test_jobs_must_be_a_positive_whole_number(command, jobs, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--source", str(ROOT / "notebooks"), *command, "--jobs", jobs])
    assert stopped.value.code == 2
    assert f"--jobs: must be a whole number of students, 1 or more, got {jobs!r}" in capsys.readouterr().err


def test_the_total_limit_grows_with_the_notebooks_submitted():
    limits = runner.Limits(cell_timeout=60, total_timeout=300)
    assert [runner.total_limit(limits, n) for n in (0, 1, 9)] == [300, 300, 2700]


def test_student_ids_are_unique_and_stable_for_any_unicode_name():
    names = ("ann", "a_b-1", "josé", "josè", "Zhang San 张三", "张三")
    ids = {name: roster.student_id(name) for name in names}
    assert len(set(ids.values())) == len(ids)
    assert ids["ann"] == "ann" and ids["a_b-1"] == "a_b-1"  # a plain ASCII name is its own id
    # an ASCII slug and a hash of the NFC name: the same on every run and machine
    assert ids["josé"] == "jose-d994e1d0" and ids["josè"] == "jose-9fec3e04"
    assert ids["张三"].startswith("student-") and ids["Zhang San 张三"].startswith("Zhang_San-")
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids.values())
    assert roster.student_id("jose\u0301") == ids["josé"]  # decomposed: the same text


def test_entries_that_would_be_one_student_are_named_and_set_apart(tmp_path, capsys):
    """Two names in two Unicode forms, a folder and a file of one name, and a folder named
    like another student's grader id: each pair is named in one sentence (both names, told
    apart, and why), set apart from the run on stderr, and the other students go on."""
    from tinyk.grading.batch import start

    subs = tmp_path / "subs"
    for name in ("jos\u00e9", "jose\u0301", "bob", "ann", "zoe", roster.student_id("zo\u00eb")):
        (subs / name).mkdir(parents=True)
    (subs / "bob.ipynb").write_text("{}")
    (subs / "zo\u00eb").mkdir()
    said = roster.collisions(roster.entries(subs))
    assert sorted(p.name for p in said) == sorted(["jos\u00e9", "jose\u0301", "bob", "bob.ipynb", "zo\u00eb",
                                                    roster.student_id("zo\u00eb")])
    nfc = said[subs / "jos\u00e9"]
    assert nfc == said[subs / "jose\u0301"] and r"('jos\xe9')" in nfc and r"('jose\u0301')" in nfc
    assert "the same text once Unicode-normalised (NFC)" in nfc and "id 'jose-d994e1d0'" in nfc
    assert "'bob' ('bob') and 'bob.ipynb' ('bob.ipynb')" in said[subs / "bob"]
    assert "a folder and a file of one name" in said[subs / "bob"]
    named, zoe_id = said[subs / "zo\u00eb"], roster.student_id("zo\u00eb")
    assert f"{zoe_id!r} is the grader id of another of them" in named and named == said[subs / zoe_id], named
    batch = start(subs, [], tmp_path, None, sandbox=False)
    assert [p.name for p in batch.entries] == ["ann", "zoe"] and batch.collided == said
    err = capsys.readouterr().err
    assert err.count("are one student to the grader") == 3 and nfc in err


def _error(ename: str, evalue: str = "", line: int | None = None) -> dict:
    frame = f"\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[4]\x1b[39m\x1b[32m, line {line}\x1b[39m\n"
    traceback = [frame] if line else []  # as IPython writes the frame of the cell
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": traceback}


def test_feedback_names_the_mistake_by_the_catalogue_never_by_the_detail():
    """Under a failed test cell the feedback names the catalogued mistake with its label, and
    never quotes the detail (a hidden test's message could be in it)."""
    from tinyk.learner.mistakes import by_id

    detail = ("graded outside the notebook: test: AssertionError: secret hidden words; "
              "mistake 05.3.2:half-split-pairing")
    row = grading_gradebook_schema.Row("s", "05_3_rope", "ex_05_3_2_test", 0.0, 3.0, "ok", detail)
    cell = {"outputs": [_error("AssertionError", "pair adjacent coordinates", 1)]}
    notes = student_feedback.notes(row, cell)
    assert notes == [f"The mistake: {by_id('05.3.2:half-split-pairing').en} (05.3.2:half-split-pairing)."]
    assert "secret" not in " ".join(notes)
    row.detail = "test: AssertionError: got 3 (line 2)"  # a message of no catalogued mistake
    assert student_feedback.notes(row, cell) == []


def _release() -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# Drill"}]
    for gid, grade in (("a_solution", False), ("a_test", True), ("b_solution", False), ("b_test", True)):
        meta = _meta(gid, grade)
        meta["nbgrader"].update(checksum=f"sum-{gid}", cell_type="code")
        cells.append({"cell_type": "code", "metadata": meta, "source": f"# {gid}", "outputs": [],
                      "execution_count": None})
    for i, cell in enumerate(cells):
        cell["id"] = f"c{i}"
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _submission(edit=None) -> dict:
    import copy

    nb = copy.deepcopy(_release())
    for cell in nb["cells"]:
        if nbgrader(cell).get("solution"):
            cell["source"] = "answer = 1"
    nb["cells"].insert(2, {"cell_type": "code", "metadata": {}, "source": "scratch = 1", "outputs": [],
                           "execution_count": None, "id": "mine"})
    if edit:
        edit(nb["cells"])
    return nb


def _by_id(cells: list[dict], gid: str) -> list[dict]:
    return [c for c in cells if nbgrader(c).get("grade_id") == gid]


def _layout(nb: dict) -> list[str]:
    return [nbgrader(c).get("grade_id") or source_text(c) for c in nb["cells"]]


EXPECTED = ["# Drill", "a_solution", "scratch = 1", "a_test", "b_solution", "b_test"]


def _restored(edit) -> tuple[dict, list[str]]:
    return submission.restore_release(_submission(edit), _release())


def test_an_untouched_submission_is_graded_as_submitted():
    nb, changes = _restored(None)
    assert changes == [] and _layout(nb) == EXPECTED
    assert [source_text(c) for c in _by_id(nb["cells"], "a_solution")] == ["answer = 1"]


def test_roles_points_and_checksums_come_from_the_release():
    def edit(cells):
        cells[1]["metadata"]["nbgrader"]["locked"] = True  # the answer claims to be locked
        cells[1]["source"] = "import builtins\nbuiltins.type = lambda x: int"
        cells[3]["metadata"]["nbgrader"].update(points=100, checksum="forged")

    nb, changes = _restored(edit)
    assert changes == ["a_solution nbgrader metadata changed", "a_test nbgrader metadata changed"]
    assert [nbgrader(c) for c in nb["cells"] if nbgrader(c)] == \
        [nbgrader(c) for c in _release()["cells"] if nbgrader(c)]
    assert submission.tampering(nb) == "imports builtins"  # the answer is scanned, locked or not


def test_duplicated_moved_retyped_and_deleted_cells_are_restored():
    import copy

    def edit(cells):
        copied = copy.deepcopy(cells[3])  # a_test, duplicated (same cell id) and edited
        copied["source"] = "pass"
        cells.insert(4, copied)
        cells[5]["cell_type"] = "markdown"  # b_solution as markdown
        cells[5].pop("outputs")
        cells[5].pop("execution_count")
        cells.insert(0, cells.pop(6))  # b_test moved first
        cells.append({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "bonus", "grade": True,
                                                                     "points": 9}},
                      "source": "bonus = 1", "outputs": [], "execution_count": None, "id": "bonus"})

    nb, changes = _restored(edit)
    assert sorted(changes) == sorted(["a_test duplicated", "b_test moved", "b_solution retyped",
                                      "nbgrader metadata on a cell of no exercise (bonus)"])
    # the student's own cells follow the exercise cell before them that was not moved
    assert _layout(nb) == ["# Drill", "a_solution", "scratch = 1", "a_test", "pass", "b_solution",
                           "bonus = 1", "b_test"]
    assert [c["cell_type"] for c in nb["cells"]][5] == "code"
    assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])  # ids unique again
    nb, changes = _restored(lambda cells: cells.pop(3))  # a_test deleted: put back
    assert changes == ["a_test deleted"] and _layout(nb) == EXPECTED
    nb, changes = _restored(lambda cells: cells[3].update(source="pass"))
    assert changes == ["a_test edited"]
    assert source_text(_by_id(nb["cells"], "a_test")[0]) == "# a_test"


def test_metadata_that_is_no_dict_is_restored_not_a_crash():
    def edit(cells):
        cells[3]["metadata"]["nbgrader"] = "locked"
        cells[4]["metadata"]["nbgrader"] = {"grade_id": ["x"]}

    nb, changes = _restored(edit)
    assert "a_test deleted" in changes and _layout(nb) == ["# Drill", "a_solution", "scratch = 1", "# a_test",
                                                           "answer = 1", "a_test", "b_test"]


def test_feedback_notes_give_points_and_statuses_never_the_detail():
    def notes(points, status, outputs=()):
        detail = "test: AssertionError: SECRET (hidden tests, line 6)"  # a hidden assertion's message
        row = grading_gradebook_schema.Row("s", "drill", "a_test", points, 2.0, status, detail)
        return student_feedback.notes(row, {"outputs": list(outputs)})

    assert notes(2.0, "ok") == []
    assert notes(0.0, "ok") == ["A hidden test failed: 0 of 2 points."]
    assert notes(0.0, "ok", [_error("AssertionError")]) == []  # the shown run's traceback says it
    assert notes(0.0, "tests-modified")[0] == "A hidden test failed: 0 of 2 points."
    statuses = grading_gradebook_schema.STATUSES
    assert notes(0.0, "timeout") == [f"timeout: {statuses['timeout']}. 0 of 2 points."]
    assert not any("SECRET" in note for status in statuses for note in notes(0.0, status))


@pytest.mark.parametrize(("source", "parser_error"), [
    ("-" * 100_000 + "1", MemoryError),  # the parser's stack
    ("a" + ".b" * 200_000, RecursionError),  # the tree's construction
    ("x = 1\0", (SyntaxError, ValueError)),  # a null byte (a ValueError in some Python versions)
    ("def f(:", SyntaxError),
])
def test_a_cell_python_cannot_parse_is_left_to_the_kernel(source, parser_error):
    """Nesting too deep for the parser, a null byte or a syntax error in an answer: the checks
    that read the answer's code skip that cell (the kernel reports its own error for it), and the
    student's grading goes on instead of failing with the parser's error as its reason."""
    import ast

    from tinyk.courseware import cell_names

    with pytest.raises(parser_error):
        ast.parse(source)
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": source},
                    {"cell_type": "code", "metadata": {}, "source": "import builtins"}]}
    assert submission.tampering(nb) == "imports builtins"  # the next cell is still read
    assert cell_names.bound_names([source, "answer = 2"]) == ["answer"]


def test_each_unreadable_notebook_says_what_is_wrong_with_it(tmp_path):
    """Bytes that are no notebook are named for what they are; an nbformat 3 notebook, made by
    nbformat's own v3 module, is upgraded to version 4 with its nbgrader metadata kept; a file
    over the bound is refused from its size, before a byte of it is read."""
    from nbformat import v3

    cases = {b"\xff\xfe{}": "x.ipynb is not UTF-8 text (byte 0): not a notebook",
             b"  \n": "x.ipynb is empty: not a notebook",
             b"[1, 2]": "x.ipynb holds a JSON list, not an object: not a notebook",
             b'{"cells": []}': "x.ipynb has no field 'nbformat' (the version every notebook states)",
             b'{"nbformat": 5, "nbformat_minor": 0}': "x.ipynb has nbformat 5, a version nbformat ",
             b'{"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code"}], "metadata": {}}':
                 "x.ipynb is not a valid notebook (nbformat 4): "}
    assert len(cases) == 6
    for data, said in cases.items():
        with pytest.raises(submitted_files.Refused) as refused:
            submitted_files.parse_notebook(data, "x.ipynb")
        assert str(refused.value).startswith(said), (data, str(refused.value))
    meta = {"nbgrader": {"grade_id": "a_solution", "solution": True}}
    cell = v3.new_code_cell(input="x = 1", metadata=meta)
    old = v3.new_notebook(worksheets=[v3.new_worksheet(cells=[cell])])
    upgraded = submitted_files.parse_notebook(v3.writes_json(old).encode(), "old.ipynb")
    assert upgraded["nbformat"] == 4 and upgraded["cells"][0]["source"] == "x = 1"
    assert upgraded["cells"][0]["metadata"]["nbgrader"] == meta["nbgrader"]
    path = tmp_path / "big.ipynb"
    path.write_bytes(b"{" * 2**20)
    assert submitted_files.read_submitted(path, limit=2**20) == b"{" * 2**20
    path.write_bytes(b"{" * (2**20 + 1))
    big = r"^big.ipynb is 1.0 MB \(1,048,577 bytes\), over the 1 MB "
    with pytest.raises(submitted_files.Refused, match=big):
        submitted_files.read_submitted(path, limit=2**20)
