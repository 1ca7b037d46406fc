"""One ``ast.parse`` at a time while several students are graded at once (course section "For
instructors", grading a class).

The grader grades ``--jobs`` students in threads of one process, and each thread parses Python
source: the tampering check, the verdict's names, and the standard library itself (in
Python 3.11, ``traceback`` parses the line of each frame it formats, to place its ``^^^``).
CPython 3.11 builds the Python objects of a parsed tree with a recursion counter shared by
every thread of the interpreter; when a thread switch lands inside one build (the garbage
collector running a finalizer written in Python can cause one), the two builds count into the
same counter and one of them fails with ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905): without this guard, a student whose grading met that
error would get an error row for each exercise.

:func:`one_parse_at_a_time` makes ``ast.parse`` take a lock for as long as the grading
threads run, so that no two of its calls build a tree at once. Code that parses by another
route (``compile`` with ``ast.PyCF_ONLY_AST``, or a ``parse`` bound before the block began)
is not covered; nothing the grader runs in its threads does that.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_parse_at_a_time"]

# Re-entrant: a finalizer that runs during a parse (the garbage collector's) may format a
# traceback, which parses again in the same thread.
_LOCK = threading.RLock()
_STATE = threading.Lock()  # guards the two names below
_blocks = 0  # blocks open now, in any thread
_original: Any = None  # ast.parse as it was before the first of them


def _parse(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        return _original(*args, **kwargs)


@contextmanager
def one_parse_at_a_time() -> Iterator[None]:
    """Within the block, every ``ast.parse`` of the process holds one lock (re-entrant). Blocks
    may overlap, in one thread or several: ``ast.parse`` is what it was once the last one ends."""
    global _blocks, _original
    with _STATE:
        if _blocks == 0:
            _original = ast.parse
            _parse.__doc__ = _original.__doc__
            ast.parse = _parse
        _blocks += 1
    try:
        yield
    finally:
        with _STATE:
            _blocks -= 1
            if _blocks == 0:
                ast.parse = _original
