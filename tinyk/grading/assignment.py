"""The nbgrader assignment of the chapter (course section "For instructors"): validate and release it.

``validate`` checks the course's nbgrader metadata rules (and runs the solutions against their
tests); ``release`` writes the student versions with nbgrader's own ``generate_assignment``,
from an nbgrader course that grading prepares the same way (:func:`prepare_course`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from tinyk.courseware.exercises import BEGIN_HIDDEN, BEGIN_SOLUTION, GRADE_ID, nbgrader, source_text
from tinyk.grading.chapter import ASSIGNMENT, Notebook, chapter_notebooks
from tinyk.grading.runner import require_nbgrader, run_nbgrader

__all__ = ["metadata_problems", "prepare_course", "release", "released_notebooks", "validate"]


def _role_problems(meta: dict, cell: dict, text: str) -> list[str]:
    """What breaks the rules of a grade cell or a solution cell (or of being neither)."""
    problems = []
    if meta.get("grade"):
        if not meta.get("locked") or meta.get("solution"):
            problems.append("a grade cell must be locked and not a solution")
        if not meta.get("points", 0) > 0:
            problems.append(f"points {meta.get('points')!r}: a grade cell needs positive points")
        if BEGIN_HIDDEN not in text:
            problems.append(f"a grade cell needs {BEGIN_HIDDEN!r}")
    if meta.get("solution"):
        if meta.get("locked"):
            problems.append("a solution cell must not be locked")
        if BEGIN_SOLUTION not in text:
            problems.append(f"a solution cell needs {BEGIN_SOLUTION!r}")
        if cell.get("metadata", {}).get("cellView") != "form":
            problems.append("a solution cell needs metadata cellView 'form' (hidden in Colab)")
    if not (meta.get("solution") or meta.get("grade")):
        problems.append("neither a solution nor a grade cell")
    return problems


def _cell_problems(meta: dict, cell: dict, seen: set[str]) -> list[str]:
    """The rule breaks of one nbgrader cell; adds its grade_id to ``seen``."""
    problems = []
    if meta.get("schema_version") != 3:
        problems.append(f"schema_version is {meta.get('schema_version')!r}, must be 3")
    missing = [key for key in ("grade", "solution", "locked", "grade_id") if key not in meta]
    if missing:
        problems.append(f"missing {missing}")
    grade_id = str(meta.get("grade_id", ""))
    if not GRADE_ID.match(grade_id):
        problems.append(f"grade_id {grade_id!r} must use letters, digits, _ or -")
    if grade_id in seen:
        problems.append(f"duplicate grade_id {grade_id!r}")
    seen.add(grade_id)
    return problems + _role_problems(meta, cell, source_text(cell))


def metadata_problems(paths: Iterable[Path]) -> list[str]:
    """The course's nbgrader metadata rules (section "For instructors"), over all ``paths``.

    Schema 3; ``grade``, ``solution``, ``locked`` and a ``grade_id`` of letters, digits, ``_``
    or ``-``, unique across the notebooks; a grade cell is locked, not a solution, has positive
    points and hidden tests; a solution cell is unlocked, holds ``### BEGIN SOLUTION`` and is
    hidden behind a Colab form; every nbgrader cell is one or the other. ``validate`` and the
    test suite both use this one function.
    """
    problems: list[str] = []
    seen: set[str] = set()
    for path in paths:
        for i, cell in enumerate(json.loads(Path(path).read_text())["cells"]):
            meta = nbgrader(cell)
            if meta:
                where = f"{Path(path).name} cell {i} ({meta.get('grade_id', 'no grade_id')})"
                problems += [f"{where}: {problem}" for problem in _cell_problems(meta, cell, seen)]
    return problems


def validate(paths: list[Path], run: bool = True, timeout: int = 300) -> list[str]:
    """Metadata problems of every notebook, and (``run``) any cell that fails when executed."""
    problems = metadata_problems(paths)
    if run:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError

        for path in paths:
            nb = nbformat.read(path, as_version=4)
            try:
                NotebookClient(nb, timeout=timeout, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
            except CellExecutionError as err:
                problems.append(f"{path.name}: a cell failed when run: {str(err).splitlines()[-1][:200]}")
    return problems


@functools.cache
def _schema_version() -> str | None:
    """The gradebook schema version of the installed nbgrader: the head of its alembic
    migrations (None if they have more than one head)."""
    from alembic.script import ScriptDirectory

    spec = importlib.util.find_spec("nbgrader")
    if spec is None or spec.origin is None:
        return None
    heads = ScriptDirectory(str(Path(spec.origin).parent / "alembic")).get_heads()
    return heads[0] if len(heads) == 1 else None


def _new_gradebook(path: Path) -> None:
    """An empty gradebook at ``path``, stamped with nbgrader's schema version as nbgrader's
    first ``Gradebook`` stamps a new one; nbgrader then adds its tables. nbgrader itself asks
    ``alembic heads`` in a new process for the version (1.3 s of every run's preparation)."""
    version = _schema_version()
    if version is None:
        return  # nbgrader stamps it
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (version,))


def prepare_course(notebooks: list[Notebook], root: Path) -> None:
    """An nbgrader course at ``root`` with the chapter notebooks as one assignment, released once."""
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb.path, source / f"{nb.name}.ipynb")
    _new_gradebook(root / "gradebook.db")
    run = run_nbgrader(["generate_assignment", ASSIGNMENT, "--force"], root)
    if run.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")


def released_notebooks(course: Path, notebooks: list[Notebook]) -> dict[str, dict]:
    """The released version of each notebook of a prepared course, by name."""
    folder = course / "release" / ASSIGNMENT
    return {nb.name: json.loads((folder / f"{nb.name}.ipynb").read_text()) for nb in notebooks}


def release(out_dir: Path, notebooks: Sequence[str | Path] | None = None, *,
            source: Path | None = None) -> list[Path]:
    """Student versions (nbgrader's own generate_assignment) written to ``out_dir``.

    ``notebooks``: names of notebooks in ``source``, or paths; all of ``source`` when None.
    """
    require_nbgrader()
    chosen = chapter_notebooks(notebooks, source)
    with tempfile.TemporaryDirectory(prefix="tinyk-release-") as tmp:
        prepare_course(chosen, Path(tmp))
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for path in sorted((Path(tmp) / "release" / ASSIGNMENT).glob("*.ipynb")):
            shutil.copy(path, out_dir / path.name)
            written.append(out_dir / path.name)
    return written
