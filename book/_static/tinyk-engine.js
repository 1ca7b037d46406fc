// The playground's engine, a Web Worker that tinyk-playground.js starts (one per page): ONNX Runtime
// Web, each model's session, SmolLM2's files and tokenizer, and every call of a graph run here, so
// that the page only draws and stays responsive while a model reads a long prompt. The page asks
// by message ({id, op, ...}) and gets one answer per message ({id, result} or {id, error}), with
// {id, progress} before it while SmolLM2's files arrive. A call's KV cache stays here, under a key
// the page names; its other outputs go to the page, their buffers moved, not copied.
"use strict";
const STATIC = new URL("./", self.location.href);
const sessions = {}; // by model: "tiny" (the 05.7 model) or "smollm2"
const caches = new Map(); // a call's present keys and values, by the key the page gave it
let onnx = null; // ONNX Runtime Web (its loader declares `ort`, so another name here)
let tokenizer = null;
let download = null; // the AbortController of SmolLM2's download under way

function loadOrt(threads) {
  if (onnx === null) {
    importScripts(new URL("ort/ort.wasm.min.js", STATIC).href);
    onnx = self.ort;
    onnx.env.wasm.wasmPaths = new URL("ort/", STATIC).href;
    onnx.env.wasm.numThreads = threads; // the page's choice (tinyk-playground.js says why)
    onnx.env.logLevel = "error";
  }
  return onnx;
}

// Every file of SmolLM2, its bytes counted as they arrive (a progress message per megabyte and at
// each file's end); the page's Stop aborts the fetch.
async function fetchAll(id, files, stamp, signal) {
  const total = files.reduce((sum, file) => sum + file.bytes, 0);
  let received = 0;
  let said = -1;
  const bytes = {};
  for (const file of files) {
    // The files' stamp in the address: a browser that kept an older export fetches this one.
    const url = new URL(`smollm2/${file.path}?v=${stamp}`, STATIC).href;
    const named = (error) => (error.name === "AbortError" ? error : new Error(`${file.path}: ${error.message || error}`));
    const response = await fetch(url, { signal }).catch((error) => { throw named(error); });
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
      if (Math.floor(received / 1e6) !== said) {
        said = Math.floor(received / 1e6);
        self.postMessage({ id, progress: { received, total } });
      }
    }
    if (offset !== file.bytes) {
      throw new Error(`${file.path}: ${offset} of its ${file.bytes} bytes`);
    }
    self.postMessage({ id, progress: { received, total } }); // each file's end too
    bytes[file.path] = data;
  }
  return bytes;
}

const OUTPUTS = ["logits", "attention", "rope_angles", "rope_positions"];
const PANELS = ["scores", "mask", "residual_norms"]; // the 05.7 graph's steps before the softmax, and the stream

const ops = {
  async "load-tiny"({ url, threads }) {
    const runtime = loadOrt(threads);
    // Idle threads wait without spinning (tinyk.web.onnx_web's WEB_SESSION_CONFIG, SmolLM2's, says why).
    sessions.tiny = await runtime.InferenceSession.create(url, { executionProviders: ["wasm"],
      extra: { session: { "intra_op.allow_spinning": "0" } } });
    return { threads: runtime.env.wasm.numThreads };
  },

  async "load-smollm2"({ data, threads }, id) {
    download = new AbortController();
    const tokenizerModule = import(new URL("ort/tokenizers.min.mjs", STATIC).href);
    tokenizerModule.catch(() => {}); // a failure is reported when it is awaited, after the files' own
    let files;
    try {
      files = await fetchAll(id, data.files, data.stamp, download.signal);
    } finally {
      download = null;
    }
    self.postMessage({ id, progress: { starting: true } });
    const runtime = loadOrt(threads);
    const { Tokenizer } = await tokenizerModule;
    const json = JSON.parse(new TextDecoder().decode(files[data.tokenizer.file]));
    tokenizer = new Tokenizer(json, {});
    const extra = {}; // "session.disable_quant_qdq": "1" -> { session: { disable_quant_qdq: "1" } }
    for (const [key, value] of Object.entries(data.web_session_config)) {
      const [group, ...name] = key.split(".");
      (extra[group] ??= {})[name.join(".")] = value;
    }
    const options = { executionProviders: ["wasm"], extra, graphOptimizationLevel: data.web_graph_optimization,
      externalData: data.external_data.map((path) => ({ path, data: files[path] })) };
    const used = { level: options.graphOptimizationLevel, extra: structuredClone(extra), external: true };
    sessions.smollm2 = await runtime.InferenceSession.create(files[data.onnx], options);
    // Each token's text as the vocabulary holds it (byte-level: a character per byte) and which are
    // special (the chat template's): the page shows a token's bytes from them.
    const vocab = Array.from({ length: data.config.vocab_size }, (_, i) => tokenizer.id_to_token(i) ?? "");
    const special = tokenizer.added_tokens.map((token) => token.id);
    return { threads: runtime.env.wasm.numThreads, options: used, vocab, special };
  },

  stop() {
    download?.abort();
    return download !== null;
  },

  encode({ text }) {
    return tokenizer.encode(text).ids;
  },

  // One call of a model's graph (runGraph), in its turn (inTurn).
  run(args) {
    return inTurn(() => runGraph(args));
  },

  drop({ key }) {
    caches.delete(key);
    return null;
  },

  // A greedy decode of n tokens entirely here (the benchmark's measure of the runtime itself):
  // the prompt's call, then one token per call with the cache; their time, and the part of it
  // spent in session.run.
  greedy({ model, config, ids, n }) {
    return inTurn(async () => {
      const started = performance.now();
      const { tokens, ms } = await decode(model, config, ids, n, "greedy");
      return { tokens, seconds: (performance.now() - started) / 1000, runSeconds: ms / 1000 };
    });
  },

  // `calls` calls of the 05.7 model's decode whose tokens nobody reads: the page's warm-up
  // (tinyk-playground.js says why). Greedy decodes of the prompt `ids`, each as long as the
  // model's context allows. Their time, in ms, comes back.
  warm({ model, config, ids, calls }) {
    return inTurn(async () => {
      const started = performance.now();
      for (let done = 0; done < calls;) {
        const n = Math.max(1, Math.min(calls - done, config.max_seq_len - ids.length));
        await decode(model, config, ids, n, "warm");
        done += n;
      }
      return performance.now() - started;
    });
  },
};

// The calls of the graphs, one at a time, in the order they came: the page's warm-up and the
// reader's own calls never interleave in the runtime, and a reader's call waits at most for the
// warm-up's piece under way (the page asks for it in short pieces).
let turn = Promise.resolve();
function inTurn(work) {
  const result = turn.then(work);
  turn = result.catch(() => {});
  return result;
}

// n greedy tokens after `ids`: the prompt's call, then one token per call with the cache (the
// caches under `name`-i, dropped as they are used). Only the logits and the cache come out. The
// tokens and the calls' time in session.run (ms).
async function decode(model, config, ids, n, name) {
  const argmax = (values) => {
    let best = 0;
    for (let i = 1; i < values.length; i++) {
      if (values[i] > values[best]) {
        best = i;
      }
    }
    return best;
  };
  const vocab = config.vocab_size;
  let [out] = await runGraph({ model, config, ids, past: null, keep: `${name}-0`, last: true, want: ["logits"] });
  let ms = out.ms;
  const tokens = [];
  for (let i = 0; i < n; i++) {
    tokens.push(argmax(out.logits.data.subarray(out.logits.data.length - vocab)));
    if (i + 1 < n) {
      [out] = await runGraph({ model, config, ids: [tokens[i]], past: `${name}-${i}`, keep: `${name}-${i + 1}`,
        free: true, last: true, want: ["logits"] });
      ms += out.ms;
    }
  }
  caches.delete(`${name}-${n - 1}`);
  return { tokens, ms };
}

// One call of a model's graph: ids (batch 1) after the cache kept under `past` (none: null).
// Its cache is kept under `keep` (none: not kept), and `past`'s dropped once the call ran
// (`free`). `last`: only the last position's logits come back (SmolLM2's graph returns no
// more). `want`: the outputs that come back (if not said: the four, and the panels' outputs the
// graph has). `layer`: for a graph that takes the input `attention_layer` (SmolLM2's), the layer
// whose attention weights come back. The call's own time, in ms, comes back with it: the page's
// drawing is never in it.
async function runGraph({ model, config, ids, past, keep, free, last, layer = 0, want = null }) {
  const session = sessions[model];
  want ??= [...OUTPUTS, ...PANELS.filter((name) => session.outputNames.includes(name))];
  const previous = past === null ? null : caches.get(past);
  if (past !== null && previous === undefined) {
    throw new Error(`no cache ${past}`);
  }
  const cached = previous ? previous.present_key_0.dims[1] : 0;
  const feeds = {
    input_ids: new onnx.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]),
    attention_mask: new onnx.Tensor("int64", new BigInt64Array(cached + ids.length).fill(1n),
      [1, cached + ids.length]),
  };
  for (let i = 0; i < config.n_layers; i++) {
    for (const kind of ["key", "value"]) {
      feeds[`past_${kind}_${i}`] = previous ? previous[`present_${kind}_${i}`]
        : new onnx.Tensor("float32", new Float32Array(0), [1, 0, config.n_kv_heads, config.head_dim]);
    }
  }
  if (session.inputNames.includes("attention_layer")) {
    feeds.attention_layer = new onnx.Tensor("int64", BigInt64Array.of(BigInt(layer)), []);
  }
  // Only the outputs asked for and the cache come out of the runtime's memory: a decode step
  // that needs only the logits does not copy out the rest.
  const fetches = [...new Set([...want, ...session.outputNames.filter((name) => name.startsWith("present_"))])];
  const started = performance.now();
  const out = await session.run(feeds, fetches);
  const ms = performance.now() - started;
  if (keep) {
    caches.set(keep, out);
  }
  if (free && past !== null) {
    caches.delete(past);
  }
  const result = { ms, cache_length: out.present_key_0.dims[1] };
  const moved = [];
  for (const name of want) {
    let data = out[name].data;
    let dims = [...out[name].dims];
    if (name === "logits" && last) {
      const vocab = dims[dims.length - 1];
      data = data.slice(data.length - vocab);
      dims = [1, 1, vocab];
    } else if (!(data.buffer instanceof ArrayBuffer) || data.byteLength !== data.buffer.byteLength) {
      data = data.slice(); // a view of shared memory: copied, so that its buffer can move
    }
    result[name] = { data, dims };
    moved.push(data.buffer);
  }
  return [result, moved];
}

self.onmessage = async ({ data: { id, op, ...args } }) => {
  try {
    const answer = await ops[op](args, id);
    const [result, moved] = Array.isArray(answer) && op === "run" ? answer : [answer, []];
    self.postMessage({ id, result }, moved);
  } catch (error) {
    self.postMessage({ id, error: error.message || String(error), aborted: error.name === "AbortError" });
  }
};
