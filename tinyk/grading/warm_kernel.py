"""Warm kernels: one interpreter per student's sandbox that has imported torch, tinyk and
IPython's kernel once, and forks a fresh kernel for each notebook (course section "For
instructors", the sandbox).

    python -P tinyk/grading/warm_kernel.py FD SOCKET SCRATCH RUNTIME [MODULE ...]

It runs inside the student's bubblewrap sandbox, as their kernels did (same folders, same
environment, same memory limit). It accepts on the listening Unix socket ``FD``, which the
grader bound at ``SOCKET`` (in a folder of its own) before starting it: a launcher never finds
it missing, and once this process ends nothing listens there. It imports IPython's kernel and
each ``MODULE`` (those the graded notebooks import, :func:`imported_modules`), checks that it
is one thread (a fork copies only the calling thread) and that a nested user namespace can be
made here, makes itself non-dumpable (no process of the same user can trace it or read its
memory), prints ``warm`` (or ``cold: <why>``) on stdout and serves :mod:`tinyk.grading.kernel_launcher`.

Each request (a connection file in ``RUNTIME``) forks a monitor that makes a new user, mount
and process namespace and forks the namespace's first process; that one mounts a private
/tmp and /dev/shm over the sandbox's (and makes /dev read-only), hides this socket's folder
behind an empty read-only one, binds the sandbox's folders inside /tmp back (scratch,
runtime, and the Python environment when it lives there), and forks the kernel: no
capabilities (none to gain by running a program either), ``random`` seeded anew as in a new
process (numpy and torch too, when this process imported them; else the notebook's own
import starts them fresh), ipykernel's app started on the connection file. The kernel's code
starts with the modules imported and nothing else of an earlier notebook's: whatever it
patches, writes to /tmp or /dev/shm or leaves running dies with its namespace, and this
process is outside its namespace (it cannot name it, signal it or trace it). The monitor
reports the kernel's exit status to the launcher and kills the namespace when the launcher's
connection closes (Jupyter killed the launcher).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import random
import re
import select
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["KERNEL", "imported_modules", "main", "drop_capabilities", "new_namespaces", "private_folders",
           "probe"]

KERNEL = ("ipykernel.kernelapp", "ipykernel.ipkernel")  # imported first, as in a kernel


def imported_modules(notebooks: list[dict]) -> list[str]:
    """The absolute modules the code cells of ``notebooks`` import (``import a.b``, ``from
    a.b import c``: ``a.b``), in order of first appearance; a cell that is not Python
    (magics, shell lines) is read without those lines, or skipped."""
    import ast

    found: dict[str, None] = {}
    for nb in notebooks:
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            lines = [ln for ln in ("".join(source) if isinstance(source, list) else source).splitlines()
                     if not ln.lstrip().startswith(("%", "!"))]
            try:
                tree = ast.parse("\n".join(lines))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found.update(dict.fromkeys(alias.name for alias in node.names))
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found[node.module] = None
    return list(found)

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x08000000, 0x10000000, 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 32, 4096
_MS_REC, _MS_PRIVATE = 16384, 1 << 18
# The flags a read-only bind remount keeps, statvfs's (ST_*) -> mount(2)'s (MS_*): nosuid, nodev,
# noexec and the atime ones (ST_RELATIME is 4096, MS_RELATIME 1 << 21; a mount with neither
# noatime nor relatime is strictatime). Leaving out one that the parent namespace set is refused.
_ST_TO_MS = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}
_ST_NOATIME, _ST_RELATIME, _MS_STRICTATIME = 1024, 4096, 1 << 24
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 1, 4, 24, 28
_SECURE_NOROOT = 0b111111  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked: root gains nothing by exec
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, value: int) -> None:
    _check(_LIBC.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def _mount(source: str, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    _check(_LIBC.mount(source.encode(), target.encode(), kind.encode() if kind else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def drop_capabilities() -> None:
    """No capability left, nor any to gain by running a program (an empty bounding set, root
    without its privileges): the kernel cannot unmount what hides the sandbox's /tmp."""
    _prctl(_PR_SET_SECUREBITS, _SECURE_NOROOT)
    cap = 0
    while _LIBC.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) == 0:
        cap += 1
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_LIBC.capset(header, data), "capset")


def new_namespaces(ipc: bool = False) -> None:
    """A new user (same ids), mount and process namespace for the next child (and, with
    ``ipc``, System V IPC and POSIX message queues of its own)."""
    uid, gid = os.getuid(), os.getgid()
    _prctl(_PR_SET_DUMPABLE, 1)  # a non-dumpable process cannot write its own id maps
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | (_CLONE_NEWIPC if ipc else 0)
    _check(_LIBC.unshare(flags), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _prctl(_PR_SET_DUMPABLE, 0)


def _mounts_under_tmp() -> list[Path]:
    """The sandbox's mount points inside /tmp (its binds there: the scratch and runtime
    folders, and the Python environment and the package when they live under /tmp),
    shallowest first, from /proc/self/mountinfo (whose paths escape spaces as ``\\040``)."""
    points = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])
        if point.startswith("/tmp/"):
            points.add(Path(point))
    return sorted(points, key=lambda p: (len(p.parts), str(p)))


def _read_only(folder: Path) -> None:
    """Remount the mount at ``folder`` read-only, keeping its other flags."""
    flags = os.statvfs(folder).f_flag
    kept = sum(ms for st, ms in _ST_TO_MS.items() if flags & st)
    if not flags & (_ST_NOATIME | _ST_RELATIME):
        kept |= _MS_STRICTATIME
    _mount("none", str(folder), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept)


def tmp_size() -> str:
    """The size option of the sandbox's /tmp (``",size=..."``, as bubblewrap's ``--size`` set
    it, :func:`tinyk.grading.sandbox.tmpfs_bytes`), from /proc/self/mountinfo; "" when /tmp is
    no tmpfs or has no size of its own."""
    size = ""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields = after.split()
        if before.split()[4] == "/tmp" and fields[:1] == ["tmpfs"]:  # the last one mounted wins
            size = next((f",{o}" for o in fields[-1].split(",") if o.startswith("size=")), "")
    return size


def private_folders(hidden: Sequence[Path] = (), empty: Sequence[Path] = (),
                    read_only: Sequence[Path] = ()) -> None:
    """In a new mount namespace: a private /tmp and /dev/shm, /dev read-only, the sandbox's
    mounts inside /tmp bound back where they were (those in ``read_only`` read-only), except
    the folders ``hidden`` (behind an empty read-only tmpfs, or gone with the old /tmp) and
    ``empty`` (a new empty tmpfs each, writable), and what lies inside them. Each writable
    tmpfs is no larger than the sandbox's /tmp (:func:`tmp_size`): a student who writes past it
    gets ENOSPC, not the machine's memory."""
    size = tmp_size()
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    dropped = [*hidden, *empty]
    kept = [p for p in _mounts_under_tmp() if not any(p == d or d in p.parents for d in dropped)]
    fds = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY) for folder in kept]
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=0755{size}")
    for folder, fd in zip(kept, fds, strict=True):
        folder.mkdir(parents=True, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", str(folder), None, _MS_BIND | _MS_REC)  # read-only stays so
        os.close(fd)
    for folder in hidden:
        if folder.exists():  # not under /tmp
            _mount("tmpfs", str(folder), "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_RDONLY, "mode=0555")
    for folder in empty:
        folder.mkdir(parents=True, exist_ok=True)
        _mount("tmpfs", str(folder), "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=0755{size}")
    for folder in read_only:
        _read_only(folder)
    if Path("/dev/shm").is_dir():
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777{size}")
        _read_only(Path("/dev"))


def _kernel(connection_file: str, scratch: Path) -> None:
    """The kernel: a notebook's process, from here on as a fresh one would be."""
    os.chdir(scratch)
    drop_capabilities()
    random.seed()
    # Seeded anew only if the server imported them: otherwise the notebook's own import, here,
    # starts them as in a new process (importing torch only to seed it took a second a kernel).
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    if "torch" in sys.modules:
        sys.modules["torch"].seed()
    from ipykernel import kernelapp

    sys.argv = [str(Path(kernelapp.__file__).with_name("__main__.py")), "-f", connection_file]
    kernelapp.IPKernelApp.launch_instance(argv=["-f", connection_file])


def _first(connection_file: str, scratch: Path, hidden: Path) -> int:
    """The namespace's first process: its folders, then the kernel as its child, reaping
    every orphan until the kernel ends; the kernel's exit status."""
    private_folders(hidden=[hidden])
    pid = os.fork()
    if pid == 0:
        try:
            _kernel(connection_file, scratch)
            code = 0
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    while True:
        done, status = os.wait()
        if done == pid:
            return os.waitstatus_to_exitcode(status)


def _monitor(conn: socket.socket, connection_file: str, scratch: Path, hidden: Path) -> None:
    """One kernel's monitor: its namespaces, its first process; the exit status to the
    launcher, or the namespace killed when the launcher's connection closes."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # ends with the server
    try:
        new_namespaces()
        pid = os.fork()
    except OSError as err:
        print(f"cold: {err}", flush=True)  # for the grader, which says it
        conn.sendall(f"cold {err}\n".encode())
        return
    if pid == 0:
        code = 1
        try:
            conn.close()
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            code = _first(connection_file, scratch, hidden)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code if code >= 0 else 128 - code)
    conn.sendall(b"started\n")
    watch = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([conn, watch], [], [])
        if watch in ready:
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            try:
                conn.sendall(f"exit {code}\n".encode())
            except OSError:
                pass
            return
        try:
            gone = conn.recv(64) == b""
        except OSError:
            gone = True
        if gone:  # the launcher was killed: so is the kernel, and all of its namespace
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return


def probe(ipc: bool = False, folders: Callable[[], None] | None = None) -> str | None:
    """Why a fork cannot get new namespaces here (None if it can): user, mount and process
    ones (and IPC ones, with ``ipc``), then its folders (``folders``, else a private /tmp),
    then no capabilities."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            new_namespaces(ipc)
            if folders is None:
                _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
                _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
            else:
                folders()
            drop_capabilities()
            os._exit(0)
        except BaseException as err:
            os.write(write, str(err).encode()[:1000])
            os._exit(3)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        why = said.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return None if code == 0 else f"no nested namespaces here: {why or f'status {code}'}"


def _prepare(modules: list[str]) -> str | None:
    """Import IPython's kernel and ``modules``, check it can fork kernels; why not, if it cannot."""
    for name in [*KERNEL, *modules]:
        try:
            importlib.import_module(name)
        except Exception:  # the notebook that imports it fails the same way, in its kernel
            pass
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:
        return f"the server runs {len(threads)} threads after its imports (a fork copies one)"
    _prctl(_PR_SET_DUMPABLE, 0)
    return probe()


def main(argv: list[str] | None = None) -> int:
    """Serve kernels on the socket (section "For instructors"); see the module's docstring."""
    sys.path.insert(0, os.getcwd())  # as a kernel started with -m has it
    fd, *paths = argv or sys.argv[1:]
    path, scratch, runtime = (Path(a) for a in paths[:3])
    listener = socket.socket(fileno=int(fd))  # launchers wait in its queue while the imports run
    try:
        why = _prepare(paths[3:])
    except Exception as err:
        why = f"{type(err).__name__}: {err}"
    print("warm" if why is None else f"cold: {why}", flush=True)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the kernel
    while True:
        conn, _ = listener.accept()
        try:
            request = json.loads(conn.makefile("rb").readline(4096) or b"{}")
            connection_file = Path(str(request.get("connection_file", "")))
            if why is not None:
                raise ValueError(why)
            if connection_file.parent != runtime or not connection_file.is_file():
                raise ValueError(f"connection file {str(connection_file)!r}: not a file in {runtime}")
        except (ValueError, OSError) as err:
            conn.sendall(f"cold {err}\n".encode()[:4096])
            conn.close()
            continue
        if os.fork() == 0:
            code = 0
            try:
                listener.close()
                _monitor(conn, str(connection_file), scratch, path.parent)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        conn.close()


if __name__ == "__main__":
    raise SystemExit(main())
