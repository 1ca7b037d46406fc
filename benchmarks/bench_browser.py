"""The live model in Chromium (the playground page) against tinyk in PyTorch, on this CPU.

    python benchmarks/bench_browser.py [--tokens 48] [--rounds 3]

Needs the built site (``make book``) and Chromium. Everything compared is measured in this
one run, the contenders alternating so that a slow moment of a busy machine hits both. The
models run in the page's engine (a Web Worker, ``tinyk-engine.js``) on the page's one thread
(a first visit, before the book's service worker makes the site's pages cross-origin isolated)
and on 2 threads (a later visit, cross-origin isolated, the page opened with ``?threads=2``):

1. decode speed of the 05.7 model: greedy tokens per second with the KV cache, one token per
   call, in the engine (ONNX Runtime Web, WebAssembly, the prompt's call included, as in PyTorch's)
   on 1 and 2 threads, once the page's own warm-up is done (``warmTiny`` in
   ``tinyk-playground.js``: the page's decode calls that let the browser optimise the runtime's
   WebAssembly; their number and the engine's time of them are printed), and, the page before that
   warm-up, a page opened with ``?warm=0`` in a browser of its own, measured as this script did
   before it (one untimed decode first); in PyTorch (``tinyk.generate``, one thread, after one
   untimed decode), the same prompt and the same tokens (checked); the ratios browser / PyTorch,
   and the share of each decode's time spent in ONNX Runtime's ``session.run``;
2. time to first token with the model cached by the browser: a reload of the page until its
   first prompt has run, then Run on a 40-token prompt until its next-token table is shown;
3. bytes the page downloads: the runtime (loader, module, WebAssembly) and the model;
4. SmolLM2 (05.10) in the page's chat: decode tokens per second of its greedy answer (the page's
   own count: the engine's time of each call after the prompt's) against ``tinyk.generate`` on
   the same prompt ids, the same tokens (checked), on 1 and 2 threads; PyTorch on one; the share
   of the answer's time (the prompt's call, the decode and the page's drawing of each token) spent
   in ``session.run``; and the page's longest task (the Long Tasks API) while it answered; all
   once the page's warm-up after Load (``SMOLLM2_WARM_CALLS`` in ``tinyk-playground.js``) is done
   (its calls and time printed);
5. SmolLM2's time to first token once the browser has its files, on each of those pages: after
   a reload, Load (the files from the browser's cache, the runtime, the session), then the
   prompt's call of a 40-token chat prompt, both timed by the page's clock, and their sum;
6. the bytes SmolLM2's Load downloads (graph, weights, tokenizer);

and the machine's load average at the start and at the end.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
PAGE = "book/playground.html"
PROMPT_40 = "1+2=2+1\n3+4=4+3\n5+6=6+5\n7+8=8+7\n9+0=0+9\n"  # 40 tokens

# One greedy decode of n tokens in the page's engine, with the cache, timed by the engine's clock.
DECODE = """async ([text, n]) => {
  const p = document.querySelector('.tinyk-playground').tinykPlayground;
  await p.ready;
  const ids = [...text].map((c) => p.vocab.indexOf(c));
  return p.engine.call("greedy", { model: "tiny", config: p.config, ids, n });
}"""
# The page's long tasks from now on (the Long Tasks API): window.tinykLongest is the longest, in ms.
# The page's warm-up of the 05.7 model, once it is done: {calls, seconds} (none with ?warm=0: 0 calls).
WARMED = """async () => {
  const p = document.querySelector('.tinyk-playground').tinykPlayground;
  await p.ready;
  return p.warmed;
}"""
READY = "document.querySelector('.tinyk-playground').dataset.state === 'ready'"


def wait_ready(page, timeout: float = 120_000) -> None:
    """Bring the playground into view, as a reader scrolls to it (it loads its runtime and model only
    when it nears the screen: tinyk-live.js), and wait until its first prompt has run."""
    page.locator(".tinyk-playground").scroll_into_view_if_needed()
    page.wait_for_function(READY, timeout=timeout)


WATCH = """() => {
  window.tinykLongest = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      window.tinykLongest = Math.max(window.tinykLongest, entry.duration);
    }
  }).observe({ type: "longtask" });
}"""


SMOLLM2_MESSAGE = "Tell me about the planets of the solar system."  # a long answer to decode
SMOLLM2_MESSAGE_40 = "What is the capital of France? Answer briefly."  # a 40-token chat prompt
CHAT = "document.querySelector('.tinyk-chat')"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # not a reload that dropped a download
            super().handle_error(request, client_address)


def pytorch_decode(model, ids: list[int], n: int) -> tuple[list[int], float]:
    import torch

    from tinyk import generate

    prompt = torch.tensor([ids])
    start = time.perf_counter()
    out = generate(model, prompt, max_new_tokens=n, temperature=0)
    return out[0].tolist(), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="tokens decoded per round (default 48)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each contender (default 3)")
    args = parser.parse_args(argv)
    if not (HTML / PAGE).exists():
        print(f"no built site at {HTML / PAGE}: run `make book` first", file=sys.stderr)
        return 2
    import torch
    from playwright.sync_api import sync_playwright

    from tinyk.data import CharTokenizer
    from tinyk.training import trained_course_model
    from tinyk.web.playground import EXAMPLE_PROMPT

    torch.set_num_threads(1)
    load_before = os.getloadavg()  # said with the figures: a busy machine slows both sides
    model = trained_course_model().eval()
    server = _Server(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{PAGE}"
    prompt = EXAMPLE_PROMPT  # the page's first prompt
    ids = CharTokenizer().encode(prompt).tolist()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_context(service_workers="block").new_page()  # one thread, as a first visit
        sizes: dict[str, int] = {}


        def measure(response) -> None:
            if response.ok:
                sizes[response.url] = len(response.body())

        page.on("response", measure)
        page.goto(url, wait_until="networkidle")
        wait_ready(page)
        page.remove_listener("response", measure)
        runtime = sum(v for k, v in sizes.items() if "/_static/ort/" in k)
        # The engine (a Web Worker) fetches the graph: the page's response events do not show it.
        weights = (HTML / "_static" / "models" / "tiny.onnx").stat().st_size
        later = later_visit(browser.new_context(), f"{url}?threads=2")  # the page the service worker serves
        wait_ready(later)
        # The page without its warm-up, one thread, in a browser of its own: a browser shares a
        # module's optimised WebAssembly between the engines of its pages (a page alone beside the
        # others decoded as fast as they once they had warmed up).
        cold = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        before = cold.new_context(service_workers="block").new_page()
        before.goto(f"{url}?warm=0", wait_until="load")
        wait_ready(before)
        decode_pages = [before, page, later]
        # Each page's warm-up, as a reader's page does it before the reader asks (none for
        # `before`); then one untimed decode on PyTorch's side and on `before`'s, as this script did
        # before the page warmed up: so the first row is the measure of the page without it.
        warmed = [p_.evaluate(WARMED) for p_ in decode_pages]
        before.evaluate(DECODE, [prompt, args.tokens])
        pytorch_decode(model, ids, args.tokens)
        browser_times: list[list[float]] = [[] for _ in decode_pages]
        run_shares: list[list[float]] = [[] for _ in decode_pages]
        torch_times = []
        for _ in range(args.rounds):
            got = [p_.evaluate(DECODE, [prompt, args.tokens]) for p_ in decode_pages]
            tokens, seconds = pytorch_decode(model, ids, args.tokens)
            for i, g in enumerate(got):
                if g["tokens"] != tokens:
                    print(f"the page's tokens differ from tinyk's: {g['tokens']} vs {tokens}",
                          file=sys.stderr)
                    return 1
                browser_times[i].append(g["seconds"])
                run_shares[i].append(g["runSeconds"] / g["seconds"])
            torch_times.append(seconds)
        cold.close()
        ttft = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            page.reload(wait_until="load")
            wait_ready(page)
            loaded = time.perf_counter() - start
            page.fill(".tinyk-pg-prompt", PROMPT_40)
            start = time.perf_counter()
            page.click(".tinyk-pg-run")
            page.wait_for_function(f"document.querySelector('.tinyk-playground').tinykPlayground.shown.ids.length"
                                   f" === {len(PROMPT_40)}")
            ttft.append((loaded, time.perf_counter() - start))
        smollm2 = smollm2_lines([page, later], args.rounds, args.tokens)
        browser.close()
    server.shutdown()
    t = statistics.median(torch_times)
    print(f"1. decode, 05.7 model, {args.tokens} greedy tokens with the KV cache, median of {args.rounds}:")
    print(f"   {'PyTorch (tinyk.generate), one thread:':<64}{args.tokens / t:8.0f} tokens/s")
    labels = ["1 thread, without the page's warm-up (?warm=0):", "1 thread, after the page's warm-up:",
              "2 threads, after the page's warm-up:"]
    for label, times, shares, warm in zip(labels, browser_times, run_shares, warmed, strict=True):
        b = statistics.median(times)
        label = f"Chromium (ONNX Runtime Web), {label}"
        said = f"; the warm-up: {warm['calls']} calls, {warm['seconds']:.1f} s" if warm["calls"] else ""
        print(f"   {label:<64}{args.tokens / b:8.0f} tokens/s, {t / b:.2f} of PyTorch's, "
              f"{statistics.median(shares):.0%} in session.run{said}")
    print("   (same tokens on every side: checked)")
    load, run = statistics.median(x[0] for x in ttft), statistics.median(x[1] for x in ttft)
    print(f"2. time to first token, model cached by the browser: page reload to the first prompt's "
          f"run {load:.2f} s; Run on a {len(PROMPT_40)}-token prompt {run:.3f} s")
    print(f"3. bytes downloaded: runtime {runtime:,} (loader, module, WebAssembly), model {weights:,} "
          "(its file)")
    print("\n".join(smollm2))
    print("load average (1, 5, 15 min) at the start {:.1f} {:.1f} {:.1f}, at the end {:.1f} {:.1f} {:.1f}, "
          "on {} processors".format(*load_before, *os.getloadavg(), os.cpu_count()))
    return 0


def smollm2_answer(page, message: str, limit: int) -> dict:
    """The chat's answer to ``message`` (at most ``limit`` tokens) and its timings."""
    page.fill(".tinyk-chat-message", message)
    page.fill(".tinyk-chat-limit", str(limit))
    page.evaluate(f"{CHAT}.tinykChat.stats = null")
    page.click(".tinyk-chat-answer")
    page.wait_for_function(f"{CHAT}.tinykChat.stats !== null && {CHAT}.dataset.state === 'ready'",
                           timeout=600_000)
    return page.evaluate(f"{CHAT}.tinykChat.stats")


def smollm2_load(page) -> float:
    """Press Load and wait until the chat is ready; the page's own clock of it, in seconds."""
    page.click(".tinyk-chat-load")
    page.wait_for_function(f"{CHAT}.dataset.state === 'ready'", timeout=600_000)
    return page.evaluate(f"{CHAT}.tinykChat.loadSeconds")


def later_visit(context, url: str):
    """A page of ``context`` at ``url`` as a reader's later visit sees it: registered by the first,
    the book's service worker serves the reload, cross-origin isolated (checked)."""
    page = context.new_page()
    page.goto(url, wait_until="load")
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    page.reload(wait_until="load")
    if not page.evaluate("self.crossOriginIsolated"):
        raise SystemExit("the book's service worker did not make the page cross-origin isolated")
    return page


def smollm2_lines(pages: list, rounds: int, tokens: int) -> list[str]:
    """Lines 4 to 6: SmolLM2 in the chat of each page (the first: a first visit, one thread; then
    later visits, see the module) against tinyk in PyTorch, alternating."""
    import torch

    from tinyk import generate
    from tinyk.interop.gguf import load_gguf, smollm2_path

    model, _ = load_gguf(smollm2_path())
    sizes: dict[str, int] = {}

    def measure(response) -> None:  # the header: the browser's inspector does not keep 50 MB bodies
        if "/smollm2/" in response.url and response.ok:
            sizes[response.url] = int(response.headers.get("content-length", 0))

    pages[0].on("response", measure)
    smollm2_load(pages[0])
    pages[0].remove_listener("response", measure)
    downloaded = sum(sizes.values())
    for p in pages[1:]:
        smollm2_load(p)
    # Each page's warm-up after Load, as a reader's page does it while the reader types (the
    # first answer would end it): {calls, seconds}.
    warmed = [p.evaluate(f"async () => (await {CHAT}.tinykChat.warming) ?? {{calls: 0, seconds: 0}}")
              for p in pages]
    for p in pages:
        p.evaluate(WATCH)
    rates: list[list[float]] = [[] for _ in pages]
    shares: list[list[float]] = [[] for _ in pages]  # of the answer's time (drawing included), in session.run
    torch_rates, lengths, threads = [], [], []
    for _ in range(rounds):
        answers = [smollm2_answer(p, SMOLLM2_MESSAGE, tokens) for p in pages]
        threads = [a["threads"] for a in answers]
        n = len(answers[0]["answer"])
        lengths.append(n)
        prompt = torch.tensor([answers[0]["ids"]])
        start = time.perf_counter()
        generate(model, prompt, max_new_tokens=1, temperature=0)  # the prompt's call alone
        middle = time.perf_counter()
        out = generate(model, prompt, max_new_tokens=n, temperature=0)[0].tolist()
        seconds = (time.perf_counter() - middle) - (middle - start)  # without the prompt's call
        for i, got in enumerate(answers):
            if out[:n] != got["answer"]:
                raise SystemExit(f"SmolLM2's tokens in page {i} ({threads[i]} threads) differ from tinyk's: "
                                 f"{got['answer']} vs {out}")
            rates[i].append(got["decodeCalls"] / got["decodeSeconds"])
            shares[i].append((got["prefillSeconds"] + got["decodeSeconds"]) / got["seconds"])
        torch_rates.append((n - 1) / seconds)  # after the first token, as the page counts
    longest = [p.evaluate("window.tinykLongest") for p in pages]  # before the reloads below
    firsts: list[list[tuple[float, float]]] = [[] for _ in pages]
    for _ in range(rounds):
        for i, p in enumerate(pages):
            p.reload(wait_until="load")
            loaded = smollm2_load(p)  # the page's clock, from the click's handler
            stats = smollm2_answer(p, SMOLLM2_MESSAGE_40, 1)
            firsts[i].append((loaded, stats["prefillSeconds"]))
            prompt_length = len(stats["ids"])
    t = statistics.median(torch_rates)
    lines = [f"4. decode, SmolLM2, greedy with the KV cache, median of {rounds} (answers of {min(lengths)} "
             f"to {max(lengths)} tokens, at most {tokens}; same tokens in each: checked):",
             f"   {'PyTorch (tinyk.generate), one thread:':<59}{t:8.1f} tokens/s"]
    said = ["one thread" if n == 1 else f"{n} threads" for n in threads]
    labels = [f"{said[0]}, first visit", f"{said[1]}, later visits (?threads=2)"]
    for label, r, share, task, warm in zip(labels, rates, shares, longest, warmed, strict=True):
        b = statistics.median(r)
        label = f"Chromium, {label}:"
        ran = statistics.median(share)
        lines.append(f"   {label:<59}{b:8.1f} tokens/s, {b / t:.2f} of PyTorch's, {ran:.0%} of the answer in "
                     f"session.run; the page's longest task {task:.0f} ms; the warm-up: {warm['calls']} "
                     f"calls, {warm['seconds']:.1f} s")
    lines.append(f"5. SmolLM2, files cached by the browser, after a reload: Load, then the first token of a "
                 f"{prompt_length}-token chat prompt (the prompt's call), median of {rounds}:")
    for label, f in zip(labels, firsts, strict=True):
        load, prefill = statistics.median(x[0] for x in f), statistics.median(x[1] for x in f)
        label, total = f"{label}:", load + prefill
        lines.append(f"   {label:<50}Load {load:.2f} s + {prefill:.3f} s = {total:.2f} s (aim <= 2 s)")
    lines.append(f"6. bytes downloaded by SmolLM2's Load: {downloaded:,} (aim <= 150 MB)")
    return lines


if __name__ == "__main__":
    sys.exit(main())
