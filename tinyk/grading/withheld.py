"""The stand-ins of the parts an exercise asks for, in the process that runs the learner's
notebook under the grader (course: the instructors' page, grading; :mod:`tinyk.grading.learner_process`).

:func:`withhold` puts a :class:`Withheld` in place of the package's own versions of a run's
parts in every loaded ``tinyk`` module and lets the collector free them, so no class, function
or code object of theirs is left in that process. Using a stand-in, or reading it as a function
(``inspect.getsource``, ``getfile``, ``getmodule``, ``__code__``, ...), raises
:class:`WithheldPart` and sets :data:`TOUCHED`, so that the grader judges an exercise that
then fails again in a run that withholds only its own parts (:mod:`tinyk.grading.verdict`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["TOUCHED", "Withheld", "WithheldPart", "withhold"]


class Withheld:
    """What stands for a part of the package that an exercise asks the learner to write, in the
    process that runs their notebook: importing it works (so that a setup cell's ``from tinyk
    import ...`` binds every other name), using it raises :class:`WithheldPart` with a message that
    names the part. It holds no code of the part."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _refuse(self) -> WithheldPart:
        TOUCHED[0] = True
        return WithheldPart(f"tinyk's {self._name} is withheld while this notebook is graded (an "
                            f"exercise asks you to write it): the grader runs your own code only")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse()

    def __getattr__(self, attr: str) -> Any:
        if attr not in _INTROSPECTED and attr.startswith(("__", "_repr_", "_ipython")):
            raise AttributeError(attr)  # IPython's display and Python's protocols ask for these
        raise self._refuse()

    def __mro_entries__(self, bases: tuple) -> tuple:  # ``class Mine(RMSNorm)``
        raise self._refuse()

    def __instancecheck__(self, instance: Any) -> bool:  # ``isinstance(x, MLP)``
        raise self._refuse()

    def __subclasscheck__(self, subclass: Any) -> bool:
        raise self._refuse()

    def __repr__(self) -> str:
        return f"<tinyk's {self._name}, withheld while this notebook is graded>"


# What reading a function or a class asks for (``inspect.getsource``, ``getsourcelines`` and
# ``signature`` ask for ``__wrapped__`` first): asking a stand-in is using the part.
_INTROSPECTED = frozenset({"__code__", "__wrapped__", "__func__", "__self__", "__globals__", "__closure__",
                           "__defaults__", "__kwdefaults__", "__signature__", "__mro__", "__bases__",
                           "__subclasses__"})


class WithheldPart(RuntimeError):
    """A withheld part of the package was used (:class:`Withheld`)."""


# Whether the notebook's run used a withheld part (a demo cell, an answer, a test's call): an
# exercise that then fails is judged again with only its own parts withheld (tinyk.grading.verdict).
TOUCHED = [False]


def _guarded(real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, refusing a stand-in as its first argument (using it)."""
    import functools

    @functools.wraps(real)
    def guarded(object: Any, *args: Any, **kwargs: Any) -> Any:
        if type(object) is Withheld:
            raise object._refuse()
        return real(object, *args, **kwargs)

    guarded._refuses_stand_ins = True  # type: ignore[attr-defined]
    return guarded


def _guard_inspect() -> None:
    """Make :mod:`inspect`'s ``getfile`` and ``getmodule`` take a stand-in as used. ``getfile``
    reads no attribute of an object that is no module, class, function or code (a stand-in
    could not tell it was asked; ``getsourcefile`` and ``getabsfile`` ask it), and
    ``getmodule`` reads the ``__module__`` of the stand-in's class (``tinyk.grading.withheld``)."""
    import inspect

    for name in ("getfile", "getmodule"):
        if not getattr(getattr(inspect, name), "_refuses_stand_ins", False):
            setattr(inspect, name, _guarded(getattr(inspect, name)))


def withhold(parts: list[str]) -> list[str]:
    """Put a :class:`Withheld` in place of the package's own versions of ``parts``
    (:data:`tinyk.learner.own_code.REFERENCES`) in every loaded ``tinyk`` module, under every name
    they are bound to, and let the collector free them; return the names withheld."""
    import gc

    from tinyk.grading.kept_source import lend
    from tinyk.learner.own_code import REFERENCES

    _guard_inspect()
    names = {ref for part in parts for ref in REFERENCES.get(part, ())}
    modules = [m for n, m in list(sys.modules.items()) if n == "tinyk" or n.startswith("tinyk.")]
    lend(vars(m)[name] for m in modules for name in names if name in vars(m))  # the text, not theirs
    if not names:
        return []
    objects = {id(obj): name for m in modules for name in names if (obj := vars(m).get(name)) is not None
               and not isinstance(obj, Withheld)}
    for module in modules:
        for attr, value in list(vars(module).items()):
            if attr in names or id(value) in objects:
                setattr(module, attr, Withheld(attr if attr in names else objects[id(value)]))
    objects.clear()
    gc.collect()
    return sorted(names)
