"""How a submitted file is read (course: the instructors' page): shared by the grader
(:mod:`tinyk.grading`) and the similarity check.

A submitted file is read only when it is a regular file within :data:`MAX_NOTEBOOK_BYTES`,
opened without following a symbolic link and without waiting on a FIFO or a device
(:func:`read_submitted`); anything else is named (:func:`what_it_is`) and not read. Its bytes
become a notebook through :func:`parse_notebook`. Who the file's student is:
:mod:`tinyk.reports.submitters`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from tinyk.reports.submitters import student_name

__all__ = ["MAX_NOTEBOOK_BYTES", "Refused", "parse_notebook", "read_submitted", "refusal", "what_it_is"]

# The bound on a submitted notebook's size. The grader holds a notebook in memory about four
# times over (its bytes, its text, nbformat's parse, the restored copy), for several students
# at once. The chapter notebooks are under 80 KB as released, and one run with its figures
# and a long printout saved (2 MB of printed lines in the grader's tests) stays far below:
# 20 MB is ten times the largest honest notebook we know of, and keeps a class within memory.
MAX_NOTEBOOK_BYTES = 20 * 2**20

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (a named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class Refused(ValueError):
    """A submitted file the grader does not read: the message names the file, what it is and
    the rule (the detail of the student's ``unreadable`` rows)."""


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB ({size:,} bytes)"


def _link(path: Path, submissions: Path | None) -> str:
    """What a symbolic link at ``path`` points to, read without following it: another student's
    entry of ``submissions`` is named as that student."""
    target = os.readlink(path)
    if submissions is not None:
        resolved = Path(os.path.realpath(path.parent / target))  # the path only: nothing is opened
        root = Path(os.path.realpath(submissions))
        own = path.absolute().relative_to(submissions.absolute()).parts[:1] \
            if path.absolute().is_relative_to(submissions.absolute()) else ()
        if resolved.is_relative_to(root) and resolved != root:
            first = resolved.relative_to(root).parts[0]
            if (first,) != own and not first.startswith(".") and os.path.lexists(root / first):
                return f"a symbolic link to another student's submission ({student_name(root / first)})"
    return f"a symbolic link to {target}"


def refusal(path: Path, submissions: Path | None = None) -> str:
    """'' for a regular file; else why it is not read: its name, what it is
    (:func:`what_it_is`) and the rule."""
    what = what_it_is(path, submissions)
    return _not_read(path, what) if what else ""


def _not_read(path: Path, what: str) -> str:
    if what.startswith("a symbolic link"):
        return f"{path.name} is {what}: the grader follows no symbolic link"
    return f"{path.name} is {what}, not a regular file: the grader does not read it"


def what_it_is(path: Path, submissions: Path | None = None) -> str:
    """'' for a regular file (a symbolic link is not followed); else what it is, in words: a
    folder, a FIFO, a device, a socket, or a symbolic link and its target ("a symbolic link to
    another student's submission (NAME)" when it leads to another entry of ``submissions``)."""
    mode = os.lstat(path).st_mode
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISLNK(mode):
        return _link(path, submissions)
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def read_submitted(path: Path, submissions: Path | None = None, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a submitted file, read as a regular file only and at most ``limit`` of them.

    Opened with ``O_NOFOLLOW | O_NONBLOCK``: a symbolic link is never followed, and a FIFO or a
    device never blocks the grader; after the open, ``fstat`` must show a regular file. Raises
    :class:`Refused` naming what the file is (:func:`what_it_is`), or its size and the bound,
    with nothing more read."""
    refused = refusal(path, submissions)  # before the open: a device is not even opened
    if refused:
        raise Refused(refused)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):  # made a link since
            raise Refused(_not_read(path, _link(path, submissions))) from None
        raise Refused(f"{path.name} cannot be opened: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(_not_read(path, next((words for test, words in _KINDS if test(info.st_mode)),
                                               "not a regular file")))
        if info.st_size > limit:
            raise Refused(f"{path.name} is {_megabytes(info.st_size)}, over the {limit / 2**20:g} MB "
                          f"bound on a submitted notebook: not read")
        chunks, size = [], 0
        while size <= limit:  # a file that grows while it is read stops at the bound too
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise Refused(f"{path.name} grew past the {limit / 2**20:g} MB bound on a submitted notebook "
                          f"while it was read: not read further")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_notebook(data: bytes, name: str) -> dict:
    """A submitted notebook's bytes as an nbformat 4 notebook: an older version (1 to 3) is
    upgraded by nbformat's own conversion (``nbformat.reads(..., as_version=4)``), then
    validated. Raises :class:`Refused` naming what is wrong: not UTF-8, not JSON, no notebook,
    a version nbformat cannot read, or the first rule of nbformat's schema it breaks."""
    import nbformat
    from nbformat import versions

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Refused(f"{name} is not UTF-8 text (byte {err.start}): not a notebook") from None
    if not text.strip():
        raise Refused(f"{name} is empty: not a notebook")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise Refused(f"{name} is not JSON ({str(err)[:120]}): not a notebook") from None
    if not isinstance(raw, dict):
        raise Refused(f"{name} holds a JSON {type(raw).__name__}, not an object: not a notebook")
    version = raw.get("nbformat")
    if "nbformat" not in raw:
        raise Refused(f"{name} has no field 'nbformat' (the version every notebook states): not a notebook")
    if type(version) is not int or version not in versions:
        readable = ", ".join(map(str, sorted(versions)))
        raise Refused(f"{name} has nbformat {version!r}, a version nbformat {nbformat.__version__} "
                      f"cannot read (it reads {readable})")
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # nbformat's conversion or schema: its first line says what
        first = (getattr(err, "message", None) or str(err) or type(err).__name__).splitlines()[0]
        raise Refused(f"{name} is not a valid notebook (nbformat {version}): {first[:160]}") from None
    return nb
