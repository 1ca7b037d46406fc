"""Every page of the built site, in the browser, once: offline, axe-core, and a phone's width.

Each page is loaded once, with every request leaving localhost blocked and recorded, and
three checks run on that load:

- it loads offline: no request outside localhost, no console error;
- axe-core (through ``axe-playwright-python``, which ships its script, so nothing is
  fetched) finds no serious or critical violation (the generated index and search pages
  are Sphinx's own, and are not audited). On a Chinese page, the code cells and their
  printed output (``div.highlight``) are left out: the English page holds the same cells,
  highlighted in the same colours, and is audited with them (their thousands of tokens took
  most of axe's time, its contrast check of each). They are taken out of the page for the
  audit and put back after it, and the sliders' hidden frames are taken out too (axe audits no
  hidden element, and its findings were the same without them; 05.4's 650 frames hold half of
  its elements): axe's own ``exclude`` still visits every node it leaves out, and 05.4's
  Chinese audit took 9.0 to 9.3 s with it, 3.6 to 4.8 s with the cells and frames taken out;
- at 390 px, the width of a phone (the viewport is narrowed after the audit), no page's
  main column scrolls sideways, and no code cell's text is cut off.

The class report's pages (``python -m tinyk.grading report``: the class page and a student's
page, in English and in Chinese) get the same three checks on the same browsers, served
from the folder the report writes; they need no built site. A planted page (an image with no
text alternative, pale text) shows the audit fails where it should.
"""

from __future__ import annotations

import pytest

from tests.test_browser import HTML, VIOLATIONS_ONLY, browser, served, site_url  # noqa: F401  (fixtures)
from tinyk.reports import submitters as roster

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


@pytest.fixture(autouse=True)
def built_site(request):
    if "report_url" not in request.fixturenames and not (HTML / "index.html").exists():
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


# Takes the elements that the selector matches (and every hidden slider frame) out of the page and
# returns how many it took; window.tinykPutBack() puts them back where they were (the hidden frames
# stay out) and counts the selector's matches again.
_TAKE_OUT = """([selector]) => {
    for (const frame of document.querySelectorAll('.tinyk-frame[hidden]')) { frame.remove(); }
    const out = selector ? [...document.querySelectorAll(selector)].map(e => [e, e.parentNode, e.nextSibling])
                         : [];
    for (const [e] of out) { e.remove(); }
    window.tinykPutBack = () => {
        for (const [e, parent, next] of out.reverse()) { parent.insertBefore(e, next); }
        return selector ? document.querySelectorAll(selector).length : 0;
    };
    return out.length;
}"""


def _load_and_audit(browser, axe, base: str, path: str, leave_out: str | None = None,  # noqa: F811
                    audited: bool = True) -> dict:
    """Load ``base/path`` once with every request off ``base`` blocked and recorded; unless not
    ``audited``, run axe-core without what ``leave_out`` selects (put back after it) and the
    hidden slider frames, then narrow to a phone's width and measure what overflows."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    outside, errors = [], []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
               else (outside.append(r.request.url), r.abort()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}/{path}", wait_until="networkidle")
        # What the page itself did: axe's own requests come after (it fetches stylesheets
        # again, one of them by a wrong relative address that answers 404).
        left, failed = list(outside), list(errors)
        violations = []
        if audited:
            taken = page.evaluate(_TAKE_OUT, [leave_out])
            violations = axe.run(page, options=VIOLATIONS_ONLY).response["violations"]
            back = page.evaluate("() => window.tinykPutBack()")
            assert back == taken, f"{path}: {taken} of {leave_out} taken out for the audit, {back} back"
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate(_PHONE_CHECK) if audited else {"wide": 0, "cut": []}
    finally:
        context.close()
    serious = [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["html"][:160])
               for v in violations if v["impact"] in ("serious", "critical")]
    return {"outside": left, "errors": failed, "serious": serious, **overflow}


def _assert_clean(path: str, audit: dict) -> None:
    assert audit["outside"] == [], f"{path}: requests outside localhost: {audit['outside'][:3]}"
    assert audit["errors"] == [], f"{path}: console errors: {audit['errors'][:3]}"
    assert not audit["serious"], f"{path}: " + "; ".join(f"{i} ({impact}, {n} nodes, e.g. {html})"
                                                     for i, impact, n, html in audit["serious"])
    assert audit["wide"] <= 1, f"{path}: at 390 px the main column scrolls by {audit['wide']} px"
    assert not audit["cut"], f"{path}: code cut off at 390 px, e.g. {audit['cut'][:2]}"


@pytest.mark.parametrize("path", EDITION_PAGES)
def test_page_loads_offline_passes_axe_and_fits_a_phone(browser, site_url, axe, path):  # noqa: F811
    leave_out = "div.highlight" if path.startswith("zh/") else None
    audited = path.rsplit("/", 1)[-1] not in NOT_AUDITED
    _assert_clean(path, _load_and_audit(browser, axe, site_url, path, leave_out, audited))


# The class report: the class page and the page of the student with the odd name, each in
# both languages; English on one worker's browser, Chinese on the other's.
_ODD = roster.student_id('Zoë, "Z" <script>')
REPORT_PAGES = [pytest.param(p, marks=pytest.mark.xdist_group("accessibility-zh" if ".zh." in p
                                                              else "accessibility"))
                for p in ("index.html", "index.zh.html", f"students/{_ODD}.html", f"students/{_ODD}.zh.html")]


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory):
    """The class report of test_class_report's synthetic class (40 students), with links to
    each exercise on the course site, as ``python -m tinyk.grading report`` writes it."""
    import csv

    from tests.test_class_report import _class
    from tinyk.courseware.addresses import site_url as course_site
    from tinyk.courseware.checkout import NOTEBOOKS, course_root
    from tinyk.reports import gradebook_schema
    from tinyk.reports.class_report import write_report

    folder = tmp_path_factory.mktemp("class-report")
    with (folder / "grades.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows([gradebook_schema.FIELDS, *_class()])
    root = course_root()
    write_report(folder / "grades.csv", folder / "out", root / NOTEBOOKS, course_site(root))
    return folder / "out"


@pytest.fixture(scope="module")
def report_url(report_folder):
    with served(report_folder) as url:
        yield url


@pytest.mark.parametrize("path", REPORT_PAGES)
def test_class_report_page_loads_offline_passes_axe_and_fits_a_phone(browser, axe, report_url, path):  # noqa: F811
    _assert_clean(path, _load_and_audit(browser, axe, report_url, path))


@pytest.mark.xdist_group("accessibility")
def test_the_audit_fails_a_report_page_with_an_unlabelled_image_and_pale_text(
        browser, axe, report_folder, report_url):  # noqa: F811
    from tinyk.reports.report_pages import page

    chart = '<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><rect width="9" height="9"/></svg>'
    (report_folder / "chart.svg").write_text(chart, encoding="utf-8")
    body = '<h1>Planted</h1>\n<img src="chart.svg">\n<p style="color:#bbb">pale words on white</p>\n'
    planted = page("en", "Planted", body, "index.zh.html")
    (report_folder / "planted.html").write_text(planted, encoding="utf-8")
    found = {rule for rule, *_ in _load_and_audit(browser, axe, report_url, "planted.html")["serious"]}
    assert {"image-alt", "color-contrast"} <= found, found


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
