"""The learner's process of a student's verdict (course section "For instructors"): the command
line it runs under (:func:`answers_prefix`), and what the grader says of it once a run
(:func:`say_shared`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyk.grading.runner import Limits, say_once
from tinyk.grading.sandbox import Sandbox, sandbox_argv

if TYPE_CHECKING:  # imports torch: only when grading
    from tinyk.answer_server import AnswerServer

__all__ = ["answers_prefix", "say_shared"]


def say_shared(server: AnswerServer) -> None:
    """Say once a run, on stderr, when a sandboxed learner's process could not give each
    notebook namespaces of its own (:meth:`~tinyk.answer_server.AnswerServer.notebook`)."""
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
