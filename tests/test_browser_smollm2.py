"""SmolLM2 (05.10) as the site serves it: the files the book build wrote, run by ONNX Runtime
(Python) against float32 tinyk; and the playground page's chat in headless Chromium: fetched only
when asked, its greedy answer token for token tinyk's, offline, axe-clean, in each edition's words.

One browser test loads the model, as loading it is the costly part: about 100 MB from localhost
and an ONNX Runtime session. It loads it as on a reader's second visit: in a page the book's
service worker served, on ONNX Runtime's threads. The site's own server and the blocking of every
other host are tests/test_browser.py's.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlparse

import pytest

from tests.test_browser import (  # noqa: F401  (fixtures)
    PAGE_THREADS,
    PIXELS,
    SERVICE_WORKER,
    browser,
    page,
    serious_violations,
    site_url,
)
from tinyk.courseware.checkout import ROOT

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("browser-smollm2")]
STATE = "document.querySelector('.tinyk-chat').tinykChat"
# The page's warm-up of SmolLM2 after Load, in calls of its graph (tinyk-playground.js says why).
SMOLLM2_WARM_CALLS = int(re.search(r"const SMOLLM2_WARM_CALLS = (\d+);", (
    ROOT / "book" / "_static" / "tinyk-playground.js").read_text(encoding="utf-8"))[1])
WEB = ROOT / "_build" / "web-static" / "smollm2"


def _state(page, states: str, timeout: int = 180_000) -> str:  # noqa: F811
    """Wait until the chat's state is one of ``states`` (a guard against a hang, not a measure)."""
    page.wait_for_function(f"{states.split()!r}.includes(document.querySelector('.tinyk-chat').dataset.state)",
                           timeout=timeout)
    return page.locator(".tinyk-chat").get_attribute("data-state")


def _tinyk_answer(prompt_ids: list[int], eos: int) -> list[int]:
    """tinyk's greedy answer in PyTorch, up to its end-of-turn token."""
    import torch

    from tinyk import generate
    from tinyk.interop.gguf import load_gguf, smollm2_path

    model, _ = load_gguf(smollm2_path())
    tokens = generate(model, torch.tensor([prompt_ids]), max_new_tokens=24, temperature=0)[0].tolist()
    return tokens[:tokens.index(eos)] if eos in tokens else tokens


def test_smollm2_answers_in_the_page_as_tinyk_does(page, site_url):  # noqa: F811
    import numpy as np

    from tinyk.interop.gguf import load_tokenizer, smollm2_path
    from tinyk.web.onnx_web import session
    from tinyk.web.playground import run_graph

    manifest = json.loads((WEB / "smollm2.json").read_text(encoding="utf-8"))
    total = sum(f["bytes"] for f in manifest["files"])
    params = 135_000_000
    data = sum(f["bytes"] for f in manifest["files"] if ".data." in f["path"])
    assert data < 4 * params / 5 and total < 150_000_000  # under a fifth of float32; under 150 MB in all
    graph = manifest["files"][0]["bytes"]
    # tinyk.web.onnx_web's docstrings
    assert f"{(graph + data) / 1e6:.1f} MB" == "99.3 MB" and graph < 650_000
    assert manifest["config"]["n_layers"] == 30 and manifest["config"]["dim"] == 576
    assert (manifest["config"]["n_heads"], manifest["config"]["n_kv_heads"]) == (9, 3)
    assert manifest["config"]["vocab_size"] == 49_152
    # A reader's second visit: the first registered the book's service worker, so this page is
    # cross-origin isolated (the page still asks ONNX Runtime for one thread).
    page.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
    assert page.evaluate(SERVICE_WORKER) == f"{site_url}/"
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{site_url}/book/playground.html", wait_until="networkidle")
    assert page.evaluate("self.crossOriginIsolated")
    chat = page.locator(".tinyk-chat")
    button = page.locator(".tinyk-chat-load")
    assert button.inner_text() == f"Load SmolLM2, {total / 1e6:.0f} MB"
    assert [u for u in requested if "/smollm2/" in u] == []  # nothing until the reader asks
    assert page.locator(".tinyk-chat-answer").is_disabled()
    button.click()
    assert _state(page, "ready failed") == "ready", page.locator(".tinyk-chat-status").inner_text()
    progress = page.locator(".tinyk-chat-progress")
    assert progress.get_attribute("max") == str(total) and progress.evaluate("p => p.value") == total
    created = page.evaluate(f"{STATE}.sessionOptions")  # as the engine gave them to ONNX Runtime
    web = {"session": {"disable_quant_qdq": "1", "intra_op.allow_spinning": "0"}}  # web_session_config
    assert created == {"level": "basic", "extra": web, "external": True}  # and web_graph_optimization
    # The page's warm-up once SmolLM2 is loaded, while the reader types (tinyk-playground.js says
    # why): decode calls whose tokens nobody reads, and no trace of them in the answer below.
    warmed = page.evaluate(f"async () => await {STATE}.warming")
    assert warmed["calls"] == SMOLLM2_WARM_CALLS == 32 and warmed["seconds"] > 0

    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.stats !== null && {STATE}.root.dataset.state === 'ready'",
                           timeout=180_000)
    stats = page.evaluate(f"{STATE}.stats")
    tokenizer = load_tokenizer(smollm2_path())
    question = "What is the capital of France?"
    ids = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                        return_tensors="pt")["input_ids"][0].tolist()
    assert stats["ids"] == ids and len(ids) == 37  # the page's tokenizer is the model's
    answer = _tinyk_answer(ids, manifest["eos_token_id"])
    assert stats["answer"] == answer
    assert page.locator(".tinyk-chat-reply").inner_text() == "The capital of France is Paris."
    assert page.locator(".tinyk-chat-tokens li").count() == 37
    assert page.locator(".tinyk-chat .tinyk-pg-next tbody tr").count() == 10
    assert page.locator(".tinyk-chat .tinyk-pg-next tbody tr td").first.inner_text() == "The"
    cached = 37 + len(answer)  # the prompt and every answer token went through the model (not the end token)
    cache = page.locator(".tinyk-chat-cache").inner_text()
    assert f"{cached * 2 * 30 * 3 * 64 * 4:,} bytes" in cache  # GQA's 3 K/V heads
    assert f"{cached * 2 * 30 * 9 * 64 * 4:,} bytes" in cache  # one K/V head per query head

    canvas = page.locator(".tinyk-chat .tinyk-pg-heatmap canvas")
    assert canvas.get_attribute("data-tokens") == str(cached)  # every token that went through the model
    want = run_graph(session(WEB / "smollm2.onnx"), manifest, ids)["attention"][0, 0]  # 9×37×37, layer 15
    got = page.evaluate(f"{STATE}.rows.map((rows) => rows.slice(0, 37).map((r) => Array.from(r)))")
    assert len(got) == 9 and np.abs(np.array([np.array(h) for h in got]) - want).max() <= 1e-4
    head0 = canvas.evaluate(PIXELS)
    page.locator(".tinyk-chat .tinyk-pg-head").select_option("4")
    assert canvas.evaluate(PIXELS) != head0
    assert "Query head 4 reads K/V head 1, shared by query heads 3, 4, 5." in page.locator(
        ".tinyk-chat .tinyk-pg-gqa").inner_text()
    assert stats["threads"] == PAGE_THREADS == 1  # the page's choice, in an isolated page too
    said = "one thread"
    assert f"tokens per second (greedy decoding, {said})." in page.locator(".tinyk-chat-status").inner_text()
    # Another layer, after the answer: the same tokens read again in one call, that layer's weights
    # from the one graph, as ONNX Runtime in Python gives them for that layer.
    assert page.locator(".tinyk-chat .tinyk-pg-layer option").count() == 30
    assert page.locator(".tinyk-chat .tinyk-pg-layer").input_value() == "15"
    head4 = canvas.evaluate(PIXELS)
    page.locator(".tinyk-chat .tinyk-pg-layer").select_option("3")
    page.wait_for_function(f"{STATE}.rowsLayer === 3 && document.querySelector('.tinyk-chat').dataset.state "
                           f"=== 'ready'", timeout=180_000)
    layer3 = run_graph(session(WEB / "smollm2.onnx"), manifest, ids, layer=3)["attention"][0, 0]
    # the prompt's rows: one call for the whole text now, each row as long as the text (zeros after it)
    got = page.evaluate(f"{STATE}.rows.map((rs) => rs.slice(0, 37).map((r) => Array.from(r).slice(0, 37)))")
    assert np.abs(np.array([np.array(h) for h in got]) - layer3).max() <= 1e-4
    assert np.abs(layer3 - want).max() > 0.1  # another layer's weights, not layer 15's again
    assert canvas.evaluate(PIXELS) != head4 and "layer 3," in canvas.get_attribute("aria-label")
    assert f"Layer 3: the {cached} tokens read again" in page.locator(".tinyk-chat-status").inner_text()

    # RoPE: each token's angle for the chosen pair, as the graph returned it (05.3's t·ω, wrapped).
    angles = page.locator(".tinyk-chat .tinyk-pg-angles tbody tr")
    assert angles.count() == cached
    page.locator(".tinyk-chat .tinyk-pg-pair").select_option("5")
    omega = 100_000 ** (-2 * 5 / 64)  # SmolLM2's base, d_h = 64: 0.1655, no angle near ±π below 56 tokens
    assert f"\u03c9 = {omega:.4g} radians" in page.locator(".tinyk-chat .tinyk-pg-omega").inner_text()
    shown = [row.split("\t") for row in angles.all_inner_texts()]
    wrapped = [float(np.angle(np.exp(1j * t * omega))) for t in range(cached)]
    assert [int(r[0]) for r in shown] == list(range(cached))
    assert max(abs(float(r[-1]) - w) for r, w in zip(shown, wrapped, strict=True)) < 1e-4
    assert page.locator(".tinyk-chat .tinyk-pg-circle line").count() == cached

    # Sampling: each token is the one whose share of softmax(logits / T) holds the page's random
    # number, with the logits of the same graph in Python; the first token's table follows T.
    first_p = page.locator(".tinyk-chat .tinyk-pg-next tbody tr td").nth(1).inner_text()
    page.locator(".tinyk-chat .tinyk-pg-decoding").select_option("sampled")
    page.locator(".tinyk-chat .tinyk-pg-temperature").fill("1.5")
    assert page.locator(".tinyk-chat .tinyk-pg-temperature-value").inner_text() == "1.5"
    assert page.locator(".tinyk-chat .tinyk-pg-next tbody tr td").nth(1).inner_text() != first_p
    page.evaluate("() => { const draws = [0.93, 0.41, 0.77, 0.05, 0.62, 0.28]; let i = 0;"
                  " Math.random = () => draws[i++ % draws.length]; }")
    page.locator(".tinyk-chat-limit").fill("6")
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.stats.sampled && {STATE}.root.dataset.state === 'ready'",
                           timeout=180_000)
    drawn = page.evaluate(f"{STATE}.stats")
    assert drawn["ids"] == ids and drawn["temperature"] == 1.5 and 1 <= len(drawn["answer"]) <= 6
    assert drawn["draws"] == [0.93, 0.41, 0.77, 0.05, 0.62, 0.28][:len(drawn["draws"])]
    runtime, out, fits = session(WEB / "smollm2.onnx"), None, []
    ended = len(drawn["draws"]) > len(drawn["answer"])  # the last draw chose the end-of-turn token
    chosen = drawn["answer"] + ([manifest["eos_token_id"]] if ended else [])
    for step, (token, r) in enumerate(zip(chosen, drawn["draws"], strict=True)):
        out = run_graph(runtime, manifest, ids if step == 0 else [chosen[step - 1]], out)
        logits = out["logits"][0, -1].astype(np.float64) / 1.5
        cdf = np.cumsum(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum())
        low, high = np.searchsorted(cdf, [r - 1e-6, r + 1e-6], side="right")  # a share's edge, either side
        fits.append(int(low) <= token <= int(high))
    assert fits == [True] * len(chosen) and len(chosen) >= 1
    assert f"(sampled at temperature 1.5, {said})." in page.locator(".tinyk-chat-status").inner_text()
    page.locator(".tinyk-chat .tinyk-pg-decoding").select_option("greedy")

    page.locator(".tinyk-chat-message").fill("Name a colour.")
    page.locator(".tinyk-chat-limit").fill("3")
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.stats.ids.length !== 37 && {STATE}.root.dataset.state === 'ready'",
                           timeout=180_000)
    second = page.evaluate(f"{STATE}.stats")
    assert second["ids"] == tokenizer(manifest["tokenizer"]["chat_prefix"] + "Name a colour."
                                      + manifest["tokenizer"]["chat_suffix"])["input_ids"]
    assert 1 <= len(second["answer"]) <= 3
    assert page.locator(".tinyk-chat-tokens li").count() == len(second["ids"])
    fed = len(second["answer"]) - (len(second["answer"]) == 3)  # a token at the limit is not fed
    assert canvas.get_attribute("data-tokens") == str(len(second["ids"]) + fed)
    page.locator(".tinyk-chat-message").fill("word " * 1100)  # a paste too long to attend over
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.root.dataset.state === 'ready'")
    status = page.locator(".tinyk-chat-status").inner_text()
    assert status.startswith("The prompt has 1131 tokens") and "at most 1024" in status, status
    assert page.evaluate(f"{STATE}.stats.ids.length") == len(second["ids"])  # nothing ran
    assert page.external_requests == []
    assert page.console_errors == []
    assert serious_violations(page, ".tinyk-chat") == []
    assert chat.count() == 1


# The page's long tasks (the Long Tasks API) and every status the chat says, from now on.
WATCH = """() => {
  window.tinykLongTasks = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.tinykLongTasks.push(entry.duration);
  }).observe({ type: "longtask" });
  window.tinykSaid = [];
  const status = document.querySelector(".tinyk-chat-status");
  new MutationObserver(() => window.tinykSaid.push(status.textContent))
    .observe(status, { childList: true, characterData: true, subtree: true });
}"""


def _bytes_of(chips: list[str]) -> bytes:
    """The bytes the chat's token chips stand for: <0xE4> a byte, any other character its UTF-8."""
    out = b""
    for chip in chips:
        for hexa, char in re.findall(r"<0x([0-9A-F]{2})>|(.)", chip.replace("\u21b5", "\n"), flags=re.S):
            out += bytes([int(hexa, 16)]) if hexa else char.encode()
    return out


@pytest.fixture
def first_visit(browser, site_url):  # noqa: F811
    """A page as on a reader's first visit, the book's service worker kept out (the requests of a
    page it serves pass it, out of the context's routes): every request off localhost aborted and
    counted, and the console's errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = context.new_page()  # noqa: F811  (not the fixture)
    page.external_requests, page.console_errors = [], []

    def route(r):
        if urlparse(r.request.url).hostname in ("127.0.0.1", "localhost"):
            r.fallback()
        else:
            page.external_requests.append(r.request.url)
            r.abort()

    context.route("**/*", route)  # the context's: the engine's requests too
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()


def test_the_chat_stops_and_reads_a_long_prompt_off_the_page(first_visit, site_url):  # noqa: F811
    """SmolLM2 runs in the page's engine (a worker): a download cut off is named, Stop ends the
    download and the answer; a 1,000-token prompt is announced at once and read off the page: no
    task of the page, the heatmap's drawing included, takes a tenth of the model's own reading of
    it (which would block the page for all of it on the main thread; the 200 ms and 1 s aims on a
    given machine are bench_browser.py's); the heatmap is read by keyboard; a token of part of a
    character shows its bytes, never U+FFFD. A page opened with ?warm=0 warms nothing up after Load."""
    page = first_visit  # noqa: F811  (not the fixture)
    manifest = json.loads((WEB / "smollm2.json").read_text(encoding="utf-8"))
    page.goto(f"{site_url}/book/playground.html?warm=0", wait_until="networkidle")
    chat = "document.querySelector('.tinyk-chat')"
    second_file = re.compile(r".*/smollm2\.data\.1(\?.*)?$")
    page.context.route(second_file, lambda r: r.abort())
    page.locator(".tinyk-chat-load").click()
    assert _state(page, "failed ready") == "failed"
    assert "SmolLM2 could not be loaded (smollm2.data.1: " in page.locator(".tinyk-chat-status").inner_text()
    page.context.unroute(second_file)
    held = []  # the second weights file: asked for, never answered
    page.context.route(second_file, lambda route: held.append(route))
    with page.expect_request(second_file, timeout=180_000):  # the first file in, the second asked for
        page.locator(".tinyk-chat-load").click()
    paths = [f["path"] for f in manifest["files"]]
    before = sum(f["bytes"] for f in manifest["files"][:paths.index("smollm2.data.1")])
    assert page.evaluate(f"{chat}.querySelector('.tinyk-chat-progress').value") == before
    assert page.locator(".tinyk-chat").get_attribute("data-state") == "loading"
    page.locator(".tinyk-chat-stop").click()
    assert _state(page, "idle failed ready") == "idle"
    assert page.locator(".tinyk-chat-status").inner_text() == "Download stopped: the button starts it again."
    assert page.locator(".tinyk-chat-load").is_enabled() and page.locator(".tinyk-chat-stop").is_disabled()
    assert len(held) == 1
    page.context.unroute(second_file)
    page.locator(".tinyk-chat-load").click()
    assert _state(page, "ready failed") == "ready", page.locator(".tinyk-chat-status").inner_text()
    assert [w.url.rsplit("/", 1)[1] for w in page.workers] == ["tinyk-engine.js"]
    assert page.evaluate(f"async () => await {STATE}.warming") == {"calls": 0, "seconds": 0}

    # A 1,000-token prompt: its size said at once, the page never busy for long.
    page.evaluate(WATCH)
    page.locator(".tinyk-chat-message").fill("word " * 969)
    page.locator(".tinyk-chat-limit").fill("1")
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.stats !== null && {STATE}.stats.ids.length === 1000"
                           f" && {chat}.dataset.state === 'ready'", timeout=600_000)
    said = page.evaluate("window.tinykSaid")
    assert said[0] == "Reading the 1000-token prompt\u2026", said  # at once, before the model's call
    assert re.match(r"[01] token\(s\) in ", said[-1]), said
    tasks = page.evaluate("window.tinykLongTasks")
    prefill_ms = page.evaluate(f"{STATE}.stats.prefillSeconds") * 1000  # the worker's call
    assert max(tasks, default=0) * 10 < prefill_ms, (tasks, prefill_ms)  # a margin of 10, not a clock
    heatmap = page.locator(".tinyk-chat .tinyk-pg-heatmap")
    assert heatmap.locator("canvas").get_attribute("data-tokens") == "1000"
    assert float(heatmap.get_attribute("data-draw-ms")) * 10 < prefill_ms
    # The cursor starts on the last token's row; Home takes it to key 0, the readout says its weight.
    canvas = heatmap.locator("canvas")
    canvas.focus()
    canvas.press("Home")
    canvas.press("ArrowUp")
    weight = page.evaluate(f"{STATE}.rows[0][998][0]")
    readout = page.locator(".tinyk-chat .tinyk-pg-readout").inner_text()
    assert readout.startswith("Query 998 (") and "key 0 (" in readout, readout
    assert readout.endswith(f": {weight:.3f}"), readout
    canvas.press("ArrowRight")
    assert page.locator(".tinyk-chat .tinyk-pg-readout").inner_text().startswith("Query 998 (")

    # Stop during an answer: no call after the one running, and nothing more is written.
    page.locator(".tinyk-chat-message").fill("Tell me about the planets of the solar system.")
    page.locator(".tinyk-chat-limit").fill("256")
    page.evaluate(f"{STATE}.stats = null")
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"({STATE}.live?.length ?? 0) >= 2 && {chat}.dataset.state === 'busy'",
                           timeout=600_000)
    assert page.locator(".tinyk-chat-message").is_disabled() and page.locator(".tinyk-chat-stop").is_enabled()
    page.locator(".tinyk-chat-stop").click()
    page.wait_for_function(f"{STATE}.stats !== null && {chat}.dataset.state === 'ready'", timeout=600_000)
    stats = page.evaluate(f"{STATE}.stats")
    n = len(stats["answer"])
    assert stats["stopped"] and 2 <= n < 256
    assert page.locator(".tinyk-chat-status").inner_text() == f"Stopped after {n} token(s)."
    reply = page.locator(".tinyk-chat-reply").inner_text()
    after = f"{STATE}.engine.call('encode', {{ text: 'x' }}).then(() => {STATE}.live.length)"  # a round trip
    assert page.evaluate(after) == n
    assert page.locator(".tinyk-chat-reply").inner_text() == reply and reply != ""

    # Chinese and an emoji: tokens of part of a character show its bytes, the chips hold the text's bytes.
    message = "你好，世界！🙂"
    page.locator(".tinyk-chat-message").fill(message)
    page.locator(".tinyk-chat-limit").fill("4")
    page.evaluate(f"{STATE}.stats = null")
    page.locator(".tinyk-chat-answer").click()
    page.wait_for_function(f"{STATE}.stats !== null && {chat}.dataset.state === 'ready'", timeout=600_000)
    chips = page.locator(".tinyk-chat-tokens .tinyk-pg-chip").all_inner_texts()
    assert len(chips) == len(page.evaluate(f"{STATE}.stats.ids"))
    assert message.encode() in _bytes_of(chips)
    assert any(re.fullmatch(r"(<0x[0-9A-F]{2}>)+", c) for c in chips), chips
    shown = " ".join(chips) + page.locator(".tinyk-chat-reply").inner_text() + readout
    assert "\ufffd" not in shown
    assert page.external_requests == []


def _notebook_paragraph() -> str:
    """The paragraph 05.10 measures its losses on, read from the notebook's code."""
    import ast

    from tinyk.courseware.exercises import source_text

    cells = json.loads((ROOT / "notebooks" / "05_10_real_weights.ipynb").read_text(encoding="utf-8"))["cells"]
    assigned = [node.value for c in cells if c["cell_type"] == "code" and "paragraph = (" in source_text(c)
                for node in ast.parse(source_text(c)).body
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "paragraph"]
    assert len(assigned) == 1
    return ast.literal_eval(assigned[0])


def test_the_sites_smollm2_agrees_with_float32_tinyk_on_05_10s_paragraph():
    """Item 2's figure: the top-1 next token of the site's graph (the file's 4-bit and 8-bit blocks)
    agrees with float32 tinyk at >= 95% of the positions of 05.10's paragraph, fed as the page feeds
    a text, one token per call through the KV cache; the logits stay within 1e-3."""
    import numpy as np
    import torch

    from tinyk.interop.gguf import load_gguf, load_tokenizer, smollm2_path
    from tinyk.web.onnx_web import session
    from tinyk.web.playground import run_graph

    manifest = json.loads((WEB / "smollm2.json").read_text(encoding="utf-8"))
    paragraph = _notebook_paragraph()
    path = smollm2_path()
    ids = load_tokenizer(path)(paragraph)["input_ids"]
    model, _ = load_gguf(path)
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()  # T×V
    runtime = session(WEB / "smollm2.onnx")
    out, rows = None, []
    for token in ids:
        out = run_graph(runtime, manifest, [token], out)
        rows.append(out["logits"][0, -1])
    got = np.stack(rows)
    agree = int((got.argmax(-1) == expected.argmax(-1)).sum())
    assert len(ids) >= 50 and agree >= 0.95 * len(ids), f"{agree} of {len(ids)}"
    assert np.abs(got - expected).max() < 1e-3


def test_the_chinese_chat_speaks_chinese_before_it_loads(page, site_url):  # noqa: F811
    page.goto(f"{site_url}/zh/book/playground.html", wait_until="networkidle")
    total = sum(f["bytes"] for f in json.loads((WEB / "smollm2.json").read_text(encoding="utf-8"))["files"])
    assert page.locator(".tinyk-chat-load").inner_text() == f"加载 SmolLM2（{total / 1e6:.0f} MB）"
    assert page.locator(".tinyk-chat-status").inner_text().startswith("SmolLM2 加载后就在本页中运行")
    words = page.locator(".tinyk-chat :is(figcaption, summary)").all_inner_texts()
    assert words == ["SmolLM2 的回答", "回答的第一个 token：最可能的 10 个", "提示词的 token", "注意力权重",
                     "键值缓存", "RoPE 旋转角度"]
    assert page.locator(".tinyk-chat-size").inner_text() == (
        f"对网页来说，SmolLM2 的体量很大：加载需要下载 {total / 1e6:.0f} MB，"
        "运行时这个标签页约占用 1.2 GB 内存。")
    assert page.locator(".tinyk-chat .tinyk-pg-decoding option").all_inner_texts() == [
        "贪心解码：取最可能的 token", "按温度采样"]
    answer = page.locator(".tinyk-chat-answer")
    assert answer.inner_text() == "回答" and answer.is_disabled()
    assert page.external_requests == [] and page.console_errors == []
