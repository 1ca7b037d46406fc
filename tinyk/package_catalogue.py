"""The package's own Chinese words (course: the Chinese edition, the instructors' page).

Chinese learners read the labels of the mistake catalogue (:mod:`tinyk.mistakes`) in their
feedback, and instructors the class report's pages (:mod:`tinyk.report_words`). Their Chinese
lives in ``tinyk/locale/zh_CN.po``, a gettext catalogue shipped inside the package, so the
class report needs no course checkout: ``msgid`` the English, ``msgstr`` the Chinese, and a
``msgctxt`` where one English word takes two Chinese ones (a chart's axis, a status's name).

:func:`chinese` reads it (through :func:`tinyk.catalogues.read_catalogue`) and stops, naming
the English, when a word has no Chinese; :func:`problems` lists every word the package needs
that the catalogue lacks (``python -m tinyk.translations check`` runs it), and the term base
checks the catalogue's Chinese like the book's (:mod:`tinyk.terms`).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from pathlib import Path

from tinyk.catalogues import read_catalogue

__all__ = ["PATH", "SHOWN", "MissingChinese", "chinese", "needed", "problems"]

PATH = Path(__file__).resolve().parent / "locale" / "zh_CN.po"
SHOWN = "tinyk/locale/zh_CN.po"  # the catalogue as messages name it
_PLACE = re.compile(r"\{\d*\}")


class MissingChinese(LookupError):
    """A word the package shows in Chinese has no translation in its catalogue."""


@functools.cache
def _translations(path: Path) -> dict[tuple[str, str], str]:
    """(context, English) -> Chinese of the translated, not fuzzy messages at ``path``."""
    return {(m.context or "", str(m.id)): str(m.string)
            for m in read_catalogue(path) if m.id and m.string and not m.fuzzy}


def chinese(english: str, context: str = "") -> str:
    """The Chinese of ``english`` (in ``context``, when the catalogue gives it one);
    :class:`MissingChinese` naming the English and the catalogue when it has none."""
    try:
        return _translations(PATH)[(context, english)]
    except KeyError:
        where = f" in the context {context!r}" if context else ""
        raise MissingChinese(f"{SHOWN} has no Chinese for {english!r}{where}: add it "
                             f"(`python -m tinyk.translations check` lists every missing one)") from None


def needed() -> dict[tuple[str, str], list[str]]:
    """(context, English) -> where the package shows it: every label of the mistake
    catalogue and every word of the class report."""
    from tinyk.mistakes import CATALOGUE
    from tinyk.report_words import MESSAGES

    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for mistake in CATALOGUE:
        found[("", mistake.en)].append(f"mistake {mistake.id}")
    for key, where in MESSAGES.items():
        found[key].append(where)
    return dict(found)


def _message_problem(message, english: str) -> str:
    """What is wrong with the catalogue's ``message`` for ``english`` ('' when nothing is)."""
    if message is None or not message.string:
        return "no Chinese"
    if message.fuzzy:
        return "marked fuzzy (the English changed; check the translation)"
    if sorted(_PLACE.findall(english)) != sorted(_PLACE.findall(str(message.string))):
        return "a number's place ({0}, {1}, ...) differs from the English"
    return ""


def problems(path: Path = PATH) -> list[str]:
    """Every word the package needs (:func:`needed`) that the catalogue at ``path`` leaves
    untranslated, fuzzy or with other places than the English, and every message it holds that
    the package no longer uses, as ``catalogue: 'English' (where): problem``."""
    if not Path(path).is_file():
        return [f"{SHOWN}: missing: the package's Chinese words (the mistakes', the class report's)"]
    have = {(m.context or "", str(m.id)): m for m in read_catalogue(path) if m.id}
    found = []
    for (context, english), where in needed().items():
        problem = _message_problem(have.get((context, english)), english)
        if problem:
            more = f" and {len(where) - 1} more" if len(where) > 1 else ""
            found.append(f"{SHOWN}: {english[:60]!r} ({where[0]}{more}): {problem}")
    for context, english in sorted(set(have) - set(needed())):
        found.append(f"{SHOWN}: {english[:60]!r}" + (f" (context {context!r})" if context else "")
                     + ": the package uses it nowhere: remove it")
    return found
