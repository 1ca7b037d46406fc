"""The built site and the student notebooks point at each other (run after the build).

Every Colab button opens a student version (followed to its file in ``sitecheck``), the
download is that same file, and each exercise's link in a student notebook lands on the
exercise's section of its page, where the solution waits behind a toggle.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from tests import sitecheck
from tests.test_students import _markdown
from tinyk.courseware import addresses, checkout

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site-students")]
ROOT = checkout.ROOT
HTML = ROOT / "_build" / "html"
SOURCES = checkout.notebook_paths()


@pytest.fixture(scope="module", autouse=True)
def built_site():
    if not (HTML / "index.html").exists():
        pytest.fail(f"no built site at {HTML}: run `make book` (or `make test`) first")


def test_every_colab_link_of_the_site_opens_a_clean_student_version():
    problems, targets = sitecheck.colab_links(HTML, ROOT, addresses.repository_url())
    assert problems == []
    english = sorted(target for page, target in targets.items() if not page.startswith("zh/"))
    chinese = sorted(target for page, target in targets.items() if page.startswith("zh/"))
    assert english == sorted(f"{checkout.STUDENTS}/{p.name}" for p in SOURCES)
    assert chinese == sorted(f"{checkout.STUDENTS}/{checkout.ZH}/{p.name}" for p in SOURCES)


@pytest.mark.parametrize("language", checkout.LANGUAGES)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_download_is_the_committed_student_version(source, language):
    html = HTML if language == "en" else HTML / checkout.ZH
    published = html / "_sources" / checkout.NOTEBOOKS / source.name
    assert published.read_bytes() == checkout.student_path(source, language=language).read_bytes()


@pytest.mark.parametrize("language", checkout.LANGUAGES)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_solution_links_land_on_the_exercise_and_its_toggle(source, language):
    edition, html = ("", HTML) if language == "en" else (f"{checkout.ZH}/", HTML / checkout.ZH)
    words = {"en": ("Exercise", "Show solution"), checkout.ZH: ("练习", "显示答案")}[language]
    page_url = f"{addresses.site_url()}{edition}{checkout.NOTEBOOKS}/{source.stem}.html"
    anchors = re.findall(re.escape(page_url) + r"#([\w-]+)\)",
                         _markdown(checkout.student_path(source, language=language)))
    soup = BeautifulSoup((html / checkout.NOTEBOOKS / f"{source.stem}.html").read_text(), "html.parser")
    assert anchors, f"{source.stem}: no exercise links to its solution"
    for anchor in anchors:
        section = soup.find(id=anchor)
        assert section is not None, f"{edition}{source.stem}.html has no #{anchor}"
        heading = section.find(["h2", "h3", "h4"])
        assert section.name == "section" and heading.get_text().startswith(words[0]), anchor
        toggles = section.select("details.hide.above-input")
        assert toggles and words[1] in toggles[0].get_text(), f"#{anchor} has no solution toggle"


@pytest.mark.parametrize("language", checkout.LANGUAGES)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_glossary_and_reference_links_land_on_the_site(source, language):
    """A student notebook's glossary links reach their entry, its citations the references,
    on the site of its language: one link for each glossary term of its source, one for each
    work it cites."""
    edition, html = ("", HTML) if language == "en" else (f"{checkout.ZH}/", HTML / checkout.ZH)
    text, original = _markdown(checkout.student_path(source, language=language)), _markdown(source)
    terms = re.findall(re.escape(f"{addresses.site_url()}{edition}book/glossary.html") + r"#([\w.-]+)\)",
                       text)
    citations = re.findall(re.escape(f"{addresses.site_url()}{edition}book/references.html") + r"\)", text)
    cited = [key for keys in re.findall(r"\{cite(?::[pt])?\}`([^`]+)`", original) for key in keys.split(",")]
    assert len(terms) == len(re.findall(r"\{term\}`", original)), f"{source.stem}: glossary links"
    assert len(citations) == len(cited), f"{source.stem}: links to the references"
    assert terms or citations, f"{source.stem}: no glossary term and no citation"
    assert (html / "book" / "references.html").is_file()
    glossary = BeautifulSoup((html / "book" / "glossary.html").read_text(), "html.parser")
    for anchor in terms:
        entry = glossary.find(id=anchor)
        assert entry is not None and entry.name == "dt", f"{source.stem}: no glossary entry #{anchor}"
