"""Checks on the built book (``make test`` builds it first, from clean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import sitecheck
from tinyk.course import ROOT, notebook_paths, repository_url

pytestmark = pytest.mark.site
HTML = ROOT / "_build" / "html"


@pytest.fixture(scope="module", autouse=True)
def built_site():
    if not (HTML / "index.html").exists():
        pytest.fail(f"no built site at {HTML}: run `make book` (or `make test`) first")


def test_no_raw_myst_directive_text():
    assert sitecheck.raw_directives(HTML) == []


def test_no_nbgrader_marker_or_hidden_test_code_is_published():
    assert sitecheck.leaked_grading_text(HTML, ROOT / "notebooks") == []


def test_no_broken_internal_link():
    assert sitecheck.broken_links(HTML) == []


def test_every_chapter_notebook_page_has_a_colab_link_to_its_own_notebook():
    problems, targets = sitecheck.colab_links(HTML, ROOT, repository_url())
    assert problems == []
    expected = {f"notebooks/{p.stem}.html": f"notebooks/{p.name}" for p in notebook_paths()}
    assert targets == expected


def test_every_toc_page_was_built():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(s["file"] for s in chapter.get("sections", []))
    missing = [f for f in files if not (HTML / f"{f}.html").exists()]
    assert missing == []
    assert len(files) == len(set(files))


def test_downloads_are_student_versions():
    for path in notebook_paths():
        published = HTML / "_sources" / "notebooks" / path.name
        assert published.exists(), path.name
        assert "### BEGIN SOLUTION" not in published.read_text()


def test_glossary_gives_the_chinese_terms():
    text = sitecheck.visible_text(HTML / "book" / "glossary.html")
    for term in ("分组查询注意力", "旋转位置编码", "均方根归一化", "权重共享"):
        assert term in text


def test_references_page_lists_the_papers_cited():
    text = sitecheck.visible_text(HTML / "book" / "references.html").lower()
    for title in ("root mean square layer normalization", "roformer", "gqa", "glu variants"):
        assert title in text
    attribution = sitecheck.visible_text(HTML / "book" / "05_8_attribution.html")
    assert "Zhang" in attribution and "CC BY-NC-SA 4.0" in attribution


def test_site_has_pages():
    assert len(sitecheck.pages(HTML)) >= 17
    assert Path(HTML / "notebooks").is_dir()
