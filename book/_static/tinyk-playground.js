// The playground (the book's playground directive, book/_ext/tinyk_playground.py): the 05.7 model
// runs in this page with ONNX Runtime Web, served from the site's own _static/ort/ (no request
// leaves the site). The page holds the model's manifest and the run of its first prompt computed
// when the book was built (tinyk.web.playground): without WebAssembly the panels show that run. The
// words are the page's (hidden elements), so the Chinese edition's are Chinese.
"use strict";
(() => {
  const playgrounds = document.querySelectorAll(".tinyk-playground");
  const chats = document.querySelectorAll(".tinyk-chat");
  if (playgrounds.length === 0 && chats.length === 0) {
    return;
  }
  const STATIC = new URL("./", document.currentScript.src);
  const SVG = "http://www.w3.org/2000/svg";
  // The models run in the engine, a Web Worker (tinyk-engine.js, one per page, shared by its
  // playgrounds and chat): the page only draws, and stays responsive while a model reads a prompt.
  let engine = null;
  let tinyLoaded = null; // the 05.7 model's session in the engine, once per page
  // One thread for ONNX Runtime, from a measure: benchmarks/bench_browser.py, on a machine of two
  // processors with other processes busy (a load average of 11), decoded SmolLM2 at 1.33 times
  // PyTorch's speed on one thread and at 0.48 times on two, and the 05.7 model at 0.41 and 0.27
  // times; again with idle threads that no longer spin (load average 11 to 13): SmolLM2 at 1.01 and
  // 0.66 times, the 05.7 model at 0.25 and 0.26 times (measures of the runtime's baseline code: see
  // WARM_CALLS). Once the page warms the runtime up (load average 1 to 3): the 05.7 model at 4.49
  // times on one thread and 1.77 on two, SmolLM2 at 0.74 and 0.43. Once SmolLM2's weights were
  // prepacked (tinyk.web.onnx_web's WEB_SESSION_CONFIG says why; load average 3.3 to 3.6): the 05.7
  // model at 1.96 and 1.19 times, SmolLM2 at 1.61 and 1.70. The 05.7 model's calls are too small for a
  // second thread to pay for their synchronisation, SmolLM2 gains little from it, and a second thread
  // takes a processor from the page. A page opened with ?threads=N (the benchmark's) asks for N,
  // which ONNX Runtime grants only where the page is cross-origin isolated.
  const THREADS = Math.max(1, Math.min(4, Number(new URLSearchParams(location.search).get("threads")) || 1));
  // The book's service worker (tinyk-sw.js, at the edition's root: STATIC's parent) makes the
  // pages the reader opens next cross-origin isolated, which threads need; where it cannot be
  // registered (a file:// page, a browser without service workers), one thread in any case.
  if (!self.crossOriginIsolated && window.isSecureContext && "serviceWorker" in navigator) {
    navigator.serviceWorker.register(new URL("../tinyk-sw.js", STATIC).href).catch(() => {});
  }

  // The engine's calls: call(op, args, progress) answers with the engine's result (a rejected
  // promise for its error; an AbortError for a download the reader stopped).
  function getEngine() {
    if (engine === null) {
      const worker = new Worker(new URL("tinyk-engine.js", STATIC).href);
      const waiting = new Map();
      let next = 0;
      worker.onmessage = ({ data }) => {
        const call = waiting.get(data.id);
        if (call === undefined) {
          return;
        }
        if ("progress" in data) {
          call.progress?.(data.progress);
          return;
        }
        waiting.delete(data.id);
        if ("error" in data) {
          const error = new Error(data.error);
          error.name = data.aborted ? "AbortError" : "Error";
          call.reject(error);
        } else {
          call.resolve(data.result);
        }
      };
      worker.onerror = (event) => {
        for (const call of waiting.values()) {
          call.reject(new Error(event.message || "the engine stopped"));
        }
        waiting.clear();
      };
      engine = {
        worker,
        call: (op, args = {}, progress = null) => new Promise((resolve, reject) => {
          next += 1;
          waiting.set(next, { resolve, reject, progress });
          worker.postMessage({ id: next, op, ...args });
        }),
      };
    }
    return engine;
  }

  function loadTiny(manifest) {
    if (tinyLoaded === null) {
      tinyLoaded = getEngine().call("load-tiny", { url: new URL(`models/${manifest.onnx}`, STATIC).href,
        threads: THREADS }).catch((error) => {
        tinyLoaded = null; // a failed load (the network, say) is tried again by the next playground
        throw error;
      });
    }
    return tinyLoaded;
  }

  // The 05.7 model's warm-up: once per page, after its first prompt has run, WARM_CALLS decode calls
  // in the engine whose tokens nobody reads, asked for WARM_PIECE at a time (a reader's click waits
  // at most for one piece). Why: the browser compiles ONNX Runtime's WebAssembly first with its
  // quick baseline compiler (V8's Liftoff), and again, optimised (TurboFan), a function at a time,
  // in the background, only once that function has run enough. The 05.7 model's calls are tiny
  // (0.12 ms per token in ONNX Runtime in Python here), so a token's time is the runtime's own code
  // around the graph, much of which runs once per call: it stays baseline code for hundreds of
  // calls. On a busy machine of two processors (load average 5 to 6), a fresh page's engine took
  // 8.5 ms per call over its first 160 calls, 3.9 over the next 160, 1.1 by 640 and 0.3 to 1.4
  // from 800 calls on (about 3.5 s); with Chromium's baseline compiler switched off
  // (--js-flags=--no-liftoff, which a page cannot ask for) its 48-token decodes ran at 2,100 to
  // 3,000 tokens/s from the second on. Fetching the panels' outputs on each call or not changed it by
  // less than that noise (as did a graph without them, in Python: 0.119 ms), and creating a call's
  // inputs and reading its logits took 0.01 ms: the time is in session.run. So the decode of
  // benchmarks/bench_browser.py (one untimed decode, then three timed) measured mostly baseline
  // code, 0.23 times PyTorch's speed, and a reader's first answers were as slow. With the warm-up, the optimised code is there by the time the reader has read
  // the first prompt's panels. A page opened with ?warm=0 (the benchmark's "before") skips it, and
  // SmolLM2's Load ends it (the calls of the warm-up so far come back in its count).
  const WARM = new URLSearchParams(location.search).get("warm") !== "0";
  const WARM_CALLS = 960;
  const WARM_PIECE = 16;
  let tinyWarm = null;
  let warmStopped = false; // SmolLM2's Load ends the warm-up: its calls are the reader's now
  // SmolLM2's warm-up, for the same reason, though its calls are large: the runtime's code that a
  // token of SmolLM2 runs is baseline code at first too. Measured in Chromium, one thread, several
  // pages side by side (load average about 4 on 2 processors): a page's first 32-token answer decoded
  // at 11.3 tokens/s and its next ones at 22.5 to 25.9, while a page whose baseline compiler was off
  // (--js-flags=--no-liftoff) decoded its first at 25.2. So once SmolLM2 is loaded, the engine decodes
  // SMOLLM2_WARM_CALLS tokens nobody reads, SMOLLM2_WARM_PIECE calls at a time, until the reader asks
  // for anything (a reader's call waits for one piece at the most); ?warm=0 turns it off too. Fresh
  // browsers, one page each, alternating (load average 8 to 10): first answers at 13.8, 22.0 and
  // 18.7 tokens/s after the warm-up (32 calls, 3.2 to 4.7 s of the engine's time), 13.3, 7.0 and
  // 9.6 without it.
  const SMOLLM2_WARM_CALLS = 32;
  const SMOLLM2_WARM_PIECE = 2;

  // A warm-up (above): `total` decode calls of `model` from `ids`, `piece` at a time, while `going()`;
  // its calls and their engine time.
  async function warmUp(engine, model, config, ids, total, piece, going) {
    let ms = 0;
    let calls = 0;
    for (; WARM && going() && calls < total; calls += piece) {
      ms += await engine.call("warm", { model, config, ids, calls: piece });
    }
    return { calls, seconds: ms / 1000 };
  }

  // The 05.7 model's warm-up, from the prompt `ids`, once; the promise of what it did.
  function warmTiny(config, ids) {
    if (tinyWarm === null) {
      tinyWarm = warmUp(getEngine(), "tiny", config, ids, WARM_CALLS, WARM_PIECE, () => !warmStopped);
    }
    return tinyWarm;
  }

  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (all, name) => (name in values ? values[name] : all));
  const shown = (token) => (token === "\n" ? "\u21b5" : token);

  function element(tag, attributes = {}, text = null, namespace = null) {
    const node = namespace ? document.createElementNS(namespace, tag) : document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      node.setAttribute(name, value);
    }
    if (text !== null) {
      node.textContent = text;
    }
    return node;
  }

  function softmax(logits, temperature) { // plain loops: SmolLM2 has 49,152 logits
    const n = logits.length;
    let top = -Infinity;
    for (let i = 0; i < n; i++) {
      top = Math.max(top, logits[i]);
    }
    const p = new Float64Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) {
      p[i] = Math.exp((logits[i] - top) / temperature);
      total += p[i];
    }
    for (let i = 0; i < n; i++) {
      p[i] /= total;
    }
    return p;
  }

  // A pause for the page to draw and answer the reader between two pieces of work.
  const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

  // parent's children made from items by make(item, index), 100 per task: a long list never
  // keeps the page busy at once. A later call for the same parent stops an earlier one.
  async function fillInSteps(parent, items, make) {
    const run = (parent.tinykRun ?? 0) + 1;
    parent.tinykRun = run;
    parent.replaceChildren();
    for (let start = 0; start < items.length; start += 100) {
      if (start > 0) {
        await nextTask();
        if (parent.tinykRun !== run) {
          return;
        }
      }
      parent.append(...items.slice(start, start + 100).map((item, k) => make(item, start + k)));
    }
  }

  // The shares the next token is drawn from: softmax(logits / T), then only the k most likely
  // (top-k; 0: every token) and, of those, the fewest whose shares reach p (top-p; 1: all of them),
  // their shares divided by their sum. The lowest id first on a tie, as torch.argmax.
  function distribution(logits, { temperature, topK, topP }) {
    const p = softmax(logits, temperature);
    const k = topK > 0 && topK < p.length ? topK : p.length;
    if (k === p.length && !(topP < 1)) {
      return p;
    }
    const order = [...p.keys()].sort((a, b) => p[b] - p[a] || a - b);
    let keep = k;
    let sum = 0;
    for (let i = 0; i < k; i++) {
      sum += p[order[i]];
      if (sum >= topP) {
        keep = i + 1;
        break;
      }
    }
    const kept = order.slice(0, keep);
    const total = kept.reduce((t, id) => t + p[id], 0);
    const out = new Array(p.length).fill(0);
    for (const id of kept) {
      out[id] = p[id] / total;
    }
    return out;
  }

  // The decoding controls of a playground or the chat (root: its element): temperature, top-k, top-p.
  function sampling(root) {
    const value = (selector, fallback) => {
      const control = root.querySelector(selector);
      return control ? Number(control.value) : fallback;
    };
    const topK = value(".tinyk-pg-topk", 0);
    return { temperature: value(".tinyk-pg-temperature", 1), topK: Number.isInteger(topK) && topK > 0 ? topK : 0,
      topP: Math.min(1, Math.max(0.05, value(".tinyk-pg-topp", 1))) };
  }

  function showSampling(root) {
    const { temperature, topP } = sampling(root);
    for (const [selector, value] of [[".tinyk-pg-temperature-value", temperature], [".tinyk-pg-topp-value", topP]]) {
      const output = root.querySelector(selector);
      if (output) {
        output.textContent = value.toFixed(selector.includes("topp") ? 2 : 1);
      }
    }
  }

  // The token whose share of p holds r (0 <= r < 1): the first id whose running total passes r
  // (if rounding leaves the total at r, the last id with a share).
  function sample(p, r) {
    let last = 0;
    for (const [id, share] of p.entries()) {
      r -= share;
      if (r < 0) {
        return id;
      }
      last = share > 0 ? id : last;
    }
    return last;
  }

  // A call's outputs as the page shows them, the shape of the build's example run.
  function view(ids, out) {
    const rows = (data, n, width) => Array.from({ length: n }, (_, i) => Array.from(data.subarray(i * width, (i + 1) * width)));
    const [layers, , heads, queries, keys] = out.attention.dims;
    const attention = rows(out.attention.data, layers * heads * queries, keys);
    const pairs = out.rope_angles.dims[2];
    const vocab = out.logits.dims[2];
    return {
      ids,
      logits: rows(out.logits.data, ids.length, vocab),
      attention: Array.from({ length: layers }, (_, l) => Array.from({ length: heads },
        (_, h) => attention.slice((l * heads + h) * queries, (l * heads + h + 1) * queries))),
      rope_angles: rows(out.rope_angles.data, ids.length, pairs),
      rope_positions: Array.from(out.rope_positions.data, Number),
      cache_length: out.cache_length,
      ...panels(out, rows),
    };
  }

  // The 05.7 graph's steps before the softmax and its residual stream, the shape of the build's
  // example run: scores[layer][head][query][key], mask[0][query][key] (0, or the smallest float),
  // residual_norms[stage][token] (after the embedding, then after each layer).
  function panels(out, rows) {
    if (!out.scores) {
      return {};
    }
    const [layers, , heads, queries, keys] = out.scores.dims;
    const scores = rows(out.scores.data, layers * heads * queries, keys);
    const [stages, , tokens] = out.residual_norms.dims;
    return {
      scores: Array.from({ length: layers }, (_, l) => Array.from({ length: heads },
        (_, h) => scores.slice((l * heads + h) * queries, (l * heads + h + 1) * queries))),
      mask: [rows(out.mask.data, queries, keys)],
      residual_norms: rows(out.residual_norms.data, stages, tokens),
    };
  }

  // A weight's colour, hsl(215, 75%, 97% - 62% w), as RGB: a table of 256 steps.
  // Each as one 32-bit RGBA pixel (little-endian: red in the low byte).
  const pixel = (r, g, b) => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
  const COLOURS = Uint32Array.from({ length: 256 }, (_, k) => {
    const l = (97 - 62 * (k / 255)) / 100;
    const a = 0.75 * Math.min(l, 1 - l);
    const f = (n) => {
      const x = (n + 215 / 30) % 12;
      return Math.round(255 * (l - a * Math.max(-1, Math.min(x - 3, 9 - x, 1))));
    };
    return pixel(f(0), f(8), f(4));
  });
  const MASKED = pixel(0xd4, 0xd4, 0xd4);

  // The attention panel of a playground or the chat: one head's weights as a heatmap on a canvas
  // (row i: query i; grey above the diagonal: the causal mask), any length of text in the same
  // 360 pixels, with the positions on both axes (the tokens themselves where a cell is wide enough),
  // a colour legend, and a cursor that the arrow keys or a touch move over the cells, its weight
  // read out (aria-live). The strongest key of the last token, and which query heads share the
  // head's K/V head (GQA). `weights[i]` holds at least i + 1 numbers. Its drawing time is kept
  // on the panel (data-draw-ms), never in a model's timings.
  async function drawAttentionPanel(q, words, config, { layer, head, weights, tokens }) {
    const started = performance.now();
    const n = tokens.length;
    const cell = n <= 45 ? Math.max(8, Math.min(26, Math.floor(360 / n))) : 360 / n;
    const plot = cell * n;
    const named = cell >= 12; // each token written on the axes; else positions at round steps
    const left = named ? 40 : 34;
    const top = named ? 22 : 18;
    const size = { width: left + plot + 2, height: top + plot + 2 };
    const box = q(".tinyk-pg-heatmap");
    const run = (box.tinykRun ?? 0) + 1; // a later drawing stops this one
    box.tinykRun = run;
    let canvas = box.querySelector("canvas");
    if (canvas === null) {
      canvas = element("canvas", { tabindex: "0", class: "tinyk-pg-canvas" });
      const readout = element("p", { class: "tinyk-pg-readout", "aria-live": "polite" }, words["cursor-help"] ?? "");
      const legend = element("div", { class: "tinyk-pg-legend" });
      legend.append(element("span", {}, words.legend ?? ""), element("span", {}, "0"),
        element("span", { class: "tinyk-pg-legend-bar", "aria-hidden": "true",
          style: "display:inline-block;width:120px;height:10px;margin:0 4px;vertical-align:middle;"
            + "background:linear-gradient(to right,hsl(215,75%,97%),hsl(215,75%,35%))" }), element("span", {}, "1"));
      box.replaceChildren(canvas, legend, readout);
      listenCursor(canvas, readout, words);
      const style = getComputedStyle(box); // read once: reading it again would lay the page out again
      canvas.tinykInk = { color: style.color || "#333", font: style.fontFamily || "sans-serif" };
    }
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(size.width * ratio);
    canvas.height = Math.ceil(size.height * ratio);
    canvas.style.width = `${size.width}px`; // its height follows (tinyk.css), narrower on a phone
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", fill(words.heatmap, { layer, head }));
    // The cells: one pixel per weight, scaled to the plot without smoothing.
    const image = new ImageData(n, n);
    const pixels = new Uint32Array(image.data.buffer);
    pixels.fill(MASKED);
    const rows = Math.max(1, Math.floor(100_000 / n)); // per task: about 100,000 cells
    for (let start = 0; start < n; start += rows) {
      if (start > 0) {
        await nextTask();
        if (box.tinykRun !== run) {
          return;
        }
      }
      paintRows(pixels, weights, n, start, Math.min(n, start + rows));
    }
    const cells = document.createElement("canvas");
    cells.width = n;
    cells.height = n;
    cells.getContext("2d").putImageData(image, 0, 0);
    const base = document.createElement("canvas"); // the figure without the cursor, drawn again under it
    base.width = canvas.width;
    base.height = canvas.height;
    const ctx = base.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(cells, left, top, plot, plot);
    ctx.fillStyle = canvas.tinykInk.color;
    ctx.font = `${named ? 11 : 10}px ${canvas.tinykInk.font}`;
    if (named) {
      ctx.textAlign = "right";
      for (let i = 0; i < n; i++) {
        ctx.fillText(tokens[i].slice(0, 5), left - 4, top + i * cell + cell * 0.7);
      }
      ctx.textAlign = "center";
      for (let j = 0; j < n; j++) {
        ctx.fillText(tokens[j].slice(0, 3), left + j * cell + cell / 2, top - 6);
      }
    } else {
      const step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].find((s) => s * cell >= 30) ?? 2000;
      for (let t = 0; t < n; t += step) {
        ctx.textAlign = "right";
        ctx.fillText(String(t), left - 4, top + (t + 0.5) * cell + 3);
        ctx.fillRect(left - 3, top + (t + 0.5) * cell, 3, 1);
        ctx.textAlign = "center";
        ctx.fillText(String(t), left + (t + 0.5) * cell, top - 6);
        ctx.fillRect(left + (t + 0.5) * cell, top - 3, 1, 3);
      }
    }
    const last = Array.from(weights[n - 1]).slice(0, n);
    const key = last.indexOf(Math.max(...last));
    canvas.tinyk = { n, weights, tokens, cell, left, top, ratio, base, cursor: [n - 1, key] };
    canvas.dataset.tokens = String(n);
    canvas.dataset.head = String(head);
    drawCursor(canvas);
    q(".tinyk-pg-strongest").textContent = fill(words.strongest, { token: tokens[n - 1],
      key: tokens[key], position: key, weight: last[key].toFixed(3) });
    q(".tinyk-pg-masked").textContent = words.masked;
    drawGroups(q, words, config, head);
    box.dataset.drawMs = (performance.now() - started).toFixed(1);
  }

  // Rows from..to of the heatmap's cells: the weights below the diagonal in their colours.
  function paintRows(pixels, weights, n, from, to) {
    for (let i = from; i < to; i++) {
      const row = weights[i];
      const at = i * n;
      for (let j = 0; j <= i; j++) {
        const k = (255 * row[j] + 0.5) | 0; // a weight is in [0, 1]
        pixels[at + j] = COLOURS[k > 255 ? 255 : k < 0 ? 0 : k];
      }
    }
  }

  // The heatmap and its cursor's cell outlined; `say`: the cell's weight read out as well.
  function drawCursor(canvas, say = false) {
    const { base, cell, left, top, ratio, cursor: [i, j], weights, tokens } = canvas.tinyk;
    const ctx = canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(base, 0, 0);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.strokeStyle = "#d9480f";
    ctx.lineWidth = 2;
    const w = Math.max(cell, 4);
    ctx.strokeRect(left + (j + 0.5) * cell - w / 2, top + (i + 0.5) * cell - w / 2, w, w);
    if (say) {
      const values = { query: i, qtoken: tokens[i], key: j, ktoken: tokens[j] };
      const words = canvas.tinykWords;
      canvas.tinykReadout.textContent = j > i ? fill(words["cell-masked"], values)
        : fill(words.cell, { ...values, weight: weights[i][j].toFixed(3) });
    }
  }

  function listenCursor(canvas, readout, words) {
    canvas.tinykReadout = readout;
    canvas.tinykWords = words;
    canvas.addEventListener("keydown", (event) => {
      const state = canvas.tinyk;
      if (!state) {
        return;
      }
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
        PageUp: [-10, 0], PageDown: [10, 0] };
      let [i, j] = state.cursor;
      if (event.key in moves) {
        i += moves[event.key][0];
        j += moves[event.key][1];
      } else if (event.key === "Home") {
        j = 0;
      } else if (event.key === "End") {
        j = i;
      } else {
        return;
      }
      event.preventDefault();
      state.cursor = [Math.max(0, Math.min(state.n - 1, i)), Math.max(0, Math.min(state.n - 1, j))];
      drawCursor(canvas, true);
    });
    const point = (event) => {
      const state = canvas.tinyk;
      if (!state || (event.type === "pointermove" && event.buttons === 0 && event.pointerType !== "mouse")) {
        return;
      }
      const box = canvas.getBoundingClientRect();
      const scale = box.width / (canvas.width / state.ratio); // the canvas may be shown narrower
      const j = Math.floor(((event.clientX - box.left) / scale - state.left) / state.cell);
      const i = Math.floor(((event.clientY - box.top) / scale - state.top) / state.cell);
      if (i >= 0 && j >= 0 && i < state.n && j < state.n) {
        state.cursor = [i, j];
        drawCursor(canvas, true);
      }
    };
    canvas.addEventListener("pointerdown", point);
    canvas.addEventListener("pointermove", point);
    canvas.addEventListener("focus", () => drawCursor(canvas, true));
  }

  function drawGroups(q, words, config, head) {
    const { n_heads: heads, n_kv_heads: kvHeads } = config;
    const rep = heads / kvHeads;
    const kv = Math.floor(head / rep);
    const group = [...Array(rep).keys()].map((i) => kv * rep + i);
    const box = 34;
    const width = heads * (box + 8);
    const svg = element("svg", { width, height: 78, viewBox: `0 0 ${width} 78`, "aria-hidden": "true",
      class: "tinyk-pg-groups" }, null, SVG);
    for (let h = 0; h < heads; h++) {
      const x = h * (box + 8);
      const k = Math.floor(h / rep);
      const kx = (k * rep + (rep - 1) / 2) * (box + 8);
      svg.append(element("line", { x1: x + box / 2, y1: 22, x2: kx + box / 2, y2: 56,
        class: k === kv ? "tinyk-pg-chosen" : "" }, null, SVG));
      svg.append(element("rect", { x, y: 2, width: box, height: 20, rx: 3,
        class: h === head ? "tinyk-pg-chosen" : "" }, null, SVG));
      svg.append(element("text", { x: x + box / 2, y: 16, "text-anchor": "middle" }, `q${h}`, SVG));
    }
    for (let k = 0; k < kvHeads; k++) {
      const x = (k * rep + (rep - 1) / 2) * (box + 8);
      svg.append(element("rect", { x, y: 56, width: box, height: 20, rx: 3,
        class: k === kv ? "tinyk-pg-chosen" : "" }, null, SVG));
      svg.append(element("text", { x: x + box / 2, y: 70, "text-anchor": "middle" }, `kv${k}`, SVG));
    }
    q(".tinyk-pg-gqa").replaceChildren(element("span", {}, fill(words.gqa, { head, kv,
      group: group.join(words.separator) })), svg);
  }

  // The 10 ids of the largest shares of p, the lowest id first on a tie (as torch.argmax).
  function topTen(p) {
    const order = [];
    for (let id = 0; id < p.length; id++) { // a short insertion: SmolLM2's p has 49,152 shares
      if (order.length < 10 || p[id] > p[order[order.length - 1]]) {
        order.push(id);
        order.sort((a, b) => p[b] - p[a] || a - b);
        order.length = Math.min(order.length, 10);
      }
    }
    return order;
  }

  // The next-token table of a playground or the chat: the 10 largest shares of p, the lowest id
  // first on a tie (as torch.argmax), each with its bar; label(id) is its token.
  function drawTopTen(q, p, label) {
    const order = topTen(p);
    q(".tinyk-pg-next tbody").replaceChildren(...order.map((id) => {
      const row = element("tr");
      const share = element("td");
      share.append(element("span", { class: "tinyk-pg-bar", style: `width: ${(100 * p[id]).toFixed(1)}%`,
        "aria-hidden": "true" }), element("span", {}, p[id].toFixed(3)));
      row.append(element("td", { class: "tinyk-pg-chip-cell" }, label(id)), share);
      return row;
    }));
  }

  // The RoPE panel of a playground or the chat: the angle by which pair `pair` of each token was
  // turned (`angles[t][pair]`, as the graph returns it), on a circle and in a table.
  function drawRopePanel(q, words, config, { pair, angles, positions, tokens }) {
    const { rope_theta: theta, head_dim: dh } = config;
    const omega = theta ** (-2 * pair / dh);
    q(".tinyk-pg-omega").textContent = fill(words.rope, { pair, omega: omega.toPrecision(4) });
    const turned = angles.map((row) => row[pair]);
    const svg = element("svg", { width: 180, height: 180, viewBox: "-90 -90 180 180", "aria-hidden": "true" }, null, SVG);
    svg.append(element("circle", { cx: 0, cy: 0, r: 70, class: "tinyk-pg-unit" }, null, SVG));
    const first = Math.max(0, turned.length - 64); // the circle: the last 64 tokens (the table: all)
    for (const [t, angle] of turned.entries()) {
      if (t < first) {
        continue;
      }
      const x = 70 * Math.cos(angle);
      const y = -70 * Math.sin(angle);
      svg.append(element("line", { x1: 0, y1: 0, x2: x, y2: y, class: "tinyk-pg-arrow" }, null, SVG));
      svg.append(element("text", { x: x * 1.15, y: y * 1.15 + 4, "text-anchor": "middle" }, String(positions[t]), SVG));
    }
    q(".tinyk-pg-circle").replaceChildren(svg);
    return fillInSteps(q(".tinyk-pg-angles tbody"), turned, (angle, t) => {
      const row = element("tr");
      row.append(element("td", {}, String(positions[t])), element("td", {}, tokens[t]),
        element("td", {}, angle.toFixed(4)));
      return row;
    });
  }

  class Playground {
    constructor(root) {
      this.root = root;
      this.data = JSON.parse(root.querySelector(".tinyk-pg-data").textContent);
      this.manifest = this.data.manifest;
      this.config = this.manifest.config;
      this.vocab = this.manifest.tokenizer.vocab;
      this.words = {};
      for (const word of root.querySelectorAll(".tinyk-pg-word")) {
        this.words[word.dataset.word] = word.textContent;
      }
      this.q = (selector) => root.querySelector(selector);
      this.prompt = this.q(".tinyk-pg-prompt");
      this.prompt.value = this.data.example.prompt;
      this.promptIds = [];
      this.generated = [];
      this.shown = null; // the view of the whole text
      this.next = null; // the next token's logits, from the KV-cached call
      this.past = null; // the last cached call's outputs (its cache stays in the engine, under past.key)
      this.ran = null; // the prompt the panels show (null: none, as after an error)
      this.engine = null;
      this.stopping = false;
      this.calls = 0;
      this.warmed = null; // the page's warm-up of the 05.7 model, once the first prompt has run (warmTiny)
      this.fillSelects();
      this.listen();
      root.tinykPlayground = this;
      // The runtime and the graph (cached by the browser) are fetched when the playground comes
      // near the screen, or on a phone-sized screen when the reader asks (tinyk-live.js).
      this.ready = window.tinykLive.whenWanted(root, this.data.bytes, this.words).then(() => this.start());
    }

    say(key, values = {}) {
      this.q(".tinyk-pg-status").textContent = fill(this.words[key], values);
    }

    fillSelects() {
      const options = (selector, values, label = (v) => String(v)) => {
        const select = this.q(selector);
        if (select) {
          select.replaceChildren(...values.map((v) => element("option", { value: String(v) }, label(v))));
        }
      };
      options(".tinyk-pg-layer", this.manifest.attention_layers);
      options(".tinyk-pg-head", [...Array(this.config.n_heads).keys()]);
      options(".tinyk-pg-steps-layer", this.manifest.attention_layers);
      options(".tinyk-pg-steps-head", [...Array(this.config.n_heads).keys()]);
      options(".tinyk-pg-pair", [...Array(this.config.head_dim / 2).keys()]);
    }

    listen() {
      this.q(".tinyk-pg-form").addEventListener("submit", (event) => {
        event.preventDefault();
        this.busy(() => this.run());
      });
      this.prompt.addEventListener("keydown", (event) => { // Ctrl+Enter runs; Enter is a line break
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          this.busy(() => this.run());
        }
      });
      const on = (selector, type, action) => {
        const control = this.q(selector);
        if (control) {
          control.addEventListener(type, action);
        }
      };
      on(".tinyk-pg-step", "click", () => this.busy(() => this.generate(1)));
      on(".tinyk-pg-go", "click", () => this.busy(() => this.generate(this.count())));
      on(".tinyk-pg-reset", "click", () => this.busy(() => this.run()));
      on(".tinyk-pg-stop", "click", () => {
        this.stopping = true;
      });
      for (const selector of [".tinyk-pg-temperature", ".tinyk-pg-topp", ".tinyk-pg-topk"]) {
        on(selector, "input", () => this.draw());
      }
      on(".tinyk-pg-decoding", "change", () => this.draw());
      for (const selector of [".tinyk-pg-layer", ".tinyk-pg-head", ".tinyk-pg-pair", ".tinyk-pg-steps-layer",
        ".tinyk-pg-steps-head", ".tinyk-pg-query"]) {
        on(selector, "change", () => this.draw());
      }
    }

    count() {
      const value = Number(this.q(".tinyk-pg-count").value);
      return Number.isInteger(value) && value >= 1 ? Math.min(value, this.config.max_seq_len) : 1;
    }

    async start() {
      this.root.dataset.state = "loading";
      if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
        this.showExample("static");
        return;
      }
      try {
        this.engine = getEngine();
        this.threads = (await loadTiny(this.manifest)).threads;
      } catch (error) {
        this.engine = null;
        this.showExample("failed", { error: error.message || String(error) });
        return;
      }
      this.root.dataset.state = "busy"; // no click starts a second run meanwhile
      try {
        if (await this.run()) {
          // The warm-up's failure (the engine stopped, say) is the reader's next call's to report.
          this.warmed = warmTiny(this.config, this.promptIds).catch(() => null);
        }
      } catch (error) {
        this.engine = null;
        this.showExample("failed", { error: error.message || String(error) });
      }
    }

    showExample(key, values = {}) {
      const example = this.data.example;
      this.promptIds = example.ids;
      this.generated = example.generated;
      this.shown = example;
      this.ran = example.prompt;
      this.next = example.logits[example.logits.length - 1];
      for (const control of this.root.querySelectorAll("textarea, input[type=number], button, .tinyk-pg-decoding")) {
        control.disabled = true;
      }
      this.root.dataset.state = "static";
      this.say(key, values);
      this.draw();
    }

    // One call of the graph in the engine: ids after the cache of `past` (an earlier call's
    // outputs; null: none); `keep`: this call's cache is kept for the next.
    // `want`: the outputs needed (null: all of them).
    async runGraph(ids, past, keep = false, want = null) {
      this.calls += 1;
      const key = keep ? `tiny-${this.root.id}-${this.calls}` : null;
      const out = await this.engine.call("run", { model: "tiny", config: this.config, ids,
        past: past ? past.key : null, keep: key, want });
      return { ...out, key };
    }

    // The cache of the call the page no longer needs, freed in the engine.
    drop(past) {
      if (past && past.key && this.engine) {
        this.engine.call("drop", { key: past.key }).catch(() => {});
      }
    }

    async busy(action) {
      if (this.engine === null || this.root.dataset.state === "busy") {
        return;
      }
      this.root.dataset.state = "busy";
      this.stopping = false;
      const stop = this.q(".tinyk-pg-stop");
      if (stop) {
        stop.disabled = false;
      }
      try {
        await action();
      } catch (error) {
        this.root.dataset.state = "ready"; // the previous text and panels stay
        this.say("error", { error: error.message || String(error) });
      } finally {
        if (this.root.dataset.state === "busy") {
          this.root.dataset.state = "ready";
        }
        if (stop) {
          stop.disabled = true;
        }
      }
    }

    encode(text) {
      const ids = [];
      for (const [position, char] of [...text].entries()) {
        const id = this.vocab.indexOf(char);
        if (id < 0) {
          return { error: ["unknown", { char: JSON.stringify(char), position: position + 1 }] };
        }
        ids.push(id);
      }
      if (ids.length === 0) {
        return { error: ["empty", {}] };
      }
      if (ids.length > this.config.max_seq_len) {
        return { error: ["too-long", { max: this.config.max_seq_len, count: ids.length }] };
      }
      return { ids };
    }

    // The prompt as it is now, through the model: false (and every panel emptied, nothing left to
    // generate from) if it is not one the model can read.
    async run() {
      const text = this.prompt.value;
      const { ids, error } = this.encode(text);
      if (error) {
        this.drop(this.past);
        Object.assign(this, { past: null, shown: null, next: null, ran: null, promptIds: [], generated: [] });
        this.root.dataset.state = "invalid";
        this.clear();
        this.say(...error);
        return false;
      }
      this.say("running");
      const out = await this.runGraph(ids, null, true);
      this.drop(this.past);
      this.promptIds = ids;
      this.generated = [];
      this.past = out;
      this.ran = text;
      this.shown = view(ids, out);
      this.next = this.shown.logits[ids.length - 1];
      this.root.dataset.state = "ready";
      this.say("ready");
      this.draw();
      return true;
    }

    clear() {
      for (const selector of [".tinyk-pg-tokenlist", ".tinyk-pg-next tbody", ".tinyk-pg-text", ".tinyk-pg-heatmap",
        ".tinyk-pg-gqa", ".tinyk-pg-strongest", ".tinyk-pg-masked", ".tinyk-pg-cachebars", ".tinyk-pg-cacherule",
        ".tinyk-pg-omega", ".tinyk-pg-circle", ".tinyk-pg-angles tbody", ".tinyk-pg-steps tbody",
        ".tinyk-pg-steps-rule", ".tinyk-pg-norms tbody", ".tinyk-pg-residual-rule", ".tinyk-pg-query"]) {
        this.q(selector)?.replaceChildren();
      }
    }

    choose() {
      if (this.q(".tinyk-pg-decoding")?.value !== "sampled") {
        return this.next.indexOf(Math.max(...this.next)); // the lowest id on a tie, as torch.argmax
      }
      return sample(distribution(this.next, sampling(this.root)), Math.random());
    }

    async generate(n) {
      // The prompt as the reader left it: edited since the last run, it runs first (and a prompt
      // the model cannot read generates nothing).
      if (this.prompt.value !== this.ran && !(await this.run())) {
        return;
      }
      this.root.dataset.state = "busy";
      for (let i = 0; i < n; i++) {
        if (this.stopping) {
          this.say("stopped", { count: this.generated.length });
          return;
        }
        const all = [...this.promptIds, ...this.generated];
        if (all.length >= this.config.max_seq_len) {
          this.say("full", { max: this.config.max_seq_len });
          return;
        }
        const token = this.choose();
        // The KV cache: only the new token goes through the model; the keys and values of the
        // earlier ones come from the previous call. The panels show the whole text's attention
        // and angles: one call without the cache. Nothing changes until both have run.
        const past = await this.runGraph([token], this.past, true, ["logits"]); // the panels: the call below
        const ids = [...all, token];
        let whole;
        try {
          whole = view(ids, await this.runGraph(ids, null));
        } catch (error) {
          this.drop(past);
          throw error;
        }
        this.drop(this.past);
        this.past = past;
        this.generated.push(token);
        this.next = Array.from(past.logits.data.subarray(0, this.config.vocab_size));
        this.shown = whole;
        this.shown.cache_length = past.cache_length;
        this.draw();
        this.say("generated-text", { count: this.generated.length, text: this.words_of(this.generated) });
      }
    }

    draw() {
      showSampling(this.root);
      if (this.shown === null) {
        return;
      }
      const parts = { tokens: this.drawTokens, next: this.drawNext, generate: this.drawText,
        attention: this.drawAttention, steps: this.drawSteps, residual: this.drawResidual, cache: this.drawCache,
        rope: this.drawRope };
      for (const part of this.root.dataset.parts.split(" ")) {
        parts[part].call(this);
      }
    }

    drawTokens() {
      const ids = this.shown.ids;
      this.q(".tinyk-pg-tokenlist").replaceChildren(...ids.map((id, i) => {
        const item = element("li", { class: i >= this.promptIds.length ? "tinyk-pg-generated" : "" });
        item.append(element("span", { class: "tinyk-pg-chip" }, shown(this.vocab[id])),
          element("span", { class: "tinyk-pg-id" }, String(id)));
        return item;
      }));
    }

    drawNext() {
      const settings = this.q(".tinyk-pg-decoding")?.value === "sampled" ? sampling(this.root)
        : { temperature: sampling(this.root).temperature, topK: 0, topP: 1 };
      drawTopTen(this.q, distribution(this.next, settings), (id) => shown(this.vocab[id]));
    }

    words_of(ids) {
      return ids.map((id) => shown(this.vocab[id])).join("");
    }

    drawText() {
      const text = this.q(".tinyk-pg-text");
      text.replaceChildren(element("span", {}, this.words_of(this.promptIds)));
      if (this.generated.length > 0) {
        const mark = element("mark", {}, this.words_of(this.generated));
        mark.prepend(element("span", { class: "visually-hidden" }, `${this.words.generated}: `));
        text.append(mark);
      }
    }

    drawAttention() {
      const layerIndex = this.q(".tinyk-pg-layer").selectedIndex;
      const head = Number(this.q(".tinyk-pg-head").value);
      const layer = this.manifest.attention_layers[layerIndex];
      const weights = this.shown.attention[layerIndex][head]; // T×T of the whole text
      const tokens = this.shown.ids.map((id) => shown(this.vocab[id]));
      drawAttentionPanel(this.q, this.words, this.config, { layer, head, weights, tokens });
    }

    // One query's row before the softmax: each key's scaled score, the mask added to it, and the
    // weight the softmax of the row gives (the attention panel's number), for the chosen layer and head.
    drawSteps() {
      if (!this.shown.scores) {
        return;
      }
      const n = this.shown.ids.length;
      const select = this.q(".tinyk-pg-query");
      if (select.options.length !== n) { // a text of another length: its last token
        select.replaceChildren(...[...Array(n).keys()].map((i) => element("option", { value: String(i) }, String(i))));
        select.value = String(n - 1);
      }
      const index = this.q(".tinyk-pg-steps-layer").selectedIndex;
      const layer = this.manifest.attention_layers[index];
      const head = Number(this.q(".tinyk-pg-steps-head").value);
      const query = Number(select.value);
      const tokens = this.shown.ids.map((id) => shown(this.vocab[id]));
      const scores = this.shown.scores[index][head][query];
      const weights = this.shown.attention[index][head][query];
      const mask = this.shown.mask[0][query];
      this.q(".tinyk-pg-steps-rule").textContent = fill(this.words.steps, { layer, head, query, token: tokens[query] });
      this.q(".tinyk-pg-steps tbody").replaceChildren(...tokens.map((token, key) => {
        const row = element("tr", { class: mask[key] === 0 ? "" : "tinyk-pg-blocked" });
        row.append(element("td", {}, String(key)), element("td", { class: "tinyk-pg-chip-cell" }, token),
          element("td", {}, scores[key].toFixed(3)),
          element("td", {}, mask[key] === 0 ? "0" : this.words["minus-infinity"]),
          element("td", {}, weights[key].toFixed(3)));
        return row;
      }));
    }

    // The residual stream's norm after the embedding and after each layer: the last token's (with
    // a bar) and the mean over the text's tokens.
    drawResidual() {
      const norms = this.shown.residual_norms;
      if (!norms) {
        return;
      }
      const last = norms.map((row) => row[row.length - 1]);
      const top = Math.max(...last);
      this.q(".tinyk-pg-residual-rule").textContent = this.words["residual-rule"];
      this.q(".tinyk-pg-norms tbody").replaceChildren(...norms.map((row, stage) => {
        const tr = element("tr");
        const bar = element("td");
        bar.append(element("span", { class: "tinyk-pg-bar", style: `width: ${(100 * last[stage] / top).toFixed(1)}%`,
          "aria-hidden": "true" }), element("span", {}, last[stage].toFixed(2)));
        const where = stage === 0 ? this.words["embedding-stage"]
          : fill(this.words["layer-stage"], { layer: stage - 1 });
        tr.append(element("th", { scope: "row" }, where), bar,
          element("td", {}, (row.reduce((sum, x) => sum + x, 0) / row.length).toFixed(2)));
        return tr;
      }));
    }

    drawCache() {
      const { n_layers: layers, n_heads: heads, n_kv_heads: kv, head_dim: dh } = this.config;
      const tokens = this.shown.cache_length;
      const bytes = (h) => tokens * 2 * layers * h * dh * 4;
      const bar = (key, values, share) => {
        const row = element("div", { class: "tinyk-pg-cacherow" });
        row.append(element("span", { class: "tinyk-pg-bar", style: `width: ${(50 * share).toFixed(1)}%`,
          "aria-hidden": "true" }), element("span", {}, fill(this.words[key], values)));
        return row;
      };
      this.q(".tinyk-pg-cachebars").replaceChildren(
        bar("cache-gqa", { kv, bytes: bytes(kv).toLocaleString("en") }, kv / heads),
        bar("cache-mha", { heads, bytes: bytes(heads).toLocaleString("en") }, 1));
      this.q(".tinyk-pg-cacherule").textContent = fill(this.words["cache-rule"], { tokens, layers, kv, dh });
    }

    drawRope() {
      drawRopePanel(this.q, this.words, this.config, { pair: Number(this.q(".tinyk-pg-pair").value),
        angles: this.shown.rope_angles, positions: this.shown.rope_positions,
        tokens: this.shown.ids.map((id) => shown(this.vocab[id])) });
    }
  }

  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) {
      if (values[i] > values[best]) {
        best = i; // the lowest id on a tie, as torch.argmax
      }
    }
    return best;
  }

  // A token's bytes as text: each valid UTF-8 character as itself, any other byte as <0xE4>
  // (a character split between tokens). `hold`: bytes that may still begin a character are left
  // out (a text still growing: they are shown once the token that completes them comes).
  function readable(bytes, hold = false) {
    let text = "";
    let i = 0;
    while (i < bytes.length) {
      const b = bytes[i];
      const need = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
      let ok = need > 0 && i + need <= bytes.length;
      for (let k = 1; ok && k < need; k++) {
        ok = (bytes[i + k] & 0xc0) === 0x80;
      }
      if (ok) {
        text += new TextDecoder().decode(bytes.subarray(i, i + need));
        i += need;
        continue;
      }
      if (hold && need > 0 && i + need > bytes.length
          && [...bytes.subarray(i + 1)].every((c) => (c & 0xc0) === 0x80)) {
        break; // the start of a character whose last bytes have not come yet
      }
      text += `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
      i += 1;
    }
    return text;
  }

  // Byte-level BPE's table (GPT-2's): which character of a token's text stands for which byte.
  const BYTE_OF = (() => {
    const bytes = [];
    for (let b = 33; b <= 126; b++) bytes.push(b);
    for (let b = 161; b <= 172; b++) bytes.push(b);
    for (let b = 174; b <= 255; b++) bytes.push(b);
    const chars = bytes.slice();
    let extra = 0;
    for (let b = 0; b < 256; b++) {
      if (!bytes.includes(b)) {
        bytes.push(b);
        chars.push(256 + extra);
        extra += 1;
      }
    }
    return new Map(chars.map((c, k) => [String.fromCharCode(c), bytes[k]]));
  })();

  // SmolLM2's chat (the smollm2 directive, section 05.10): its files are fetched when the reader
  // asks, with a progress bar and a Stop, and kept by the browser's cache; the prompt is the chat
  // template around the message, tokenized by the model's own tokenizer (Hugging Face's tokenizers
  // in JavaScript, from the site); the answer is greedy or sampled at a temperature (with top-k and
  // top-p), one token per call through the KV cache, until the end of the turn, the limit or Stop.
  // All of it runs in the engine; the page draws.
  class Chat {
    constructor(root) {
      this.root = root;
      this.data = JSON.parse(root.querySelector(".tinyk-chat-data").textContent);
      this.config = this.data.config;
      this.words = {};
      for (const word of root.querySelectorAll(".tinyk-pg-word")) {
        this.words[word.dataset.word] = word.textContent;
      }
      this.q = (selector) => root.querySelector(selector);
      this.message = this.q(".tinyk-chat-message");
      this.message.value = this.data.question;
      this.engine = null;
      this.vocab = null; // each token's text in the vocabulary, and the special tokens' ids
      this.special = new Set();
      this.stats = null; // the last answer: its ids and timings (the site's tests and benchmark read them)
      this.stopping = false;
      this.warming = null; // SmolLM2's warm-up after Load (warm), and what it did: {calls, seconds}
      this.warmed = null;
      this.asked = false; // the reader's first answer or layer ends the warm-up
      this.q(".tinyk-chat-load").addEventListener("click", () => this.load());
      this.q(".tinyk-chat-stop").addEventListener("click", () => this.stop());
      this.rows = null; // per query head, the attention rows of every token that went through the model
      this.rowsLayer = null; // the layer they are of
      // The layer: any, chosen at each call of the graph (its input attention_layer). A new choice
      // applies to the next answer, and once an answer is over, reads its text again for the heatmap.
      const layers = this.data.attention_layers ?? [];
      this.q(".tinyk-pg-layer").replaceChildren(...layers.map(
        (l) => element("option", { value: String(l) }, String(l))));
      this.q(".tinyk-pg-layer").value = String(this.data.default_layer ?? layers[0]);
      this.q(".tinyk-pg-layer").addEventListener("change", () => this.readLayer());
      this.q(".tinyk-pg-head").replaceChildren(...[...Array(this.config.n_heads).keys()].map(
        (h) => element("option", { value: String(h) }, String(h))));
      this.q(".tinyk-pg-head").addEventListener("change", () => this.drawAttention());
      this.q(".tinyk-pg-pair").replaceChildren(...[...Array(this.config.head_dim / 2).keys()].map(
        (i) => element("option", { value: String(i) }, String(i))));
      this.q(".tinyk-pg-pair").addEventListener("change", () => this.drawRope());
      for (const selector of [".tinyk-pg-temperature", ".tinyk-pg-topp", ".tinyk-pg-topk"]) {
        this.q(selector).addEventListener("input", () => this.drawFirst());
      }
      this.q(".tinyk-pg-decoding").addEventListener("change", () => this.drawFirst());
      this.angles = null; // each token's RoPE angles and position, as the graph returned them
      this.first = null; // the first answer token's logits
      this.drawFirst(); // the controls' values, as the browser may have kept them
      if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
        this.root.dataset.state = "static";
        this.q(".tinyk-chat-load").disabled = true;
        this.say("chat-static");
      }
      this.q(".tinyk-chat-form").addEventListener("submit", (event) => {
        event.preventDefault();
        this.answer();
      });
      root.tinykChat = this;
    }

    say(key, values = {}) {
      this.q(".tinyk-chat-status").textContent = fill(this.words[key], values);
    }

    // The form's controls on (the model ready, no answer under way) or off; Stop the other way.
    form(on) {
      for (const control of this.root.querySelectorAll(".tinyk-chat-form :is(input, select, button)")) {
        control.disabled = !on;
      }
      this.q(".tinyk-chat-stop").disabled = on;
      this.q(".tinyk-pg-layer").disabled = !on || !this.data.layer_input; // a graph of one layer: no choice
    }

    // The layer the heatmap shows (the graph's input; a graph without it returns its one layer).
    layer() {
      return this.data.layer_input ? Number(this.q(".tinyk-pg-layer").value) : this.data.attention_layers[0];
    }

    // A new layer after an answer: the text the heatmap showed, read again in one call (no cache
    // kept) for that layer's weights. The form waits meanwhile.
    async readLayer() {
      if (this.engine === null || this.root.dataset.state !== "ready" || this.rows === null) {
        return; // the next answer's calls take it
      }
      const layer = this.layer();
      const ids = this.textIds.slice(0, this.rows[0].length);
      this.asked = true;
      this.root.dataset.state = "busy";
      this.form(false);
      this.q(".tinyk-chat-stop").disabled = true; // one call: nothing to stop between
      this.say("chat-layer", { count: ids.length, layer });
      try {
        const out = await this.engine.call("run", { model: "smollm2", config: this.config, ids, past: null,
          keep: null, last: true, layer, want: ["attention"] });
        this.rows = Array.from({ length: this.config.n_heads }, () => []);
        this.keepAttention(out);
        this.rowsLayer = layer;
        await nextTask();
        await this.drawAttention();
        this.say("chat-layer-done", { layer, count: ids.length, seconds: (out.ms / 1000).toFixed(2) });
      } catch (error) {
        this.say("chat-error", { error: error.message || String(error) });
      } finally {
        this.root.dataset.state = "ready";
        this.form(true);
      }
    }

    // Stop: the download under way (the engine aborts its fetch) or the answer (no call after the
    // one running).
    stop() {
      if (this.root.dataset.state === "loading") {
        this.engine?.call("stop").catch(() => {});
      } else if (this.root.dataset.state === "busy") {
        this.stopping = true;
      }
    }

    progress({ received, total, starting }) {
      const bar = this.q(".tinyk-chat-progress");
      if (starting) {
        this.say("chat-starting");
        return;
      }
      const mb = (n) => (n / 1e6).toFixed(1);
      bar.hidden = false;
      bar.value = received;
      this.say("chat-downloading", { done: mb(received), total: mb(total) });
    }

    async load() {
      const button = this.q(".tinyk-chat-load");
      if (!["idle", "failed"].includes(this.root.dataset.state)) {
        return;
      }
      button.disabled = true;
      if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
        this.root.dataset.state = "static";
        this.say("chat-static");
        return;
      }
      this.root.dataset.state = "loading";
      warmStopped = true; // the warm-up (warmTiny) leaves the processor to SmolLM2, whose calls warm it
      this.q(".tinyk-chat-stop").disabled = false;
      const started = performance.now();
      try {
        this.engine = getEngine();
        const loaded = await this.engine.call("load-smollm2", { data: this.data, threads: THREADS },
          (message) => this.progress(message));
        this.vocab = loaded.vocab;
        this.special = new Set(loaded.special);
        this.threads = loaded.threads;
        this.sessionOptions = loaded.options; // as the engine gave them to ONNX Runtime (the tests read them)
      } catch (error) {
        this.q(".tinyk-chat-stop").disabled = true;
        button.disabled = false; // the reader may try again
        if (error.name === "AbortError") {
          this.root.dataset.state = "idle";
          const bar = this.q(".tinyk-chat-progress");
          bar.value = 0;
          bar.hidden = true;
          this.say("chat-download-stopped");
        } else {
          this.root.dataset.state = "failed";
          this.say("chat-failed", { error: error.message || String(error) });
        }
        return;
      }
      this.loadSeconds = (performance.now() - started) / 1000;
      // The loops an answer runs over SmolLM2's 49,152 logits and a long prompt's heatmap, run once
      // now on zeros: compiled before the first answer, they never hold the page up while it reads.
      topTen(softmax(new Float32Array(this.config.vocab_size), 1));
      const zeros = Array.from({ length: 64 }, () => new Float32Array(64));
      paintRows(new Uint32Array(64 * 64), zeros, 64, 0, 64);
      this.form(true);
      this.root.dataset.state = "ready";
      this.say("chat-ready");
      this.message.focus(); // the button that had the focus is gone
      this.warming = this.warm().catch(() => null);
    }

    // SmolLM2's warm-up (SMOLLM2_WARM_CALLS): greedy decode calls from the start token, whose tokens
    // nobody reads, a piece at a time, until the reader asks. Its calls and engine time.
    async warm() {
      this.warmed = await warmUp(this.engine, "smollm2", this.config, [this.data.bos_token_id], SMOLLM2_WARM_CALLS,
        SMOLLM2_WARM_PIECE, () => !this.asked);
      return this.warmed;
    }

    sampled() {
      return this.q(".tinyk-pg-decoding").value === "sampled";
    }

    limit() {
      const value = Number(this.q(".tinyk-chat-limit").value);
      return Number.isInteger(value) && value >= 1 ? Math.min(value, 256) : 1;
    }

    async answer() {
      if (this.engine === null || this.root.dataset.state !== "ready") {
        return;
      }
      const message = this.message.value;
      if (message.trim() === "") {
        this.say("chat-empty");
        return;
      }
      this.root.dataset.state = "busy";
      this.stopping = false;
      this.asked = true;
      this.form(false); // the message and the settings are the answer's until it ends
      try {
        await this.reply(message, this.limit());
      } catch (error) {
        this.say("chat-error", { error: error.message || String(error) });
      } finally {
        this.root.dataset.state = "ready";
        this.form(true);
      }
    }

    // One call of SmolLM2's graph in the engine, after the cache kept under `past` (null: none),
    // its own cache kept under a new key (the old one freed).
    async call(ids, past) {
      this.calls = (this.calls ?? 0) + 1;
      const keep = `smollm2-${this.root.id}-${this.calls}`;
      const out = await this.engine.call("run", { model: "smollm2", config: this.config, ids, past, keep,
        free: true, last: true, layer: this.layer() });
      return { ...out, key: keep };
    }

    async reply(message, limit) {
      const { chat_prefix: prefix, chat_suffix: suffix } = this.data.tokenizer;
      const ids = await this.engine.call("encode", { text: prefix + message + suffix });
      if (ids.length > this.data.max_prompt) {
        // Each layer weighs every query against every key: a long paste would need gigabytes.
        this.say("chat-too-long", { count: ids.length, max: this.data.max_prompt });
        return;
      }
      this.say("chat-reading", { count: ids.length });
      this.drawTokens(ids);
      this.first = null; // the previous answer's table goes with its prompt
      this.q(".tinyk-pg-next tbody").replaceChildren();
      const answer = [];
      const text = this.q(".tinyk-chat-reply");
      text.textContent = "";
      const sampled = this.sampled();
      const settings = sampling(this.root);
      const draws = []; // the random numbers a sampled answer used, one per token
      const started = performance.now();
      this.live = answer; // the answer so far (the tests read it)
      let out = await this.call(ids, null);
      const prefillSeconds = out.ms / 1000;
      let decodeMs = 0; // the engine's time of each call after the prompt's: no drawing in it
      this.first = Float32Array.from(out.logits.data);
      await nextTask();
      this.drawFirst();
      this.textIds = [...ids];
      this.rows = Array.from({ length: this.config.n_heads }, () => []);
      this.rowsLayer = this.layer();
      this.angles = { rows: [], positions: [] };
      this.keepRows(out);
      let calls = 0;
      let stopped = false;
      try {
        for (;;) {
          this.drawCache(out.cache_length);
          if (this.stopping) {
            stopped = true;
            break;
          }
          let token;
          if (sampled) {
            draws.push(Math.random());
            token = sample(distribution(out.logits.data, settings), draws[draws.length - 1]);
          } else {
            token = argmax(out.logits.data);
          }
          if (token === this.data.eos_token_id) {
            break;
          }
          answer.push(token);
          this.textIds.push(token);
          text.textContent = this.text(answer, true);
          if (answer.length === 1) {
            this.say("chat-answering"); // said once: a screen reader hears the start and the end
          }
          if (answer.length >= limit) {
            break;
          }
          out = await this.call([token], out.key);
          decodeMs += out.ms;
          this.keepRows(out);
          calls += 1;
        }
      } finally {
        this.engine.call("drop", { key: out.key }).catch(() => {});
      }
      text.textContent = this.text(answer, false);
      const seconds = (performance.now() - started) / 1000;
      const decodeSeconds = decodeMs / 1000;
      const threads = this.threads;
      this.stats = { ids, answer, sampled, temperature: settings.temperature, topK: settings.topK,
        topP: settings.topP, draws, prefillSeconds, decodeSeconds, decodeCalls: calls, loadSeconds: this.loadSeconds,
        threads, stopped, seconds }; // seconds: the answer's whole time, the page's drawing of each token in it
      await nextTask(); // each panel in a task of its own: the page answers the reader between them
      await this.drawAttention();
      await nextTask();
      await this.drawRope();
      if (stopped) {
        this.say("chat-stopped", { count: answer.length });
        return;
      }
      const rate = calls > 0 ? (calls / decodeSeconds).toFixed(1) : "\u2014";
      const decoding = sampled ? fill(this.words["chat-sampled"], { temperature: settings.temperature.toFixed(1) })
        : this.words["chat-greedy"];
      this.say("chat-done", { count: answer.length, seconds: seconds.toFixed(1), prefill: prefillSeconds.toFixed(2),
        rate, decoding, threads: threads === 1 ? this.words["chat-one-thread"]
          : fill(this.words["chat-threads"], { count: threads }) });
    }

    // One call's attention (1×1×H×T×T_k), a row per query token and head, kept for the heatmap;
    // and its RoPE angles (1×T×d_h/2) and positions, a row per token.
    keepRows(out) {
      this.keepAttention(out);
      const queries = out.attention.dims[3];
      const pairs = out.rope_angles.dims[2];
      for (let t = 0; t < queries; t++) {
        this.angles.rows.push(out.rope_angles.data.subarray(t * pairs, (t + 1) * pairs));
        this.angles.positions.push(Number(out.rope_positions.data[t]));
      }
    }

    keepAttention(out) {
      const [, , heads, queries, keys] = out.attention.dims;
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < queries; i++) {
          this.rows[h].push(out.attention.data.subarray((h * queries + i) * keys, (h * queries + i + 1) * keys));
        }
      }
    }

    drawRope() {
      if (this.angles === null) {
        return;
      }
      const { rows, positions } = this.angles;
      return drawRopePanel(this.q, this.words, this.config, { pair: Number(this.q(".tinyk-pg-pair").value),
        angles: rows, positions, tokens: this.textIds.slice(0, rows.length).map((id) => this.piece(id)) });
    }

    drawAttention() {
      if (this.rows === null) {
        return;
      }
      const head = Number(this.q(".tinyk-pg-head").value);
      const weights = this.rows[head];
      const tokens = this.textIds.slice(0, weights.length).map((id) => this.piece(id));
      return drawAttentionPanel(this.q, this.words, this.config, { layer: this.rowsLayer, head, weights, tokens });
    }

    // A token's bytes (a special token of the chat template: none, it is its own text).
    bytes(id) {
      return Uint8Array.from(this.vocab[id], (c) => BYTE_OF.get(c) ?? 0x3f);
    }

    // A token as the panels show it: its characters, a byte of a split character as <0xE4>.
    piece(id) {
      this.pieces ??= new Map();
      if (!this.pieces.has(id)) {
        const text = this.special.has(id) ? this.vocab[id] : readable(this.bytes(id));
        this.pieces.set(id, text.replace(/\n/g, "\u21b5"));
      }
      return this.pieces.get(id);
    }

    // The answer's text: its tokens' bytes joined, each character once its last byte has come
    // (`growing`: bytes that may still begin one wait for the next token).
    text(ids, growing) {
      const parts = ids.filter((id) => !this.special.has(id)).map((id) => this.bytes(id));
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const part of parts) {
        all.set(part, at);
        at += part.length;
      }
      return readable(all, growing);
    }

    drawTokens(ids) {
      const list = this.q(".tinyk-chat-tokens");
      list.classList.toggle("tinyk-pg-long", ids.length > 60); // a box of its own height (tinyk.css)
      return fillInSteps(list, ids, (id) => {
        const item = element("li");
        item.append(element("span", { class: "tinyk-pg-chip" }, this.piece(id)),
          element("span", { class: "tinyk-pg-id" }, String(id)));
        return item;
      });
    }

    // The first token's 10 most likely choices, their probabilities at the chosen temperature
    // (sampled: with top-k and top-p).
    drawFirst() {
      showSampling(this.root);
      if (this.first) {
        const settings = this.sampled() ? sampling(this.root)
          : { temperature: sampling(this.root).temperature, topK: 0, topP: 1 };
        drawTopTen(this.q, distribution(this.first, settings), (id) => this.piece(id));
      }
    }

    drawCache(tokens) {
      const { n_layers: layers, n_heads: heads, n_kv_heads: kv, head_dim: dh } = this.config;
      const bytes = (h) => (tokens * 2 * layers * h * dh * 4).toLocaleString("en");
      this.q(".tinyk-chat-cache").textContent = fill(this.words["chat-cache"],
        { tokens, layers, kv, dh, heads, bytes: bytes(kv), mha: bytes(heads) });
    }
  }

  for (const root of playgrounds) {
    new Playground(root);
  }
  for (const root of chats) {
    new Chat(root);
  }
})();
