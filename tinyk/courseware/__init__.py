"""The course's own files and formats (the book's *For instructors* page).

:mod:`~tinyk.courseware.course` (housekeeping: the repository address, the Colab setup cells),
:mod:`~tinyk.courseware.addresses` and :mod:`~tinyk.courseware.checkout` (where things are),
:mod:`~tinyk.courseware.exercises` (the exercise cell format), :mod:`~tinyk.courseware.cell_names`
(the names cells bind and read), :mod:`~tinyk.courseware.student_versions`,
:mod:`~tinyk.courseware.student_markdown` and :mod:`~tinyk.courseware.chinese_notebooks` (the
student notebooks, English and Chinese), :mod:`~tinyk.courseware.catalogues` and
:mod:`~tinyk.courseware.message_flow` (where the Chinese words live, which literals are words),
:mod:`~tinyk.courseware.figure_text` (the figures' words in Chinese, for the notebooks' figures and
the Chinese notebooks' code),
:mod:`~tinyk.courseware.myst` and :mod:`~tinyk.courseware.quiz` (the book's Markdown, concept checks).

May import: the model core and the package's words. Nothing else of ``tinyk``.
"""
