"""tinyk.learner.parts: a learner's parts plug into a tinyk model (sections 05.2 to 05.6, 05.10).

The reference parts below are written here, independently of tinyk/model.py, in the
shapes of the build-track contract; each wrong part makes one classic mistake.
"""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tinyk import DecoderLayer, KVCache, ModelConfig, Transformer, generate
from tinyk.learner.divergence import first_divergence
from tinyk.learner.part_checks import check_parts
from tinyk.learner.part_compare import PART_NAMES, PartError
from tinyk.learner.parts import build_model, checkpoint, from_notebooks

# --- reference parts, written independently --------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        return (x32 / torch.sqrt(x32.square().mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim={head_dim}: RoPE turns pairs")
    inv = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(end, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().float(), angles.sin().float()


def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        c = cos[:, None, :] if cos.ndim == 2 else cos[:, :, None, :]  # T×1×d_h/2 or B×T×1×d_h/2
        s = sin[:, None, :] if sin.ndim == 2 else sin[:, :, None, :]
        wide = torch.promote_types(x.dtype, c.dtype)  # float32 for bfloat16, float64 kept
        even, odd = x[..., 0::2].to(wide), x[..., 1::2].to(wide)
        out = torch.empty(x.shape, dtype=wide)
        out[..., 0::2] = even * c - odd * s
        out[..., 1::2] = even * s + odd * c
        return out.to(x.dtype)
    return rotate(xq), rotate(xk)


def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=2)


def gqa_attention(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
    T, T_k = q.shape[2], k.shape[2]
    if mask is None:
        mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, -1e30)
    weights = scores.softmax(-1) * mask
    return (weights @ v.float()).to(q.dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        a = self.w1(x)
        return self.w2(a * torch.sigmoid(a) * self.w3(x))


def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))


def token_positions(valid):
    return torch.clamp(torch.cumsum(valid.to(torch.long), dim=1) - 1, min=0)


def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    q_pos = torch.arange(T_k - query_len, T_k)[:, None]
    return (torch.arange(T_k)[None, :] <= q_pos)[None, None] & valid[:, None, None, :]


def shifted_loss(logits, labels, ignore_index=-100):
    logits, targets = logits[:, :-1], labels[:, 1:]
    keep = targets != ignore_index
    if not keep.any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits[keep].float(), targets[keep])


REFERENCE = {name: globals()[name] for name in PART_NAMES}

# --- one classic mistake each ------------------------------------------------------------


class MeanRMSNorm(RMSNorm):
    def forward(self, x):
        x = x - x.mean(-1, keepdim=True)
        return super().forward(x)


def half_split_rope(xq, xk, cos, sin):
    def rotate(x):
        c = cos[:, None, :] if cos.ndim == 2 else cos[:, :, None, :]
        s = sin[:, None, :] if sin.ndim == 2 else sin[:, :, None, :]
        x1, x2 = x.float().chunk(2, dim=-1)
        return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), -1).to(x.dtype)
    return rotate(xq), rotate(xk)


def tiled_repeat_kv(x, n_rep):
    return x.repeat(1, 1, n_rep, 1)


def nan_attention(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
    scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
    return scores.softmax(-1) @ v


def post_norm_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = attention_norm(x + attention(x))
    return ffn_norm(h + feed_forward(h))


def arange_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()


def first_keys_mask(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]


def unshifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)


def all_targets_loss(logits, labels, ignore_index=-100):
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                             ignore_index=ignore_index, reduction="none")
    return losses.mean()


class FirstAxisRMSNorm(RMSNorm):
    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.square().mean(0, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def exponent_rope_tables(head_dim, end, theta=10000.0):
    inv = theta ** (-torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)  # i/d_h, not 2i/d_h
    angles = torch.arange(end, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().float(), angles.sin().float()


def mask_after_softmax(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return ((scores.softmax(-1) * mask) @ v.float()).to(q.dtype)


def scaled_by_d(q, k, v, mask=None):
    return gqa_attention(q / math.sqrt(q.shape[-1]), k, v, mask)


def first_label_counted_loss(logits, labels, ignore_index=-100):
    total = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=ignore_index,
                            reduction="sum")
    return total / (labels != ignore_index).sum().clamp(min=1)


class GateOnW3(SwiGLU):
    def forward(self, x):
        return self.w2(F.silu(self.w3(x)) * self.w1(x))


WRONG = [
    ("RMSNorm", MeanRMSNorm, "subtracts the mean"),
    ("apply_rope", half_split_rope, "half-split"),
    ("repeat_kv", tiled_repeat_kv, "[0, 1, 0, 1]"),
    ("gqa_attention", nan_attention, "NaN"),
    ("SwiGLU", GateOnW3, "gate on w3"),
    ("decoder_block", post_norm_block, "post-norm"),
    ("token_positions", arange_positions, "whatever the padding"),
    ("causal_padding_mask", first_keys_mask, "FIRST query_len keys"),
    ("shifted_loss", unshifted_loss, "unshifted"),
    ("shifted_loss", all_targets_loss, "likely cause: the mean over all targets: an ignored target is not "
                                       "counted in the denominator"),
    ("rope_tables", exponent_rope_tables, "the exponent -i/d_h; ω_i = theta^(-2i/d_h)"),  # 05.3.1's hint
    # each exercise's own diagnosis (05.2.2, 05.4.4, 05.6.4), where no hint of the check names it
    ("RMSNorm", FirstAxisRMSNorm, "likely cause: the mean of the squares taken over axis 0 of a (2, 3, 16) "
                                  "input; normalise over the last axis"),
    ("gqa_attention", mask_after_softmax, "likely cause: the mask applied after the softmax"),
    ("gqa_attention", scaled_by_d, "likely cause: the scores scaled by 1/d_h instead of 1/sqrt(d_h)"),
    ("shifted_loss", first_label_counted_loss, "likely cause: the denominator counts labels[:, 0]"),
]


@pytest.fixture(scope="session")
def base():
    torch.manual_seed(0)
    return Transformer(ModelConfig.tiny()).eval()


def padded_batch():
    ids = torch.randint(1, 13, (3, 8), generator=torch.Generator().manual_seed(1))
    valid = torch.ones(3, 8, dtype=torch.bool)
    valid[0, :3] = False
    valid[1, :6] = False
    return ids, valid


def assert_same_logits_and_loss(model, base, ids, valid) -> None:
    """``model`` gives ``base``'s logits at the real tokens and its loss, unpadded and padded."""
    with torch.no_grad():
        for mask in (None, valid):
            ours, theirs = model(ids, mask, labels=ids), base(ids, mask, labels=ids)
            real = valid if mask is not None else torch.ones_like(valid)
            torch.testing.assert_close(ours.logits[real], theirs.logits[real], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(ours.loss, theirs.loss, atol=1e-5, rtol=1e-5)


def test_reference_parts_pass_the_check():
    assert check_parts(REFERENCE) == list(PART_NAMES)


def test_reference_parts_give_tinyks_logits_and_loss(base):
    model = build_model(base, REFERENCE)
    assert isinstance(model.layers[0].feed_forward, SwiGLU) and isinstance(model.norm, RMSNorm)
    assert model.state_dict().keys() == base.state_dict().keys()
    ids, valid = padded_batch()
    assert_same_logits_and_loss(model, base, ids, valid)
    assert base.layers[0].feed_forward.__class__.__name__ == "MLP", "the base model is not changed"


def test_any_subset_of_parts_plugs_in(base):
    ids, valid = padded_batch()
    with torch.no_grad():
        expected = base(ids, valid).logits[valid]
        for names in (["RMSNorm"], ["apply_rope", "repeat_kv"], ["SwiGLU", "decoder_block"],
                      ["token_positions", "causal_padding_mask"], []):
            got = build_model(base, {n: REFERENCE[n] for n in names})(ids, valid).logits[valid]
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_parts_really_run(base):
    calls = []

    def counting_positions(valid):
        calls.append(valid.shape)
        return token_positions(valid)

    ids, valid = padded_batch()
    build_model(base, token_positions=counting_positions)(ids, valid)
    assert calls == [(3, 8)]


def test_a_wrong_part_changes_the_models_logits(base):
    ids, valid = padded_batch()
    with torch.no_grad():
        expected = base(ids, valid).logits[valid]
        got = build_model(base, apply_rope=half_split_rope)(ids, valid).logits[valid]
    assert (got - expected).abs().max() > 1e-4  # rounding alone stays below 1e-6


def test_same_greedy_tokens_with_a_kv_cache_and_left_padding(base):
    model = build_model(base, REFERENCE)
    ids, valid = padded_batch()
    for mask in (None, valid):
        for use_cache in (True, False):
            kwargs = dict(max_new_tokens=6, temperature=0, use_cache=use_cache)
            assert torch.equal(generate(model, ids, mask, **kwargs), generate(base, ids, mask, **kwargs))


def test_cached_steps_give_the_uncached_logits(base):
    model = build_model(base, REFERENCE)
    ids, valid = padded_batch()
    cache = KVCache(model.config, batch_size=3, max_len=8)
    with torch.no_grad():
        first = model(ids[:, :5], valid[:, :5], cache=cache).logits
        rest = model(ids[:, 5:], valid, cache=cache).logits
        full = base(ids, valid).logits
    got = torch.cat([first, rest], dim=1)
    torch.testing.assert_close(got[valid], full[valid], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name,wrong,words", WRONG, ids=[f"{w[0]}-{w[2]}" for w in WRONG])
def test_each_wrong_part_is_named(name, wrong, words):
    with pytest.raises(PartError, match=rf"^{name} \(section 05\.\d\):") as err:
        check_parts({**REFERENCE, name: wrong})
    assert words in str(err.value)
    assert err.value.part == name


# The first value first_divergence names for each wrong part alone in the model, on a
# left-padded batch with labels: the step that is wrong, never a right one downstream.
FIRST = {
    "MeanRMSNorm": "layer 0, the norm before attention (RMSNorm): max |difference|",
    "half_split_rope": "layer 0, attention: q after RoPE (apply_rope): max |difference|",
    "tiled_repeat_kv": "layer 0, attention: the weighted values (gqa_attention) (after layer 0, attention: "
                       "k or v repeated for the groups (repeat_kv), which tinyk's own run does not make)",
    "nan_attention": "layer 0, attention: the weighted values (gqa_attention): NaN in",
    "GateOnW3": "layer 0, the MLP (SwiGLU): max |difference|",
    "post_norm_block": "layer 0, the norm before attention (RMSNorm) is given a different input",
    "arange_positions": "the token positions (token_positions): first at index [0, 3]: 3 instead of 0",
    "unshifted_loss": "the loss (shifted_loss): max |difference|",
    "all_targets_loss": "the loss (shifted_loss): max |difference|",
    "first_keys_mask": "",  # its triangle differs only behind a KV cache: one pass shows nothing
    "FirstAxisRMSNorm": "layer 0, the norm before attention (RMSNorm): max |difference|",
    "exponent_rope_tables": "layer 0, attention: q after RoPE (apply_rope): max |difference|",
    "mask_after_softmax": "layer 0, attention: the weighted values (gqa_attention): max |difference|",
    "scaled_by_d": "layer 0, attention: the weighted values (gqa_attention): max |difference|",
    "first_label_counted_loss": "the loss (shifted_loss): max |difference|",
}


@pytest.mark.parametrize("name,wrong,words", WRONG, ids=[f"{w[0]}-{w[2]}" for w in WRONG])
def test_first_divergence_names_the_wrong_step(base, name, wrong, words):
    ids, valid = padded_batch()
    labels = ids.masked_fill(~valid, -100)
    found = first_divergence(build_model(base, {name: wrong}), base, ids, valid, labels)
    expected = FIRST[wrong.__name__]
    assert found.startswith(expected) if expected else found == "", found
    assert first_divergence(build_model(base, REFERENCE), base, ids, valid, labels) == ""


def test_first_divergence_without_padding_and_in_the_checkpoint(base, capsys, monkeypatch):
    ids, _ = padded_batch()
    found = first_divergence(build_model(base, apply_rope=half_split_rope), base, ids)
    assert found.startswith("layer 0, attention: q after RoPE (apply_rope): max |difference|"), found
    # a part that passes alone but not in the model: the checkpoint says where it first differs
    monkeypatch.setattr("tinyk.learner.parts.check_parts", lambda parts, seed=0: list(parts))
    assert checkpoint({**REFERENCE, "apply_rope": half_split_rope}) is False
    out = capsys.readouterr().out
    assert "first difference: layer 0, attention: q after RoPE (apply_rope)" in out, out


def test_rmsnorm_multiplying_before_the_cast_back_is_named():
    class WeightFirst(RMSNorm):
        def forward(self, x):
            x32 = x.float()
            normed = x32 * torch.rsqrt(x32.square().mean(-1, keepdim=True) + self.eps)
            return (normed * self.weight).to(x.dtype)

    with pytest.raises(PartError, match=r"^RMSNorm .*bfloat16"):
        check_parts(RMSNorm=WeightFirst)


def test_a_part_named_by_a_hint_is_not_diagnosed_again():
    # The check's own hint (its inputs) comes first; the exercise's diagnosis only where none matched.
    with pytest.raises(PartError) as err:
        check_parts(RMSNorm=MeanRMSNorm)
    message = str(err.value)
    assert "it matches a norm that subtracts the mean" in message and "likely cause" not in message


def test_hugging_faces_shifted_loss_is_refused_with_what_to_write_instead():
    from transformers.loss.loss_utils import ForCausalLMLoss

    def shifted_loss(logits, labels, ignore_index=-100):
        if (labels[:, 1:] == ignore_index).all():
            return torch.zeros(())
        return ForCausalLMLoss(logits, labels, logits.shape[-1], ignore_index=ignore_index)

    logits, labels = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    labels[0, :2] = -100
    torch.testing.assert_close(ForCausalLMLoss(logits, labels, 7), REFERENCE["shifted_loss"](logits, labels))
    with pytest.raises(PartError) as err:
        check_parts(shifted_loss=shifted_loss)
    assert str(err.value) == (
        "shifted_loss (section 05.6): calls transformers (ForCausalLMLoss), which is not allowed here: it is "
        "Hugging Face's implementation. Shift the logits and the labels yourself, then use F.cross_entropy "
        "(plain torch)")


def test_unscaled_attention_is_named():
    def unscaled(q, k, v, mask=None):
        return gqa_attention(q * math.sqrt(q.shape[-1]), k, v, mask)

    with pytest.raises(PartError, match="1/sqrt"):
        check_parts(gqa_attention=unscaled)


def test_a_stub_is_named_by_the_check_and_by_the_model(base):
    def repeat_kv(x, n_rep):
        raise NotImplementedError()

    with pytest.raises(PartError, match=r"^repeat_kv \(section 05\.4\): still a stub"):
        check_parts({**REFERENCE, "repeat_kv": repeat_kv})

    class StubNorm(nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            raise NotImplementedError()

    model = build_model(base, RMSNorm=StubNorm)
    with pytest.raises(PartError, match=r"^RMSNorm \(section 05\.2\): still a stub"):
        model(torch.tensor([[1, 2, 3]]))


def test_unknown_names_are_refused(base):
    with pytest.raises(ValueError, match="rmsnorm"):
        build_model(base, rmsnorm=RMSNorm)


def test_checkpoint_reports_stubs_and_falls_back(capsys):
    def token_positions(valid):
        raise NotImplementedError()

    assert checkpoint(REFERENCE) is True
    assert checkpoint({**REFERENCE, "token_positions": token_positions}) is False
    out = capsys.readouterr().out
    assert "still a stub" in out and "greedy tokens with a KV cache the same" in out
    assert "not found" not in out


def test_checkpoint_says_which_parts_of_the_compared_model_were_tinyks(capsys):
    # A wrong part is named, then replaced: the model that agrees is not the learner's, and the
    # line that says it agrees names what stood in.
    assert checkpoint({**REFERENCE, "RMSNorm": MeanRMSNorm, "repeat_kv": tiled_repeat_kv}) is False
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("assembled model"))
    assert line.startswith("assembled model (8 of 10 parts yours, with tinyk's RMSNorm, repeat_kv in place "
                           "of yours), left-padded batch:"), line
    assert line.endswith("greedy tokens with a KV cache the same"), line
    alone = {name: REFERENCE[name] for name in ("token_positions", "shifted_loss")}
    assert checkpoint({**alone, "causal_padding_mask": first_keys_mask}) is False
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("assembled model"))
    assert ("(2 of 10 parts yours, with tinyk's causal_padding_mask in place of yours; tinyk's RMSNorm, "
            "rope_tables, apply_rope, repeat_kv, gqa_attention, SwiGLU, decoder_block where yours were not "
            "found)") in line, line
    assert checkpoint(REFERENCE) is True
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("assembled model"))
    assert "tinyk's" not in line and line.startswith("assembled model (10 of 10 parts yours), "), line


def test_checkpoint_runs_each_model_once_on_the_batch(monkeypatch):
    # The batch with labels runs once in the learner's model and once in tinyk's (the greedy
    # generation runs without labels).
    from tinyk.learner import parts as parts_module

    torch.manual_seed(0)
    base = Transformer(ModelConfig.tiny()).eval()
    runs: dict[str, int] = {}
    real = parts_module.build_model

    def counted(model, name):
        def hook(module, args, kwargs):  # build_model's copy of base keeps base's hooks: by identity
            if module is model and kwargs.get("labels") is not None:
                runs[name] = runs.get(name, 0) + 1
        model.register_forward_pre_hook(hook, with_kwargs=True)
        return model

    monkeypatch.setattr(parts_module, "build_model", lambda b, p: counted(real(b, p), "yours"))
    assert checkpoint(REFERENCE, counted(base, "tinyk's")) is True
    assert runs == {"yours": 1, "tinyk's": 1}, runs


def test_checkpoint_says_why_missing_parts_are_tinyks_own(capsys):
    alone = {name: REFERENCE[name] for name in ("token_positions", "causal_padding_mask", "shifted_loss")}
    assert checkpoint(alone) is False
    out = capsys.readouterr().out
    missing = [name for name in REFERENCE if name not in alone]
    assert f"{len(missing)} of {len(REFERENCE)} parts not found ({', '.join(missing)})" in out
    assert "a notebook run alone, as on the course's site or in Colab" in out


def test_from_notebooks_reads_solution_cells(tmp_path):
    def cell(source, solution=True):
        meta = {"nbgrader": {"solution": solution, "grade": False, "locked": False,
                             "grade_id": "x", "schema_version": 3}}
        return {"cell_type": "code", "metadata": meta, "source": source, "outputs": []}

    ok = "import torch\ndef repeat_kv(x, n_rep):\n    ### BEGIN SOLUTION\n" \
         "    return torch.repeat_interleave(x, n_rep, dim=2)\n    ### END SOLUTION\n"
    broken = "def token_positions(valid):\n    return undefined_name(\n"
    other = "def not_a_part():\n    return 1\n"
    nb = {"cells": [cell(ok), cell(broken), cell(other), cell("def SwiGLU(): pass", solution=False)]}
    (tmp_path / "05_4_gqa.ipynb").write_text(json.dumps(nb))
    parts = from_notebooks(tmp_path)
    assert sorted(parts) == ["repeat_kv", "token_positions"]
    assert parts.origin["repeat_kv"] == "05_4_gqa.ipynb"
    check_parts(repeat_kv=parts["repeat_kv"])
    with pytest.raises(PartError, match="fails to run: SyntaxError"):
        check_parts(token_positions=parts["token_positions"])


def test_from_notebooks_reads_a_part_as_the_notebook_runs_it(tmp_path):
    """A magic line and a ``def`` inside ``try``, which Jupyter runs, give the part too."""
    meta = {"nbgrader": {"solution": True, "grade": False, "locked": False, "grade_id": "x",
                         "schema_version": 3}}
    source = ("%matplotlib inline\nimport torch\ntry:\n    def repeat_kv(x, n_rep):\n"
              "        return torch.repeat_interleave(x, n_rep, dim=2)\nexcept ImportError:\n    pass\n")
    nb = {"cells": [{"cell_type": "code", "metadata": meta, "source": source, "outputs": []}]}
    (tmp_path / "05_4_gqa.ipynb").write_text(json.dumps(nb))
    parts = from_notebooks(tmp_path)
    assert list(parts) == ["repeat_kv"]
    check_parts(repeat_kv=parts["repeat_kv"])


def test_parts_define_no_forward_pass_of_their_own():
    """The learner's model runs tinyk's own forward passes: the parts' modules only fill the seams."""
    import ast
    import inspect

    import tinyk.learner.divergence
    import tinyk.learner.part_checks
    import tinyk.learner.part_compare
    import tinyk.learner.parts
    import tinyk.model

    modules = (tinyk.learner.parts, tinyk.learner.part_checks, tinyk.learner.part_compare,
               tinyk.learner.divergence)
    tree = ast.parse("\n".join(inspect.getsource(m) for m in modules))
    model_classes = {name for name, obj in vars(tinyk.model).items()
                     if isinstance(obj, type) and issubclass(obj, torch.nn.Module)}
    forwards = [node.lineno for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef) and node.name == "forward"]
    subclasses = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and {ast.unparse(b).split(".")[-1] for b in node.bases} & model_classes]
    assert "Attention" in model_classes and "Transformer" in model_classes
    assert forwards == [] and subclasses == [], (forwards, subclasses)
    model = build_model(Transformer(ModelConfig.tiny()), REFERENCE)
    assert type(model) is Transformer and all(type(layer) is DecoderLayer for layer in model.layers)


# --- the same feedback in Chinese (TINYK_LANGUAGE=zh_CN, as a Chinese student notebook sets it) ---

_CJK = re.compile(r"[\u3400-\u9fff]")
_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# English prose (what stays English in a Chinese message is code, names, numbers and data).
_ENGLISH_PHRASE = re.compile(r"(?<![\w.(\[{'`])(?:a|an|the|of|is|are|with|instead|differs|must|yours)"
                             r"\s+[a-z]+\b")


def _both(monkeypatch, run):
    """``run()``'s text in English, then in Chinese, from the same random state."""
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    torch.manual_seed(0)
    english = run()
    monkeypatch.setenv("TINYK_LANGUAGE", "zh_CN")
    torch.manual_seed(0)
    return english, run()


def _numbers(text) -> list[str]:
    """The numbers of a message, in any order (Chinese word order may move them)."""
    return sorted(_NUMBERS.findall(str(text)))


def _message(parts):
    def run():
        with pytest.raises(PartError) as err:
            check_parts(parts)
        return err.value
    return run


@pytest.mark.parametrize("name,wrong,words", WRONG, ids=[f"{w[0]}-{w[2]}" for w in WRONG])
def test_each_wrong_part_is_named_in_chinese_with_the_same_numbers(monkeypatch, name, wrong, words):
    english, chinese = _both(monkeypatch, _message({**REFERENCE, name: wrong}))
    assert (english.part, chinese.part) == (name, name)
    assert str(chinese).startswith(name) and _CJK.search(chinese.detail), str(chinese)
    assert _numbers(chinese) == _numbers(english), (str(english), str(chinese))
    assert _ENGLISH_PHRASE.search(str(english)) and not _ENGLISH_PHRASE.search(str(chinese)), str(chinese)
    assert words not in str(chinese) or words in ("[0, 1, 0, 1]", "NaN"), str(chinese)


@pytest.mark.parametrize("name,wrong,words", WRONG, ids=[f"{w[0]}-{w[2]}" for w in WRONG])
def test_first_divergence_names_the_wrong_step_in_chinese(base, monkeypatch, name, wrong, words):
    ids, valid = padded_batch()
    labels = ids.masked_fill(~valid, -100)
    english, chinese = _both(monkeypatch, lambda: first_divergence(build_model(base, {name: wrong}), base,
                                                                   ids, valid, labels))
    assert bool(chinese) == bool(english) and (not chinese or _CJK.search(chinese)), chinese
    assert _numbers(chinese) == _numbers(english), (english, chinese)
    assert not _ENGLISH_PHRASE.search(chinese) and (not english or _ENGLISH_PHRASE.search(english)), chinese


def test_the_checkpoint_and_a_borrowed_call_speak_chinese(monkeypatch, capsys):
    def token_positions(valid):
        raise NotImplementedError()

    def repeat_kv_borrowed(x, n_rep):
        from tinyk.model import repeat_kv as theirs
        return theirs(x, n_rep)

    parts = {**REFERENCE, "token_positions": token_positions}
    del parts["SwiGLU"]
    english, chinese = _both(monkeypatch, lambda: (checkpoint(parts), capsys.readouterr().out)[1])
    lines = [line for line in chinese.splitlines() if line]
    assert len(lines) == len([line for line in english.splitlines() if line]) >= 12
    assert all(_CJK.search(line) for line in lines), chinese
    assert _numbers(chinese) == _numbers(english), (english, chinese)
    assert _ENGLISH_PHRASE.search(english) and not _ENGLISH_PHRASE.search(chinese), chinese
    english, chinese = _both(monkeypatch, _message({"repeat_kv": repeat_kv_borrowed}))
    assert "not allowed here" in str(english) and _CJK.search(chinese.detail), str(chinese)
    assert "tinyk.model.repeat_kv" in str(chinese) and not _ENGLISH_PHRASE.search(str(chinese))


def test_the_models_refusals_in_chinese_are_the_chinese_pages_words(monkeypatch):
    # What a Chinese learner's run raises is what the Chinese page of 05.1 shows for the same
    # error (locale/zh_CN/outputs.po translates the English page's printed message).
    from tinyk.courseware.catalogues import outputs_catalogue, translated
    from tinyk.translations.outputs import translate_line

    page = translated(outputs_catalogue())
    refused = [dict(dim=30, n_heads=4), dict(dim=36, n_heads=4, n_kv_heads=4),
               dict(dim=48, n_heads=6, n_kv_heads=4), dict(n_layers=0), dict(dropout=1.0),
               dict(vocab_size=100, pad_token_id=100), dict(norm_eps=0.0)]

    def refusal(fields):
        def run():
            with pytest.raises(ValueError) as err:
                ModelConfig(**fields)
            return str(err.value)
        return run

    for fields in refused:  # the page prints each as "ValueError: <message>"
        english, chinese = _both(monkeypatch, refusal(fields))
        assert translate_line(f"ValueError: {english}", page) == (f"ValueError: {chinese}", None), fields
    assert len(refused) == 7


def test_the_nan_hint_leads_to_a_passing_part_and_never_to_a_refused_call():
    # What the message says to do, done: the blocked scores filled with a finite value, the
    # blocked weights zeroed. The fused attention it must not suggest is refused here.
    with pytest.raises(PartError) as err:
        check_parts(gqa_attention=nan_attention)
    assert "finite value" in str(err.value) and "scaled_dot_product_attention" not in str(err.value)

    def as_the_hint_says(q, k, v, mask=None):
        n_rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
        if mask is None:
            mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(k.shape[2] - q.shape[2])
        scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).float()
        weights = scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(-1).masked_fill(~mask, 0.0)
        return (weights @ v.float()).to(q.dtype)

    assert check_parts(gqa_attention=as_the_hint_says) == ["gqa_attention"]

    def fused(q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    with pytest.raises(PartError, match="not allowed here"):
        check_parts(gqa_attention=fused)


def _rmsnorm_of(mistake_id: str) -> object:
    """The RMSNorm of tests/exercise_cases' first wrong answer that makes ``mistake_id``."""
    from .exercise_cases import ex_05_2

    source = next(src for found, src in ex_05_2.MISTAKES["ex_05_2_2_solution"] if found == mistake_id)
    namespace: dict = {}
    exec(compile(source, "<wrong answer>", "exec"), namespace)
    return namespace["RMSNorm"]


@pytest.mark.parametrize("mistake_id", ["05.2.2:extra-state", "05.2.2:downcasts-float64", "05.2.2:detached"])
def test_the_checkpoint_refuses_an_rmsnorm_with_a_flaw_its_output_hides(capsys, mistake_id):
    # an eps buffer (which tinyk's state dict cannot load), float64 computed in float32, a
    # detached 1/r: each is reported and replaced, never raised, never said to agree
    assert checkpoint({**REFERENCE, "RMSNorm": _rmsnorm_of(mistake_id)}) is False
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("RMSNorm "))
    assert "NOT used" in row and "agrees" not in row, row


def test_the_checkpoint_reports_a_part_that_passes_alone_but_does_not_fit(capsys, monkeypatch):
    # were the check to let an eps buffer through, loading tinyk's weights into it fails:
    # the checkpoint says so and goes on with tinyk's RMSNorm
    monkeypatch.setattr("tinyk.learner.parts.check_parts", lambda parts, seed=0: list(parts))
    assert checkpoint({**REFERENCE, "RMSNorm": _rmsnorm_of("05.2.2:extra-state")}) is False
    out = capsys.readouterr().out
    assert "RMSNorm: NOT used, it does not fit the model: its state_dict does not fit tinyk's RMSNorm" in out
    assert "with tinyk's RMSNorm in place of yours" in out


# --- flaws the outputs alone hide: a weight without gradient, inputs changed in place, dtypes, eps --------


class DetachedWeightRMSNorm(RMSNorm):
    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        return (x32 / torch.sqrt(x32.square().mean(-1, keepdim=True) + self.eps)).to(x.dtype) * \
            self.weight.detach()


class InPlaceRMSNorm(RMSNorm):
    def forward(self, x):
        x32 = x.float()  # x itself when x is float32
        x32.mul_(torch.rsqrt(x32.square().mean(-1, keepdim=True) + self.eps))
        return x32.to(x.dtype) * self.weight


class WeightDtypeRMSNorm(RMSNorm):
    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        return (x32 * torch.rsqrt(x32.square().mean(-1, keepdim=True) + self.eps)).type_as(self.weight) * \
            self.weight


class SmallEpsRMSNorm(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)


def in_place_rope(xq, xk, cos, sin):
    def rotate(x):
        c = cos[:, None, :] if cos.ndim == 2 else cos[:, :, None, :]
        s = sin[:, None, :] if sin.ndim == 2 else sin[:, :, None, :]
        even, odd = x[..., 0::2].clone(), x[..., 1::2].clone()
        x[..., 0::2] = even * c - odd * s
        x[..., 1::2] = even * s + odd * c
        return x
    return rotate(xq), rotate(xk)


HIDDEN_FLAWS = [
    ("RMSNorm", DetachedWeightRMSNorm, r"^RMSNorm \(section 05\.2\): the weight gets no gradient: "),
    ("RMSNorm", InPlaceRMSNorm, r"^RMSNorm \(section 05\.2\): RMSNorm changed its input x in place: "),
    ("RMSNorm", WeightDtypeRMSNorm,
     r"with a float32 weight differs .*it matches the normalised x cast to the weight's dtype"),
    ("RMSNorm", SmallEpsRMSNorm, r"eps left at its default.*a default eps other than 1e-5"),
    ("apply_rope", in_place_rope,
     r"^apply_rope \(section 05\.3\): apply_rope changed its input xq in place: "),
]


@pytest.mark.parametrize("name,wrong,words", HIDDEN_FLAWS, ids=[w[1].__name__ for w in HIDDEN_FLAWS])
def test_a_flaw_the_output_hides_is_named(name, wrong, words):
    with pytest.raises(PartError, match=words):
        check_parts(**{name: wrong})
    assert check_parts(**{name: REFERENCE[name]}) == [name]


def test_hidden_flaws_are_five():
    assert len(HIDDEN_FLAWS) == 5


# --- an eps rounded to float32: 05.2.2's test names it, and check_parts by the same signal ----------------

_RMSNORM_STYLES = [  # right RMSNorms in other honest styles, beside the RIGHT table of 05.2.2's test cases
    "self.eps = eps\n        self.weight = nn.Parameter(torch.ones(dim))",
    "self.eps = float(eps)\n        self.weight = nn.Parameter(torch.ones(dim))",
]
_RMSNORM_FORWARDS = [
    "x32 = x.to(torch.promote_types(x.dtype, torch.float32))\n"
    "        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)\n"
    "        return normed.to(x.dtype) * self.weight",
    "x32 = x.double() if x.dtype == torch.float64 else x.float()\n"
    "        return (x32 / (x32 * x32).mean(-1, keepdim=True).add(self.eps).sqrt()).type_as(x) * self.weight",
]


def _right_rmsnorms() -> list[str]:
    from .exercise_cases import ex_05_2

    written = [f"import torch\nfrom torch import nn\n\n\nclass RMSNorm(nn.Module):\n"
               f"    def __init__(self, dim, eps=1e-5):\n        super().__init__()\n        {init}\n\n"
               f"    def forward(self, x):\n        {forward}\n"
               for init in _RMSNORM_STYLES for forward in _RMSNORM_FORWARDS]
    return written + ex_05_2.RIGHT["ex_05_2_2_solution"]


def test_an_eps_rounded_to_float32_is_named_and_every_right_rmsnorm_passes():
    """torch.tensor(1e-5) is float32's 1e-5, 2.5e-13 off: on a float64 x whose mean square is near eps the
    output moves by about 1e-9, named (it stayed within the float64 check's 1e-12 on x of mean square 1);
    right answers, a Python float eps, rsqrt or a division, x.pow(2) or x * x, float64 kept, still pass."""
    with pytest.raises(PartError, match=r"small float64 x .*it matches eps rounded to float32 \(a tensor, "
                                        r"torch\.tensor\(eps\)\): keep self\.eps a Python float"):
        check_parts(RMSNorm=_rmsnorm_of("05.2.2:eps-float32"))
    right = _right_rmsnorms()
    assert len(right) == 8
    for source in right:
        namespace: dict = {}
        exec(compile(source, "<right answer>", "exec"), namespace)
        assert check_parts(RMSNorm=namespace["RMSNorm"]) == ["RMSNorm"], source
    assert check_parts(RMSNorm=RMSNorm) == ["RMSNorm"]


def test_an_apply_rope_lining_the_tables_up_with_tinyks_helper_passes():
    """tinyk.reshape_for_broadcast only lines a table up with x (05.3 imports and shows it): allowed in
    check_parts as in 05.3.2's tests (the right answer of its cases)."""
    from .exercise_cases import ex_05_3

    sources = [src for src in ex_05_3.RIGHT["ex_05_3_2_solution"] if "reshape_for_broadcast" in src]
    assert len(sources) == 1
    namespace: dict = {}
    exec(compile(sources[0], "<right answer>", "exec"), namespace)
    assert check_parts({**REFERENCE, "apply_rope": namespace["apply_rope"]}) == list(PART_NAMES)


def tables_of_another_default_theta(head_dim, end, theta=100000.0):
    return rope_tables(head_dim, end, theta)


def rope_cast_to_q(xq, xk, cos, sin):
    q, k = apply_rope(xq, xk, cos, sin)
    return q.type_as(xq), k.type_as(xq)


# Wrong only where the model never looks (it passes theta; its q and k share a dtype): 05.3.1's and
# 05.3.2's tests look there, and so does the check.
UNSEEN = [
    ("rope_tables", tables_of_another_default_theta, "the default is theta=10000.0 in the signature"),
    ("apply_rope", rope_cast_to_q, "rotated k came back as torch.float32 for a torch.float64 input"),
]


@pytest.mark.parametrize("name,wrong,words", UNSEEN, ids=[w[1].__name__ for w in UNSEEN])
def test_a_flaw_the_model_never_meets_is_named(name, wrong, words):
    with pytest.raises(PartError, match=rf"^{name} \(section 05\.\d\):") as err:
        check_parts({**REFERENCE, name: wrong})
    assert words in str(err.value)


def test_unseen_flaws_are_two():
    assert len(UNSEEN) == 2
