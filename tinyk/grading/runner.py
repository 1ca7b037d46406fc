"""The nbgrader command line, run as a subprocess within a submission's limits (course section
"For instructors"): a per-cell timeout, a total time limit, a memory limit and CPU threads per
kernel; and, whatever ends the run, no process of the student's left behind.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tinyk.grading.chapter import ASSIGNMENT
from tinyk.grading.nbgrader_fork import NbgraderRun, fork_run
from tinyk.grading.sandbox import KERNEL_ENV, Sandbox, check_sandbox, require_linux, warn_unsandboxed

__all__ = ["LOG_LIMIT", "BoundedLog", "Limits", "autograde", "autograde_preprocessors", "communicate",
           "end_leftovers", "preflight", "require_nbgrader", "run_nbgrader", "say_once", "server_modules",
           "total_limit", "warm_server"]


@dataclass
class Limits:
    """Per-submission limits: seconds per cell; seconds per notebook in all (a student who
    submits n notebooks has n times ``total_timeout`` for the lot); megabytes of memory; CPU
    threads per kernel (``OMP_NUM_THREADS``): ``jobs`` kernels run at once, so one thread
    each keeps them from fighting over the cores (on 2 cores, 3.9x the throughput of two
    threads per kernel, side by side in ``benchmarks/bench_grading.py --compare-threads 2``)."""

    cell_timeout: int = 60
    total_timeout: int = 600
    memory_mb: int = 8192  # address space (RLIMIT_AS): a torch kernel reserves far more than it uses
    threads: int = 1
    # each kernel forked from the student's warm server (tinyk.warm_kernel) rather than started
    # cold; the grades are the same either way, so a run's fingerprint leaves it out
    warm_kernels: bool = True
    # the verdict alone, no notebook run in nbgrader's kernels (tinyk.grading.answers_only): the
    # same points, statuses of its own, so a run's fingerprint keeps it
    answers_only: bool = False


# Bytes kept of what nbgrader and the warm server write on their stdout and stderr, half from
# the start and half from the end: their own log is some kilobytes, but a kernel's output at
# the level of its file descriptors (a program the student runs, os.write) reaches it too,
# echoed there by ipykernel, and must fill neither the grader's disk nor its memory.
LOG_LIMIT = 2**20


class BoundedLog:
    """A named pipe that a process writes its output to, read by a thread of the grader's
    that keeps the first and the last ``limit // 2`` bytes and counts the rest: a log that
    never holds more, whatever is written to it, nor blocks its writer. :meth:`text`, once
    the writers are done, ends the reading and says how much was dropped; so does the end of
    a ``with`` block."""

    def __init__(self, limit: int = LOG_LIMIT) -> None:
        self.limit, self.head, self.tail, self.dropped = limit, bytearray(), bytearray(), 0
        self.folder = Path(tempfile.mkdtemp(prefix="tinyk-log-"))
        self.path = self.folder / "log"
        os.mkfifo(self.path, 0o600)
        self._read = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._hold = os.open(self.path, os.O_WRONLY)  # never at its end while the grader reads it
        self._wake, self._woken = os.pipe()
        self._thread = threading.Thread(target=self._run, name="tinyk-log", daemon=True)
        self._thread.start()

    def __enter__(self) -> BoundedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.text()

    def writer(self) -> int:
        """A new descriptor that writes to the log (the caller closes it)."""
        return os.open(self.path, os.O_WRONLY)

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._read, self._wake], [], [])
            if self._read in ready:
                self._drain()
            if self._wake in ready:
                return

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._read, 2**16)
            except BlockingIOError:
                return
            if not chunk:
                return
            half = self.limit // 2
            room = max(0, half - len(self.head))
            self.head += chunk[:room]
            self.tail += chunk[room:]
            if len(self.tail) > 2 * half:  # trimmed now and then, not at every read
                self.dropped += len(self.tail) - half
                del self.tail[:len(self.tail) - half]

    def text(self) -> str:
        """Everything kept, with a line in the middle for what was dropped; the reading ends
        here (a writer still left, a process of a student's, then writes to a closed pipe)."""
        if self._thread.is_alive():
            os.write(self._woken, b"x")
            self._thread.join()
            self._drain()
            for fd in (self._read, self._hold, self._wake, self._woken):
                os.close(fd)
            shutil.rmtree(self.folder, ignore_errors=True)
            half = self.limit // 2
            if len(self.tail) > half:
                self.dropped += len(self.tail) - half
                del self.tail[:len(self.tail) - half]
        middle = f"\n[{self.dropped:,} bytes of output dropped here: the grader keeps {self.limit:,}]\n"
        return (self.head.decode(errors="replace") + (middle if self.dropped else "")
                + self.tail.decode(errors="replace"))


def require_nbgrader() -> None:
    """Stop, saying how to install it, unless nbgrader can be imported."""
    try:
        import nbgrader  # noqa: F401
    except ImportError as err:
        raise SystemExit("tinyk.grading needs nbgrader: pip install -e .[instructor]") from err


def preflight(sandbox: bool) -> None:
    """What grading needs before it starts: Linux, nbgrader and, with ``sandbox``, a bubblewrap
    that works here (without, a warning of what student code may then do)."""
    require_linux()
    require_nbgrader()
    if sandbox:
        check_sandbox()
    else:
        warn_unsandboxed()


def _command(args: list[str], root: Path, limits: Limits | None,
             sandbox: Sandbox | None) -> tuple[list[str], dict[str, str]]:
    """The nbgrader command line on the course at ``root`` and its environment."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               **KERNEL_ENV)
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}",
           f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}"]
    if sandbox is not None:
        # the connection file goes to TMPDIR, the sockets next to it: both in the runtime folder
        env.update(JUPYTER_PATH=str(sandbox.jupyter), JUPYTER_RUNTIME_DIR=str(sandbox.runtime),
                   TMPDIR=str(sandbox.runtime))
        cmd += ["--KernelManager.transport=ipc", f"--KernelManager.ip={sandbox.runtime / 'kernel'}"]
    if limits is not None:
        env.update(OMP_NUM_THREADS=str(limits.threads), MKL_NUM_THREADS=str(limits.threads))
        cmd += [f"--Execute.timeout={limits.cell_timeout}", "--OverwriteCells.add_missing_cells=True"]
    if args[:1] == ["autograde"]:
        cmd += [f"--Autograde.autograde_preprocessors={name}" for name in autograde_preprocessors()]
    return cmd, env


def autograde_preprocessors() -> list[str]:
    """nbgrader's autograde preprocessors by name, its Execute replaced by one that keeps a
    bounded share of each cell's outputs (:class:`tinyk.grading.bounded_execute.BoundedExecute`)."""
    from nbgrader.converters.autograde import Autograde
    from nbgrader.preprocessors import Execute

    names = []
    for step in Autograde.class_traits()["autograde_preprocessors"].default():
        if step is Execute:
            names.append("tinyk.grading.bounded_execute.BoundedExecute")
        else:
            names.append(step if isinstance(step, str) else f"{step.__module__}.{step.__qualname__}")
    return names


def _memory_limit(limits: Limits | None) -> Callable[[], None] | None:
    """What the child runs before exec: the memory limit, which the kernel inherits."""
    if limits is None:
        return None
    import resource

    memory = limits.memory_mb * 2**20

    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return preexec


def run_nbgrader(args: list[str], root: Path, limits: Limits | None = None, timeout: float | None = None,
                 sandbox: Sandbox | None = None) -> subprocess.CompletedProcess:
    """Run the nbgrader CLI on the course at ``root`` (its own gradebook, its own folder).

    With ``sandbox``, the kernels nbgrader starts are the sandbox's, talking over Unix sockets
    in its runtime folder (a kernel without a network cannot reach nbgrader's TCP ports).
    Past ``timeout`` seconds, nbgrader's whole session is killed and ``TimeoutExpired`` raised.
    """
    cmd, env = _command(args, root, limits, sandbox)
    memory = None if limits is None else limits.memory_mb * 2**20
    # Output goes to bounded logs, read until nbgrader ends and not to their end: a process the
    # student's code left behind may hold them open.
    with BoundedLog() as out, BoundedLog() as err:
        proc = fork_run(cmd, str(root), env, memory, str(out.path), str(err.path))
        try:
            communicate(proc, timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # nbgrader and whatever shares its session
            proc.wait()
            raise
        return subprocess.CompletedProcess(cmd, proc.returncode, out.text(), err.text())


def communicate(proc: subprocess.Popen | NbgraderRun, timeout: float | None) -> None:
    """Wait for ``proc`` at most ``timeout`` seconds (``TimeoutExpired`` past it).

    One function, so that a test can end a run on an event instead of a clock.
    """
    proc.wait(timeout=timeout)


def end_leftovers(course: Path, sid: str) -> None:
    """End every process still working in the student's autograding folder.

    Without the sandbox, nbgrader runs the kernel there, in a session of its own, and on a
    normal finish kills that session. When nbgrader itself is killed (the total time limit),
    the kernel exits through ipykernel's parent check, but processes the student's code
    started would run on: they are found by their working folder and ended here. (In the
    sandbox, the kernel's process namespace ends with it, and everything in it.)
    """
    folder = str((course / "autograded" / sid).resolve())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if cwd == folder or cwd.startswith(folder + os.sep):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to read
            pass


_SAID: set[str] = set()  # what the grader fell back to and why (cold kernels, ...), each said once a run
_SAID_LOCK = threading.Lock()


def say_once(message: str) -> None:
    """Print ``message`` on stderr, once a run (what the grader falls back to, and why)."""
    with _SAID_LOCK:
        if message not in _SAID:
            _SAID.add(message)
            print(message, file=sys.stderr)


def _say_cold(why: str) -> None:
    say_once(f"warm kernels unavailable ({why}): kernels start cold, as with --cold-kernels")


def server_modules(release: Path | None) -> list[str]:
    """What the warm server imports: the modules the released notebooks in ``release`` import
    in the cells that run when graded (not those :func:`~tinyk.grading.submission.write_for_grading`
    empties: the book's figures import matplotlib's extras, its Hugging Face comparisons
    transformers)."""
    import json

    from tinyk.grading.submission import emptied_when_graded
    from tinyk.warm_kernel import imported_modules

    if release is None:
        return []
    notebooks = [json.loads(p.read_text()) for p in sorted(release.glob("*.ipynb"))]
    return imported_modules([{**nb, "cells": [c for c in nb.get("cells", []) if not emptied_when_graded(c)]}
                             for nb in notebooks])


@contextmanager
def warm_server(sandbox: Sandbox | None, limits: Limits, release: Path | None = None) -> Iterator[None]:
    """The student's warm server (:mod:`tinyk.warm_kernel`) running in their sandbox for the
    time of the block, within the same memory limit as their kernels, having imported what the
    notebooks in ``release`` (the released ones, never a student's) import where they run when
    graded (:func:`server_modules`); then it is ended, with everything it started. A server
    that cannot serve warm kernels says why (once a run, on stderr), and the kernelspec's
    launcher starts cold ones."""
    if sandbox is None or sandbox.warm is None:
        yield
        return
    import socket

    modules = server_modules(release)
    # the log of the server and of the kernels forked from it
    with BoundedLog() as log, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(sandbox.socket))
        listener.listen(16)
        fd, writer = listener.fileno(), log.writer()
        try:
            proc = subprocess.Popen(sandbox.server_argv(fd, modules), stdin=subprocess.DEVNULL, stdout=writer,
                                    stderr=writer, preexec_fn=_memory_limit(limits), start_new_session=True,
                                    pass_fds=(fd,))
        finally:
            os.close(writer)
        listener.close()  # the server's alone: when it ends, a launcher's connect fails at once
        try:
            yield
        finally:
            ended = proc.poll()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the server and whatever it still runs
            except ProcessLookupError:  # ended, and nothing of its group is left
                pass
            proc.wait()
            lines = log.text().splitlines()
            cold = [line.removeprefix("cold: ") for line in lines if line.startswith("cold: ")]
            if lines[:1] != ["warm"]:
                _say_cold(cold[0] if cold else f"the server ended: {' '.join(lines)[-300:]}")
            elif cold:
                _say_cold(f"a kernel could not be forked: {cold[0]}")
            elif ended is not None:
                _say_cold(f"the server ended while grading, status {ended}")


def total_limit(limits: Limits, notebooks: int) -> int:
    """Seconds for a student's whole autograde: ``total_timeout`` per notebook."""
    return limits.total_timeout * max(1, notebooks)


def autograde(course: Path, sid: str, limits: Limits, sandbox: Sandbox | None) -> subprocess.CompletedProcess:
    """``nbgrader autograde`` of one student within the limits; then no process of theirs is
    left running, even when the total time limit raised ``TimeoutExpired``."""
    notebooks = len(list((course / "submitted" / sid / ASSIGNMENT).glob("*.ipynb")))
    try:
        with warm_server(sandbox, limits, course / "release" / ASSIGNMENT):
            return run_nbgrader(["autograde", ASSIGNMENT, f"--student={sid}", "--force"], course, limits,
                                timeout=total_limit(limits, notebooks), sandbox=sandbox)
    finally:
        end_leftovers(course, sid)
