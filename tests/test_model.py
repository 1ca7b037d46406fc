"""The decoder of sections 05.1-05.6 against PyTorch's and Hugging Face's own code."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from tinyk import (
    Attention,
    DecoderLayer,
    ModelConfig,
    RMSNorm,
    Transformer,
    adjacent_to_half_order,
    apply_rotary_emb,
    apply_rotary_emb_half,
    count_parameters,
    count_parameters_naive,
    parameter_budget,
    permute_adjacent_to_half,
    permute_half_to_adjacent,
    precompute_freqs_cis,
    repeat_kv,
    reshape_for_broadcast,
    swiglu_hidden_dim,
)
from tinyk.model import padding_to_attention

# ---------------------------------------------------------------- 05.1 config and counts


def test_upstream_default_has_82_594_560_unique_parameters():
    model = Transformer(ModelConfig.upstream_default())
    assert count_parameters(model) == 82_594_560
    assert model.config.mlp_hidden_dim == 2048
    assert model.config.head_dim == 48 and model.config.n_rep == 2
    assert ModelConfig.model_type == "Tiny-K"


def test_tiny_experiment_has_19_008_unique_parameters():
    model = Transformer(ModelConfig.tiny(vocab_size=13))
    assert count_parameters(model) == 19_008
    # the naive count sees the tied V×d matrix under two names
    assert count_parameters_naive(model) == 19_008 + 13 * 32


@pytest.mark.parametrize("kwargs", [
    {}, {"dim": 96, "n_heads": 6, "n_kv_heads": 3, "n_layers": 3, "vocab_size": 101},
    {"dim": 64, "n_heads": 4, "n_kv_heads": 1, "hidden_dim": 100, "vocab_size": 7},
])
def test_parameter_budget_formula_matches_the_built_model(kwargs):
    config = ModelConfig(**kwargs)
    model = Transformer(config)
    budget = parameter_budget(config)
    assert budget["total"] == count_parameters(model)
    assert budget["naive"] == count_parameters_naive(model)


def test_swiglu_with_multiple_of_1_is_on_budget_exactly_when_3_divides_d():
    """05.5: on budget for d = 288, 576, 768; under it by less than one unit for 32, 1024, 4096."""
    for dim in (288, 576, 768):
        assert 3 * dim * swiglu_hidden_dim(dim, 1) == 8 * dim * dim
    for dim in (32, 1024, 4096):
        assert 0 < 8 * dim / 3 - swiglu_hidden_dim(dim, 1) < 1


@pytest.mark.parametrize("dim,multiple_of,expected", [(768, 64, 2048), (32, 64, 128),
                                                      (576, 256, 1536), (100, 1, 266)])
def test_swiglu_width_is_8d_over_3_rounded_up(dim, multiple_of, expected):
    assert swiglu_hidden_dim(dim, multiple_of) == expected
    assert swiglu_hidden_dim(dim, multiple_of, hidden_dim=64) == 64


@pytest.mark.parametrize("kwargs,field,rule", [
    ({"dim": 30, "n_heads": 4}, "dim=30", "divisible by n_heads=4"),
    ({"dim": 36, "n_heads": 4, "n_kv_heads": 4}, "head_dim=9", "must be even"),
    ({"n_heads": 6, "n_kv_heads": 4, "dim": 48}, "n_kv_heads=4", "n_heads % n_kv_heads"),
    ({"dim": 0}, "dim=0", "positive"),
    ({"n_layers": -1}, "n_layers=-1", "positive"),
    ({"vocab_size": 0, "pad_token_id": 0}, "vocab_size=0", "positive"),
    ({"hidden_dim": 0}, "hidden_dim=0", "positive"),
    ({"max_seq_len": 0}, "max_seq_len=0", "positive"),
    ({"dropout": 1.0}, "dropout=1.0", "0 <= dropout < 1"),
    ({"dropout": -0.1}, "dropout=-0.1", "0 <= dropout < 1"),
    ({"pad_token_id": 6144}, "pad_token_id=6144", "inside the vocabulary"),
    ({"norm_eps": 0.0}, "norm_eps=0.0", "> 0"),
])
def test_each_config_rule_names_field_value_and_rule(kwargs, field, rule):
    with pytest.raises(ValueError) as err:
        ModelConfig(**kwargs)
    assert field in str(err.value) and rule in str(err.value)


def test_config_rejects_non_integer_sizes():
    with pytest.raises(TypeError, match="n_heads"):
        ModelConfig(n_heads=4.0)


def test_config_is_frozen_and_says_to_use_replace():
    config = ModelConfig.tiny()
    with pytest.raises(dataclasses.FrozenInstanceError,
                       match=r"ModelConfig\.dim.*dim=64.*dataclasses\.replace\(config, dim=64\)"):
        config.dim = 64  # would leave head_dim at 8, derived from dim=32
    with pytest.raises(dataclasses.FrozenInstanceError, match="head_dim"):
        config.head_dim = 16
    assert (config.dim, config.head_dim) == (32, 8)
    wider = dataclasses.replace(config, dim=64)
    assert (wider.dim, wider.head_dim, wider.mlp_hidden_dim) == (64, 16, 64)
    assert ModelConfig(n_heads=16, n_kv_heads=None).n_kv_heads == 16  # set once, at construction
    with pytest.raises(ValueError, match="n_kv_heads=3"):
        dataclasses.replace(config, n_kv_heads=3)  # replace validates again


def test_source_exercises_config_answers():
    assert ModelConfig(dim=30, n_heads=5, n_kv_heads=5).head_dim == 6  # even: RoPE works
    with pytest.raises(ValueError, match="n_kv_heads=4"):
        ModelConfig(dim=48, n_heads=6, n_kv_heads=4)


# ---------------------------------------------------------------- 05.2 RMSNorm


def test_rmsnorm_worked_example_3_4():
    norm = RMSNorm(2, eps=0.0)
    y = norm(torch.tensor([3.0, 4.0], dtype=torch.float64))
    r = math.sqrt(12.5)
    assert torch.allclose(y, torch.tensor([3 / r, 4 / r], dtype=torch.float64))
    assert (y > 0).all()  # no mean subtraction: both stay positive
    ln = F.layer_norm(torch.tensor([3.0, 4.0]), (2,))
    assert abs(float(ln.mean())) < 1e-6  # LayerNorm moves the mean to zero


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rmsnorm_equals_torch_rmsnorm(dtype):
    torch.manual_seed(0)
    x = torch.randn(4, 7, 16, dtype=dtype) * 3
    ours = RMSNorm(16, eps=1e-5).to(dtype)
    ref = torch.nn.RMSNorm(16, eps=1e-5).to(dtype)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ref.weight.copy_(ours.weight)
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    assert torch.allclose(ours(x), ref(x), atol=tol, rtol=tol)


def test_rmsnorm_jacobian_formula_equals_autograd_float64():
    torch.manual_seed(1)
    d, eps = 6, 1e-5
    norm = RMSNorm(d, eps=eps).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2.0)
    x = torch.randn(d, dtype=torch.float64)
    gamma = norm.weight.detach()
    r = torch.sqrt(x.pow(2).mean() + eps)
    formula = gamma[:, None] * (torch.eye(d, dtype=torch.float64) / r - torch.outer(x, x) / (d * r**3))
    autograd = torch.autograd.functional.jacobian(norm, x)
    assert torch.allclose(formula, autograd, atol=1e-13, rtol=0)


def test_rmsnorm_gradcheck_float64_and_dtype_kept():
    norm = RMSNorm(5).double()
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(norm, (x,))
    assert norm(x).dtype == torch.float64  # never silently downcast


def test_rmsnorm_epsilon_makes_scale_invariance_approximate():
    norm = RMSNorm(4, eps=1e-5).double()
    x = torch.tensor([1e-3, -2e-3, 3e-3, 1e-3], dtype=torch.float64)
    exact = RMSNorm(4, eps=0.0).double()
    assert torch.allclose(exact(x), exact(1000 * x), atol=1e-12)  # eps=0: exact invariance
    gap = (norm(x) - norm(1000 * x)).abs().max()
    assert gap > 1e-2  # a tiny vector is pulled down by eps: invariance is only approximate


def test_rmsnorm_half_precision_upcasts_and_does_not_overflow():
    x = torch.full((1, 8), 300.0, dtype=torch.float16)
    norm = RMSNorm(8).half()
    y = norm(x)
    assert y.dtype == torch.float16 and torch.isfinite(y).all()
    assert torch.allclose(y.float(), torch.ones(1, 8), atol=1e-3)
    naive = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)  # all in fp16
    assert not torch.isfinite(x.pow(2)).all() and (naive == 0).all()  # 300² overflows fp16
    assert norm.bfloat16()(x.bfloat16()).dtype == torch.bfloat16


# ---------------------------------------------------------------- 05.3 RoPE


def _rope_inputs(B=2, T=9, Hq=4, Hkv=2, d_h=8, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, Hq, d_h, dtype=dtype, generator=g)
    k = torch.randn(B, T, Hkv, d_h, dtype=dtype, generator=g)
    return q, k


def test_rope_tables_shape_and_values():
    cos, sin = precompute_freqs_cis(8, 5, dtype=torch.float64)
    assert cos.shape == sin.shape == (5, 4)
    omega = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    assert torch.allclose(cos[3], torch.cos(3 * omega)) and torch.allclose(sin[3], torch.sin(3 * omega))
    x = torch.zeros(2, 5, 3, 4)
    assert reshape_for_broadcast(cos, x).shape == (1, 5, 1, 4)


def test_rope_table_from_model_width_does_not_fit_a_head():
    q, k = _rope_inputs(d_h=8)
    cos, sin = precompute_freqs_cis(32, 9)  # d = 32 passed instead of d_h = 8
    with pytest.raises(ValueError, match="does not fit"):
        apply_rotary_emb(q, k, cos, sin)


def test_rope_keeps_norms_and_matches_complex_multiplication():
    q, k = _rope_inputs()
    cos, sin = precompute_freqs_cis(8, 9, dtype=torch.float64)
    rq, _ = apply_rotary_emb(q, k, cos, sin)
    assert torch.allclose(rq.norm(dim=-1), q.norm(dim=-1), atol=1e-12)
    # independent reference: the same rotation as complex multiplication (Meta's form)
    zq = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2).contiguous())
    rot = torch.polar(torch.ones_like(cos), torch.atan2(sin, cos))[None, :, None, :]
    assert torch.allclose(torch.view_as_real(zq * rot).flatten(3), rq, atol=1e-12)


def test_rope_common_shift_leaves_dot_products_unchanged():
    q, k = _rope_inputs(B=1, T=6)
    cos, sin = precompute_freqs_cis(8, 200, dtype=torch.float64)

    def scores(shift):
        rq, rk = apply_rotary_emb(q, k, cos[shift : shift + 6], sin[shift : shift + 6])
        return torch.einsum("bthd,bshd->bhts", rq[:, :, :2], rk)

    for shift in (1, 37, 150):
        assert (scores(shift) - scores(0)).abs().max() < 1e-12, shift


def test_rope_gradcheck_float64():
    q, k = _rope_inputs(B=1, T=3, Hq=2, Hkv=1, d_h=4)
    cos, sin = precompute_freqs_cis(4, 3, dtype=torch.float64)
    q.requires_grad_(True)
    k.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: apply_rotary_emb(a, b, cos, sin), (q, k))


def test_half_split_equals_adjacent_after_permutation_and_matches_hugging_face():
    q, k = _rope_inputs(d_h=8)
    cos, sin = precompute_freqs_cis(8, 9, dtype=torch.float64)
    order = adjacent_to_half_order(8)
    assert order.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    adj_q, _ = apply_rotary_emb(q, k, cos, sin)
    half_q, half_k = apply_rotary_emb_half(q[..., order], k[..., order], cos, sin)
    assert torch.allclose(half_q, adj_q[..., order], atol=1e-12)
    # Hugging Face's own apply_rotary_pos_emb on B×H×T×d_h with duplicated tables
    hf_cos, hf_sin = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]
    hf_q, hf_k = apply_rotary_pos_emb(q[..., order].transpose(1, 2), k[..., order].transpose(1, 2),
                                      hf_cos, hf_sin)
    assert torch.allclose(hf_q.transpose(1, 2), half_q, atol=1e-12)
    assert torch.allclose(hf_k.transpose(1, 2), half_k, atol=1e-12)
    # without the permutation the conventions disagree
    wrong_q, _ = apply_rotary_emb_half(q, k, cos, sin)
    assert (wrong_q - adj_q).abs().max() > 0.1


def test_weight_permutation_round_trips_and_matches_vector_permutation():
    n_heads, d_h, d = 3, 8, 5
    w = torch.randn(n_heads * d_h, d)
    half = permute_adjacent_to_half(w, n_heads)
    assert torch.equal(permute_half_to_adjacent(half, n_heads), w)
    order = adjacent_to_half_order(d_h)
    x = torch.randn(d)
    assert torch.allclose((half @ x).view(n_heads, d_h), (w @ x).view(n_heads, d_h)[:, order])


# ---------------------------------------------------------------- 05.4 GQA and attention


def test_repeat_kv_order_is_0_0_1_1():
    heads = torch.arange(2).view(1, 1, 2, 1).float()  # K/V head i holds the value i
    assert repeat_kv(heads, 2).flatten().tolist() == [0, 0, 1, 1]


def test_repeat_kv_equals_repeat_interleave_and_sdpa_enable_gqa():
    torch.manual_seed(0)
    B, T, Hq, Hkv, d_h = 2, 7, 6, 2, 8
    q = torch.randn(B, T, Hq, d_h)
    k, v = torch.randn(B, T, Hkv, d_h), torch.randn(B, T, Hkv, d_h)
    assert torch.equal(repeat_kv(k, 3), torch.repeat_interleave(k, 3, dim=2))
    ours = F.scaled_dot_product_attention(q.transpose(1, 2), repeat_kv(k, 3).transpose(1, 2),
                                          repeat_kv(v, 3).transpose(1, 2), is_causal=True)
    gqa = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True, enable_gqa=True)
    assert torch.allclose(ours, gqa, atol=1e-6)
    tiled = k.repeat(1, 1, 3, 1)  # order 0 1 0 1 0 1
    wrong = F.scaled_dot_product_attention(q.transpose(1, 2), tiled.transpose(1, 2),
                                           v.repeat(1, 1, 3, 1).transpose(1, 2), is_causal=True)
    assert (wrong - gqa).abs().max() > 0.1


def _two_paths(config):
    torch.manual_seed(0)
    fast = Transformer(dataclasses.replace(config, flash_attn=True)).eval()
    slow = Transformer(dataclasses.replace(config, flash_attn=False)).eval()
    slow.load_state_dict(fast.state_dict())
    return fast, slow


@pytest.mark.parametrize("padded", [False, True])
def test_attention_paths_agree_with_and_without_padding(padded):
    fast, slow = _two_paths(ModelConfig.tiny(vocab_size=20))
    ids = torch.randint(0, 20, (3, 12), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(3, 12, dtype=torch.long)
    if padded:
        mask[0, :5] = 0  # left padding
        mask[1, 9:] = 0  # right padding
    a, b = fast(ids, mask).logits, slow(ids, mask).logits
    assert torch.isfinite(a).all() and torch.isfinite(b).all()
    assert (a - b).abs().max() < 1e-6


class _ListCache:
    """The smallest KVCacheProtocol: keys and values kept in lists, one entry per layer."""

    def __init__(self, k, v):
        self.k, self.v, self.length = [k], [v], k.shape[1]

    def update(self, layer_id, k, v):
        self.k[layer_id] = torch.cat([self.k[layer_id], k], dim=1)
        self.v[layer_id] = torch.cat([self.v[layer_id], v], dim=1)
        return self.k[layer_id], self.v[layer_id]

    def advance(self, n_tokens):
        self.length += n_tokens


@pytest.mark.parametrize("flash", [True, False])
@pytest.mark.parametrize("with_mask", [False, True])
def test_attention_called_directly_after_a_cache_equals_a_full_pass(flash, with_mask):
    """Both paths, cache lengths 0-3, T = 1-3: the T new queries are the last T keys."""
    config = dataclasses.replace(ModelConfig.tiny(), flash_attn=flash)
    torch.manual_seed(0)
    attn = Attention(config).eval()
    cos, sin = precompute_freqs_cis(config.head_dim, 6)
    x = torch.randn(2, 6, config.dim)
    with torch.no_grad():
        for n_cached in range(4):
            for T in range(1, 4):
                T_k = n_cached + T
                full = attn(x[:, :T_k], cos[:T_k], sin[:T_k])  # B×T_k×d, no cache
                cache = None
                if n_cached:
                    _, k, v = _projected_kv(attn, x[:, :n_cached], cos[:n_cached], sin[:n_cached])
                    cache = _ListCache(k, v)
                mask = None
                if with_mask:
                    mask = padding_to_attention(torch.ones(2, T_k, dtype=torch.bool), T)
                out = attn(x[:, n_cached:T_k], cos[n_cached:T_k], sin[n_cached:T_k], mask, cache)
                err = (out - full[:, n_cached:]).abs().max().item()
                assert err < 1e-6, (flash, with_mask, n_cached, T, err)


def _projected_kv(attn, x, cos, sin):
    B, T, _ = x.shape
    q = attn.wq(x).view(B, T, attn.n_heads, attn.head_dim)
    k = attn.wk(x).view(B, T, attn.n_kv_heads, attn.head_dim)
    v = attn.wv(x).view(B, T, attn.n_kv_heads, attn.head_dim)
    q, k = apply_rotary_emb(q, k, cos, sin)
    return q, k, v


@pytest.mark.parametrize("flash", [True, False])
def test_fully_masked_query_row_gives_zeros_and_finite_gradients(flash):
    config = dataclasses.replace(ModelConfig.tiny(), flash_attn=flash)
    attn = Attention(config)
    x = torch.randn(2, 5, config.dim, requires_grad=True)
    cos, sin = precompute_freqs_cis(config.head_dim, 5)
    valid = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    mask = padding_to_attention(valid, 5)
    assert not mask[0, 0, 0].any()  # query 0 of row 0 sees no key at all
    heads_out = {}

    def keep_heads(module, inputs, output):
        heads_out["x"] = inputs[0]  # B×T×H_q·d_h, before the output projection

    attn.wo.register_forward_hook(keep_heads)
    out = attn(x, cos, sin, mask)
    assert torch.isfinite(out).all()
    assert torch.equal(heads_out["x"][0, :2], torch.zeros_like(heads_out["x"][0, :2]))
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_flash_switch_really_switches(monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    ids = torch.zeros(1, 4, dtype=torch.long)
    Transformer(dataclasses.replace(ModelConfig.tiny(), flash_attn=False))(ids)
    assert calls == []
    Transformer(dataclasses.replace(ModelConfig.tiny(), flash_attn=True))(ids)
    assert len(calls) == 2  # one per layer


def test_masks_bool_long_and_additive_float_agree_and_ambiguous_is_refused():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny()).eval()
    ids = torch.randint(0, 13, (2, 6))
    flags = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    additive = torch.zeros(2, 6).masked_fill(flags == 0, float("-inf"))
    by_long = model(ids, flags).logits
    assert torch.equal(by_long, model(ids, flags.bool()).logits)
    assert torch.equal(by_long, model(ids, additive).logits)
    with pytest.raises(ValueError, match="additive"):
        model(ids, flags.float())  # 1.0 flags in a float dtype: ambiguous, refused
    with pytest.raises(ValueError, match="only 0"):
        model(ids, flags * 2)


def test_left_padding_gives_the_positions_of_the_prompt_alone():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny()).eval()
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    alone = model(prompt).logits
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), prompt], 1)
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 1]])
    assert (model(padded, mask).logits[:, 3:] - alone).abs().max() < 1e-6


# ---------------------------------------------------------------- 05.5/05.6 layer, head, protocol


def test_decoder_layer_keeps_both_residuals():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny()).eval()
    layer = model.layers[0]
    x = torch.randn(1, 4, 32)
    cos, sin = model.freqs_cos[:4], model.freqs_sin[:4]
    h = x + layer.attention(layer.attention_norm(x), cos, sin)
    expected = h + layer.feed_forward(layer.ffn_norm(h))
    assert torch.allclose(layer(x, cos, sin), expected, atol=1e-7)


def test_mlp_is_swiglu():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny())
    mlp = model.layers[0].feed_forward
    x = torch.randn(2, 3, 32)
    ref = (F.silu(x @ mlp.w1.weight.T) * (x @ mlp.w3.weight.T)) @ mlp.w2.weight.T
    assert torch.allclose(mlp(x), ref, atol=1e-6)


def test_head_is_tied_and_rope_tables_are_not_in_state_dict():
    model = Transformer(ModelConfig.tiny())
    assert model.output.weight is model.tok_embeddings.weight
    assert not any("freqs" in key for key in model.state_dict())
    moved = model.to(torch.float64)
    assert moved.freqs_cos.dtype == torch.float64
    fresh = Transformer(ModelConfig.tiny())
    fresh.load_state_dict(model.float().state_dict())
    assert torch.equal(fresh.freqs_cos, precompute_freqs_cis(8, 64)[0])


def test_init_scales_residual_projections_w2_and_wo():
    torch.manual_seed(0)
    config = ModelConfig(dim=256, n_layers=8, n_heads=4, n_kv_heads=4, vocab_size=64)
    model = Transformer(config)
    target = 0.02 / math.sqrt(16)
    layer = model.layers[3]
    assert abs(float(layer.feed_forward.w2.weight.detach().std()) - target) < 0.1 * target
    assert abs(float(layer.attention.wo.weight.detach().std()) - target) < 0.1 * target
    assert abs(float(layer.feed_forward.w3.weight.detach().std()) - 0.02) < 0.002
    # 05.6: standard deviation 0.02 (not variance 0.02, whose std would be 0.141), mean 0
    for w in (model.tok_embeddings.weight, layer.attention.wq.weight, layer.feed_forward.w1.weight):
        assert abs(float(w.detach().std()) - 0.02) < 0.002 and abs(float(w.detach().mean())) < 0.002
    norms = [m.weight for m in model.modules() if isinstance(m, RMSNorm)]
    assert len(norms) == 2 * config.n_layers + 1 and all(torch.equal(g, torch.ones_like(g)) for g in norms)


def test_loss_is_hugging_face_style_and_never_nan():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.tiny())
    ids = torch.randint(0, 13, (2, 8))
    out = model(input_ids=ids, labels=ids)
    ref = F.cross_entropy(out.logits[:, :-1].reshape(-1, 13), ids[:, 1:].reshape(-1))
    assert out.loss.ndim == 0 and torch.allclose(out.loss, ref)
    nothing = model(input_ids=ids, labels=torch.full_like(ids, -100))
    assert nothing.loss.item() == 0.0
    nothing.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_each_call_returns_a_fresh_output():
    model = Transformer(ModelConfig.tiny())
    first = model(torch.zeros(1, 3, dtype=torch.long))
    second = model(torch.ones(1, 3, dtype=torch.long))
    assert first is not second and not torch.equal(first.logits, second.logits)
    assert first["logits"] is first.logits


def test_forward_rejects_bad_input_clearly():
    model = Transformer(ModelConfig.tiny(max_seq_len=8))
    with pytest.raises(ValueError, match="max_seq_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"vocabulary is 0\.\.12"):
        model(torch.tensor([[1, 13]]))
    with pytest.raises(ValueError, match="B×T"):
        model(torch.zeros(4, dtype=torch.long))


def test_left_padded_tokens_get_the_rope_angles_of_the_prompt_alone():
    model = Transformer(ModelConfig.tiny()).eval()
    seen = {}

    def keep_cos(module, args):
        seen["cos"] = args[1]  # B×T×d_h/2 rows of the table, one per token

    model.layers[0].attention.register_forward_pre_hook(keep_cos)
    padded = torch.tensor([[0, 0, 0, 3, 1, 4, 1, 5]])
    model(padded, torch.tensor([[0, 0, 0, 1, 1, 1, 1, 1]]))
    assert torch.equal(seen["cos"][0, 3:], model.freqs_cos[:5])  # positions 0..4, not 3..7


def test_logits_to_keep_takes_hugging_faces_forms_and_positions_row_by_row():
    """An int keeps the last k positions, a 1-D tensor the same positions in every row (Hugging
    Face's two forms); a B×k tensor keeps each row's own (a right-padded row's last real token)."""
    model = Transformer(ModelConfig.tiny()).eval()
    ids = torch.tensor([[1, 2, 3, 4], [0, 0, 5, 6]])
    mask = torch.tensor([[1, 1, 1, 0], [0, 0, 1, 1]])
    full = model(ids, mask).logits  # B×T×V
    last_two = model(ids, mask, logits_to_keep=2).logits
    assert last_two.shape == (2, 2, 13) and torch.allclose(last_two, full[:, -2:], atol=1e-6)
    same = model(ids, mask, logits_to_keep=torch.tensor([0, 2])).logits
    assert same.shape == (2, 2, 13) and torch.allclose(same, full[:, [0, 2]], atol=1e-6)
    per_row = model(ids, mask, logits_to_keep=torch.tensor([[2], [3]])).logits
    assert per_row.shape == (2, 1, 13)
    assert torch.allclose(per_row[:, 0], full[[0, 1], [2, 3]], atol=1e-6)
    assert not torch.allclose(per_row[:, 0], full[:, -1], atol=1e-3)  # not simply the last column
    assert torch.allclose(model(ids, mask, logits_to_keep=0).logits, full, atol=0)
    assert torch.allclose(model(ids, mask, labels=ids, logits_to_keep=torch.arange(4)).logits, full, atol=0)


@pytest.mark.parametrize(("keep", "labels", "message"), [
    (-1, False, r"logits_to_keep=-1: must be an int >= 0 \(the last k positions"),
    (True, False, r"logits_to_keep=True: must be an int >= 0"),
    (1.0, False, r"logits_to_keep=1\.0: must be an int >= 0"),
    (torch.tensor([1.0]), False, r"logits_to_keep holds torch\.float32 values: positions must be integers"),
    (torch.tensor([[3]]), False, r"logits_to_keep has shape \(1, 1\); expected \(k,\).*\(2, k\)"),
    (torch.zeros(2, 1, 1, dtype=torch.long), False, r"logits_to_keep has shape \(2, 1, 1\)"),
    (torch.tensor([[3], [4]]), False, r"positions in \[3, 4\]; the input has 4 positions, so each must be "
                                      r"in -4\.\.3"),
    (torch.tensor([-5]), False, r"positions in \[-5, -5\]"),
    (1, True, r"labels need the logits of every position, in order: logits_to_keep=1 does not keep the 4 "
              r"of them; use logits_to_keep=0"),
    (torch.tensor([1, 0, 2, 3]), True, r"logits_to_keep=\[1, 0, 2, 3\] does not keep the 4"),
])
def test_logits_to_keep_refuses_what_is_none_of_its_forms(keep, labels, message):
    model = Transformer(ModelConfig.tiny()).eval()
    ids = torch.tensor([[1, 2, 3, 4], [0, 0, 5, 6]])
    with pytest.raises(ValueError, match=message):
        model(ids, labels=ids if labels else None, logits_to_keep=keep)


def test_a_cache_is_anything_with_length_update_and_advance():
    """The model needs only ``KVCacheProtocol``: a cache written here, over plain lists, works."""

    class ListCache:
        def __init__(self, n_layers):
            self.keys, self.values, self.length = [None] * n_layers, [None] * n_layers, 0

        def update(self, layer_id, k, v):
            old_k, old_v = self.keys[layer_id], self.values[layer_id]
            self.keys[layer_id] = k if old_k is None else torch.cat([old_k, k], 1)
            self.values[layer_id] = v if old_v is None else torch.cat([old_v, v], 1)
            return self.keys[layer_id], self.values[layer_id]

        def advance(self, n_tokens):
            self.length += n_tokens

    model = Transformer(ModelConfig.tiny()).eval()
    seq = torch.tensor([[3, 1, 4, 1, 5, 9]])
    cache = ListCache(model.config.n_layers)
    with torch.no_grad():
        steps = [model(seq[:, :3], cache=cache).logits]
        steps += [model(seq[:, t : t + 1], cache=cache).logits for t in range(3, 6)]
    assert cache.length == 6
    assert (torch.cat(steps, 1) - model(seq).logits).abs().max() < 1e-5


def _tinyk_imports() -> dict[str, set[str]]:
    """Module -> the ``tinyk`` modules it imports, read with ``ast``: every import statement
    counts, also inside functions and under ``if TYPE_CHECKING:``."""
    package = Path(__file__).resolve().parent.parent / "tinyk"
    modules = {".".join(["tinyk", *p.relative_to(package).with_suffix("").parts]).removesuffix(".__init__"): p
               for p in package.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        parent = name if path.stem == "__init__" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from . import x, from .model import y
                    base = ".".join([parent.rsplit(".", node.level - 1)[0]] + ([base] if base else []))
                found.add(base)
                found |= {f"{base}.{alias.name}" for alias in node.names}  # from tinyk import model
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles = []

    def visit(node, path):
        for nxt in sorted(graph[node]):
            if nxt in path:
                cycles.append([*path[path.index(nxt):], nxt])
            elif len(path) < len(graph):
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    return cycles


def test_no_tinyk_module_imports_one_that_imports_it_back():
    graph = _tinyk_imports()
    assert "tinyk.model" in graph["tinyk.generation"]  # the walk sees imports
    # The model imports no sibling but its configuration's rules and the words its refusals are
    # said with, which import nothing of the package's but the switch that picks the language.
    assert graph["tinyk.model"] == {"tinyk.config_rules",
                                    "tinyk.translations.package_catalogue"}, graph["tinyk.model"]
    assert graph["tinyk.config_rules"] == {"tinyk.translations.package_catalogue"}
    assert graph["tinyk.translations.package_catalogue"] == {"tinyk.environment"}
    assert graph["tinyk.environment"] == set()
    assert _cycles(graph) == []
    # A TYPE_CHECKING-only import back from the model would be a cycle, and is caught:
    assert _cycles({**graph, "tinyk.model": {"tinyk.generation"}}) != []


def test_decoder_layer_takes_the_config_first_as_attention_does():
    config = ModelConfig.tiny()
    assert DecoderLayer(config, 1).attention.layer_id == 1
    with pytest.raises(TypeError, match=r"DecoderLayer\(config, layer_id\): config must be a ModelConfig"):
        DecoderLayer(0, config)
