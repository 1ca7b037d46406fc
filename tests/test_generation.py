"""Generation, padding and the KV cache (sections 05.3, 05.4, 05.6)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from tests.helpers import varied_weights
from tinyk import (
    KVCache,
    ModelConfig,
    Transformer,
    expand_kv_heads,
    generate,
    kv_cache_bytes,
    last_valid_index,
)
from tinyk.interop.hf import to_hf

PROMPTS = [[5, 3, 8, 1, 9, 2, 7], [4, 4, 6], [11, 2, 3, 10, 5]]


@pytest.fixture(scope="session")
def model():
    """A small random model whose continuations depend on the whole prompt.

    See :func:`tests.helpers.varied_weights`.
    """
    torch.manual_seed(0)
    config = ModelConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=40, max_seq_len=96)
    return varied_weights(Transformer(config))


def left_pad(prompts, pad=0):
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def test_last_valid_index_handles_left_and_right_padding():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    assert last_valid_index(mask).tolist() == [3, 1, 3, 0]


@pytest.mark.parametrize("use_cache", [True, False])
def test_left_padded_batch_equals_each_prompt_alone(model, use_cache):
    ids, mask = left_pad(PROMPTS)
    batch = generate(model, ids, mask, max_new_tokens=12, temperature=0, use_cache=use_cache)
    alone = [generate(model, torch.tensor([p]), max_new_tokens=12, temperature=0,
                      use_cache=use_cache)[0].tolist() for p in PROMPTS]
    assert batch.tolist() == alone
    assert len({tuple(a) for a in alone}) == 3  # the prompts really lead to different text


def test_cached_and_uncached_generation_agree(model):
    ids, mask = left_pad(PROMPTS)
    cached = generate(model, ids, mask, max_new_tokens=30, temperature=0, use_cache=True)
    plain = generate(model, ids, mask, max_new_tokens=30, temperature=0, use_cache=False)
    assert torch.equal(cached, plain)


def test_cached_logits_match_recomputation_at_every_step(model):
    ids, mask = left_pad(PROMPTS)
    seq = torch.cat([ids, generate(model, ids, mask, max_new_tokens=20, temperature=0)], 1)
    full_mask = torch.cat([mask, torch.ones(3, 20, dtype=torch.long)], 1)
    full = model(seq, full_mask).logits  # one pass over everything
    cache = KVCache(model.config, batch_size=3, max_len=seq.shape[1])
    prompt_len = ids.shape[1]
    with torch.no_grad():
        steps = [model(seq[:, :prompt_len], full_mask[:, :prompt_len], cache=cache).logits]
        for t in range(prompt_len, seq.shape[1]):
            steps.append(model(seq[:, t : t + 1], full_mask[:, : t + 1], cache=cache).logits)
    stepwise = torch.cat(steps, 1)
    real = full_mask.bool()
    assert (stepwise - full)[real].abs().max() < 1e-5
    assert cache.length == seq.shape[1]


def test_cache_positions_continue_after_a_chunk(model):
    seq = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    cache = KVCache(model.config, batch_size=1, max_len=8)
    with torch.no_grad():
        first = model(seq[:, :5], cache=cache).logits
        second = model(seq[:, 5:], cache=cache).logits  # a chunk of 3 at positions 5..7
    full = model(seq).logits
    assert (torch.cat([first, second], 1) - full).abs().max() < 1e-5
    cache.reset()
    assert cache.length == 0


def test_cache_holds_unexpanded_kv_and_its_bytes_match_the_formula(model):
    cfg = model.config
    ids, mask = left_pad(PROMPTS)
    cache = KVCache(cfg, batch_size=3, max_len=20)
    with torch.no_grad():
        model(ids, mask, cache=cache)
    assert cache.keys[0].shape == (3, 20, cfg.n_kv_heads, cfg.head_dim)  # B×T×H_kv×d_h
    expected = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 20 * 3 * 4
    assert cache.nbytes == expected == kv_cache_bytes(cfg, 20, 3)
    mha = kv_cache_bytes(cfg, 20, 3, expanded=True)
    assert mha / cache.nbytes == cfg.n_heads / cfg.n_kv_heads == 2


def test_expanding_before_caching_loses_the_saving(model):
    wide = expand_kv_heads(model).eval()
    ids, mask = left_pad(PROMPTS)
    assert (wide(ids, mask).logits - model(ids, mask).logits).abs().max() < 1e-5  # same function
    gqa_cache = KVCache(model.config, 3, 16)
    mha_cache = KVCache(wide.config, 3, 16)
    assert mha_cache.nbytes == model.config.n_rep * gqa_cache.nbytes


def test_expanding_keeps_the_models_device_and_dtype(model):
    """A model on another device comes back on it, in its dtype (05.4): ``meta`` stands in for
    a GPU, which a CPU-built copy of the expanded model could not be fed from."""
    moved = Transformer(model.config).to(device="meta", dtype=torch.bfloat16)
    wide = expand_kv_heads(moved)
    assert {(p.device.type, p.dtype) for p in wide.parameters()} == {("meta", torch.bfloat16)}
    assert {b.device.type for b in wide.buffers()} == {"meta"}
    assert wide.layers[0].attention.wk.weight.shape == (model.config.dim, model.config.dim)  # H_q·d_h×d


def test_eos_is_returned_and_finished_rows_are_padded(model):
    ids, mask = left_pad(PROMPTS)
    free = generate(model, ids, mask, max_new_tokens=10, temperature=0).tolist()
    eos = free[1][2]  # a token row 1 emits: make it the end of sequence
    assert eos not in free[0] and eos in free[2]  # row 0 never emits it; rows 1 and 2 do
    out = generate(model, ids, mask, max_new_tokens=10, temperature=0, eos_token_id=eos,
                   pad_token_id=39).tolist()
    assert out[0] == free[0]  # a row that never emits EOS runs to max_new_tokens
    for row in (1, 2):  # EOS included (row 1 may emit it before step 3), then padding
        stop = free[row].index(eos)
        assert out[row] == free[row][: stop + 1] + [39] * (9 - stop)
    # rows 1 and 2 alone: generation stops once both have finished
    both = generate(model, ids[1:], mask[1:], max_new_tokens=10, temperature=0, eos_token_id=eos,
                    pad_token_id=39)
    width = max(free[1].index(eos), free[2].index(eos)) + 1
    assert width < 10 and both.tolist() == [row[:width] for row in out[1:]]


def test_generation_stops_when_every_row_is_finished(model):
    ids = torch.tensor([[5, 3, 8]])
    first = int(generate(model, ids, max_new_tokens=1, temperature=0)[0, 0])
    out = generate(model, ids, max_new_tokens=50, temperature=0, eos_token_id=first)
    assert out.tolist() == [[first]]


def test_running_past_max_seq_len_with_a_cache_is_a_clear_error(model):
    ids = torch.zeros(1, 90, dtype=torch.long)
    with pytest.raises(ValueError, match="max_seq_len=96"):
        generate(model, ids, max_new_tokens=10, use_cache=True)
    out = generate(model, ids, max_new_tokens=10, temperature=0, use_cache=False)  # crops instead
    assert out.shape == (1, 10)


def test_sampling_is_reproducible_and_top_k_1_is_greedy(model):
    ids, mask = left_pad(PROMPTS)
    a = generate(model, ids, mask, max_new_tokens=15, generator=torch.Generator().manual_seed(7))
    b = generate(model, ids, mask, max_new_tokens=15, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    greedy = generate(model, ids, mask, max_new_tokens=15, temperature=0)
    top1 = generate(model, ids, mask, max_new_tokens=15, top_k=1,
                    generator=torch.Generator().manual_seed(1))
    assert torch.equal(greedy, top1)


def test_bad_arguments_are_refused(model):
    ids = torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match="temperature"):
        generate(model, ids, max_new_tokens=2, temperature=-1)
    with pytest.raises(ValueError, match="top_k"):
        generate(model, ids, max_new_tokens=2, top_k=0)


@pytest.mark.parametrize("use_cache", [True, False])
def test_ids_are_checked_once_per_generate_not_per_step(model, monkeypatch, use_cache):
    calls = []
    aminmax = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda x: calls.append(x.shape) or aminmax(x))
    ids, mask = left_pad(PROMPTS)
    out = generate(model, ids, mask, max_new_tokens=10, temperature=0, use_cache=use_cache)
    assert out.shape == (3, 10) and calls == [ids.shape]  # the prompt, once
    model(ids, mask)
    assert len(calls) == 2  # a plain forward call still checks


def test_bad_ids_are_refused_by_generate_with_the_forward_error(model):
    with pytest.raises(ValueError, match=r"input_ids holds ids in \[1, 40\]; the vocabulary is 0\.\.39"):
        generate(model, torch.tensor([[1, 40]]), max_new_tokens=3)
    with pytest.raises(ValueError, match=r"input_ids holds ids in \[1, 40\]"):
        model(torch.tensor([[1, 40]]))
    with pytest.raises(ValueError, match=r"pad_token_id=40: .* 0\.\.39"):
        generate(model, torch.tensor([[1, 2]]), max_new_tokens=3, pad_token_id=40)


def test_fully_padded_row_gives_tokens_not_nan(model):
    ids = torch.tensor([[0, 0, 0], [3, 4, 5]])
    mask = torch.tensor([[0, 0, 0], [1, 1, 1]])
    for flash in (True, False):
        m = Transformer(dataclasses.replace(model.config, flash_attn=flash)).eval()
        m.load_state_dict(model.state_dict())
        assert torch.isfinite(m(ids, mask).logits).all()
        assert generate(m, ids, mask, max_new_tokens=3, temperature=0).shape == (2, 3)


def test_greedy_generation_equals_hugging_face_generate(model):
    hf = to_hf(model)
    ids, mask = left_pad(PROMPTS)
    ours = generate(model, ids, mask, max_new_tokens=15, temperature=0)
    theirs = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=15, do_sample=False,
                         pad_token_id=0, eos_token_id=None)
    assert torch.equal(ours, theirs[:, ids.shape[1]:])


def test_right_padded_batch_also_equals_each_prompt_alone(model):
    width = max(map(len, PROMPTS))
    ids = torch.tensor([p + [0] * (width - len(p)) for p in PROMPTS])
    mask = torch.tensor([[1] * len(p) + [0] * (width - len(p)) for p in PROMPTS])
    batch = generate(model, ids, mask, max_new_tokens=8, temperature=0)
    alone = [generate(model, torch.tensor([p]), max_new_tokens=8, temperature=0)[0].tolist()
             for p in PROMPTS]
    assert batch.tolist() == alone


def _recorded_cases() -> dict[str, torch.Tensor]:
    """Seeded calls covering every path of ``generate``: cached and recomputed, greedy,
    sampled, top-k, EOS, left and right padding, a float mask, an empty row, cropping, and
    the hand-written attention. Their tokens are stored in ``generate_tokens.json``."""
    torch.manual_seed(0)
    config = ModelConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=40, max_seq_len=96)
    m = varied_weights(Transformer(config))
    by_hand = Transformer(dataclasses.replace(config, flash_attn=False)).eval()
    by_hand.load_state_dict(m.state_dict())
    torch.manual_seed(1)
    tiny = Transformer(ModelConfig.tiny()).eval()
    ids, mask = left_pad(PROMPTS)
    width = max(map(len, PROMPTS))
    right_ids = torch.tensor([p + [0] * (width - len(p)) for p in PROMPTS])
    right_mask = torch.tensor([[1] * len(p) + [0] * (width - len(p)) for p in PROMPTS])
    float_mask = torch.zeros(mask.shape).masked_fill(mask == 0, float("-inf"))

    def seed(s):
        return torch.Generator().manual_seed(s)

    out = {}
    for use_cache, kind in ((True, "cached"), (False, "uncached")):
        def run(model, *args, **kwargs):
            return generate(model, *args, **kwargs, use_cache=use_cache)  # noqa: B023

        out[f"greedy_left_{kind}"] = run(m, ids, mask, max_new_tokens=30, temperature=0)
        out[f"sample_left_{kind}"] = run(m, ids, mask, max_new_tokens=15, generator=seed(7))
        out[f"topk_left_{kind}"] = run(m, ids, mask, max_new_tokens=15, temperature=0.8, top_k=5,
                                       generator=seed(3))
        out[f"eos_left_{kind}"] = run(m, ids, mask, max_new_tokens=10, temperature=0, eos_token_id=25,
                                      pad_token_id=39)
        out[f"sample_eos_{kind}"] = run(m, ids, mask, max_new_tokens=20, eos_token_id=7, generator=seed(11))
        out[f"by_hand_{kind}"] = run(by_hand, ids, mask, max_new_tokens=12, generator=seed(5))
        out[f"nomask_{kind}"] = run(m, torch.tensor([[1, 2, 3], [3, 2, 1]]), max_new_tokens=10,
                                    generator=seed(9))
        out[f"tiny_{kind}"] = run(tiny, torch.tensor([[1, 2, 3, 4]]), max_new_tokens=20, generator=seed(2))
        out[f"right_{kind}"] = run(m, right_ids, right_mask, max_new_tokens=8, temperature=0)
        out[f"float_mask_{kind}"] = run(m, ids, float_mask, max_new_tokens=8, generator=seed(4))
        out[f"empty_row_{kind}"] = run(m, torch.tensor([[0, 0, 0], [3, 4, 5]]),
                                       torch.tensor([[0, 0, 0], [1, 1, 1]]), max_new_tokens=5,
                                       temperature=0)
    long = torch.randint(0, 40, (2, 90), generator=seed(0))  # 90 + 12 > max_seq_len: cropped
    long_mask = torch.ones_like(long)
    long_mask[1, :30] = 0
    out["crop_greedy_uncached"] = generate(m, long, max_new_tokens=12, temperature=0, use_cache=False)
    out["crop_sample_uncached"] = generate(m, long, long_mask, max_new_tokens=12, generator=seed(8),
                                           use_cache=False)
    return out


def test_generate_gives_the_recorded_tokens():
    recorded = json.loads((Path(__file__).parent / "generate_tokens.json").read_text())
    got = {name: tokens.tolist() for name, tokens in _recorded_cases().items()}
    assert got.keys() == recorded.keys() and len(recorded) > 0
    for name in recorded:
        assert got[name] == recorded[name], name
    assert got["eos_left_cached"][0][7:] == [39, 39, 39]  # the cases reach the EOS branch
    assert got["sample_left_cached"] != got["greedy_left_cached"]  # and really sample
