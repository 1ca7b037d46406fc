// The playground (the book's playground directive, book/_ext/tinyk_playground.py): the 05.7 model
// runs in this page with ONNX Runtime Web, served from the site's own _static/ort/ (no request
// leaves the site). The page holds the model's manifest and the run of its first prompt computed
// when the book was built (tinyk.playground): without WebAssembly the panels show that run. The
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
  let runtime = null; // one ONNX Runtime session per page, shared by its playgrounds
  let ortLoaded = null; // ONNX Runtime Web's loader, once per page
  // The book's service worker (tinyk-sw.js, at the edition's root: STATIC's parent) makes the
  // pages the reader opens next cross-origin isolated, so ONNX Runtime can run on threads there.
  // Where it cannot be registered (a file:// page, a browser without service workers), one thread.
  if (!self.crossOriginIsolated && window.isSecureContext && "serviceWorker" in navigator) {
    navigator.serviceWorker.register(new URL("../tinyk-sw.js", STATIC).href).catch(() => {});
  }

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`${url} did not load`));
      document.head.append(script);
    });
  }

  // ONNX Runtime Web's build for WebAssembly only (the site's _static/ort/), loaded once.
  function loadOrt() {
    if (ortLoaded === null) {
      ortLoaded = loadScript(new URL("ort/ort.wasm.min.js", STATIC).href).then(() => {
        const ort = window.ort;
        ort.env.wasm.wasmPaths = new URL("ort/", STATIC).href;
        // numThreads is left to ONNX Runtime: in a cross-origin isolated page (one the service worker
        // above served), one thread per two processors the browser reports, up to 4; elsewhere one.
        // (Two threads on a machine of two, with another process busy, decoded at half one's speed.)
        ort.env.logLevel = "error";
        return ort;
      }).catch((error) => {
        ortLoaded = null;
        throw error;
      });
    }
    return ortLoaded;
  }

  function loadSession(manifest) {
    if (runtime === null) {
      runtime = (async () => {
        if (typeof WebAssembly !== "object") {
          return null;
        }
        const ort = await loadOrt();
        return ort.InferenceSession.create(new URL(`models/${manifest.onnx}`, STATIC).href,
          { executionProviders: ["wasm"] });
      })().catch((error) => {
        runtime = null; // a failed load (the network, say) is tried again by the next playground
        throw error;
      });
    }
    return runtime;
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

  function softmax(logits, temperature) {
    const scaled = Array.from(logits, (x) => x / temperature);
    const top = scaled.reduce((a, b) => Math.max(a, b), -Infinity); // no spread: SmolLM2 has 49,152
    const exps = scaled.map((x) => Math.exp(x - top));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((x) => x / total);
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

  // One graph call: ids (batch 1) after the cached tokens of `past` (a previous call's outputs).
  async function runGraph(session, config, ids, past) {
    const ort = window.ort;
    const cached = past ? past.present_key_0.dims[1] : 0;
    const feeds = {
      input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]),
      attention_mask: new ort.Tensor("int64", new BigInt64Array(cached + ids.length).fill(1n),
        [1, cached + ids.length]),
    };
    for (let i = 0; i < config.n_layers; i++) {
      for (const kind of ["key", "value"]) {
        feeds[`past_${kind}_${i}`] = past ? past[`present_${kind}_${i}`]
          : new ort.Tensor("float32", new Float32Array(0), [1, 0, config.n_kv_heads, config.head_dim]);
      }
    }
    return session.run(feeds);
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
      cache_length: out.present_key_0.dims[1],
    };
  }

  // The attention panel of a playground or the chat: one head's weights as a heatmap (row i:
  // query i; grey above the diagonal: the causal mask), the strongest key of the last token, and
  // which query heads share the head's K/V head (GQA). `weights[i]` holds at least i + 1 numbers.
  function drawAttentionPanel(q, words, config, { layer, head, weights, tokens }) {
    const n = tokens.length;
    const cell = Math.max(8, Math.min(26, Math.floor(360 / n)));
    const margin = cell >= 12 ? 18 : 4;
    const size = margin + n * cell;
    const svg = element("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img",
      "aria-label": fill(words.heatmap, { layer, head }) }, null, SVG);
    for (let i = 0; i < n; i++) {
      if (margin > 4) {
        svg.append(element("text", { x: margin - 4, y: margin + i * cell + cell * 0.7, "text-anchor": "end",
          class: "tinyk-pg-axis" }, tokens[i], SVG));
        svg.append(element("text", { x: margin + i * cell + cell / 2, y: margin - 5, "text-anchor": "middle",
          class: "tinyk-pg-axis" }, tokens[i], SVG));
      }
      for (let j = 0; j < n; j++) {
        const masked = j > i;
        const w = masked ? 0 : weights[i][j];
        const rect = element("rect", { x: margin + j * cell, y: margin + i * cell, width: cell - 1, height: cell - 1,
          fill: masked ? "#d4d4d4" : `hsl(215, 75%, ${(97 - 62 * w).toFixed(1)}%)`, "data-weight": w }, null, SVG);
        rect.append(element("title", {}, masked ? `${i} \u2192 ${j}: \u2014` : `${i} \u2192 ${j}: ${w.toFixed(3)}`, SVG));
        svg.append(rect);
      }
    }
    q(".tinyk-pg-heatmap").replaceChildren(svg);
    const last = Array.from(weights[n - 1]).slice(0, n);
    const key = last.indexOf(Math.max(...last));
    q(".tinyk-pg-strongest").textContent = fill(words.strongest, { token: tokens[n - 1],
      key: tokens[key], position: key, weight: last[key].toFixed(3) });
    q(".tinyk-pg-masked").textContent = words.masked;
    drawGroups(q, words, config, head);
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

  // The next-token table of a playground or the chat: the 10 largest shares of p, the lowest id
  // first on a tie (as torch.argmax), each with its bar; label(id) is its token.
  function drawTopTen(q, p, label) {
    const order = [];
    for (let id = 0; id < p.length; id++) { // a short insertion: SmolLM2's p has 49,152 shares
      if (order.length < 10 || p[id] > p[order[order.length - 1]]) {
        order.push(id);
        order.sort((a, b) => p[b] - p[a] || a - b);
        order.length = Math.min(order.length, 10);
      }
    }
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
    for (const [t, angle] of turned.entries()) {
      const x = 70 * Math.cos(angle);
      const y = -70 * Math.sin(angle);
      svg.append(element("line", { x1: 0, y1: 0, x2: x, y2: y, class: "tinyk-pg-arrow" }, null, SVG));
      svg.append(element("text", { x: x * 1.15, y: y * 1.15 + 4, "text-anchor": "middle" }, String(positions[t]), SVG));
    }
    q(".tinyk-pg-circle").replaceChildren(svg);
    q(".tinyk-pg-angles tbody").replaceChildren(...turned.map((angle, t) => {
      const row = element("tr");
      row.append(element("td", {}, String(positions[t])), element("td", {}, tokens[t]),
        element("td", {}, angle.toFixed(4)));
      return row;
    }));
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
      this.past = null;
      this.session = null;
      this.fillSelects();
      this.listen();
      this.runGraph = (ids, past) => runGraph(this.session, this.config, ids, past); // one call of the graph
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
      on(".tinyk-pg-temperature", "input", () => this.draw());
      on(".tinyk-pg-decoding", "change", () => this.draw());
      for (const selector of [".tinyk-pg-layer", ".tinyk-pg-head", ".tinyk-pg-pair"]) {
        on(selector, "change", () => this.draw());
      }
    }

    count() {
      const value = Number(this.q(".tinyk-pg-count").value);
      return Number.isInteger(value) && value >= 1 ? Math.min(value, this.config.max_seq_len) : 1;
    }

    async start() {
      this.root.dataset.state = "loading";
      try {
        this.session = await loadSession(this.manifest);
      } catch (error) {
        this.showExample("failed", { error: error.message || String(error) });
        return;
      }
      if (this.session === null) {
        this.showExample("static");
        return;
      }
      this.root.dataset.state = "busy"; // no click starts a second run meanwhile
      try {
        await this.run();
      } catch (error) {
        this.session = null;
        this.showExample("failed", { error: error.message || String(error) });
      }
    }

    showExample(key, values = {}) {
      const example = this.data.example;
      this.promptIds = example.ids;
      this.generated = example.generated;
      this.shown = example;
      this.next = example.logits[example.logits.length - 1];
      for (const control of this.root.querySelectorAll("textarea, input[type=number], button, .tinyk-pg-decoding")) {
        control.disabled = true;
      }
      this.root.dataset.state = "static";
      this.say(key, values);
      this.draw();
    }

    async busy(action) {
      if (this.session === null || this.root.dataset.state === "busy") {
        return;
      }
      this.root.dataset.state = "busy";
      try {
        await action();
      } catch (error) {
        this.root.dataset.state = "ready"; // the previous text and panels stay
        this.say("error", { error: error.message || String(error) });
      } finally {
        if (this.root.dataset.state === "busy") {
          this.root.dataset.state = "ready";
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

    async run() {
      const { ids, error } = this.encode(this.prompt.value);
      if (error) {
        this.root.dataset.state = "invalid";
        this.say(...error);
        return;
      }
      this.say("running");
      this.promptIds = ids;
      this.generated = [];
      this.past = await runGraph(this.session, this.config, ids, null);
      this.shown = view(ids, this.past);
      this.next = this.shown.logits[ids.length - 1];
      this.root.dataset.state = "ready";
      this.say("ready");
      this.draw();
    }

    choose() {
      if (this.q(".tinyk-pg-decoding")?.value !== "sampled") {
        return this.next.indexOf(Math.max(...this.next)); // the lowest id on a tie, as torch.argmax
      }
      return sample(softmax(this.next, this.temperature()), Math.random());
    }

    async generate(n) {
      for (let i = 0; i < n; i++) {
        const all = [...this.promptIds, ...this.generated];
        if (all.length >= this.config.max_seq_len) {
          this.say("full", { max: this.config.max_seq_len });
          return;
        }
        const token = this.choose();
        // The KV cache: only the new token goes through the model; the keys and values of the
        // earlier ones come from the previous call. The panels show the whole text's attention
        // and angles: one call without the cache. Nothing changes until both have run.
        const past = await runGraph(this.session, this.config, [token], this.past);
        const ids = [...all, token];
        const whole = view(ids, await runGraph(this.session, this.config, ids, null));
        this.past = past;
        this.generated.push(token);
        this.next = Array.from(past.logits.data.subarray(0, this.config.vocab_size));
        this.shown = whole;
        this.shown.cache_length = past.present_key_0.dims[1];
        this.draw();
        this.say("generated-text", { count: this.generated.length, text: this.words_of(this.generated) });
        await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw each token
      }
    }

    temperature() {
      const control = this.q(".tinyk-pg-temperature");
      return control ? Number(control.value) : 1;
    }

    draw() {
      const output = this.q(".tinyk-pg-temperature-value");
      if (output) {
        output.textContent = this.temperature().toFixed(1);
      }
      const parts = { tokens: this.drawTokens, next: this.drawNext, generate: this.drawText,
        attention: this.drawAttention, cache: this.drawCache, rope: this.drawRope };
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
      drawTopTen(this.q, softmax(this.next, this.temperature()), (id) => shown(this.vocab[id]));
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

  // SmolLM2's chat (the smollm2 directive, section 05.10): its files are fetched when the reader
  // asks, with a progress bar, and kept by the browser's cache; the prompt is the chat template
  // around the message, tokenized by the model's own tokenizer (Hugging Face's tokenizers in
  // JavaScript, from the site); the answer is greedy or sampled at a temperature, one token per
  // call through the KV cache.
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
      this.session = null;
      this.tokenizer = null;
      this.stats = null; // the last answer: its ids and timings (the site's tests and benchmark read them)
      this.q(".tinyk-chat-load").addEventListener("click", () => this.load());
      this.rows = null; // per query head, the attention rows of every token that went through the model
      this.q(".tinyk-pg-head").replaceChildren(...[...Array(this.config.n_heads).keys()].map(
        (h) => element("option", { value: String(h) }, String(h))));
      this.q(".tinyk-pg-head").addEventListener("change", () => this.drawAttention());
      this.q(".tinyk-pg-pair").replaceChildren(...[...Array(this.config.head_dim / 2).keys()].map(
        (i) => element("option", { value: String(i) }, String(i))));
      this.q(".tinyk-pg-pair").addEventListener("change", () => this.drawRope());
      this.q(".tinyk-pg-temperature").addEventListener("input", () => this.drawFirst());
      this.angles = null; // each token's RoPE angles and position, as the graph returned them
      this.first = null; // the first answer token's logits
      this.drawFirst(); // the temperature's value, as the browser may have kept the slider's
      if (typeof WebAssembly !== "object") {
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

    // Every file of the model, its bytes counted on the progress bar as they arrive.
    async fetchAll(files) {
      const total = files.reduce((sum, file) => sum + file.bytes, 0);
      const progress = this.q(".tinyk-chat-progress");
      const mb = (n) => (n / 1e6).toFixed(1);
      progress.hidden = false;
      let received = 0;
      let said = -1; // the whole megabytes last announced: the status changes once per MB, not per chunk
      const bytes = {};
      for (const file of files) {
        // The files' stamp in the address: a browser that kept an older export fetches this one.
        const url = new URL(`smollm2/${file.path}?v=${this.data.stamp}`, STATIC).href;
        const named = (error) => new Error(`${file.path}: ${error.message || error}`);
        const response = await fetch(url).catch((error) => { throw named(error); });
        if (!response.ok) {
          throw new Error(`${file.path}: HTTP ${response.status}`);
        }
        const data = new Uint8Array(file.bytes);
        const reader = response.body.getReader();
        let offset = 0;
        for (;;) {
          const { done, value } = await reader.read().catch((error) => { throw named(error); });
          if (done) {
            break;
          }
          if (offset + value.length > data.length) {
            throw new Error(`${file.path}: more than its ${file.bytes} bytes`);
          }
          data.set(value, offset);
          offset += value.length;
          received += value.length;
          progress.value = received;
          if (Math.floor(received / 1e6) !== said) {
            said = Math.floor(received / 1e6);
            this.say("chat-downloading", { done: mb(received), total: mb(total) });
          }
        }
        if (offset !== file.bytes) {
          throw new Error(`${file.path}: ${offset} of its ${file.bytes} bytes`);
        }
        bytes[file.path] = data;
      }
      return bytes;
    }

    async load() {
      const button = this.q(".tinyk-chat-load");
      if (!["idle", "failed"].includes(this.root.dataset.state)) {
        return;
      }
      button.disabled = true;
      if (typeof WebAssembly !== "object") {
        this.root.dataset.state = "static";
        this.say("chat-static");
        return;
      }
      this.root.dataset.state = "loading";
      const started = performance.now();
      // ONNX Runtime's loader and the tokenizer's module load while the files arrive.
      const runtime = Promise.all([loadOrt(), import(new URL("ort/tokenizers.min.mjs", STATIC).href)]);
      runtime.catch(() => {}); // a failure is reported when it is awaited, after the files' own
      try {
        const files = await this.fetchAll(this.data.files);
        this.say("chat-starting");
        const [ort, { Tokenizer }] = await runtime;
        const tokenizer = JSON.parse(new TextDecoder().decode(files[this.data.tokenizer.file]));
        this.tokenizer = new Tokenizer(tokenizer, {});
        const extra = {}; // "session.disable_quant_qdq": "1" -> { session: { disable_quant_qdq: "1" } }
        for (const [key, value] of Object.entries(this.data.web_session_config)) {
          const [group, ...name] = key.split(".");
          (extra[group] ??= {})[name.join(".")] = value;
        }
        this.session = await ort.InferenceSession.create(files[this.data.onnx], {
          executionProviders: ["wasm"], extra, graphOptimizationLevel: this.data.web_graph_optimization,
          externalData: this.data.external_data.map((path) => ({ path, data: files[path] })),
        });
      } catch (error) {
        this.root.dataset.state = "failed";
        button.disabled = false; // the reader may try again
        this.say("chat-failed", { error: error.message || String(error) });
        return;
      }
      this.loadSeconds = (performance.now() - started) / 1000;
      for (const control of this.root.querySelectorAll(".tinyk-chat-form :is(input, select, button)")) {
        control.disabled = false;
      }
      this.root.dataset.state = "ready";
      this.say("chat-ready");
      this.message.focus(); // the button that had the focus is gone
    }

    temperature() {
      return Number(this.q(".tinyk-pg-temperature").value);
    }

    sampled() {
      return this.q(".tinyk-pg-decoding").value === "sampled";
    }

    limit() {
      const value = Number(this.q(".tinyk-chat-limit").value);
      return Number.isInteger(value) && value >= 1 ? Math.min(value, 256) : 1;
    }

    async answer() {
      if (this.session === null || this.root.dataset.state === "busy") {
        return;
      }
      const message = this.message.value;
      if (message.trim() === "") {
        this.say("chat-empty");
        return;
      }
      this.root.dataset.state = "busy";
      const button = this.q(".tinyk-chat-answer");
      button.disabled = true;
      try {
        await this.reply(message, this.limit());
      } catch (error) {
        this.say("chat-error", { error: error.message || String(error) });
      } finally {
        this.root.dataset.state = "ready";
        button.disabled = false;
      }
    }

    async reply(message, limit) {
      const { chat_prefix: prefix, chat_suffix: suffix } = this.data.tokenizer;
      const ids = this.tokenizer.encode(prefix + message + suffix).ids;
      if (ids.length > this.data.max_prompt) {
        // Each layer weighs every query against every key: a long paste would need gigabytes.
        this.say("chat-too-long", { count: ids.length, max: this.data.max_prompt });
        return;
      }
      this.drawTokens(ids);
      this.first = null; // the previous answer's table goes with its prompt
      this.q(".tinyk-pg-next tbody").replaceChildren();
      const answer = [];
      const text = this.q(".tinyk-chat-reply");
      text.textContent = "";
      const sampled = this.sampled();
      const temperature = this.temperature();
      const draws = []; // the random numbers a sampled answer used, one per token
      const started = performance.now();
      let out = await runGraph(this.session, this.config, ids, null);
      const prefillSeconds = (performance.now() - started) / 1000;
      this.first = Float32Array.from(out.logits.data);
      this.drawFirst();
      this.textIds = [...ids];
      this.rows = Array.from({ length: this.config.n_heads }, () => []);
      this.angles = { rows: [], positions: [] };
      this.keepRows(out);
      let calls = 0;
      for (;;) {
        this.drawCache(out.present_key_0.dims[1]);
        let token;
        if (sampled) {
          draws.push(Math.random());
          token = sample(softmax(out.logits.data, temperature), draws[draws.length - 1]);
        } else {
          token = argmax(out.logits.data);
        }
        if (token === this.data.eos_token_id) {
          break;
        }
        answer.push(token);
        this.textIds.push(token);
        text.textContent = this.tokenizer.decode(answer);
        if (answer.length === 1) {
          this.say("chat-answering"); // said once: a screen reader hears the start and the end
        }
        if (answer.length >= limit) {
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw each token
        out = await runGraph(this.session, this.config, [token], out);
        this.keepRows(out);
        calls += 1;
      }
      this.drawAttention();
      this.drawRope();
      const seconds = (performance.now() - started) / 1000;
      const decodeSeconds = seconds - prefillSeconds;
      const threads = window.ort.env.wasm.numThreads;
      this.stats = { ids, answer, sampled, temperature, draws, prefillSeconds, decodeSeconds, decodeCalls: calls,
        loadSeconds: this.loadSeconds, threads };
      const rate = calls > 0 ? (calls / decodeSeconds).toFixed(1) : "\u2014";
      const decoding = sampled ? fill(this.words["chat-sampled"], { temperature: temperature.toFixed(1) })
        : this.words["chat-greedy"];
      this.say("chat-done", { count: answer.length, seconds: seconds.toFixed(1), prefill: prefillSeconds.toFixed(2),
        rate, decoding, threads: threads === 1 ? this.words["chat-one-thread"]
          : fill(this.words["chat-threads"], { count: threads }) });
    }

    // One call's attention (1×1×H×T×T_k), a row per query token and head, kept for the heatmap;
    // and its RoPE angles (1×T×d_h/2) and positions, a row per token.
    keepRows(out) {
      const [, , heads, queries, keys] = out.attention.dims;
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < queries; i++) {
          this.rows[h].push(out.attention.data.subarray((h * queries + i) * keys, (h * queries + i + 1) * keys));
        }
      }
      const pairs = out.rope_angles.dims[2];
      for (let t = 0; t < queries; t++) {
        this.angles.rows.push(out.rope_angles.data.subarray(t * pairs, (t + 1) * pairs));
        this.angles.positions.push(Number(out.rope_positions.data[t]));
      }
    }

    drawRope() {
      if (this.angles === null) {
        return;
      }
      const { rows, positions } = this.angles;
      drawRopePanel(this.q, this.words, this.config, { pair: Number(this.q(".tinyk-pg-pair").value),
        angles: rows, positions, tokens: this.textIds.slice(0, rows.length).map((id) => this.piece(id)) });
    }

    drawAttention() {
      if (this.rows === null) {
        return;
      }
      const head = Number(this.q(".tinyk-pg-head").value);
      const weights = this.rows[head];
      const tokens = this.textIds.slice(0, weights.length).map((id) => this.piece(id));
      drawAttentionPanel(this.q, this.words, this.config, { layer: this.data.attention_layers[0], head, weights,
        tokens });
    }

    piece(id) {
      return this.tokenizer.decode([id]).replace(/\n/g, "\u21b5");
    }

    drawTokens(ids) {
      this.q(".tinyk-chat-tokens").replaceChildren(...ids.map((id) => {
        const item = element("li");
        item.append(element("span", { class: "tinyk-pg-chip" }, this.piece(id)),
          element("span", { class: "tinyk-pg-id" }, String(id)));
        return item;
      }));
    }

    // The first token's 10 most likely choices, their probabilities at the chosen temperature.
    drawFirst() {
      const temperature = this.temperature();
      this.q(".tinyk-pg-temperature-value").textContent = temperature.toFixed(1);
      if (this.first) {
        drawTopTen(this.q, softmax(this.first, temperature), (id) => this.piece(id));
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
