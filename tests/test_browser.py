"""The built site in a real browser: Debian's Chromium, headless, driven by Playwright.

The site is served from ``_build/html`` on localhost; every request to any other host is
blocked and counted, and the count must be zero. Screenshots of each chapter page go to
``artifacts/screenshots/``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tinyk.courseware.addresses import repository_url
from tinyk.courseware.checkout import ROOT, notebook_paths

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("browser")]  # one worker: one browser
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# axe-core's result lists every node each rule passed (3.7 MB for 05.3, most of axe's time in
# the page and in Python): only the violations are read, so only they come back node by node.
VIOLATIONS_ONLY = {"resultTypes": ["violations"]}


def serious_violations(page, selector: str) -> list[tuple[str, list[str]]]:
    """What axe-core finds serious or critical within ``selector`` on the page: each rule's id
    and the HTML of its nodes (the start of each)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context={"include": [[selector]]}, options=VIOLATIONS_ONLY).response["violations"]
    return [(v["id"], [n["html"][:300] for n in v["nodes"]]) for v in found
            if v["impact"] in ("serious", "critical")]
CHAPTER_PAGES = [f"notebooks/{p.stem}.html" for p in notebook_paths()] + ["book/05_8_attribution.html"]


def expected_solutions(page_path: str) -> int:
    """How many answer cells the page's source notebook holds (each shown behind a toggle)."""
    source = ROOT / Path(page_path).with_suffix(".ipynb")
    if not source.exists():
        return 0
    from tinyk.courseware.exercises import is_solution

    return sum(is_solution(c) for c in json.loads(source.read_text(encoding="utf-8"))["cells"])


def expected_hints(page_path: str) -> int:
    """How many hints the page's source notebook offers (``:::{dropdown} Hint k of n``)."""
    source = ROOT / Path(page_path).with_suffix(".ipynb")
    if not source.exists():
        return 0
    from tinyk.courseware.exercises import source_text

    cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
    return sum(line.startswith(":::{dropdown} Hint ") for c in cells if c["cell_type"] == "markdown"
               for line in source_text(c).splitlines())


def expected_sliders(page_path: str) -> int:
    """How many sliders the page's source notebook makes: its code's ``slider(`` calls, each
    shown on the page as frames rendered at build time (as in JupyterLab, test_jupyterlab)."""
    source = ROOT / Path(page_path).with_suffix(".ipynb")
    if not source.exists():
        return 0
    from tinyk.courseware.exercises import source_text

    cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
    return sum(source_text(c).count("slider(") for c in cells if c["cell_type"] == "code")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def served(folder: Path):
    """The address of ``folder`` served over HTTP on localhost, for as long as the block runs."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def site_url():
    if not (HTML / "index.html").exists():
        pytest.fail(f"no built site at {HTML}: run `make book` (or `make test`) first")
    with served(HTML) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `apt-get install chromium` (make test installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, site_url):
    """A page that blocks and records every request leaving localhost, and console errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.external_requests = []
    page.console_errors = []

    def route(r):
        host = urlparse(r.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            page.external_requests.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()


@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_chapter_page_in_a_real_browser(page, site_url, path):
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    has_math = page.locator("div.math, span.math").count() > 0
    if has_math:
        page.wait_for_selector("mjx-container", state="attached", timeout=15_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    # JPEG: a chapter is some 25,000 px tall, and PNG took twice as long to encode it (2.4 s)
    page.screenshot(path=str(SHOTS / (Path(path).stem + ".jpg")), full_page=True, type="jpeg", quality=80)

    assert page.external_requests == [], "requests outside localhost"
    assert page.console_errors == []
    text = page.inner_text("main")
    assert "$$" not in text, "raw display math"
    assert page.locator("mjx-container").count() >= page.locator("div.math, span.math").count()

    toggles = "details.hide.above-input"  # solutions, and figure-drawing code
    labels = [label for label, _ in _details(page, toggles)]
    assert sum("Show solution" in label for label in labels) == expected_solutions(path)
    assert len(labels) >= expected_solutions(path)  # and one for each figure's hidden code
    assert [label for label in labels if not any(words in label for words in ("Show solution",
                                                                              "Show code cell source"))] == []
    hints = "details.sd-dropdown"  # each exercise's hints, collapsed
    titles = [title for title, _ in _details(page, hints)]
    assert len(titles) == expected_hints(path)
    assert [title for title in titles if not title.startswith("Hint ")] == []
    for selector, what in ((toggles, "hidden cell"), (hints, "hint")):
        assert [label for label, opened in _details(page, selector) if opened] == [], \
            f"a {what} is open before any click"
        for i in range(page.locator(selector).count()):  # a real click on each, as a reader's
            page.locator(selector).nth(i).locator("summary").click()
        assert [label for label, opened in _details(page, selector) if not opened] == [], \
            f"a click did not open the {what}"

    sliders = page.locator(".tinyk-slider")
    assert sliders.count() == expected_sliders(path)
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        frames = slider.locator(".tinyk-slider-frames")
        before = frames.screenshot()
        control = slider.locator("input[type=range]").first
        start = control.input_value()
        control.focus()
        page.keyboard.press("ArrowRight" if int(start) < int(control.get_attribute("max")) else "ArrowLeft")
        assert control.input_value() != start
        assert frames.screenshot() != before, f"slider {i} on {path} did not change its figure"

    colab = [a.get_attribute("href") for a in page.locator("a[href*='colab.research.google.com']").all()]
    if path.startswith("notebooks/"):
        owner_repo = repository_url().split("github.com/")[1]
        assert colab == [f"https://colab.research.google.com/github/{owner_repo}/blob/main/"
                         f"{path.replace('notebooks/', 'student/').replace('.html', '.ipynb')}"]
    else:
        assert colab == []



def _details(page, selector: str) -> list[tuple[str, bool]]:
    """Each ``<details>`` element matching ``selector``: its summary's text and whether it is
    open, read in one call."""
    return [tuple(pair) for pair in page.eval_on_selector_all(
        selector, "els => els.map(e => [e.querySelector('summary').innerText, e.open])")]


def expected_quizzes(page_path: str) -> int:
    """How many concept checks the page's source notebook holds (``:::{quiz}``)."""
    source = ROOT / Path(page_path.removeprefix("zh/")).with_suffix(".ipynb")
    if not source.exists():
        return 0
    from tinyk.courseware.exercises import source_text

    cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
    return sum(line.startswith(":::{quiz}") for c in cells if c["cell_type"] == "markdown"
               for line in source_text(c).splitlines())


@pytest.mark.parametrize("path", ["notebooks/05_2_rmsnorm.html", "zh/notebooks/05_2_rmsnorm.html"])
def test_a_quiz_explains_the_choice_made_in_both_editions(page, site_url, path):
    """Nothing chosen, a wrong choice, the right one: each answered in the page, offline, in the
    page's language; axe finds nothing serious in an answered quiz."""
    from tinyk.courseware.catalogues import interface_catalogue, translated
    from tinyk.courseware.quiz import VERDICTS

    zh = translated(interface_catalogue(ROOT)) if path.startswith("zh/") else {}

    def word(english: str) -> str:
        return zh.get(english, english)

    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    page.wait_for_selector(".tinyk-quiz mjx-container", state="attached", timeout=15_000)
    quizzes = page.locator(".tinyk-quiz")
    assert quizzes.count() == expected_quizzes(path) >= 2
    quiz = quizzes.first
    feedback = quiz.locator(".tinyk-quiz-feedback")
    assert feedback.inner_text() == ""
    quiz.locator(".tinyk-quiz-check").click()
    assert feedback.inner_text().strip() == word("Choose an answer first.")
    radios = quiz.locator("input[type=radio]")
    right = [radios.nth(i).get_attribute("data-correct") for i in range(radios.count())].index("true")
    wrong = (right + 1) % radios.count()
    for choice, verdict in ((wrong, VERDICTS["wrong"]), (right, VERDICTS["right"])):
        quiz.locator(f"label[for={radios.nth(choice).get_attribute('id')}]").click()  # a click on the words
        assert radios.nth(choice).is_checked()
        quiz.locator(".tinyk-quiz-check").click()
        explanation = quiz.locator(".tinyk-quiz-explanation").nth(choice).text_content().strip()
        shown = feedback.text_content()
        assert shown.startswith(word(verdict)) and explanation and explanation in shown, (verdict, shown)
        # Chinese words in the Chinese edition's explanation, none in the English one's.
        assert bool(re.search(r"[\u4e00-\u9fff]", explanation)) == bool(zh), f"{explanation!r} on {path}"
    assert quiz.get_attribute("data-state") == "right"
    radios.nth(wrong).focus()  # the keyboard: arrows move the choice, the button is reachable
    page.keyboard.press("ArrowDown")
    assert not radios.nth(wrong).is_checked()
    # What the page did: axe's own requests come after (test_accessibility says why one fails).
    assert page.external_requests == [] and page.console_errors == []
    assert serious_violations(page, f"#{quiz.get_attribute('id')}") == []


def _playground_ready(page, timeout: int = 60_000) -> None:
    """Scroll to the playground, as a reader does (it starts when it nears the screen), and wait
    until it has loaded its model (or given up): a guard, not a measure."""
    page.locator(".tinyk-playground").first.scroll_into_view_if_needed()
    page.wait_for_function("['ready', 'static', 'invalid']"
                           ".includes(document.querySelector('.tinyk-playground')"
                           "?.dataset.state)", timeout=timeout)


def _graph(path: str = "_build/web-static/models"):
    """ONNX Runtime (Python) on the graph the site serves, and its manifest."""
    import onnxruntime

    models = ROOT / path
    manifest = json.loads((models / "tiny.json").read_text(encoding="utf-8"))
    session = onnxruntime.InferenceSession(str(models / "tiny.onnx"), providers=["CPUExecutionProvider"])
    return session, manifest


@pytest.mark.parametrize("path", ["book/playground.html", "zh/book/playground.html"])
def test_the_playground_runs_the_model_in_the_page(page, site_url, path):
    """The page's logits, attention and angles are ONNX Runtime's (Python), to 1e-4; generation
    with the KV cache gives tinyk's greedy tokens; the figures follow the prompt; a bad prompt
    is named; offline, axe-clean, in each edition's words."""
    import numpy as np

    from tinyk.web.playground import EXAMPLE_PROMPT, encode, generate, run_graph

    session, manifest = _graph()
    vocab = manifest["tokenizer"]["vocab"]
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    _playground_ready(page)
    root = page.locator(".tinyk-playground")
    assert root.get_attribute("data-state") == "ready"
    state = "document.querySelector('.tinyk-playground').tinykPlayground"

    def shown() -> dict:
        return page.evaluate(f"(() => {{ const p = {state}; return {{shown: p.shown, next: p.next}}; }})()")

    def check(prompt: str) -> dict:
        got, want = shown(), run_graph(session, manifest, encode(manifest, prompt))
        assert got["shown"]["ids"] == encode(manifest, prompt)
        for key, ours in (("logits", want["logits"][0]), ("attention", want["attention"][:, 0]),
                          ("rope_angles", want["rope_angles"][0]), ("scores", want["scores"][:, 0]),
                          ("residual_norms", want["residual_norms"][:, 0])):
            assert np.abs(np.array(got["shown"][key]) - ours).max() <= 1e-4, key
        return got

    first = check(EXAMPLE_PROMPT)
    # Before the softmax: query 0 may read key 0 alone (weight 1); key 1 is masked (−∞, weight 0).
    want = run_graph(session, manifest, encode(manifest, EXAMPLE_PROMPT))
    assert page.locator(".tinyk-pg-steps tbody tr").count() == len(EXAMPLE_PROMPT)
    page.locator(".tinyk-pg-query").select_option("0")
    rows = [r.split("\t") for r in page.locator(".tinyk-pg-steps tbody tr").all_inner_texts()]
    assert rows[0][2:] == [f"{want['scores'][0, 0, 0, 0, 0]:.3f}", "0", "1.000"]
    assert rows[1][3:] == ["\u2212\u221e", "0.000"]
    norms = [r.split("\t") for r in page.locator(".tinyk-pg-norms tbody tr").all_inner_texts()]
    assert len(norms) == 3  # after the embedding, then after each of the 2 layers: the last token's norm
    assert np.abs(np.array([float(r[1]) for r in norms]) - want["residual_norms"][:, 0, -1]).max() <= 0.006
    words = page.locator(".tinyk-playground .tinyk-pg-panel figcaption").all_inner_texts()
    assert len(words) == 8 and all(bool(re.search(r"[\u4e00-\u9fff]", w)) == path.startswith("zh/")
                                   for w in words if w.lower() != "token"), words
    canvas = page.locator(".tinyk-playground .tinyk-pg-heatmap canvas")
    heatmap = canvas.evaluate(PIXELS)
    cache = page.locator(".tinyk-pg-cachebars").inner_text()
    assert canvas.get_attribute("data-tokens") == str(len(EXAMPLE_PROMPT))
    assert "3,072" in cache and "6,144" in cache  # 12 tokens

    prompt = "5+8=8+5\n9+4=4+9\n6+1="  # typed, then Ctrl+Enter (Enter alone is a line break)
    page.locator(".tinyk-pg-prompt").fill("5+8=8+5")
    page.locator(".tinyk-pg-prompt").press("End")
    for line in ("9+4=4+9", "6+1="):
        page.keyboard.press("Enter")
        page.keyboard.type(line)
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"{state}.shown.ids.length === {len(prompt)}")
    second = check(prompt)
    assert second["shown"]["logits"] != first["shown"]["logits"]
    assert canvas.evaluate(PIXELS) != heatmap
    assert "5,120" in page.locator(".tinyk-pg-cachebars").inner_text()  # 20 tokens: 20·2·2·2·8·4 bytes

    page.locator(".tinyk-pg-go").click()  # greedy, 4 tokens, one call each with the KV cache
    page.wait_for_function(f"{state}.generated.length === 4 && {state}.root.dataset.state === 'ready'")
    greedy = generate(session, manifest, encode(manifest, prompt), 4)
    assert "".join(vocab[i] for i in greedy) == "1+6\n"
    said = page.locator(".tinyk-pg-word[data-word=generated]").text_content()  # for a screen reader
    text = (prompt + f"{said}: 1+6\n").replace("\n", "\u21b5")
    assert page.locator(".tinyk-pg-text").text_content() == text
    assert page.locator(".tinyk-pg-status").inner_text().endswith("1+6\u21b5")  # announced
    final = check(prompt + "1+6\n")  # the panels: the whole text, without the cache
    cached_vs_whole = np.array(final["next"]) - np.array(final["shown"]["logits"][-1])
    assert np.abs(cached_vs_whole).max() <= 1e-4
    assert page.locator(".tinyk-pg-angles tbody tr").count() == len(prompt) + 4

    # Top-k and top-p beside the temperature: sampling from the most likely token alone (k = 1, or a
    # p below its share) is greedy, and the table shows that token's share as 1.
    shares = page.locator(".tinyk-playground .tinyk-pg-next tbody tr td:nth-child(2)")
    page.locator(".tinyk-playground .tinyk-pg-decoding").select_option("sampled")
    page.locator(".tinyk-playground .tinyk-pg-temperature").fill("2")
    assert shares.all_inner_texts()[0] != "1.000"
    for control, value, off in ((".tinyk-pg-topk", "1", "0"), (".tinyk-pg-topp", "0.05", "1")):
        page.locator(f".tinyk-playground {control}").fill(value)
        assert shares.all_inner_texts() == ["1.000"] + ["0.000"] * 9, control
        page.locator(f".tinyk-playground {control}").fill(off)
    page.locator(".tinyk-playground .tinyk-pg-topk").fill("1")
    best = page.evaluate(f"{state}.next.indexOf(Math.max(...{state}.next))")
    page.locator(".tinyk-pg-step").click()
    page.wait_for_function(f"{state}.generated.length === 5 && {state}.root.dataset.state === 'ready'")
    assert page.evaluate(f"{state}.generated[4]") == best
    page.locator(".tinyk-playground .tinyk-pg-topk").fill("0")
    page.locator(".tinyk-playground .tinyk-pg-decoding").select_option("greedy")

    # A prompt the model cannot read: named, every panel emptied, and neither Run nor "One token"
    # generates from the prompt before it; an edited prompt is what "One token" continues.
    page.locator(".tinyk-pg-prompt").fill("hello")
    page.locator(".tinyk-pg-run").click()
    page.wait_for_function(f"{state}.root.dataset.state === 'invalid'")
    status = page.locator(".tinyk-pg-status").inner_text()
    assert '"h"' in status and "1" in status, status
    page.locator(".tinyk-pg-step").click()
    page.wait_for_function(f"{state}.root.dataset.state === 'invalid'")
    assert page.evaluate(f"[{state}.shown, {state}.generated.length, {state}.past]") == [None, 0, None]
    assert page.locator(".tinyk-pg-tokenlist li").count() == 0
    assert page.locator(".tinyk-pg-text").inner_text() == ""
    assert page.locator(".tinyk-pg-next tbody tr").count() == 0
    assert page.locator(".tinyk-pg-heatmap canvas").count() == 0
    page.locator(".tinyk-pg-prompt").fill("4+4=")  # not Run: "One token" reads it first
    page.locator(".tinyk-pg-step").click()
    page.wait_for_function(f"{state}.generated.length === 1 && {state}.root.dataset.state === 'ready'")
    assert page.evaluate(f"{state}.promptIds") == encode(manifest, "4+4=")
    assert page.evaluate(f"{state}.shown.ids.length") == 5

    # Stop: the tokens under way come, then no more. The engine's calls wait for the test's word,
    # so that Stop comes while the first token is under way.
    page.evaluate(f"""() => {{ const p = {state}; const engine = p.engine; p.realEngine = engine;
      window.tinykGate = new Promise((resolve) => {{ window.tinykOpen = resolve; }});
      p.engine = {{ call: (op, args) => op === 'run' ? window.tinykGate.then(() => engine.call(op, args))
                                                      : engine.call(op, args) }}; }}""")
    page.locator(".tinyk-playground .tinyk-pg-count").fill("8")
    page.locator(".tinyk-pg-go").click()
    page.wait_for_function(f"{state}.root.dataset.state === 'busy'")
    page.locator(".tinyk-pg-stop").click()
    page.evaluate("window.tinykOpen()")
    page.wait_for_function(f"{state}.root.dataset.state === 'ready'")
    assert page.evaluate(f"{state}.generated.length") == 2  # the step's token, then Stop's
    assert page.locator(".tinyk-pg-stop").is_disabled()
    status = page.locator(".tinyk-pg-status").inner_text()
    assert status == "Stopped after 2 generated token(s)." or status == "已停止，生成了 2 个 token。", status
    page.evaluate(f"() => {{ const p = {state}; p.engine = p.realEngine; }}")

    # A failed call changes nothing: text, cache and panels stay.
    kept = f"() => [{state}.shown.ids, {state}.generated, {state}.past.cache_length, {state}.past.key]"
    before = page.evaluate(kept)
    page.evaluate(f"""() => {{ const p = {state}; const engine = p.engine;
      p.engine = {{ call: (op, args) => op === 'run' ? Promise.reject(new Error('out of memory'))
                                                       : engine.call(op, args) }}; }}""")
    page.locator(".tinyk-pg-step").click()
    page.wait_for_function(f"{state}.root.dataset.state === 'ready'")
    assert page.evaluate(kept) == before
    status = page.locator(".tinyk-pg-status").inner_text()
    assert "(out of memory)" in status or "\uff08out of memory\uff09" in status, status
    assert page.external_requests == [] and page.console_errors == []
    assert serious_violations(page, ".tinyk-playground") == []


ISOLATED = "[self.crossOriginIsolated, document.querySelector('.tinyk-playground').tinykPlayground.threads]"
# The heatmap as the reader sees it: its canvas's pixels.
PIXELS = "c => c.toDataURL()"
# The service worker's registration, once it is active (a minute's guard against a hang, not a measure).
SERVICE_WORKER = """Promise.race([navigator.serviceWorker.ready.then((r) => r.scope),
  new Promise((resolve) => setTimeout(() => resolve(null), 60000))])"""


# ONNX Runtime's threads in the page (tinyk-playground.js's choice, from bench_browser's measure).
PAGE_THREADS = 1


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_the_service_worker_gives_the_next_page_threads_and_the_same_numbers(page, site_url, edition):
    """A page with a playground registers the book's service worker at its edition's root (a page
    without one registers nothing). The model runs in the page's engine, a worker of its own, on
    one thread; the next page the service worker serves is cross-origin isolated, where a page
    that asks for 2 threads (?threads=2, the benchmark's) gets them, and the logits are still
    ONNX Runtime's (Python) to 1e-4. Offline, no error."""
    import numpy as np

    from tinyk.web.playground import EXAMPLE_PROMPT, encode, run_graph

    page.goto(f"{site_url}/{edition}book/intro.html", wait_until="networkidle")
    assert page.evaluate("navigator.serviceWorker.getRegistrations().then((r) => r.length)") == 0
    page.goto(f"{site_url}/{edition}book/playground.html", wait_until="networkidle")
    _playground_ready(page)
    assert page.evaluate(ISOLATED) == [False, 1]  # this page: as the host served it
    assert [w.url.rsplit("/", 1)[1] for w in page.workers] == ["tinyk-engine.js"]
    assert page.evaluate(SERVICE_WORKER) == f"{site_url}/{edition}"
    page.reload(wait_until="networkidle")
    _playground_ready(page)
    assert page.evaluate(ISOLATED) == [True, PAGE_THREADS] == [True, 1]
    page.goto(f"{site_url}/{edition}book/playground.html?threads=2", wait_until="networkidle")
    _playground_ready(page)
    assert page.evaluate(ISOLATED) == [True, 2]
    session, manifest = _graph()
    ids = encode(manifest, EXAMPLE_PROMPT)
    got = page.evaluate("document.querySelector('.tinyk-playground').tinykPlayground.shown")
    assert got["ids"] == ids
    assert np.abs(np.array(got["logits"]) - run_graph(session, manifest, ids)["logits"][0]).max() <= 1e-4
    assert page.external_requests == [] and page.console_errors == []


# The page's warm-up of the 05.7 model, in calls of its graph (tinyk-playground.js says why).
WARM_CALLS = int(re.search(r"const WARM_CALLS = (\d+);", (ROOT / "book" / "_static" / "tinyk-playground.js")
                           .read_text(encoding="utf-8"))[1])
# A reader's call of the 05.7 model's graph through the page's engine, made once the page has
# started its warm-up: [whether the warm-up was still under way when the call came back, its logits].
CALL_DURING_WARM_UP = """async () => {
  const p = document.querySelector('.tinyk-playground').tinykPlayground;
  await p.ready;
  let over = false;
  p.warmed.then(() => { over = true; });
  const out = await p.engine.call("run", { model: "tiny", config: p.config, ids: p.promptIds, past: null,
                                          keep: null, want: ["logits"] });
  return [!over, Array.from(out.logits.data)];
}"""


def test_the_playground_warms_the_runtime_up_in_pieces_that_a_readers_call_does_not_wait_out(page, site_url):
    """After its first prompt the page runs WARM_CALLS decode calls of the 05.7 model in its engine,
    a piece at a time: a reader's call made meanwhile comes back while the warm-up is still under
    way (it waits for one piece, not for all of them), with the logits of the same call made after
    it, which are ONNX Runtime's (Python) to 1e-4. A page opened with ?warm=0 (the benchmark's
    page without it) runs none."""
    import numpy as np

    from tinyk.web.playground import run_graph

    assert WARM_CALLS == 960
    page.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
    _playground_ready(page)
    during, logits = page.evaluate(CALL_DURING_WARM_UP)
    assert during
    warmed = page.evaluate("document.querySelector('.tinyk-playground').tinykPlayground.warmed")
    assert warmed["calls"] == WARM_CALLS and warmed["seconds"] > 0
    during, after = page.evaluate(CALL_DURING_WARM_UP)
    assert not during and after == logits
    session, manifest = _graph()
    ids = page.evaluate("document.querySelector('.tinyk-playground').tinykPlayground.promptIds")
    assert len(logits) == len(ids) * manifest["config"]["vocab_size"]
    expected = run_graph(session, manifest, ids)["logits"][0]
    assert np.abs(np.array(logits).reshape(expected.shape) - expected).max() <= 1e-4
    page.goto(f"{site_url}/book/playground.html?warm=0", wait_until="networkidle")
    _playground_ready(page)
    assert page.evaluate("document.querySelector('.tinyk-playground').tinykPlayground.ready.then("
                         "() => document.querySelector('.tinyk-playground').tinykPlayground.warmed)") == {
        "calls": 0, "seconds": 0}
    assert page.external_requests == [] and page.console_errors == []


def test_without_webassembly_the_playground_shows_the_build_run(browser, site_url):
    """No WebAssembly: the runtime is never fetched; the panels show the example computed at
    build time, the typing controls are off, the layer and head still change the figure."""
    context = browser.new_context()
    context.add_init_script("delete window.WebAssembly;")
    page = context.new_page()
    requested, errors = [], []
    page.on("request", lambda r: requested.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
        _playground_ready(page)
        example = json.loads((ROOT / "_build" / "web-static" / "models" / "tiny-example.json").read_text())
        assert page.locator(".tinyk-playground").get_attribute("data-state") == "static"
        assert "WebAssembly" in page.locator(".tinyk-pg-status").inner_text()
        assert page.locator(".tinyk-playground .tinyk-pg-tokenlist li").count() == len(example["ids"])
        assert page.locator(".tinyk-pg-text mark").text_content().endswith(": 7+3\u21b5")
        assert page.locator(".tinyk-pg-prompt").is_disabled() and page.locator(".tinyk-pg-go").is_disabled()
        canvas = page.locator(".tinyk-playground .tinyk-pg-heatmap canvas")
        before = canvas.evaluate(PIXELS)
        page.locator(".tinyk-playground .tinyk-pg-head").select_option("2")
        assert canvas.evaluate(PIXELS) != before
        chat = page.locator(".tinyk-chat")  # SmolLM2's chat says so before any click
        assert chat.get_attribute("data-state") == "static" and page.locator(".tinyk-chat-load").is_disabled()
        assert "WebAssembly" in page.locator(".tinyk-chat-status").inner_text()
        assert [u for u in requested if "/ort/" in u or u.endswith(".onnx") or "/smollm2/" in u] == []
        assert errors == []
    finally:
        context.close()


def test_a_chapters_playground_loads_the_runtime_only_when_the_reader_comes_to_it(page, site_url):
    """05.6 embeds the live model near its end: the runtime is fetched once it nears the screen."""
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{site_url}/notebooks/05_6_head_protocol.html", wait_until="networkidle")
    playground = page.locator(".tinyk-playground")
    assert playground.count() == 1 and playground.get_attribute("data-parts") == "tokens next generate"
    assert [u for u in requested if "/_static/ort/" in u or u.endswith(".onnx")] == []
    playground.scroll_into_view_if_needed()
    _playground_ready(page)
    assert playground.get_attribute("data-state") == "ready"
    assert sorted({u.rsplit("/", 1)[1] for u in requested if "/_static/ort/" in u}) == [
        "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm", "ort.wasm.min.js"]
    assert page.locator(".tinyk-pg-next tbody tr").count() == 10
    assert page.external_requests == [] and page.console_errors == []
