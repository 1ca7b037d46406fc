"""Each upstream quirk happens in ``tinyk.interop.upstream``, and the ``tinyk`` path gets it right."""

from __future__ import annotations

import dataclasses
import inspect
import math

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import varied_weights
from tinyk import ModelConfig, Transformer, generate, last_valid_index
from tinyk.interop.upstream import (
    UpstreamAttention,
    UpstreamDecoderLayer,
    UpstreamTransformer,
    last_position_by_sum,
    prepare_attention_mask,
    sft_masked_loss,
    upstream_init_,
)
from tinyk.model import DecoderLayer, causal_lm_loss, padding_to_attention


def _varied(model: Transformer) -> Transformer:
    torch.manual_seed(1)
    return varied_weights(model)


@pytest.fixture(scope="session")
def pair():
    config = ModelConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=40, max_seq_len=64)
    up = _varied(UpstreamTransformer(config))
    fixed = Transformer(config).eval()
    fixed.load_state_dict(up.state_dict())  # same weights, corrected code
    return up, fixed


# 1. forward(tokens, ...) has no default for tokens
def test_1_keyword_call_fails_upstream_and_works_fixed(pair):
    up, fixed = pair
    ids = torch.tensor([[1, 2, 3]])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'tokens'"):
        up(input_ids=ids)
    assert fixed(input_ids=ids).logits.shape == (1, 3, 40)


# 2. last_loss per token, unreduced, ignore_index = pad; pad == EOS hides EOS; one shared output
def test_2_last_loss_is_unreduced_ignores_eos_when_pad_is_eos_and_output_is_shared(pair):
    up, fixed = pair
    eos = pad = up.config.pad_token_id  # the upstream tokenizer sets pad_token = eos_token
    ids = torch.tensor([[5, 6, 7, eos]])
    out = up(ids[:, :-1], ids[:, 1:])
    assert out.last_loss.shape == (3,) and out.last_loss[-1] == 0  # EOS target ignored
    first = out
    second = up(ids[:, :-1])
    assert second is first and first.last_loss is None  # the earlier result is gone
    labels = ids.clone()
    fixed_out = fixed(input_ids=ids, labels=labels)
    assert fixed_out.loss.ndim == 0  # a reduced scalar
    manual = F.cross_entropy(fixed_out.logits[0, :-1], ids[0, 1:])  # EOS counted
    assert torch.allclose(fixed_out.loss, manual)
    assert pad == 0


# 3. the chapter text's ignore_index=0: token 0 can never be learned
def test_3_text_version_never_trains_token_0():
    config = ModelConfig.tiny()
    text = UpstreamTransformer(config, text_version=True)
    ids = torch.tensor([[3, 0, 4, 0]])
    loss = text(ids[:, :-1], ids[:, 1:]).last_loss
    assert loss[0] == 0 and loss[2] == 0  # both targets "0" contribute nothing
    fixed = Transformer(config)
    fixed.load_state_dict(text.state_dict())
    out = fixed(ids, labels=ids)
    out.loss.backward()
    assert fixed.tok_embeddings.weight.grad[0].abs().sum() > 0  # token 0 gets a gradient


# 4. mask > 0 turns an additive float mask all False
def test_4_additive_mask_becomes_all_false_upstream_and_is_read_right_fixed(pair):
    _, fixed = pair
    additive = torch.tensor([[float("-inf"), 0.0, 0.0, 0.0]])
    assert not prepare_attention_mask(additive).any()
    flags = torch.tensor([[0, 1, 1, 1]])
    assert prepare_attention_mask(flags).tolist() == [[False, True, True, True]]
    ids = torch.tensor([[0, 4, 5, 6]])
    assert torch.equal(fixed(ids, additive).logits, fixed(ids, flags).logits)


# 4b. a 3-D/4-D mask is cut to its first query row: a causal mask keeps only key 0
def test_4_causal_4d_mask_keeps_only_key_0_upstream(pair):
    up, _ = pair
    causal = torch.ones(4, 4, dtype=torch.long).tril()  # query i may see keys 0..i
    four_d = causal.expand(2, 1, 4, 4)  # B×1×T×T
    only_key_0 = [[True, False, False, False]] * 2
    assert prepare_attention_mask(four_d).tolist() == only_key_0  # the last row would be all True
    assert prepare_attention_mask(causal.expand(2, 4, 4)).tolist() == only_key_0  # 3-D: the same
    flags = torch.tensor([[0, 1, 1, 1]])
    assert prepare_attention_mask(flags[:, None, None, :].expand(1, 1, 4, 4)).tolist() == \
        [[False, True, True, True]]  # flags broadcast to 4-D survive the cut
    ids = torch.tensor([[5, 3, 8, 1], [4, 4, 6, 2]])
    with_causal = up(ids, attention_mask=four_d).logits.clone()  # B×1×V
    assert torch.equal(with_causal, up(ids, attention_mask=torch.tensor(only_key_0)).logits)
    assert torch.allclose(with_causal, up(ids[:, :1]).logits, atol=1e-5)  # read at key 0 alone
    assert not torch.allclose(with_causal, up(ids).logits, atol=1e-3)  # not the whole prompt
    with pytest.raises(ValueError, match="must match input_ids shape"):
        prepare_attention_mask(torch.ones(1, 3), ids)


# 4c. ignore_index is the pad id, switched to -100 when any target is -100
def test_4_ignore_index_is_the_pad_id_unless_a_target_is_minus_100(pair):
    up, _ = pair
    pad = up.config.pad_token_id
    ids = torch.tensor([[5, 6, 7, 8]])
    targets = torch.tensor([[6, pad, 8, 9]])
    assert up(ids, targets).last_loss[1] == 0  # the pad target is ignored
    targets[0, 3] = -100
    loss = up(ids, targets).last_loss
    assert loss[3] == 0 and loss[1] > 0  # now -100 is ignored and the pad target counts
    text = UpstreamTransformer(up.config, text_version=True)
    assert text(ids, torch.tensor([[6, 0, 8, 9]])).last_loss[1] == 0  # the text: always 0


# 5. sum(mask) - 1 is a right-padding rule; batched left-padded generation goes wrong
def test_5_last_position_by_sum_is_wrong_for_left_padding():
    assert last_position_by_sum(torch.tensor([[0, 0, 1, 1]])).item() == 1
    assert last_valid_index(torch.tensor([[0, 0, 1, 1]])).item() == 3
    assert last_position_by_sum(torch.tensor([[1, 1, 0, 0]])).item() == 1  # right padding: fine
    eight_pads = torch.tensor([[0] * 8 + [1] * 12])
    assert last_position_by_sum(eight_pads).item() == 11  # a real token, the fourth
    assert last_valid_index(eight_pads).item() == 19
    assert last_position_by_sum(torch.tensor([[0, 0, 0]])).item() == 0  # clamp(min=1) - 1


def test_5_padded_row_is_read_at_a_real_token_8_positions_early(pair):
    """Prompts of 20 and 12 tokens: at step s the shorter row continues its first 4 + s tokens."""
    up, _ = pair
    g = torch.Generator().manual_seed(4)
    long = torch.randint(1, 40, (20,), generator=g).tolist()
    short = torch.randint(1, 40, (12,), generator=g).tolist()
    never = -1
    batch = up.generate([long, short], eos_token_id=never, max_new_tokens=6, temperature=0)
    prefix_next = [up.generate([short[: 4 + s]], eos_token_id=never, max_new_tokens=1,
                               temperature=0)[0, 0].item() for s in range(6)]
    assert batch[1].tolist() == prefix_next  # step s reads real token 3 + s of the prompt
    alone = up.generate([short], eos_token_id=never, max_new_tokens=6, temperature=0)[0]
    assert batch[1].tolist() != alone.tolist()  # so the row disagrees with the prompt alone
    ids = torch.tensor([long, [0] * 8 + short])
    mask = torch.tensor([[1] * 20, [0] * 8 + [1] * 12])
    first = up(ids, attention_mask=mask).logits[1, 0].clone()  # read at index 11
    # The four tokens there sit at RoPE positions 8..11; alone they sit at 0..3. A common
    # shift changes no attention score, so the logits agree (to rounding):
    assert torch.allclose(first, up(torch.tensor([short[:4]])).logits[0, 0], atol=1e-5)
    assert not torch.allclose(first, up(torch.tensor([short])).logits[0, 0], atol=1e-3)


def test_5_upstream_batched_generation_differs_from_single_prompts(pair):
    up, fixed = pair
    prompts = [[5, 3, 8, 1, 9, 2, 7], [4, 4, 6]]
    never = -1  # an EOS id no row can emit: every row runs all 6 steps
    batch = up.generate(prompts, eos_token_id=never, max_new_tokens=6, temperature=0)
    alone = [up.generate([p], eos_token_id=never, max_new_tokens=6, temperature=0)[0] for p in prompts]
    assert batch[0].tolist() == alone[0].tolist()  # the longest prompt has no padding
    assert batch[1].tolist() != alone[1].tolist()  # the padded one goes wrong
    ids = torch.tensor([[5, 3, 8, 1, 9, 2, 7], [0, 0, 0, 0, 4, 4, 6]])
    mask = (torch.arange(7) >= torch.tensor([[0], [4]])).long()
    ours = generate(fixed, ids, mask, max_new_tokens=6, temperature=0)
    assert ours[1].tolist() == alone[1].tolist()  # corrected: same as alone


# 6. the chapter text's generate: ambiguous truth value for a batch; EOS dropped
def test_6_text_generate_fails_on_a_batch_and_drops_eos(pair):
    up, fixed = pair
    text = UpstreamTransformer(up.config, text_version=True).eval()
    text.load_state_dict(up.state_dict())
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        text.generate_text(torch.tensor([[1, 2], [3, 4]]), stop_id=5, max_new_tokens=3, temperature=0)
    prompt = torch.tensor([[5, 3, 8]])
    free = text.generate_text(prompt, max_new_tokens=6, temperature=0)[0].tolist()
    stop = free[2]
    cut = text.generate_text(prompt, stop_id=stop, max_new_tokens=6, temperature=0)[0].tolist()
    assert stop not in cut and cut == free[: free.index(stop)]  # stops, without the EOS
    ours = generate(fixed, prompt, max_new_tokens=6, temperature=0, eos_token_id=stop)[0].tolist()
    assert ours == free[: free.index(stop) + 1]  # EOS returned
    batch = generate(fixed, torch.tensor([[5, 3, 8], [1, 2, 3]]), max_new_tokens=4, temperature=0,
                     eos_token_id=stop)
    assert batch.shape[0] == 2


# The upstream layer's mask is B×T; tinyk's is B×1×T×T_k: each path keeps its own contract
def test_upstream_layer_takes_a_bxt_mask_and_agrees_with_the_tinyk_layer_given_bx1xtxt(pair):
    up, fixed = pair
    assert isinstance(up.layers[0], UpstreamDecoderLayer)
    assert list(inspect.signature(UpstreamDecoderLayer.forward).parameters)[-1] == "attention_mask"
    assert list(inspect.signature(DecoderLayer.forward).parameters)[-2:] == ["mask", "cache"]
    x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(0))
    valid = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    cos, sin = fixed.freqs_cos[:5], fixed.freqs_sin[:5]
    with torch.no_grad():
        theirs = up.layers[0](x, cos, sin, valid)  # B×T
        ours = fixed.layers[0](x, cos, sin, padding_to_attention(valid, 5))  # B×1×T×T
        assert (theirs - ours).abs().max() < 1e-5  # same weights, same function
        assert (theirs - fixed.layers[0](x, cos, sin)).abs().max() > 1e-2  # the mask matters
        with pytest.raises(ValueError, match="B×1×T×T_k"):
            fixed.layers[0](x, cos, sin, valid)  # tinyk's layer refuses the upstream's mask
        square = torch.ones(5, 5, dtype=torch.bool)  # with B = T = 5 it would broadcast silently
        with pytest.raises(ValueError, match="padding_to_attention"):
            fixed.layers[0](x[:1].expand(5, 5, 64), cos, sin, square)


# 7. the flash switch ignores config.flash_attn
def test_7_flash_switch_ignores_the_config():
    config = dataclasses.replace(ModelConfig.tiny(), flash_attn=False)
    assert UpstreamAttention(config).flash is True
    assert Transformer(config).layers[0].attention.flash is False


# 8. softmax over a fully masked row: NaN upstream, zeros fixed
def test_8_fully_masked_row_is_nan_on_the_upstream_hand_path_and_zero_fixed():
    config = dataclasses.replace(ModelConfig.tiny(), flash_attn=False)
    up = UpstreamTransformer(config).eval()
    for layer in up.layers:
        layer.attention.flash = False  # force the hand-written path
    ids = torch.tensor([[0, 0, 3, 4]])
    mask = torch.tensor([[0, 0, 1, 1]])
    seen = {}

    def keep(module, inputs, output):
        seen["out"] = output

    up.layers[0].attention.register_forward_hook(keep)
    up(ids, attention_mask=mask)
    assert torch.isnan(seen["out"][0, 0]).all()  # query 0 sees no key
    fixed = Transformer(config).eval()
    fixed.load_state_dict(up.state_dict())
    assert torch.isfinite(fixed(ids, mask).logits).all()


# 9. scaled init on w3 instead of w2
def test_9_upstream_scales_w3_not_the_residual_projection_w2():
    torch.manual_seed(0)
    config = ModelConfig(dim=256, n_layers=8, n_heads=4, n_kv_heads=4, vocab_size=64)
    small = 0.02 / math.sqrt(2 * config.n_layers)
    up = Transformer(config)
    upstream_init_(up, config.n_layers)
    ffn = up.layers[0].feed_forward
    assert abs(ffn.w3.weight.detach().std().item() - small) < 0.1 * small
    assert abs(ffn.w2.weight.detach().std().item() - 0.02) < 0.1 * 0.02
    fixed = Transformer(config).layers[0].feed_forward
    assert abs(fixed.w2.weight.detach().std().item() - small) < 0.1 * small
    assert abs(fixed.w3.weight.detach().std().item() - 0.02) < 0.1 * 0.02


def test_9_same_residual_scale_at_init_but_small_hidden_and_gradients_on_the_wrong_matrix():
    """SwiGLU's output is linear in w3 and in w2, so shrinking either one shrinks the MLP's
    write into the residual stream equally: the stream's scale at init is the same. What
    the upstream changes is where the smallness sits: the B×T×m hidden activation is
    sqrt(2L) times smaller, and the large relative gradient moves from w2 to w3."""
    config = ModelConfig(dim=256, n_layers=8, n_heads=4, n_kv_heads=4, vocab_size=64)
    ids = torch.randint(0, 64, (4, 32), generator=torch.Generator().manual_seed(0))

    def measure(model):
        hidden, stream = [], []
        hooks = [layer.feed_forward.w2.register_forward_pre_hook(
                     lambda m, i: hidden.append(i[0].std().item())) for layer in model.layers]
        hooks += [layer.register_forward_hook(lambda m, i, o: stream.append(o.std().item()))
                  for layer in model.layers]
        model(ids, labels=ids).loss.backward()
        for h in hooks:
            h.remove()
        ffn = model.layers[3].feed_forward
        rel = {n: (getattr(ffn, n).weight.grad.norm() / getattr(ffn, n).weight.norm()).item()
               for n in ("w2", "w3")}
        return torch.tensor(stream), sum(hidden) / len(hidden), rel

    torch.manual_seed(1)
    fixed = Transformer(config)
    torch.manual_seed(1)
    up = Transformer(config)
    upstream_init_(up, config.n_layers)
    stream_f, hidden_f, rel_f = measure(fixed)
    stream_u, hidden_u, rel_u = measure(up)
    assert ((stream_u - stream_f).abs() / stream_f).max() < 0.05  # same stream scale per layer
    assert stream_f[-1] > 2 * stream_f[0]  # which still grows with depth in both
    assert 3 < hidden_f / hidden_u < 5  # sqrt(2L) = 4
    assert rel_u["w3"] > 5 * rel_f["w3"] and rel_f["w2"] > 5 * rel_u["w2"]


# 10. the SFT loss is 0/0 with no counted token
def test_10_sft_masked_loss_is_nan_without_counted_tokens_and_fixed_is_zero():
    per_token = torch.tensor([1.5, 2.0, 0.5])
    assert math.isnan(sft_masked_loss(per_token, torch.zeros(3)).item())
    assert sft_masked_loss(per_token, torch.tensor([1, 0, 1])).item() == pytest.approx(1.0)
    logits = torch.randn(1, 4, 10)
    assert causal_lm_loss(logits, torch.full((1, 4), -100)).item() == 0.0
