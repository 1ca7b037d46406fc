"""One ``ast.parse`` at a time while several students are graded at once (course section "For
instructors", grading a class).

The grader grades ``--jobs`` students in threads of one process, and each thread parses Python
source: the tampering check, the verdict's names, and the standard library itself (in
Python 3.11, ``traceback`` parses the line of each frame it formats, to place its ``^^^``).
CPython 3.11 builds the Python objects of a parsed tree with a recursion counter shared by
every thread of the interpreter; when a thread switch lands inside one build (the garbage
collector running a finalizer written in Python can cause one), the two builds count into the
same counter and one of them fails with ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905). A student graded then got an error row for each exercise.

:func:`one_parse_at_a_time` makes ``ast.parse`` take a lock for as long as the grading
threads run, so that no two trees are built at once, whoever asks for them.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_parse_at_a_time"]

_LOCK = threading.RLock()  # re-entrant: a parse that formats a traceback parses again


@contextmanager
def one_parse_at_a_time() -> Iterator[None]:
    """Within the block, every ``ast.parse`` of the process holds one lock (re-entrant);
    after it, ``ast.parse`` is what it was. A block inside another adds nothing."""
    original = ast.parse
    if getattr(original, "__wrapped__", None) is not None:  # already guarded: nothing to add
        yield
        return

    def parse(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return original(*args, **kwargs)

    parse.__wrapped__ = original  # type: ignore[attr-defined]
    parse.__doc__ = original.__doc__
    ast.parse = parse
    try:
        yield
    finally:
        ast.parse = original
