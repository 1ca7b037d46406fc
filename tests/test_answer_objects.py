"""The learner's side of a grader's call that needs gradients (the instructors' page, grading):
each call's backward pass is kept behind a ticket until the grader asks for it."""

from __future__ import annotations

import io

import torch

from tinyk.answer_objects import Objects, serve
from tinyk.answer_wire import ARG


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
