"""Which chapter notebooks are graded, and their exercises (course section "For instructors").

A :class:`Notebook` is a source notebook of the chapter (solutions and hidden tests) with the
graded cells it holds and, for a checkout's notebook, the exercise cells of its Chinese
student version: every other module of :mod:`tinyk.grading` works on these.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tinyk.courseware.checkout import NOTEBOOKS, course_root
from tinyk.courseware.exercises import is_test, nbgrader, source_text

__all__ = ["ASSIGNMENT", "Notebook", "chapter_notebooks", "exercises_of", "translated_cells"]

# The one nbgrader assignment the chapter's notebooks form, in every course the grader prepares.
ASSIGNMENT = "chapter05"


@dataclass
class Notebook:
    """A chapter notebook to grade: its source ``path``, its ``name`` (the file's stem), its
    graded cells ``tests`` as ``(grade_id, points)`` in order, and ``translated``: grade_id ->
    the source of that exercise cell in the Chinese student version (``student/zh/``)."""

    path: Path
    name: str
    tests: list[tuple[str, float]] = field(default_factory=list)
    translated: dict[str, str] = field(default_factory=dict)


def translated_cells(source: Path) -> dict[str, str]:
    """The exercise cells of the Chinese student version of a checkout's source notebook, by
    grade_id: a learner of the Chinese edition submits these locked cells, whose words (test
    messages, comments) differ from the release and whose code is the same. Empty for a
    notebook outside a checkout's ``notebooks/`` or without a Chinese version."""
    from tinyk.courseware.checkout import is_checkout, student_path

    root = source.resolve().parent.parent
    if source.resolve().parent != root / NOTEBOOKS or not is_checkout(root):
        return {}
    chinese = student_path(source.resolve(), root, language="zh")
    if not chinese.is_file():
        return {}
    cells = json.loads(chinese.read_text(encoding="utf-8"))["cells"]
    return {nbgrader(c)["grade_id"]: source_text(c) for c in cells if nbgrader(c).get("grade_id")}


def exercises_of(path: Path) -> list[tuple[str, float]]:
    """The graded cells of a notebook: ``(grade_id, points)`` in order."""
    cells = json.loads(path.read_text())["cells"]
    return [(nbgrader(c)["grade_id"], float(nbgrader(c).get("points", 0))) for c in cells if is_test(c)]


def chapter_notebooks(notebooks: Sequence[str | Path] | None, source_dir: Path | None) -> list[Notebook]:
    """The notebooks to work on, from names in ``source_dir`` or paths (all of it when None);
    those without a graded cell are left out. ``source_dir=None``: the course checkout's
    ``notebooks/`` (an error that says so when there is none)."""
    if source_dir is None:
        source_dir = course_root() / NOTEBOOKS
    available = sorted(source_dir.glob("*.ipynb")) if source_dir.is_dir() else []
    paths = []
    for item in notebooks or available:
        path = Path(item)
        if path.suffix == ".ipynb" and path.is_file():
            paths.append(path)
            continue
        found = [p for p in available if p.stem == path.stem]
        if not found:
            raise SystemExit(f"notebook {str(item)!r}: no such file, nor a notebook of that name in "
                             f"{source_dir}; choose from {[p.stem for p in available]}")
        paths.append(found[0])
    chosen = [Notebook(p, p.stem, exercises_of(p), translated_cells(p)) for p in dict.fromkeys(paths)]
    return [nb for nb in chosen if nb.tests]
