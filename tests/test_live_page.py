"""The live page and the quizzes as a reader meets them: in the dark theme, by keyboard, on a
phone, without WebAssembly; the map of the model; the site's icon.

- Dark theme: the playground's, the chat's and the quizzes' controls follow the theme (their text
  at least 4.5:1 on their own background), and axe-core finds nothing serious on the live page
  with its panels drawn, nor on 05.2 with a quiz answered. A planted button with Bootstrap's
  defaults shows both checks fail where they should.
- Keyboard: no formula is a Tab stop on 05.2 (a reader's saved MathJax setting that puts them back
  shows the count sees them), and "Check answer" is the next stop after a quiz's choices (05.2,
  05.3); a verdict is cleared when the choice changes.
- Phone (390 px): the 05.7 model's runtime and graph wait for a tap on a button that says their
  size; SmolLM2's answer is shown under its form, in view, with the chat template's tokens folded,
  and the memory the chat says it takes is the tab's, measured.
- Without WebAssembly the chat says so once and shows no empty form or panels.
- The map of the model (the modelmap directive) links each block to its section and to panels that
  exist on the page, in both editions.
- Every page names its icon, and the icon is served (no 404 for a tab's icon).
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from tests.test_browser import (  # noqa: F401  (fixtures)
    HTML,
    ROOT,
    browser,
    page,
    serious_violations,
    site_url,
)

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from tinyk_playground import CHAT_MEMORY_GB, ORT_FILES

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("browser-live")]
PHONE = {"width": 390, "height": 844}
PLAYGROUND = "document.querySelector('.tinyk-playground')"
CHAT = "document.querySelector('.tinyk-chat').tinykChat"
WEB = ROOT / "_build" / "web-static"

# The contrast of each visible, enabled control's text on the colour behind it (WCAG's formula),
# for the controls ``selector`` matches: [[its text, ratio], ...].
_CONTRAST = """(selector) => {
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => [r, g, b].map((v) => v / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const colour = rgb(getComputedStyle(n).backgroundColor);
      if (colour.length < 4 || colour[3] > 0) { return colour; }
    }
    return rgb(getComputedStyle(document.body).backgroundColor);
  };
  return [...document.querySelectorAll(selector)]
    .filter((c) => !c.disabled && c.offsetParent !== null)
    .map((c) => {
      const [a, b] = [luminance(rgb(getComputedStyle(c).color)), luminance(behind(c))];
      return [c.textContent.trim() || c.className, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
    });
}"""
CONTROLS = ".tinyk-playground button, .tinyk-chat button, .tinyk-quiz-check, .tinyk-live-load, .tinyk-planted"


def _dark(browser, **options):  # noqa: F811
    """A page in the theme's dark mode, as a reader who chose it (the theme keeps the choice)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **options)
    context.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    return context


@pytest.mark.parametrize("path", ["book/playground.html", "zh/book/playground.html",
                                  "notebooks/05_2_rmsnorm.html"])
def test_in_the_dark_theme_the_controls_follow_it_and_axe_finds_nothing_serious(browser, site_url, path):  # noqa: F811
    context = _dark(browser)
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        tab.goto(f"{site_url}/{path}", wait_until="networkidle")
        assert tab.evaluate("document.documentElement.dataset.theme") == "dark"
        if "playground" in path:
            tab.locator(".tinyk-playground").scroll_into_view_if_needed()
            tab.wait_for_function(f"{PLAYGROUND}.dataset.state === 'ready'", timeout=120_000)
            scope = "main"
        else:
            tab.wait_for_selector(".tinyk-quiz mjx-container", state="attached", timeout=15_000)
            quiz = tab.locator(".tinyk-quiz").first
            quiz.locator("input[type=radio]").first.check()
            quiz.locator(".tinyk-quiz-check").click()
            scope = f"#{quiz.get_attribute('id')}"
        ratios = tab.evaluate(_CONTRAST, CONTROLS)
        assert len(ratios) >= (3 if "playground" in path else 1), ratios
        assert min(r for _, r in ratios) >= 4.5, ratios  # they were 1.3:1 (rgb(33, 37, 41) on #121212)
        assert serious_violations(tab, scope) == []
        # A button with Bootstrap's defaults alone, as every control had: both checks see it.
        tab.evaluate("""() => { const b = document.createElement('button');
          b.className = 'btn btn-sm tinyk-planted'; b.textContent = 'Planted';
          document.querySelector('main').prepend(b); }""")
        planted = [r for name, r in tab.evaluate(_CONTRAST, CONTROLS) if name == "Planted"]
        assert len(planted) == 1 and planted[0] < 3, planted
        assert "color-contrast" in [rule for rule, _ in serious_violations(tab, ".tinyk-planted")]
        assert errors == []
    finally:
        context.close()


# Tab from the top of the page to its end: what each stop is ([tag, class, inside a formula,
# inside the "On this page" list]).
_TAB_STOPS = """() => {
  const e = document.activeElement;
  return e === null || e === document.body ? null
    : [e.tagName, String(e.className), Boolean(e.closest('mjx-container')),
       Boolean(e.closest('.bd-sidebar-secondary'))];
}"""


def _tab_stops(page, limit: int = 600) -> list:  # noqa: F811
    """Every Tab stop of a page just loaded (nothing focused yet), in order, until the focus
    leaves the page or comes back to the first stop."""
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = page.evaluate(_TAB_STOPS)
        if stop is None or (stops and stop == stops[0] and len(stops) > 1):
            break
        stops.append(stop)
    return stops


# The formulas a reader can see (those of a hidden quiz explanation or toggle are not Tab stops).
_SHOWN_FORMULAS = ("() => [...document.querySelectorAll('mjx-container')]"
                   ".filter((m) => m.getClientRects().length).length")


def test_formulas_are_not_tab_stops_on_05_2(browser, site_url):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(f"{site_url}/notebooks/05_2_rmsnorm.html", wait_until="networkidle")
        tab.wait_for_selector("mjx-container", state="attached", timeout=15_000)
        shown = tab.evaluate(_SHOWN_FORMULAS)
        stops = _tab_stops(tab)
        print(f"05.2: {len(stops)} Tab stops, {shown} formulas shown")
        assert shown > 80 and stops, (shown, len(stops))
        assert [s for s in stops if s[2]] == []
        # A reader who turned MathJax's "Include in Tab Order" on keeps it: the count sees each formula.
        tab.evaluate("localStorage.setItem('MathJax-Menu-Settings', JSON.stringify({inTabOrder: true}))")
        tab.reload(wait_until="networkidle")
        tab.wait_for_selector("mjx-container", state="attached", timeout=15_000)
        again = _tab_stops(tab, limit=len(stops) + shown + 50)
        formulas = sum(s[2] for s in again)  # 91 of the 115 shown, with the page's 85 other stops
        # The page's other stops are the same, in the same order. The "On this page" list is set
        # aside: its section's sub-entries open when the theme's scroll-spy marks the section,
        # which may happen before or after the Tab walk reaches the list (8 or 12 links on 05.2).
        assert formulas > 80, formulas
        assert [s for s in again if not s[2] and not s[3]] == [s for s in stops if not s[3]]
    finally:
        context.close()


@pytest.mark.parametrize("path", ["notebooks/05_2_rmsnorm.html", "notebooks/05_3_rope.html",
                                  "zh/notebooks/05_3_rope.html"])
def test_check_answer_is_the_next_tab_stop_after_the_choices_and_a_new_choice_clears_the_verdict(
        page, site_url, path):  # noqa: F811
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    page.wait_for_selector(".tinyk-quiz mjx-container", state="attached", timeout=15_000)
    quizzes = page.locator(".tinyk-quiz")
    assert quizzes.count() >= 2
    for i in range(quizzes.count()):
        quiz = quizzes.nth(i)
        radios = quiz.locator("input[type=radio]")
        radios.first.focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className").startswith("tinyk-quiz-check"), (path, i)
    quiz = quizzes.first
    radios = quiz.locator("input[type=radio]")
    feedback = quiz.locator(".tinyk-quiz-feedback")
    radios.nth(0).check()
    quiz.locator(".tinyk-quiz-check").click()
    assert feedback.inner_text().strip() != "" and quiz.get_attribute("data-state") in ("right", "wrong")
    radios.nth(0).focus()
    page.keyboard.press("ArrowDown")  # the keyboard's way to another choice
    assert radios.nth(1).is_checked()
    assert feedback.inner_text() == "" and quiz.get_attribute("data-state") is None
    quiz.locator(".tinyk-quiz-check").click()  # the new choice's own verdict
    assert feedback.inner_text().strip() != ""
    assert page.external_requests == [] and page.console_errors == []


def test_on_a_phone_the_05_7_model_waits_for_a_tap_that_says_its_size(browser, site_url):  # noqa: F811
    context = browser.new_context(viewport=PHONE)
    tab = context.new_page()
    requested = []
    tab.on("request", lambda r: requested.append(r.url))
    try:
        tab.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
        root = tab.locator(".tinyk-playground")
        root.scroll_into_view_if_needed()
        # Two frames: where a wide screen's observer would have been told the playground is near.
        tab.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        assert root.get_attribute("data-state") == "waiting"
        heavy = [u for u in requested if "/_static/ort/" in u or u.endswith(".onnx") or "/smollm2/" in u]
        assert heavy == []
        ort = HTML / "_static" / "ort"
        manifest = json.loads((WEB / "models" / "tiny.json").read_text(encoding="utf-8"))
        size = (sum((ort / n).stat().st_size for n in ORT_FILES)
                + (WEB / "models" / manifest["onnx"]).stat().st_size)
        button = tab.locator(".tinyk-live-load")
        assert button.inner_text() == f"Load the model, {size / 1e6:.0f} MB"
        assert f"{size / 1e6:.0f} MB" in tab.locator(".tinyk-pg-status").inner_text()
        responses = []  # their bodies are read below, in the test's own flow, not in the event's handler
        tab.on("response", lambda r: responses.append(r) if r.ok else None)
        button.click()
        tab.wait_for_function(f"{PLAYGROUND}.dataset.state === 'ready'", timeout=120_000)
        assert button.count() == 0 and tab.evaluate("document.activeElement.className") == "tinyk-pg-prompt"
        fetched = {r.url.split("?")[0].rsplit("/", 1)[1]: len(r.body()) for r in responses
                   if "/_static/ort/" in r.url or "/_static/models/" in r.url}
        assert sorted(fetched) == sorted([*ORT_FILES, manifest["onnx"]])  # what the button said
        assert sum(fetched.values()) == size, fetched
        assert tab.locator(".tinyk-pg-next tbody tr").count() == 10
    finally:
        context.close()


def test_without_webassembly_the_chat_says_so_once_and_shows_no_empty_panel(browser, site_url):  # noqa: F811
    context = browser.new_context()
    context.add_init_script("delete window.WebAssembly;")
    tab = context.new_page()
    try:
        tab.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
        chat = tab.locator(".tinyk-chat")
        assert chat.get_attribute("data-state") == "static"
        assert "WebAssembly" in chat.locator(".tinyk-chat-status").inner_text()
        parts = chat.locator(".tinyk-pg-panel, .tinyk-chat-form, .tinyk-chat-progress")
        assert parts.count() == 8  # 5 figures, the template's box, the form, the progress bar
        assert [i for i in range(parts.count()) if parts.nth(i).is_visible()] == []
        # With WebAssembly, the same tab shows them (the count above is not of nothing).
        context.clear_cookies()
        other = browser.new_context()
        try:
            wasm = other.new_page()
            wasm.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
            shown = wasm.locator(".tinyk-chat .tinyk-pg-panel, .tinyk-chat-form")
            assert sum(shown.nth(i).is_visible() for i in range(shown.count())) == 7
        finally:
            other.close()
    finally:
        context.close()


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_the_map_links_each_block_to_its_section_and_to_panels_on_the_page(page, site_url, edition):  # noqa: F811
    page.goto(f"{site_url}/{edition}book/playground.html", wait_until="networkidle")
    blocks = page.locator(".tinyk-map li.tinyk-map-block")
    assert blocks.count() == 1 + 6 + 2  # embedding; a layer's six blocks; the final norm and the head
    assert page.locator(".tinyk-map li.tinyk-map-layers li.tinyk-map-block").count() == 6
    tiny = json.loads((WEB / "models" / "tiny.json").read_text(encoding="utf-8"))["config"]
    smol = json.loads((WEB / "smollm2" / "smollm2.json").read_text(encoding="utf-8"))["config"]
    repeat = page.locator(".tinyk-map-repeat").inner_text()
    assert (tiny["n_layers"], smol["n_layers"]) == (2, 30) and "2" in repeat and "30" in repeat
    anchors = page.locator(".tinyk-map a[href^='#']").evaluate_all("as => as.map(a => a.hash.slice(1))")
    assert len(anchors) == (1 + 5 + 2) + (1 + 3 + 2)  # the 05.7 model's panels, then the chat's
    missing = page.evaluate(
        "ids => ids.filter(id => !document.getElementById(id)?.matches('.tinyk-pg-panel'))", anchors)
    assert missing == []
    # Every panel of the playground and of the chat is reachable from its place on the map: the
    # residual stream's norm from the residual that ends a layer, after which the panel measures it.
    panels = page.locator(".tinyk-playground .tinyk-pg-panel, .tinyk-chat .tinyk-pg-panel").evaluate_all(
        "ps => ps.map(p => p.id)")
    assert len(panels) == 8 + 6 and set(panels) == set(anchors), sorted(set(panels) ^ set(anchors))
    residual = page.locator(".tinyk-map li.tinyk-map-layers li.tinyk-map-block").nth(5)
    assert residual.locator("a[href='#tinyk-pg-1-residual']").count() == 1
    assert residual.locator("a[href^='#tinyk-chat-']").count() == 0  # the chat has no such panel
    said = residual.locator(".tinyk-map-links").inner_text().replace("\u2019", "'")  # the site's typography
    assert said.endswith(("The residual stream's norm.", "残差流的范数。")), said
    sections = page.locator(".tinyk-map a:not([href^='#'])").evaluate_all("as => as.map(a => a.href)")
    assert len(sections) == 10 and all(f"/{edition}notebooks/05_" in s for s in sections), sections
    for url in set(sections):
        assert page.request.get(url).status == 200, url
    text = page.locator(".tinyk-map").inner_text()
    assert bool(re.search(r"[\u4e00-\u9fff]", text)) == (edition == "zh/")
    # The Chinese map's punctuation is full-width, and its links name a section as the pages do
    # (第 05.3 节); the English map's half-width marks show that the measure finds them.
    marks = re.findall(r"[,:;()]", text)
    assert (marks == []) == (edition == "zh/"), marks
    assert ("讲解见第 05.3 节、第 05.4 节。" in text) == (edition == "zh/"), text
    page.locator(".tinyk-map a[href='#tinyk-chat-1-attention']").click()
    assert page.evaluate("location.hash") == "#tinyk-chat-1-attention"
    assert page.external_requests == [] and page.console_errors == []
    assert serious_violations(page, ".tinyk-map") == []


@pytest.mark.parametrize("path", ["book/intro.html", "zh/book/intro.html", "notebooks/05_2_rmsnorm.html"])
def test_every_page_names_an_icon_that_is_served(page, site_url, path):  # noqa: F811
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    icons = page.locator("link[rel~=icon]").evaluate_all("ls => ls.map(l => l.href)")
    assert len(icons) == 1, icons
    answer = page.request.get(icons[0])
    assert answer.status == 200 and answer.headers["content-type"].startswith("image/"), icons
    assert missing == []
    if path.endswith("intro.html"):  # the introduction points to the live page
        assert page.locator("main a[href$='playground.html']").count() >= 1


def _renderer_bytes() -> int:
    """The resident memory of this test's Chromium renderers (its pages' processes), in bytes."""
    import psutil

    ours = psutil.Process(os.getpid()).children(recursive=True)
    return sum(p.memory_info().rss for p in ours
               if any(a == "--type=renderer" for a in p.cmdline()))


@pytest.mark.slow
def test_on_a_phone_the_chat_answers_in_view_and_takes_the_memory_it_says(browser, site_url):  # noqa: F811
    context = browser.new_context(viewport=PHONE)
    tab = context.new_page()
    try:
        tab.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
        chat = tab.locator(".tinyk-chat")
        files = json.loads((WEB / "smollm2" / "smollm2.json").read_text(encoding="utf-8"))["files"]
        said = chat.locator(".tinyk-chat-size").inner_text()
        assert f"{sum(f['bytes'] for f in files) / 1e6:.0f} MB" in said and f"{CHAT_MEMORY_GB} GB" in said
        assert chat.locator(".tinyk-chat-template").evaluate("d => d.open") is False  # folded on a phone
        # The answer's panel comes right after the form.
        assert chat.locator(".tinyk-chat-form + figure .tinyk-chat-reply").count() == 1
        before = _renderer_bytes()
        chat.locator(".tinyk-chat-load").click()
        tab.wait_for_function("document.querySelector('.tinyk-chat').dataset.state === 'ready'",
                              timeout=300_000)
        chat.locator(".tinyk-chat-limit").fill("8")
        chat.locator(".tinyk-chat-answer").click()
        tab.wait_for_function(f"{CHAT}.stats !== null && {CHAT}.root.dataset.state === 'ready'",
                              timeout=300_000)
        used = _renderer_bytes() - before
        reply = chat.locator(".tinyk-chat-reply")
        assert reply.inner_text().startswith("The capital of France")
        box = reply.bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + min(box["height"], 40) <= PHONE["height"], box
        print(f"SmolLM2 in the tab: {used / 1e9:.2f} GB more resident memory in the renderers")
        assert 0.5e9 * CHAT_MEMORY_GB <= used <= 1.5e9 * CHAT_MEMORY_GB, used
    finally:
        context.close()
