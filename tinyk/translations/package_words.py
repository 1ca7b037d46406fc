"""Which words the package shows in Chinese, and what its catalogue lacks (course: the
Chinese edition, the instructors' page): every label of the mistake catalogue
(:mod:`tinyk.learner.mistakes`), every word of the class report (:mod:`tinyk.reports.report_words`) and
the message of every ``say("...")`` of the package's source (its feedback to a learner),
checked against ``tinyk/locale/zh_CN.po`` (:mod:`tinyk.translations.package_catalogue`) by
``python -m tinyk.translations check``. A ``say`` given a message built in place (an
f-string, a sum) cannot be looked up, and is a problem too; a message said from a name is
marked where it is written, with ``noted("...")``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tinyk.courseware.catalogues import read_catalogue
from tinyk.courseware.chinese_notebooks import placeholders
from tinyk.learner.mistakes import CATALOGUE
from tinyk.reports.report_words import MESSAGES
from tinyk.translations.package_catalogue import PATH, SHOWN

__all__ = ["needed", "problems", "said"]

_PACKAGE = Path(__file__).resolve().parents[1]


def said(package: Path = _PACKAGE) -> tuple[dict[str, list[str]], list[str]]:
    """(English -> where, for the message of every ``say`` and ``noted`` call of the package's
    modules; the places of the ``say`` calls given a message built in place, an f-string or a
    sum, that no catalogue can hold: its fields go in ``{name}`` instead)."""
    found: dict[str, list[str]] = defaultdict(list)
    unreadable = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("say", "noted")):
                continue
            where = f"tinyk/{path.relative_to(package).as_posix()}:{node.lineno}"
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found[first.value].append(where)
            elif not isinstance(first, (ast.Name, ast.Attribute)):
                unreadable.append(where)
    return dict(found), unreadable


def needed() -> dict[tuple[str, str], list[str]]:
    """(context, English) -> where the package shows it: every label of the mistake
    catalogue, every word of the class report and every message it says (:func:`said`)."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for mistake in CATALOGUE:
        found[("", mistake.en)].append(f"mistake {mistake.id}")
    for key, where in MESSAGES.items():
        found[key].append(where)
    for english, places in said()[0].items():
        found[("", english)] += places
    return dict(found)


def _message_problem(message, english: str) -> str:
    """What is wrong with the catalogue's ``message`` for ``english`` ('' when nothing is)."""
    if message is None or not message.string:
        return "no Chinese"
    if message.fuzzy:
        return "marked fuzzy (the English changed; check the translation)"
    if placeholders(english) != placeholders(str(message.string)):
        return "a number's place ({0}, {1}, ...) or a field ({name}) differs from the English"
    return ""


def problems(path: Path = PATH) -> list[str]:
    """Every word the package needs (:func:`needed`) that the catalogue at ``path`` leaves
    untranslated, fuzzy or with other places than the English, and every message it holds that
    the package no longer uses, as ``catalogue: 'English' (where): problem``."""
    if not Path(path).is_file():
        return [f"{SHOWN}: missing: the package's Chinese words (the mistakes', the class report's)"]
    have = {(m.context or "", str(m.id)): m for m in read_catalogue(path) if m.id}
    found = [f"{where}: say() is given a message built in place: no catalogue can hold it (put its "
             f"fields in {{name}})" for where in said()[1]]
    for (context, english), where in needed().items():
        problem = _message_problem(have.get((context, english)), english)
        if problem:
            more = f" and {len(where) - 1} more" if len(where) > 1 else ""
            found.append(f"{SHOWN}: {english[:60]!r} ({where[0]}{more}): {problem}")
    for context, english in sorted(set(have) - set(needed())):
        found.append(f"{SHOWN}: {english[:60]!r}" + (f" (context {context!r})" if context else "")
                     + ": the package uses it nowhere: remove it")
    return found
