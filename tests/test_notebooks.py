"""Every chapter notebook runs top to bottom, hidden tests included: the ``notebooks`` stage.

Each source notebook is executed once, by nbmake's runner, in a temporary folder (as the
book runs it), with the book's removed first cell in front. Its page view (markers and
hidden tests cut, outputs kept) is then stored in the book's execution cache, keyed on the
page's code and the package's source: the book build that follows in ``make test`` finds
every notebook there and executes none of them again. A notebook or package that changed
later is a cache miss, so no stale output can reach the site.

Run with ``pytest -m notebook tests/test_notebooks.py`` (``make notebooks`` runs two at a
time, one per core); the times are printed at the end. The cache is written under a file
lock, so two workers never write it at once.
"""

from __future__ import annotations

import copy
import fcntl
import functools
import importlib.util
import json
import time
from pathlib import Path

import nbformat
import pytest

from tinyk.course import ROOT, notebook_paths

pytestmark = pytest.mark.notebook

CACHE = ROOT / "_build" / ".jupyter_cache"  # jupyter-book's default `execute.cache`
CELL_TIMEOUT = 600  # seconds per cell: a guard against a hung kernel, not a speed check


@functools.cache
def _book_extension():
    spec = importlib.util.spec_from_file_location("tinyk_book", ROOT / "book" / "_ext" / "tinyk_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_runs_and_is_cached_for_the_book(path: Path, tmp_path: Path, request):
    seconds = execute_and_cache(path, CACHE, tmp_path)
    request.node.user_properties.append(("execution_seconds", seconds))  # conftest prints them


def execute_and_cache(path: Path, cache_dir: Path, workdir: Path) -> float:
    """Run the source notebook ``path`` in ``workdir``; store its page view in ``cache_dir``.

    Fails the calling test with the failing cell's traceback; returns the seconds it took.
    """
    jupyter_cache = pytest.importorskip("jupyter_cache", reason="jupyter-cache comes with jupyter-book")
    from jupyter_cache.base import CacheBundleIn
    from nbmake.nb_run import NotebookRun

    book = _book_extension()
    source = json.loads(path.read_text(encoding="utf-8"))
    run_copy = workdir / path.name
    run_copy.write_text(json.dumps(book.with_first_cell(source)), encoding="utf-8")

    start = time.perf_counter()
    result = NotebookRun(run_copy, CELL_TIMEOUT).execute()
    seconds = time.perf_counter() - start
    if result.error is not None:
        pytest.fail(f"{path.name}: cell {result.error.failing_cell_index - 1} failed "
                    f"(counting code and markdown cells from 0)\n{result.error.trace}", pytrace=False)

    executed = json.loads(nbformat.writes(result.nb))
    page = book.page_notebook(source)
    # The page's cells keep their own sources and metadata and take the executed outputs.
    assert len(executed["cells"]) == len(page["cells"])
    for page_cell, run_cell in zip(page["cells"], executed["cells"], strict=True):
        if page_cell["cell_type"] == "code":
            page_cell["outputs"] = copy.deepcopy(run_cell["outputs"])
            page_cell["execution_count"] = run_cell["execution_count"]
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir.parent / ".jupyter_cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        cache = jupyter_cache.get_cache(str(cache_dir))
        record = cache.cache_notebook_bundle(
            CacheBundleIn(_as_myst_nb_reads_it(page), str(path), data={"execution_seconds": seconds}),
            check_validity=False, overwrite=True)
        # The book build will look up exactly this: its page view of the source, read by nbformat.
        assert cache.match_cache_notebook(_as_myst_nb_reads_it(book.page_notebook(source))).pk == record.pk
    return seconds


def _as_myst_nb_reads_it(nb: dict) -> nbformat.NotebookNode:
    return nbformat.reads(json.dumps(nb), as_version=4)
