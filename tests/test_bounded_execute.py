"""The kernel run's outputs, bounded: what a flood of prints leaves in the autograded notebook
(tinyk.grading.bounded_execute), that the outputs deciding a grade survive it, and what it
leaves in nbgrader's and the warm server's logs (tinyk.grading.runner.BoundedLog).

Messages as nbclient hands them over, without a kernel: the end-to-end run of a flood is the
``print_flood`` student of tests/test_grading.py's batch.
"""

from __future__ import annotations

import subprocess
import sys

from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.utils import determine_grade

from tinyk.grading import runner
from tinyk.grading.bounded_execute import (
    CELL_OUTPUT_LIMIT,
    DECISIVE_LIMIT,
    NOTEBOOK_OUTPUT_LIMIT,
    BoundedExecute,
    size,
)

MIB = 2**20


def _client() -> BoundedExecute:
    client = BoundedExecute()
    client.reset_execution_trackers()
    client.clear_before_next_output = False  # what nbclient sets as a cell starts
    return client


def _message(kind: str, **content: object) -> dict:
    return {"msg_type": kind, "header": {"msg_type": kind}, "parent_header": {"msg_id": "run"},
            "content": content}


def _stream(text: str, name: str = "stdout") -> dict:
    return _message("stream", name=name, text=text)


def _test_cell(outputs: list) -> object:
    cell = new_code_cell("assert double(2) == 4", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 2, "grade_id": "a_test"}})
    cell.outputs = outputs
    return cell


def test_a_flood_keeps_the_first_bytes_of_a_cell_and_counts_the_rest():
    client, outs = _client(), []
    for _ in range(20):  # 20 MiB printed, one MiB a message
        client.output(outs, _stream("x" * MIB), None, 0)
    assert sum(size(o) for o in outs) == CELL_OUTPUT_LIMIT == 4 * MIB
    assert client.cell_dropped == 20 * MIB - CELL_OUTPUT_LIMIT
    # a message that crosses the bound keeps the part that fits
    client, outs = _client(), []
    client.output(outs, _stream("y" * (CELL_OUTPUT_LIMIT - 10)), None, 0)
    client.output(outs, _stream("z" * 100), None, 0)
    assert outs[-1].text == "z" * 10 and client.cell_dropped == 90


def test_the_outputs_that_decide_a_grade_survive_the_flood():
    """nbgrader scores a test cell 0 on its first error or stderr output: a flood of stdout
    before them must not drop them (that would turn a failing test into full points)."""
    client, outs = _client(), []
    for _ in range(10):
        client.output(outs, _stream("x" * MIB), None, 0)
    client.output(outs, _message("error", ename="AssertionError", evalue="v" * MIB,
                                 traceback=["line " * 1000] * 50), None, 0)
    assert outs[-1].output_type == "error" and len(outs[-1].evalue) == DECISIVE_LIMIT
    assert sum(map(len, outs[-1].traceback)) == DECISIVE_LIMIT
    assert determine_grade(_test_cell(outs)) == (0, 2.0)
    client, outs = _client(), []
    for _ in range(10):
        client.output(outs, _stream("x" * MIB), None, 0)
    for _ in range(1000):  # only the first stderr output past the bound is kept
        client.output(outs, _stream("e" * 100, "stderr"), None, 0)
    assert [o.get("name") for o in outs[4:]] == ["stderr"]
    assert determine_grade(_test_cell(outs)) == (0, 2.0)
    client, outs = _client(), []  # no decisive output: the flood of stdout alone keeps full points
    for _ in range(10):
        client.output(outs, _stream("x" * MIB), None, 0)
    assert determine_grade(_test_cell(outs)) == (2.0, 2.0)


def test_a_notebook_keeps_its_own_bound_across_cells():
    client = _client()
    cells = NOTEBOOK_OUTPUT_LIMIT // CELL_OUTPUT_LIMIT + 2
    kept = []
    for index in range(cells):
        client.cell_kept = client.cell_dropped = client.cell_past = 0  # as preprocess_cell does
        outs: list = []
        for _ in range(CELL_OUTPUT_LIMIT // MIB + 1):
            client.output(outs, _stream("x" * MIB), None, index)
        kept.append(sum(size(o) for o in outs))
    assert sum(kept) == NOTEBOOK_OUTPUT_LIMIT and kept[-1] == 0


def test_an_update_of_a_display_is_cut_to_a_cells_bound():
    """display(..., display_id=...) then update_display with 10 MiB of HTML: the output shown
    keeps a cell's bound of it."""
    client = _client()
    cell = new_code_cell("")
    client.nb = new_notebook(cells=[cell])
    shown = _message("display_data", data={"text/html": "<p>0</p>"}, metadata={},
                     transient={"display_id": "bar"})
    client.process_message(shown, cell, 0)
    update = _message("update_display_data", data={"text/html": "x" * (10 * MIB)}, metadata={},
                      transient={"display_id": "bar"})
    client.process_message(update, cell, 0)
    assert len(cell.outputs) == 1 and len(cell.outputs[0].data["text/html"]) == CELL_OUTPUT_LIMIT


def test_autograde_runs_the_bounded_execute_in_place_of_nbgraders():
    names = runner.autograde_preprocessors()
    assert names[0] == "tinyk.grading.bounded_execute.BoundedExecute"
    assert "nbgrader.preprocessors.execute.Execute" not in names
    assert "nbgrader.preprocessors.saveautogrades.SaveAutoGrades" in names  # the rest as nbgrader has it
    cmd, _ = runner._command(["autograde", "chapter05"], runner.Path("/course"), None, None)
    assert [a.split("=", 1)[1] for a in cmd if a.startswith("--Autograde.autograde_preprocessors=")] == names
    cmd, _ = runner._command(["generate_feedback", "chapter05"], runner.Path("/course"), None, None)
    assert not any(a.startswith("--Autograde.") for a in cmd)


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
