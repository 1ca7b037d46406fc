"""The ``playground`` and ``smollm2`` directives: the 05.7 model and SmolLM2, live in the reader's
browser (both editions).

``:::{playground}`` (optionally ``:show: tokens next generate attention steps residual cache
rope``, any of them, in that order; ``steps``: a row of scaled scores, the mask added and the
weights; ``residual``: the residual stream's norm after the embedding and each layer) writes
the playground's controls and panels into the page, with no kernel:
``book/_static/tinyk-playground.js`` starts the page's engine, a Web Worker
(``book/_static/tinyk-engine.js``) that loads ONNX Runtime Web from the site's own
``_static/ort/`` and the model's graph from ``_static/models/`` (:mod:`tinyk.web.onnx_export`) and
runs it on what the reader types; the page draws each panel. Without WebAssembly, the panels show
the example run computed when the book was built (``tiny-example.json``,
:mod:`tinyk.web.playground`).

The words of the controls and of the script's messages are :data:`WORDS`, English. The
Chinese edition writes them from ``locale/zh_CN/interface.po`` as the page is built (a word
without a translation is a warning, so ``-W`` fails), and the script reads its messages from
hidden elements of the page, so it holds no language of its own. They are written here, not
replaced in the finished HTML as the theme's words are: ``greedy`` or ``Layer`` may also be a
name in a page's code.

``:::{smollm2}`` writes SmolLM2-135M-Instruct's chat (section 05.10): a button that fetches the
model (:mod:`tinyk.web.onnx_web`'s files, about 100 MB, kept by the browser's cache) with a progress
bar, then the chat: the prompt's tokens from the model's own tokenizer (Hugging Face's
``tokenizers`` in JavaScript), the answer token by token through the KV cache, greedy or sampled
at a temperature, the first token's 10 most likely at that temperature, the attention weights of
any layer, chosen at each call of the graph (one query head, its GQA group drawn), the cache's bytes, and each
token's RoPE angles for a chosen pair.

``tinyk-sw.js``, the service worker a page with either registers, is written at each edition's root
(``build-finished``; a service worker serves only the pages under its own folder). It serves the
edition's pages with the headers of a cross-origin isolated page, so that ONNX Runtime Web runs
on several threads from the next page the reader opens: a static host cannot send them.

``builder-inited``: ONNX Runtime Web's loader and WebAssembly files (the npm package
``onnxruntime-web``, which ``make`` installs into ``.tools``) and the ``tokenizers`` module are
copied into ``_build/web-static/ort/``, which both editions serve as ``_static/ort/``;
SmolLM2's files are exported into ``_build/web-static/smollm2/`` (again only when what they are
made from changes: ``python -m tinyk.web.onnx_web --reuse``), under a lock of their own
(:func:`export_smollm2`), by whichever edition gets to it first.
"""

from __future__ import annotations

import contextlib
import fcntl
import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

_LOG = logging.getLogger(__name__)
PARTS = ("tokens", "next", "generate", "attention", "steps", "residual", "cache", "rope")
# What the site serves of onnxruntime-web: the loader for WebAssembly only, and the module and
# binary it loads (SIMD, with threads where the page is cross-origin isolated).
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
NODE_MODULES = Path(__file__).resolve().parents[2] / ".tools" / "node_modules"
ORT_PACKAGE = NODE_MODULES / "onnxruntime-web"
TOKENIZERS_FILE = NODE_MODULES / "@huggingface" / "tokenizers" / "dist" / "tokenizers.min.mjs"
SERVICE_WORKER = Path(__file__).with_name("tinyk-sw.js")
CHAT_QUESTION = "What is the capital of France?"  # 05.10's question, the message the chat starts with
# The longest prompt the chat takes, in tokens: each layer's scores are T×T per head, computed in full.
CHAT_MAX_PROMPT = 1024
# The memory SmolLM2 takes in the reader's tab once loaded and answering, in GB, as the chat says it
# before the download: tests/test_live_page.py measures the tab's processes in Chromium (1.18 GB after a
# Load and an answer, with the session's prepacked weights).
CHAT_MEMORY_GB = 1.2

# The script's messages: {name} is filled in by the script (the same names in each language).
MESSAGES = {
    "loading": "Loading the model\u2026",
    "ready": "Ready: the model runs in this page. Edit the prompt and press Run.",
    "running": "Running\u2026",
    "static": "WebAssembly is not available in this browser: the panels show the run of the first "
              "prompt computed when the book was built.",
    "failed": "The model could not be loaded ({error}): the panels show the run of the first prompt "
              "computed when the book was built.",
    "unknown": "{char} (character {position}) is not one of the model's tokens: it knows the digits, "
               "+, = and the line break.",
    "empty": "Type at least one token.",
    "error": "The model could not run ({error}).",
    "too-long": "The model reads at most {max} tokens; this text has {count}.",
    "full": "The text has reached the model's {max} tokens.",
    "heatmap": "Attention weights of layer {layer}, query head {head}: a row per query position, a "
               "column per key position.",
    "strongest": "The last token, {token}, attends most to {key} at position {position} ({weight}).",
    "gqa": "Query head {head} reads K/V head {kv}, shared by query heads {group}.",
    "masked": "Grey: masked, a later token (the causal mask).",
    "cache-gqa": "GQA, {kv} K/V heads: {bytes} bytes",
    "cache-mha": "One K/V head per query head, {heads}: {bytes} bytes",
    "cache-rule": "{tokens} tokens \u00d7 2 (K and V) \u00d7 {layers} layers \u00d7 {kv} heads "
                  "\u00d7 {dh} numbers \u00d7 4 bytes",
    "rope": "Pair {pair} turns by \u03c9 = {omega} radians per position: the token at position t by "
            "t\u00b7\u03c9, shown in (\u2212\u03c0, \u03c0].",
    "generated": "generated",
    "generated-text": "{count} token(s) generated: {text}",
    "separator": ", ",  # between the query heads of a group
    # A phone-sized screen: the model waits for the reader's tap (book/_static/tinyk-live.js).
    "waiting": "On a small screen the model waits for you: loading it downloads {size} MB.",
    "load-model": "Load the model, {size} MB",
    "stopped": "Stopped after {count} generated token(s).",
    "legend": "Weight:",
    "cursor-help": "Focus the heatmap and move over its cells with the arrow keys (or touch one) to read "
                   "a weight.",
    "cell": "Query {query} ({qtoken}) \u2192 key {key} ({ktoken}): {weight}",
    "cell-masked": "Query {query} ({qtoken}) \u2192 key {key} ({ktoken}): masked, a later token",
    "steps": "Layer {layer}, query head {head}, the query at position {query} ({token}): each key's scaled "
             "score q\u00b7k/\u221ad_h, the mask added to it (0, or \u2212\u221e for a later token: the "
             "model writes the smallest float, about \u22123.4\u00d710\u00b3\u2078), and the softmax of "
             "the row: the attention weights.",
    "minus-infinity": "\u2212\u221e",
    "residual-rule": "The norm \u2016h\u2016 of each token's vector in the residual stream, after the "
                     "embedding and after each layer, which adds its attention's and its feed-forward's "
                     "outputs to it.",
    "embedding-stage": "the embedding",
    "layer-stage": "after layer {layer}",
}
# The controls' and panels' words.
LABELS = {
    "prompt": "Prompt", "run": "Run", "tokens": "Tokens", "next": "The next token: its 10 most likely",
    "token": "Token", "probability": "Probability", "generate": "Generation",
    "decoding": "Decoding", "greedy": "greedy: the most likely token",
    "sampled": "sampled at the temperature",
    "temperature": "Temperature", "count": "New tokens", "step": "One token", "go": "Generate",
    "reset": "Back to the prompt", "attention": "Attention weights", "layer": "Layer",
    "head": "Query head", "cache": "The KV cache", "rope": "RoPE angles", "pair": "Pair index i",
    "position": "Position", "angle": "Angle (radians)", "stop": "Stop", "topk": "Top-k (0: every token)",
    "topp": "Top-p", "steps": "Before the softmax: the scores and the mask", "query": "Query position",
    "key": "Key", "score": "Scaled score", "mask": "Mask added", "weight": "Weight",
    "residual": "The residual stream's norm", "stage": "Point in the model",
    "last-norm": "The last token's norm", "mean-norm": "Mean over the tokens",
}
# SmolLM2's chat: the script's messages, then the controls' and panels' words.
CHAT_MESSAGES = {
    "chat-idle": "SmolLM2 runs in this page once it is loaded: the button fetches its files, which your "
                 "browser can keep in its cache.",
    "chat-memory": "SmolLM2 is large for a page: loading it downloads {size} MB, and while it runs this "
                   "tab uses about {memory} GB of memory.",
    "chat-downloading": "Downloading SmolLM2: {done} of {total} MB",
    "chat-starting": "Starting the model\u2026",
    "chat-ready": "Ready: SmolLM2 runs in this page. Write a message and press Answer.",
    "chat-answering": "Answering\u2026",
    "chat-reading": "Reading the {count}-token prompt\u2026",
    "chat-stopped": "Stopped after {count} token(s).",
    "chat-download-stopped": "Download stopped: the button starts it again.",
    "chat-done": "{count} token(s) in {seconds} s: the prompt's call {prefill} s, then {rate} tokens per "
                 "second ({decoding}, {threads}).",
    "chat-greedy": "greedy decoding",
    "chat-sampled": "sampled at temperature {temperature}",
    "chat-one-thread": "one thread",
    "chat-threads": "{count} threads",
    "chat-too-long": "The prompt has {count} tokens; the page answers prompts of at most {max}.",
    "chat-failed": "SmolLM2 could not be loaded ({error}).",
    "chat-static": "WebAssembly is not available in this browser: SmolLM2 cannot run here.",
    "chat-empty": "Write a message first.",
    "chat-error": "The model could not run ({error}).",
    "chat-layer": "Reading the {count} tokens again for the attention weights of layer {layer}\u2026",
    "chat-layer-done": "Layer {layer}: the {count} tokens read again in {seconds} s.",
    "chat-cache": "{tokens} tokens \u00d7 2 (K and V) \u00d7 {layers} layers \u00d7 {kv} heads \u00d7 {dh} "
                  "numbers \u00d7 4 bytes = {bytes} bytes; with one K/V head per query head ({heads}): "
                  "{mha} bytes",
}
CHAT_LABELS = {
    "load": "Load SmolLM2, {size} MB", "download": "Download", "message": "Your message",
    "answer": "Answer", "limit": "New tokens at most", "prompt-tokens": "The prompt's tokens",
    "reply": "SmolLM2's answer", "first": "The answer's first token: its 10 most likely",
}
WORDS = (*MESSAGES.values(), *LABELS.values(), *CHAT_MESSAGES.values(), *CHAT_LABELS.values())


class PlaygroundDirective(SphinxDirective):
    """``:::{playground}`` with an optional ``:show:`` (see the module)."""

    has_content = False
    option_spec: ClassVar[dict] = {"show": str}

    def run(self) -> list[nodes.Node]:
        shown = (self.options.get("show") or " ".join(PARTS)).split()
        unknown = [p for p in shown if p not in PARTS]
        if unknown or not shown:
            raise self.error(f"{self.env.docname}: playground :show: {' '.join(shown)!r}: each part must "
                             f"be one of {', '.join(PARTS)}")
        words = self._words()
        serial = self.env.new_serialno("tinyk-playground") + 1
        page = playground_html(f"tinyk-pg-{serial}", shown, words, self._data())
        return [nodes.raw("", page, format="html")]

    def _data(self) -> str:
        """The manifest and the example run as JSON for the page (``""`` for a builder that
        writes no HTML, such as the Chinese edition's gettext builder)."""
        if self.env.app.builder.format != "html":
            return ""
        models = Path(self.env.app.doctreedir).parent / "web-static" / "models"
        data = {}
        for key, name in (("manifest", "tiny.json"), ("example", "tiny-example.json")):
            path = models / name
            if not path.is_file():
                raise self.error(f"{self.env.docname}: the playground needs {path}, which the build "
                                 f"writes when tinyk_course_model is on")
            self.env.note_dependency(str(path))
            data[key] = json.loads(path.read_text(encoding="utf-8"))
        # What starting the playground downloads: ONNX Runtime Web's files and the graph (a
        # phone-sized screen says it and waits for the reader's tap, book/_static/tinyk-live.js).
        ort = models.parent / "ort"
        data["bytes"] = (sum((ort / name).stat().st_size for name in ORT_FILES)
                         + (models / data["manifest"]["onnx"]).stat().st_size)
        return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")

    def _words(self) -> dict[str, str]:
        return edition_words(self)


def edition_words(directive: SphinxDirective, words: tuple[str, ...] = WORDS) -> dict[str, str]:
    """``words`` (:data:`WORDS`) in the edition's language (a missing translation is a warning)."""
    if not str(directive.config.language or "en").startswith("zh"):
        return {w: w for w in words}
    from tinyk.courseware.catalogues import interface_catalogue, translated

    catalogue = interface_catalogue(Path(directive.env.srcdir))
    directive.env.note_dependency(str(catalogue))
    zh = translated(catalogue)
    for word in words:
        if word not in zh:
            _LOG.warning(f"{catalogue.name} has no translation of the playground's {word!r}",
                         location=directive.get_location())
    return {w: zh.get(w, w) for w in words}


class ChatDirective(SphinxDirective):
    """``:::{smollm2}``: SmolLM2's chat (see the module)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        words = edition_words(self)
        serial = self.env.new_serialno("tinyk-chat") + 1
        manifest: dict = {}
        if self.env.app.builder.format == "html":
            path = Path(self.env.app.doctreedir).parent / "web-static" / "smollm2" / "smollm2.json"
            if not path.is_file():
                raise self.error(f"{self.env.docname}: the chat needs {path}, which the build writes "
                                 f"when tinyk_course_model and tinyk_smollm2 are on")
            self.env.note_dependency(str(path))
            manifest = json.loads(path.read_text(encoding="utf-8"))
        return [nodes.raw("", chat_html(f"tinyk-chat-{serial}", words, manifest), format="html")]


def chat_html(cid: str, words: dict[str, str], manifest: dict) -> str:
    """The chat's HTML: the load button, the progress bar, the form and empty panels, and the
    manifest's part the script needs (JSON)."""
    def w(key: str) -> str:
        return html.escape(words[CHAT_LABELS[key]])

    def label_of(key: str) -> str:
        return html.escape(words[LABELS[key]])

    total = sum(f["bytes"] for f in manifest.get("files", []))
    keys = ("onnx", "external_data", "files", "web_session_config", "web_graph_optimization", "config",
            "bos_token_id", "eos_token_id", "attention_layers", "layer_input", "default_layer", "tokenizer",
            "stamp")
    data = json.dumps({k: manifest[k] for k in keys if k in manifest}
                      | {"question": CHAT_QUESTION, "max_prompt": CHAT_MAX_PROMPT},
                      ensure_ascii=False).replace("</", "<\\/")
    panels = {
        "reply": '<p class="tinyk-chat-reply"></p>',
        "first": (f'<table class="tinyk-pg-next"><thead><tr><th scope="col">'
                  f'{html.escape(words[LABELS["token"]])}</th><th scope="col">'
                  f'{html.escape(words[LABELS["probability"]])}</th></tr></thead><tbody></tbody></table>'),
    }
    # The answer first, right under the form; the chat template's tokens in a box of their own,
    # which a phone-sized screen closes (book/_static/tinyk-live.js).
    figures = "".join(f'<figure class="tinyk-pg-panel" id="{cid}-{key}"><figcaption>{w(key)}</figcaption>'
                      f'{panel}</figure>' for key, panel in panels.items())
    template = (f'<details class="tinyk-pg-panel tinyk-chat-template" id="{cid}-tokens" open><summary>'
                f'{w("prompt-tokens")}</summary><ol class="tinyk-pg-tokenlist tinyk-chat-tokens"></ol>'
                '</details>')
    label = html.escape(words[LABELS["head"]])
    # The layer: any of SmolLM2's, chosen at each call of its graph (tinyk.web.onnx_layers); a new choice
    # reads the text again once the answer is over.
    attention = (f'<figure class="tinyk-pg-panel" id="{cid}-attention"><figcaption>'
                 f'{html.escape(words[LABELS["attention"]])}'
                 f'</figcaption><div class="tinyk-pg-controls"><label for="{cid}-layer">{label_of("layer")}'
                 f'</label> <select id="{cid}-layer" class="tinyk-pg-layer" disabled></select> '
                 f'<label for="{cid}-head">{label}</label> '
                 f'<select id="{cid}-head" class="tinyk-pg-head"></select></div><p class="tinyk-pg-gqa"></p>'
                 '<div class="tinyk-pg-heatmap"></div><p class="tinyk-pg-strongest"></p>'
                 '<p class="tinyk-pg-masked"></p></figure>')
    cache = (f'<figure class="tinyk-pg-panel" id="{cid}-cache"><figcaption>'
             f'{html.escape(words[LABELS["cache"]])}</figcaption>'
             '<p class="tinyk-chat-cache"></p></figure>')
    rope = (f'<figure class="tinyk-pg-panel" id="{cid}-rope"><figcaption>{html.escape(words[LABELS["rope"]])}'
            '</figcaption>'
            f'{_rope(cid, label_of)}</figure>')
    shared = {key: MESSAGES[key] for key in ("heatmap", "strongest", "gqa", "masked", "separator", "rope",
                                             "legend", "cursor-help", "cell", "cell-masked")}
    hidden = "".join(f'<span class="tinyk-pg-word" data-word="{key}" hidden>{html.escape(words[text])}</span>'
                     for key, text in {**CHAT_MESSAGES, **shared}.items())
    size = f"{total / 1e6:.0f}"
    memory = fill(words[CHAT_MESSAGES["chat-memory"]], size=size, memory=str(CHAT_MEMORY_GB))
    return (f'<div class="tinyk-chat" id="{cid}" data-state="idle"><p class="tinyk-chat-size">'
            f'{html.escape(memory)}</p><p><button type="button" '
            f'class="btn btn-sm tinyk-chat-load">{w("load").replace("{size}", size)}</button> '
            f'<progress class="tinyk-chat-progress" max="{total}" value="0" aria-label="{w("download")}" '
            f'hidden></progress></p><p class="tinyk-chat-status" role="status" aria-live="polite">'
            f'{html.escape(words[CHAT_MESSAGES["chat-idle"]])}</p>'
            f'<form class="tinyk-chat-form"><label for="{cid}-message">{w("message")}</label> '
            f'<input type="text" id="{cid}-message" class="tinyk-chat-message" autocomplete="off" disabled> '
            f'<label for="{cid}-limit">{w("limit")}</label> <input type="number" id="{cid}-limit" '
            f'class="tinyk-chat-limit" min="1" max="256" value="48" disabled> '
            f'{_decoding(cid, label_of, disabled=True)}'
            f'<button type="submit" class="btn btn-sm tinyk-chat-answer" disabled>{w("answer")}</button> '
            f'<button type="button" class="btn btn-sm tinyk-chat-stop" disabled>{label_of("stop")}</button>'
            f'</form>{figures}{template}{attention}{cache}{rope}{hidden}'
            f'<script type="application/json" class="tinyk-chat-data">{data}</script></div>\n')


def fill(text: str, **values: str) -> str:
    """``text`` with each ``{name}`` of ``values`` written in (as the script's ``fill``)."""
    for name, value in values.items():
        text = text.replace(f"{{{name}}}", value)
    return text


def _decoding(pid: str, w: Callable[[str], str], disabled: bool = False) -> str:
    """The decoding select, the temperature slider, top-k and top-p (a playground's and the chat's, which
    enables them once the model is loaded)."""
    off = " disabled" if disabled else ""
    return (f'<label for="{pid}-decoding">{w("decoding")}</label> '
            f'<select id="{pid}-decoding" class="tinyk-pg-decoding"{off}>'
            f'<option value="greedy">{w("greedy")}</option>'
            f'<option value="sampled">{w("sampled")}</option></select> '
            f'<label for="{pid}-temperature">{w("temperature")}</label> <input type="range" '
            f'id="{pid}-temperature" class="tinyk-pg-temperature" min="0.1" max="2" step="0.1" '
            f'value="1"{off}> '
            f'<output for="{pid}-temperature" class="tinyk-pg-temperature-value">1.0</output> '
            f'<label for="{pid}-topk">{w("topk")}</label> <input type="number" id="{pid}-topk" '
            f'class="tinyk-pg-topk" min="0" step="1" value="0"{off}> '
            f'<label for="{pid}-topp">{w("topp")}</label> <input type="range" id="{pid}-topp" '
            f'class="tinyk-pg-topp" min="0.05" max="1" step="0.05" value="1"{off}> '
            f'<output for="{pid}-topp" class="tinyk-pg-topp-value">1.00</output> ')


def _rope(pid: str, w: Callable[[str], str]) -> str:
    """The RoPE panel's controls, circle and table (a playground's and the chat's)."""
    return (f'<div class="tinyk-pg-controls"><label for="{pid}-pair">{w("pair")}</label> '
            f'<select id="{pid}-pair" class="tinyk-pg-pair"></select></div>'
            '<p class="tinyk-pg-omega"></p><div class="tinyk-pg-circle"></div>'
            f'<table class="tinyk-pg-angles"><thead><tr><th scope="col">{w("position")}</th>'
            f'<th scope="col">{w("token")}</th><th scope="col">{w("angle")}</th></tr></thead>'
            "<tbody></tbody></table>")


def _heads(w: Callable[[str], str], *keys: str) -> str:
    """A table's column headers, the words of ``keys``."""
    return "".join(f'<th scope="col">{w(key)}</th>' for key in keys)


def playground_html(pid: str, shown: list[str], words: dict[str, str], data: str) -> str:
    """The playground's HTML: controls and empty panels, filled in by the script, and ``data``
    (JSON: the model's manifest and the example run)."""
    def w(key: str) -> str:
        return html.escape(words[LABELS[key]])

    select = ('<label for="{pid}-{name}">{label}</label> '
              '<select id="{pid}-{name}" class="tinyk-pg-{name}"></select>')
    panels = {
        "tokens": f'<ol class="tinyk-pg-tokenlist" aria-label="{w("tokens")}"></ol>',
        "next": (f'<table class="tinyk-pg-next"><thead><tr><th scope="col">{w("token")}</th>'
                 f'<th scope="col">{w("probability")}</th></tr></thead><tbody></tbody></table>'),
        "generate": (
            f'<div class="tinyk-pg-controls">{_decoding(pid, w)}'
            f'<label for="{pid}-count">{w("count")}</label> <input type="number" id="{pid}-count" '
            f'class="tinyk-pg-count" min="1" max="64" value="4"></div>'
            '<div class="tinyk-pg-controls">'
            f'<button type="button" class="btn btn-sm tinyk-pg-step">{w("step")}'
            f'</button> <button type="button" class="btn btn-sm tinyk-pg-go">{w("go")}</button> '
            f'<button type="button" class="btn btn-sm tinyk-pg-reset">{w("reset")}</button> '
            f'<button type="button" class="btn btn-sm tinyk-pg-stop" disabled>{w("stop")}</button></div>'
            '<p class="tinyk-pg-text"></p>'),
        "attention": (
            '<div class="tinyk-pg-controls">' + select.format(pid=pid, name="layer", label=w("layer"))
            + " " + select.format(pid=pid, name="head", label=w("head")) + "</div>"
            '<p class="tinyk-pg-gqa"></p><div class="tinyk-pg-heatmap"></div>'
            '<p class="tinyk-pg-strongest"></p><p class="tinyk-pg-masked"></p>'),
        "steps": (
            '<div class="tinyk-pg-controls">' + select.format(pid=pid, name="steps-layer", label=w("layer"))
            + " " + select.format(pid=pid, name="steps-head", label=w("head")) + " "
            + select.format(pid=pid, name="query", label=w("query")) + "</div>"
            '<p class="tinyk-pg-steps-rule"></p><table class="tinyk-pg-steps"><thead><tr>'
            + _heads(w, "key", "token", "score", "mask", "weight") + "</tr></thead><tbody></tbody></table>"),
        "residual": ('<p class="tinyk-pg-residual-rule"></p><table class="tinyk-pg-norms"><thead><tr>'
                     + _heads(w, "stage", "last-norm", "mean-norm") + "</tr></thead><tbody></tbody></table>"),
        "cache": '<div class="tinyk-pg-cachebars"></div><p class="tinyk-pg-cacherule"></p>',
        "rope": _rope(pid, w),
    }
    figures = "".join(f'<figure class="tinyk-pg-panel" id="{pid}-{part}" data-part="{part}"><figcaption>'
                      f'{w(part)}'
                      f"</figcaption>{panels[part]}</figure>" for part in shown)
    hidden = "".join(f'<span class="tinyk-pg-word" data-word="{key}" hidden>{html.escape(words[text])}</span>'
                     for key, text in MESSAGES.items())
    return (f'<div class="tinyk-playground" id="{pid}" data-model="tiny" data-parts="{" ".join(shown)}">'
            f'<form class="tinyk-pg-form"><label for="{pid}-prompt">{w("prompt")}</label>'
            f'<textarea id="{pid}-prompt" class="tinyk-pg-prompt" rows="2" spellcheck="false" '
            f'autocomplete="off"></textarea><button type="submit" class="btn btn-sm tinyk-pg-run">{w("run")}'
            f'</button></form><p class="tinyk-pg-status" role="status" aria-live="polite">'
            f'{html.escape(words[MESSAGES["loading"]])}</p>{figures}{hidden}'
            f'<script type="application/json" class="tinyk-pg-data">{data}</script></div>\n')


def copy_runtime(app) -> None:
    """ONNX Runtime Web's files and the ``tokenizers`` module into ``_build/web-static/ort/``
    (served as ``_static/ort/``), and SmolLM2's files into ``_build/web-static/smollm2/``
    (exported again only when what they are made from changed)."""
    if app.builder.format != "html" or not app.config.tinyk_course_model:
        return
    package = ORT_PACKAGE
    missing = [name for name in ORT_FILES if not (package / "dist" / name).is_file()]
    if missing:
        raise ExtensionError(f"onnxruntime-web is not installed in {package.parent} (missing {missing}): "
                             f"`make book` installs it (npm)")
    if not TOKENIZERS_FILE.is_file():
        raise ExtensionError(f"@huggingface/tokenizers is not installed ({TOKENIZERS_FILE} is missing): "
                             f"`make book` installs it (npm)")
    out = Path(app.doctreedir).parent / "web-static" / "ort"
    out.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".ort.lock", "w") as lock:  # the other edition's build may copy them now
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        for source in [*(package / "dist" / name for name in ORT_FILES), TOKENIZERS_FILE]:
            target = out / source.name
            if not target.exists() or target.stat().st_size != source.stat().st_size:
                shutil.copyfile(source, target)
    export_smollm2(app)


def write_service_worker(app, exception) -> None:
    """``tinyk-sw.js`` at the root of the edition just built (see the module)."""
    if exception is None and app.builder.format == "html":
        shutil.copyfile(SERVICE_WORKER, Path(app.outdir) / SERVICE_WORKER.name)


def export_smollm2(app) -> None:
    """SmolLM2's files into ``_build/web-static/smollm2/``, under a lock of their own: an edition
    that finds the 05.7 model's lock taken (the other edition exporting it) exports SmolLM2
    meanwhile (``tinyk_book``), and the other then finds them made. A no-op without
    ``tinyk_smollm2``, or when the files are there from the same inputs."""
    if app.builder.format != "html" or not (app.config.tinyk_course_model and app.config.tinyk_smollm2):
        return
    from tinyk.web.onnx_web import main as export

    static = Path(app.doctreedir).parent / "web-static"
    static.mkdir(parents=True, exist_ok=True)
    with open(static / ".smollm2.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        with open(static / ".smollm2.log", "a") as log, contextlib.redirect_stdout(log):
            export(["--out", str(static / "smollm2"), "--reuse"])


def setup(app):
    # False: a book without SmolLM2's files (a test's scratch book; its chat then stops the build)
    app.add_config_value("tinyk_smollm2", True, "html", bool)
    app.add_directive("playground", PlaygroundDirective)
    app.add_directive("smollm2", ChatDirective)
    app.add_js_file("tinyk-live.js", loading_method="defer")  # before the playground's script, which uses it
    app.add_js_file("tinyk-playground.js", loading_method="defer")
    app.connect("builder-inited", copy_runtime)
    app.connect("build-finished", write_service_worker)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
