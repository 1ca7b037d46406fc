"""Every chapter notebook runs top to bottom, hidden tests included: the ``notebooks`` stage.

Each source notebook is executed once, by nbclient, in a temporary folder outside
the repository (as the book runs it), with the book's removed first cell in front, in a
kernel of the wheel environment (``tests/wheel_env.py``: the package installed from a wheel,
as in Colab, with ipywidgets 7.7.1, and no ``PYTHONPATH``). A last cell, removed again,
checks that the kernel imported the installed package, not the checkout. Its page view
(markers and hidden tests cut, outputs kept) is then stored in the book's execution cache,
keyed on the page's code and the package's source: the book build that follows in ``make
test`` finds every notebook there and executes none of them again. A notebook or package
that changed later is a cache miss, so no stale output can reach the site. Each cell's
kernel timestamps are kept in ``artifacts/notebook-timings/`` (nothing asserts them).

A notebook runs as Colab's "Run all" runs it: the first error stops it. Colab does not honour
the ``raises-exception`` tag that nbclient and JupyterLab honour (a tagged cell may fail and the
run goes on), so the tag is taken off every cell of the run copy (:func:`as_colab_runs_it`) and
a cell that shows an error must catch it and print it. The same run stands for a student
notebook with its answers filled in: that is the source notebook's code, cell for cell, without
the hidden tests (:func:`test_a_student_notebook_with_its_answers_filled_is_the_source_run_here`),
so only an unanswered exercise stops a student's "Run all".

Run with ``pytest -m notebook tests/test_notebooks.py`` (``make notebooks`` runs two at a
time, one per core); the times are printed at the end. The cache is written under a file
lock, so two workers never write it at once.
"""

from __future__ import annotations

import ast
import copy
import fcntl
import functools
import importlib.util
import json
import time
from pathlib import Path

import nbformat
import pytest

from tinyk.courseware.checkout import ROOT, notebook_paths
from tinyk.courseware.exercises import is_solution, is_test, source_text

pytestmark = pytest.mark.notebook

CACHE = ROOT / "_build" / ".jupyter_cache"  # jupyter-book's default `execute.cache`
CELL_TIMEOUT = 600  # seconds per cell: a guard against a hung kernel, not a speed check


@functools.cache
def _book_extension():
    spec = importlib.util.spec_from_file_location("tinyk_book", ROOT / "book" / "_ext" / "tinyk_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def installed():
    """The wheel environment (built by the first worker to need it, or by the unit tests)."""
    from tests.wheel_env import NoCheckout, environment

    try:
        return environment()
    except NoCheckout as err:
        pytest.fail(f"{err}: the notebooks run in a wheel of the checkout's tracked files", pytrace=False)


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_runs_and_is_cached_for_the_book(path: Path, tmp_path, request, installed, monkeypatch):
    from tests.wheel_env import KERNEL, PROBE

    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(installed.jupyter))
    seconds, executed = execute_and_cache(path, CACHE, tmp_path, kernel=KERNEL, probe=PROBE)
    request.node.user_properties.append(("execution_seconds", seconds))  # conftest prints them
    _keep_timings(path.stem, executed)
    probe = "".join("".join(o.get("text", "")) for o in executed["cells"][-1]["outputs"]).splitlines()
    assert Path(probe[0]).is_relative_to(installed.python.parent.parent), f"tinyk came from {probe[0]}"
    assert probe[1] == "7.7.1", f"ipywidgets {probe[1]}, not Colab's"
    outside = [p for p in ast.literal_eval(probe[2]) if p and Path(p).resolve().is_relative_to(ROOT)
               and not Path(p).resolve().is_relative_to(installed.folder)]
    assert outside == [], f"the checkout is on the kernel's path: {outside}"
    setup = next(c for c in executed["cells"][1:] if c["cell_type"] == "code")  # after the book's
    assert setup["outputs"] == [], "the setup cell finds tinyk and does nothing"


def as_colab_runs_it(nb: dict) -> dict:
    """``nb`` (a notebook's JSON) without the ``raises-exception`` tag on any cell: run by
    nbclient, a cell that raises then stops the run, as in Colab (section "For instructors",
    the notebooks stage). The cells' other tags stay."""
    nb = dict(nb, cells=[copy.deepcopy(cell) for cell in nb["cells"]])
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags")
        if tags and "raises-exception" in tags:
            cell["metadata"]["tags"] = [tag for tag in tags if tag != "raises-exception"]
    return nb


def test_the_run_copy_honours_no_deliberate_error_tag():
    failing = nbformat.v4.new_code_cell("1 / 0", metadata={"tags": ["raises-exception", "hide-input"]})
    source = {"cells": [failing, nbformat.v4.new_code_cell("x = 1")], "metadata": {}, "nbformat": 4,
              "nbformat_minor": 5}
    run = as_colab_runs_it(source)
    assert [cell["metadata"].get("tags") for cell in run["cells"]] == [["hide-input"], None]
    assert source["cells"][0]["metadata"]["tags"] == ["raises-exception", "hide-input"]  # a copy


def _code_without_hidden_tests(nb: dict) -> list[str]:
    """Each code cell's source but an answer's (the stub's or the solution's), hidden tests cut."""
    from tinyk.courseware.exercises import BEGIN_HIDDEN, END_HIDDEN

    code = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or is_solution(cell):
            continue
        text = source_text(cell)
        if is_test(cell) and BEGIN_HIDDEN in text:
            start = text.index(BEGIN_HIDDEN)
            end = text.index(END_HIDDEN, start) + len(END_HIDDEN)
            text = text[:start] + text[end:]
        code.append(text.strip("\n"))
    return code


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_a_student_notebook_with_its_answers_filled_is_the_source_run_here(path: Path):
    """Filled with its answers, a student notebook is its source notebook, code cell for code
    cell, without the hidden tests: so the source's run in this stage, with no deliberate error
    allowed, stands for a student's "Run all" once every exercise is answered, and only an
    unanswered exercise can stop it (no cell of either carries ``raises-exception``)."""
    student = json.loads((ROOT / "student" / path.name).read_text(encoding="utf-8"))
    source = json.loads(path.read_text(encoding="utf-8"))
    answers = [c for c in source["cells"] if c["cell_type"] == "code" and is_solution(c)]
    stubs = [c for c in student["cells"] if c["cell_type"] == "code" and is_solution(c)]
    assert len(stubs) == len(answers), (f"{path.name}: {len(stubs)} answer cells in student/, "
                                        f"{len(answers)} in its source")
    assert _code_without_hidden_tests(student) == _code_without_hidden_tests(source), path.name
    tagged = [c.get("id") for nb in (source, student) for c in nb["cells"]
              if "raises-exception" in c.get("metadata", {}).get("tags", [])]
    assert tagged == [], (f"{path.name}: cells {tagged} are tagged raises-exception; Colab's Run all stops "
                          f"there: catch the error and print it")


def _keep_timings(stem: str, executed: dict) -> None:
    """Each code cell's kernel timestamps (nbclient's ``record_timing``), to tell where a slow
    run spent its time."""
    folder = ROOT / "artifacts" / "notebook-timings"
    folder.mkdir(parents=True, exist_ok=True)
    cells = [{"index": i, "first_line": ("".join(c["source"]).splitlines() or [""])[0][:80],
              "timing": c["metadata"].get("execution", {})}
             for i, c in enumerate(executed["cells"]) if c["cell_type"] == "code"]
    (folder / f"{stem}.json").write_text(json.dumps({"cells": cells}, indent=1))


def _run(path: Path, kernel: str | None) -> nbformat.NotebookNode:
    """Every cell of the notebook at ``path``, in order, in a new kernel (``kernel``, by default
    the notebook's own) started in its folder; fails the calling test at the first failing cell
    (``allow_errors`` off; the run copy carries no ``raises-exception`` tag) with its traceback.

    The kernel listens on Unix sockets in that folder (``tests.helpers.ipc_client``): the
    notebooks stage starts two at once.
    """
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    from tests.helpers import ipc_client

    nb = nbformat.read(path, as_version=4)
    client = ipc_client(nb, path.parent, timeout=CELL_TIMEOUT, kernel_name=kernel or "", record_timing=True,
                        allow_errors=False)
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as error:
        code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        failed = [i for i, c in code if any(o.output_type == "error" for o in c.outputs)]
        unfinished = [i for i, c in code if "shell.execute_reply" not in c.metadata.get("execution", {})]
        index = failed[-1] if failed else (unfinished or [0])[0]  # an error, else the cell that timed out
        where = f"cell {index - 1} failed (counting code and markdown cells from 0)"
        pytest.fail(f"{path.name}: {where}\n{error}", pytrace=False)
    return nb


def execute_and_cache(path: Path, cache_dir: Path, workdir: Path, kernel: str | None = None,
                      probe: str | None = None) -> tuple[float, dict]:
    """Run the source notebook ``path`` in ``workdir`` (in ``kernel``, by default its own);
    store its page view in ``cache_dir``. ``probe``: a cell run last, whose outputs the
    returned notebook keeps and the page does not.

    Fails the calling test with the failing cell's traceback; returns the seconds it took
    and the executed notebook.
    """
    from tests.optional import need

    jupyter_cache = need("jupyter_cache")
    from jupyter_cache.base import CacheBundleIn

    book = _book_extension()
    source = json.loads(path.read_text(encoding="utf-8"))
    run_copy = workdir / path.name
    run = as_colab_runs_it(book.with_first_cell(source))
    if probe is not None:
        run["cells"].append(nbformat.v4.new_code_cell(probe, id="tinyk-probe"))
    run_copy.write_text(json.dumps(run), encoding="utf-8")

    start = time.perf_counter()
    nb = _run(run_copy, kernel)
    seconds = time.perf_counter() - start
    executed = json.loads(nbformat.writes(nb))
    page = book.page_notebook(source)
    # The page's cells keep their own sources and metadata and take the executed outputs.
    assert len(executed["cells"]) == len(page["cells"]) + (probe is not None)
    for page_cell, run_cell in zip(page["cells"], executed["cells"][:len(page["cells"])], strict=True):
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
    return seconds, executed


def _as_myst_nb_reads_it(nb: dict) -> nbformat.NotebookNode:
    return nbformat.reads(json.dumps(nb), as_version=4)
