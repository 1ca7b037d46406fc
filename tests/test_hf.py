"""``tinyk`` against Hugging Face's Llama: same weights, same logits, same loss."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.optional import need
from tinyk import ModelConfig, Transformer, count_parameters
from tinyk.interop.hf import from_hf, to_hf

need("transformers")


@pytest.fixture(scope="session")
def pair():
    torch.manual_seed(0)
    config = ModelConfig(dim=64, n_layers=3, n_heads=8, n_kv_heads=2, vocab_size=97,
                         max_seq_len=64, norm_eps=1e-5, rope_theta=10000.0)
    model = Transformer(config).eval()
    with torch.no_grad():  # non-trivial norm gains, so a swapped norm would show
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
    return model, to_hf(model)


def test_logits_and_loss_equal_hugging_face_llama(pair):
    model, hf = pair
    ids = torch.randint(0, 97, (4, 40), generator=torch.Generator().manual_seed(1))
    ours = model(input_ids=ids, labels=ids)
    theirs = hf(input_ids=ids, labels=ids)
    assert (ours.logits - theirs.logits).abs().max() < 1e-5
    assert abs(ours.loss.item() - theirs.loss.item()) < 1e-5
    assert count_parameters(model) == sum(p.numel() for p in hf.parameters())


@pytest.mark.parametrize("keep", [0, 1, 3, torch.tensor([0, 5, 39]),
                                  torch.tensor([[2, 7], [39, 0], [1, 1], [-1, 4]])],
                         ids=["all", "last", "last-3", "same-positions", "row-by-row"])
def test_logits_to_keep_keeps_the_positions_hugging_face_keeps(pair, keep):
    """``logits_to_keep`` in each of Hugging Face's integer forms keeps the same logits."""
    model, hf = pair
    ids = torch.randint(0, 97, (4, 40), generator=torch.Generator().manual_seed(3))
    ours = model(ids, logits_to_keep=keep).logits
    theirs = hf(input_ids=ids, logits_to_keep=keep).logits
    assert ours.shape == theirs.shape and ours.shape[0] == 4
    assert (ours - theirs).abs().max() < 1e-5


def test_padded_batch_equals_hugging_face_with_its_position_ids(pair):
    model, hf = pair
    ids = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[0, :6] = 0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    ours = model(ids, mask).logits
    theirs = hf(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    assert (ours - theirs)[mask.bool()].abs().max() < 1e-5


def test_round_trip_is_exact(pair):
    model, hf = pair
    back = from_hf(hf)
    # the width comes back explicit (a Llama config has no multiple_of rule)
    assert back.config == dataclasses.replace(model.config, hidden_dim=model.config.mlp_hidden_dim)
    ours, theirs = model.state_dict(), back.state_dict()
    assert list(ours) == list(theirs) != []
    for name, tensor in ours.items():
        assert torch.equal(tensor, theirs[name]), name


def test_unsupported_llama_is_refused():
    from transformers import LlamaConfig, LlamaForCausalLM

    untied = LlamaForCausalLM(LlamaConfig(hidden_size=32, num_attention_heads=4,
                                          num_key_value_heads=2, intermediate_size=64,
                                          num_hidden_layers=1, vocab_size=10,
                                          tie_word_embeddings=False))
    with pytest.raises(ValueError, match="tie_word_embeddings"):
        from_hf(untied)
