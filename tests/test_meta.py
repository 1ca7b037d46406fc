"""Tests of the tests: a failing cell fails nbmake and the book build; leaks fail the site checks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sitecheck
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


def test_nbmake_fails_on_a_failing_cell(tmp_path):
    _notebook(tmp_path / "scratch.ipynb", FAILING)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake",
                          str(tmp_path / "scratch.ipynb")], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0, run.stdout
    assert "deliberately failing cell" in run.stdout
    _notebook(tmp_path / "fine.ipynb", ["x = 1"])
    ok = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake",
                         str(tmp_path / "fine.ipynb")], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout


def _scratch_book(tmp_path: Path, sources: list[str], tags: list[str] | None = None
                  ) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext")
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "book" / "intro.md").write_text("# Scratch book\n")
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "scratch.ipynb", sources, tags)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: notebooks/scratch\n")
    return subprocess.run([str(BIN / "jupyter-book"), "build", "--all", "-W", "-n", "--keep-going",
                           str(tmp_path)], capture_output=True, text=True)


def test_book_build_fails_on_a_failing_cell(tmp_path):
    run = _scratch_book(tmp_path, FAILING)
    assert run.returncode != 0
    assert "deliberately failing cell" in run.stdout + run.stderr


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
