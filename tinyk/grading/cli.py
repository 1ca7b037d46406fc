"""Instructor tools: validate, release and grade the chapter's exercises with nbgrader.

The command line ``python -m tinyk.grading`` (course section "For instructors"); ``--help``
lists the commands, and the package's docstring says what each does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tinyk.courseware.checkout import NOTEBOOKS, NotACheckout, course_root
from tinyk.grading.assignment import release, validate
from tinyk.grading.batch import grade, merge, parse_shard
from tinyk.grading.runner import Limits
from tinyk.grading.student_feedback import feedback

__all__ = ["main", "parser"]


def _jobs(text: str) -> int:
    """``--jobs``: a whole number of students at once, 1 or more."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of students, 1 or more, got {text!r}")
    return int(text)


def _add_grade(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    g = sub.add_parser("grade", help="autograde submissions into a CSV gradebook (Linux, in a sandbox)")
    g.add_argument("submissions", type=Path)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--jobs", type=_jobs, default=None, help="students graded at once (default: cores)")
    g.add_argument("--cell-timeout", type=int, default=Limits.cell_timeout)
    g.add_argument("--total-timeout", type=int, default=Limits.total_timeout,
                   help="seconds per notebook, summed over a student's notebooks")
    g.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    g.add_argument("--threads", type=int, default=Limits.threads,
                   help="CPU threads per student's process (default 1: the --jobs students share the cores)")
    g.add_argument("--cold-kernels", action="store_true",
                   help="no effect, kept for earlier command lines: grading starts no kernel")
    g.add_argument("--answers-only", action="store_true",
                   help="no effect, kept for earlier command lines: grading is always the verdict's "
                        "one run of each notebook (see the instructors' page)")
    g.add_argument("--shard", type=parse_shard, default=None, metavar="K/N",
                   help="grade only shard K of N (K from 0 to N-1), chosen by a hash of the student's "
                        "name; join the shards' CSVs with 'merge'")
    return g


def _add_class_tools(sub: argparse._SubParsersAction) -> None:
    """The commands that work from what grading left behind: report, export, similarity."""
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


_SOURCE_HELP = ("folder of the chapter notebooks, with solutions and hidden tests "
                "(default: notebooks/ of the course checkout)")


def parser(prog: str = "python -m tinyk.grading") -> argparse.ArgumentParser:
    """The command line's parser: its commands, in the order ``--help`` lists them.

    ``--source`` is taken before the command (``python -m tinyk.grading --source DIR grade``)
    or after it (``tinyk grade --source DIR``)."""
    top = argparse.ArgumentParser(
        prog=prog,
        description=str(__doc__).split("\n\n")[0] + " Linux only: grading uses resource "
        "limits, /proc and a bubblewrap sandbox.")
    top.add_argument("--source", type=Path, default=None, help=_SOURCE_HELP)
    sub = top.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check nbgrader metadata and that solutions pass their tests")
    v.add_argument("notebooks", nargs="*", type=Path)
    v.add_argument("--no-run", action="store_true", help="check metadata only")
    r = sub.add_parser("release", help="write student versions (nbgrader generate_assignment)")
    r.add_argument("out_dir", type=Path)
    g = _add_grade(sub)
    m = sub.add_parser("merge", help="join the CSVs of 'grade --shard' runs into one CSV")
    m.add_argument("out", type=Path)
    m.add_argument("shards", nargs="+", type=Path)
    _add_class_tools(sub)
    f = sub.add_parser("feedback", help="nbgrader's HTML feedback per student (Linux, in a sandbox)")
    f.add_argument("submissions", type=Path)
    f.add_argument("out_dir", type=Path)
    f.add_argument("--jobs", type=_jobs, default=None, help="students at once (default: one per core)")
    for p in (g, f):
        p.add_argument("--no-sandbox", action="store_true",
                       help="run student code WITHOUT the bubblewrap sandbox, with your rights (logged)")
    for p in (r, g, f):
        p.add_argument("--notebook", action="append", help="a chapter notebook to include (default: all)")
    for p in sub.choices.values():  # SUPPRESS: given before the command, it is not overwritten
        p.add_argument("--source", type=Path, default=argparse.SUPPRESS, help=_SOURCE_HELP)
    return top


def _validate(args: argparse.Namespace) -> int:
    paths = args.notebooks or sorted(args.source.glob("*.ipynb"))
    problems = validate(paths, run=not args.no_run)
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(paths)} notebook(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def _release(args: argparse.Namespace) -> int:
    for path in release(args.out_dir, args.notebook, source=args.source):
        print("released", path)
    return 0


def _grade(args: argparse.Namespace) -> int:
    if args.threads < 1:
        print(f"--threads must be 1 or more, got {args.threads}", file=sys.stderr)
        return 2
    for flag, given in (("--cold-kernels", args.cold_kernels), ("--answers-only", args.answers_only)):
        if given:
            print(f"{flag} has no effect: grading runs each notebook once, in the verdict, and starts "
                  f"no kernel", file=sys.stderr)
    limits = Limits(args.cell_timeout, args.total_timeout, args.memory_mb, args.threads)
    rows = grade(args.submissions, args.out, args.notebook, source=args.source, limits=limits,
                 jobs=args.jobs, sandbox=not args.no_sandbox, shard=args.shard)
    students = {r.student for r in rows}
    print(f"{len(students)} student(s), {len(rows)} row(s) written to {args.out}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    print(f"{merge(args.out, args.shards)} row(s) written to {args.out}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from tinyk.reports.class_report import report_main

    return report_main(args.grades, args.out, args.source)


def _export(args: argparse.Namespace) -> int:
    from tinyk.reports.lms import export_main

    return export_main(args.grades, args.format, args.roster, args.out)


def _similarity(args: argparse.Namespace) -> int:
    from tinyk.reports.similarity import similarity_main

    return similarity_main(args.submissions, args.out, args.source, args.threshold)


def _feedback(args: argparse.Namespace) -> int:
    failed = feedback(args.submissions, args.out_dir, args.notebook, source=args.source,
                      sandbox=not args.no_sandbox, jobs=args.jobs, progress=True)
    if failed:
        print(f"{len(failed)} student(s) got no feedback because the grader's run failed: "
              f"{', '.join(failed)} (each said why above)", file=sys.stderr)
    return 1 if failed else 0


_COMMANDS = {"validate": _validate, "release": _release, "grade": _grade, "merge": _merge,
             "report": _report, "export": _export, "similarity": _similarity, "feedback": _feedback}


def main(argv: list[str] | None = None, prog: str = "python -m tinyk.grading") -> int:
    """The command line (section "For instructors"); ``--help`` lists the commands."""
    args = parser(prog).parse_args(argv)
    if args.source is None and not (args.command == "validate" and args.notebooks):
        try:
            args.source = course_root() / NOTEBOOKS
        except NotACheckout as err:
            if args.command not in ("report", "export"):  # these two read only the CSVs
                print(f"{err}; or pass --source FOLDER", file=sys.stderr)
                return 2
    return _COMMANDS[args.command](args)
