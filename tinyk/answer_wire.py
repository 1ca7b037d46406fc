"""The wire between the verdict and the learner's answers (course: the instructors' page, grading).

Frames on both pipes: an 8-byte length, then the payload. Requests are pickles (they come
from the grader); replies are ``torch.save`` payloads (read back with ``weights_only``), made
by :func:`reply`. The markers below tag what a request's arguments hold. Used on both sides:
:mod:`tinyk.answers` (the learner's process) and :mod:`tinyk.answer_server`,
:mod:`tinyk.remote` (the grader's).
"""

from __future__ import annotations

import io
import struct
from typing import BinaryIO

__all__ = ["ARG", "CALLBACK", "REF", "error", "read_frame", "reply", "write_frame"]

REF = "\x00ref"  # a request's reference to a handle: (REF, id)
ARG = "\x00arg"  # a tensor argument that needs its gradient: (ARG, index)
CALLBACK = "\x00cb"  # a function of the test's, which runs on the grader's side: (CALLBACK, id)


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_frame(stream: BinaryIO, limit: int = 2**40) -> bytes | None:
    """One frame's payload, or None at the end of the stream (or past ``limit`` bytes)."""
    head = _read_exactly(stream, 8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    if size > limit:
        return None
    data = _read_exactly(stream, size)
    return data if len(data) == size else None


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def reply(out: BinaryIO, tree: tuple) -> None:
    """Send ``tree`` as one ``torch.save`` frame."""
    import torch

    buffer = io.BytesIO()
    torch.save(tree, buffer)
    write_frame(out, buffer.getvalue())


def error(exc: BaseException) -> tuple:
    """An exception as data: its class name (a builtin's, else its base's) and its message."""
    import builtins

    name = next((c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c),
                "Exception")
    return ("err", name, f"{type(exc).__name__}: {exc}"[:2000])
