"""Grading throughput: N synthetic students over every chapter notebook with exercises.

    python benchmarks/bench_grading.py [--students 2] [--jobs 2] [--notebook NAME ...] [--no-sandbox]
                                       [--threads 1] [--compare-threads 2] [--against REV]

Each synthetic student submits every notebook: even-numbered students with the source's
solutions pasted into the released copy (full marks), odd-numbered ones the untouched
release (zero). The command line ``python -m tinyk.grading grade`` grades them once, and
the script prints student-notebooks per minute and seconds per student-notebook, wall
clock, course preparation included. It checks the points (full marks and zero), so a fast
but wrong grading does not count.

``--compare-threads N`` grades the same submissions a second time with ``N`` CPU threads
per student's process (the grader's ``--threads``; torch's own default is one per core) and
prints the ratio of the two throughputs, measured side by side in one run.

``--against REV`` also measures the grader of the git revision ``REV`` of this repository (a
commit, a tag), each with its own course: that revision's checkout, made in a temporary
worktree, grades as many synthetic students of all its own notebooks with its own
``benchmarks/bench_grading.py`` (``--json``, and this run's ``--jobs``, ``--threads`` and
``--no-sandbox``) in the same run, in its default mode; both throughputs are printed side by
side, with their ratio. (``--against f07f24b``: the grader that ran each notebook in
nbgrader's kernel and again in the verdict.)
The revision must have that script with those options; ``--notebook`` is refused with it.

``--grader`` names the grader's module (default ``tinyk.grading``): an older copy of it,
saved under another name on ``PYTHONPATH``, is measured the same way. On a shared machine,
measure the versions close together.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"  # this checkout's, whatever grader runs


def _solutions(path: Path) -> dict[str, str]:
    """grade_id -> source of each solution cell of a chapter notebook."""
    cells = json.loads(path.read_text())["cells"]
    return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in cells
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--notebook", action="append",
                        help="a chapter notebook (default: all with exercises)")
    parser.add_argument("--no-sandbox", action="store_true", help="pass --no-sandbox to the grader")
    parser.add_argument("--grader", default="tinyk.grading",
                        help="the grader's module, to measure an older copy of it (default: tinyk.grading)")
    parser.add_argument("--total-timeout", type=int, default=3600,
                        help="the grader's --total-timeout, generous: a busy machine must not cut anyone off")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads per student's process (the grader's --threads)")
    parser.add_argument("--compare-threads", type=int, default=None, metavar="N",
                        help="grade again with N threads per student's process and print the ratio")
    parser.add_argument("--against", metavar="REV",
                        help="also measure the grader of this git revision, with its own course")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.against and args.notebook:
        parser.error("--against grades every notebook of that revision's own course: leave out --notebook")

    source = NOTEBOOKS
    names = args.notebook or [p.stem for p in sorted(source.glob("*.ipynb")) if _solutions(p)]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="tinyk-bench-") as tmp:
        release = Path(tmp) / "release"
        notebook_args = [a for n in names for a in ("--notebook", n)]
        grader = [sys.executable, "-m", args.grader, "--source", str(source)]
        subprocess.run([*grader, "release", str(release), *notebook_args],
                       check=True, capture_output=True, env=env)
        subs = Path(tmp) / "submissions"
        for i in range(args.students):
            folder = subs / f"student{i:03d}"
            folder.mkdir(parents=True)
            for name in names:
                nb = json.loads((release / f"{name}.ipynb").read_text())
                if i % 2 == 0:
                    solutions = _solutions(source / f"{name}.ipynb")
                    for cell in nb["cells"]:
                        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                        if gid in solutions:
                            cell["source"] = solutions[gid]
                (folder / f"{name}.ipynb").write_text(json.dumps(nb))
        runs = []
        for threads in [args.threads] + ([args.compare_threads] if args.compare_threads else []):
            out = Path(tmp) / f"grades-{threads}.csv"
            cmd = [*grader, "grade", str(subs), "--out", str(out), "--threads", str(threads),
                   "--jobs", str(args.jobs), "--total-timeout", str(args.total_timeout), *notebook_args,
                   *(["--no-sandbox"] if args.no_sandbox else [])]
            start = time.monotonic()
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            seconds = time.monotonic() - start
            if done.returncode != 0:
                raise SystemExit(f"grading failed:\n{done.stderr[-3000:]}")
            with out.open() as f:
                rows = list(csv.DictReader(f))
            wrong = [r for r in rows if r["status"] != "ok" or float(r["points"]) != (
                float(r["max_points"]) if int(r["student"][-3:]) % 2 == 0 else 0.0)]
            if wrong:
                raise SystemExit(f"{len(wrong)} row(s) graded wrongly, e.g. {wrong[0]}")
            count = args.students * len(names)
            figures = {"students": args.students, "notebooks": len(names), "student_notebooks": count,
                       "jobs": args.jobs, "threads": threads, "grader": args.grader,
                       "no_sandbox": args.no_sandbox, "seconds": round(seconds, 1),
                       "student_notebooks_per_minute": round(60 * count / seconds, 2),
                       "seconds_per_student_notebook": round(seconds / count, 2)}
            runs.append(figures)
            print(f"{count} student-notebooks ({args.students} students x {len(names)} notebooks, "
                  f"{args.jobs} jobs, {threads} thread(s) per student, "
                  f"{args.grader}{' --no-sandbox' if args.no_sandbox else ''}) in {seconds:.1f} s: "
                  f"{figures['student_notebooks_per_minute']:.2f} per minute, "
                  f"{figures['seconds_per_student_notebook']:.2f} s per student-notebook")
    if args.compare_threads:
        ratio = runs[1]["seconds"] / runs[0]["seconds"]
        print(f"{runs[0]['threads']} thread(s) per student grades {ratio:.2f}x as fast as "
              f"{runs[1]['threads']}")
    if args.against:
        other = _against(args.against, args)
        ours, theirs = runs[0]["student_notebooks_per_minute"], other["student_notebooks_per_minute"]
        print(f"{'grader':<28}{'student-notebooks/min':>24}{'s per student-notebook':>25}")
        for name, run in (("this checkout (default)", runs[0]), (f"{args.against} (default)", other)):
            print(f"{name:<28}{run['student_notebooks_per_minute']:>24.2f}"
                  f"{run['seconds_per_student_notebook']:>25.2f}")
        print(f"this checkout's grader grades {ours / theirs:.2f}x as many student-notebooks per minute as "
              f"{args.against}'s ({ours:.2f} against {theirs:.2f}, each with its own course)")
        runs.append(other)
    if args.json:
        args.json.write_text(json.dumps(runs if len(runs) > 1 else runs[0], indent=1) + "\n")


def _against(rev: str, args: argparse.Namespace) -> dict:
    """The figures of the grader of revision ``rev``, with its own course: its checkout in a
    temporary worktree runs its own benchmark (``--json``, this run's students, jobs, threads
    and sandbox), points checked there."""
    from revisions import checked_out  # benchmarks/revisions.py, beside this script

    with checked_out(rev) as tree:
        out = tree.parent / "figures.json"
        command = [sys.executable, "benchmarks/bench_grading.py", "--students", str(args.students),
                   "--jobs", str(args.jobs), "--threads", str(args.threads), "--json", str(out),
                   *(["--no-sandbox"] if args.no_sandbox else [])]
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(tree)})
        if done.returncode != 0:
            raise SystemExit(f"{rev}'s benchmark failed:\n{done.stderr[-3000:]}")
        print(f"{rev}: {done.stdout.strip()}")
        figures = json.loads(out.read_text())
    return {**figures, "grader": rev}


if __name__ == "__main__":
    main()
