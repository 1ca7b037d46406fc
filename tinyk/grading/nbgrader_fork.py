"""nbgrader's runs forked from a process that has imported it once (course section "For
instructors", grading).

``python -m nbgrader`` spends one to two seconds importing nbgrader, nbconvert and
jupyter_client before it reads its command line, and a grade of a class starts it once per
student (``autograde``), a feedback run twice. :func:`fork_run` runs the same command as a fork
of a server, one per grading process: a single-threaded interpreter that imported nbgrader's
command line (:data:`PRELOAD`) and runs nothing else, no code of a student's. The fork is
what the subprocess was: a session of its own, the command's environment and working folder,
stdin from /dev/null, stdout and stderr to the given files, the memory limit set before
nbgrader runs, and the command's module run as ``-m`` runs it (``nbgrader``'s
``__main__``), whose exit status the server reports when the fork ends. nbgrader starts its
kernels from there exactly as before (in the sandbox, when there is one).

The grader and the server talk over a socket pair made when the server starts: each request
(JSON) comes with a socket of its own, on which the server answers the fork's pid, then its
exit status. The server ends when the grader's end of the pair closes (at its exit, at the
latest).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import select
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

__all__ = ["PRELOAD", "NbgraderRun", "fork_run", "serve"]

PRELOAD = ["nbgrader.apps.nbgraderapp"]  # what `python -m nbgrader` imports before its main
_LOCK = threading.Lock()
_server: tuple[subprocess.Popen, socket.socket] | None = None


def _child(argv: list[str], cwd: str, env: dict[str, str], memory: int | None, out: str, err: str) -> int:
    """In the fork: become the process ``argv`` (``python -m MODULE ARGS``) would have been;
    its exit status."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # TMPDIR is the command's (the sandbox's runtime folder)
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_APPEND),
                            (2, err, os.O_WRONLY | os.O_APPEND)):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin, sys.stdout, sys.stderr = (open(fd, mode, closefd=False) for fd, mode in
                                         ((0, "r"), (1, "w"), (2, "w")))
    if memory is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    sys.argv = [argv[2], *argv[3:]]  # run_module makes argv[0] the module's file, as -m does
    try:
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as end:
        if end.code is None or isinstance(end.code, int):
            return end.code or 0
        print(end.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        atexit._run_exitfuncs()  # as at an interpreter's end, which a fork skips (os._exit)


def _fork(request: dict, keep_out: list[int]) -> int:
    """Fork one run of :func:`_child`, in a session of its own by the time this returns (so
    that the grader can end the whole session at once); its pid. ``keep_out``: the server's
    descriptors, closed in the fork."""
    ready, said = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            for fd in [ready, said, *keep_out]:
                os.close(fd)
            code = _child(**request)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code & 0xFF)
    os.close(said)
    os.read(ready, 1)  # end of file: the fork's setsid is done (or it has ended)
    os.close(ready)
    return pid


def serve(fd: int) -> None:
    """The server (see the module's docstring), on the socket ``fd``."""
    for name in PRELOAD:
        importlib.import_module(name)
    control = socket.socket(fileno=fd)
    runs: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the request's socket)
    while True:
        ready, _, _ = select.select([control, *runs], [], [])
        for r in ready:
            if r is control:
                message, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
                if not message:
                    return  # the grader is gone
                conn = socket.socket(fileno=fds[0])
                keep_out = [control.fileno(), conn.fileno(), *runs, *(c.fileno() for _, c in runs.values())]
                pid = _fork(json.loads(message), keep_out)
                conn.sendall(f"{pid}\n".encode())
                runs[os.pidfd_open(pid)] = (pid, conn)
            else:
                pid, conn = runs.pop(r)
                os.close(r)
                code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                try:
                    conn.sendall(f"{code}\n".encode())
                except OSError:
                    pass
                conn.close()


def _control() -> socket.socket:
    """The grader's end of the server's socket pair, the server started the first time."""
    global _server
    with _LOCK:
        if _server is None or _server[0].poll() is not None:
            if _server is not None:
                _server[1].close()  # the dead server's end of its pair
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            package = str(Path(__file__).resolve().parents[2])
            code = (f"import sys; sys.path.insert(0, {package!r}); "
                    f"from tinyk.grading.nbgrader_fork import serve; serve({theirs.fileno()})")
            proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),),
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            theirs.close()
            if _server is None:
                atexit.register(_stop)
            _server = (proc, ours)
        return _server[1]


def _stop() -> None:
    """At the grader's exit: close its end of the pair, on which the server ends, and reap it."""
    if _server is not None:
        proc, ours = _server
        ours.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class NbgraderRun:
    """One forked nbgrader run, used as the ``subprocess.Popen`` it replaces: ``args`` (the
    command line it stands for), ``pid`` (also its session's id), :meth:`poll`, :meth:`wait`,
    ``returncode``."""

    def __init__(self, args: list[str], conn: socket.socket) -> None:
        self.args, self.conn, self.returncode = args, conn, None
        self.replies = conn.makefile("r")
        said = self.replies.readline()
        if not said.strip():
            raise RuntimeError(f"nbgrader's fork server ended before starting {' '.join(args[1:4])} "
                               "(is nbgrader installed? pip install -e .[instructor])")
        self.pid = int(said)

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None and select.select([self.conn], [], [], 0)[0] \
            else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            said = self.replies.readline()
            self.returncode = int(said) if said.strip() else -9  # the server ended: so did its forks
            self.replies.close()
            self.conn.close()
        return self.returncode


def fork_run(cmd: list[str], cwd: str, env: dict[str, str], memory: int | None, out: str,
             err: str) -> NbgraderRun:
    """Start ``cmd`` (``[python, "-m", "nbgrader", ...]``) as a fork of the server, its output
    appended to the files ``out`` and ``err``, within ``memory`` bytes of address space."""
    if cmd[1:2] != ["-m"] or len(cmd) < 3:
        raise ValueError(f"{cmd[:3]}: a fork runs `python -m MODULE ...` only")
    request = {"argv": cmd, "cwd": cwd, "env": env, "memory": memory, "out": out, "err": err}
    ours, theirs = socket.socketpair()
    try:
        socket.send_fds(_control(), [json.dumps(request).encode()], [theirs.fileno()])
    finally:
        theirs.close()
    return NbgraderRun(cmd, ours)
