"""Instructor tools: validate, release and grade the chapter's exercises with nbgrader.

    python -m tinyk.grading validate [NOTEBOOK ...]
    python -m tinyk.grading release OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading grade SUBMISSIONS_DIR --out grades.csv [--notebook NAME ...]
    python -m tinyk.grading feedback SUBMISSIONS_DIR OUT_DIR [--notebook NAME ...]

Needs the instructor extras: ``pip install -e .[instructor]`` (nbgrader).

Grading is done student by student, each in a throwaway copy of a prepared nbgrader course
(in a temporary folder, never in the instructor's course folder), by ``nbgrader autograde``
in a subprocess with a per-cell timeout, a total time limit and a memory limit, several
students at once. Locked test cells and hidden tests come from the gradebook, not from the
submission. The CSV has one row per student and exercise, with a status; it is written
atomically, and each finished student is kept in ``<out>.parts/`` so that an interrupted
run resumes where it stopped and a rerun reproduces the same file.

This is not a sandbox: student code runs as the grading user. See the instructors' page.
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
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tinyk.course import ROOT, notebook_paths
from tinyk.exercises import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    GRADE_ID,
    MARKERS,
    is_solution,
    is_test,
    nbgrader,
    source_text,
)

__all__ = ["Limits", "Row", "validate", "release", "grade", "exercises_of", "STATUSES"]

ASSIGNMENT = "chapter05"
STATUSES = {
    "ok": "graded normally (the points say whether the answer passed)",
    "missing": "no submission for this notebook",
    "unreadable": "the file is not a notebook (empty, not JSON, or not nbformat 4)",
    "tests-modified": "a locked test cell was edited or deleted; graded with the original tests",
    "tampering": "the submission rebinds names the tests rely on (e.g. math.isclose); scored 0",
    "timeout": "a cell ran past the per-cell timeout, or the submission past the total time limit",
    "memory-limit": "the submission ran out of its memory limit",
    "kernel-died": "the kernel exited (e.g. os._exit or a crash); nbgrader could not finish",
    "error": "grading failed for a reason shown in the detail column",
}
FIELDS = ["student", "notebook", "exercise", "points", "max_points", "status", "detail"]
# Rebinding any of these inside student code is treated as tampering with the checks.
_GUARDED_MODULES = {"math", "torch", "builtins", "numpy", "np", "operator", "tinyk", "F"}
_GUARDED_NAMES = {"isinstance", "type", "float", "int", "bool", "len", "all", "any", "abs",
                  "AssertionError", "__import__", "setattr", "getattr"}


@dataclass
class Limits:
    """Per-submission limits: seconds per cell, seconds in all, megabytes of memory."""

    cell_timeout: int = 60
    total_timeout: int = 600
    memory_mb: int = 3072


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


def _require_nbgrader() -> None:
    try:
        import nbgrader  # noqa: F401
    except ImportError as err:
        raise SystemExit("tinyk.grading needs nbgrader: pip install -e .[instructor]") from err


def exercises_of(path: Path) -> list[tuple[str, float]]:
    """The graded cells of a notebook: ``(grade_id, points)`` in order."""
    cells = json.loads(path.read_text())["cells"]
    return [(nbgrader(c)["grade_id"], float(nbgrader(c).get("points", 0))) for c in cells if is_test(c)]


def _chapter_notebooks(names: list[str] | None, source_dir: Path) -> list[_Notebook]:
    paths = sorted(source_dir.glob("*.ipynb"))
    if names:
        wanted = {Path(n).stem for n in names}
        unknown = wanted - {p.stem for p in paths}
        if unknown:
            raise SystemExit(f"unknown notebook(s) {sorted(unknown)}; choose from {[p.stem for p in paths]}")
        paths = [p for p in paths if p.stem in wanted]
    notebooks = [_Notebook(p, p.stem, exercises_of(p)) for p in paths]
    return [nb for nb in notebooks if nb.tests]


# ----------------------------------------------------------------------------- validate


def metadata_problems(path: Path) -> list[str]:
    """nbgrader metadata rules: schema 3, unique ids, points on grade cells, markers in place."""
    problems, seen = [], set()
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        meta, text = nbgrader(cell), source_text(cell)
        where = f"{path.name} cell {i}"
        if not meta:
            if any(m in text for m in MARKERS):
                problems.append(f"{where}: nbgrader marker outside an exercise cell")
            continue
        if meta.get("schema_version") != 3:
            problems.append(f"{where}: schema_version must be 3")
        for key in ("grade", "solution", "locked", "grade_id"):
            if key not in meta:
                problems.append(f"{where}: missing '{key}'")
        grade_id = meta.get("grade_id", "")
        if not GRADE_ID.match(grade_id):
            problems.append(f"{where}: grade_id {grade_id!r} must use letters, digits, _ or -")
        if grade_id in seen:
            problems.append(f"{where}: duplicate grade_id {grade_id!r}")
        seen.add(grade_id)
        if meta.get("grade") and not meta.get("points", 0) > 0:
            problems.append(f"{where}: a grade cell needs positive points")
        if meta.get("solution") and (BEGIN_SOLUTION not in text or END_SOLUTION not in text):
            problems.append(f"{where}: a solution cell needs ### BEGIN/END SOLUTION")
        if not meta.get("solution") and (BEGIN_SOLUTION in text or END_SOLUTION in text):
            problems.append(f"{where}: solution markers outside a solution cell")
    return problems


def validate(paths: list[Path], run: bool = True, timeout: int = 300) -> list[str]:
    """Metadata problems of every notebook, and (``run``) any cell that fails when executed."""
    problems = [p for path in paths for p in metadata_problems(path)]
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


# ----------------------------------------------------------------------------- course copies


def _nbgrader(args: list[str], root: Path, limits: Limits | None = None,
              timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run the nbgrader CLI on the course at ``root`` (its own gradebook, its own folder)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}",
           f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}"]
    preexec = None
    if limits is not None:
        cmd += [f"--Execute.timeout={limits.cell_timeout}", "--OverwriteCells.add_missing_cells=True"]
        memory = limits.memory_mb * 2**20

        def preexec() -> None:  # in the child, before exec: a limit the kernel inherits
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    with subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=preexec, start_new_session=True) as proc:
        try:
            out, err = _communicate(proc, timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # nbgrader and whatever shares its session
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _communicate(proc: subprocess.Popen, timeout: float | None) -> tuple[str, str]:
    """Wait for ``proc`` at most ``timeout`` seconds (``TimeoutExpired`` past it).

    One function, so that a test can end a run on an event instead of a clock.
    """
    return proc.communicate(timeout=timeout)


def _end_leftovers(course: Path, sid: str) -> None:
    """End every process still working in the student's autograding folder.

    nbgrader runs the kernel there, in a session of its own, and on a normal finish kills
    that session. When nbgrader itself is killed (the total time limit), the kernel exits
    through ipykernel's parent check, but processes the student's code started would run
    on: they are found by their working folder and ended here.
    """
    folder = str((course / "autograded" / sid).resolve())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if cwd == folder or cwd.startswith(folder + os.sep):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to read
            pass


def _autograde(course: Path, sid: str, limits: Limits) -> subprocess.CompletedProcess:
    """``nbgrader autograde`` of one student within the limits; then no process of theirs is
    left running, even when the total time limit raised ``TimeoutExpired``."""
    try:
        return _nbgrader(["autograde", ASSIGNMENT, f"--student={sid}", "--force"], course, limits,
                         timeout=limits.total_timeout)
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


def release(out_dir: Path, notebooks: list[_Notebook]) -> list[Path]:
    """Student versions (nbgrader's own generate_assignment) written to ``out_dir``."""
    _require_nbgrader()
    with tempfile.TemporaryDirectory(prefix="tinyk-release-") as tmp:
        _prepare_course(notebooks, Path(tmp))
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for path in sorted((Path(tmp) / "release" / ASSIGNMENT).glob("*.ipynb")):
            shutil.copy(path, out_dir / path.name)
            written.append(out_dir / path.name)
    return written


# ----------------------------------------------------------------------------- one student


def _entries(submissions: Path) -> list[Path]:
    """One folder or file per student, hidden files left out."""
    return sorted(p for p in submissions.iterdir() if not p.name.startswith("."))


def _student_name(entry: Path) -> str:
    """A folder's name, or a single file's name without ``.ipynb``."""
    return entry.stem if entry.is_file() else entry.name


def _student_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "student"


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
    """A short reason if unlocked code rebinds names the tests rely on, else ''."""
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


def _modified_tests(submitted: dict, released: dict) -> list[str]:
    """grade_ids of locked test cells that were edited or deleted in the submission."""
    theirs = {nbgrader(c).get("grade_id"): source_text(c) for c in submitted["cells"] if nbgrader(c)}
    changed = []
    for cell in released["cells"]:
        if is_test(cell):
            grade_id = nbgrader(cell)["grade_id"]
            if theirs.get(grade_id) is None:
                changed.append(f"{grade_id} deleted")
            elif theirs[grade_id].strip() != source_text(cell).strip():
                changed.append(f"{grade_id} edited")
    return changed


def _cell_problem(autograded: dict, grade_id: str) -> tuple[str, str]:
    """(status, detail) from the outputs of the answer cell and of its test cell.

    A timeout or a MemoryError in either gives that status; otherwise the grading was
    normal ("ok") and the detail names the first error, the answer's before the test's.
    """
    cells = autograded["cells"]
    index = next((i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id), None)
    if index is None:
        return "error", "test cell not found after grading"
    answer = [c for c in cells[:index] if is_solution(c)][-1:]  # the answer this test checks
    errors = [(out.get("ename", ""), str(out.get("evalue", ""))[:160], role)
              for cell, role in [*((c, "answer") for c in answer), (cells[index], "test")]
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    for name, _, role in errors:
        if name == "MemoryError":
            return "memory-limit", f"the {role} cell ran out of memory"
        if "Timeout" in name:
            return "timeout", f"the {role} cell ran past the per-cell timeout"
    if errors:
        name, value, role = errors[0]
        return "ok", f"{role}: {name}: {value}".rstrip(": ")
    return "ok", ""


def _grade_student(name: str, entry: Path, notebooks: list[_Notebook], template: Path,
                   released: dict[str, dict], limits: Limits) -> list[Row]:
    """Grade one student's submission in a throwaway copy of the prepared course."""
    from nbgrader.api import Gradebook, MissingEntry

    sid = _student_id(name)
    rows: list[Row] = []
    files = _submission_files(entry, notebooks)
    flags: dict[str, tuple[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="tinyk-grade-") as tmp:
        course = Path(tmp) / "course"
        shutil.copytree(template, course)
        target = course / "submitted" / sid / ASSIGNMENT
        target.mkdir(parents=True)
        to_grade = []
        for nb in notebooks:
            path = files.get(nb.name)
            submitted = _read_notebook(path) if path is not None else None
            if path is None:
                flags[nb.name] = ("missing", f"no {nb.name}.ipynb in the submission")
                continue
            if submitted is None:
                flags[nb.name] = ("unreadable", f"{path.name} is not a readable notebook")
                continue
            tampered = _tampering(submitted)
            if tampered:
                flags[nb.name] = ("tampering", tampered)
                continue
            changed = _modified_tests(submitted, released[nb.name])
            if changed:
                flags[nb.name] = ("tests-modified", "restored from the release: " + ", ".join(changed))
            shutil.copy(path, target / f"{nb.name}.ipynb")
            to_grade.append(nb)

        failure, failure_detail = "", ""
        if to_grade:
            try:
                run = _autograde(course, sid, limits)
                log = run.stdout + run.stderr
                if run.returncode != 0:
                    if re.search(r"[Kk]ernel (died|dead)|DeadKernel", log):
                        failure = "kernel-died"
                        failure_detail = ("the kernel exited while the notebook ran; "
                                          "no exercise could be scored")
                    else:
                        failure = "error"
                        errors = [ln for ln in log.splitlines() if "ERROR" in ln or "Error" in ln]
                        failure_detail = (errors or log.strip().splitlines() or ["nbgrader failed"])[0][:200]
            except subprocess.TimeoutExpired:
                failure, failure_detail = "timeout", f"submission ran past {limits.total_timeout} s"

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            for nb in notebooks:
                status, detail = flags.get(nb.name, ("ok", ""))
                graded = course / "autograded" / sid / ASSIGNMENT / f"{nb.name}.ipynb"
                executed = (json.loads(graded.read_text())
                            if status == "ok" and not failure and graded.exists() else None)
                for grade_id, max_points in nb.tests:
                    points = 0.0
                    cell_status, cell_detail = status, detail
                    if status in ("ok", "tests-modified") and nb in to_grade:
                        if failure:
                            cell_status, cell_detail = failure, failure_detail
                        else:
                            try:
                                points = float(gradebook.find_grade(grade_id, nb.name, ASSIGNMENT, sid).score)
                            except MissingEntry:
                                cell_status, cell_detail = "error", "no grade recorded"
                            if executed is not None:
                                cell_status, cell_detail = _cell_problem(executed, grade_id)
                    rows.append(Row(name, nb.name, grade_id, points, max_points, cell_status, cell_detail))
    return rows


# ----------------------------------------------------------------------------- the batch


def _course_digest(notebooks: list[_Notebook], limits: Limits) -> bytes:
    """What every student's grade depends on besides their files: the notebooks, the limits."""
    digest = hashlib.sha256(json.dumps(asdict(limits)).encode())
    for nb in notebooks:
        digest.update(nb.path.read_bytes())
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


def grade(submissions: Path, out: Path, notebooks: list[_Notebook], limits: Limits | None = None,
          jobs: int | None = None, progress: bool = True) -> list[Row]:
    """Grade every entry of ``submissions`` (a folder or a file per student) into ``out``."""
    _require_nbgrader()
    limits = limits or Limits()
    if not notebooks:
        raise SystemExit("no notebook with exercises to grade")
    entries = _entries(submissions)
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    jobs = jobs or max(1, (os.cpu_count() or 2))

    with tempfile.TemporaryDirectory(prefix="tinyk-course-") as tmp:
        template = Path(tmp) / "course"
        _prepare_course(notebooks, template)
        released = {nb.name: json.loads((template / "release" / ASSIGNMENT / f"{nb.name}.ipynb").read_text())
                    for nb in notebooks}
        todo, course_digest = [], _course_digest(notebooks, limits)
        for entry in entries:
            part = parts / f"{_student_id(_student_name(entry))}.json"
            fingerprint = _fingerprint(entry, course_digest)
            if part.exists() and json.loads(part.read_text()).get("fingerprint") == fingerprint:
                continue  # graded in an earlier (maybe interrupted) run: keep it
            todo.append((entry, part, fingerprint))

        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(entries), initial=len(entries) - len(todo), desc="grading", unit="student")
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_grade_student, _student_name(entry), entry,
                                   notebooks, template, released, limits): (entry, part, fp)
                       for entry, part, fp in todo}
            for future in concurrent.futures.as_completed(futures):
                entry, part, fingerprint = futures[future]
                name = _student_name(entry)
                try:
                    rows = future.result()
                except Exception as err:  # one broken submission never stops the batch
                    reason = f"{type(err).__name__}: {err}"[:200]
                    rows = [Row(name, nb.name, grade_id, 0.0, pts, "error", reason)
                            for nb in notebooks for grade_id, pts in nb.tests]
                _write_atomically(part, json.dumps({"fingerprint": fingerprint,
                                                    "rows": [asdict(r) for r in rows]}))
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()

    names = {_student_id(_student_name(e)) for e in entries}
    rows = [Row(**r) for part in sorted(parts.glob("*.json")) if part.stem in names
            for r in json.loads(part.read_text())["rows"]]
    rows.sort(key=lambda r: (r.student, r.notebook, r.exercise))
    lines = [FIELDS] + [[r.student, r.notebook, r.exercise, f"{r.points:g}", f"{r.max_points:g}", r.status,
                         r.detail] for r in rows]
    from io import StringIO

    buffer = StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(lines)
    _write_atomically(out, buffer.getvalue())
    return rows


def feedback(submissions: Path, out_dir: Path, notebooks: list[_Notebook],
             limits: Limits | None = None) -> None:
    """nbgrader's HTML feedback for every student, written under ``out_dir/<student>/``."""
    _require_nbgrader()
    limits = limits or Limits()
    with tempfile.TemporaryDirectory(prefix="tinyk-feedback-") as tmp:
        course = Path(tmp) / "course"
        _prepare_course(notebooks, course)
        for entry in _entries(submissions):
            sid = _student_id(_student_name(entry))
            target = course / "submitted" / sid / ASSIGNMENT
            target.mkdir(parents=True)
            for nb_name, path in _submission_files(entry, notebooks).items():
                if path is not None and _read_notebook(path) is not None:
                    shutil.copy(path, target / f"{nb_name}.ipynb")
            try:
                _autograde(course, sid, limits)
            except subprocess.TimeoutExpired:
                print(f"{sid}: no feedback, the submission ran past {limits.total_timeout} s",
                      file=sys.stderr)
                continue  # one slow submission never costs the others their feedback
            _nbgrader(["generate_feedback", ASSIGNMENT, f"--student={sid}", "--force"], course)
            produced = course / "feedback" / sid / ASSIGNMENT
            if produced.exists():
                shutil.copytree(produced, out_dir / sid, dirs_exist_ok=True)


# ----------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyk.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT / "notebooks",
                        help="folder of the chapter notebooks (with solutions and hidden tests)")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check nbgrader metadata and that solutions pass their tests")
    v.add_argument("notebooks", nargs="*", type=Path)
    v.add_argument("--no-run", action="store_true", help="check metadata only")
    r = sub.add_parser("release", help="write student versions (nbgrader generate_assignment)")
    r.add_argument("out_dir", type=Path)
    g = sub.add_parser("grade", help="autograde submissions into a CSV gradebook")
    g.add_argument("submissions", type=Path)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--jobs", type=int, default=None, help="students graded at once (default: cores)")
    g.add_argument("--cell-timeout", type=int, default=Limits.cell_timeout)
    g.add_argument("--total-timeout", type=int, default=Limits.total_timeout)
    g.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    f = sub.add_parser("feedback", help="nbgrader's HTML feedback per student")
    f.add_argument("submissions", type=Path)
    f.add_argument("out_dir", type=Path)
    for p in (r, g, f):
        p.add_argument("--notebook", action="append", help="a chapter notebook to include (default: all)")
    args = parser.parse_args(argv)

    if args.command == "validate":
        paths = args.notebooks or notebook_paths()
        problems = validate(paths, run=not args.no_run)
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(paths)} notebook(s) checked, {len(problems)} problem(s)")
        return 1 if problems else 0
    notebooks = _chapter_notebooks(args.notebook, args.source)
    if args.command == "release":
        for path in release(args.out_dir, notebooks):
            print("released", path)
        return 0
    if args.command == "grade":
        limits = Limits(args.cell_timeout, args.total_timeout, args.memory_mb)
        rows = grade(args.submissions, args.out, notebooks, limits, args.jobs)
        students = {r.student for r in rows}
        print(f"{len(students)} student(s), {len(rows)} row(s) written to {args.out}")
        return 0
    feedback(args.submissions, args.out_dir, notebooks)
    return 0


if __name__ == "__main__":
    sys.exit(main())

