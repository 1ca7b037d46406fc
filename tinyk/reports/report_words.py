"""The class report's words in English and Chinese (course section "For instructors").

The English is here; the Chinese of every English word, sentence and status is in the
package's catalogue, ``tinyk/locale/zh_CN.po`` (:mod:`tinyk.translations.package_catalogue`), and a word
without its Chinese stops the report, and ``python -m tinyk.translations check``, naming it.
"""

from __future__ import annotations

from tinyk.learner import mistakes
from tinyk.reports.gradebook_schema import STATUSES
from tinyk.translations.package_catalogue import chinese

__all__ = ["CONTEXTS", "LANGUAGES", "MESSAGES", "STATUS", "WORDS", "exercise_name", "mistake_label", "named",
           "share_sentence", "status_label", "words"]

LANGUAGES = ("en", "zh")
WORDS = {
    "title": "Class report",
    "student": "student",
    "notebooks": "Notebooks",
    "exercises": "Exercises",
    "notebook": "notebook",
    "submitted": "submitted",
    "full": "full marks",
    "timeout": "timed out",
    "tampering": "tampering",
    "other": "other statuses",
    "caption_nb": "Completion, time-outs and tampering by notebook: students (share of the class)",
    "mean": "mean",
    "points": "points",
    "none": "No catalogued mistake was named in this exercise's failures.",
    "mistakes": "Most common named mistakes",
    "chart": "Scores in exercise {0}: students per score",
    "axis_x": "points",
    "axis_y": "students",
    "student_list": "Students",
    "total": "total",
    "exercise": "exercise",
    "status": "status",
    "mistake": "mistake named",
    "hints": "exercise and hints",
    "open": "open",
    "your_title": "Your grades",
    "caption_student": "Points per exercise",
    "intro": "{0} student(s), {1} notebook(s), {2} exercise(s), from {3}.",
    "caption_students": "Students and their total points",
}
# Words whose English is another word's too, with another Chinese: their catalogue context.
CONTEXTS = {"axis_x": "chart axis", "axis_y": "chart axis"}
# the context of a status (tinyk.reports.gradebook_schema.STATUSES), shown as its name
STATUS = "grading status"
SHARE = "{0} of the class ({1} of {2}): {3}"
NAMED = "{0}: {1}"
UNKNOWN = "{0} (not in this version's catalogue)"
OTHER_LANGUAGE = {"en": "Chinese", "zh": "English"}  # the link to the other edition, in its language

# (context, English) -> where the report uses it: what the catalogue must translate.
MESSAGES = {
    **{(CONTEXTS.get(key, ""), english): f"class report: {key}" for key, english in WORDS.items()},
    ("", SHARE): "class report: a mistake's share of the class",
    ("", NAMED): "class report: an exercise and its line",
    ("", UNKNOWN): "class report: a mistake id this version does not catalogue",
    ("", OTHER_LANGUAGE["en"]): "class report: the link to the Chinese pages",
    **{(STATUS, status): f"class report: the status {status}" for status in STATUSES},
}


def words(lang: str) -> dict[str, str]:
    """The page words in ``lang`` (``"en"`` or ``"zh"``), keyed as :data:`WORDS`, with
    ``other_lang``: the other edition's name in its own language."""
    if lang == "en":
        return {**WORDS, "other_lang": chinese(OTHER_LANGUAGE["en"])}
    return {**{key: chinese(english, CONTEXTS.get(key, "")) for key, english in WORDS.items()},
            "other_lang": OTHER_LANGUAGE["zh"]}


def status_label(status: str, lang: str) -> str:
    """A gradebook status as a page shows it: its name in English, its Chinese otherwise."""
    return status if lang == "en" else chinese(status, STATUS)


def mistake_label(mistake_id: str, lang: str) -> str:
    """The short label of a catalogued mistake, or its id and a note that this version of the
    catalogue has no such mistake."""
    try:
        found = mistakes.by_id(mistake_id)
    except KeyError:
        return UNKNOWN.format(mistake_id) if lang == "en" else chinese(UNKNOWN).format(mistake_id)
    return found.en if lang == "en" else found.zh


def share_sentence(share: str, count: int, students: int, label: str, lang: str) -> str:
    """``"34% of the class (17 of 50): <label>"``, in ``lang``."""
    return (SHARE if lang == "en" else chinese(SHARE)).format(share, count, students, label)


def exercise_name(grade_id: str) -> str:
    """``ex_05_3_2_test`` -> ``05.3.2``; another name as it is."""
    return mistakes.exercise_of(grade_id) or grade_id


def named(exercise: str, sentence: str, lang: str) -> str:
    """An exercise's name before a sentence about it: ``"05.3.2: <sentence>"``."""
    return (NAMED if lang == "en" else chinese(NAMED)).format(exercise, sentence)
