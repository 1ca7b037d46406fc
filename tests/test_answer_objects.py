"""The learner's side of a grader's call (the instructors' page, grading): its arguments, walked
by the wire's one walk on both sides, and a call that needs gradients, whose backward pass is
kept behind a ticket until the grader asks for it."""

from __future__ import annotations

import functools
import io

import pytest
import torch

from tinyk.grading.answer_wire import ARG, CALLBACK, REF, rebuild
from tinyk.grading.learner_objects import Objects, serve
from tinyk.grading.proxies import Remote, detached_args, request_args


def _square(x: torch.Tensor) -> torch.Tensor:
    return x**2


def _call(objects: Objects, number: int, x: float) -> int:
    """A call of item ``number`` on ``x`` that needs x's gradient: its ticket."""
    status, (tag, ticket, value) = serve(objects, ("call", number, [(ARG, 0)], {},
                                                   [(torch.tensor([x]), True)]))
    assert (status, tag, value.item()) == ("ok", "grad", x**2)
    return ticket


def _backward(objects: Objects, ticket: int) -> float:
    status, (tag, [(kind, grad)]) = serve(objects, ("backward", ticket, torch.ones(1)))
    assert (status, tag, kind) == ("ok", "l", "t")
    return grad.item()


def test_a_call_after_a_backward_pass_does_not_take_a_pending_ticket():
    """Two calls wait for their backward passes; the first is served, then a third call
    comes: each ticket still gives its own call's gradient (d(x²)/dx = 2x), the second's
    included, which a ticket numbered by the count of pending ones gave to the third."""
    objects = Objects(io.BytesIO(), io.BytesIO())
    number = objects.handle(_square)[1]
    first, second = _call(objects, number, 1.0), _call(objects, number, 2.0)
    assert _backward(objects, first) == 2.0
    third = _call(objects, number, 3.0)
    assert _backward(objects, second) == 4.0
    assert _backward(objects, third) == 6.0
    assert len({first, second, third}) == 3 and objects.tickets == {}


def test_one_walk_rebuilds_lists_tuples_and_dicts_and_hands_every_other_value_to_its_leaf():
    """:func:`tinyk.grading.answer_wire.rebuild`: each container of its own type, a dict's keys as they
    are, a marker pair a leaf (never walked into), past 30 levels a ValueError."""
    seen: list = []
    value = [1, (2, {"k": [3]}), (ARG, 0), {"a": (REF, 5)}]
    out = rebuild(value, lambda item: seen.append(item) or ("leaf", item))
    assert seen == [1, 2, 3, (ARG, 0), (REF, 5)]
    assert out == [("leaf", 1), (("leaf", 2), {"k": [("leaf", 3)]}), ("leaf", (ARG, 0)),
                   {"a": ("leaf", (REF, 5))}]
    assert type(out[1]) is tuple and type(out[1][1]) is dict and type(out[1][1]["k"]) is list
    nested = functools.reduce(lambda inner, _: [inner], range(30), 0)  # 30 lists deep: still walked
    assert rebuild(nested, lambda item: item + 1) == functools.reduce(lambda inner, _: [inner], range(30), 1)
    with pytest.raises(ValueError, match="arguments nested more than 30 levels deep"):
        rebuild([nested], lambda item: item)


class _Server:
    """What a Remote needs of its server, for arguments made ready to send and never sent."""

    def __init__(self) -> None:
        self.callbacks: list = []

    def ask(self, request: tuple) -> None:
        raise AssertionError(f"nothing is sent here: {request!r}")


def test_the_graders_arguments_arrive_as_the_learners_objects_tensors_and_callbacks():
    """The grader's side makes a call's arguments ready (a learner's object as a reference, a
    tensor as its place, a test's function as a callback) and the learner's side puts them
    back, each through the same walk."""
    objects = Objects(io.BytesIO(), io.BytesIO())
    number = objects.handle(_square)[1]
    server, tensors = _Server(), []
    x = torch.ones(2, requires_grad=True)
    remote = Remote(server, number, "function", False, True, False)
    sent = request_args({"f": remote, "xs": [x, 3], "cb": len}, tensors, server)
    assert sent == {"f": (REF, number), "xs": [(ARG, 0), 3], "cb": (CALLBACK, 0)}
    assert len(tensors) == 1 and tensors[0] is x and server.callbacks == [len]
    back = objects.decode(detached_args(sent, tensors))
    assert back["f"] is _square and back["xs"][1] == 3 and callable(back["cb"])
    assert torch.equal(back["xs"][0], x.detach()) and not back["xs"][0].requires_grad


def _nested(levels: int) -> list:
    """``levels`` lists inside one another around a 1."""
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value  # type: ignore[return-value]


def test_each_walk_over_a_reply_keeps_its_own_bound():
    """The walks over a reply, each with its own bound (answer_wire's docstring): the
    learner's encoder refuses past ENCODE_DEPTH levels, and its deepest value, with a tensor and
    a dict, passes the grader's count (check_reply) and decodes back as it was; the decoder
    refuses past DECODE_DEPTH tagged levels; the count refuses past DEPTH_LIMIT levels whatever
    the tags, so nothing deeper reaches the decoder."""
    from tinyk.grading import answer_wire
    from tinyk.grading.proxies import AnswerFailed, decode

    objects = Objects(io.BytesIO(), io.BytesIO())
    deepest = _nested(answer_wire.ENCODE_DEPTH - 1)  # one level inside the list below
    value = [{"x": torch.arange(3.0), 4: (True, None, "s")}, deepest]
    with pytest.raises(ValueError, match=f"nested more than {answer_wire.ENCODE_DEPTH} levels deep"):
        objects.encode(_nested(answer_wire.ENCODE_DEPTH + 1))
    sent = ("ok", objects.encode(_nested(answer_wire.ENCODE_DEPTH)))
    answer_wire.check_reply(sent)
    assert decode(None, sent[1]) == _nested(answer_wire.ENCODE_DEPTH)
    back = decode(None, objects.encode(value))
    assert back[0]["x"].tolist() == [0.0, 1.0, 2.0] and back[0][4] == (True, None, "s") and back[1] == deepest

    tagged: tuple = ("v", 1)
    for _ in range(answer_wire.DECODE_DEPTH):
        tagged = ("l", [tagged])
    assert decode(None, tagged) == _nested(answer_wire.DECODE_DEPTH)
    with pytest.raises(AnswerFailed, match="malformed value"):
        decode(None, ("l", [tagged]))

    for _ in range(answer_wire.DEPTH_LIMIT // 2):  # two levels for each tag, 64 past DECODE_DEPTH's
        tagged = ("l", [tagged])
    with pytest.raises(answer_wire.TooLarge, match="over the grader's bound of 64 levels"):
        answer_wire.check_reply(("ok", tagged))


def test_every_walk_over_a_tree_that_crosses_is_the_one_walker_with_its_own_bound(monkeypatch):
    """The count (check_reply), the decoder, the encoder and the arguments' walk (rebuild) each
    go through answer_wire.walk, with its own bound, and no walk of their own: a tree a million
    levels deep, which a recursion of theirs would meet as a RecursionError, is refused at
    each one's bound, by its own exception."""
    from tinyk.grading import answer_wire, learner_objects
    from tinyk.grading.proxies import AnswerFailed, decode

    bounds: list[int] = []
    real = answer_wire.walk

    def spy(tree: object, visit: object, limit: int, too_deep: object) -> object:
        bounds.append(limit)
        return real(tree, visit, limit, too_deep)

    monkeypatch.setattr(answer_wire, "walk", spy)
    monkeypatch.setattr(learner_objects, "walk", spy)
    deep: object = 1
    tagged: object = ("v", 1)
    for _ in range(1_000_000):
        deep, tagged = [deep], ("l", [tagged])
    with pytest.raises(answer_wire.TooLarge, match="nested: 65 levels, over the grader's bound of 64 levels"):
        answer_wire.check_reply(deep)
    with pytest.raises(AnswerFailed, match="malformed value"):
        decode(None, tagged)
    with pytest.raises(ValueError, match=f"nested more than {answer_wire.ENCODE_DEPTH} levels deep"):
        Objects(io.BytesIO(), io.BytesIO()).encode(deep)
    with pytest.raises(ValueError, match=f"nested more than {answer_wire.ARGS_DEPTH} levels deep"):
        rebuild(deep, lambda item: item)
    assert bounds == [answer_wire.DEPTH_LIMIT - 1, answer_wire.DECODE_DEPTH, answer_wire.ENCODE_DEPTH,
                      answer_wire.ARGS_DEPTH]
