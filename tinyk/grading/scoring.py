"""The learner's process of a student's verdict (course section "For instructors"), from its
start to its cleanup (:func:`learner_server`): the command line it runs under
(:func:`answers_prefix`), and what the grader says of it once a run (:func:`say_shared`).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tinyk.grading.runner import Limits, say_once, total_limit
from tinyk.grading.sandbox import Sandbox, sandbox_argv

if TYPE_CHECKING:  # imports torch: only when grading
    from tinyk.grading.answer_server import AnswerServer

__all__ = ["answers_prefix", "learner_server", "say_shared"]


@contextlib.contextmanager
def learner_server(limits: Limits, sandboxed: bool, notebooks: int) -> Iterator[AnswerServer]:
    """One student's learner's process (:mod:`tinyk.grading.learner_process`, run by an
    :class:`~tinyk.grading.answer_server.AnswerServer`), the whole of its life: in a sandbox of its own (a
    scratch folder, removed after) when ``sandboxed``; started (its start, importing torch,
    not counted in the student's time); within the per-cell timeout, the memory limit and
    the student's total time limit for ``notebooks`` notebooks (:func:`total_limit`); on the
    way out, what it could not give the notebooks said once a run (:func:`say_shared`), and
    the process ended with every process it started (:meth:`AnswerServer.close`)."""
    from tinyk.grading.answer_server import AnswerServer

    with tempfile.TemporaryDirectory(prefix="tinyk-answers-") as tmp:
        sandbox = Sandbox.create(Path(tmp), limits.threads, memory_mb=limits.memory_mb) if sandboxed else None
        with AnswerServer(answers_prefix(sandbox, limits), limits.cell_timeout, limits.memory_mb) as server:
            try:
                server.start()
                server.limit_total(total_limit(limits, notebooks))
                yield server
            finally:
                say_shared(server)


def say_shared(server: AnswerServer) -> None:
    """Say once a run, on stderr, when a sandboxed learner's process could not give each
    notebook namespaces of its own (:meth:`~tinyk.grading.answer_server.AnswerServer.notebook`)."""
    if server.prefix and server.shared:
        say_once(f"a clean start for each notebook's verdict unavailable ({server.shared}): a "
                 f"student's answers share one sandbox across their notebooks in the verdict")


def answers_prefix(sandbox: Sandbox | None, limits: Limits) -> list[str]:
    """The command line the learner's answers run under: the sandbox's, in a scratch folder
    of their own ([] without the sandbox)."""
    if sandbox is None:
        return []
    scratch = sandbox.scratch.parent / "answers"
    scratch.mkdir(exist_ok=True)
    return sandbox_argv(scratch, sandbox.runtime, limits.threads, memory_mb=limits.memory_mb)
