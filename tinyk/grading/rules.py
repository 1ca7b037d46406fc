"""The grading rules (course section "For instructors"): what a check before grading, or a failed
run, finds (a :data:`Finding`); the gradebook's statuses and rows are :mod:`tinyk.reports.gradebook_schema`
(the verdict gives each row its points and status: :mod:`tinyk.grading.answers_only`).
"""

from __future__ import annotations

from tinyk.reports.gradebook_schema import Status

__all__ = ["Finding"]


# A status and its detail: what a check before grading, or a failed run, found.
Finding = tuple[Status, str]
