"""The verdict outside the student's process (course: the instructors' page, grading).

The grader runs each submitted notebook in the sandbox (nbgrader's kernel, for the outputs
and the feedback), but the points of every exercise are decided here, in a process where no
code of the student's ever runs:

- the student's answer cells run in :mod:`tinyk.answers`, a plain interpreter in the same
  sandbox with no IPython, one fresh child process per exercise;
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
learner's objects into :class:`~tinyk.remote.Remote` stand-ins.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from tinyk import answers
from tinyk.answer_server import AnswerServer
from tinyk.exercises import is_solution, is_test, nbgrader, source_text
from tinyk.remote import AnswerFailed, Remote, decode, handle, request_args
from tinyk.switches import GRADING

__all__ = ["AnswerFailed", "AnswerServer", "AssembledThere", "Remote", "Verdict", "defined_names", "judge",
           "main"]


@dataclass
class Verdict:
    """One test cell's result: passed or not, and why not."""

    grade_id: str
    passed: bool
    detail: str = ""


@contextlib.contextmanager
def _swapped(module: Any, **functions: Any) -> Iterator[None]:
    """While a test runs here, ``module``'s functions named in ``functions`` are those (a test
    cell imports them from the module then): ``tinyk.own_work.watched`` that also takes
    remotes (:func:`_watched`), ``tinyk.parts``' that assemble models over there
    (:func:`_model_functions`)."""
    originals = {name: getattr(module, name) for name in functions}
    for name, function in functions.items():
        setattr(module, name, function)
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(module, name, function)


def _watched(part: str, fn: Any, forbid: tuple = ()) -> Any:
    """:func:`tinyk.own_work.watched`, also for a learner's object that lives in their process
    (watched there)."""
    if isinstance(fn, Remote):
        server, number = handle(fn)
        return server.ask(("watch", number, part, list(forbid)))
    from tinyk.own_work import watched

    return watched(part, fn, forbid)


class AssembledThere(torch.nn.Module):
    """What ``build_model(base, parts)`` gives a test here when the parts are the learner's
    and ``base`` a model of :data:`tinyk.answers.PREPARED`: the model assembled over there,
    from the same weights, whose forward passes run there on this side's inputs; the logits
    and the loss come back as plain tensors. ``config`` and ``parameters()`` are ``base``'s
    (for :func:`tinyk.generate`). A :class:`tinyk.KVCache` handed to it stands for one of
    its own over there, made at its first use; this side's copy only counts the tokens.
    :meth:`here` builds the same parts into a model on this side instead (each part's call
    crossing), for :func:`tinyk.parts.first_divergence`'s layer-by-layer walk."""

    def __init__(self, there: Remote, base: torch.nn.Module, parts: dict[str, Any], build: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_assembled", (there, base, parts, build))  # not a submodule
        self.config = base.config
        self._caches: dict[int, tuple[Any, Remote]] = {}

    def parameters(self, recurse: bool = True) -> Any:
        """``base``'s parameters (the same weights as the model over there)."""
        return self._assembled[1].parameters(recurse)

    def forward(self, input_ids: torch.Tensor, *args: Any, cache: Any = None, **options: Any) -> Any:
        """The model's forward pass over there: its logits and loss, checked to be tensors."""
        from tinyk.model import CausalLMOutput

        there = self._assembled[0]
        if cache is not None and id(cache) not in self._caches:
            server, number = handle(there)
            made = server.ask(("cache", number, cache.keys[0].shape[0], cache.max_len))
            self._caches[id(cache)] = (cache, made)  # the cache kept alive: its id stays its own
        out = there(input_ids, *args, cache=None if cache is None else self._caches[id(cache)][1], **options)
        logits, loss = out.logits, out.loss
        if type(logits) is not torch.Tensor or not (loss is None or type(loss) is torch.Tensor):
            raise AnswerFailed("the model assembled from the learner's parts returned logits or a "
                               "loss that are not tensors")
        if cache is not None:
            cache.advance(input_ids.shape[1])
        return CausalLMOutput(logits, loss)

    def here(self) -> torch.nn.Module:
        """The same parts built into ``base`` on this side."""
        _, base, parts, build = self._assembled
        return build(base, parts)


def _prepared(base: Any) -> str | None:
    """The name in :data:`tinyk.answers.PREPARED` of the model ``base`` is (loaded here), if any."""
    for name, (where, _) in answers.PREPARED.items():
        module, function = where.rsplit(".", 1)
        load = getattr(importlib.import_module(module), function)
        if load.cache_info().currsize and base is load()[0]:
            return name
    return None


def _model_functions(module: Any) -> dict[str, Any]:
    """``tinyk.parts``' ``build_model`` that assembles a prepared model with the learner's
    parts over there (:class:`AssembledThere`), and its ``first_divergence`` that walks such a
    model built here; each as the module's own for anything else."""
    build, diverge = module.build_model, module.first_divergence

    def build_model(base: Any, parts: Any = None, /, **more: Any) -> Any:
        given = {**(parts or {}), **more}
        there = next((p for p in given.values() if isinstance(p, Remote)), None)
        name = _prepared(base) if there is not None else None
        if there is None or name is None:
            return build(base, parts, **more)
        server = handle(there)[0]
        model = server.ask(("assemble", name, request_args(given, [], server)))
        if not isinstance(model, Remote):
            raise AnswerFailed("the learner's process sent no model for the assembled parts")
        return AssembledThere(model, base, given, build)

    def first_divergence(model: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(model, AssembledThere):
            model = model.here()
        return diverge(model, *args, **kwargs)

    return {"build_model": build_model, "first_divergence": first_divergence}


def defined_names(sources: Sequence[str]) -> list[str]:
    """The names the answer cells bind at their top level (def, class, assignment)."""
    names: list[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
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
        with (_swapped(tinyk.own_work, watched=_watched),
              _swapped(tinyk.parts, **_model_functions(tinyk.parts)),
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
    again). ``only``: the test cells (grade_ids) to judge, when not all of them."""
    own = server is None
    server = server or AnswerServer()
    skip = skip or {}
    try:
        return [Verdict(grade_id, False, skip[grade_id]) if grade_id in skip
                else _run_test(server, grade_id, answer, test, parts)
                for grade_id, answer, test, parts in _exercises(source, submitted)
                if only is None or grade_id in only]
    finally:
        if own:
            server.close()


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
