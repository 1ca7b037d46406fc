"""The limits of a submission's grading, and the nbgrader command line (course section "For
instructors"): nbgrader runs no code of a student's (its autograde takes the outputs of the
verdict's run, :mod:`tinyk.grading.shown_outputs`), each run forked from a process that has
imported it once (:mod:`tinyk.grading.nbgrader_fork`), its output kept within a bound.
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
from dataclasses import dataclass
from pathlib import Path

from tinyk.grading.chapter import ASSIGNMENT
from tinyk.grading.nbgrader_fork import NbgraderRun, fork_run
from tinyk.grading.sandbox import KERNEL_ENV, check_sandbox, require_linux, warn_unsandboxed

__all__ = ["LOG_LIMIT", "BoundedLog", "Limits", "autograde_outputs", "autograde_preprocessors", "communicate",
           "preflight", "require_nbgrader", "run_nbgrader", "say_once", "total_limit"]


@dataclass
class Limits:
    """Per-submission limits: seconds per cell; seconds per notebook in all (a student who
    submits n notebooks has n times ``total_timeout`` for the lot); megabytes of memory; CPU
    threads per learner's process (``OMP_NUM_THREADS``): ``jobs`` students run at once, so one
    thread each keeps them from fighting over the cores."""

    cell_timeout: int = 60
    total_timeout: int = 600
    memory_mb: int = 8192  # address space (RLIMIT_AS): a torch process reserves far more than it uses
    threads: int = 1


# Bytes kept of what nbgrader writes on its stdout and stderr, half from the start and half
# from the end: its own log is some kilobytes, and must fill neither the grader's disk nor its
# memory whatever it says.
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


def _command(args: list[str], root: Path) -> tuple[list[str], dict[str, str]]:
    """The nbgrader command line on the course at ``root`` and its environment."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               **KERNEL_ENV)
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}",
           f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}"]
    if args[:1] == ["autograde"]:
        cmd += ["--OverwriteCells.add_missing_cells=True"]
        cmd += [f"--Autograde.autograde_preprocessors={name}" for name in autograde_preprocessors()]
    return cmd, env


def autograde_preprocessors() -> list[str]:
    """nbgrader's autograde preprocessors by name, its Execute replaced by one that writes the
    outputs of the verdict's run (:class:`tinyk.grading.shown_outputs.VerdictOutputs`): no
    kernel starts."""
    from nbgrader.converters.autograde import Autograde
    from nbgrader.preprocessors import Execute

    names = []
    for step in Autograde.class_traits()["autograde_preprocessors"].default():
        if step is Execute:
            names.append("tinyk.grading.shown_outputs.VerdictOutputs")
        else:
            names.append(step if isinstance(step, str) else f"{step.__module__}.{step.__qualname__}")
    return names


def run_nbgrader(args: list[str], root: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run the nbgrader CLI on the course at ``root`` (its own gradebook, its own folder).
    Past ``timeout`` seconds, nbgrader's whole session is killed and ``TimeoutExpired`` raised.
    """
    cmd, env = _command(args, root)
    with BoundedLog() as out, BoundedLog() as err:
        proc = fork_run(cmd, str(root), env, None, str(out.path), str(err.path))
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


_SAID: set[str] = set()  # what the grader fell back to and why (cold kernels, ...), each said once a run
_SAID_LOCK = threading.Lock()


def say_once(message: str) -> None:
    """Print ``message`` on stderr, once a run (what the grader falls back to, and why)."""
    with _SAID_LOCK:
        if message not in _SAID:
            _SAID.add(message)
            print(message, file=sys.stderr)


def total_limit(limits: Limits, notebooks: int) -> int:
    """Seconds for a student's whole autograde: ``total_timeout`` per notebook."""
    return limits.total_timeout * max(1, notebooks)


def autograde_outputs(course: Path, sid: str, outputs: Path) -> subprocess.CompletedProcess:
    """``nbgrader autograde`` of one student's submitted notebooks with the outputs of the
    verdict's run in the file ``outputs`` (:func:`tinyk.grading.shown_outputs.write`): the
    autograded notebooks and the gradebook, no kernel started."""
    return run_nbgrader(["autograde", ASSIGNMENT, f"--student={sid}", "--force",
                         f"--VerdictOutputs.path={outputs}"], course)
