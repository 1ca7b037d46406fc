"""Instructor tools: validate, release and grade the chapter's exercises with nbgrader.

    python -m tinyk.grading validate [NOTEBOOK ...]
    python -m tinyk.grading release OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading grade SUBMISSIONS_DIR --out grades.csv [--notebook NAME ...] [--shard K/N]
    python -m tinyk.grading merge grades.csv SHARD.csv [SHARD.csv ...]
    python -m tinyk.grading feedback SUBMISSIONS_DIR OUT_DIR [--notebook NAME ...]
    python -m tinyk.grading report grades.csv --out REPORT_DIR
    python -m tinyk.grading similarity SUBMISSIONS_DIR --out similarity.html [--threshold 0.6]
    python -m tinyk.grading export grades.csv --format canvas|moodle|gradescope --roster roster.csv --out FILE

Linux only (it uses ``resource``, ``/proc`` and bubblewrap). Needs the instructor extras:
``pip install -e .[instructor]`` (nbgrader) and, to grade, bubblewrap (``apt-get install bubblewrap``).

Grading is done student by student, several at once, by the verdict (:mod:`tinyk.grading.verdict`):
the student's notebook runs once, in a bubblewrap sandbox (:mod:`tinyk.grading.learner_process`), every cell
but the test cells, in order, through IPython, with a per-cell timeout, a total time limit
and a memory limit; the test cells, hidden tests included, run in the grader's own process,
where no code of the student's runs. Locked test cells and hidden tests come from the
instructor's notebooks, not from the submission. The CSV has one row per student and
exercise, with a status; it is written atomically, and each finished student is kept in
``<out>.parts/`` so that an interrupted run resumes where it stopped and a rerun reproduces
the same file. ``feedback`` grades the same way and has nbgrader write the cells' outputs of
that run into its autograded notebooks (no kernel starts) and render them.

The sandbox: the system and the Python environment read-only, a scratch folder and a private
/tmp writable, no network, its own processes; the course copy, the gradebook and the hidden
tests are out of its sight. ``--no-sandbox`` opts out. See the instructors' page (course
section "For instructors") for what the sandbox covers and what it does not.

The package, one job a module: :mod:`~tinyk.grading.chapter` (the notebooks graded),
:mod:`~tinyk.grading.assignment` (validate, release, the prepared nbgrader course),
:mod:`~tinyk.grading.sandbox` (bubblewrap), :mod:`~tinyk.grading.runner` (the limits, nbgrader
as a subprocess), :mod:`~tinyk.grading.submission` (a submission restored from the release and
checked), :mod:`~tinyk.grading.rules` (statuses, points, rows), :mod:`~tinyk.grading.scoring`
(the learner's process's life: started, bounded, ended), :mod:`~tinyk.grading.answers_only` (one student's
verdict and rows), :mod:`~tinyk.grading.regrade` (the exercises whose test changed),
:mod:`~tinyk.grading.batch` (a class, shards, resume), :mod:`~tinyk.grading.shown_outputs`
(the outputs the feedback shows), :mod:`~tinyk.grading.student_feedback` and
:mod:`~tinyk.grading.cli`.

The verdict and what it runs on: :mod:`~tinyk.grading.verdict` (the test cells decided outside
the student's process), its protocol (:mod:`~tinyk.grading.answer_server`,
:mod:`~tinyk.grading.answer_wire`, :mod:`~tinyk.grading.proxies`: the learner's objects on this
side, :mod:`~tinyk.grading.functions_for_proxies`: the course's functions that know them), and
the learner's process (:mod:`~tinyk.grading.learner_process`, :mod:`~tinyk.grading.learner_objects`,
:mod:`~tinyk.grading.cell_outputs`, :mod:`~tinyk.grading.withheld`,
:mod:`~tinyk.grading.kept_source`, :mod:`~tinyk.grading.namespaces`),
:mod:`~tinyk.grading.ast_guard`, :mod:`~tinyk.grading.nbgrader_fork`.

May import: the model core, :mod:`tinyk.interop`, :mod:`tinyk.courseware`, :mod:`tinyk.learner`,
:mod:`tinyk.reports` and the package's words. Nothing of it is imported by ``import tinyk``.
"""
