"""Which words the package shows in Chinese, and what its catalogue lacks (course: the
Chinese edition, the instructors' page): every label of the mistake catalogue
(:mod:`tinyk.mistakes`) and every word of the class report (:mod:`tinyk.report_words`),
checked against ``tinyk/locale/zh_CN.po`` (:mod:`tinyk.package_catalogue`) by
``python -m tinyk.translations check``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from tinyk.catalogues import read_catalogue
from tinyk.mistakes import CATALOGUE
from tinyk.package_catalogue import PATH, SHOWN
from tinyk.report_words import MESSAGES

__all__ = ["needed", "problems"]

_PLACE = re.compile(r"\{\d*\}")


def needed() -> dict[tuple[str, str], list[str]]:
    """(context, English) -> where the package shows it: every label of the mistake
    catalogue and every word of the class report."""
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
