"""The package's own Chinese words (course: the Chinese edition, the instructors' page).

Chinese learners read the package's feedback in Chinese: the labels of the mistake catalogue
(:mod:`tinyk.learner.mistakes`) and every message of the parts' checks, the checkpoint and the first
divergence (:func:`say`); instructors read the class report's pages
(:mod:`tinyk.reports.report_words`). Their Chinese lives in ``tinyk/locale/zh_CN.po``, a gettext
catalogue shipped inside the package, so neither a learner's Colab nor the class report needs
a course checkout: ``msgid`` the English, ``msgstr`` the Chinese, and a ``msgctxt`` where one
English word takes two Chinese ones (a chart's axis, a status's name).

It is read here with the standard library alone (a learner's Colab has no ``babel``), and
the course's tests check that this reading equals ``babel``'s
(:func:`tinyk.courseware.catalogues.read_catalogue`). :func:`chinese` stops, naming the English, when a
word has no Chinese; :func:`tinyk.translations.package_words.problems` lists every word the package needs
that the catalogue lacks, every ``say`` included (``python -m tinyk.translations check`` runs
it), and the term base checks the catalogue's Chinese like the book's (:mod:`tinyk.translations.terms`).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tinyk.environment import feedback_in_chinese

__all__ = ["PATH", "SHOWN", "MissingChinese", "chinese", "noted", "read_words", "say"]

PATH = Path(__file__).resolve().parents[1] / "locale" / "zh_CN.po"
SHOWN = "tinyk/locale/zh_CN.po"  # the catalogue as messages name it
_FIELD = re.compile(r'^(msgctxt|msgid|msgstr)\s+(".*")$')


class MissingChinese(LookupError):
    """A word the package shows in Chinese has no translation in its catalogue."""


def read_words(text: str) -> dict[tuple[str, str], str]:
    """(context, English) -> Chinese of each translated, not fuzzy message of a ``.po`` text
    (no plural forms: the package's catalogue has none)."""
    found: dict[tuple[str, str], str] = {}
    entry: dict[str, str] = {}
    field, fuzzy = "", False
    for line in [*text.splitlines(), "#"]:
        line = line.strip()
        match = _FIELD.match(line)
        starts = line.startswith("#") or (match is not None and match[1] != "msgstr" and "msgid" in entry)
        if starts and "msgstr" in entry:  # a new entry begins: keep the one read
            if entry.get("msgid") and entry["msgstr"] and not fuzzy:
                found[(entry.get("msgctxt", ""), entry["msgid"])] = entry["msgstr"]
            entry, fuzzy = {}, False
        if line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
        elif match is not None:
            field = match[1]
            entry[field] = ast.literal_eval(match[2])
        elif line.startswith('"') and field:
            entry[field] += ast.literal_eval(line)
    return found


@functools.cache
def _translations(path: Path) -> dict[tuple[str, str], str]:
    """(context, English) -> Chinese of the translated, not fuzzy messages at ``path``."""
    return read_words(path.read_text(encoding="utf-8"))


def chinese(english: str, context: str = "") -> str:
    """The Chinese of ``english`` (in ``context``, when the catalogue gives it one);
    :class:`MissingChinese` naming the English and the catalogue when it has none."""
    try:
        return _translations(PATH)[(context, english)]
    except KeyError:
        where = f" in the context {context!r}" if context else ""
        raise MissingChinese(f"{SHOWN} has no Chinese for {english!r}{where}: add it "
                             f"(`python -m tinyk.translations check` lists every missing one)") from None


def noted(english: str) -> str:
    """``english`` as it is: marks a message that is said later, from a name that holds it
    (``_FUSED = noted("...")``, then ``say(why)``), so that the check finds it as a ``say``'s."""
    return english


def say(english: str, /, **fields: object) -> str:
    """A message of the package's feedback in the learner's language: ``english`` (a plain
    string with ``{name}`` fields, or a name holding a :func:`noted` one), or its Chinese when
    ``TINYK_LANGUAGE`` asks for it (:mod:`tinyk.environment`), filled with ``fields``. Every
    message said has its Chinese in the catalogue (``python -m tinyk.translations check``
    fails otherwise); should one lack it all the same, the learner reads the English rather
    than an error."""
    template = _translations(PATH).get(("", english), english) if feedback_in_chinese() else english
    return template.format(**fields)
