"""A student's submission as it is graded (course section "For instructors"): read, restored from
the release (nothing of the submission decides what is locked, graded or worth points), scanned
for tampering, and written into an nbgrader course's ``submitted`` folder.
"""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

from tinyk.courseware.exercises import nbgrader, python_tree, source_text
from tinyk.grading.chapter import ASSIGNMENT, Notebook
from tinyk.grading.rules import Finding
from tinyk.reports.gradebook_schema import Status
from tinyk.reports.submitted_files import Refused, parse_notebook, read_submitted, refusal

__all__ = ["SKIP_TAG", "checked", "emptied_when_graded", "for_grading", "read_notebook", "restore_release",
           "submission_files", "submit", "tampering", "write_for_grading"]

# Rebinding any of these inside student code is treated as tampering with the checks.
_GUARDED_MODULES = {"math", "torch", "builtins", "numpy", "np", "operator", "tinyk", "F"}
_GUARDED_NAMES = {"isinstance", "type", "float", "int", "bool", "len", "all", "any", "abs",
                  "AssertionError", "__import__", "setattr", "getattr"}
SKIP_TAG = "skip-when-grading"


def _refusal(path: Path, submissions: Path) -> Path | Finding:
    """``path`` when it is a regular file; else (a folder, a FIFO, a device, a socket, a
    symbolic link, which is never followed) the ``unreadable`` finding that names what it is."""
    refused = refusal(path, submissions)
    return (Status.UNREADABLE, refused) if refused else path


def submission_files(entry: Path, notebooks: list[Notebook]) -> dict[str, Path | Finding | None]:
    """Which file holds each notebook: a folder holds ``NAME.ipynb`` files; a single file
    counts as the submission of the one notebook being graded. A file that is no regular file
    (a folder, a FIFO, a device, a socket, a symbolic link: never followed, wherever it leads)
    is its ``unreadable`` finding instead, which :func:`checked` passes on; so is an entry that
    is none of a folder and a file."""
    mode = os.lstat(entry).st_mode
    if stat.S_ISDIR(mode):
        files: dict[str, Path | Finding | None] = {}
        for nb in notebooks:
            path = entry / f"{nb.name}.ipynb"
            files[nb.name] = _refusal(path, entry.parent) if os.path.lexists(path) else None
        return files
    if not stat.S_ISREG(mode):
        refused = _refusal(entry, entry.parent)
        return {nb.name: refused for nb in notebooks}
    if len(notebooks) != 1:  # an error for this student only (reported in their rows)
        raise ValueError(f"{entry.name} is a single file, but {len(notebooks)} notebooks are graded: "
                         f"submit a folder, or grade one --notebook")
    return {notebooks[0].name: entry}


def read_notebook(path: Path, submissions: Path | None = None) -> dict:
    """The notebook at ``path`` as nbformat 4 (an older version upgraded by nbformat), read as
    a regular file within the bound on its size (:func:`tinyk.reports.submitted_files.read_submitted`); raises
    :class:`~tinyk.reports.submitted_files.Refused` saying why it is not a readable notebook."""
    return parse_notebook(read_submitted(path, submissions), path.name)


def _tampering_at(node: ast.AST) -> str:
    """Why one node of the student's code tampers with the checks, else ''."""
    targets = []
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id in _GUARDED_MODULES):
            return f"assigns {target.value.id}.{target.attr}"
        if isinstance(target, ast.Name) and target.id in _GUARDED_NAMES:
            return f"rebinds {target.id}"
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in _GUARDED_MODULES):
        return f"setattr on {node.args[0].id}"
    if isinstance(node, ast.Import) and any(alias.name == "builtins" for alias in node.names):
        return "imports builtins"
    if isinstance(node, ast.ImportFrom) and node.module == "builtins":
        return "imports from builtins"
    return ""


def tampering(nb: dict) -> str:
    """A short reason if the student's code (every code cell but a locked one, locked as
    restored from the release: :func:`restore_release`) rebinds names the tests rely on,
    else ''."""
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code" or nbgrader(cell).get("locked"):
            continue
        tree = python_tree(source_text(cell))
        if tree is None:
            continue
        found = next(filter(None, map(_tampering_at, ast.walk(tree))), "")
        if found:
            return found
    return ""


def _in_order(items: list[str], order: list[str]) -> set[str]:
    """The most ``items`` that already stand in ``order``'s order (a longest increasing
    subsequence of their ranks): the others are the ones that were moved."""
    rank = [order.index(item) for item in items]
    best: list[list[int]] = []  # best[i]: the longest in-order run ending at items[i]
    for i, r in enumerate(rank):
        best.append([*max((best[j] for j in range(i) if rank[j] < r), key=len, default=[]), i])
    return {items[i] for i in max(best, key=len, default=[])}


def _nbgrader_meta(meta: dict) -> dict:
    """nbgrader metadata to compare: the roles and points (2 and 2.0 are the same points).
    The checksum is left out: it hashes the cell's source, which is compared on its own (a
    locked cell) or is the student's to change (an answer cell, whose released stub may
    differ from the student version's, e.g. without Colab's form title)."""
    return {k: float(v) if k == "points" and type(v) in (int, float) else v
            for k, v in meta.items() if k != "checksum"}


def _copy(cell: dict) -> dict:
    return json.loads(json.dumps(cell))


def _read_sequence(submitted: dict, exercises: dict[str, dict],
                   changes: list[str]) -> tuple[dict[str, dict], list[str | dict]]:
    """The student's cell of each exercise (the first of its grade_id) and the submission as a
    sequence of those grade_ids and the student's own cells; a duplicate, or nbgrader metadata
    on a cell of no exercise, is listed in ``changes`` and its metadata removed. An answer cell
    whose nbgrader metadata was removed, and no other cell of that grade_id, is found by its
    cell id (the release's)."""
    named = {gid for cell in submitted["cells"]
             if isinstance(meta := cell.get("metadata", {}).get("nbgrader"), dict)
             and isinstance(gid := meta.get("grade_id"), str)}
    by_cell_id = {cell["id"]: grade_id for grade_id, cell in exercises.items()
                  if nbgrader(cell).get("solution") and cell.get("id") and grade_id not in named}
    theirs: dict[str, dict] = {}
    sequence: list[str | dict] = []
    for cell in submitted["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        cell_id = cell.get("id")
        found = by_cell_id.get(cell_id) if meta is None and isinstance(cell_id, str) else None
        if found is not None and found not in theirs:
            theirs[found] = cell
            sequence.append(found)
            continue
        if meta is not None:
            grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
            grade_id = grade_id if isinstance(grade_id, str) else None
            if grade_id in exercises and grade_id not in theirs:
                theirs[grade_id] = cell
                sequence.append(grade_id)
                continue
            changes.append(f"{grade_id} duplicated" if grade_id in theirs
                           else f"nbgrader metadata on a cell of no exercise ({grade_id or 'no grade_id'})")
            cell = _copy(cell)
            del cell["metadata"]["nbgrader"]
        sequence.append(cell)
    return theirs, sequence


def _own_cells_after(sequence: list[str | dict], kept: set[str]) -> dict[str | None, list[dict]]:
    """The student's own cells by the last exercise cell before them that was not moved
    (None: before every such cell)."""
    after: dict[str | None, list[dict]] = {None: []}
    anchor = None
    for item in sequence:
        if isinstance(item, str):
            if item in kept:
                anchor = item
                after[anchor] = []
        else:
            after[anchor].append(item)
    return after


def _restored(original: dict, mine: dict, grade_id: str, translated: dict[str, str],
              changes: list[str]) -> dict:
    """The released exercise cell, with the student's code if it is an answer cell; what the
    student changed of it is listed in ``changes``."""
    meta, cell = nbgrader(original), _copy(original)
    if mine.get("cell_type") != original["cell_type"]:
        changes.append(f"{grade_id} retyped")
    theirs = mine.get("metadata", {}).get("nbgrader")
    if theirs is None:
        changes.append(f"{grade_id} nbgrader metadata removed (its cell found by its id)")
    elif not isinstance(theirs, dict) or _nbgrader_meta(theirs) != _nbgrader_meta(meta):
        changes.append(f"{grade_id} nbgrader metadata changed")
    if meta.get("solution"):
        cell["source"] = source_text(mine)
    elif source_text(mine).strip() not in (source_text(original).strip(),
                                           translated.get(grade_id, "").strip() or None):
        changes.append(f"{grade_id} edited")
    return cell


def _unique_ids(cells: list[dict]) -> None:
    """Give every cell a unique id (a copy may share its original's)."""
    ids: set[str] = set()
    for i, cell in enumerate(cells):
        if cell.get("id") in ids or not cell.get("id"):
            cell["id"] = next(new for n in range(len(cells) + 1) if (new := f"cell-{i}-{n}") not in ids)
        ids.add(cell["id"])


def restore_release(submitted: dict, released: dict,
                    translated: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    """The submission as it is graded, and what had to be restored to get it.

    Nothing of the submission decides what is locked, graded or worth points: every
    exercise cell (one with nbgrader metadata in the release) is the released cell of its
    ``grade_id``, in the release's order, with the release's type and nbgrader metadata
    (roles, points, checksum) and, but for an answer cell, which keeps the student's code,
    the release's source. Each of the student's other cells stays after the exercise cell it
    followed (the last one before it that was not moved). Listed as changes: an exercise
    cell edited (a locked one), deleted (a locked one is put back), duplicated (the copies
    run as the student's own cells), moved, retyped or with its nbgrader metadata changed
    or removed (an answer cell without it is found by the release's cell id), and nbgrader
    metadata on a cell that is no released exercise (removed: the cell runs as the student's
    own). A locked cell as the Chinese student version has it (``translated``,
    grade_id -> source) is not an edit: it is restored from the release like any other.
    """
    exercises = {nbgrader(c)["grade_id"]: c for c in released["cells"] if nbgrader(c)}
    changes: list[str] = []
    theirs, sequence = _read_sequence(submitted, exercises, changes)
    present = [grade_id for grade_id in exercises if grade_id in theirs]
    kept = _in_order(list(theirs), present)
    changes += [f"{grade_id} moved" for grade_id in present if grade_id not in kept]
    after = _own_cells_after(sequence, kept)
    cells = list(after[None])
    for grade_id, original in exercises.items():
        if grade_id not in theirs:
            changes.append(f"{grade_id} deleted")
            if not nbgrader(original).get("solution"):
                cells.append(_copy(original))
            continue
        cell = _restored(original, theirs[grade_id], grade_id, translated or {}, changes)
        cells += [cell, *after.get(grade_id, [])]
    nb = {**submitted, "cells": cells,
          "nbformat_minor": max(submitted.get("nbformat_minor", 0), released.get("nbformat_minor", 0))}
    if nb["nbformat_minor"] >= 5:  # cell ids, unique
        _unique_ids(cells)
    return nb, changes


def emptied_when_graded(cell: dict) -> bool:
    """Whether :func:`write_for_grading` empties ``cell``: a code cell tagged
    ``skip-when-grading`` that is no exercise cell."""
    return (cell.get("cell_type") == "code" and not nbgrader(cell)
            and SKIP_TAG in cell.get("metadata", {}).get("tags", []))


def for_grading(submitted: dict) -> dict:
    """The submission as it is graded, changed in place: code cells tagged
    ``skip-when-grading`` that are not exercise cells (figures and slider frames for the book)
    are emptied, so they cost no time; exercise cells, locked or not, always run."""
    for cell in submitted["cells"]:
        if emptied_when_graded(cell):
            cell["source"] = "# skipped when grading"
            cell["outputs"] = []
    return submitted


def write_for_grading(submitted: dict, path: Path) -> None:
    """The submission as it is graded (:func:`for_grading`), written to ``path``."""
    import nbformat

    nbformat.write(nbformat.from_dict(for_grading(submitted)), path)


def checked(path: Path | Finding | None, nb: Notebook, released: dict) -> tuple[dict | None, Finding | None]:
    """A submitted notebook restored from the release, with what the checks found; None in
    place of the notebook when it is not graded (missing, unreadable, tampering). ``path`` is
    what :func:`submission_files` found: a file, None, or the finding of a file not read."""
    if path is None:
        return None, (Status.MISSING, f"no {nb.name}.ipynb in the submission")
    if isinstance(path, tuple):
        return None, path
    try:
        submitted = read_notebook(path)
    except Refused as refused:
        return None, (Status.UNREADABLE, str(refused))
    restored, changed = restore_release(submitted, released, nb.translated)
    tampered = tampering(restored)
    if tampered:
        return None, (Status.TAMPERING, tampered)
    if changed:
        return restored, (Status.TESTS_MODIFIED, "restored from the release: " + ", ".join(changed))
    return restored, None


def submit(course: Path, sid: str, entry: Path, notebooks: list[Notebook],
           released: dict[str, dict]) -> tuple[dict[str, Finding], list[Notebook]]:
    """Put a student's notebooks into the course's ``submitted`` folder as they are graded
    (:func:`restore_release`, :func:`write_for_grading`). Returns what the checks found
    per notebook (missing, unreadable, tampering: left out; tests-modified) and the
    notebooks written."""
    files = submission_files(entry, notebooks)
    flags: dict[str, Finding] = {}
    target = course / "submitted" / sid / ASSIGNMENT
    target.mkdir(parents=True)
    written = []
    for nb in notebooks:
        restored, flag = checked(files.get(nb.name), nb, released[nb.name])
        if flag is not None:
            flags[nb.name] = flag
        if restored is not None:
            write_for_grading(restored, target / f"{nb.name}.ipynb")
            written.append(nb)
    return flags, written
