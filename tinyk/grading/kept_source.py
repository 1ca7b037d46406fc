"""The text of the package's modules whose files the grader's sandbox deletes, for ``inspect``
to read, without the parts a run withholds (course: the instructors' page, grading).

Under the grader's sandbox, :mod:`tinyk.grading.learner_process` deletes the files of the modules that
hold the
parts once it has imported them (its ``HIDDEN``). An answer may still read the source of a
function of theirs that is no withheld part: 05.4.4's answer reads tinyk's ``repeat_kv``,
withheld in the notebook's run, and is judged again in a run that withholds only its own
parts, where Jupyter would show that text. :func:`keep` reads the modules' text before their
files go; :func:`lend`, in each run, puts it where :mod:`inspect` and tracebacks read a
file's lines (:mod:`linecache`), with the definitions of the parts withheld in that run
blanked line for line (the other lines keep their numbers), then lets the full text go.
"""

from __future__ import annotations

import inspect
import linecache
from collections.abc import Iterable
from types import ModuleType

__all__ = ["keep", "lend"]

# Each kept module's file name and its lines (line ends kept), until a run lends them.
_TEXT: dict[str, list[str]] = {}


def keep(modules: Iterable[ModuleType]) -> None:
    """Read the text of ``modules`` (before their files are deleted)."""
    for module in modules:
        path = module.__file__
        if path:
            with open(path, encoding="utf-8") as file:
                _TEXT[path] = file.readlines()


def _put(path: str, lines: list[str]) -> None:
    # no modification time: linecache.checkcache keeps an entry whose file is gone
    linecache.cache[path] = (sum(len(line) for line in lines), None, lines, path)


def lend(withheld: Iterable[object]) -> None:
    """Put the kept text into :mod:`linecache`, the definitions of the functions and classes
    ``withheld`` blanked, and forget the full text."""
    if not _TEXT:
        return
    for path, lines in _TEXT.items():
        _put(path, lines)  # the full text, for inspect to find where each withheld part is
    shown = {path: list(lines) for path, lines in _TEXT.items()}
    for part in withheld:
        try:
            path = inspect.getsourcefile(part)  # type: ignore[arg-type]
            lines, first = inspect.getsourcelines(part)  # type: ignore[arg-type]
        except (OSError, TypeError):
            continue
        if path in shown:
            for number in range(max(first, 1), first + len(lines)):
                shown[path][number - 1] = "\n"
    for path, lines in shown.items():
        _put(path, lines)
    _TEXT.clear()
