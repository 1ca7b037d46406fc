"""The namespaces a notebook's run gets inside the student's sandbox (course section "For
instructors", the sandbox): a new user, mount and process namespace (:func:`new_namespaces`),
a private /tmp and /dev/shm with the sandbox's folders bound back (:func:`private_folders`),
no capabilities (:func:`drop_capabilities`), and a check that a fork can have them here
(:func:`probe`). The learner's process (:mod:`tinyk.grading.learner_process`) uses them for
each run of a notebook: whatever a run patches, writes to /tmp or /dev/shm or leaves running
dies with its namespace. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["drop_capabilities", "new_namespaces", "private_folders", "probe", "tmp_size"]

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
