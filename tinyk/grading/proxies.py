"""The learner's objects on the grader's side (course: the instructors' page, grading).

Part of the verdict outside the student's process (:mod:`tinyk.grading.verdict`). A value the
learner's process sends back arrives as a tagged tree of plain data, which :func:`decode`
turns into values of this process, each of exactly its type: numbers, strings, lists and
dicts as they are, tensors rebuilt from bytes, and a function, a class or a module as a
:class:`Remote`, whose calls run over there. :func:`request_args` and :func:`detached_args`
go the other way, making a call's arguments ready to send.

Nothing here trusts a type the learner chose: a tensor subclass, a ``float`` subclass or an
object that lies about equality never crosses, and anything malformed raises
:class:`AnswerFailed`.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import torch

from tinyk.grading import answer_wire

__all__ = ["AnswerFailed", "Remote", "Server", "decode", "detached_args", "handle", "request_args"]
GRADER_TRANSPORT = True  # the grader's side: never the learner's code (tinyk.learner.own_code)


class Server(Protocol):
    """What a :class:`Remote` needs of the server that holds its object
    (:class:`tinyk.grading.answer_server.AnswerServer`): a request answered, and the test's functions
    that the learner's process may call back."""

    callbacks: list[Any]

    def ask(self, request: tuple) -> Any: ...


_PLAIN = (type(None), bool, int, float, str)
_NAMES = ("__name__", "__qualname__", "__doc__")  # the only dunder attributes asked of a learner's object


class AnswerFailed(Exception):
    """The learner's process failed to answer (it exited, timed out, or sent what is not data);
    ``ended``: its exercise's process is gone, nothing more to tell it."""

    def __init__(self, message: str, ended: bool = False) -> None:
        super().__init__(message)
        self.ended = ended


def decode(server: Server, node: Any) -> Any:
    """A reply's tagged tree as values of this process, each of exactly its type; a learner's
    object that stays over there as a :class:`Remote` served by ``server``. Run only on a tree
    :func:`tinyk.grading.answer_wire.check_reply` has bounded (the walk and its bound: that
    module's docstring)."""
    visit = functools.partial(_decode_one, server)
    return answer_wire.walk(node, visit, answer_wire.DECODE_DEPTH, _malformed)


def _malformed(depth: int = 0) -> AnswerFailed:
    return AnswerFailed("the answer's process sent a malformed value")


def _decode_one(server: Server, node: Any, down: answer_wire.Down) -> Any:
    """One tagged value of :func:`decode`'s, the values inside it by ``down``."""
    if type(node) is not tuple or not node or type(node[0]) is not str:
        raise _malformed()
    tag, rest = node[0], node[1:]
    if tag == "v" and type(rest[0]) in _PLAIN:
        return rest[0]
    if tag == "t" and type(rest[0]) is torch.Tensor:
        return rest[0]
    if tag == "p" and type(rest[0]) is torch.Tensor and type(rest[2]) is bool:
        param = torch.nn.Parameter(rest[0], requires_grad=rest[2])
        if type(rest[1]) is torch.Tensor:
            param.grad = rest[1]
        return param
    if tag == "dtype" and type(rest[0]) is str and isinstance(getattr(torch, rest[0][6:], None), torch.dtype):
        return getattr(torch, rest[0][6:])
    if tag == "size" and type(rest[0]) is list and all(type(n) is int for n in rest[0]):
        return torch.Size(rest[0])
    if tag in ("l", "u") and type(rest[0]) is list:
        items = [down(v) for v in rest[0]]
        return items if tag == "l" else tuple(items)
    if tag == "d" and type(rest[0]) is list:
        return {_key(k): down(v) for k, v in _pairs(rest[0])}
    if tag == "h" and len(rest) == 7 and type(rest[0]) is int and type(rest[1]) is str:
        return _remote(server, rest)
    if tag == "grad" and len(rest) == 2 and type(rest[0]) is int and type(rest[1]) is torch.Tensor:
        return node
    raise AnswerFailed(f"the answer's process sent a value tagged {tag!r} that is not plain data")


def _remote(server: Server, rest: tuple) -> Remote:
    """A handle's fields (number, kind, is a module, callable, a class, where it was defined,
    its torch class) as a :class:`Remote`."""
    torch_class = getattr(torch.nn, rest[6], None) if type(rest[6]) is str else None
    if not (isinstance(torch_class, type) and issubclass(torch_class, torch.nn.Module)):
        torch_class = torch.nn.Module
    remote = Remote(server, rest[0], rest[1], bool(rest[2]), bool(rest[3]), bool(rest[4]), torch_class)
    if type(rest[5]) is str:  # where the learner's object says it was defined (own work, checked there)
        object.__setattr__(remote, "__module__", rest[5])
    return remote


def _pairs(items: list) -> list:
    if not all(type(p) is tuple and len(p) == 2 for p in items):
        raise AnswerFailed("the answer's process sent a malformed dict")
    return items


def _key(key: Any) -> str | int:
    if type(key) not in (str, int):
        raise AnswerFailed("the answer's process sent a dict key that is not a str or an int")
    return key


class Remote:
    """An object of the learner's that stays in their process: a function, a class, a module.

    Calling it, or a method of it, runs there on this side's arguments; an attribute comes
    back as data (a parameter as a copy) or as another ``Remote``. ``isinstance(x,
    torch.nn.Module)`` holds for a remote module, so that test cells run unchanged.
    """

    def __init__(self, server: Server, number: int, kind: str, module: bool, is_callable: bool,
                 is_class: bool, torch_class: type = torch.nn.Module) -> None:
        object.__setattr__(self, "_remote",
                           (server, number, kind, module, is_callable, is_class, torch_class))

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        if self._remote[5]:
            return type
        return self._remote[6] if self._remote[3] else Remote  # e.g. nn.Linear for a learner's nn.Linear

    @property
    def __bases__(self) -> tuple[type, ...]:
        """A learner's class derived from ``nn.Module`` passes ``issubclass(x, nn.Module)``."""
        if not self._remote[5]:
            raise AttributeError("__bases__")
        return (torch.nn.Module,) if self._remote[3] else (object,)

    def __repr__(self) -> str:
        return f"<the learner's {self._remote[2]}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _NAMES:
            raise AttributeError(name)
        server, number = self._remote[:2]
        return _transport(server.ask, ("get", number, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"the learner's {self._remote[2]} lives in their process: set {name} through "
                        f"a method of theirs (e.g. load_state_dict), not from the test")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _transport(self._call, args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        server, number = self._remote[:2]
        needs: list = []
        args, kwargs = request_args(args, needs, server), request_args(kwargs, needs, server)
        if needs and torch.is_grad_enabled() and any(t.requires_grad for t in needs):
            return _RemoteCall.apply(self, args, kwargs, *needs)
        return server.ask(("call", number, detached_args(args, needs), detached_args(kwargs, needs), None))


def handle(remote: Remote) -> tuple[Server, int]:
    """The server that holds ``remote`` and its number there. A function, not an attribute:
    every attribute of a :class:`Remote` is the learner's object's own."""
    server, number = object.__getattribute__(remote, "_remote")[:2]
    return server, number


def _transport(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` as the course's transport, not the learner's code: an own-work watch on
    this side (:mod:`tinyk.learner.own_code`) looks through it (the learner's code is watched where it
    runs)."""
    from tinyk.learner.own_code import trusted

    return trusted(fn)(*args)


def request_args(value: Any, tensors: list, server: Server) -> Any:
    """``value`` ready to send (:func:`tinyk.grading.answer_wire.rebuild`): handles as references,
    tensors (appended to ``tensors``) as their places, a module by value, any other function
    of the test's as a callback of ``server``'s that runs on this side."""

    def leaf(item: Any) -> Any:
        if isinstance(item, Remote):
            return (answer_wire.REF, handle(item)[1])
        if type(item) is torch.Tensor or isinstance(item, torch.nn.Parameter):
            tensors.append(item)
            return (answer_wire.ARG, len(tensors) - 1)
        if callable(item) and not isinstance(item, type | torch.nn.Module):
            server.callbacks.append(item)
            return (answer_wire.CALLBACK, len(server.callbacks) - 1)
        return item

    return answer_wire.rebuild(value, leaf)


def detached_args(value: Any, tensors: list) -> Any:
    """:func:`request_args`' ``value`` with its tensors put back in place, detached (a call that
    needs no gradient sends them as they are)."""
    return answer_wire.rebuild(value, lambda item: tensors[item[1]].detach()
                               if answer_wire.marked(item, answer_wire.ARG) else item)


class _RemoteCall(torch.autograd.Function):
    """A call into the learner's process inside this side's autograd graph: the forward runs
    there, and so does the backward (their autograd), sending the input gradients back."""

    @staticmethod
    def forward(ctx: Any, remote: Remote, args: Any, kwargs: Any, *tensors: torch.Tensor) -> torch.Tensor:
        server, number = handle(remote)
        grad = [(t.detach(), bool(t.requires_grad)) for t in tensors]
        reply = server.ask(("call", number, args, kwargs, grad))
        ctx.server, ctx.ticket = server, reply[1]
        return reply[2]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        grads = ctx.server.ask(("backward", ctx.ticket, grad))
        return (None, None, None, *grads)
