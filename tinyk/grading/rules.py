"""The grading rules (course section "For instructors"): the statuses of the gradebook, the
points of an executed test cell, and the status and detail of every exercise of a student.

Nothing here runs nbgrader or a kernel: these functions read a graded notebook and what the
checks and the run found, so that every rule can be tested on small dictionaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from tinyk.exercises import BEGIN_HIDDEN, END_HIDDEN, is_solution, nbgrader, source_text
from tinyk.mistakes import note
from tinyk.roster import STATUSES

if TYPE_CHECKING:
    from tinyk.grading.chapter import Notebook

__all__ = ["Finding", "Row", "Status", "cell_problem", "rows_for", "points_of_test", "with_verdict"]


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


def points_of_test(cell: dict, max_points: float) -> float:
    """The points of an executed test cell: nbgrader's rule (``nbgrader.utils.determine_grade``:
    an error output scores 0, a number as the cell's result is partial credit, anything else
    full marks), except that output on stderr (a warning, a message printed there) costs
    nothing, and an error output scores 0 wherever it comes (nbgrader stops at the first
    result, so a result shown before an error would have counted)."""
    from nbgrader.utils import get_partial_grade

    outputs = cell.get("outputs", [])
    if any(out.get("output_type") == "error" for out in outputs):
        return 0.0
    for out in outputs:
        if out.get("output_type") == "execute_result":
            try:
                return float(get_partial_grade(out, max_points))
            except (KeyError, ValueError):  # no text, or more than the cell is worth: nbgrader fails
                return 0.0
    return float(max_points)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _where(error: dict, source: str) -> str:
    """Where in its test cell an error was raised, from the traceback's outermost frame
    (IPython's ``Cell In[n], line L``): ``" (line L)"``, ``" (hidden tests, line L)"``, or ''."""
    frames = [_ANSI.sub("", str(frame)) for frame in error.get("traceback", [])]
    found = next((m for frame in frames if (m := re.match(r"Cell In\[\d*\], line (\d+)", frame))), None)
    if found is None:
        return ""
    line, hidden = int(found[1]), False
    for number, text in enumerate(source.splitlines(), 1):
        if number == line:
            break
        if text.strip() in (BEGIN_HIDDEN, END_HIDDEN):
            hidden = text.strip() == BEGIN_HIDDEN
    return f" ({'hidden tests, ' if hidden else ''}line {line})"


def _lost_points(test: dict, points: float, max_points: float) -> str:
    """Why a test cell that showed no error scored less than its worth."""
    results = [out for out in test.get("outputs", []) if out.get("output_type") == "execute_result"]
    if results:
        shown = str(results[0].get("data", {}).get("text/plain", ""))[:40]
        return f"test: its result {shown!r} gave {points:g} of {max_points:g} points"
    return f"test: scored {points:g} of {max_points:g} with no error shown"


def cell_problem(autograded: dict, grade_id: str, points: float, max_points: float) -> Finding:
    """(status, detail) from the outputs of the answer cell and of its test cell.

    A timeout or a MemoryError in either gives that status; otherwise the grading was
    normal ("ok") and the detail names the first error, the answer's before the test's
    (with the test cell's line that raised it, and whether it is a hidden test). Points
    lost without an error say why as well: there is no 0 without a reason.
    """
    cells = autograded["cells"]
    index = next((i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id), None)
    if index is None:
        return Status.ERROR, "test cell not found after grading"
    answer = [c for c in cells[:index] if is_solution(c)][-1:]  # the answer this test checks
    errors = [(out.get("ename", ""), str(out.get("evalue", ""))[:160], role,
               _where(out, source_text(cell)) if role == "test" else "")
              for cell, role in [*((c, "answer") for c in answer), (cells[index], "test")]
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    for name, _, role, _ in errors:
        if name == "MemoryError":
            return Status.MEMORY_LIMIT, f"the {role} cell ran out of memory"
        if "Timeout" in name:
            return Status.TIMEOUT, f"the {role} cell ran past the per-cell timeout"
    if errors:
        name, value, role, where = errors[0]
        # a test's message that names a catalogued mistake adds its id (the class report counts them)
        named = note(grade_id, str(next(o.get("evalue", "") for o in cells[index]["outputs"]
                                        if o.get("output_type") == "error"))) if role == "test" else ""
        return Status.OK, f"{role}: {name or 'an error'}: {value}".rstrip(": ") + where + named
    if points < max_points:
        return Status.OK, _lost_points(cells[index], points, max_points)
    return Status.OK, ""


def _graded(grade_id: str, max_points: float, executed: dict | None,
            score: Callable[[str], float | None]) -> tuple[float, Status, str]:
    """Points, status and detail of an exercise that ran, from nbgrader's recorded score and
    the autograded notebook."""
    recorded = score(grade_id)
    if recorded is None:
        return 0.0, Status.ERROR, "no grade recorded"
    if executed is None:
        return recorded, Status.ERROR, "no graded notebook written"
    return (recorded, *cell_problem(executed, grade_id, recorded, max_points))


def rows_for(name: str, nb: Notebook, flag: Finding | None, failure: Finding | None,
             executed: dict | None, score: Callable[[str], float | None]) -> list[Row]:
    """The rows of one notebook of one student, every status kept.

    ``flag``: what the checks before grading found (missing, unreadable, tampering: not
    graded; tests-modified: graded with the original tests); ``failure``: why the whole run
    failed, if it did; ``executed``: the autograded notebook; ``score``: nbgrader's recorded
    points of a graded cell, None when none was recorded. A timeout, a memory limit, a failed
    run or a missing grade wins over tests-modified, whose detail is then kept after it.
    """
    modified = flag is not None and flag[0] == Status.TESTS_MODIFIED
    rows = []
    for grade_id, max_points in nb.tests:
        points = 0.0
        if flag is not None and not modified:
            status, detail = flag
        elif failure is not None:
            status, detail = failure
        else:
            points, status, detail = _graded(grade_id, max_points, executed, score)
            if status == Status.OK and flag is not None:
                status, detail = flag[0], "; ".join(filter(None, [flag[1], detail]))
        if modified and status != Status.TESTS_MODIFIED:
            detail = "; ".join(filter(None, [detail, flag[1]]))
        rows.append(Row(name, nb.name, grade_id, points, max_points, status, detail))
    return rows


def with_verdict(row: Row, why: str | None) -> Row:
    """A row whose points the verdict outside the kernel decided: its reason for a 0 first, in
    place of the kernel's note that the points were lost with no error shown (the kernel runs
    the visible tests only, which may pass where the verdict's hidden ones fail)."""
    if why and row.status == Status.OK and why not in row.detail:
        kept = "" if row.detail.startswith(_NO_ERROR_SHOWN) else row.detail
        row.detail = "; ".join(filter(None, [f"graded outside the notebook: {why}"[:300], kept]))
    return row


_NO_ERROR_SHOWN = ("test: scored ", "test: its result ")  # _lost_points's notes
