"""A git revision of this repository checked out beside it, for the benchmarks' ``--against REV``
(``bench_generate.py``, ``bench_grading.py``): the same code, measured side by side in one run."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def checked_out(rev: str) -> Iterator[Path]:
    """A temporary git worktree of ``rev`` (detached), removed on the way out; yields its folder."""
    with tempfile.TemporaryDirectory(prefix="tinyk-bench-rev-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
