"""The verdict outside the student's process (course: the instructors' page, grading).

The grader runs each submitted notebook in the sandbox (nbgrader's kernel, for the outputs
and the feedback), but the points of every exercise are decided here, in a process where no
code of the student's ever runs:

- the student's answer cells run in :mod:`tinyk.answers`, a plain interpreter in the same
  sandbox with no IPython, one fresh child process per exercise, and each notebook's in new
  namespaces of its own (a private /tmp, no process of an earlier notebook's answers);
- each exercise's test cell, visible and hidden asserts, runs here, in this process, with
  the names the answer cells bind standing for their values: plain data as it is (numbers,
  lists, tensors rebuilt from bytes), a function or a module as a :class:`Remote` whose
  calls run over there on this side's inputs and send plain data back;
- a test that puts the learner's parts into a model (``build_model(base, parts)``, 05.10's
  capstone on SmolLM2) gets :class:`AssembledThere`: the model is assembled over there, from
  the same weights loaded there before the answer ran (:data:`tinyk.answers.PREPARED`), and
  each forward pass is one call (its logits and loss come back), not one call per part;
- what comes back is checked for its type (``type(x) is torch.Tensor``, a real ``float``):
  a tensor subclass or an object that lies about equality never crosses.

So nothing the student's code patches, hooks or subclasses (``torch.allclose``, IPython's
hooks, a torch function mode, the notebook's metadata) takes part in the comparisons. The
own-work watch (:mod:`tinyk.own_work`) still runs in the student's process, where a
determined student could switch it off: the instructors' page says so.

A test cell runs here unchanged, with these limits: a function it hands the learner's code
runs here when that code calls it (its arguments and result cross as data), a module it
hands over is sent as a copy; a change made in place to a value it fetched
(``module.weight.fill_``) stays here (a test loads a state dict instead); a backward pass
through the learner's code works for calls that return one tensor.

The verdict's modules: this one runs the test cells (:func:`judge`, ``python -m
tinyk.verdict``); :mod:`tinyk.answer_server` starts the learner's process and carries the
requests and replies; :mod:`tinyk.remote` turns a reply into values of this process and the
learner's objects into :class:`~tinyk.remote.Remote` stand-ins; :mod:`tinyk.assembled`
gives the course's functions a test cell calls (the own-work watch, ``build_model``) their
versions for objects that live over there.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from tinyk import answers
from tinyk.answer_server import AnswerServer
from tinyk.assembled import AssembledThere, model_functions, swapped, watched_anywhere
from tinyk.exercises import is_solution, is_test, nbgrader, python_tree, source_text
from tinyk.remote import AnswerFailed, Remote, decode
from tinyk.switches import GRADING

__all__ = ["TEST_CELL_LOCK", "AnswerFailed", "AnswerServer", "AssembledThere", "Remote", "Verdict",
           "defined_names", "judge", "main"]

# One test cell at a time in this process: each sets the seed, takes stdout and swaps functions of
# tinyk.own_work and tinyk.parts while it runs. The answer cells, in the learners' processes,
# need no turn: several students' verdicts (the grader's threads) overlap there.
TEST_CELL_LOCK = threading.Lock()


@dataclass
class Verdict:
    """One test cell's result: passed or not, and why not."""

    grade_id: str
    passed: bool
    detail: str = ""


def defined_names(sources: Sequence[str]) -> list[str]:
    """The names the answer cells bind at their top level (def, class, assignment)."""
    names: list[str] = []
    for source in sources:
        tree = python_tree(source)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def _run_test(server: AnswerServer, grade_id: str, answer: list[str], test: str,
              parts: Sequence[str] = ()) -> Verdict:
    """One exercise: its answer cells over there, its test cell here (``parts``: the parts of
    the build track it asks for, whose reference code is withheld over there). A learner's
    process that fails to keep to the protocol is ended; the next exercise gets a new one."""
    prepare = [name for name in answers.PREPARED if re.search(rf"\b{name}\(\)", test)]
    try:
        server.send(("exercise", answer, defined_names(answer), list(parts), prepare))
        reply = server.receive()
        if reply[0] != "ok":
            why = reply[2] if reply[0] == "err" else "its process exited while the answer cells ran"
            if reply[0] != "done":
                server.receive()  # the exercise's process has ended: its "done"
            return Verdict(grade_id, False, f"answer: {why}")
        values = decode(server, reply[1])
    except AnswerFailed as err:
        server.close()
        return Verdict(grade_id, False, f"answer: {err}")
    try:
        verdict = _run_cell(grade_id, test, values)
        if server.proc is not None:
            server.send(("end",))
            while server.receive()[0] != "done":
                pass
        return verdict
    except AnswerFailed as err:
        server.close()
        return Verdict(grade_id, False, f"answer: {err}")


def _run_cell(grade_id: str, test: str, values: dict[str, Any]) -> Verdict:
    """The test cell, here, with the learner's names bound to ``values``."""
    import tinyk.own_work
    import tinyk.parts

    space: dict[str, Any] = {"__name__": "__verdict__", **values}
    try:
        with (TEST_CELL_LOCK, swapped(tinyk.own_work, watched=watched_anywhere),
              swapped(tinyk.parts, **model_functions(tinyk.parts)),
              contextlib.redirect_stdout(io.StringIO())):
            torch.manual_seed(0)
            exec(compile(test, f"<test {grade_id}>", "exec"), space)
    except AnswerFailed:
        raise
    except Exception as err:
        return Verdict(grade_id, False, f"test: {type(err).__name__}: {err}"[:300])
    return Verdict(grade_id, True)


def _answers_by_test(nb: dict) -> list[tuple[str, list[str], str]]:
    """(grade_id, the answer cells before it, its source) of each test cell of ``nb``, in order."""
    found, answer = [], []
    for cell in nb["cells"]:
        if is_solution(cell) and cell.get("cell_type") == "code":
            answer.append(source_text(cell))
        elif is_test(cell):
            found.append((nbgrader(cell).get("grade_id"), answer, source_text(cell)))
            answer = []
    return found


def _exercises(source: dict, submitted: dict) -> list[tuple[str, list[str], str, list[str]]]:
    """(grade_id, the submission's answer cells, the source's test cell, the parts of the build
    track that the source's answer defines) of each exercise decided here."""
    asked = {grade_id: (test, sorted({n for text in answer for n in answers.defines(text)}))
             for grade_id, answer, test in _answers_by_test(source)}
    return [(grade_id, answer, *asked[grade_id]) for grade_id, answer, _ in _answers_by_test(submitted)
            if grade_id in asked]


def judge(source: dict, submitted: dict, server: AnswerServer | None = None,
          skip: dict[str, str] | None = None, only: Collection[str] | None = None) -> list[Verdict]:
    """The verdict of every exercise of ``submitted``, with the tests of
    ``source`` (the instructor's notebook, hidden tests included); the answers run in
    ``server`` (a new one without a sandbox when None). ``skip``: exercises not to run again,
    each with why it failed already (a timeout in the kernel's run: it would only time out
    again). ``only``: the test cells (grade_ids) to judge, when not all of them. The
    notebook's answers start clean in ``server``: nothing an earlier notebook's answers wrote
    or left running there is left (:meth:`AnswerServer.notebook`)."""
    own = server is None
    server = server or AnswerServer()
    skip = skip or {}
    try:
        server.notebook()
        return [Verdict(grade_id, False, skip[grade_id]) if grade_id in skip
                else _run_test(server, grade_id, answer, test, parts)
                for grade_id, answer, test, parts in _exercises(source, submitted)
                if only is None or grade_id in only]
    finally:
        if own:
            server.close()
        else:
            server.leave()


def main(argv: list[str] | None = None) -> int:
    """``python -m tinyk.verdict JOB.json``: JOB lists ``[source, submitted]`` notebook paths,
    the sandbox's command line (``prefix``), ``timeout`` seconds per reply and ``memory_mb``;
    prints, as JSON, a list of verdicts per notebook. One learner's process serves them all."""
    job = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    torch.set_num_threads(1)
    started = time.monotonic()
    server = AnswerServer(job.get("prefix", []), float(job.get("timeout", 60)), job.get("memory_mb"))
    try:
        results = [[asdict(v) for v in judge(json.loads(Path(source).read_text()),
                                             json.loads(Path(submitted).read_text()), server)]
                   for source, submitted in job["notebooks"]]
    finally:
        server.close()
    print(json.dumps({"notebooks": results, "seconds": round(time.monotonic() - started, 2)}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault(GRADING, "1")
    raise SystemExit(main())
