"""The learner's parts and their checks (the build track of sections 05.2 to 05.10).

:mod:`~tinyk.learner.parts` (the learner's parts inside a ``tinyk`` model, the checkpoint),
:mod:`~tinyk.learner.part_checks` (each part checked alone), :mod:`~tinyk.learner.part_compare`
(how a part is run and compared), :mod:`~tinyk.learner.part_hints` (the classic mistakes as
outputs), :mod:`~tinyk.learner.divergence` (where an assembled model departs first),
:mod:`~tinyk.learner.learners_model` (a decoder of the learner's parts alone),
:mod:`~tinyk.learner.own_code` (the learner's own code, checked by what runs) and
:mod:`~tinyk.learner.mistakes` (the catalogue of classic mistakes).

May import: the model core, :mod:`tinyk.interop`, :mod:`tinyk.courseware`, the package's words.
Never grading, reports, lessons or the translations' tooling.
"""
