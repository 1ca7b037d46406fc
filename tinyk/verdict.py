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
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import pickle
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from tinyk import answers
from tinyk.exercises import is_solution, is_test, nbgrader, source_text
from tinyk.switches import GRADING

__all__ = ["AnswerServer", "AssembledThere", "Remote", "Verdict", "judge", "main"]

_START_TIMEOUT = 300.0  # seconds for the learner's process to start (import torch), on a busy machine
_REPLY_LIMIT = 256 * 2**20  # bytes of one reply: more is an error, never a crash of the grader
PACKAGE = Path(answers.__file__).resolve().parent  # the tinyk package's folder, hidden from the learner
_LIBRARY = "/tmp/.tinyk-answers"  # where the learner's process finds its copy, in the sandbox's own /tmp


class AnswerFailed(Exception):
    """The learner's process failed to answer (it exited, timed out, or sent what is not data);
    ``ended``: its exercise's process is gone, nothing more to tell it."""

    def __init__(self, message: str, ended: bool = False) -> None:
        super().__init__(message)
        self.ended = ended


@dataclass
class Verdict:
    """One test cell's result: passed or not, and why not."""

    grade_id: str
    passed: bool
    detail: str = ""


class AnswerServer:
    """The learner's side (:mod:`tinyk.answers`), started under ``prefix`` (the sandbox's
    command line, or nothing), with ``timeout`` seconds for each reply."""

    def __init__(self, prefix: Sequence[str] = (), timeout: float = 60.0,
                 memory_mb: int | None = None) -> None:
        self.prefix, self.timeout, self.memory_mb = list(prefix), timeout, memory_mb
        self.proc: subprocess.Popen | None = None
        self.callbacks: list[Any] = []  # the test's functions that the learner's code may call
        self.log = tempfile.TemporaryFile()  # the student's prints: a file, never a pipe
        self.library: Path | None = None  # the copy of the package the sandboxed process loads

    def start(self) -> None:
        """Start the learner's process now (else at the first request), and wait until it is ready."""
        self._start()

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            preexec = None
            if self.memory_mb is not None:
                import resource

                memory = self.memory_mb * 2**20

                def preexec() -> None:  # the same address-space limit as the student's kernel
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

            self.proc = subprocess.Popen(self._argv(),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                         preexec_fn=preexec, start_new_session=True)
            # its start (importing torch) is not the learner's time: a limit of its own
            if self._frame(max(self.timeout, _START_TIMEOUT)) != ("ready",):
                self.close()
                raise AnswerFailed("the answer's process did not start", ended=True)
        return self.proc

    def _argv(self) -> list[str]:
        """The learner's process's command line. Under bubblewrap (a ``prefix`` that ends
        with ``--``) the package's folder is hidden behind an empty one and the process gets
        a copy of the package, which it imports and deletes (:mod:`tinyk.answers`): no source
        of the course is left there to read."""
        if self.prefix[-1:] != ["--"]:
            return [*self.prefix, sys.executable, "-I", answers.__file__]
        if self.library is not None:
            shutil.rmtree(self.library, ignore_errors=True)
        self.library = Path(tempfile.mkdtemp(prefix="tinyk-answers-"))
        shutil.copytree(PACKAGE, self.library / "tinyk", ignore=shutil.ignore_patterns("__pycache__"))
        hide = ["--tmpfs", str(PACKAGE), "--bind", str(self.library), _LIBRARY]
        script = f"{_LIBRARY}/tinyk/answers.py"
        return [*self.prefix[:-1], *hide, "--", sys.executable, "-I", script, _LIBRARY]

    def close(self) -> None:
        """End the learner's process and every process of its session (an exercise's child
        that still runs, whatever it started)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
        if self.library is not None:
            shutil.rmtree(self.library, ignore_errors=True)
            self.library = None

    def send(self, request: tuple) -> None:
        proc = self._start()
        try:
            answers.write_frame(proc.stdin, pickle.dumps(request))  # type: ignore[arg-type]
        except OSError as err:
            self.close()
            raise AnswerFailed(f"the answer's process has ended ({err.strerror})", ended=True) from err

    def _frame(self, timeout: float) -> Any:
        """The next frame, read back as data (``weights_only``), within ``timeout`` seconds."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        reader = _Deadline(proc.stdout.fileno(), timeout)
        try:
            frame = answers.read_frame(reader, _REPLY_LIMIT)  # type: ignore[arg-type]
        except TimeoutError:
            self.close()
            raise AnswerFailed(f"no answer within {timeout:g} s (the per-cell time limit)",
                               ended=True) from None
        if frame is None:
            self.close()
            raise AnswerFailed("the answer's process ended or sent more than 256 MB", ended=True)
        try:
            return torch.load(io.BytesIO(frame), weights_only=True)
        except Exception as err:
            raise AnswerFailed(f"the answer sent something that is not plain data ({err})"[:300]) from err

    def receive(self) -> tuple:
        """The next reply, checked to be data, within the per-reply timeout."""
        self._start()
        reply = self._frame(self.timeout)
        if (type(reply) is not tuple or not reply or reply[0] not in ("ok", "err", "done", "cb")
                or (reply[0] == "err" and not (len(reply) == 3 and all(type(x) is str for x in reply)))
                or (reply[0] == "ok" and len(reply) != 2)):
            raise AnswerFailed("the answer's process sent a malformed reply")
        return reply

    def ask(self, request: tuple) -> Any:
        """Send ``request`` and return the decoded value of its reply (raises what it raised)."""
        self.send(request)
        reply = self.receive()
        while reply[0] == "cb":
            self._callback(reply)
            reply = self.receive()
        if reply[0] == "done":
            raise AnswerFailed("the answer's process exited while running the learner's code", ended=True)
        if reply[0] == "err":
            raise _exception(reply)
        return _decode(self, reply[1])


    def _callback(self, reply: tuple) -> None:
        """Run the test's function the learner's code called, and send its result back."""
        if len(reply) != 4 or type(reply[1]) is not int or not 0 <= reply[1] < len(self.callbacks):
            raise AnswerFailed("the answer's process asked for a function the test never gave it")
        args, kwargs = _decode(self, reply[2]), _decode(self, reply[3])
        if type(args) is not list or type(kwargs) is not dict:
            raise AnswerFailed("the answer's process sent malformed arguments")
        try:
            result = self.callbacks[reply[1]](*args, **kwargs)
        except Exception as err:
            self.send(("cberr", f"{type(err).__name__}: {err}"[:300]))
            return
        tensors: list = []
        self.send(("cbret", _plain(_request_args(result, tensors, self), tensors)))


class _Deadline:
    """A pipe's reads, each waiting only until one deadline (``TimeoutError`` past it): a
    learner's process that sends half a reply and stalls cannot hold the grader."""

    def __init__(self, fd: int, timeout: float) -> None:
        self.fd, self.end = fd, time.monotonic() + timeout

    def read(self, size: int) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, self.end - time.monotonic()))
        if not ready:
            raise TimeoutError
        return os.read(self.fd, min(size, 2**20))


def _exception(reply: tuple) -> BaseException:
    """The learner's exception, as a builtin exception of the same kind (never their class)."""
    name, message = str(reply[1]), str(reply[2])
    kind = getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = RuntimeError
    return kind(message)


_PLAIN = (type(None), bool, int, float, str)
_NAMES = ("__name__", "__qualname__", "__doc__")  # the only dunder attributes asked of a learner's object


def _decode(server: AnswerServer, node: Any, depth: int = 0) -> Any:
    """A reply's tagged tree as values of this process, each of exactly its type."""
    if depth > 30 or type(node) is not tuple or not node or type(node[0]) is not str:
        raise AnswerFailed("the answer's process sent a malformed value")
    tag, rest = node[0], node[1:]
    if tag == "v" and type(rest[0]) in _PLAIN:
        return rest[0]
    if tag == "t" and type(rest[0]) is torch.Tensor:
        return rest[0]
    if tag == "p" and type(rest[0]) is torch.Tensor and type(rest[2]) is bool:
        param = torch.nn.Parameter(rest[0], requires_grad=rest[2])
        if type(rest[1]) is torch.Tensor:
            param.grad = rest[1]
        return param
    if tag == "dtype" and type(rest[0]) is str and isinstance(getattr(torch, rest[0][6:], None), torch.dtype):
        return getattr(torch, rest[0][6:])
    if tag == "size" and type(rest[0]) is list and all(type(n) is int for n in rest[0]):
        return torch.Size(rest[0])
    if tag in ("l", "u") and type(rest[0]) is list:
        items = [_decode(server, v, depth + 1) for v in rest[0]]
        return items if tag == "l" else tuple(items)
    if tag == "d" and type(rest[0]) is list:
        return {_key(k): _decode(server, v, depth + 1) for k, v in _pairs(rest[0])}
    if tag == "h" and len(rest) == 7 and type(rest[0]) is int and type(rest[1]) is str:
        torch_class = getattr(torch.nn, rest[6], None) if type(rest[6]) is str else None
        if not (isinstance(torch_class, type) and issubclass(torch_class, torch.nn.Module)):
            torch_class = torch.nn.Module
        remote = Remote(server, rest[0], rest[1], bool(rest[2]), bool(rest[3]), bool(rest[4]), torch_class)
        if type(rest[5]) is str:  # where the learner's object says it was defined (own work, checked there)
            object.__setattr__(remote, "__module__", rest[5])
        return remote
    if tag == "grad" and len(rest) == 2 and type(rest[0]) is int and type(rest[1]) is torch.Tensor:
        return node
    raise AnswerFailed(f"the answer's process sent a value tagged {tag!r} that is not plain data")


def _pairs(items: list) -> list:
    if not all(type(p) is tuple and len(p) == 2 for p in items):
        raise AnswerFailed("the answer's process sent a malformed dict")
    return items


def _key(key: Any) -> str | int:
    if type(key) not in (str, int):
        raise AnswerFailed("the answer's process sent a dict key that is not a str or an int")
    return key


class Remote:
    """An object of the learner's that stays in their process: a function, a class, a module.

    Calling it, or a method of it, runs there on this side's arguments; an attribute comes
    back as data (a parameter as a copy) or as another ``Remote``. ``isinstance(x,
    torch.nn.Module)`` holds for a remote module, so that test cells run unchanged.
    """

    def __init__(self, server: AnswerServer, number: int, kind: str, module: bool, is_callable: bool,
                 is_class: bool, torch_class: type = torch.nn.Module) -> None:
        object.__setattr__(self, "_remote",
                           (server, number, kind, module, is_callable, is_class, torch_class))

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        if self._remote[5]:
            return type
        return self._remote[6] if self._remote[3] else Remote  # e.g. nn.Linear for a learner's nn.Linear

    @property
    def __bases__(self) -> tuple[type, ...]:
        """A learner's class derived from ``nn.Module`` passes ``issubclass(x, nn.Module)``."""
        if not self._remote[5]:
            raise AttributeError("__bases__")
        return (torch.nn.Module,) if self._remote[3] else (object,)

    def __repr__(self) -> str:
        return f"<the learner's {self._remote[2]}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _NAMES:
            raise AttributeError(name)
        server, number = self._remote[:2]
        return _transport(server.ask, ("get", number, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"the learner's {self._remote[2]} lives in their process: set {name} through "
                        f"a method of theirs (e.g. load_state_dict), not from the test")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _transport(self._call, args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        server, number = self._remote[:2]
        needs: list = []
        args, kwargs = _request_args(args, needs, server), _request_args(kwargs, needs, server)
        if needs and torch.is_grad_enabled() and any(t.requires_grad for t in needs):
            return _RemoteCall.apply(self, args, kwargs, *needs)
        return server.ask(("call", number, _plain(args, needs), _plain(kwargs, needs), None))


def _transport(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` as the course's transport, not the learner's code: an own-work watch on
    this side (:mod:`tinyk.own_work`) looks through it (the learner's code is watched where it runs)."""
    from tinyk.own_work import trusted

    return trusted(fn)(*args)


def _request_args(value: Any, tensors: list, server: AnswerServer, depth: int = 0) -> Any:
    """``value`` ready to send: handles as references, tensors that need a gradient set apart,
    a module by value, any other function of the test's as a callback that runs on this side."""
    if depth > 30:
        raise ValueError("arguments nested more than 30 levels deep")
    if isinstance(value, Remote):
        return (answers.REF, value._remote[1])
    if type(value) is torch.Tensor or isinstance(value, torch.nn.Parameter):
        tensors.append(value)
        return (answers.ARG, len(tensors) - 1)
    if type(value) in (list, tuple):
        return type(value)(_request_args(v, tensors, server, depth + 1) for v in value)
    if type(value) is dict:
        return {k: _request_args(v, tensors, server, depth + 1) for k, v in value.items()}
    if callable(value) and not isinstance(value, type | torch.nn.Module):
        server.callbacks.append(value)
        return (answers.CALLBACK, len(server.callbacks) - 1)
    return value


def _plain(value: Any, tensors: list) -> Any:
    """The tensors put back in place (a call that needs no gradient sends them as they are)."""
    if type(value) is tuple and len(value) == 2 and value[0] == answers.ARG:
        return tensors[value[1]].detach()
    if type(value) in (list, tuple):
        return type(value)(_plain(v, tensors) for v in value)
    if type(value) is dict:
        return {k: _plain(v, tensors) for k, v in value.items()}
    return value


class _RemoteCall(torch.autograd.Function):
    """A call into the learner's process inside this side's autograd graph: the forward runs
    there, and so does the backward (their autograd), sending the input gradients back."""

    @staticmethod
    def forward(ctx: Any, remote: Remote, args: Any, kwargs: Any, *tensors: torch.Tensor) -> torch.Tensor:
        server, number = remote._remote[:2]
        grad = [(t.detach(), bool(t.requires_grad)) for t in tensors]
        reply = server.ask(("call", number, args, kwargs, grad))
        ctx.server, ctx.ticket = server, reply[1]
        return reply[2]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        grads = ctx.server.ask(("backward", ctx.ticket, grad))
        return (None, None, None, *grads)


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


def _watched(part: str, fn: Any, forbid: tuple = ()) -> Any:
    """:func:`tinyk.own_work.watched` for a learner's object that lives in their process."""
    if isinstance(fn, Remote):
        server, number = fn._remote[:2]
        return server.ask(("watch", number, part, list(forbid)))
    from tinyk.own_work import watched

    return watched(part, fn, forbid)


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
        values = _decode(server, reply[1])
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


@contextlib.contextmanager
def _swapped(module: Any, **functions: Any) -> Any:
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
        return self._assembled[1].parameters(recurse)

    def forward(self, input_ids: torch.Tensor, *args: Any, cache: Any = None, **options: Any) -> Any:
        from tinyk.model import CausalLMOutput

        there = self._assembled[0]
        if cache is not None and id(cache) not in self._caches:
            server, number = there._remote[:2]
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
    import importlib

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
        server = there._remote[0]
        model = server.ask(("assemble", name, _request_args(given, [], server)))
        if not isinstance(model, Remote):
            raise AnswerFailed("the learner's process sent no model for the assembled parts")
        return AssembledThere(model, base, given, build)

    def first_divergence(model: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(model, AssembledThere):
            model = model.here()
        return diverge(model, *args, **kwargs)

    return {"build_model": build_model, "first_divergence": first_divergence}


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
