"""The gradebook's one schema (course section "For instructors"): its columns (:data:`FIELDS`),
its statuses (:class:`Status`, each described in :data:`STATUSES`) and its row (:class:`Row`).
The grader writes rows of it (:mod:`tinyk.grading`); the class report, the LMS export and the
feedback read them (:mod:`tinyk.reports.gradebook`). It imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["FIELDS", "STATUSES", "Row", "Status"]

FIELDS = ["student", "notebook", "exercise", "points", "max_points", "status", "detail"]

STATUSES = {
    "ok": "graded normally (the points say whether the answer passed)",
    "missing": "no submission for this notebook",
    "unreadable": "the file is not a notebook the grader reads (empty, not JSON, a version nbformat cannot "
                  "read, over the size bound, or no regular file: a folder, a FIFO, a device or a symbolic "
                  "link, which is never followed); the detail says which",
    "tests-modified": "an exercise cell was edited, deleted, duplicated, moved or retyped, or its nbgrader "
                      "metadata changed; restored from the release and graded with the original tests",
    "tampering": "the submission rebinds names the tests rely on (e.g. math.isclose); scored 0",
    "timeout": "a cell ran past the per-cell timeout, or the submission past the total time limit",
    "memory-limit": "the submission ran out of its memory limit",
    "kernel-died": "the kernel exited (e.g. os._exit or a crash); nbgrader could not finish",
    "error": "grading failed for a reason shown in the detail column",
}


class Status(str, Enum):
    """A gradebook row's status; each value is the CSV's string, described in
    :data:`STATUSES` (the CSV, the class report and the feedback use those)."""

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
