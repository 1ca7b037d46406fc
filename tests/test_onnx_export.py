"""The decoder exported to ONNX, run by ONNX Runtime, against tinyk (sections 05.3 to 05.7).

One export for the whole file (the CLI, on the shipped 05.7 model); every test reads it.
"""

from __future__ import annotations

import json
import math
import shutil
import sys

import numpy as np
import pytest
import torch

from tests.optional import need
from tinyk import KVCache, generate
from tinyk.courseware.checkout import ROOT
from tinyk.data import CharTokenizer, synthetic_text
from tinyk.model import ModelConfig, Transformer, apply_rotary_emb
from tinyk.training import trained_course_model
from tinyk.web import onnx_export
from tinyk.web.onnx_export import DecoderForExport, export_course_model, input_names, main, output_names
from tinyk.web.playground import EXAMPLE_PROMPT, encode, example_run, write_example

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from tinyk_playground import ORT_FILES

need("onnxscript")
ort = need("onnxruntime")

pytestmark = pytest.mark.xdist_group("onnx-export")  # one worker: one export

TOL = 1e-4
PROMPT = "3+4=4+3\n8+5=5+8\n2+7="


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """The CLI's files, where the book build keeps them (``_build/web-static/models``)."""
    out = tmp_path_factory.mktemp("book") / "_build" / "web-static" / "models"
    assert main(["--out", str(out)]) == 0
    session = ort.InferenceSession(str(out / "tiny.onnx"), providers=["CPUExecutionProvider"])
    _seed_the_book_build(out)
    return out, session


def _seed_the_book_build(out):
    """The same two files into the checkout's ``_build/web-static/models``, unless the ones
    there have the current stamp already: the book build (make's site-build stage, after this
    one) then keeps them (``export_course_model(reuse=True)``) instead of exporting the model
    again. Under the book build's lock; the manifest, which says the files are current, last."""
    import fcntl
    import os

    static = ROOT / "_build" / "web-static"
    target = static / "models"
    target.mkdir(parents=True, exist_ok=True)
    with open(static / ".models.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if onnx_export.course_model_current(target):
            return
        for name in ("tiny.onnx", "tiny.json"):
            shutil.copyfile(out / name, target / f".{name}.part")
            os.replace(target / f".{name}.part", target / name)


@pytest.fixture(scope="module")
def model():
    return trained_course_model()


def ids_of(*texts: str) -> list[list[int]]:
    return [CharTokenizer().encode(t).tolist() for t in texts]


def run(session, model, ids, mask=None, past=None) -> dict[str, np.ndarray]:
    """One call of the graph; ``past``: (keys, values) lists, or None for an empty cache."""
    ids = np.asarray(ids, dtype=np.int64)
    B, T = ids.shape
    cfg = model.config
    if past is None:
        empty = np.zeros((B, 0, cfg.n_kv_heads, cfg.head_dim), dtype=np.float32)
        past = ([empty] * cfg.n_layers, [empty] * cfg.n_layers)
    P = past[0][0].shape[1]
    mask = np.ones((B, P + T), dtype=np.int64) if mask is None else np.asarray(mask, dtype=np.int64)
    feed = dict(zip(input_names(cfg.n_layers), [ids, mask, *past[0], *past[1]], strict=True))
    return dict(zip(output_names(cfg.n_layers, panels=True), session.run(None, feed), strict=True))


def presents(out: dict[str, np.ndarray], n_layers: int) -> tuple[list, list]:
    return ([out[f"present_key_{i}"] for i in range(n_layers)],
            [out[f"present_value_{i}"] for i in range(n_layers)])


def test_the_file_is_self_contained_with_dynamic_sizes(exported, model):
    out, session = exported
    assert sorted(p.name for p in out.iterdir()) == ["tiny.json", "tiny.onnx"]  # no .data beside it
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert shapes["input_ids"] == ["batch", "seq"]
    assert shapes["attention_mask"] == ["batch", "total"]
    assert shapes["past_key_1"] == ["batch", "past", 2, 8]
    assert [o.name for o in session.get_outputs()] == output_names(model.config.n_layers, panels=True)


def test_manifest_describes_the_graph_and_the_tokenizer(exported, model):
    out, session = exported
    manifest = json.loads((out / "tiny.json").read_text(encoding="utf-8"))
    assert "".join(manifest["tokenizer"]["vocab"]) == "0123456789+=\n"
    assert manifest["config"]["vocab_size"] == 13 and manifest["config"]["n_kv_heads"] == 2
    assert manifest["config"]["max_seq_len"] == model.config.max_seq_len == 64
    assert manifest["inputs"] == [i.name for i in session.get_inputs()]
    assert manifest["outputs"] == [o.name for o in session.get_outputs()]
    assert manifest["attention_layers"] == [0, 1] and manifest["onnx"] == "tiny.onnx"


def test_prompt_logits_and_cache_equal_tinyk(exported, model):
    _, session = exported
    ids = torch.tensor(ids_of(PROMPT))  # 1×20, longer than the traced example (3 tokens)
    got = run(session, model, ids)
    cache = KVCache(model.config, batch_size=1)
    with torch.no_grad():
        want = model(ids, cache=cache).logits
    assert np.abs(got["logits"] - want.numpy()).max() <= TOL
    keys, values = presents(got, model.config.n_layers)
    assert len(keys) == len(values) == 2
    for i in range(2):
        assert np.abs(keys[i] - cache.keys[i][:, : ids.shape[1]].numpy()).max() <= TOL
        assert np.abs(values[i] - cache.values[i][:, : ids.shape[1]].numpy()).max() <= TOL
    assert CharTokenizer().decode([int(got["logits"][0, -1].argmax())]) == "7"  # 2+7=7+2


def test_left_padded_batch_equals_tinyk_and_each_prompt_alone(exported, model):
    _, session = exported
    prompts = ids_of(PROMPT, "5+1=", "9+")
    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    got = run(session, model, ids, mask)
    with torch.no_grad():
        want = model(ids, attention_mask=mask).logits
    assert np.isfinite(got["logits"]).all()  # padding queries see no key: zeros, not NaN
    assert np.abs(got["logits"] - want.numpy()).max() <= TOL
    assert len(prompts) == 3
    for row, prompt in enumerate(prompts):
        alone = run(session, model, [prompt])["logits"][0]
        assert np.abs(got["logits"][row, width - len(prompt) :] - alone).max() <= TOL


def test_decode_steps_with_the_graphs_cache_equal_tinyk_generate(exported, model):
    _, session = exported
    prompt = ids_of("6+3=")
    out = run(session, model, prompt)
    tokens = []
    for _ in range(4):  # greedy, each step one token and the graph's own cache
        tokens.append(int(out["logits"][0, -1].argmax()))
        out = run(session, model, [[tokens[-1]]], past=presents(out, model.config.n_layers))
    want = generate(model, torch.tensor(prompt), max_new_tokens=4, temperature=0)
    assert tokens == want[0].tolist()
    assert CharTokenizer().decode(tokens) == "3+6\n"

    cache = KVCache(model.config, batch_size=1)
    with torch.no_grad():
        model(torch.tensor(prompt), cache=cache)
        step = model(torch.tensor([[tokens[0]]]), cache=cache).logits
    again = run(session, model, [[tokens[0]]], past=presents(run(session, model, prompt), 2))
    assert again["logits"].shape == (1, 1, 13)
    assert np.abs(again["logits"] - step.numpy()).max() <= TOL
    assert again["present_key_0"].shape == (1, 5, 2, 8)
    assert np.abs(again["present_value_1"] - cache.values[1][:, :5].numpy()).max() <= TOL


def attention_by_hand(model: Transformer, ids: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's softmax weights from the model's modules, with torch's own grouping
    (``repeat_interleave``) and an explicit causal softmax: no tinyk attention code."""
    scores, _ = scores_and_norms_by_hand(model, ids)
    T = ids.shape[1]
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    return [torch.softmax(s.masked_fill(future, -math.inf), dim=-1) for s in scores]


def test_attention_weights_are_the_models_softmax(exported, model):
    _, session = exported
    ids = torch.tensor(ids_of(PROMPT))
    attention = run(session, model, ids)["attention"]  # N×B×H_q×T×T_k
    assert attention.shape == (2, 1, 4, 20, 20)
    assert np.abs(attention.sum(-1) - 1).max() <= 1e-5
    assert (np.triu(attention, k=1) == 0).all()  # causal: no weight on a later token
    with torch.no_grad():
        want = torch.stack(attention_by_hand(model, ids))  # N×1×H_q×T×T
    assert np.abs(attention - want.numpy()).max() <= 1e-5


def scores_and_norms_by_hand(model: Transformer, ids: torch.Tensor) -> tuple[list[torch.Tensor], list]:
    """Each layer's scaled scores ``q kᵀ / sqrt(d_h)`` before the mask, and the residual stream's
    norm per token after the embedding and after each layer, from the model's modules (torch's
    grouping and an einsum: no tinyk attention code)."""
    cfg = model.config
    T = ids.shape[1]
    cos, sin = model.freqs_cos[:T], model.freqs_sin[:T]
    h = model.tok_embeddings(ids)
    scores, norms = [], [h.norm(dim=-1)]
    for layer in model.layers:
        a, x = layer.attention, layer.attention_norm(h)
        q = a.wq(x).view(1, T, cfg.n_heads, cfg.head_dim)
        k = a.wk(x).view(1, T, cfg.n_kv_heads, cfg.head_dim)
        q, k = apply_rotary_emb(q, k, cos, sin)
        k = k.repeat_interleave(cfg.n_rep, dim=2)
        scores.append(torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(cfg.head_dim))
        h = layer(h, cos, sin)
        norms.append(h.norm(dim=-1))
    return scores, norms


def test_the_steps_before_the_softmax_and_the_residual_norms_are_the_models(exported, model):
    """The page's panels of the 05.7 model: the scaled scores, the mask added to them (0 or the
    smallest float above the diagonal), whose softmax is the attention output, and the residual
    stream's norm per layer."""
    _, session = exported
    ids = torch.tensor(ids_of(PROMPT))
    out = run(session, model, ids)
    with torch.no_grad():
        scores, norms = scores_and_norms_by_hand(model, ids)
    assert out["scores"].shape == (2, 1, 4, 20, 20) and out["residual_norms"].shape == (3, 1, 20)
    assert np.abs(out["scores"] - torch.stack(scores).numpy()).max() <= 1e-4
    assert np.abs(out["residual_norms"] - torch.stack(norms).numpy()).max() <= 1e-4
    lowest = np.finfo(np.float32).min
    assert out["mask"].shape == (1, 1, 20, 20)
    assert (out["mask"][0, 0] == np.triu(np.full((20, 20), lowest, np.float32), k=1)).all()
    added = torch.from_numpy(out["scores"] + out["mask"][None])  # lowest + a score: still about -3.4e38
    assert np.abs(torch.softmax(added, dim=-1).numpy() - out["attention"]).max() <= 1e-5
    step = run(session, model, [[3]], past=presents(out, 2))  # one token after the cache: nothing blocked
    assert step["mask"].shape == (1, 1, 1, 21) and (step["mask"] == 0).all()
    assert step["scores"].shape == (2, 1, 4, 1, 21) and step["residual_norms"].shape == (3, 1, 1)


def test_attention_of_a_padded_batch_and_a_decode_step(exported, model):
    _, session = exported
    ids, mask = [[0, 0, *ids_of("4+")[0]]], [[0, 0, 1, 1]]
    out = run(session, model, ids, mask)
    w = out["attention"][:, 0]  # N×H_q×T×T_k
    assert (w[:, :, :2] == 0).all()  # padding queries: zero rows
    assert (w[:, :, :, :2] == 0).all()  # nobody attends to padding
    assert np.abs(w[:, :, 2:].sum(-1) - 1).max() <= 1e-5
    step = run(session, model, [[3]], [[0, 0, 1, 1, 1]], past=presents(out, 2))
    assert step["attention"].shape == (2, 1, 4, 1, 5)
    assert (step["attention"][..., :2] == 0).all()
    assert np.abs(step["attention"].sum(-1) - 1).max() <= 1e-5


def test_rope_positions_and_angles(exported, model):
    _, session = exported
    out = run(session, model, [[0, 0, 1, 2, 3]], [[0, 0, 1, 1, 1]])
    assert out["rope_positions"].tolist() == [[0, 0, 0, 1, 2]]
    step = run(session, model, [[4]], [[0, 0, 1, 1, 1, 1]], past=presents(out, 2))
    assert step["rope_positions"].tolist() == [[3]]
    long = run(session, model, [list(range(10)) * 5])  # positions 0..49
    d_h = model.config.head_dim
    omega = 10000.0 ** (-np.arange(0, d_h, 2) / d_h)  # ω_i = θ^(-2i/d_h)
    t = np.arange(50)[:, None]
    wrapped = np.angle(np.exp(1j * t * omega))  # t·ω_i in (-π, π]
    difference = np.angle(np.exp(1j * (long["rope_angles"][0] - wrapped)))  # across the ±π seam
    assert long["rope_angles"].shape == (1, 50, d_h // 2)
    assert np.abs(difference).max() <= 1e-5
    assert long["rope_angles"][0, 3, 0] == pytest.approx(3.0, abs=1e-6)  # ω_0 = 1: 3 radians


def test_the_wrapper_runs_the_models_own_seams(model):
    wrapper = DecoderForExport(model).eval()
    ids = torch.tensor(ids_of(PROMPT))
    mask = torch.ones_like(ids)
    empty = [torch.zeros(1, 0, 2, 8)] * 2
    learners = lambda q, k, v, mask: torch.zeros_like(q)
    rope = [layer.attention.apply_rope for layer in model.layers]
    for layer in model.layers:
        layer.attention.apply_rope = lambda q, k, cos, sin: (q, k)  # RoPE switched off
    model.layers[1].attention.attend = learners
    try:
        with torch.no_grad():
            logits = wrapper(ids, mask, empty, empty)[0]
            want = model(ids).logits
        assert torch.allclose(logits, want, atol=1e-6)
        assert model.layers[1].attention.attend is learners  # put back after the call
        assert "attend" not in vars(model.layers[0].attention)
    finally:
        for layer, apply_rope in zip(model.layers, rope, strict=True):
            layer.attention.apply_rope = apply_rope
            vars(layer.attention).pop("attend", None)
    with torch.no_grad():
        assert not torch.allclose(wrapper(ids, mask, empty, empty)[0], logits, atol=1e-3)


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"attention_layers": [2]}, ValueError, r"holds 2: the model has 2 layers.*0 <= index <= 1"),
    ({"attention_layers": [-1]}, ValueError, r"attention_layers holds -1"),
    ({"attention_layers": [0, 0]}, ValueError, r"names a layer twice"),
    ({"attention_layers": []}, ValueError, r"choose at least one layer"),
    ({"attention_layers": "0"}, TypeError, r"attention_layers='0': must be a sequence"),
    ({"attention_layers": [True]}, TypeError, r"each entry must be an int"),
    ({"logits_to_keep": -1}, ValueError, r"logits_to_keep=-1: must be an int >= 0"),
])
def test_a_bad_export_request_says_what_is_wrong(kwargs, error, words):
    model = Transformer(ModelConfig.tiny())
    with pytest.raises(error, match=words):
        DecoderForExport(model, **kwargs)
    with pytest.raises(TypeError, match=r"wraps a tinyk\.model\.Transformer"):
        DecoderForExport(torch.nn.Linear(2, 2))  # type: ignore[arg-type]


def test_export_onnx_refuses_before_tracing(tmp_path):
    with pytest.raises(ValueError, match=r"attention_layers holds 5: the model has 2 layers"):
        onnx_export.export_onnx(Transformer(ModelConfig.tiny()), tmp_path / "x.onnx", attention_layers=[5])
    with pytest.raises(ValueError, match=r"max_seq_len=4: .* needs max_seq_len >= 8"):
        onnx_export.export_onnx(Transformer(ModelConfig.tiny(max_seq_len=4)), tmp_path / "x.onnx")
    assert list(tmp_path.iterdir()) == []


def test_the_book_build_serves_the_files_from_static_and_reuses_them(exported, tmp_path):
    """A one-page Sphinx build with the book's extension: the files land in _static/models,
    taken from _build/web-static without exporting again (their times are unchanged)."""
    from sphinx.application import Sphinx

    out, _ = exported
    build = out.parent.parent  # _build
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
                                 "extensions = ['tinyk_book']\ntinyk_smollm2 = False\n")
    (src / "index.rst").write_text("Page\n====\n\nA page.\n")
    app = Sphinx(str(src), str(src), str(build / "html"), str(build / ".doctrees"), "html",
                        status=None, warning=None, freshenv=True)
    app.build()
    served = build / "html" / "_static" / "models"
    assert sorted(p.name for p in served.iterdir()) == ["tiny-example.json", "tiny.json", "tiny.onnx"]
    assert (served / "tiny.onnx").read_bytes() == (out / "tiny.onnx").read_bytes()
    before["tiny-example.json"] = (out / "tiny-example.json").stat().st_mtime_ns  # written once, here
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    # The playground's runtime, from the npm package that make installs into .tools.
    assert sorted(p.name for p in (build / "html" / "_static" / "ort").iterdir()) == sorted(
        [*ORT_FILES, "tokenizers.min.mjs"])  # and Hugging Face's tokenizers, for SmolLM2's chat
    assert not (build / "web-static" / "smollm2").exists()  # tinyk_smollm2 = False
    (out / "tiny-example.json").unlink()  # the other tests see the CLI's two files


def test_the_book_builds_folder_gets_the_export(exported):
    """make's site-build keeps the 05.7 model exported here (the same stamp, the same bytes)."""
    out, _ = exported
    target = ROOT / "_build" / "web-static" / "models"
    assert json.loads((target / "tiny.json").read_text(encoding="utf-8"))["stamp"] == \
        onnx_export.course_model_stamp()
    assert export_course_model(target, reuse=True) == [target / "tiny.onnx", target / "tiny.json"]
    assert [(target / n).stat().st_size for n in ("tiny.onnx", "tiny.json")] == \
        [(out / n).stat().st_size for n in ("tiny.onnx", "tiny.json")]
    assert not list(target.glob(".*.part"))


def test_a_changed_stamp_exports_again(exported, tmp_path, monkeypatch):
    out, _ = exported
    copy = tmp_path / "models"
    shutil.copytree(out, copy)
    calls = []
    monkeypatch.setattr(onnx_export, "export_onnx", lambda model, path, **kw: calls.append(kw))
    export_course_model(copy, reuse=True)
    assert calls == []  # same stamp: nothing exported
    manifest = json.loads((copy / "tiny.json").read_text(encoding="utf-8"))
    assert manifest["stamp"] == onnx_export.course_model_stamp()
    (copy / "tiny.json").write_text(json.dumps({**manifest, "stamp": "an older model"}), encoding="utf-8")
    export_course_model(copy, reuse=True)
    assert calls == [{"attention_layers": (0, 1), "panels": True}]
    assert json.loads((copy / "tiny.json").read_text(encoding="utf-8"))["stamp"] == manifest["stamp"]


def test_the_sizes_the_module_states():
    doc = " ".join(onnx_export.__doc__.split())
    tiny = 2 * 1 * 4 * 64 * 64 * 4  # N·B·H_q·T·T_k floats of 4 bytes: all layers of the tiny model
    smollm2_all, smollm2_one = 30 * 9 * 256 * 256 * 4, 9 * 256 * 256 * 4
    assert (tiny, round(smollm2_all / 1e6), round(smollm2_one / 1e6, 1)) == (128 * 1024, 71, 2.4)
    assert "at 64 tokens are 128 KB" in doc and "would be 71 MB per call, one layer 2.4 MB" in doc
    assert onnx_export.default_attention_layers(2) == (0, 1)
    assert onnx_export.default_attention_layers(30) == (15,)  # SmolLM2: the middle layer


def test_the_playgrounds_example_is_tinyks_run(exported, model):
    """What the playground page shows without WebAssembly (and the browser test's reference):
    ONNX Runtime's run of the page's first prompt, equal to tinyk's, and tinyk's greedy answer."""
    out, _ = exported
    manifest = json.loads((out / "tiny.json").read_text(encoding="utf-8"))
    example = example_run(out / "tiny.onnx", manifest)
    ids = torch.tensor([encode(manifest, EXAMPLE_PROMPT)])
    assert example["ids"] == ids[0].tolist() == CharTokenizer().encode(EXAMPLE_PROMPT).tolist()
    with torch.no_grad():
        logits = model(ids).logits[0]
        attention = torch.stack(attention_by_hand(model, ids))[:, 0]  # N×H_q×T×T
        scores, norms = scores_and_norms_by_hand(model, ids)
        greedy = generate(model, ids, max_new_tokens=4, temperature=0)[0].tolist()
    assert np.abs(np.array(example["logits"]) - logits.numpy()).max() <= TOL
    assert np.abs(np.array(example["attention"]) - attention.numpy()).max() <= TOL
    assert np.abs(np.array(example["scores"]) - torch.stack(scores)[:, 0].numpy()).max() <= TOL
    assert np.abs(np.array(example["residual_norms"]) - torch.stack(norms)[:, 0].numpy()).max() <= TOL
    assert np.array(example["mask"]).shape == (1, ids.shape[1], ids.shape[1])
    assert example["generated"] == greedy and CharTokenizer().decode(greedy) == "7+3\n"
    T = ids.shape[1]
    omega = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    wrapped = np.angle(np.exp(1j * np.arange(T)[:, None] * omega))
    assert np.abs(np.angle(np.exp(1j * (np.array(example["rope_angles"]) - wrapped)))).max() <= 1e-5
    assert example["rope_positions"] == list(range(T)) and example["cache_length"] == T
    with pytest.raises(ValueError, match=r"text\[2\]='x' is not in the model's vocabulary"):
        encode(manifest, "3+x=")


def test_what_the_playground_page_states(exported, model):
    """Every number of book/playground.md, computed."""
    from tinyk import count_parameters
    from tinyk.training import COURSE_RUN
    from tinyk.web.playground import generate as page_generate

    out, session = exported
    manifest = json.loads((out / "tiny.json").read_text(encoding="utf-8"))
    page = " ".join((ROOT / "book" / "playground.md").read_text(encoding="utf-8").split())
    c = model.config
    sizes = (c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, count_parameters(model))
    assert sizes == (2, 32, 4, 2, 8, 19008)
    assert ("2 layers, a width of 32, 4 query heads sharing 2 key/value heads of 8 dimensions, and "
            "19,008 parameters") in page and "Its 13 tokens" in page and c.vocab_size == 13
    example = example_run(out / "tiny.onnx", manifest)
    tokens = [manifest["tokenizer"]["vocab"][i] for i in example["ids"]]
    last = np.array(example["attention"][0])[:, -1]  # layer 0, every head, the last query (=)
    assert tokens[-1] == "=" and (last.argmax(-1) == tokens.index("7")).all()
    assert last.max(-1).min() > 0.95 and "above 0.95 of the weight in each of the 4 heads" in page

    def correct(prefix: str) -> int:
        vocab = manifest["tokenizer"]["vocab"]
        def answer(a: int, b: int) -> str:
            ids = page_generate(session, manifest, encode(manifest, f"{prefix}{a}+{b}="), 4)
            return "".join(vocab[i] for i in ids)

        return sum(answer(a, b) == f"{b}+{a}\n" for a in range(10) for b in range(10))

    assert (correct(""), correct("1+2=2+1\n")) == (44, 100)  # the shipped weights' counts
    assert ("With the shipped weights the model completes 44 of the 100 prompts `a+b=` correctly this "
            "way, and all 100 after an example line") in page
    # Training windows start anywhere in a text of 8-symbol lines: 1 start in 8 is a line's first
    # symbol, and every window of 32 holds a complete line followed by the start of another.
    text = synthetic_text(n_lines=3000, seed=0)
    line_starts = {0} | {i + 1 for i, ch in enumerate(text) if ch == "\n"}
    starts = range(len(text) - COURSE_RUN["block_size"])  # random_batches' range of starts
    assert {len(line) for line in text.split("\n")[:-1]} == {7} and len(starts) == 23_968
    assert sum(s in line_starts for s in starts) * 8 == len(starts)  # exactly 1 in 8
    assert all(any(a in line_starts and a + 8 in line_starts for a in range(s, s + 32 - 8))
               for s in starts[:8])  # every offset into a line
    assert ("8-token lines, so only 1 window in 8 begins at the start of a line, while a line after a "
            "complete line comes in every window") in page
    assert "rarely" not in page
    assert "the page's logits agree with `tinyk`'s in PyTorch to within 0.0001" in page and TOL == 1e-4
    assert "once a model has loaded, it works offline" in page
    assert EXAMPLE_PROMPT == "1+2=2+1\n3+7=" and "an example line, then `3+7=`" in page
    assert (COURSE_RUN["block_size"], c.max_seq_len) == (32, 64)
    assert "trained on windows of 32 tokens" in page and "`max_seq_len`, 64 tokens" in page


def test_the_playgrounds_example_is_written_again_only_for_a_new_model(exported, tmp_path, monkeypatch):
    from tinyk.web import playground

    out, _ = exported
    copy = tmp_path / "models"
    shutil.copytree(out, copy)
    calls = []
    real = playground.example_run
    monkeypatch.setattr(playground, "example_run", lambda *a, **k: calls.append(a) or real(*a, **k))
    path = write_example(copy)
    write_example(copy)
    assert len(calls) == 1 and json.loads(path.read_text(encoding="utf-8"))["prompt"] == EXAMPLE_PROMPT
    manifest = json.loads((copy / "tiny.json").read_text(encoding="utf-8"))
    (copy / "tiny.json").write_text(json.dumps({**manifest, "stamp": "a newer model"}), encoding="utf-8")
    write_example(copy)
    assert len(calls) == 2 and json.loads(path.read_text(encoding="utf-8"))["stamp"] == "a newer model"


def test_an_edition_that_finds_the_models_lock_taken_exports_smollm2_meanwhile(tmp_path, monkeypatch):
    """The two editions build at once (make's site-build) and each export takes half a minute
    on one core: the edition that finds the 05.7 model's lock taken exports SmolLM2 while it
    waits, and one that finds it free exports the 05.7 model first and SmolLM2 after."""
    import fcntl
    import threading
    import types

    import tinyk_book
    import tinyk_playground

    from tinyk.web import onnx_web, playground

    build = tmp_path / "_build"
    config = types.SimpleNamespace(tinyk_course_model=True, tinyk_smollm2=True, html_static_path=[])
    app = types.SimpleNamespace(builder=types.SimpleNamespace(format="html"),
                                doctreedir=str(build / ".doctrees"), config=config)
    calls, exported = [], threading.Event()

    def smollm2(argv):
        calls.append(("smollm2", argv[argv.index("--out") + 1]))
        exported.set()
        return 0

    monkeypatch.setattr(onnx_web, "main", smollm2)
    monkeypatch.setattr(onnx_export, "export_course_model",
                        lambda out, reuse: calls.append(("05.7", str(out))))
    monkeypatch.setattr(playground, "write_example", lambda out: None)
    (build / "web-static").mkdir(parents=True)
    other = open(build / "web-static" / ".models.lock", "w")  # the other edition, exporting the 05.7 model
    fcntl.flock(other, fcntl.LOCK_EX)

    def the_other_edition():  # its export ends once SmolLM2's has (or after a minute, for a build that waits)
        exported.wait(timeout=60)
        other.close()

    threading.Thread(target=the_other_edition, daemon=True).start()
    tinyk_book._add_course_model(app)
    static = build / "web-static"
    assert calls == [("smollm2", str(static / "smollm2")), ("05.7", str(static / "models"))]
    assert app.config.html_static_path == [str(static)]
    calls.clear()
    tinyk_book._add_course_model(app)  # the lock free: the 05.7 model only, SmolLM2 from its own hook
    tinyk_playground.export_smollm2(app)
    assert calls == [("05.7", str(static / "models")), ("smollm2", str(static / "smollm2"))]
    app.config.tinyk_smollm2 = False
    calls.clear()
    tinyk_playground.export_smollm2(app)
    assert calls == []
