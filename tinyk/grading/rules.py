"""The grading rules (course section "For instructors"): the statuses of the gradebook and its
rows (the verdict gives each row its points and status: :mod:`tinyk.grading.answers_only`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tinyk.roster import STATUSES

__all__ = ["Finding", "Row", "Status"]


class Status(str, Enum):
    """A gradebook row's status; each value is the CSV's string, described in
    :data:`tinyk.roster.STATUSES` (the CSV, the class report and the feedback use those)."""

    OK = "ok"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    TESTS_MODIFIED = "tests-modified"
    TAMPERING = "tampering"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory-limit"
    KERNEL_DIED = "kernel-died"
    ERROR = "error"

    def __str__(self) -> str:  # the CSV's string, in f-strings and csv alike
        return self.value

    __format__ = str.__format__
    __hash__ = str.__hash__  # a key of STATUSES, as its string

    @property
    def description(self) -> str:
        """What the status means, as the instructors' page and the feedback say it."""
        return STATUSES[self.value]


# A status and its detail: what a check before grading, or a failed run, found.
Finding = tuple[Status, str]


@dataclass
class Row:
    """One line of the gradebook CSV (``status`` may be given as its string)."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: Status
    detail: str = ""

    def __post_init__(self) -> None:
        self.status = Status(self.status)
