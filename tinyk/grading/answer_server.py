"""The learner's process and the requests sent to it (course: the instructors' page, grading).

Part of the verdict outside the student's process (:mod:`tinyk.grading.verdict`). An
:class:`AnswerServer` starts :mod:`tinyk.grading.learner_process` (under the sandbox's command line, with
the package's folder hidden), sends it requests and reads its replies: length-prefixed
frames, each read back as data (``torch.load(weights_only=True)``) within a deadline and the
wire's bounds (:func:`tinyk.grading.answer_wire.load_reply`), so that a learner's process that stalls,
floods or forges a reply ends its own exercise and never the grader. What the learner's code
prints (its process's stderr) is read while the grader waits for a reply, its first
:data:`OUTPUT_LIMIT` bytes kept and the rest counted and dropped (:meth:`AnswerServer.output`).
Under the sandbox, :meth:`AnswerServer.notebook` gives each notebook's answers a clean start:
new namespaces, a private /tmp, nothing an earlier notebook's answers left running.
"""

from __future__ import annotations

import builtins
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tinyk.grading import answer_wire
from tinyk.grading import learner_process as answers
from tinyk.grading.proxies import AnswerFailed, decode, detached_args, request_args

__all__ = ["OUTPUT_LIMIT", "PACKAGE", "AnswerServer"]
GRADER_TRANSPORT = True  # the grader's side: never the learner's code (tinyk.learner.own_code)

_START_TIMEOUT = 300.0  # seconds for the learner's process to start (import torch), on a busy machine
# bytes of the learner's prints kept (the rest is counted, not kept): a traceback or a few pages
# of a learner's debugging prints, never a disk filled by a loop that prints
OUTPUT_LIMIT = 64 * 2**10
PACKAGE = Path(answers.__file__).resolve().parents[1]  # the tinyk package's folder, hidden from the learner
_LIBRARY = "/tmp/.tinyk-answers"  # where the learner's process finds its copy, in the sandbox's own /tmp


class AnswerServer:
    """The learner's side (:mod:`tinyk.grading.learner_process`), started under ``prefix`` (the sandbox's
    command line, or nothing), with ``timeout`` seconds for each reply."""

    def __init__(self, prefix: Sequence[str] = (), timeout: float = 60.0,
                 memory_mb: int | None = None) -> None:
        self.prefix, self.timeout, self.memory_mb = list(prefix), timeout, memory_mb
        self.proc: subprocess.Popen | None = None
        self.callbacks: list[Any] = []  # the test's functions that the learner's code may call
        self.printed = bytearray()  # the first OUTPUT_LIMIT bytes of the learner's prints (stderr)
        self.dropped = 0  # bytes of their prints past those, counted and dropped
        self.errors: int | None = None  # the read end of the learner's process's stderr
        self.library: Path | None = None  # the copy of the package the sandboxed process loads
        self.in_notebook = False  # the exercises sent run in a notebook's own namespaces
        # why the notebooks share the learner's process's namespaces ("" while each has its own;
        # None until the process has started; once said, for the rest of the server's life)
        self.shared: str | None = None
        self.total: float | None = None  # the seconds limit_total gave (None: no total limit)
        self.spent = 0.0  # the seconds spent waiting for the learner's replies since limit_total

    def __enter__(self) -> AnswerServer:
        """``with AnswerServer(...) as server``: the learner's process, started at the first
        request (or by :meth:`start`), is ended on the way out, whatever happened (:meth:`close`)."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def limit_total(self, seconds: float) -> None:
        """From now on, ``seconds`` in all spent waiting for the learner's replies (the
        submission's total time limit); past them, a request fails with that reason (each reply
        keeps its own ``timeout`` as well). Only the learner's own time counts: not the grader's
        work on its side, nor its wait for another student's test cell to end
        (:data:`tinyk.grading.verdict.TEST_CELL_LOCK`), nor the start of the learner's process; the
        verdict leaves out a run's set-up and the runs it adds (``receive(total=False)``,
        :attr:`spent` put back)."""
        self.total, self.spent = seconds, 0.0

    def _left(self) -> float | None:
        return None if self.total is None else max(0.0, self.total - self.spent)

    def _past_total(self) -> AnswerFailed:
        return AnswerFailed(f"the submission ran past its total time limit ({self.total:g} s)", ended=True)

    def start(self) -> None:
        """Start the learner's process now (else at the first request), and wait until it is ready."""
        self._start()

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            if self._left() == 0.0:
                raise self._past_total()
            self._close_errors()
            self.errors, errors = os.pipe()
            os.set_blocking(self.errors, False)
            try:
                self.proc = subprocess.Popen(self._argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=errors, preexec_fn=_memory_limit(self.memory_mb),
                                             start_new_session=True)
            finally:
                os.close(errors)
            # its start (importing torch) is not the learner's time: a limit of its own
            ready = self._frame(max(self.timeout, _START_TIMEOUT), total=False)
            if not (type(ready) is tuple and len(ready) == 2 and ready[0] == "ready"
                    and type(ready[1]) is str):
                self.close()
                raise AnswerFailed("the answer's process did not start", ended=True)
            self.shared = self.shared or ready[1]
            if self.in_notebook:
                self._enter()
        return self.proc

    def notebook(self) -> None:
        """The next exercises are a new notebook's: under the sandbox, they run in new
        namespaces of their own (a private /tmp and /dev/shm, new empty writable folders), and
        whatever the previous notebook's answers left there, files or running processes, is
        gone (:mod:`tinyk.grading.learner_process`). Where that cannot be, :attr:`shared` says why."""
        self.leave()
        self.in_notebook = True
        if self.proc is not None and self.proc.poll() is None:
            try:
                self._enter()
            except AnswerFailed:
                self.close()  # the next request starts a new process, in a new notebook

    def leave(self) -> None:
        """End the current notebook's namespaces, and every process still running there."""
        if self.in_notebook and not self.shared and self.proc is not None and self.proc.poll() is None:
            try:
                self.send(("leave",))
            except AnswerFailed:
                pass  # ended, with all it ran
        self.in_notebook = False

    def _enter(self) -> None:
        """Ask the running learner's process for the notebook's namespaces, and wait until
        they are made."""
        if self.shared:
            return
        self.send(("notebook",))
        reply = self.receive()
        if reply[0] != "ok":
            why = reply[-1] if reply[0] == "err" else reply[0]
            self.shared = f"a notebook's namespaces could not be made: {why}"

    def _argv(self) -> list[str]:
        """The learner's process's command line. Under bubblewrap (a ``prefix`` that ends
        with ``--``) the package's folder is hidden behind an empty one and the process gets
        a copy of the package, which it imports and deletes (:mod:`tinyk.grading.learner_process`): no source
        of the course is left there to read."""
        if self.prefix[-1:] != ["--"]:
            return [*self.prefix, sys.executable, "-I", answers.__file__]
        # the folders the sandbox lets it write: each notebook gets new empty ones
        writable = [self.prefix[i + 2] for i, arg in enumerate(self.prefix[:-2]) if arg == "--bind"]
        if self.library is not None:
            shutil.rmtree(self.library, ignore_errors=True)
        self.library = Path(tempfile.mkdtemp(prefix="tinyk-answers-"))
        shutil.copytree(PACKAGE, self.library / "tinyk", ignore=shutil.ignore_patterns("__pycache__"))
        hide = ["--tmpfs", str(PACKAGE), "--bind", str(self.library), _LIBRARY]
        script = f"{_LIBRARY}/tinyk/grading/learner_process.py"
        return [*self.prefix[:-1], *hide, "--", sys.executable, "-I", script, _LIBRARY, *writable]

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
        self._close_errors()

    def _close_errors(self) -> None:
        """Keep what is left in the ended process's stderr (within the bound), and close it."""
        if self.errors is not None:
            self._drain(self.errors)
            os.close(self.errors)
            self.errors = None

    def _drain(self, fd: int) -> bool:
        """Read what the learner's stderr holds now, without waiting and a few MiB at most: the
        first :data:`OUTPUT_LIMIT` bytes kept, the rest counted. Whether it is at its end."""
        for _ in range(64):
            try:
                chunk = os.read(fd, 2**16)
            except OSError:  # nothing more for now (BlockingIOError)
                return False
            if not chunk:
                return True
            room = max(0, OUTPUT_LIMIT - len(self.printed))
            self.printed += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))
        return False

    def output(self) -> str:
        """What the learner's code printed so far: its first :data:`OUTPUT_LIMIT` bytes, and a
        line saying how many more were dropped."""
        if self.errors is not None:
            self._drain(self.errors)
        text = self.printed.decode(errors="replace")
        if self.dropped:
            text += (f"\n[{self.dropped:,} more bytes of output dropped: the grader keeps the first "
                     f"{OUTPUT_LIMIT:,}]\n")
        return text

    def send(self, request: tuple) -> None:
        """Send one request (starting the learner's process if it is not running)."""
        proc = self._start()
        try:
            answer_wire.write_frame(proc.stdin, pickle.dumps(request))  # type: ignore[arg-type]
        except OSError as err:
            self.close()
            raise AnswerFailed(f"the answer's process has ended ({err.strerror})", ended=True) from err

    def _frame(self, timeout: float, total: bool = True) -> Any:
        """The next frame, read back as data (``weights_only``), within ``timeout`` seconds (and,
        with ``total``, within what is left of the :meth:`limit_total` seconds)."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        wait, left = timeout, self._left() if total else None
        if left is not None:
            wait = min(timeout, left)
        reader = _Deadline(proc.stdout.fileno(), wait, self.errors, self._drain)
        started = time.monotonic()
        try:
            frame = answer_wire.read_frame(reader, answer_wire.FRAME_LIMIT)  # type: ignore[arg-type]
        except TimeoutError:
            self.close()
            if wait < timeout:
                raise self._past_total() from None
            raise AnswerFailed(f"no answer within {min(timeout, self.timeout):g} s (the per-cell time "
                               f"limit)", ended=True) from None
        except answer_wire.TooLarge as err:  # its payload left unread, in the pipe of an ended process
            self.close()
            raise AnswerFailed(str(err), ended=True) from None
        finally:
            if total:
                self.spent += time.monotonic() - started
        if frame is None:
            self.close()
            raise AnswerFailed("the answer's process ended", ended=True)
        try:
            return answer_wire.load_reply(frame)
        except answer_wire.TooLarge as err:  # dropped before anything of it is used
            self.close()
            raise AnswerFailed(str(err), ended=True) from None
        except Exception as err:
            raise AnswerFailed(f"the answer sent something that is not plain data ({err})"[:300]) from err

    def receive(self, timeout: float | None = None, total: bool = True) -> tuple:
        """The next reply, checked to be data, within ``timeout`` seconds (the per-reply
        timeout when None); with ``total``, its wait counts in the student's time
        (:meth:`limit_total`)."""
        self._start()
        reply = self._frame(self.timeout if timeout is None else timeout, total)
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
        return decode(self, reply[1])

    def _callback(self, reply: tuple) -> None:
        """Run the test's function the learner's code called, and send its result back."""
        if len(reply) != 4 or type(reply[1]) is not int or not 0 <= reply[1] < len(self.callbacks):
            raise AnswerFailed("the answer's process asked for a function the test never gave it")
        args, kwargs = decode(self, reply[2]), decode(self, reply[3])
        if type(args) is not list or type(kwargs) is not dict:
            raise AnswerFailed("the answer's process sent malformed arguments")
        try:
            result = self.callbacks[reply[1]](*args, **kwargs)
        except Exception as err:
            self.send(("cberr", f"{type(err).__name__}: {err}"[:300]))
            return
        tensors: list = []
        self.send(("cbret", detached_args(request_args(result, tensors, self), tensors)))


def _memory_limit(memory_mb: int | None) -> Callable[[], None] | None:
    """What the learner's process runs before it starts: the same address-space limit as the
    student's kernel (none when ``memory_mb`` is None)."""
    if memory_mb is None:
        return None
    import resource

    memory = memory_mb * 2**20

    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return preexec


class _Deadline:
    """A pipe's reads, each waiting only until one deadline (``TimeoutError`` past it): a
    learner's process that sends half a reply and stalls cannot hold the grader. While it
    waits, the learner's stderr ``errors`` is handed to ``drain`` whenever it holds something:
    a learner that prints never blocks on a full pipe, nor fills the grader's memory."""

    def __init__(self, fd: int, timeout: float, errors: int | None = None,
                 drain: Callable[[int], bool] | None = None) -> None:
        self.fd, self.end, self.errors, self.drain = fd, time.monotonic() + timeout, errors, drain

    def read(self, size: int) -> bytes:
        while True:
            watched = [self.fd] if self.errors is None else [self.fd, self.errors]
            ready, _, _ = select.select(watched, [], [], max(0.0, self.end - time.monotonic()))
            if not ready:
                raise TimeoutError
            if self.fd in ready:
                return os.read(self.fd, min(size, 2**20))
            assert self.drain is not None and self.errors is not None
            if self.drain(self.errors):  # its stderr closed: only its stdout is left to watch
                self.errors = None


def _exception(reply: tuple) -> BaseException:
    """The learner's exception, as a builtin exception of the same kind (never their class)."""
    name, message = str(reply[1]), str(reply[2])
    kind = getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = RuntimeError
    return kind(message)
