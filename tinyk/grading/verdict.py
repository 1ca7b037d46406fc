"""The verdict outside the student's process (course: the instructors' page, grading).

The points of every exercise are decided here, in a process where no code of the student's
ever runs, and no test cell passes through a process that runs the student's code:

- the student's notebook runs in :mod:`tinyk.grading.learner_process`, in the grading sandbox: every code cell
  but the test cells, in order, through IPython's own shell, as Jupyter runs them (the setup
  cell's imports, cells of the student's own, magics), each within the per-cell time limit; a
  cell's error is reported and the run goes on, as in nbgrader's run. Each notebook runs in
  new namespaces of its own (a private /tmp, no process of an earlier notebook's run);
- each exercise's test cell, visible and hidden asserts, runs here, at its place in the
  notebook (after the cells above it ran there), with the names it uses from the notebook
  and those its answer cells bind standing for their values: plain data as it is (numbers,
  lists, tensors rebuilt from bytes), a function or a module as a :class:`Remote` whose calls
  run over there on this side's inputs and send plain data back;
- the package's versions of the parts the notebook's exercises ask for are withheld over
  there before its first cell runs (:func:`tinyk.grading.withheld.withhold`); an exercise that fails
  after the student's code used one of them is judged again, in a run that withholds only its
  own parts (05.3.3's and 05.3.4's answers use tinyk's RoPE, which 05.3.1 and 05.3.2 ask for),
  unless its answer is still the student version's stub (:func:`still_stubs`), which fails in
  any run;
- a test that puts the learner's parts into a model (``build_model(base, parts)``, 05.10's
  capstone on SmolLM2) gets :class:`AssembledThere`: the model is assembled over there, from
  the same weights loaded there before the notebook's cells ran
  (:data:`tinyk.grading.learner_process.PREPARED`), and each forward pass is one call (its logits and loss
  come back), not one call per part;
- what comes back is checked for its type (``type(x) is torch.Tensor``, a real ``float``):
  a tensor subclass or an object that lies about equality never crosses.

So nothing the student's code patches, hooks or subclasses (``torch.allclose``, IPython's
hooks, a torch function mode, the notebook's metadata) takes part in the comparisons. The
own-work watch (:mod:`tinyk.learner.own_code`) still runs in the student's process, where a
determined student could switch it off: the instructors' page says so.

A test cell runs here unchanged, with these limits: a function it hands the learner's code
runs here when that code calls it (its arguments and result cross as data), a module it
hands over is sent as a copy; a change made in place to a value it fetched
(``module.weight.fill_``) stays here (a test loads a state dict instead); a backward pass
through the learner's code works for calls that return one tensor.

The verdict's modules: this one runs the test cells (:func:`judge`, ``python -m
tinyk.grading.verdict``); :mod:`tinyk.grading.answer_server` starts the learner's process and carries the
requests and replies; :mod:`tinyk.grading.proxies` turns a reply into values of this process and the
learner's objects into :class:`~tinyk.grading.proxies.Remote` stand-ins;
:mod:`tinyk.grading.functions_for_proxies`
gives the course's functions a test cell calls (the own-work watch, ``build_model``) their
versions for objects that live over there.
"""


from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from tinyk.courseware.cell_names import BUILTINS, bound_names, free_names, same_code
from tinyk.courseware.exercises import is_solution, is_test, nbgrader, source_text
from tinyk.environment import GRADING
from tinyk.grading import learner_process as answers
from tinyk.grading.answer_server import AnswerServer
from tinyk.grading.cell_outputs import NOTEBOOK_OUTPUT_LIMIT
from tinyk.grading.functions_for_proxies import model_functions, swapped, watched_anywhere
from tinyk.grading.proxies import AnswerFailed, decode
from tinyk.learner.own_code import REFERENCES

__all__ = ["TEST_CELL_LOCK", "Verdict", "judge", "main", "still_stubs"]
GRADER_TRANSPORT = True  # the grader's side: never the learner's code (tinyk.learner.own_code)

# One test cell at a time in this process: each sets the seed, takes stdout and swaps functions of
# tinyk.learner.own_code, tinyk.learner.parts and tinyk.learner.divergence while it runs. The
# notebooks' cells, in the learners' processes, need no turn: several students' verdicts (the
# grader's threads) overlap there; and the wait for the turn is not the student's time
# (AnswerServer.limit_total counts their process's work only).
TEST_CELL_LOCK = threading.Lock()


@dataclass
class Verdict:
    """One test cell's result: passed or not, and why not."""

    grade_id: str
    passed: bool
    detail: str = ""
    line: int = 0  # the test cell's line that raised (its top-level statement), 0 when none did


@dataclass
class _Exercise:
    """One test cell of a submission, and what the notebook runs before it."""

    grade_id: str
    cells: list[tuple[str, bool]]  # the submission's code cells since the previous test cell (source,
    #                                whether it is an answer cell), test cells left out
    test: str  # the source's test cell, hidden asserts included
    parts: list[str]  # the parts of the build track the source's answer defines (withheld)

    @property
    def prepare(self) -> list[str]:
        """The models of :data:`tinyk.grading.learner_process.PREPARED` the test assembles the learner's
        parts into."""
        return [name for name in answers.PREPARED if re.search(rf"\b{name}\(\)", self.test)]


def _cell_segments(nb: dict) -> list[tuple[str, list[dict]]]:
    """(grade_id, the code cells since the previous test cell) of each test cell of ``nb``, in
    order; a grade_id's later test cells are left out, as are the cells after the last one."""
    found: list[tuple[str, list[dict]]] = []
    seen: set[str] = set()
    cells: list[dict] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        if is_test(cell):
            grade_id = nbgrader(cell).get("grade_id")
            if type(grade_id) is str and grade_id not in seen:
                seen.add(grade_id)
                found.append((grade_id, cells))
                cells = []
            continue
        cells.append(cell)
    return found


def _segments(nb: dict) -> list[tuple[str, list[tuple[str, bool]]]]:
    """:func:`_cell_segments`, each cell as (its source, whether it is an answer cell)."""
    return [(grade_id, [(source_text(c), is_solution(c)) for c in cells])
            for grade_id, cells in _cell_segments(nb)]


def _from_answer(cells: list[dict]) -> list[dict]:
    """The cells from the first answer cell on (none when there is no answer cell)."""
    first = next((i for i, cell in enumerate(cells) if is_solution(cell)), len(cells))
    return cells[first:]


def still_stubs(source: dict, submitted: dict, released: dict | None) -> set[str]:
    """The exercises (their test cells' grade_ids) of ``submitted`` whose answer is still the
    stub of ``released`` (the student version, as graded): its cells from the first answer cell
    to the test cell are the release's, one for one, each the same code
    (:func:`~tinyk.courseware.cell_names.same_code`: the Chinese version's words are the same code), and
    the stub binds every name the source's answer binds. Then the test meets the stub's own
    ``raise NotImplementedError()`` whatever the cells above it did: no cell after the stub
    binds those names again, as no cell of the student's own comes between. An answer written
    in a cell of the student's own after the stub, or in the answer cell, is no stub."""
    if released is None:
        return set()
    theirs = {grade_id: _from_answer(cells) for grade_id, cells in _cell_segments(submitted)}
    asked = {grade_id: bound_names([source_text(c) for c in cells if is_solution(c)])
             for grade_id, cells in _cell_segments(source)}
    found = set()
    for grade_id, cells in _cell_segments(released):
        stub, mine = _from_answer(cells), theirs.get(grade_id, [])
        if not stub or len(stub) != len(mine) or not asked.get(grade_id):
            continue
        if not set(asked[grade_id]) <= set(bound_names([source_text(c) for c in stub if is_solution(c)])):
            continue
        if all(is_solution(a) == is_solution(b) and nbgrader(a).get("grade_id") == nbgrader(b).get("grade_id")
               and same_code(source_text(a), source_text(b)) for a, b in zip(stub, mine, strict=True)):
            found.add(grade_id)
    return found


def _exercises(source: dict, submitted: dict) -> list[_Exercise]:
    """Each exercise of ``submitted`` that ``source`` has a test for: the submission's cells
    before it, the source's test cell, and the parts the source's answer defines."""
    asked: dict[str, tuple[str, list[str]]] = {}
    grade_ids = [grade_id for grade_id, _ in _segments(source)]
    source_tests = {nbgrader(c).get("grade_id"): source_text(c) for c in source["cells"] if is_test(c)}
    for grade_id, cells in _segments(source):
        parts = sorted(n for n in bound_names([text for text, answer in cells if answer]) if n in REFERENCES)
        asked[grade_id] = (source_tests[grade_id], parts)
    return [_Exercise(grade_id, cells, *asked[grade_id]) for grade_id, cells in _segments(submitted)
            if grade_id in grade_ids]


def _run_cell(grade_id: str, test: str, values: dict[str, Any]) -> Verdict:
    """The test cell, here, with the learner's names bound to ``values``."""
    import tinyk.learner.divergence
    import tinyk.learner.own_code
    import tinyk.learner.parts

    space: dict[str, Any] = {"__name__": "__verdict__", **values}
    model = model_functions(tinyk.learner.parts, tinyk.learner.divergence)
    try:
        with (TEST_CELL_LOCK, swapped(tinyk.learner.own_code, watched=watched_anywhere),
              swapped(tinyk.learner.parts, build_model=model["build_model"]),
              swapped(tinyk.learner.divergence, first_divergence=model["first_divergence"]),
              contextlib.redirect_stdout(io.StringIO())):
            torch.manual_seed(0)
            exec(compile(test, f"<test {grade_id}>", "exec"), space)
    except AnswerFailed:
        raise
    except Exception as err:
        name = f"<test {grade_id}>"
        line = next((n for frame, n in traceback.walk_tb(err.__traceback__)
                     if frame.f_code.co_filename == name), 0)
        return Verdict(grade_id, False, f"test: {type(err).__name__}: {err}"[:300], line)
    return Verdict(grade_id, True)


@dataclass
class _Shown:
    """One cell of a run of the notebook, as it ran: its source, outputs, error ("" when none)
    and whether it used a withheld part."""

    source: str
    outputs: list[dict]
    why: str = ""
    used: bool = False


def _cell_reply(value: Any) -> tuple[str, bool]:
    """A cell's reply, (its error, whether it used a withheld part): anything else sent in its
    place is no error of the cell's and no stand-in's."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is str and type(value[1]) is bool:
        return value
    return "", False


_UNDEFINED = re.compile(r"^NameError: name '(\w+)' is not defined")
_PART = re.compile(r"tinyk's (\w+) is withheld")


def _stand_ins(cells: Sequence[_Shown]) -> list[bool]:
    """Whether each cell of a run showed what Colab would not: it used a withheld part, or
    failed on a name (``NameError``) that such a cell above could not bind."""
    lost: set[str] = set()
    found = []
    for cell in cells:
        missing = _UNDEFINED.match(cell.why)
        found.append(cell.used or (missing is not None and missing[1] in lost))
        if found[-1]:
            lost.update(bound_names([cell.source]))
    return found


def _note(cell: _Shown) -> dict:
    """What a cell shows in place of its outputs when it used a withheld part."""
    missing, part = _UNDEFINED.match(cell.why), _PART.search(cell.why)
    if cell.used:
        what = f"tinyk's own {part[1]}" if part else "a part of tinyk's own"
        why = (f"it uses {what}, which is withheld while your notebook is graded (an exercise asks "
               f"you to write it)")
    else:
        why = (f"it reads {missing[1] if missing else 'a name'}, which a cell above could not define "
               f"while tinyk's own parts were withheld")
    return {"output_type": "stream", "name": "stdout",
            "text": f"[the grader shows no output of this cell: {why}; in Colab it runs as usual]\n"}


def _outputs(first: list[_Shown], again: Sequence[list[_Shown]]) -> list[tuple[str, list[dict]]]:
    """Each cell of the notebook's first run with its outputs (:func:`judge`'s ``outputs``); a
    cell that showed there what Colab would not (:func:`_stand_ins`) shows its outputs of a
    second run of an exercise, where it ran with fewer parts withheld and did not (within the
    notebook's bound of outputs, :data:`~tinyk.grading.cell_outputs.NOTEBOOK_OUTPUT_LIMIT`, with the
    cells kept), else a note saying why it shows none: never a stand-in's error as the student's."""
    marks, firsts = [_stand_ins(run) for run in again], _stand_ins(first)
    room = NOTEBOOK_OUTPUT_LIMIT - sum(_size(c.outputs) for c, marked in zip(first, firsts, strict=True)
                                       if not marked)  # the notebook's bound holds for the lot
    shown = []
    for i, (cell, stand_in) in enumerate(zip(first, firsts, strict=True)):
        if stand_in:
            other = next((run[i] for run, marked in zip(again, marks, strict=True)
                          if i < len(run) and run[i].source == cell.source and not marked[i]), None)
            if other is not None and _size(other.outputs) <= room:
                room -= _size(other.outputs)
                cell = other
            else:
                cell = _Shown(cell.source, [_note(cell)])
        shown.append((cell.source, cell.outputs))
    return shown


def _size(outputs: list[dict]) -> int:
    """Characters of a cell's outputs, as their JSON counts them (at least their text)."""
    return len(json.dumps(outputs, ensure_ascii=False))


class _Run:
    """One run of a notebook in the learner's process: its cells in order, each within the
    per-cell time limit, and the test cells judged here at their places."""

    def __init__(self, server: AnswerServer, parts: Sequence[str], prepare: Sequence[str],
                 outputs: list[_Shown] | None = None) -> None:
        self.server, self.outputs = server, outputs
        server.send(("run", list(parts), list(prepare)))
        # the grader's set-up over there (the models a test assembles, IPython's shell): not the
        # student's time, and a limit of its own
        reply = server.receive(max(server.timeout, _SET_UP_TIMEOUT), total=False)
        if reply[0] != "ok":
            why = reply[2] if reply[0] == "err" else "its process exited as the notebook's run started"
            if reply[0] != "done":
                server.receive()  # the run's process has ended: its "done"
            raise AnswerFailed(why)

    def cells(self, cells: Sequence[tuple[str, bool]]) -> str:
        """Run ``cells``; the first error of an answer cell among them, else the first time or
        memory limit any of them reached ("" when none): what a failed test is put down to."""
        failed, limit = "", ""
        for source, answer in cells:
            self.server.send(("cell", source, self.server.timeout))
            reply = self.server.receive(self.server.timeout + _CELL_GRACE)
            if reply[0] != "ok":
                raise AnswerFailed("its process exited while a cell ran" if reply[0] == "done"
                                   else f"{reply[1]}: {reply[2]}", ended=reply[0] == "done")
            why, used = _cell_reply(decode(self.server, reply[1]))
            if self.outputs is not None:
                self.outputs.append(_Shown(source, [], why, used))
            if answer and why and not failed:
                failed = why
            if why.startswith(("TimeoutError", "MemoryError")) and not limit:
                limit = why
        if self.outputs is not None and cells:  # each cell's outputs, as the kernel would show them
            from tinyk.grading.cell_outputs import parse

            sent = self.server.ask(("outputs",))
            shown = parse(sent.numpy().tobytes()) if type(sent) is torch.Tensor else []
            for i, cell in enumerate(self.outputs[-len(cells):]):
                cell.outputs = shown[i] if i < len(shown) else []
        return failed or limit

    def judge(self, exercise: _Exercise, answer_error: str) -> Verdict:
        """The exercise's test cell, here, with the names it uses from the notebook and those
        its answer cells bind (a test may look them up by name, as 05.10.3's does)."""
        answer = [text for text, is_answer in exercise.cells if is_answer]
        if re.search(r"\bglobals\(\)", exercise.test):  # a test that looks names up (05.10.3's parts)
            answer = [text for text, _ in exercise.cells]
        # a test's abs, max or all is Python's own, never the student's: an answer's ``def abs``
        # would run in the test's comparisons
        names = [*free_names(exercise.test), *(n for n in bound_names(answer) if n not in BUILTINS)]
        try:
            values = self.server.ask(("names", list(dict.fromkeys(names))))
        except AnswerFailed:
            raise
        except Exception as err:  # a value the learner's process could not send
            return Verdict(exercise.grade_id, False, f"answer: {type(err).__name__}: {err}"[:300])
        result = _run_cell(exercise.grade_id, exercise.test, values)
        if not result.passed and answer_error:
            return Verdict(exercise.grade_id, False, f"answer: {answer_error}"[:300])
        return result

    def touched(self) -> bool:
        """Whether the learner's code has used a withheld part of the package so far."""
        return bool(self.server.ask(("touched",)))

    def end(self) -> None:
        if self.server.proc is not None:
            self.server.send(("end",))
            while self.server.receive()[0] != "done":
                pass


# Seconds the grader waits for a cell's reply past the per-cell time limit, which the learner's
# process enforces itself (a cell that overruns it ends with a TimeoutError, as in a kernel).
_CELL_GRACE = 5.0
# Seconds for a run's set-up over there (loading SmolLM2 for 05.10's capstone, IPython's shell),
# on a busy machine: the grader's own work, not counted in the student's time.
_SET_UP_TIMEOUT = 300.0


def _first_run(server: AnswerServer, exercises: list[_Exercise], judged: Collection[str],
               skip: dict[str, str], outputs: list[_Shown] | None = None,
               stubs: Collection[str] = ()) -> tuple[dict[str, Verdict], set[str]]:
    """Run the notebook once with every judged exercise's parts withheld; the verdicts, and the
    exercises that failed after a withheld part was used, but for those whose answer is still
    the stub (``stubs``: it fails in any run); ``outputs``: see :func:`judge`."""
    parts = sorted({p for e in exercises if e.grade_id in judged for p in e.parts})
    prepare = sorted({m for e in exercises if e.grade_id in judged for m in e.prepare})
    verdicts: dict[str, Verdict] = {}
    again: set[str] = set()
    try:
        run = _Run(server, parts, prepare, outputs)
    except AnswerFailed as err:
        return {e.grade_id: Verdict(e.grade_id, False, f"answer: {err}") for e in exercises}, set()
    current, in_test = "", False
    try:
        for exercise in exercises:
            current = exercise.grade_id
            answer_error = run.cells(exercise.cells)
            if exercise.grade_id in skip:
                verdicts[exercise.grade_id] = Verdict(exercise.grade_id, False, skip[exercise.grade_id])
            elif exercise.grade_id in judged:
                in_test = True
                verdicts[exercise.grade_id] = found = run.judge(exercise, answer_error)
                in_test = False
                if not found.passed and sorted(exercise.parts) != parts and current not in stubs \
                        and run.touched():
                    again.add(exercise.grade_id)
        run.end()
    except AnswerFailed as err:
        server.close()
        for exercise in exercises:
            grade_id = exercise.grade_id
            if grade_id in verdicts or grade_id not in judged:
                continue
            if grade_id == current or not in_test:  # a cell ended it: so would it in Jupyter
                verdicts[grade_id] = Verdict(grade_id, False, f"answer: {err}")
            else:  # a test's call into the learner's code ended it: the next ones get a run
                again.add(grade_id)
    return verdicts, again


def _own_run(server: AnswerServer, exercises: list[_Exercise], grade_id: str,
             outputs: list[_Shown] | None = None) -> Verdict:
    """The exercise ``grade_id`` judged again in a run of its own, with only its own parts
    withheld: an answer may use the package's versions of the notebook's other parts.
    ``outputs``, a list, gets the cells of that run as they ran."""
    index = next(i for i, e in enumerate(exercises) if e.grade_id == grade_id)
    exercise = exercises[index]
    spent = server.spent  # a run of the grader's choosing: not counted in the student's time
    try:
        run = _Run(server, exercise.parts, exercise.prepare, outputs)
        run.cells([cell for e in exercises[:index] for cell in e.cells])
        result = run.judge(exercise, run.cells(exercise.cells))
        run.end()
        return result
    except AnswerFailed as err:
        server.close()
        return Verdict(grade_id, False, f"answer: {err}")
    finally:
        server.spent = spent


def judge(source: dict, submitted: dict, server: AnswerServer | None = None,
          skip: dict[str, str] | None = None, only: Collection[str] | None = None,
          outputs: list[tuple[str, list[dict]]] | None = None, released: dict | None = None) -> list[Verdict]:
    """The verdict of every exercise of ``submitted``, with the tests of ``source`` (the
    instructor's notebook, hidden tests included). The submission's code cells run in
    ``server`` (a new one without a sandbox when None) in order, as Jupyter runs them, test
    cells left out; each test cell runs here at its place, with the names it uses from the
    notebook. The package's versions of the parts the notebook asks for are withheld there
    from the start; an exercise that fails after the learner's code used one of them is run
    again with only its own parts withheld. ``skip``: exercises not to judge, each with why it
    failed already (a timeout in the kernel's run: it would only time out again); their cells
    still run. ``only``: the test cells (grade_ids) to judge, when not all of them. The
    notebook starts clean in ``server``: nothing an earlier notebook's answers wrote or left
    running there is left (:meth:`AnswerServer.notebook`). ``outputs``, a list, gets each cell
    of the notebook's first run with what it showed, in order ``(source, outputs)``: its
    prints, displays, result and error, within :mod:`tinyk.grading.cell_outputs`' bounds; no test cell
    and nothing that ran in a test's calls is among them. A cell that used a withheld part
    there (or failed on a name such a cell could not bind) shows what it showed in a second
    run where it did not, or else a note that says why it shows nothing (:func:`_outputs`).
    ``released``: the student version
    the submission was made from (as graded); an exercise whose answer is still its stub
    (:func:`still_stubs`) is not run again: it fails in any run."""
    own = server is None
    server = server or AnswerServer()
    skip = skip or {}
    first: list[_Shown] | None = None if outputs is None else []
    seconds: list[list[_Shown]] = []
    try:
        server.notebook()
        exercises = _exercises(source, submitted)
        judged = [e.grade_id for e in exercises if (only is None or e.grade_id in only)]
        todo = [g for g in judged if g not in skip]
        if exercises and todo:
            verdicts, again = _first_run(server, exercises[:max(i for i, e in enumerate(exercises)
                                                                 if e.grade_id in todo) + 1], todo, skip,
                                         first, still_stubs(source, submitted, released))
        else:
            verdicts, again = {}, set()
        for grade_id in sorted(again):
            seconds.append([])
            verdicts[grade_id] = _own_run(server, exercises, grade_id, None if first is None else seconds[-1])
        if outputs is not None and first is not None:
            outputs += _outputs(first, seconds)
        return [verdicts.get(g) or Verdict(g, False, skip.get(g, "answer: not judged")) for g in judged]
    finally:
        if own:
            server.close()
        else:
            server.leave()


def main(argv: list[str] | None = None) -> int:
    """``python -m tinyk.grading.verdict JOB.json``: JOB lists ``[source, submitted]`` notebook paths,
    the sandbox's command line (``prefix``), ``timeout`` seconds per reply and ``memory_mb``;
    prints, as JSON, a list of verdicts per notebook. One learner's process serves them all."""
    job = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    torch.set_num_threads(1)
    started = time.monotonic()
    with AnswerServer(job.get("prefix", []), float(job.get("timeout", 60)), job.get("memory_mb")) as server:
        results = [[asdict(v) for v in judge(json.loads(Path(source).read_text()),
                                             json.loads(Path(submitted).read_text()), server)]
                   for source, submitted in job["notebooks"]]
    print(json.dumps({"notebooks": results, "seconds": round(time.monotonic() - started, 2)}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault(GRADING, "1")
    raise SystemExit(main())
