"""A decoder made of a state dict's tensors and the learner's ten parts alone
(tinyk.learner.learners_model: the capstone's model in the learner's process while it is graded).

It gives tinyk's logits, loss and greedy tokens (a KV cache, left padding) with correct parts,
holds no module or function of tinyk's parts, runs the learner's parts (a wrong one shows), and
a part missing or of the wrong kind is named.
"""

from __future__ import annotations

import types

import pytest
import torch

import tinyk.learner.part_checks
import tinyk.model
from tests.test_parts import REFERENCE, assert_same_logits_and_loss, half_split_rope, padded_batch
from tinyk import ModelConfig, Transformer, generate
from tinyk.learner.learners_model import LearnersModel, assemble
from tinyk.learner.own_code import REFERENCES
from tinyk.learner.part_compare import PART_NAMES, PartError


@pytest.fixture(scope="module")
def base():
    torch.manual_seed(0)
    return Transformer(ModelConfig.tiny()).eval()


def _references() -> set[int]:
    """The ids of tinyk's own versions of the parts (tinyk.learner.own_code.REFERENCES) and of their code."""
    found: set[int] = set()
    for name in {n for names in REFERENCES.values() for n in names}:
        for module in (tinyk.model, tinyk.learner.part_checks):
            obj = getattr(module, name, None)
            if obj is None:
                continue
            found.add(id(obj))
            functions = [obj] if isinstance(obj, types.FunctionType) else [
                getattr(f, "__func__", f) for f in vars(obj).values()]
            found |= {id(f.__code__) for f in functions if isinstance(f, types.FunctionType)}
    return found


def test_the_learners_parts_alone_give_tinyks_logits_loss_and_tokens(base):
    model = assemble(base.config, base.state_dict(), REFERENCE)
    assert isinstance(model, LearnersModel) and isinstance(model, Transformer)
    ids, valid = padded_batch()
    assert_same_logits_and_loss(model, base, ids, valid)
    for mask in (None, valid):
        for use_cache in (True, False):
            kwargs = dict(max_new_tokens=6, temperature=0, use_cache=use_cache)
            assert torch.equal(generate(model, ids, mask, **kwargs), generate(base, ids, mask, **kwargs))


def test_the_model_holds_the_tensors_and_no_part_of_tinyks(base):
    state = base.state_dict()
    model = assemble(base.config, state, REFERENCE)
    assert model.state_dict().keys() == state.keys()
    assert all(model.state_dict()[k].data_ptr() == t.data_ptr() for k, t in state.items())  # shared
    assert model.output.weight is model.tok_embeddings.weight  # tied, as the base's
    assert isinstance(model.layers[0].feed_forward, REFERENCE["SwiGLU"])
    assert isinstance(model.norm, REFERENCE["RMSNorm"])
    held = [*model.modules(), *(type(m) for m in model.modules())]
    held += [f for m in model.modules() for f in vars(m).values() if callable(f)]
    codes = [getattr(getattr(f, "__func__", f), "__code__", None) for f in held]
    references = _references()
    assert len(references) > 20
    assert not [h for h in [*held, *codes] if id(h) in references]
    assert {type(m).__module__ for m in model.modules()} >= {"tinyk.learner.learners_model"}
    assert not {type(m).__module__ for m in model.modules()} & {"tinyk.model", "tinyk.learner.part_checks"}


def test_the_learners_parts_run_in_it(base):
    ids, valid = padded_batch()
    wrong = assemble(base.config, base.state_dict(), {**REFERENCE, "apply_rope": half_split_rope})
    with torch.no_grad():
        gap = (wrong(ids, valid).logits - base(ids, valid).logits)[valid].abs().max()
    assert gap > 1e-4


@pytest.mark.parametrize("case", ["missing", "not_a_class", "stub"])
def test_a_part_missing_wrong_in_kind_or_a_stub_is_named(base, case):
    def stub(valid):
        raise NotImplementedError

    parts = {"missing": {n: p for n, p in REFERENCE.items() if n != "token_positions"},
             "not_a_class": {**REFERENCE, "SwiGLU": REFERENCE["decoder_block"]},
             "stub": {**REFERENCE, "token_positions": stub}}[case]
    assert len(parts) >= len(PART_NAMES) - 1
    model = None
    with pytest.raises(PartError) as raised:
        model = assemble(base.config, base.state_dict(), parts)
        ids, valid = padded_batch()
        model(ids, valid)
    assert raised.value.part == {"not_a_class": "SwiGLU"}.get(case, "token_positions"), raised.value
    assert (model is None) == (case != "stub")
