"""Instructor tools: validate, release and grade the chapter's exercises with nbgrader.

    python -m tinyk.grading validate [NOTEBOOK ...]
    python -m tinyk.grading release OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading grade SUBMISSIONS_DIR --out grades.csv [--notebook NAME ...] [--shard K/N]
    python -m tinyk.grading merge grades.csv SHARD.csv [SHARD.csv ...]
    python -m tinyk.grading feedback SUBMISSIONS_DIR OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading report grades.csv --out REPORT_DIR
    python -m tinyk.grading similarity SUBMISSIONS_DIR --out similarity.html [--threshold 0.6]
    python -m tinyk.grading export grades.csv --format canvas|moodle|gradescope --roster roster.csv --out FILE

Linux only (it uses ``resource``, ``/proc`` and bubblewrap). Needs the instructor extras:
``pip install -e .[instructor]`` (nbgrader) and, to grade, bubblewrap (``apt-get install bubblewrap``).

Grading is done student by student, each in a throwaway copy of a prepared nbgrader course
(in a temporary folder, never in the instructor's course folder), by ``nbgrader autograde``
in a subprocess with a per-cell timeout, a total time limit and a memory limit, several
students at once. Locked test cells and hidden tests come from the gradebook, not from the
submission. The CSV has one row per student and exercise, with a status; it is written
atomically, and each finished student is kept in ``<out>.parts/`` so that an interrupted
run resumes where it stopped and a rerun reproduces the same file.

Each notebook's kernel, where the student's code runs, starts inside a bubblewrap sandbox:
the system and the Python environment read-only, a scratch folder and a private /tmp
writable, no network, its own processes; the course copy, the gradebook and the hidden tests
are out of its sight. ``--no-sandbox`` opts out. See the instructors' page (course section
"For instructors") for what the sandbox covers and what it does not.

The kernel's run gives the outputs (and the feedback); the points of every exercise but
05.10's capstone come from :mod:`tinyk.verdict`, which runs the student's answer cells again
in the same sandbox, in a plain interpreter (:mod:`tinyk.answers`), and the test cells in the
grader's own process, where no code of the student's runs.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tinyk.course import NOTEBOOKS, NotACheckout, course_root
from tinyk.exercises import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    END_HIDDEN,
    GRADE_ID,
    is_solution,
    is_test,
    nbgrader,
    source_text,
)
from tinyk.mistakes import by_id, mistakes_in, note
from tinyk.roster import STATUSES, student_id, student_name
from tinyk.roster import entries as submission_entries

__all__ = ["SKIP_TAG", "STATUSES", "Limits", "Row", "check_sandbox", "exercises_of", "feedback", "grade",
           "main", "merge", "metadata_problems", "parse_shard", "release", "shard_of", "validate"]

ASSIGNMENT = "chapter05"
FIELDS = ["student", "notebook", "exercise", "points", "max_points", "status", "detail"]
# Rebinding any of these inside student code is treated as tampering with the checks.
_GUARDED_MODULES = {"math", "torch", "builtins", "numpy", "np", "operator", "tinyk", "F"}
_GUARDED_NAMES = {"isinstance", "type", "float", "int", "bool", "len", "all", "any", "abs",
                  "AssertionError", "__import__", "setattr", "getattr"}


@dataclass
class Limits:
    """Per-submission limits: seconds per cell; seconds per notebook in all (a student who
    submits n notebooks has n times ``total_timeout`` for the lot); megabytes of memory; CPU
    threads per kernel (``OMP_NUM_THREADS``): ``jobs`` kernels run at once, so one thread
    each keeps them from fighting over the cores (on 2 cores, 3.9x the throughput of two
    threads per kernel, side by side in ``benchmarks/bench_grading.py --compare-threads 2``)."""

    cell_timeout: int = 60
    total_timeout: int = 600
    memory_mb: int = 8192  # address space (RLIMIT_AS): a torch kernel reserves far more than it uses
    threads: int = 1


@dataclass
class Row:
    """One line of the gradebook CSV."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: str
    detail: str = ""


@dataclass
class _Notebook:
    path: Path
    name: str
    tests: list[tuple[str, float]] = field(default_factory=list)  # (grade_id, points)
    # grade_id -> the Chinese student version's source of that exercise cell (student/zh/)
    translated: dict[str, str] = field(default_factory=dict)


def _translated_cells(source: Path) -> dict[str, str]:
    """The exercise cells of the Chinese student version of a checkout's source notebook, by
    grade_id: a learner of the Chinese edition submits these locked cells, whose words (test
    messages, comments) differ from the release and whose code is the same. Empty for a
    notebook outside a checkout's ``notebooks/`` or without a Chinese version."""
    from tinyk.course import is_checkout, student_path

    root = source.resolve().parent.parent
    if source.resolve().parent != root / NOTEBOOKS or not is_checkout(root):
        return {}
    chinese = student_path(source.resolve(), root, language="zh")
    if not chinese.is_file():
        return {}
    cells = json.loads(chinese.read_text(encoding="utf-8"))["cells"]
    return {nbgrader(c)["grade_id"]: source_text(c) for c in cells if nbgrader(c).get("grade_id")}


def _require_linux() -> None:
    """The grader needs Linux: rlimits (``resource``), ``/proc`` and bubblewrap."""
    if not sys.platform.startswith("linux"):
        raise SystemExit(f"tinyk.grading grades on Linux only (it needs resource limits, /proc and "
                         f"bubblewrap); this is {sys.platform!r}: grade in a Linux machine or container")


def _require_nbgrader() -> None:
    try:
        import nbgrader  # noqa: F401
    except ImportError as err:
        raise SystemExit("tinyk.grading needs nbgrader: pip install -e .[instructor]") from err


def exercises_of(path: Path) -> list[tuple[str, float]]:
    """The graded cells of a notebook: ``(grade_id, points)`` in order."""
    cells = json.loads(path.read_text())["cells"]
    return [(nbgrader(c)["grade_id"], float(nbgrader(c).get("points", 0))) for c in cells if is_test(c)]


def _chapter_notebooks(notebooks: Sequence[str | Path] | None, source_dir: Path | None) -> list[_Notebook]:
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
    chosen = [_Notebook(p, p.stem, exercises_of(p), _translated_cells(p)) for p in dict.fromkeys(paths)]
    return [nb for nb in chosen if nb.tests]


# ----------------------------------------------------------------------------- validate


def metadata_problems(paths: Iterable[Path]) -> list[str]:
    """The course's nbgrader metadata rules (section "For instructors"), over all ``paths``.

    Schema 3; ``grade``, ``solution``, ``locked`` and a ``grade_id`` of letters, digits, ``_``
    or ``-``, unique across the notebooks; a grade cell is locked, not a solution, has positive
    points and hidden tests; a solution cell is unlocked, holds ``### BEGIN SOLUTION`` and is
    hidden behind a Colab form; every nbgrader cell is one or the other. ``validate`` and the
    test suite both use this one function.
    """
    problems, seen = [], set()
    for path in paths:
        for i, cell in enumerate(json.loads(Path(path).read_text())["cells"]):
            meta, text = nbgrader(cell), source_text(cell)
            if not meta:
                continue
            where = f"{Path(path).name} cell {i} ({meta.get('grade_id', 'no grade_id')})"
            if meta.get("schema_version") != 3:
                problems.append(f"{where}: schema_version is {meta.get('schema_version')!r}, must be 3")
            missing = [key for key in ("grade", "solution", "locked", "grade_id") if key not in meta]
            if missing:
                problems.append(f"{where}: missing {missing}")
            grade_id = str(meta.get("grade_id", ""))
            if not GRADE_ID.match(grade_id):
                problems.append(f"{where}: grade_id {grade_id!r} must use letters, digits, _ or -")
            if grade_id in seen:
                problems.append(f"{where}: duplicate grade_id {grade_id!r}")
            seen.add(grade_id)
            if meta.get("grade"):
                if not meta.get("locked") or meta.get("solution"):
                    problems.append(f"{where}: a grade cell must be locked and not a solution")
                if not meta.get("points", 0) > 0:
                    problems.append(f"{where}: points {meta.get('points')!r}: a grade cell needs positive"
                                    " points")
                if BEGIN_HIDDEN not in text:
                    problems.append(f"{where}: a grade cell needs {BEGIN_HIDDEN!r}")
            if meta.get("solution"):
                if meta.get("locked"):
                    problems.append(f"{where}: a solution cell must not be locked")
                if BEGIN_SOLUTION not in text:
                    problems.append(f"{where}: a solution cell needs {BEGIN_SOLUTION!r}")
                if cell.get("metadata", {}).get("cellView") != "form":
                    problems.append(f"{where}: a solution cell needs metadata cellView 'form'"
                                    " (hidden in Colab)")
            if not (meta.get("solution") or meta.get("grade")):
                problems.append(f"{where}: neither a solution nor a grade cell")
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


# ----------------------------------------------------------------------------- the sandbox

_INSTALL_BWRAP = ("install bubblewrap (Debian/Ubuntu: 'sudo apt-get install bubblewrap'; Fedora: "
                  "'sudo dnf install bubblewrap'), and allow unprivileged user namespaces if your "
                  "system restricts them (Ubuntu 24.04: 'sudo sysctl "
                  "kernel.apparmor_restrict_unprivileged_userns=0'); or grade with --no-sandbox, "
                  "which runs student code with your rights")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


def check_sandbox() -> None:
    """Stop with a clear message unless bubblewrap can build the sandbox here (Linux only)."""
    _require_linux()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit(f"grading runs each submission in a bubblewrap sandbox, but 'bwrap' is not "
                         f"installed: {_INSTALL_BWRAP}")
    probe = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                            "--proc", "/proc", "--dev", "/dev", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"bubblewrap cannot build a sandbox here ({probe.stderr.strip()[:200]}): "
                         f"{_INSTALL_BWRAP}")


def _python_dirs() -> list[Path]:
    """What the kernel needs to run Python and import tinyk, and nothing of the course around it:
    the interpreter's installation, the environment's packages, the tinyk package folder."""
    import site
    import sysconfig

    import tinyk

    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
            Path(os.path.realpath(sys.executable)).parent.parent, Path(tinyk.__file__).resolve().parent}
    dirs |= {Path(p) for p in sysconfig.get_paths().values()}
    user_site = Path(site.getusersitepackages())
    if user_site.is_dir():
        dirs.add(user_site)
    dirs = {d for d in dirs if d.is_dir()}
    return sorted(d for d in dirs if not any(other in d.parents for other in dirs))  # outermost only


def _sandbox_argv(scratch: Path, runtime: Path, threads: int = 1) -> list[str]:
    """The bubblewrap command line a kernel starts under (its own command follows it).

    Read-only: the system folders, the Python installation and environment, the tinyk package.
    Writable: ``scratch`` (its working folder), ``runtime`` (its connection file and the Unix
    sockets of its channels), a private /tmp. Every namespace unshared: no network (its own
    empty loopback), its own processes, which all end when the kernel ends.
    """
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--clearenv", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for name in _SYSTEM_DIRS:
        if os.path.islink(name):
            argv += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            argv += ["--ro-bind", name, name]
    for folder in _python_dirs():
        argv += ["--ro-bind", str(folder), str(folder)]
    for folder in (scratch, runtime):
        argv += ["--bind", str(folder), str(folder)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "TMPDIR": "/tmp",
           "MPLCONFIGDIR": "/tmp/matplotlib", "TINYK_GRADING": "1", "MPLBACKEND": "agg"}
    for name in ("PYTHONPATH", "LANG", "LC_ALL"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    for name, value in sorted(env.items()):
        argv += ["--setenv", name, value]
    return [*argv, "--chdir", str(scratch), "--"]


@dataclass
class _Sandbox:
    """Where one student's kernels run: a kernelspec that starts them under bubblewrap,
    their scratch folder, and the folder of their connection files and channel sockets."""

    jupyter: Path
    scratch: Path
    runtime: Path

    @classmethod
    def create(cls, base: Path, threads: int = 1) -> _Sandbox:
        box = cls(base / "jupyter", base / "scratch", base / "run")
        for folder in (box.scratch, box.runtime):
            folder.mkdir(parents=True)
        spec = box.jupyter / "kernels" / "python3"
        spec.mkdir(parents=True)
        argv = [*_sandbox_argv(box.scratch, box.runtime, threads), sys.executable, "-m", "ipykernel_launcher",
                "-f", "{connection_file}"]
        # bwrap does not pass signals on: an interrupt (after a cell timeout) goes as a message
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3 (sandboxed)",
                                                      "language": "python", "interrupt_mode": "message"}))
        return box


# ----------------------------------------------------------------------------- course copies


def _nbgrader(args: list[str], root: Path, limits: Limits | None = None, timeout: float | None = None,
              sandbox: _Sandbox | None = None) -> subprocess.CompletedProcess:
    """Run the nbgrader CLI on the course at ``root`` (its own gradebook, its own folder).

    With ``sandbox``, the kernels nbgrader starts are the sandbox's, talking over Unix sockets
    in its runtime folder (a kernel without a network cannot reach nbgrader's TCP ports).
    """
    # TINYK_GRADING: sliders render no frames and course figures no PNG (nor their Chinese
    # version, whatever TINYK_FIGURES_ZH says); MPLBACKEND=agg: pyplot shows nothing
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               TINYK_GRADING="1", MPLBACKEND="agg")
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}",
           f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}"]
    if sandbox is not None:
        # the connection file goes to TMPDIR, the sockets next to it: both in the runtime folder
        env.update(JUPYTER_PATH=str(sandbox.jupyter), JUPYTER_RUNTIME_DIR=str(sandbox.runtime),
                   TMPDIR=str(sandbox.runtime))
        cmd += ["--KernelManager.transport=ipc", f"--KernelManager.ip={sandbox.runtime / 'kernel'}"]
    preexec = None
    if limits is not None:
        import resource

        env.update(OMP_NUM_THREADS=str(limits.threads), MKL_NUM_THREADS=str(limits.threads))
        cmd += [f"--Execute.timeout={limits.cell_timeout}", "--OverwriteCells.add_missing_cells=True"]
        memory = limits.memory_mb * 2**20

        def preexec() -> None:  # in the child, before exec: a limit the kernel inherits
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    # Output goes to files, not pipes: a process the student's code left behind holds any
    # inherited pipe open, and reading a pipe to its end would wait for that process.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        with subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=err, text=True,
                              preexec_fn=preexec, start_new_session=True) as proc:
            try:
                _communicate(proc, timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # nbgrader and whatever shares its session
                proc.wait()
                raise
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())


def _communicate(proc: subprocess.Popen, timeout: float | None) -> None:
    """Wait for ``proc`` at most ``timeout`` seconds (``TimeoutExpired`` past it).

    One function, so that a test can end a run on an event instead of a clock.
    """
    proc.wait(timeout=timeout)


def _end_leftovers(course: Path, sid: str) -> None:
    """End every process still working in the student's autograding folder.

    Without the sandbox, nbgrader runs the kernel there, in a session of its own, and on a
    normal finish kills that session. When nbgrader itself is killed (the total time limit),
    the kernel exits through ipykernel's parent check, but processes the student's code
    started would run on: they are found by their working folder and ended here. (In the
    sandbox, the kernel's process namespace ends with it, and everything in it.)
    """
    folder = str((course / "autograded" / sid).resolve())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if cwd == folder or cwd.startswith(folder + os.sep):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to read
            pass


def _total_limit(limits: Limits, notebooks: int) -> int:
    """Seconds for a student's whole autograde: ``total_timeout`` per notebook."""
    return limits.total_timeout * max(1, notebooks)


def _autograde(course: Path, sid: str, limits: Limits,
               sandbox: _Sandbox | None) -> subprocess.CompletedProcess:
    """``nbgrader autograde`` of one student within the limits; then no process of theirs is
    left running, even when the total time limit raised ``TimeoutExpired``."""
    notebooks = len(list((course / "submitted" / sid / ASSIGNMENT).glob("*.ipynb")))
    try:
        return _nbgrader(["autograde", ASSIGNMENT, f"--student={sid}", "--force"], course, limits,
                         timeout=_total_limit(limits, notebooks), sandbox=sandbox)
    finally:
        _end_leftovers(course, sid)


def _prepare_course(notebooks: list[_Notebook], root: Path) -> None:
    """An nbgrader course with the chapter notebooks as one assignment, released once."""
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb.path, source / f"{nb.name}.ipynb")
    run = _nbgrader(["generate_assignment", ASSIGNMENT, "--force"], root)
    if run.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")


def release(out_dir: Path, notebooks: Sequence[str | Path] | None = None, *,
            source: Path | None = None) -> list[Path]:
    """Student versions (nbgrader's own generate_assignment) written to ``out_dir``.

    ``notebooks``: names of notebooks in ``source``, or paths; all of ``source`` when None.
    """
    _require_nbgrader()
    chosen = _chapter_notebooks(notebooks, source)
    with tempfile.TemporaryDirectory(prefix="tinyk-release-") as tmp:
        _prepare_course(chosen, Path(tmp))
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for path in sorted((Path(tmp) / "release" / ASSIGNMENT).glob("*.ipynb")):
            shutil.copy(path, out_dir / path.name)
            written.append(out_dir / path.name)
    return written


# ----------------------------------------------------------------------------- one student


def _submission_files(entry: Path, notebooks: list[_Notebook]) -> dict[str, Path | None]:
    """Which file holds each notebook: a folder holds ``NAME.ipynb`` files; a single file
    counts as the submission of the one notebook being graded."""
    if entry.is_dir():
        return {nb.name: (entry / f"{nb.name}.ipynb") if (entry / f"{nb.name}.ipynb").exists() else None
                for nb in notebooks}
    if len(notebooks) != 1:  # an error for this student only (reported in their rows)
        raise ValueError(f"{entry.name} is a single file, but {len(notebooks)} notebooks are graded: "
                         f"submit a folder, or grade one --notebook")
    return {notebooks[0].name: entry}


def _read_notebook(path: Path) -> dict | None:
    import nbformat

    try:
        nb = nbformat.reads(path.read_text(encoding="utf-8", errors="strict"), as_version=4)
        nbformat.validate(nb)
    except Exception:  # not text, not JSON, not a notebook: all "unreadable"
        return None
    return nb


def _tampering(nb: dict) -> str:
    """A short reason if the student's code (every code cell but a locked one, locked as
    restored from the release: :func:`_restore_release`) rebinds names the tests rely on,
    else ''."""
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code" or nbgrader(cell).get("locked"):
            continue
        try:
            tree = ast.parse(source_text(cell))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
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
                    and node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in _GUARDED_MODULES):
                return f"setattr on {node.args[0].id}"
            if isinstance(node, ast.Import) and any(alias.name == "builtins" for alias in node.names):
                return "imports builtins"
            if isinstance(node, ast.ImportFrom) and node.module == "builtins":
                return "imports from builtins"
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


def _restore_release(submitted: dict, released: dict,
                     translated: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    """The submission as it is graded, and what had to be restored to get it.

    Nothing of the submission decides what is locked, graded or worth points: every
    exercise cell (one with nbgrader metadata in the release) is the released cell of its
    ``grade_id``, in the release's order, with the release's type and nbgrader metadata
    (roles, points, checksum) and, but for an answer cell, which keeps the student's code,
    the release's source. Each of the student's other cells stays after the exercise cell it
    followed (the last one before it that was not moved). Listed as changes: an exercise
    cell edited (a locked one), deleted (a locked one is put back), duplicated (the copies
    run as the student's own cells), moved, retyped or with its nbgrader metadata changed,
    and nbgrader metadata on a cell that is no released exercise (removed: the cell runs as
    the student's own). A locked cell as the Chinese student version has it (``translated``,
    grade_id -> source) is not an edit: it is restored from the release like any other.
    """
    translated = translated or {}
    exercises = {nbgrader(c)["grade_id"]: c for c in released["cells"] if nbgrader(c)}
    changes: list[str] = []
    theirs: dict[str, dict] = {}  # grade_id -> the student's cell, first of that grade_id
    sequence: list[str | dict] = []  # the submission: grade_ids of exercise cells, the student's own cells
    for cell in submitted["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is not None:
            grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
            grade_id = grade_id if isinstance(grade_id, str) else None
            if grade_id in exercises and grade_id not in theirs:
                theirs[grade_id] = cell
                sequence.append(grade_id)
                continue
            changes.append(f"{grade_id} duplicated" if grade_id in theirs
                           else f"nbgrader metadata on a cell of no exercise ({grade_id or 'no grade_id'})")
            cell = json.loads(json.dumps(cell))
            del cell["metadata"]["nbgrader"]
        sequence.append(cell)
    present = [grade_id for grade_id in exercises if grade_id in theirs]
    kept = _in_order(list(theirs), present)
    changes += [f"{grade_id} moved" for grade_id in present if grade_id not in kept]
    # the student's own cells follow the last exercise cell before them that was not moved
    after: dict[str | None, list[dict]] = {None: []}
    anchor = None
    for item in sequence:
        if isinstance(item, str):
            if item in kept:
                anchor = item
                after[anchor] = []
        else:
            after[anchor].append(item)

    cells = list(after[None])
    for grade_id, original in exercises.items():
        mine, meta = theirs.get(grade_id), nbgrader(original)
        if mine is None:
            changes.append(f"{grade_id} deleted")
            if not meta.get("solution"):
                cells.append(json.loads(json.dumps(original)))
            continue
        cell = json.loads(json.dumps(original))
        if mine.get("cell_type") != original["cell_type"]:
            changes.append(f"{grade_id} retyped")
        if not isinstance(mine["metadata"]["nbgrader"], dict) or \
                _nbgrader_meta(mine["metadata"]["nbgrader"]) != _nbgrader_meta(meta):
            changes.append(f"{grade_id} nbgrader metadata changed")
        if meta.get("solution"):
            cell["source"] = source_text(mine)
        elif source_text(mine).strip() not in (source_text(original).strip(),
                                               translated.get(grade_id, "").strip() or None):
            changes.append(f"{grade_id} edited")
        cells += [cell, *after.get(grade_id, [])]

    nb = {**submitted, "cells": cells,
          "nbformat_minor": max(submitted.get("nbformat_minor", 0), released.get("nbformat_minor", 0))}
    if nb["nbformat_minor"] >= 5:  # cell ids, unique: a copy may share its original's
        ids: set[str] = set()
        for i, cell in enumerate(cells):
            if cell.get("id") in ids or not cell.get("id"):
                cell["id"] = next(new for n in range(len(cells) + 1) if (new := f"cell-{i}-{n}") not in ids)
            ids.add(cell["id"])
    return nb, changes


SKIP_TAG = "skip-when-grading"


def _write_for_grading(submitted: dict, path: Path) -> None:
    """The submission as nbgrader grades it: code cells tagged ``skip-when-grading`` that are
    not exercise cells (figures and slider frames for the book) are emptied, so they cost no
    time; exercise cells, locked or not, always run."""
    import nbformat

    for cell in submitted["cells"]:
        if (cell.get("cell_type") == "code" and not nbgrader(cell)
                and SKIP_TAG in cell.get("metadata", {}).get("tags", [])):
            cell["source"] = "# skipped when grading"
            cell["outputs"] = []
    nbformat.write(nbformat.from_dict(submitted), path)


def _test_points(cell: dict, max_points: float) -> float:
    """The points of an executed test cell: nbgrader's rule (``nbgrader.utils.determine_grade``:
    an error output scores 0, a number as the cell's result is partial credit, anything else
    full marks), except that output on stderr (a warning, a message printed there) costs
    nothing, and an error output scores 0 wherever it comes (nbgrader stops at the first
    result, so a result shown before an error would have counted)."""
    from nbgrader.utils import get_partial_grade

    outputs = cell.get("outputs", [])
    if any(out.get("output_type") == "error" for out in outputs):
        return 0.0
    for out in outputs:
        if out.get("output_type") == "execute_result":
            try:
                return float(get_partial_grade(out, max_points))
            except (KeyError, ValueError):  # no text, or more than the cell is worth: nbgrader fails
                return 0.0
    return float(max_points)


def _rescore(course: Path, sid: str, notebooks: list[_Notebook]) -> None:
    """Replace nbgrader's recorded score of every graded test cell by :func:`_test_points`
    of the autograded notebook, in the course's gradebook (where the CSV and the feedback
    read it). nbgrader scores a test cell 0 as soon as it printed anything on stderr, so a
    correct answer that warns would lose its points."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for nb in notebooks:
            graded = course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb"
            if not graded.exists():
                continue
            cells = {nbgrader(c).get("grade_id"): c for c in json.loads(graded.read_text())["cells"]
                     if is_test(c)}
            for grade_id, max_points in nb.tests:
                if grade_id not in cells:
                    continue
                try:
                    grade = gradebook.find_grade(grade_id, nb.name, ASSIGNMENT, sid)
                except MissingEntry:
                    continue
                grade.auto_score = _test_points(cells[grade_id], max_points)
            gradebook.db.commit()


_VERDICT_LOCK = threading.Lock()


def _verdicts(pairs: list[tuple[_Notebook, Path]], prefix: list[str], limits: Limits,
              timed_out: dict[str, dict[str, str]]) -> list[list[dict]]:
    """:func:`tinyk.verdict.judge` of each (source notebook, submitted notebook), one learner's
    process serving them all; ``timed_out``: by notebook, the exercises whose answer or test
    ran past the per-cell timeout in the kernel, which are not run again."""
    from tinyk import verdict

    server = verdict.AnswerServer(prefix, limits.cell_timeout, limits.memory_mb)
    try:
        server.start()  # importing torch over there: other students' verdicts go on meanwhile
        with _VERDICT_LOCK:  # one test cell at a time in this process: seeds, stdout, the watch
            return [[asdict(v) for v in verdict.judge(json.loads(nb.path.read_text()),
                                                      json.loads(path.read_text()), server,
                                                      timed_out.get(nb.name))]
                    for nb, path in pairs]
    finally:
        server.close()


def _timed_out(course: Path, sid: str, nb: _Notebook) -> dict[str, str]:
    """The exercises of ``nb`` whose answer or test cell ran past the per-cell timeout in the
    kernel's run, with that reason."""
    graded = course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb"
    if not graded.exists():
        return {}
    executed = json.loads(graded.read_text())
    problems = {grade_id: _cell_problem(executed, grade_id, 0.0, points) for grade_id, points in nb.tests}
    return {grade_id: detail for grade_id, (status, detail) in problems.items() if status == "timeout"}


def _judge(course: Path, sid: str, notebooks: list[_Notebook], limits: Limits,
           sandbox: _Sandbox | None) -> dict[tuple[str, str], str]:
    """The verdict outside the student's kernel (:mod:`tinyk.verdict`): the student's answer
    cells run again in the sandbox, in a plain interpreter, and the test cells here, in a
    process of the grader's. Its result replaces the kernel's score of every exercise it
    decides, in the gradebook. Returns why each of those exercises failed, by (notebook,
    grade_id) ('' when it passed)."""
    from nbgrader.api import Gradebook, MissingEntry

    from tinyk.verdict import outside

    pairs = [(nb, course / "submitted" / sid / ASSIGNMENT / f"{nb.name}.ipynb") for nb in notebooks]
    pairs = [(nb, path) for nb, path in pairs if path.exists() and any(outside(g) for g, _ in nb.tests)]
    if not pairs:
        return {}
    prefix = []
    if sandbox is not None:
        scratch = sandbox.scratch.parent / "answers"
        scratch.mkdir(exist_ok=True)
        prefix = _sandbox_argv(scratch, sandbox.runtime, limits.threads)
    found: dict[tuple[str, str], str] = {}
    results, problem = None, ""
    try:
        results = _verdicts(pairs, prefix, limits, {nb.name: _timed_out(course, sid, nb) for nb, _ in pairs})
    except Exception as err:  # the grader's own failure: no points rather than the kernel's
        problem = f"{type(err).__name__}: {err}"[:200]
    worth = {(nb.name, grade_id): points for nb, _ in pairs for grade_id, points in nb.tests}
    for index, (nb, _) in enumerate(pairs):
        verdicts = {v["grade_id"]: v for v in results[index]} if results is not None else {}
        for grade_id, _ in nb.tests:
            if outside(grade_id):
                verdict = verdicts.get(grade_id)
                found[nb.name, grade_id] = (f"the grader's run failed: {problem}" if verdict is None
                                            else "" if verdict["passed"] else verdict["detail"])
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for (notebook, grade_id), why in found.items():
            try:
                grade = gradebook.find_grade(grade_id, notebook, ASSIGNMENT, sid)
            except MissingEntry:
                continue
            grade.auto_score = 0.0 if why else worth[notebook, grade_id]
        gradebook.db.commit()
    return found


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _where(error: dict, source: str) -> str:
    """Where in its test cell an error was raised, from the traceback's outermost frame
    (IPython's ``Cell In[n], line L``): ``" (line L)"``, ``" (hidden tests, line L)"``, or ''."""
    frames = [_ANSI.sub("", str(frame)) for frame in error.get("traceback", [])]
    found = next((m for frame in frames if (m := re.match(r"Cell In\[\d*\], line (\d+)", frame))), None)
    if found is None:
        return ""
    line, hidden = int(found[1]), False
    for number, text in enumerate(source.splitlines(), 1):
        if number == line:
            break
        if text.strip() in (BEGIN_HIDDEN, END_HIDDEN):
            hidden = text.strip() == BEGIN_HIDDEN
    return f" ({'hidden tests, ' if hidden else ''}line {line})"


def _cell_problem(autograded: dict, grade_id: str, points: float, max_points: float) -> tuple[str, str]:
    """(status, detail) from the outputs of the answer cell and of its test cell.

    A timeout or a MemoryError in either gives that status; otherwise the grading was
    normal ("ok") and the detail names the first error, the answer's before the test's
    (with the test cell's line that raised it, and whether it is a hidden test). Points
    lost without an error say why as well: there is no 0 without a reason.
    """
    cells = autograded["cells"]
    index = next((i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id), None)
    if index is None:
        return "error", "test cell not found after grading"
    answer = [c for c in cells[:index] if is_solution(c)][-1:]  # the answer this test checks
    errors = [(out.get("ename", ""), str(out.get("evalue", ""))[:160], role,
               _where(out, source_text(cell)) if role == "test" else "")
              for cell, role in [*((c, "answer") for c in answer), (cells[index], "test")]
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    for name, _, role, _ in errors:
        if name == "MemoryError":
            return "memory-limit", f"the {role} cell ran out of memory"
        if "Timeout" in name:
            return "timeout", f"the {role} cell ran past the per-cell timeout"
    if errors:
        name, value, role, where = errors[0]
        # a test's message that names a catalogued mistake adds its id (the class report counts them)
        named = note(grade_id, str(next(o.get("evalue", "") for o in cells[index]["outputs"]
                                        if o.get("output_type") == "error"))) if role == "test" else ""
        return "ok", f"{role}: {name or 'an error'}: {value}".rstrip(": ") + where + named
    if points < max_points:
        results = [out for out in cells[index].get("outputs", [])
                   if out.get("output_type") == "execute_result"]
        if results:
            shown = str(results[0].get("data", {}).get("text/plain", ""))[:40]
            return "ok", f"test: its result {shown!r} gave {points:g} of {max_points:g} points"
        return "ok", f"test: scored {points:g} of {max_points:g} with no error shown"
    return "ok", ""


def _rows_for(name: str, nb: _Notebook, flag: tuple[str, str] | None, failure: tuple[str, str] | None,
              executed: dict | None, score: Callable[[str], float | None]) -> list[Row]:
    """The rows of one notebook of one student, every status kept.

    ``flag``: what the checks before grading found (missing, unreadable, tampering: not
    graded; tests-modified: graded with the original tests); ``failure``: why the whole run
    failed, if it did; ``executed``: the autograded notebook; ``score``: nbgrader's recorded
    points of a graded cell, None when none was recorded. A timeout, a memory limit, a failed
    run or a missing grade wins over tests-modified, whose detail is then kept after it.
    """
    rows = []
    for grade_id, max_points in nb.tests:
        points = 0.0
        if flag is not None and flag[0] != "tests-modified":
            status, detail = flag
        elif failure is not None:
            status, detail = failure
        else:
            recorded = score(grade_id)
            if recorded is None:
                status, detail = "error", "no grade recorded"
            else:
                points = recorded
                status, detail = (_cell_problem(executed, grade_id, points, max_points)
                                  if executed is not None else ("error", "no graded notebook written"))
                if status == "ok" and flag is not None:
                    status, detail = flag[0], "; ".join(filter(None, [flag[1], detail]))
        if flag is not None and flag[0] == "tests-modified" and status != "tests-modified":
            detail = "; ".join(filter(None, [detail, flag[1]]))
        rows.append(Row(name, nb.name, grade_id, points, max_points, status, detail))
    return rows


def _submit(course: Path, sid: str, entry: Path, notebooks: list[_Notebook],
            released: dict[str, dict]) -> tuple[dict[str, tuple[str, str]], list[_Notebook]]:
    """Put a student's notebooks into the course's ``submitted`` folder as they are graded
    (:func:`_restore_release`, :func:`_write_for_grading`). Returns what the checks found
    per notebook (missing, unreadable, tampering: left out; tests-modified) and the
    notebooks written."""
    files = _submission_files(entry, notebooks)
    flags: dict[str, tuple[str, str]] = {}
    target = course / "submitted" / sid / ASSIGNMENT
    target.mkdir(parents=True)
    written = []
    for nb in notebooks:
        path = files.get(nb.name)
        submitted = _read_notebook(path) if path is not None else None
        if path is None:
            flags[nb.name] = ("missing", f"no {nb.name}.ipynb in the submission")
            continue
        if submitted is None:
            flags[nb.name] = ("unreadable", f"{path.name} is not a readable notebook")
            continue
        restored, changed = _restore_release(submitted, released[nb.name], nb.translated)
        tampered = _tampering(restored)
        if tampered:
            flags[nb.name] = ("tampering", tampered)
            continue
        if changed:
            flags[nb.name] = ("tests-modified", "restored from the release: " + ", ".join(changed))
        _write_for_grading(restored, target / f"{nb.name}.ipynb")
        written.append(nb)
    return flags, written


def _grade_student(name: str, entry: Path, notebooks: list[_Notebook], template: Path,
                   released: dict[str, dict], limits: Limits, sandboxed: bool = True) -> list[Row]:
    """Grade one student's submission in a throwaway copy of the prepared course."""
    with tempfile.TemporaryDirectory(prefix="tinyk-grade-") as tmp:
        course = Path(tmp) / "course"
        shutil.copytree(template, course)
        sandbox = _Sandbox.create(Path(tmp), limits.threads) if sandboxed else None
        return _run(name, entry, course, notebooks, released, limits, sandbox)[0]


def _run(name: str, entry: Path, course: Path, notebooks: list[_Notebook], released: dict[str, dict],
         limits: Limits, sandbox: _Sandbox | None,
         sources: list[_Notebook] | None = None) -> tuple[list[Row], tuple[str, str] | None]:
    """Submit, run in the kernel, take the verdict and read the rows of one student, in
    ``course``; also why the whole run failed, if it did. ``sources``: the notebooks whose
    test cells (hidden tests included) the verdict runs, when ``notebooks`` are the
    released ones (the feedback's run); ``notebooks`` themselves otherwise."""
    sid = student_id(name)
    flags, to_grade = _submit(course, sid, entry, notebooks, released)
    failure, verdicts = None, {}
    if to_grade:
        try:
            run = _autograde(course, sid, limits, sandbox)
            log = run.stdout + run.stderr
            if run.returncode != 0:
                if re.search(r"[Kk]ernel (died|dead)|DeadKernel", log):
                    failure = ("kernel-died", "the kernel exited while the notebook ran; "
                                              "no exercise could be scored")
                else:
                    errors = [ln for ln in log.splitlines() if "ERROR" in ln or "Error" in ln]
                    first = (errors or log.strip().splitlines() or ["nbgrader failed"])[0]
                    failure = ("error", first[:200])
            else:
                _rescore(course, sid, to_grade)
                by_name = {nb.name: nb for nb in sources or notebooks}
                verdicts = _judge(course, sid, [by_name[nb.name] for nb in to_grade], limits, sandbox)
        except subprocess.TimeoutExpired:
            failure = ("timeout", f"submission ran past {_total_limit(limits, len(to_grade))} s")
    return _read_rows(name, course, notebooks, to_grade, flags, failure, verdicts), failure


def _read_rows(name: str, course: Path, notebooks: list[_Notebook], to_grade: list[_Notebook],
               flags: dict[str, tuple[str, str]], failure: tuple[str, str] | None,
               verdicts: dict[tuple[str, str], str]) -> list[Row]:
    """The rows of one student from the course's gradebook and autograded notebooks."""
    from nbgrader.api import Gradebook, MissingEntry

    sid = student_id(name)
    rows: list[Row] = []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for nb in notebooks:
            def score(grade_id: str, nb: _Notebook = nb) -> float | None:
                try:
                    return float(gradebook.find_grade(grade_id, nb.name, ASSIGNMENT, sid).score)
                except MissingEntry:
                    return None

            graded = course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb"
            executed = json.loads(graded.read_text()) if nb in to_grade and graded.exists() else None
            rows += [_with_verdict(row, verdicts.get((nb.name, row.exercise)))
                     for row in _rows_for(name, nb, flags.get(nb.name), failure, executed, score)]
    return rows


def _with_verdict(row: Row, why: str | None) -> Row:
    """A row whose points the verdict outside the kernel decided: its reason for a 0 first."""
    if why and row.status == "ok" and why not in row.detail:
        row.detail = "; ".join(filter(None, [f"graded outside the notebook: {why}"[:300], row.detail]))
    return row


# ----------------------------------------------------------------------------- the batch


def _course_digest(notebooks: list[_Notebook], limits: Limits, sandboxed: bool) -> bytes:
    """What every student's grade depends on besides their files: the notebooks, the limits,
    the sandbox."""
    digest = hashlib.sha256(json.dumps([asdict(limits), sandboxed]).encode())
    for nb in notebooks:
        digest.update(nb.path.read_bytes())
        digest.update(json.dumps(nb.translated, sort_keys=True).encode())
    return digest.digest()


def _fingerprint(entry: Path, course_digest: bytes) -> str:
    """The course digest extended with the student's files: unchanged means already graded."""
    digest = hashlib.sha256(course_digest)
    for path in sorted([entry] if entry.is_file() else entry.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_csv(out: Path, lines: list[list[str]]) -> None:
    """The gradebook CSV: the header, then the rows sorted by student, notebook and exercise."""
    from io import StringIO

    buffer = StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([FIELDS, *sorted(lines, key=lambda r: tuple(r[:3]))])
    _write_atomically(out, buffer.getvalue())


def shard_of(student: str, shards: int) -> int:
    """The shard (0 to ``shards - 1``) that grades ``student``: a hash of the student's id,
    the same on every machine and whatever the other students are."""
    return int(hashlib.sha256(student_id(student).encode()).hexdigest(), 16) % shards


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)``, with ``0 <= K < N``."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise SystemExit(f"--shard {text!r}: must be K/N with N >= 1 and K from 0 to N-1 (e.g. 0/4)")
    return int(match[1]), int(match[2])


def _warn_unsandboxed() -> None:
    print("WARNING: grading with --no-sandbox: student code runs with your rights, can read and "
          "write your files (hidden tests included) and use the network", file=sys.stderr)


def grade(submissions: Path, out: Path, notebooks: Sequence[str | Path] | None = None, *,
          source: Path | None = None, limits: Limits | None = None, jobs: int | None = None,
          progress: bool = True, sandbox: bool = True, shard: tuple[int, int] | None = None) -> list[Row]:
    """Grade every entry of ``submissions`` (a folder or a file per student) into ``out``.

    ``notebooks``: names of notebooks in ``source``, or paths (all of ``source`` when None).
    ``shard=(K, N)`` grades only the students of shard K (:func:`shard_of`); :func:`merge`
    joins the shards' CSVs into the CSV of one run.
    """
    _require_linux()
    _require_nbgrader()
    if sandbox:
        check_sandbox()
    else:
        _warn_unsandboxed()
    limits = limits or Limits()
    entries = submission_entries(submissions)
    chosen = _chapter_notebooks(notebooks, source)
    if not chosen:
        raise SystemExit("no notebook with exercises to grade")
    if shard is not None:
        entries = [e for e in entries if shard_of(student_name(e), shard[1]) == shard[0]]
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    jobs = jobs or max(1, (os.cpu_count() or 2))

    with tempfile.TemporaryDirectory(prefix="tinyk-course-") as tmp:
        template = Path(tmp) / "course"
        _prepare_course(chosen, template)
        released = {nb.name: json.loads((template / "release" / ASSIGNMENT / f"{nb.name}.ipynb").read_text())
                    for nb in chosen}
        todo, course_digest = [], _course_digest(chosen, limits, sandbox)
        for entry in entries:
            part = parts / f"{student_id(student_name(entry))}.json"
            fingerprint = _fingerprint(entry, course_digest)
            if part.exists() and json.loads(part.read_text()).get("fingerprint") == fingerprint:
                continue  # graded in an earlier (maybe interrupted) run: keep it
            todo.append((entry, part, fingerprint))

        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(entries), initial=len(entries) - len(todo), desc="grading", unit="student")
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_grade_student, student_name(entry), entry,
                                   chosen, template, released, limits, sandbox): (entry, part, fp)
                       for entry, part, fp in todo}
            for future in concurrent.futures.as_completed(futures):
                entry, part, fingerprint = futures[future]
                name = student_name(entry)
                try:
                    rows = future.result()
                except Exception as err:  # one broken submission never stops the batch
                    reason = f"{type(err).__name__}: {err}"[:200]
                    rows = [Row(name, nb.name, grade_id, 0.0, pts, "error", reason)
                            for nb in chosen for grade_id, pts in nb.tests]
                _write_atomically(part, json.dumps({"fingerprint": fingerprint,
                                                    "rows": [asdict(r) for r in rows]}))
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()

    names = {student_id(student_name(e)) for e in entries}
    rows = [Row(**r) for part in sorted(parts.glob("*.json")) if part.stem in names
            for r in json.loads(part.read_text())["rows"]]
    rows.sort(key=lambda r: (r.student, r.notebook, r.exercise))
    _write_csv(out, [[r.student, r.notebook, r.exercise, f"{r.points:g}", f"{r.max_points:g}", r.status,
                      r.detail] for r in rows])
    return rows


def merge(out: Path, shards: Sequence[Path]) -> int:
    """Join the CSVs of ``grade --shard K/N`` runs into ``out``, the CSV one run would write.

    Each file must have the gradebook's header; a student found in two files is an error.
    Returns the number of rows written.
    """
    lines: list[list[str]] = []
    owner: dict[str, Path] = {}
    for path in shards:
        with Path(path).open(newline="") as f:
            table = list(csv.reader(f))
        if not table or table[0] != FIELDS:
            raise SystemExit(f"{path}: header {table[0] if table else 'missing'}, expected {FIELDS}")
        for line in table[1:]:
            if owner.setdefault(line[0], Path(path)) != Path(path):
                raise SystemExit(f"student {line[0]!r} is in both {owner[line[0]]} and {path}: "
                                 f"merge the CSVs of different shards of one run")
            lines.append(line)
    _write_csv(out, lines)
    return len(lines)


def _notes(row: Row, cell: dict) -> list[str]:
    """What the feedback adds under a test cell, from the graded run: its points when the
    shown run (visible tests only) does not explain them, a status other than ok, and the
    catalogued mistake a visible test's message named (:mod:`tinyk.mistakes`). Only the
    points, the status's fixed description and the catalogue's label: never the detail,
    which may quote a hidden test's message."""
    notes = [f"The mistake: {by_id(found).en} ({found})." for found in mistakes_in(row.detail)]
    failed_here = any(out.get("output_type") == "error" for out in cell.get("outputs", []))
    graded = row.status in ("ok", "tests-modified")  # the tests ran to their end
    if graded and row.points < row.max_points and not failed_here:
        notes.append(f"A hidden test failed: {row.points:g} of {row.max_points:g} points.")
    if row.status != "ok":
        notes.append(f"{row.status}: {STATUSES[row.status]}. {row.points:g} of {row.max_points:g} points.")
    return notes


def _show_grades(course: Path, sid: str, rows: list[Row]) -> None:
    """Put the graded run's points into the shown run's gradebook and notebooks (see
    :func:`feedback`), for ``generate_feedback`` to render."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for notebook in dict.fromkeys(r.notebook for r in rows):
            path = course / "autograded" / sid / ASSIGNMENT / f"{notebook}.ipynb"
            if not path.exists():
                continue
            shown = nbformat.read(path, as_version=4)
            cells = {nbgrader(c).get("grade_id"): c for c in shown.cells if is_test(c)}
            for row in (r for r in rows if r.notebook == notebook):
                try:
                    grade = gradebook.find_grade(row.exercise, notebook, ASSIGNMENT, sid)
                except MissingEntry:
                    continue
                grade.auto_score, grade.manual_score = row.points, None
                cell = cells.get(row.exercise)
                if cell is not None:
                    cell.outputs += [nbformat.v4.new_output("display_data", {"text/plain": note})
                                     for note in _notes(row, cell)]
            gradebook.db.commit()
            nbformat.write(shown, path)


def feedback(submissions: Path, out_dir: Path, notebooks: Sequence[str | Path] | None = None, *,
             source: Path | None = None, limits: Limits | None = None, sandbox: bool = True) -> None:
    """nbgrader's HTML feedback for every student, written under ``out_dir/<student id>/``,
    with no hidden test in it.

    Each submission runs in a course made from the released notebooks, whose test cells
    hold only the visible tests: the feedback shows this run, its cells and the student's
    outputs, so neither a hidden test's source nor anything its lines printed (a traceback,
    the student's own prints) can reach it, whatever the student's code prints. The points
    come from the verdict outside the kernel (:mod:`tinyk.verdict`, with the hidden tests),
    as :func:`grade` gives them; only a notebook with an exercise still decided in the
    kernel (05.10's capstone) is also graded as :func:`grade` grades it, a second run. A test
    cell that failed only in the hidden tests says so, with its points.
    """
    from tinyk.verdict import outside

    _require_linux()
    _require_nbgrader()
    if sandbox:
        check_sandbox()
    else:
        _warn_unsandboxed()
    limits = limits or Limits()
    entries = submission_entries(submissions)
    chosen = _chapter_notebooks(notebooks, source)
    with tempfile.TemporaryDirectory(prefix="tinyk-feedback-") as tmp:
        template = Path(tmp) / "course"
        _prepare_course(chosen, template)
        release_dir = template / "release" / ASSIGNMENT
        released = {nb.name: json.loads((release_dir / f"{nb.name}.ipynb").read_text()) for nb in chosen}
        shown_template = Path(tmp) / "shown"  # the released notebooks as sources: visible tests only
        visible = [_Notebook(release_dir / f"{nb.name}.ipynb", nb.name, nb.tests, nb.translated)
                   for nb in chosen]
        _prepare_course(visible, shown_template)
        shown_released = {nb.name: json.loads((shown_template / "release" / ASSIGNMENT / f"{nb.name}.ipynb")
                                              .read_text()) for nb in chosen}
        for entry in entries:
            name = student_name(entry)
            sid = student_id(name)
            work = Path(tmp) / "students" / sid
            course = work / "course"
            shutil.copytree(shown_template, course)
            box = _Sandbox.create(work, limits.threads) if sandbox else None
            try:
                rows, failure = _run(name, entry, course, visible, shown_released, limits, box, chosen)
            except ValueError as err:  # a single file while several notebooks are chosen
                print(f"{sid}: no feedback, {err}", file=sys.stderr)
                continue
            if failure is not None and failure[0] == "timeout":
                print(f"{sid}: no feedback, the submission ran past its total time limit", file=sys.stderr)
                continue  # one slow submission never costs the others their feedback
            if not any((course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb").exists()
                       for nb in chosen):
                continue
            if not all(outside(g) for nb in chosen for g, _ in nb.tests):  # e.g. the capstone's points
                rows = _grade_student(name, entry, chosen, template, released, limits, sandbox)
            _show_grades(course, sid, rows)
            _nbgrader(["generate_feedback", ASSIGNMENT, f"--student={sid}", "--force"], course)
            produced = course / "feedback" / sid / ASSIGNMENT
            if produced.exists():
                shutil.copytree(produced, out_dir / sid, dirs_exist_ok=True)
            shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """The command line (section "For instructors"); ``--help`` lists the commands."""
    parser = argparse.ArgumentParser(
        prog="python -m tinyk.grading",
        description=__doc__.split("\n\n")[0] + " Linux only: grading uses resource limits, /proc "
        "and a bubblewrap sandbox.")
    parser.add_argument("--source", type=Path, default=None,
                        help="folder of the chapter notebooks, with solutions and hidden tests "
                             "(default: notebooks/ of the course checkout)")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check nbgrader metadata and that solutions pass their tests")
    v.add_argument("notebooks", nargs="*", type=Path)
    v.add_argument("--no-run", action="store_true", help="check metadata only")
    r = sub.add_parser("release", help="write student versions (nbgrader generate_assignment)")
    r.add_argument("out_dir", type=Path)
    g = sub.add_parser("grade", help="autograde submissions into a CSV gradebook (Linux, in a sandbox)")
    g.add_argument("submissions", type=Path)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--jobs", type=int, default=None, help="students graded at once (default: cores)")
    g.add_argument("--cell-timeout", type=int, default=Limits.cell_timeout)
    g.add_argument("--total-timeout", type=int, default=Limits.total_timeout,
                   help="seconds per notebook, summed over a student's notebooks")
    g.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    g.add_argument("--threads", type=int, default=Limits.threads,
                   help="CPU threads per kernel (default 1: the --jobs kernels share the cores)")
    g.add_argument("--shard", type=parse_shard, default=None, metavar="K/N",
                   help="grade only shard K of N (K from 0 to N-1), chosen by a hash of the student's "
                        "name; join the shards' CSVs with 'merge'")
    m = sub.add_parser("merge", help="join the CSVs of 'grade --shard' runs into one CSV")
    m.add_argument("out", type=Path)
    m.add_argument("shards", nargs="+", type=Path)
    rp = sub.add_parser("report", help="the class report: scores, statuses and named mistakes (HTML, CSV)")
    rp.add_argument("grades", type=Path)
    rp.add_argument("--out", type=Path, required=True, help="folder for index.html, index.zh.html, the CSV")
    e = sub.add_parser("export", help="points per notebook in an LMS's grade import CSV")
    e.add_argument("grades", type=Path)
    e.add_argument("--format", required=True, choices=["canvas", "moodle", "gradescope"])
    e.add_argument("--roster", type=Path, required=True, help="CSV: folder, lms_id[, name, email, section]")
    e.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("similarity", help="answers that share code across students (copydetect), as HTML")
    s.add_argument("submissions", type=Path)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--threshold", type=float, default=0.6,
                   help="list a pair when this share of one answer's tokens is in the other's (default 0.6)")
    f = sub.add_parser("feedback", help="nbgrader's HTML feedback per student (Linux, in a sandbox)")
    f.add_argument("submissions", type=Path)
    f.add_argument("out_dir", type=Path)
    for p in (g, f):
        p.add_argument("--no-sandbox", action="store_true",
                       help="run student code WITHOUT the bubblewrap sandbox, with your rights (logged)")
    for p in (r, g, f):
        p.add_argument("--notebook", action="append", help="a chapter notebook to include (default: all)")
    args = parser.parse_args(argv)
    if args.source is None and not (args.command == "validate" and args.notebooks):
        try:
            args.source = course_root() / NOTEBOOKS
        except NotACheckout as err:
            if args.command not in ("report", "export"):  # these two read only the CSVs
                print(f"{err}; or pass --source FOLDER", file=sys.stderr)
                return 2

    if args.command == "validate":
        paths = args.notebooks or sorted(args.source.glob("*.ipynb"))
        problems = validate(paths, run=not args.no_run)
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(paths)} notebook(s) checked, {len(problems)} problem(s)")
        return 1 if problems else 0
    if args.command == "report":
        from tinyk.class_report import report_main

        return report_main(args.grades, args.out, args.source)
    if args.command == "export":
        from tinyk.lms import export_main

        return export_main(args.grades, args.format, args.roster, args.out)
    if args.command == "similarity":
        from tinyk.similarity import similarity_main

        return similarity_main(args.submissions, args.out, args.source, args.threshold)
    if args.command == "merge":
        print(f"{merge(args.out, args.shards)} row(s) written to {args.out}")
        return 0
    if args.command == "release":
        for path in release(args.out_dir, args.notebook, source=args.source):
            print("released", path)
        return 0
    if args.command == "grade":
        if args.threads < 1:
            print(f"--threads must be 1 or more, got {args.threads}", file=sys.stderr)
            return 2
        limits = Limits(args.cell_timeout, args.total_timeout, args.memory_mb, args.threads)
        rows = grade(args.submissions, args.out, args.notebook, source=args.source, limits=limits,
                     jobs=args.jobs, sandbox=not args.no_sandbox, shard=args.shard)
        students = {r.student for r in rows}
        print(f"{len(students)} student(s), {len(rows)} row(s) written to {args.out}")
        return 0
    feedback(args.submissions, args.out_dir, args.notebook, source=args.source, sandbox=not args.no_sandbox)
    return 0


if __name__ == "__main__":
    sys.exit(main())
