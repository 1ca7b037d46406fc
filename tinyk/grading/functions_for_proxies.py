"""The course's functions a test cell calls, for learner's objects that live over there
(course: the instructors' page, grading; 05.10's capstone).

Part of the verdict outside the student's process (:mod:`tinyk.grading.verdict`). While a test cell
runs on the grader's side, :func:`swapped` gives some of the course's modules functions
that know about :class:`~tinyk.grading.proxies.Remote`:

- ``tinyk.learner.own_code.watched`` (:func:`watched_anywhere`): the own-work watch runs where the
  learner's part runs, in their process;
- ``tinyk.learner.parts.build_model`` and ``tinyk.learner.divergence.first_divergence``
  (:func:`model_functions`): all ten of
  the learner's parts put into a prepared model (:data:`tinyk.grading.learner_process.PREPARED`) give an
  :class:`AssembledThere`: over there, the model is made of the weights loaded before the
  answer ran and those parts alone (:mod:`tinyk.learner.learners_model`), and its forward pass is
  one call, not one call per part and layer.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import torch

from tinyk.grading import learner_process as answers
from tinyk.grading.proxies import AnswerFailed, Remote, handle, request_args
from tinyk.learner.part_compare import PART_NAMES

__all__ = ["AssembledThere", "model_functions", "swapped", "watched_anywhere"]
GRADER_TRANSPORT = True  # the grader's side: never the learner's code (tinyk.learner.own_code)


@contextlib.contextmanager
def swapped(module: Any, **functions: Any) -> Iterator[None]:
    """While a test runs here, ``module``'s functions named in ``functions`` are those (a test
    cell imports them from the module then): ``tinyk.learner.own_code.watched`` that also takes
    remotes (:func:`watched_anywhere`), ``tinyk.learner.parts``' ``build_model`` and
    ``tinyk.learner.divergence``'s ``first_divergence`` that know of models assembled over there
    (:func:`model_functions`)."""
    originals = {name: getattr(module, name) for name in functions}
    for name, function in functions.items():
        setattr(module, name, function)
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(module, name, function)


def watched_anywhere(part: str, fn: Any, forbid: tuple = ()) -> Any:
    """:func:`tinyk.learner.own_code.watched`, also for a learner's object that lives in their process
    (watched there)."""
    if isinstance(fn, Remote):
        server, number = handle(fn)
        return server.ask(("watch", number, part, list(forbid)))
    from tinyk.learner.own_code import watched

    return watched(part, fn, forbid)


class AssembledThere(torch.nn.Module):
    """What ``build_model(base, parts)`` gives a test here when the parts are the learner's
    and ``base`` a model of :data:`tinyk.grading.learner_process.PREPARED`: the model assembled over there,
    from the same weights, whose forward passes run there on this side's inputs; the logits
    and the loss come back as plain tensors. ``config`` and ``parameters()`` are ``base``'s
    (for :func:`tinyk.generate`). A :class:`tinyk.KVCache` handed to it stands for one of
    its own over there, made at its first use; this side's copy only counts the tokens.
    :meth:`here` builds the same parts into a model on this side instead (each part's call
    crossing), for :func:`tinyk.learner.divergence.first_divergence`'s layer-by-layer walk."""

    def __init__(self, there: Remote, base: torch.nn.Module, parts: dict[str, Any], build: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_assembled", (there, base, parts, build))  # not a submodule
        self.config = base.config
        self._caches: dict[int, tuple[Any, Remote]] = {}

    def parameters(self, recurse: bool = True) -> Any:
        """``base``'s parameters (the same weights as the model over there)."""
        return self._assembled[1].parameters(recurse)

    def forward(self, input_ids: torch.Tensor, *args: Any, cache: Any = None, **options: Any) -> Any:
        """The model's forward pass over there: its logits and loss, checked to be tensors."""
        from tinyk.model import CausalLMOutput

        there = self._assembled[0]
        if cache is not None and id(cache) not in self._caches:
            server, number = handle(there)
            made = server.ask(("cache", number, cache.keys[0].shape[0], cache.max_len))
            self._caches[id(cache)] = (cache, made)  # the cache kept alive: its id stays its own
        out = there(input_ids, *args, cache=None if cache is None else self._caches[id(cache)][1], **options)
        logits, loss = out.logits, out.loss
        if type(logits) is not torch.Tensor or not (loss is None or type(loss) is torch.Tensor):
            raise AnswerFailed("the model assembled from the learner's parts returned logits or a "
                               "loss that are not tensors")
        if cache is not None:
            cache.advance(input_ids.shape[1])
        return CausalLMOutput(logits, loss)

    def here(self) -> torch.nn.Module:
        """The same parts built into ``base`` on this side."""
        _, base, parts, build = self._assembled
        return build(base, parts)


def _prepared(base: Any) -> str | None:
    """The name in :data:`tinyk.grading.learner_process.PREPARED` of the model ``base`` is (loaded here),
    if any."""
    for name, (where, _) in answers.PREPARED.items():
        module, function = where.rsplit(".", 1)
        load = getattr(importlib.import_module(module), function)
        if load.cache_info().currsize and base is load()[0]:
            return name
    return None


def model_functions(parts: Any, divergence: Any) -> dict[str, Any]:
    """``build_model`` of ``parts`` (:mod:`tinyk.learner.parts`) that assembles a prepared model
    with the learner's parts over there (:class:`AssembledThere`), and ``first_divergence`` of
    ``divergence`` (:mod:`tinyk.learner.divergence`) that walks such a model built here; each as
    the module's own for anything else."""
    build, diverge = parts.build_model, divergence.first_divergence

    def build_model(base: Any, parts: Any = None, /, **more: Any) -> Any:
        given = {**(parts or {}), **more}
        there = next((p for p in given.values() if isinstance(p, Remote)), None)
        name = _prepared(base) if there is not None and set(PART_NAMES) <= set(given) else None
        if there is None or name is None:  # any part missing is tinyk's own: built here
            return build(base, parts, **more)
        server = handle(there)[0]
        model = server.ask(("assemble", name, request_args(given, [], server)))
        if not isinstance(model, Remote):
            raise AnswerFailed("the learner's process sent no model for the assembled parts")
        return AssembledThere(model, base, given, build)

    def first_divergence(model: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(model, AssembledThere):
            model = model.here()
        return diverge(model, *args, **kwargs)

    return {"build_model": build_model, "first_divergence": first_divergence}
