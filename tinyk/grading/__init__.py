"""Instructor tools: validate, release and grade the chapter's exercises with nbgrader.

    python -m tinyk.grading validate [NOTEBOOK ...]
    python -m tinyk.grading release OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading grade SUBMISSIONS_DIR --out grades.csv [--notebook NAME ...] [--shard K/N]
                                  [--answers-only]
    python -m tinyk.grading merge grades.csv SHARD.csv [SHARD.csv ...]
    python -m tinyk.grading feedback SUBMISSIONS_DIR OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading report grades.csv --out REPORT_DIR
    python -m tinyk.grading similarity SUBMISSIONS_DIR --out similarity.html [--threshold 0.6]
    python -m tinyk.grading export grades.csv --format canvas|moodle|gradescope --roster roster.csv --out FILE

Linux only (it uses ``resource``, ``/proc`` and bubblewrap). Needs the instructor extras:
``pip install -e .[instructor]`` (nbgrader) and, to grade, bubblewrap (``apt-get install bubblewrap``).

Grading is done student by student, each in a throwaway copy of a prepared nbgrader course
(in a temporary folder, never in the instructor's course folder), by ``nbgrader autograde``
in a subprocess with a per-cell timeout, a total time limit and a memory limit, several
students at once. Locked test cells and hidden tests come from the gradebook, not from the
submission. The CSV has one row per student and exercise, with a status; it is written
atomically, and each finished student is kept in ``<out>.parts/`` so that an interrupted
run resumes where it stopped and a rerun reproduces the same file.

Each notebook's kernel, where the student's code runs, starts inside a bubblewrap sandbox:
the system and the Python environment read-only, a scratch folder and a private /tmp
writable, no network, its own processes; the course copy, the gradebook and the hidden tests
are out of its sight. ``--no-sandbox`` opts out. See the instructors' page (course section
"For instructors") for what the sandbox covers and what it does not.

The package, one job a module: :mod:`~tinyk.grading.chapter` (the notebooks graded),
:mod:`~tinyk.grading.assignment` (validate, release, the prepared nbgrader course),
:mod:`~tinyk.grading.sandbox` (bubblewrap), :mod:`~tinyk.grading.runner` (nbgrader as a
subprocess within the limits), :mod:`~tinyk.grading.submission` (a submission restored from
the release and checked), :mod:`~tinyk.grading.rules` (statuses, points, rows),
:mod:`~tinyk.grading.scoring` (the gradebook after the kernel's run, the verdict),
:mod:`~tinyk.grading.student` (one student's run), :mod:`~tinyk.grading.answers_only` (one
student's run without the kernels), :mod:`~tinyk.grading.regrade` (the exercises whose test
changed), :mod:`~tinyk.grading.batch` (a class, shards, resume),
:mod:`~tinyk.grading.student_feedback` and :mod:`~tinyk.grading.cli`.

The kernel's run gives the outputs (and the feedback); the points of every exercise, 05.10's
capstone included, come from :mod:`tinyk.verdict`, which runs the student's notebook again in
the same sandbox, every cell but the test cells, through IPython (:mod:`tinyk.answers`), and
the test cells in the grader's own process, where no code of the student's runs.
``grade --answers-only`` runs that verdict alone, without the kernels
(:mod:`~tinyk.grading.answers_only`).
"""

from __future__ import annotations

from tinyk.grading.assignment import metadata_problems, release, validate
from tinyk.grading.batch import FIELDS, grade, merge, parse_shard, shard_of
from tinyk.grading.chapter import ASSIGNMENT, exercises_of
from tinyk.grading.cli import main
from tinyk.grading.rules import Row, Status
from tinyk.grading.runner import Limits
from tinyk.grading.sandbox import check_sandbox
from tinyk.grading.student_feedback import feedback
from tinyk.grading.submission import SKIP_TAG
from tinyk.roster import STATUSES

__all__ = ["ASSIGNMENT", "FIELDS", "SKIP_TAG", "STATUSES", "Limits", "Row", "Status", "check_sandbox",
           "exercises_of", "feedback", "grade", "main", "merge", "metadata_problems", "parse_shard",
           "release", "shard_of", "validate"]
