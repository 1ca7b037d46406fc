"""The course's own format: one repository address, setup cells, notebooks without outputs."""

from __future__ import annotations

import json
import shutil

import pytest

from tinyk.courseware import addresses, checkout, course
from tinyk.courseware.exercises import MARKERS, book_version, is_solution, is_test, source_text
from tinyk.courseware.student_versions import released

NOTEBOOKS = checkout.notebook_paths()


def test_repository_address_agrees_everywhere():
    assert course.check() == []


def test_set_repo_rewrites_every_copy(tmp_path):
    for name in ("_config.yml", "pyproject.toml"):
        shutil.copy(checkout.ROOT / name, tmp_path / name)
    shutil.copytree(checkout.ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(checkout.ROOT / "locale", tmp_path / "locale")  # the Chinese student notebooks' words
    (tmp_path / "book").mkdir()
    shutil.copy(checkout.ROOT / "book" / "references.bib", tmp_path / "book")
    course.set_repo("https://github.com/someone/their-fork", tmp_path)
    assert addresses.repository_url(tmp_path) == "https://github.com/someone/their-fork"
    assert course.check(tmp_path) == []
    first = json.loads(next((tmp_path / "notebooks").glob("*.ipynb")).read_text())["cells"][0]
    assert "https://github.com/someone/their-fork" in source_text(first)
    (tmp_path / "pyproject.toml").write_text("[project.urls]\nRepository = \"https://x.org/a/b\"\n")
    assert any("pyproject.toml" in p for p in course.check(tmp_path))
    with pytest.raises(ValueError, match="OWNER/NAME"):
        course.set_repo("not a url", tmp_path)


def test_there_is_a_notebook_per_runnable_section():
    stems = [p.stem for p in NOTEBOOKS]
    for n in (1, 2, 3, 4, 5, 6, 7, 9):
        assert any(s.startswith(f"05_{n}_") for s in stems), n


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_format(path):
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code), "commit without outputs"
    setup = code[0]
    assert source_text(setup).startswith(addresses.SETUP_TITLE)
    assert setup["metadata"]["cellView"] == "form" and "remove-cell" in setup["metadata"]["tags"]
    ids = [c.get("id") for c in cells]
    assert None not in ids and len(set(ids)) == len(ids), "every cell has its own id (student versions "\
        "made from a notebook without them would get random ones)"
    title = next(c for c in cells if c["cell_type"] == "markdown")
    section = path.stem.split("_")[1]
    assert source_text(title).startswith(f"# 05.{section} "), "title keeps the section number"
    stray = [source_text(c)[:60] for c in cells if any(m in source_text(c) for m in MARKERS)
             and not (is_solution(c) or is_test(c))]
    assert stray == [], "markers outside an exercise cell"


SAMPLE = {"cells": [
    {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade": False, "locked": False,
                                                    "grade_id": "a", "schema_version": 3}},
     "source": "# @title Answer\n### BEGIN SOLUTION\nx = 6\n### END SOLUTION\n", "outputs": [],
     "execution_count": None},
    {"cell_type": "code", "metadata": {"nbgrader": {"solution": False, "grade": True, "locked": True,
                                                    "grade_id": "t", "points": 1, "schema_version": 3}},
     "source": "assert x == 6\n### BEGIN HIDDEN TESTS\nassert x * 2 == 12\n### END HIDDEN TESTS\n",
     "outputs": [], "execution_count": None},
]}


def test_book_version_keeps_answers_drops_markers_and_hidden_tests():
    book = book_version(SAMPLE)
    assert source_text(book["cells"][0]) == "x = 6"
    assert "hide-input" in book["cells"][0]["metadata"]["tags"]
    assert source_text(book["cells"][1]) == "assert x == 6"


def test_student_version_stubs_answers_and_drops_hidden_tests():
    student = released(SAMPLE)
    stub = "# @title Answer\n# YOUR CODE HERE\nraise NotImplementedError()\n"  # nbgrader's, as released
    assert source_text(student["cells"][0]) == stub
    assert source_text(student["cells"][1]) == "assert x == 6\n"
