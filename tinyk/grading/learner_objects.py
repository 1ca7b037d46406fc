"""The objects of one run of a notebook in the learner's process, and the grader's requests on them
(course: the instructors' page, grading).

:class:`Objects` keeps the notebook's values the grader asked for and what came of its
requests, each behind a number (a handle); :func:`serve` answers one request: a name's attribute, a
call (with its backward pass when an input needs its gradient), an own-work watch, a model
assembled from the weights prepared for the run and the learner's parts alone
(:func:`tinyk.learner.learners_model.assemble`), an empty KV cache for it. Run in
:mod:`tinyk.grading.learner_process`'
child of a run, in the grading sandbox.
"""

from __future__ import annotations

import pickle
from typing import Any, BinaryIO

from tinyk.grading.answer_wire import (
    ARG,
    CALLBACK,
    ENCODE_DEPTH,
    REF,
    Down,
    error,
    marked,
    read_frame,
    rebuild,
    reply,
    walk,
)

__all__ = ["Objects", "serve"]


def _too_deep(depth: int) -> ValueError:
    return ValueError(f"the answer's value is nested more than {ENCODE_DEPTH} levels deep")


class Objects:
    """The objects behind the handles of one run, by number."""

    def __init__(self, requests: BinaryIO, out: BinaryIO) -> None:
        self.items: list[Any] = []
        self.tickets: dict[int, tuple[list[Any], Any]] = {}  # pending backward passes, by number
        self.issued = 0  # tickets numbered so far: a number is never given twice
        self.models: dict[str, Any] = {}  # (config, state dict) prepared for the run (PREPARED), by name
        self.requests, self.out = requests, out

    def handle(self, value: Any) -> tuple:
        import torch

        number = next((n for n, item in enumerate(self.items) if item is value), len(self.items))
        if number == len(self.items):
            self.items.append(value)
        module = getattr(value, "__module__", None)
        is_module = isinstance(value, torch.nn.Module) or (isinstance(value, type)
                                                           and issubclass(value, torch.nn.Module))
        torch_class = next((c.__name__ for c in type(value).__mro__  # e.g. nn.Linear, for isinstance
                            if c.__module__.startswith("torch.nn.modules")), None)
        return ("h", number, type(value).__name__, is_module, callable(value),
                isinstance(value, type), module if type(module) is str else None, torch_class)

    def encode(self, value: Any) -> tuple:
        """``value`` as a tree of tagged plain data; anything else becomes a handle (the format
        :func:`tinyk.grading.proxies.decode` reads; the walk and its bound:
        :mod:`tinyk.grading.answer_wire`)."""
        return walk(value, self._encode_one, ENCODE_DEPTH, _too_deep)

    def _encode_one(self, value: Any, down: Down) -> tuple:
        """One value of :meth:`encode`'s, the values inside it by ``down``."""
        import torch

        if value is None or type(value) in (bool, int, float, str):
            return ("v", value)
        if isinstance(value, torch.nn.Parameter):
            grad = None if value.grad is None else value.grad.detach().clone()
            return ("p", value.detach().clone(), grad, value.requires_grad)
        if type(value) is torch.Tensor:
            return ("t", value.detach().clone())
        if isinstance(value, torch.dtype):
            return ("dtype", str(value))
        if type(value) is torch.Size:
            return ("size", [int(n) for n in value])
        if type(value) is list or isinstance(value, tuple):  # a named tuple as a plain one
            return ("l" if type(value) is list else "u", [down(v) for v in value])
        if isinstance(value, dict) and all(type(k) in (str, int) for k in value):
            return ("d", [(k, down(v)) for k, v in value.items()])
        return self.handle(value)

    def decode(self, value: Any) -> Any:
        """A request's arguments, with the handles and callbacks they name put back
        (:func:`tinyk.grading.answer_wire.rebuild`)."""

        def leaf(item: Any) -> Any:
            if marked(item, REF):
                return self.items[item[1]]
            return self.callback(item[1]) if marked(item, CALLBACK) else item

        return rebuild(value, leaf)

    def callback(self, number: int) -> Any:
        """A function that asks the grader to run its function ``number`` on these arguments,
        serving the grader's own requests meanwhile (the function may call the learner's code)."""

        from tinyk.learner.own_code import trusted

        def call(*args: Any, **kwargs: Any) -> Any:
            reply(self.out, ("cb", number, self.encode(list(args)), self.encode(kwargs)))
            while (frame := read_frame(self.requests)) is not None:
                request = pickle.loads(frame)
                if request[0] == "cbret":
                    return self.decode(request[1])
                if request[0] == "cberr":
                    raise RuntimeError(f"the test's own function failed: {request[1]}")
                try:
                    answer = serve(self, request)
                except BaseException as exc:
                    answer = error(exc)
                reply(self.out, answer)
            raise EOFError("the grader has gone")

        return trusted(call)  # the test's code: an own-work watch looks through it


def _call(objects: Objects, request: tuple) -> tuple:
    import torch

    _, number, args, kwargs, grad = request
    target = objects.items[number]
    args, kwargs = objects.decode(args), objects.decode(kwargs)
    if not grad:
        return ("ok", objects.encode(target(*args, **kwargs)))
    tensors = [t.detach().clone().requires_grad_(needs) for t, needs in grad]

    def put(value: Any) -> Any:  # the tensors that need their gradients, in their places
        return rebuild(value, lambda item: tensors[item[1]] if marked(item, ARG) else item)

    result = target(*put(args), **put(kwargs))
    if type(result) is not torch.Tensor:
        raise TypeError(f"returned {type(result).__name__}, not a torch.Tensor, for an input that needs "
                        f"its gradient")
    ticket, objects.issued = objects.issued, objects.issued + 1
    objects.tickets[ticket] = (tensors, result)
    return ("ok", ("grad", ticket, result.detach().clone()))


def serve(objects: Objects, request: tuple) -> tuple:
    op = request[0]
    if op == "get":
        return ("ok", objects.encode(getattr(objects.items[request[1]], request[2])))
    if op == "call":
        return _call(objects, request)
    if op == "backward":
        import torch

        tensors, result = objects.tickets.pop(request[1])
        torch.autograd.backward(result, request[2])
        return ("ok", objects.encode([t.grad for t in tensors]))
    if op == "watch":
        from tinyk.learner.own_code import watched

        return ("ok", objects.encode(watched(request[2], objects.items[request[1]], tuple(request[3]))))
    if op == "assemble":  # the prepared weights and the learner's parts alone, in a model here
        from tinyk.learner.learners_model import assemble

        weights = objects.models.get(request[1])
        if weights is None:
            raise ValueError(f"no model {request[1]!r} was prepared for this run")
        return ("ok", objects.encode(assemble(*weights, objects.decode(request[2]))))
    if op == "cache":  # an empty KV cache for a model assembled here: (model, batch, max_len)
        from tinyk.generation import KVCache

        model = objects.items[request[1]]
        dtype = next(model.parameters()).dtype
        return ("ok", objects.encode(KVCache(model.config, int(request[2]), int(request[3]), dtype)))
    raise ValueError(f"unknown request {op!r}")
