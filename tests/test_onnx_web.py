"""The 05.10 model's web graph (tinyk.web.onnx_web): the GGUF's own blocks in an ONNX graph, split
into small files, run by ONNX Runtime against float32 tinyk.

The graph is made from a tiny llama GGUF file written here (5 layers, so the graph is stacked
from a two-layer export as SmolLM2's is, by tinyk.web.onnx_layers; Q4_1 linears, a Q8_0 embedding),
so one export takes seconds. SmolLM2's own export is run by the book's build and checked on the
site (tests/test_browser_smollm2.py); here its tokenizer's chat prompt is checked from the
installed file.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest
import torch

from tests.optional import need, smollm2_file
from tinyk import generate
from tinyk.interop.gguf import load_gguf, load_tokenizer
from tinyk.web.onnx_export import DecoderForExport, input_names, output_names
from tinyk.web.playground import generate as playground_generate
from tinyk.web.playground import run_graph

gguf = need("gguf")
need("onnxscript")
ort = need("onnxruntime")
from tinyk.web.onnx_web import (  # noqa: E402
    MARKER,
    WEB_GRAPH_OPTIMIZATION,
    WEB_SESSION_CONFIG,
    chat_prompt,
    export_web_model,
    session,
)

pytestmark = pytest.mark.xdist_group("onnx-export")

TOL = 1e-4
MAX_FILE_BYTES = 20_000
SIZES = {"dim": 64, "n_layers": 5, "n_heads": 4, "n_kv_heads": 2, "hidden": 128, "vocab": 96, "context": 64}
PROMPT = [[1, 17, 42, 5, 88, 63, 30]]


def write_tiny_gguf(path, seed: int = 0) -> None:
    """A llama GGUF file of :data:`SIZES`: Q4_1 linears, a Q8_0 embedding, F32 norms."""
    s = SIZES
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny web test")
    writer.add_vocab_size(s["vocab"])
    writer.add_context_length(s["context"])
    writer.add_embedding_length(s["dim"])
    writer.add_block_count(s["n_layers"])
    writer.add_feed_forward_length(s["hidden"])
    writer.add_head_count(s["n_heads"])
    writer.add_head_count_kv(s["n_kv_heads"])
    writer.add_rope_dimension_count(s["dim"] // s["n_heads"])
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    q4, q8 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0

    def add(name, shape, kind=None, scale=0.15):
        data = (rng.standard_normal(shape) * scale).astype(np.float32)
        if kind is None:  # a norm's weight
            writer.add_tensor(name, 1 + data)
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, kind), raw_dtype=kind)

    kv = s["dim"] // s["n_heads"] * s["n_kv_heads"]
    add("token_embd.weight", (s["vocab"], s["dim"]), q8, 1.0)
    for i in range(s["n_layers"]):
        for name, shape in (("attn_q", (s["dim"], s["dim"])), ("attn_k", (kv, s["dim"])),
                            ("attn_v", (kv, s["dim"])), ("attn_output", (s["dim"], s["dim"])),
                            ("ffn_gate", (s["hidden"], s["dim"])), ("ffn_up", (s["hidden"], s["dim"])),
                            ("ffn_down", (s["dim"], s["hidden"]))):
            add(f"blk.{i}.{name}.weight", shape, q4)
        add(f"blk.{i}.attn_norm.weight", (s["dim"],), scale=0.1)
        add(f"blk.{i}.ffn_norm.weight", (s["dim"],), scale=0.1)
    add("output_norm.weight", (s["dim"],), scale=0.1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_tiny_gguf(path)
    model, info = load_gguf(path)
    return path, model, info


@pytest.fixture(scope="module")
def web_template(tiny, tmp_path_factory):
    """The two-layer export of the tiny file's config (the exporter's seconds once): the web
    export below stacks its five layers from it, and the three-layer stacks further down theirs."""
    from tinyk.web.onnx_layers import export_template

    return export_template(tiny[1], tmp_path_factory.mktemp("template"), logits_to_keep=1)


@pytest.fixture(scope="module")
def exported(tiny, web_template, tmp_path_factory):
    path, model, info = tiny
    out = tmp_path_factory.mktemp("web")
    files = export_web_model(model, info, path, out, max_file_bytes=MAX_FILE_BYTES, tokenizer=False,
                             template=web_template)
    return out, files, session(out / "smollm2.onnx")


def test_the_files_are_small_and_the_manifest_names_them(exported, tiny):
    out, files, _ = exported
    _, model, _ = tiny
    names = [p.name for p in files]
    assert names[0] == "smollm2.onnx" and names[-1] == "smollm2.json"
    data = [p for p in files if ".data." in p.name]
    assert len(data) >= 3 and names[1:-1] == [f"smollm2.data.{i}" for i in range(len(data))]
    assert max(p.stat().st_size for p in data) <= MAX_FILE_BYTES  # the weights, in pieces
    assert files[0].stat().st_size < 150_000  # the graph: its nodes and tensors under 1 KB (5 layers)
    assert sorted(p.name for p in out.iterdir()) == sorted(names)  # no scratch left behind
    manifest = json.loads((out / "smollm2.json").read_text(encoding="utf-8"))
    assert manifest["files"] == [{"path": p.name, "bytes": p.stat().st_size} for p in files[:-1]]
    assert manifest["external_data"] == [p.name for p in data]
    assert manifest["web_session_config"] == WEB_SESSION_CONFIG == {
        "session.disable_quant_qdq": "1", "session.intra_op.allow_spinning": "0"}
    assert manifest["web_graph_optimization"] == WEB_GRAPH_OPTIMIZATION == "basic"
    assert manifest["session_config"] == {"session.disable_quant_qdq": "1"}
    assert manifest["inputs"] == [*input_names(5), "attention_layer"]
    assert manifest["outputs"] == output_names(5)
    assert manifest["attention_layers"] == [0, 1, 2, 3, 4]  # any of them, chosen at each call
    assert (manifest["layer_input"], manifest["default_layer"]) == ("attention_layer", 2)
    assert (manifest["bos_token_id"], manifest["eos_token_id"]) == (1, 2)
    assert manifest["config"]["dim"] == 64 and manifest["config"]["vocab_size"] == 96
    assert manifest["config"]["mlp_hidden_dim"] == model.config.mlp_hidden_dim == 128


def test_every_linear_and_the_embedding_hold_the_files_blocks(exported):
    out, _, _ = exported
    proto = onnx.load(str(out / "smollm2.onnx"), load_external_data=False)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("DequantizeLinear") == 7 * 5 + 1
    assert ops.count("FusedMatMul") == 1 and ops.count("Gather") == 1
    matrices = {(64, 64), (64, 32), (64, 128), (128, 64), (96, 64), (64, 96)}  # K×N of a linear, V×D
    kinds = [t.data_type for t in proto.graph.initializer if tuple(t.dims) in matrices]
    assert sorted(kinds) == [onnx.TensorProto.INT8] + [onnx.TensorProto.UINT4] * 35  # no float32 left
    stored = [t for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(stored) >= 36 and {e.key for e in stored[0].external_data} == {"location", "offset", "length"}


def test_logits_and_greedy_tokens_equal_tinyk(exported, tiny):
    """Run as the playground runs a graph (tinyk.web.playground): one call for the prompt, then one
    token per call through the KV cache."""
    out, _, sess = exported
    _, model, _ = tiny
    manifest = json.loads((out / "smollm2.json").read_text(encoding="utf-8"))
    ids = torch.tensor(PROMPT)
    with torch.no_grad():
        expected = model(ids).logits[:, -1].numpy()
    logits = run_graph(sess, manifest, PROMPT[0])["logits"]
    assert logits.shape == (1, 1, 96)
    assert np.abs(logits[:, -1] - expected).max() < TOL
    tokens = playground_generate(sess, manifest, PROMPT[0], 6)
    assert len(tokens) == 6
    assert tokens == generate(model, ids, max_new_tokens=6, temperature=0)[0].tolist()
    # The session as the page creates it: its session config and its graph optimisation level.
    web = session(out / "smollm2.onnx", web=True)
    assert web.get_session_options().graph_optimization_level.name == "ORT_ENABLE_BASIC"
    assert np.abs(run_graph(web, manifest, PROMPT[0])["logits"][:, -1] - expected).max() < TOL
    assert playground_generate(web, manifest, PROMPT[0], 6) == tokens


def test_a_web_optimisation_level_onnx_runtime_lacks_is_named(exported, tmp_path):
    _, files, _ = exported
    for path in files:
        shutil.copy(path, tmp_path / path.name)
    manifest = json.loads((tmp_path / "smollm2.json").read_text(encoding="utf-8"))
    manifest["web_graph_optimization"] = "fastest"
    (tmp_path / "smollm2.json").write_text(json.dumps(manifest), encoding="utf-8")
    said = (r"web_graph_optimization='fastest' in .*smollm2\.json: "
            r"must be one of \['all', 'basic', 'disabled', 'extended'\]")
    with pytest.raises(ValueError, match=said):
        session(tmp_path / "smollm2.onnx", web=True)


def test_each_stacked_layer_has_its_own_weights_cache_and_place(exported, tiny):
    """Every output of the stacked graph, after a cached prefix, is what the exported module
    computes in PyTorch: the present keys and values of each layer (its own weights, its own
    cache), the middle layer's attention, RoPE's angles."""
    out, _, sess = exported
    _, model, _ = tiny
    manifest = json.loads((out / "smollm2.json").read_text(encoding="utf-8"))
    first = run_graph(sess, manifest, PROMPT[0][:4])
    second = run_graph(sess, manifest, PROMPT[0][4:], first)
    ids = torch.tensor(PROMPT)
    with torch.no_grad():
        wrapper = DecoderForExport(model, [2], logits_to_keep=1).eval()
        empty = [torch.zeros(1, 0, 2, 16)] * 5
        prefix = wrapper(ids[:, :4], torch.ones(1, 4, dtype=torch.long), empty, empty)
        expected = wrapper(ids[:, 4:], torch.ones(1, 7, dtype=torch.long), prefix[4:9], prefix[9:])
    names = output_names(5)
    assert len(names) == len(expected) == 14
    for name, want in zip(names, expected, strict=True):
        got = second[name]
        assert got.shape == tuple(want.shape), name
        assert np.abs(got - want.float().numpy()).max() < TOL, name


def test_the_layer_input_chooses_whose_attention_weights_come_back(exported, tiny):
    """One graph, every layer: each layer's weights, chosen at the call, are the exported module's
    for that layer in PyTorch, after a cached prefix; the other outputs do not depend on the
    choice; a layer the model lacks gives no rows."""
    out, _, sess = exported
    _, model, _ = tiny
    manifest = json.loads((out / "smollm2.json").read_text(encoding="utf-8"))
    ids = torch.tensor(PROMPT)
    empty = [torch.zeros(1, 0, 2, 16)] * 5
    first = run_graph(sess, manifest, PROMPT[0][:4])
    chosen = {layer: run_graph(sess, manifest, PROMPT[0][4:], first, layer=layer) for layer in range(5)}
    assert len(chosen) == 5
    for layer, got in chosen.items():
        with torch.no_grad():
            wrapper = DecoderForExport(model, [layer], logits_to_keep=1).eval()
            prefix = wrapper(ids[:, :4], torch.ones(1, 4, dtype=torch.long), empty, empty)
            expected = wrapper(ids[:, 4:], torch.ones(1, 7, dtype=torch.long), prefix[4:9], prefix[9:])
        assert got["attention"].shape == (1, 1, 4, 3, 7)
        assert np.abs(got["attention"] - expected[1].numpy()).max() < TOL, layer
        assert np.array_equal(got["logits"], chosen[0]["logits"])
    assert not np.allclose(chosen[1]["attention"], chosen[2]["attention"], atol=1e-3)  # not one layer's
    assert run_graph(sess, manifest, PROMPT[0][4:], first, layer=5)["attention"].shape == (1, 0, 4, 3, 7)


def test_each_layer_waits_for_its_slice_of_the_chosen_weights(exported):
    """The residual stream that leaves layer i is what layer i + 1 reads, through a node that needs
    layer i's slice of the chosen weights: a runtime cannot put every slice off to the end and hold
    every layer's weights until then."""
    out, _, _ = exported
    graph = onnx.load(str(out / "smollm2.onnx"), load_external_data=False).graph
    producer = {o: node for node in graph.node for o in node.output}

    def needs(value: str, wanted: str) -> bool:
        seen, todo = set(), [value]
        while todo:
            v = todo.pop()
            if v == wanted:
                return True
            if v in seen or v not in producer:
                continue
            seen.add(v)
            todo.extend(producer[v].input)
        return False

    readers = {x for node in graph.node if node.name.startswith("layers.1/") for x in node.input}
    assert "layers.0/stream" in readers and "layers.3/stream" not in readers
    checked = [i for i in range(4) if needs(f"layers.{i}/stream", f"layers.{i}/chosen_weights")]
    assert checked == [0, 1, 2, 3]  # the last layer's stream goes to the final norm
    final = [n for n in graph.node if n.op_type == "Concat" and n.output[0] == "chosen_weights"]
    assert len(final) == 1 and list(final[0].input) == [f"layers.{i}/chosen_weights" for i in range(5)]


def test_a_model_that_differs_from_its_file_is_refused(tiny, tmp_path):
    path, model, info = tiny
    weight = model.layers[1].feed_forward.w2.weight
    saved = weight.detach().clone()
    with torch.no_grad():
        weight[3, 5] += 1e-3
    try:
        with pytest.raises(ValueError, match=r"blk\.1\.ffn_down\.weight, dequantised, differs from the "
                                             r"model's layers\.1\.feed_forward\.w2\.weight at 1 of 8192"):
            export_web_model(model, info, path, tmp_path, tokenizer=False)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_half_layout_and_other_ggml_types_are_named(tiny, tmp_path):
    path, _, info = tiny
    wrong, _ = load_gguf(path, rope_layout="half")
    with pytest.raises(ValueError, match=r"layers\.0\.attention\.wq\.weight holds blk\.0\.attn_q\.weight's "
                                         r"rows in the half-split order.*rope_layout='adjacent'"):
        export_web_model(wrong, info, path, tmp_path, tokenizer=False)
    other = tmp_path / "q8.gguf"
    q8 = gguf.GGMLQuantizationType.Q8_0
    writer = gguf.GGUFWriter(str(other), "llama")
    writer.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(np.zeros((64, 64), np.float32), q8),
                      raw_dtype=q8)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _, model, _ = tiny
    with pytest.raises(ValueError, match=r"blk\.0\.attn_q\.weight has GGML type Q8_0: .* must be Q4_1"):
        export_web_model(model, info, other, tmp_path / "out", tokenizer=False)
    with pytest.raises(ValueError, match=r"max_file_bytes=0: must be a positive int"):
        export_web_model(model, info, path, tmp_path / "out", max_file_bytes=0, tokenizer=False)


def test_the_chat_prompt_is_the_templates_text_around_the_message():
    path = smollm2_file()  # the installed file, or a skip that says how to install it
    tok = load_tokenizer(path)
    prefix, suffix = chat_prompt(tok)
    message = "What is the capital of France?"
    assert MARKER not in prefix + suffix
    assert prefix.endswith("<|im_start|>user\n") and suffix == "<|im_end|>\n<|im_start|>assistant\n"
    ids = tok.apply_chat_template([{"role": "user", "content": message}], add_generation_prompt=True,
                                  return_tensors="pt")["input_ids"][0].tolist()
    assert tok(prefix + message + suffix, add_special_tokens=False)["input_ids"] == ids
    assert len(ids) == 37


def test_reuse_keeps_files_made_from_the_same_inputs_only(exported, tiny, tmp_path, monkeypatch, capsys):
    from tinyk.web import onnx_web

    path, _, _ = tiny
    out = tmp_path / "kept"
    shutil.copytree(exported[0], out)
    manifest = json.loads((out / "smollm2.json").read_text(encoding="utf-8"))
    manifest["stamp"] = onnx_web.web_model_stamp(path, attention_layer=None, max_file_bytes=50_000_000)
    (out / "smollm2.json").write_text(json.dumps(manifest), encoding="utf-8")
    exports = []
    monkeypatch.setattr(onnx_web, "smollm2_path", lambda: path)
    monkeypatch.setattr(onnx_web, "export_web_model", lambda *args, **kw: exports.append(kw) or [])
    assert onnx_web.main(["--out", str(out), "--reuse"]) == 0
    assert exports == [] and "smollm2.data.0" in capsys.readouterr().out
    assert onnx_web.main(["--out", str(out), "--reuse", "--max-file-bytes", "40000"]) == 0  # other options
    (out / "smollm2.data.1").write_bytes(b"cut")  # a file that is not as written
    assert onnx_web.main(["--out", str(out), "--reuse"]) == 0
    assert onnx_web.main(["--out", str(out)]) == 0  # no --reuse: always exports
    assert [kw["max_file_bytes"] for kw in exports] == [40_000, 50_000_000, 50_000_000]
    assert exports[0]["stamp"] != exports[1]["stamp"] == manifest["stamp"]


def _three_layers(config, seed: int):
    """Three layers of ``config`` (a :class:`~tinyk.model.ModelConfig`), weights drawn from ``seed``."""
    import dataclasses

    from tinyk.model import Transformer

    torch.manual_seed(seed)
    return Transformer(dataclasses.replace(config, n_layers=3)).eval()


@pytest.mark.parametrize("attention_layer", [0, 2])
def test_a_stack_whose_first_or_last_layer_returns_attention(attention_layer, tiny, web_template, tmp_path):
    """The attention layer's copy reads the embedding (layer 0) or feeds the head (layer 2 of 3):
    every output is the exported module's, in PyTorch, after a cached prefix. Both stacks are
    built from the web export's template, which they leave as it was."""
    from tinyk.web.onnx_layers import export_stacked

    model = _three_layers(tiny[1].config, attention_layer)
    before = web_template.SerializeToString()
    proto = export_stacked(model, tmp_path, attention_layer=attention_layer, logits_to_keep=1,
                           template=web_template)
    assert web_template.SerializeToString() == before
    assert [p.key for p in proto.metadata_props if p.key.startswith("tinyk.stack")] == []
    names = [v.name for v in proto.graph.value_info]
    assert len(names) == len(set(names))  # each value typed once
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    empty = np.zeros((1, 0, 2, 16), np.float32)
    past = {f"past_{kind}_{i}": empty for kind in ("key", "value") for i in range(3)}
    ids = np.array([[3, 14, 15, 9, 2, 6]])
    first = dict(zip(output_names(3), sess.run(None, {"input_ids": ids[:, :4],
                                                      "attention_mask": np.ones((1, 4), np.int64), **past}),
                     strict=True))
    past = {f"past_{kind}_{i}": first[f"present_{kind}_{i}"] for kind in ("key", "value") for i in range(3)}
    got = sess.run(None, {"input_ids": ids[:, 4:], "attention_mask": np.ones((1, 6), np.int64), **past})
    with torch.no_grad():
        wrapper = DecoderForExport(model, [attention_layer], logits_to_keep=1).eval()
        keys = [torch.from_numpy(first[f"present_key_{i}"]) for i in range(3)]
        values = [torch.from_numpy(first[f"present_value_{i}"]) for i in range(3)]
        expected = wrapper(torch.from_numpy(ids[:, 4:]), torch.ones(1, 6, dtype=torch.long), keys, values)
    assert len(got) == len(expected) == 10
    worst = {name: float(np.abs(g - e.numpy()).max()) for name, g, e in zip(output_names(3), got, expected,
                                                                              strict=True)}
    assert max(worst.values()) < 1e-5, worst


def test_a_stacked_export_needs_three_layers_and_a_layer_it_has(tiny, tmp_path):
    from tinyk.model import ModelConfig, Transformer
    from tinyk.web.onnx_layers import export_stacked

    _, model, _ = tiny
    with pytest.raises(ValueError, match=r"attention_layer=5 with n_layers=5: needs .*0 <= attention_layer"):
        export_stacked(model, tmp_path, attention_layer=5)
    two = Transformer(ModelConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=96, max_seq_len=64))
    with pytest.raises(ValueError, match=r"n_layers=2: needs n_layers >= 3"):
        export_stacked(two, tmp_path, attention_layer=0)
    attention = model.layers[3].attention
    attention.attend = lambda q, k, v, mask: v  # a seam swapped on one instance, as tinyk.learner.parts does
    try:
        with pytest.raises(ValueError, match=r"differs from a model of its class and config in "
                                             r"layers\.3\.attention: export_onnx exports it"):
            export_stacked(model, tmp_path, attention_layer=2)
    finally:
        del attention.attend
    assert list(tmp_path.iterdir()) == []


def test_a_template_made_for_another_model_or_head_is_refused(tiny, web_template, tmp_path):
    from tinyk.model import ModelConfig, Transformer
    from tinyk.web.onnx_layers import export_stacked

    path, model, info = tiny  # the template's: five layers of 64, the last position's logits
    narrow = Transformer(ModelConfig(dim=32, n_layers=3, n_heads=4, n_kv_heads=2, vocab_size=96,
                                     max_seq_len=64))
    with pytest.raises(ValueError, match=r"template was made for .*\"dim\": 64.*not for .*\"dim\": 32"):
        export_stacked(narrow, tmp_path, attention_layer=1, logits_to_keep=1, template=web_template)
    with pytest.raises(ValueError, match=r"made for .*, 1\], not for .*, 0\]: make it with export_template"):
        export_stacked(_three_layers(model.config, 1), tmp_path, attention_layer=1, template=web_template)
    # A model the web export cannot stack (one layer's seam swapped) is exported whole: no template.
    attention = model.layers[3].attention
    attention.attend = lambda q, k, v, mask: v
    try:
        with pytest.raises(ValueError, match=r"template= is for a stacked export .*pass no template"):
            export_web_model(model, info, path, tmp_path / "web", tokenizer=False, template=web_template)
    finally:
        del attention.attend
    assert not (tmp_path / "web").exists()
    assert list(tmp_path.iterdir()) == []
