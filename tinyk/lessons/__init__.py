"""What the chapter's notebooks use besides the model (sections 05.1 to 05.10).

:mod:`~tinyk.lessons.plotting` (the one plotting style, its words in Chinese from
:mod:`~tinyk.courseware.figure_text`), :mod:`~tinyk.lessons.widgets` (sliders),
:mod:`~tinyk.lessons.shown_code` (the package's code on a page), :mod:`~tinyk.lessons.tracing`
(shapes through a forward pass) and
:mod:`~tinyk.lessons.architecture_checks` (05.7's architecture checks and their record).

May import: the model core, :mod:`tinyk.courseware`, the package's words. Never grading,
reports, the learner's parts or the translations' tooling.
"""
