"""Every page of the built site, in the browser, once: offline, axe-core, and a phone's width.

Each page is loaded once, with every request leaving localhost blocked and recorded, and
three checks run on that load:

- it loads offline: no request outside localhost, no console error;
- axe-core (through ``axe-playwright-python``, which ships its script, so nothing is
  fetched) finds no serious or critical violation (the generated index and search pages
  are Sphinx's own, and are not audited). On a Chinese page, the code cells and their
  printed output (``div.highlight``) are left out: the English page holds the same cells,
  highlighted in the same colours, and is audited with them (their thousands of tokens took
  most of axe's time, its contrast check of each);
- at 390 px, the width of a phone (the viewport is narrowed after the audit), no page's
  main column scrolls sideways, and no code cell's text is cut off.
"""

from __future__ import annotations

import pytest

from tests.test_browser import HTML, browser, site_url  # noqa: F401  (fixtures)

pytestmark = pytest.mark.site
NOT_AUDITED = {"genindex.html", "search.html"}  # Sphinx's generated pages: offline check only
ALL_PAGES = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
                   if "_static" not in p.parts and "_sources" not in p.parts) if HTML.exists() else []
PAGES = [p for p in ALL_PAGES if p.rsplit("/", 1)[-1] not in NOT_AUDITED]


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


# Two groups for make's two workers, one per edition; each worker starts one browser. Without
# a built site, one stand-in that the built_site fixture fails (with no page at all, pytest
# would skip the test, and the module would pass having audited nothing).
EDITION_PAGES = [pytest.param(p, marks=pytest.mark.xdist_group(
    "accessibility-zh" if p.startswith("zh/") else "accessibility")) for p in ALL_PAGES] or ["index.html"]


@pytest.fixture(scope="module", autouse=True)
def built_site():
    if not (HTML / "index.html").exists():
        pytest.fail(f"no built site at {HTML}: run `make book` (or `make test`) first")

_PHONE_CHECK = """() => {
    const main = document.querySelector('main') || document.body;
    const wide = main.scrollWidth - main.clientWidth;
    const cut = [...document.querySelectorAll('div.highlight pre')]
        .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
        .map(pre => pre.textContent.split('\\n').sort((a, b) => b.length - a.length)[0]);
    return {wide, cut};
}"""


def test_the_offline_check_covers_both_editions():
    assert len(ALL_PAGES) >= 2 * 17, ALL_PAGES
    assert sum(p.startswith("zh/") for p in ALL_PAGES) * 2 == len(ALL_PAGES)


@pytest.mark.parametrize("path", EDITION_PAGES)
def test_page_loads_offline_passes_axe_and_fits_a_phone(browser, site_url, axe, path):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    outside, errors = [], []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site_url)
               else (outside.append(r.request.url), r.abort()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{site_url}/{path}", wait_until="networkidle")
        # What the page itself did: axe's own requests come after (it fetches stylesheets
        # again, one of them by a wrong relative address that answers 404).
        left, failed = list(outside), list(errors)
        audited = path.rsplit("/", 1)[-1] not in NOT_AUDITED
        scope = {"exclude": [["div.highlight"]]} if path.startswith("zh/") else None
        violations = axe.run(page, context=scope).response["violations"] if audited else []
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate(_PHONE_CHECK) if audited else {"wide": 0, "cut": []}
    finally:
        context.close()
    assert left == [], f"{path}: requests outside localhost: {left[:3]}"
    assert failed == [], f"{path}: console errors: {failed[:3]}"
    bad = [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["html"][:160])
           for v in violations if v["impact"] in ("serious", "critical")]
    assert not bad, f"{path}: " + "; ".join(f"{i} ({impact}, {n} nodes, e.g. {html})"
                                          for i, impact, n, html in bad)
    assert overflow["wide"] <= 1, f"{path}: at 390 px the main column scrolls by {overflow['wide']} px"
    assert not overflow["cut"], f"{path}: code cut off at 390 px, e.g. {overflow['cut'][:2]}"


def test_every_figure_has_alt_text_in_words():
    assert PAGES
    missing = []
    for path in PAGES:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup((HTML / path).read_text(encoding="utf-8"), "html.parser")
        for img in soup.select("main img"):
            alt = (img.get("alt") or "").strip()
            if len(alt) < 8 or alt.lower().endswith((".png", ".svg", ".jpg")) or alt.startswith("data:"):
                missing.append(f"{path}: {img.get('src', '')[:60]} alt={alt!r}")
    assert not missing, "figures without alt text in words:\n" + "\n".join(missing[:20])
