"""The verdict's seconds per student, with a clean start for each notebook and without.

    python benchmarks/bench_verdict.py [--students 4] [--notebook NAME ...] [--timeout 600]

The verdict outside the kernel (course section "For instructors", the verdict) runs each
student's answer cells again in a learner's process in their sandbox, then every test cell
in the grader's process. This script times it for synthetic students who submit every
chapter notebook with exercises (the source's solutions as their answers), as the grader
runs it: one learner's process per student, started (importing torch), then each notebook
judged. Each student is judged twice, alternately: with each notebook's answers in new
namespaces of their own (a private /tmp, no process of an earlier notebook's answers: the
grader's way) and with the notebooks sharing the learner's process's namespaces. It prints
the seconds per student each way, the difference per notebook and the ratio, measured side
by side in one run, in wall-clock seconds and in CPU seconds (the grader's process and the
learner's, which a busy machine disturbs less); every exercise must pass both ways, or the
script stops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tree_cpu(root: int) -> float:
    """CPU seconds of the live processes under ``root`` (the learner's, in their sandbox),
    with those of the children they have waited for: the whole tree's so far."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        stats[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))  # ppid; utime..cstime
    tree, found = {root}, True
    while found:
        found = {pid for pid, (ppid, _) in stats.items() if ppid in tree and pid not in tree}
        tree |= found
    return sum(stats[pid][1] for pid in tree if pid in stats) / os.sysconf("SC_CLK_TCK")


def _judge_student(notebooks: list[dict], base: Path, clean: bool,
                   timeout: float) -> tuple[float, float, list]:
    """Wall-clock and CPU seconds (this process's and the learner's) for one student's
    verdict (one learner's process, every notebook), and the exercises that failed."""
    from tinyk.grading import answer_server, verdict
    from tinyk.grading.sandbox import sandbox_argv

    scratch, runtime = base / "scratch", base / "run"
    scratch.mkdir(parents=True)
    runtime.mkdir()
    start, own = time.monotonic(), time.process_time()
    with answer_server.AnswerServer(sandbox_argv(scratch, runtime), timeout, 8192) as server:
        if not clean:  # the notebooks share the learner's process's namespaces
            server.notebook = server.leave = lambda: None  # type: ignore[method-assign]
        server.start()
        failed = [(v.grade_id, v.detail) for nb in notebooks for v in verdict.judge(nb, nb, server)
                  if not v.passed]
        assert server.proc is not None
        cpu = time.process_time() - own + _tree_cpu(server.proc.pid)
    if clean and server.shared:
        raise SystemExit(f"the notebooks could not have namespaces of their own here: {server.shared}")
    return time.monotonic() - start, cpu, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4, help="students judged each way (default 4)")
    parser.add_argument("--notebook", action="append",
                        help="a chapter notebook's file name without .ipynb (default: all with exercises)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds per reply, generous on a busy machine")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("TINYK_GRADING", "1")
    import torch

    from tinyk.courseware import checkout
    from tinyk.courseware.exercises import is_test
    from tinyk.grading.sandbox import check_sandbox

    check_sandbox()
    torch.set_num_threads(1)
    paths = [p for p in checkout.notebook_paths() if args.notebook is None or p.stem in args.notebook]
    notebooks = [nb for nb in (json.loads(p.read_text()) for p in paths) if any(map(is_test, nb["cells"]))]
    if not notebooks:
        raise SystemExit(f"no chapter notebook with exercises among {args.notebook}")
    seconds: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="tinyk-bench-verdict-") as tmp:
        for student in range(args.students):
            for clean in ((True, False) if student % 2 == 0 else (False, True)):  # alternate who goes first
                folder = Path(tmp) / f"{student}-{clean}"
                wall, cpu, failed = _judge_student(notebooks, folder, clean, args.timeout)
                if failed:
                    raise SystemExit(f"{len(failed)} exercise(s) failed ({'clean' if clean else 'shared'}), "
                                     f"e.g. {failed[0]}")
                seconds.setdefault(("wall", clean), []).append(wall)
                seconds.setdefault(("cpu", clean), []).append(cpu)
    figures: dict = {"students": args.students, "notebooks": len(notebooks)}
    for kind in ("wall", "cpu"):
        clean, shared = statistics.median(seconds[kind, True]), statistics.median(seconds[kind, False])
        figures[kind] = {"clean": [round(x, 2) for x in seconds[kind, True]],
                         "shared": [round(x, 2) for x in seconds[kind, False]],
                         "median_clean": round(clean, 2), "median_shared": round(shared, 2),
                         "per_notebook_added": round((clean - shared) / len(notebooks), 3),
                         "ratio": round(clean / shared, 3)}
        print(f"verdict of {args.students} student(s) x {len(notebooks)} notebooks, median {kind} seconds "
              f"per student: {clean:.2f} with a clean start per notebook, {shared:.2f} sharing one sandbox "
              f"({(clean - shared) / len(notebooks) * 1000:+.0f} ms per notebook, {clean / shared:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
