"""The gradebook and what is made of it, for the instructor (course section "For instructors").

:mod:`~tinyk.reports.gradebook_schema` (the gradebook's one schema), :mod:`~tinyk.reports.gradebook`
(reading ``grades.csv``), :mod:`~tinyk.reports.submitters` (who is who in a folder of
submissions), :mod:`~tinyk.reports.submitted_files` (how a submitted file is read),
:mod:`~tinyk.reports.inert` (what a student wrote, made inert), :mod:`~tinyk.reports.class_report`,
:mod:`~tinyk.reports.report_pages`, :mod:`~tinyk.reports.report_words` (the class report, its
pages and words), :mod:`~tinyk.reports.lms` (grades out to a learning management system) and
:mod:`~tinyk.reports.similarity` (similar answers across students).

May import: the model core, :mod:`tinyk.learner`, :mod:`tinyk.courseware`, the package's words.
Never grading: the grader writes the gradebook, these read it.
"""
