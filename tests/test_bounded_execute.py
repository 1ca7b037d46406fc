"""A notebook's outputs, bounded: what a flood of prints leaves of a cell's outputs in the
learner's process (tinyk.grading.cell_outputs), how the grader reads them back and which of them the
feedback shows (tinyk.grading.shown_outputs), and what a flood leaves in nbgrader's log
(tinyk.grading.runner.BoundedLog).

Without a learner's process: the end-to-end run of a flood is the ``print_flood`` student of
tests/test_grading.py's batch, and the feedback's outputs its ``feedback_run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

from nbformat.v4 import new_code_cell, new_notebook

from tinyk.grading import cell_outputs, runner
from tinyk.grading.cell_outputs import CELL_OUTPUT_LIMIT, Captured, capturing, parse
from tinyk.grading.shown_outputs import VerdictOutputs, hidden_lines, outputs_of_test

MIB = 2**20


def test_a_flood_of_prints_keeps_a_cells_bound_and_says_how_much_it_dropped(monkeypatch):
    """200 MiB printed by one cell: its stream keeps the first 4 MiB, then one line that says
    how much was dropped; what the process holds never grows past that."""
    monkeypatch.setattr(cell_outputs, "CAPTURED", Captured())
    chunk = "x" * MIB
    with capturing():
        for _ in range(200):
            print(chunk, end="")
        kept = sum(map(len, cell_outputs.CAPTURED.outputs[0]["text"]))
    (cell,) = parse(cell_outputs.CAPTURED.take())
    assert kept == CELL_OUTPUT_LIMIT and [o["output_type"] for o in cell] == ["stream", "stream"]
    assert cell[0]["text"] == chunk * 4
    dropped = 200 * MIB - CELL_OUTPUT_LIMIT
    assert cell[1]["text"] == (f"\n[{dropped:,} characters of output dropped: the grader keeps "
                               f"{CELL_OUTPUT_LIMIT:,} a cell and {cell_outputs.NOTEBOOK_OUTPUT_LIMIT:,} "
                               f"a notebook]\n")


def test_a_notebooks_bound_spans_its_cells_and_cuts_every_kind_of_output():
    captured = Captured(cell_limit=10, notebook_limit=25)
    for _ in range(3):
        captured.start()
        captured.stream("stdout", "a" * 20)
        captured.end()
    assert [len(cell[0]["text"]) for cell in captured.cells] == [10, 10, 5]
    captured = Captured()
    captured.start()
    for i in range(20_000):  # many small prints: one stream, its pieces joined once at the cell's end
        captured.stream("stdout", f"{i:09d}\n")
    captured.end()
    assert captured.cells == [[{"output_type": "stream", "name": "stdout",
                                "text": "".join(f"{i:09d}\n" for i in range(20_000))}]]
    captured = Captured(cell_limit=10, notebook_limit=100)
    captured.start()
    captured.data("display_data", {"text/plain": "abc", "text/html": "<b>" + "x" * 50 + "</b>",
                                   "application/json": {"not": "text"}})
    captured.data("execute_result", {"text/plain": "0123456789"})
    captured.error("ValueError", "no", ["line one\n", "line two\n"])
    assert captured.outputs[0]["data"] == {"text/plain": "abc"}  # the plain text alone fits
    assert captured.outputs[1]["data"] == {"text/plain": "0123456"}
    assert captured.outputs[2] == {"output_type": "error", "ename": "ValueError", "evalue": "",
                                   "traceback": []}


def test_the_grader_reads_back_outputs_of_the_expected_form_only():
    sent = [[{"output_type": "stream", "name": "stdout", "text": "ok"},
             {"output_type": "stream", "name": "stdin", "text": "?"},
             {"output_type": "display_data", "data": {"text/html": "<b>x</b>", "image/png": 7}, "extra": 1},
             {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t", 3]},
             {"output_type": "update_display_data", "data": {}}, "text"], {"not": "a cell"}]
    assert parse(json.dumps(sent).encode()) == [
        [{"output_type": "stream", "name": "stdout", "text": "ok"},
         {"output_type": "display_data", "data": {"text/html": "<b>x</b>"}, "metadata": {}}], []]
    assert parse(b"not json") == [] and parse(b'{"a": 1}') == []


TEST = ("got = double(2)\nassert got == 4, f'got {got}'\n### BEGIN HIDDEN TESTS\n"
        "assert double(5) == 10, 'secret'\n### END HIDDEN TESTS\nassert double(0) == 0")


def _verdict(detail: str = "", line: int = 0) -> SimpleNamespace:
    return SimpleNamespace(passed=not detail, detail=detail, line=line)


def test_a_test_cell_shows_a_visible_tests_error_and_nothing_of_a_hidden_one():
    assert hidden_lines(TEST) == {3, 4, 5}
    assert outputs_of_test(_verdict(), TEST) == [] and outputs_of_test(None, TEST) == []
    assert outputs_of_test(_verdict("test: AssertionError: got 3", 2), TEST) == [
        {"output_type": "error", "ename": "AssertionError", "evalue": "got 3",
         "traceback": ["AssertionError: got 3"]}]
    assert outputs_of_test(_verdict("test: AssertionError: got 3", 6), TEST)[0]["evalue"] == "got 3"
    assert outputs_of_test(_verdict("test: AssertionError: secret", 4), TEST) == []  # a hidden line
    assert outputs_of_test(_verdict("test: AssertionError: secret", 0), TEST) == []  # no line: not shown
    answer = outputs_of_test(_verdict("answer: NameError: name 'double' is not defined"), TEST)
    assert [(o["ename"], o["evalue"]) for o in answer] == [("NameError", "name 'double' is not defined")]


def test_autograde_writes_the_verdicts_outputs_in_place_of_running_a_kernel(tmp_path):
    names = runner.autograde_preprocessors()
    assert "tinyk.grading.shown_outputs.VerdictOutputs" in names
    assert "nbgrader.preprocessors.execute.Execute" not in names
    assert "nbgrader.preprocessors.saveautogrades.SaveAutoGrades" in names  # the rest as nbgrader has it
    cmd, _ = runner._command(["autograde", "chapter05"], runner.Path("/course"))
    assert [a.split("=", 1)[1] for a in cmd if a.startswith("--Autograde.autograde_preprocessors=")] == names
    cmd, _ = runner._command(["generate_feedback", "chapter05"], runner.Path("/course"))
    assert not any(a.startswith("--Autograde.") for a in cmd)

    test = new_code_cell("assert True", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                "grade_id": "a_test", "points": 1}})
    cells = [new_code_cell("import math", outputs=[{"output_type": "stream", "name": "stdout",
                                                    "text": "the student's saved output"}]),
             new_code_cell("print(1)"), test, new_code_cell("# skipped when grading"), new_code_cell("after")]
    ran = [["import math", []], ["print(1)", [{"output_type": "stream", "name": "stdout", "text": "1\n"}]],
           ["figure()", [{"output_type": "stream", "name": "stdout", "text": "drawn"}]]]
    shown = tmp_path / "outputs.json"
    shown.write_text(json.dumps({"drill": {"cells": ran, "tests": {"a_test": outputs_of_test(
        _verdict("test: AssertionError: no", 1), "assert True")}}}))
    resources = {"nbgrader": {"notebook": "drill"}}
    nb, _ = VerdictOutputs(path=str(shown)).preprocess(new_notebook(cells=cells), resources)
    assert [c.outputs for c in nb.cells] == [
        [], [{"output_type": "stream", "name": "stdout", "text": "1\n"}],
        [{"output_type": "error", "ename": "AssertionError", "evalue": "no",
          "traceback": ["AssertionError: no"]}],
        [], []]  # a cell emptied for grading, or one after the last test, shows nothing
    assert [c.execution_count for c in nb.cells] == [1, 2, None, None, None]


def test_a_log_keeps_its_first_and_last_bytes_and_never_blocks_its_writer():
    """50 MiB written to a log of 1 MiB, as a kernel's os.write echoed to nbgrader's stdout:
    the start and the end kept, the middle counted."""
    with runner.BoundedLog() as log:
        code = ("import os, sys\nfd = os.open(sys.argv[1], os.O_WRONLY)\nos.write(fd, b'FIRST')\n"
                "for _ in range(50):\n    os.write(fd, b'x' * 2**20)\nos.write(fd, b'LAST')\n")
        subprocess.run([sys.executable, "-c", code, str(log.path)], check=True, timeout=600)
        text = log.text()
    assert text.startswith("FIRST") and text.endswith("LAST")
    assert log.dropped == 50 * MIB + 9 - runner.LOG_LIMIT
    assert f"[{log.dropped:,} bytes of output dropped here: the grader keeps {runner.LOG_LIMIT:,}]" in text
    assert len(text) < runner.LOG_LIMIT + 200 and not log.folder.exists()


def test_a_writer_left_running_holds_no_log_up():
    """A process of the student's still writing when nbgrader has ended: the log's end does not
    wait for it, and its next write goes to a closed pipe."""
    with runner.BoundedLog() as log:
        left = subprocess.Popen([sys.executable, "-c", "import os, sys\n"
                                 "fd = os.open(sys.argv[1], os.O_WRONLY)\nprint('open', flush=True)\n"
                                 "try:\n    while True:\n        os.write(fd, b'y' * 2**16)\n"
                                 "except BrokenPipeError:\n    print('closed')\n", str(log.path)],
                                stdout=subprocess.PIPE, text=True)
        assert left.stdout is not None and left.stdout.readline() == "open\n"
    assert left.communicate(timeout=600)[0] == "closed\n"
    assert len(log.head) + len(log.tail) <= runner.LOG_LIMIT
