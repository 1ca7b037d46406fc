"""The course's run-time switches, in one place: environment variables that the course's own
tools set for the processes they start, and the code that reads them (section "For
instructors", and the book's build).

- ``TINYK_GRADING=1``: a kernel (or a learner's process) started by the grader. Sliders
  render no frame and course figures no PNG (:mod:`tinyk.lessons.widgets`, :mod:`tinyk.lessons.plotting`):
  nobody sees them, and grading is faster.
- ``TINYK_FIGURES_ZH=1``: the book's executions (``make book``, ``make test``) draw every
  course figure in Chinese too, for the Chinese edition (:mod:`tinyk.courseware.figure_text`); Jupyter
  and Colab never set it. Grading wins over it. The same executions train 05.7's model
  without a progress bar (:func:`book_run`, :func:`tinyk.training.train`).
- ``TINYK_LANGUAGE=zh_CN``: the package's feedback to a learner (the parts' checks, the
  checkpoint, the first divergence, a refused configuration) in Chinese
  (:func:`tinyk.translations.package_catalogue.say`). The setup cell of each student notebook sets it when
  it is unset: ``en`` in the English ones, ``zh_CN`` in the Chinese ones (``student/zh/``).
  The grader sets ``en``, and under ``TINYK_GRADING`` the feedback is English whatever the
  language says: a submission is graded with the release's English tests, and the mistakes
  it names are found in English messages (:mod:`tinyk.learner.mistakes`).
"""

from __future__ import annotations

import os

__all__ = ["FIGURES_ZH", "GRADING", "LANGUAGE", "book_run", "feedback_in_chinese", "figures_in_chinese",
           "grading_run"]

GRADING = "TINYK_GRADING"
FIGURES_ZH = "TINYK_FIGURES_ZH"
LANGUAGE = "TINYK_LANGUAGE"


def grading_run() -> bool:
    """True in a process started by the course's grader (``TINYK_GRADING=1``)."""
    return os.environ.get(GRADING) == "1"


def book_run() -> bool:
    """True in the book's executions of the notebooks (``TINYK_FIGURES_ZH=1``, which only they set)."""
    return os.environ.get(FIGURES_ZH) == "1"


def figures_in_chinese() -> bool:
    """True when course figures should also be drawn in Chinese (``TINYK_FIGURES_ZH=1``)."""
    return os.environ.get(FIGURES_ZH) == "1"


def feedback_in_chinese() -> bool:
    """True when the package's feedback should be Chinese: ``TINYK_LANGUAGE`` is ``zh_CN``
    (or another ``zh`` form: ``zh``, ``zh-CN``), outside a grading run. Grading wins: a
    submission that sets the language itself is still answered in English, the words the
    grader names its mistakes by."""
    return os.environ.get(LANGUAGE, "").strip().lower().startswith("zh") and not grading_run()
