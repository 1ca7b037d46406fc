"""The exercise cell format (nbgrader schema 3) and the book's view of a chapter notebook.

A chapter notebook holds each exercise as a solution cell (the answer between
``### BEGIN SOLUTION`` and ``### END SOLUTION``) and a locked test cell (visible asserts,
then stronger checks between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``).
From it come:

- the **book view** (:func:`book_version`): markers gone, solutions kept (they run and
  are shown behind a toggle), hidden tests gone;
- the **student view** is nbgrader's own release (:func:`tinyk.courseware.student_versions.released`):
  solutions replaced by nbgrader's stub (:data:`STUB`), hidden tests gone, no outputs.
"""

from __future__ import annotations

import ast
import copy
import re

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
# The ``# @title`` line that makes a cell a Colab form (its code hidden).
FORM_TITLE = re.compile(r"^\s*# @title\b.*$")
GRADE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def source_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def python_tree(source: str) -> ast.Module | None:
    """The syntax tree of a cell's ``source``, or None where Python cannot parse it: a syntax
    error, a null byte, or nesting too deep for the parser (``RecursionError``, or a
    ``MemoryError`` from its stack). The kernel, which parses the cell too, reports that error
    as the cell's own."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _set_source(cell: dict, text: str) -> None:
    cell["source"] = text.splitlines(keepends=True)


def _cut_between(text: str, begin: str, end: str, replacement: str | None) -> str:
    """Replace each ``begin ... end`` block (marker lines included) by ``replacement``."""
    out, inside, indent = [], False, ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == begin:
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            if replacement is not None:
                out.extend(indent + r for r in replacement.splitlines())
        elif stripped == end and inside:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).strip("\n")


def nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell: dict) -> bool:
    return bool(nbgrader(cell).get("solution"))


def is_test(cell: dict) -> bool:
    return bool(nbgrader(cell).get("grade")) and cell.get("cell_type") == "code"


def book_version(nb: dict) -> dict:
    """Markers and hidden tests removed; solutions kept and tagged to show behind a toggle."""
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = source_text(cell)
        if is_solution(cell):
            lines = [ln for ln in text.splitlines()
                     if ln.strip() not in (BEGIN_SOLUTION, END_SOLUTION) and not FORM_TITLE.match(ln)]
            _set_source(cell, "\n".join(lines).strip("\n"))
            meta = cell.setdefault("metadata", {})
            tags = meta.setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
            meta["mystnb"] = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
        elif BEGIN_HIDDEN in text:
            _set_source(cell, _cut_between(text, BEGIN_HIDDEN, END_HIDDEN, None))
    return nb
