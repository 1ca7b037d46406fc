"""Each student notebook, answered, run top to bottom as a learner's "Run all" runs it.

    python benchmarks/bench_notebooks.py [--notebook NAME ...] [--repeat 1] [--aim 20]

A student notebook with its answers filled in is its source notebook without the hidden tests
(``tests/test_notebooks.py`` checks it cell for cell). This script runs each one in a fresh
kernel of this environment with nbclient, the ``raises-exception`` tag honoured on no cell (as
in Colab), one notebook at a time, and prints the seconds its cells took (the kernel's start
apart, in its own column), the fastest of ``--repeat`` runs, against the course's aim
(``--aim``, 20 s: 05.10's SmolLM2 load included). A notebook whose run stops at an error is
reported as such, and the script exits with 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def answered(path: Path) -> dict:
    """The source notebook at ``path`` as a learner's answered copy: hidden tests cut, no cell
    tagged ``raises-exception``."""
    from tinyk.courseware.exercises import BEGIN_HIDDEN, END_HIDDEN, is_test, source_text

    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags")
        if tags:
            cell["metadata"]["tags"] = [t for t in tags if t != "raises-exception"]
        text = source_text(cell)
        if is_test(cell) and BEGIN_HIDDEN in text:
            start = text.index(BEGIN_HIDDEN)
            cell["source"] = text[:start] + text[text.index(END_HIDDEN, start) + len(END_HIDDEN):]
    return nb


def run(nb: dict, folder: Path) -> tuple[float, float]:
    """Seconds to start a kernel, and seconds its cells took, for one run of ``nb`` in ``folder``."""
    import nbformat
    from nbclient import NotebookClient

    client = NotebookClient(nbformat.reads(json.dumps(nb), as_version=4), timeout=600, allow_errors=False,
                            kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    started = time.perf_counter()
    with client.setup_kernel():
        ready = time.perf_counter()
        for index, cell in enumerate(client.nb.cells):
            client.execute_cell(cell, index)
        done = time.perf_counter()
    return ready - started, done - ready


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", nargs="*", help="stems to run (e.g. 05_2_rmsnorm); all by default")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each notebook; the fastest is kept")
    parser.add_argument("--aim", type=float, default=20.0, help="seconds a notebook's cells may take")
    args = parser.parse_args(argv)

    from tinyk.courseware.checkout import notebook_paths

    paths = [p for p in notebook_paths() if not args.notebook or p.stem in args.notebook]
    print(f"{'notebook':24s} {'kernel s':>9s} {'cells s':>8s}  within {args.aim:g} s")
    failed = False
    total = 0.0
    for path in paths:
        nb = answered(path)
        try:
            with tempfile.TemporaryDirectory(prefix="bench-notebooks-") as tmp:
                times = [run(nb, Path(tmp)) for _ in range(max(1, args.repeat))]
        except Exception as err:  # a cell's error stops a "Run all" in Colab too
            print(f"{path.stem:24s} stopped: {type(err).__name__}: {str(err).splitlines()[0][:120]}")
            failed = True
            continue
        kernel, cells = min(times, key=lambda t: t[1])
        total += cells
        print(f"{path.stem:24s} {kernel:9.1f} {cells:8.1f}  {'yes' if cells <= args.aim else 'NO'}")
    print(f"{'all':24s} {'':9s} {total:8.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
