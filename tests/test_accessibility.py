"""Every page of the built site, audited in the browser: axe-core, and a phone-width pass.

axe-core (through ``axe-playwright-python``, which ships its script, so nothing is
fetched) must find no serious or critical violation on any page. At 390 px, the width of a
phone, no page's main column may scroll sideways, and no code cell's text may be cut off.
"""

from __future__ import annotations

import pytest

from tests.test_browser import HTML, browser, site_url  # noqa: F401  (fixtures)

pytestmark = pytest.mark.site
SKIP = {"genindex.html", "search.html"}
PAGES = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
               if "_static" not in p.parts and "_sources" not in p.parts and p.name not in SKIP) \
    if HTML.exists() else []


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


# Two groups for make's two workers, one per edition; each worker starts one browser.
EDITION_PAGES = [pytest.param(p, marks=pytest.mark.xdist_group(
    "accessibility-zh" if p.startswith("zh/") else "accessibility")) for p in PAGES]


def _open(browser, site_url, path: str, width: int, height: int):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site_url) else r.abort())
    page.goto(f"{site_url}/{path}")
    page.wait_for_load_state("networkidle")
    return context, page


@pytest.mark.parametrize("path", EDITION_PAGES)
def test_axe_finds_no_serious_or_critical_violation(browser, site_url, axe, path):  # noqa: F811
    context, page = _open(browser, site_url, path, 1280, 900)
    try:
        results = axe.run(page)
    finally:
        context.close()
    bad = [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["html"][:160])
           for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, f"{path}: " + "; ".join(f"{i} ({impact}, {n} nodes, e.g. {html})"
                                          for i, impact, n, html in bad)


@pytest.mark.parametrize("path", EDITION_PAGES)
def test_nothing_is_cut_off_at_phone_width(browser, site_url, path):  # noqa: F811
    context, page = _open(browser, site_url, path, 390, 844)
    try:
        overflow = page.evaluate("""() => {
            const main = document.querySelector('main') || document.body;
            const wide = main.scrollWidth - main.clientWidth;
            const cut = [...document.querySelectorAll('div.highlight pre')]
                .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
                .map(pre => pre.textContent.split('\\n').sort((a, b) => b.length - a.length)[0]);
            return {wide, cut};
        }""")
    finally:
        context.close()
    assert overflow["wide"] <= 1, f"{path}: the main column scrolls sideways by {overflow['wide']} px"
    assert not overflow["cut"], f"{path}: code cut off at 390 px, e.g. {overflow['cut'][:2]}"


def test_every_figure_has_alt_text_in_words():
    missing = []
    for path in PAGES:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup((HTML / path).read_text(encoding="utf-8"), "html.parser")
        for img in soup.select("main img"):
            alt = (img.get("alt") or "").strip()
            if len(alt) < 8 or alt.lower().endswith((".png", ".svg", ".jpg")) or alt.startswith("data:"):
                missing.append(f"{path}: {img.get('src', '')[:60]} alt={alt!r}")
    assert not missing, "figures without alt text in words:\n" + "\n".join(missing[:20])
