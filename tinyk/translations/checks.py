"""``python -m tinyk.translations check``'s look at the catalogues themselves (the Chinese
edition, the book's *For instructors* page): every message translated, not fuzzy, not obsolete,
undamaged (:mod:`tinyk.translations.messages`), every term as the term base says
(:mod:`tinyk.translations.terms`), in the pages', code texts', figures' and interface's catalogues."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyk.courseware.catalogues import (
    LANGUAGE,
    MATH,
    catalogues,
    glossary_terms,
    interface_catalogue,
    read_catalogue,
)
from tinyk.courseware.checkout import course_root
from tinyk.courseware.chinese_notebooks import CODE_FOLDER, PLACEHOLDER, placeholders
from tinyk.courseware.figure_text import FULL_WIDTH_MARKS
from tinyk.courseware.student_markdown import STUDENT_WORDS
from tinyk.translations.messages import code_problems, message_problems

__all__ = ["blocks_problems", "figure_problems", "interface_problems", "output_problems", "problems"]

# a number's place in a figure or output message (tinyk.courseware.figure_text)
_PLACE = re.compile(r"\{\d+\}")
_FULL_WIDTH_SPACE = re.compile(FULL_WIDTH_MARKS + " ")  # a space after a full-width mark, which has its own
_FUZZY = "marked fuzzy (the English changed; check the translation)"


def _page_problems(name: str, msgid: str, msgstr: str, terms: set[str]) -> list[str]:
    """What is wrong with one message of a catalogue under ``LC_MESSAGES`` named ``name``; a
    code text (what the code prints, its comments) has no space after a full-width mark
    (:func:`_space_after_mark`)."""
    if name.startswith(f"{CODE_FOLDER}/"):  # an f-string's placeholders are code, not words
        issues = message_problems(PLACEHOLDER.sub("{}", msgid), PLACEHOLDER.sub("{}", msgstr))
        spaced = _space_after_mark(msgid, msgstr, None)
        return issues + (code_problems(msgid, msgstr) if msgstr else []) + ([spaced] if spaced else [])
    return message_problems(msgid, msgstr, headword=msgid in terms)


def problems(root: Path | None = None) -> list[str]:
    """Every untranslated, fuzzy, obsolete or damaged message, every term rendered otherwise
    than the term base says (:func:`tinyk.translations.terms.term_problems`), and Sphinx's own words where
    they say the polite you (:func:`tinyk.translations.sphinx_words.sphinx_problems`), as
    ``file: message: problem``."""
    from tinyk.translations.sphinx_words import sphinx_problems
    from tinyk.translations.terms import term_problems

    root = course_root(root)
    terms = glossary_terms(root)
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    files = catalogues(root)
    if not files:
        return [f"no catalogues under {base}: run `python -m tinyk.translations update`"]
    found = []
    for path in files:
        catalogue = read_catalogue(path)
        name = path.relative_to(base).as_posix()
        for message in catalogue:
            if not message.id:
                continue
            msgid, msgstr = str(message.id), str(message.string or "")
            issues = _page_problems(name, msgid, msgstr, terms) + ([_FUZZY] if message.fuzzy else [])
            found += [f"{name}: {msgid[:60]!r}: {issue}" for issue in issues]
        if catalogue.obsolete:
            found.append(f"{name}: {len(catalogue.obsolete)} obsolete message(s): run update")
    return (found + figure_problems(root) + output_problems(root) + interface_problems(root)
            + blocks_problems(root) + term_problems(root) + sphinx_problems(root))


def blocks_problems(root: Path | None = None) -> list[str]:
    """Every untranslated or fuzzy message of the book pages' literal blocks' catalogue
    (:func:`tinyk.courseware.catalogues.blocks_catalogue`)."""
    from tinyk.courseware.catalogues import blocks_catalogue

    return _catalogue_problems(blocks_catalogue(course_root(root)), ": run `make translations`")


def _catalogue_problems(path: Path, missing: str, checks: tuple[Callable[..., str], ...] = (),
                        ) -> list[str]:
    """The problems of a catalogue that stands beside the pages' (figures, interface): each
    message untranslated or fuzzy, or translated but failing one of ``checks`` (functions
    ``(msgid, msgstr, message) -> problem or ''``, ``message`` Babel's); ``missing`` says
    what to do when there is no file."""
    if not path.is_file():
        return [f"{path.name}: missing{missing}"]
    found = []
    for message in read_catalogue(path):
        if not message.id:
            continue
        msgid, msgstr = str(message.id), str(message.string or "")
        issues = [] if msgstr else ["untranslated"]
        if message.fuzzy:
            issues.append(_FUZZY)
        issues += [issue for check in checks if msgstr and (issue := check(msgid, msgstr, message))]
        found += [f"{path.name}: {msgid[:60]!r}: {issue}" for issue in issues]
    return found


def interface_problems(root: Path | None = None) -> list[str]:
    """Every untranslated or fuzzy message of the interface's catalogue
    (:func:`tinyk.courseware.catalogues.interface_catalogue`), and every word the Chinese student
    notebooks add (:data:`tinyk.courseware.student_markdown.STUDENT_WORDS`) that it lacks or whose
    translation loses a placeholder (``{url}``) or has a space after a full-width mark."""
    path = interface_catalogue(course_root(root))

    def places(msgid: str, msgstr: str, _message: object) -> str:
        same = msgid not in STUDENT_WORDS or placeholders(msgid) == placeholders(msgstr)
        return "" if same else "a placeholder ({url}, ...) differs from the English"

    found = _catalogue_problems(path, "", (places, _space_after_mark))
    if path.is_file():
        present = {str(m.id) for m in read_catalogue(path) if m.id}
        found += [f"{path.name}: {english[:60]!r}: missing (a word the Chinese student notebooks add: "
                  f"add it with its translation)" for english in STUDENT_WORDS if english not in present]
    return found


def figure_problems(root: Path | None = None) -> list[str]:
    """Every untranslated, fuzzy or damaged message of the figures' catalogue
    (``tinyk/locale/figures_zh_CN.po``): a number's place ``{0}`` or maths must come through, and
    no space may follow a full-width mark (a slider's frame, 05.1's, is built from these words)."""
    from tinyk.courseware.figure_text import catalogue_path

    def maths(msgid: str, msgstr: str, _message: object) -> str:
        same = sorted(MATH.findall(msgid)) == sorted(MATH.findall(msgstr))
        return "" if same else "maths differs from the English"

    return _catalogue_problems(catalogue_path(), ": run `make translations` after `make book`",
                               (_number_places, maths, _space_after_mark))


def _space_after_mark(_msgid: str, msgstr: str, _message: object) -> str:
    """A space after a full-width mark, which carries its own: a translated ``"shape:"`` with
    print's separator after its full-width colon (U+FF1A), or a printed column padded after
    that colon. Columns pad their labels before the colon instead (the label, its padding,
    the colon, then the value: :mod:`tinyk.translations.tables`), which passes."""
    return "a space after a full-width mark (colon, comma)" if _FULL_WIDTH_SPACE.search(msgstr) else ""


def _number_places(msgid: str, msgstr: str, _message: object) -> str:
    same = sorted(_PLACE.findall(msgid)) == sorted(_PLACE.findall(msgstr))
    return "" if same else "a number's place ({0}, {1}, ...) differs from the English"


def output_problems(root: Path | None = None) -> list[str]:
    """Every untranslated, fuzzy or damaged message of the printed output's catalogue
    (``locale/zh_CN/outputs.po``, :mod:`tinyk.translations.outputs`): a number's place must come
    through, a line translated as itself must say why (a translator comment ``kept: ...``), and
    no space may follow a full-width mark (:func:`_space_after_mark`)."""
    from tinyk.courseware.catalogues import outputs_catalogue
    from tinyk.translations.outputs import KEPT

    def kept(msgid: str, msgstr: str, message: Any) -> str:
        reason = any(c.strip().startswith(KEPT) for c in message.user_comments)
        return "" if msgstr != msgid or reason else f"translated as itself without a '# {KEPT} why' comment"

    return _catalogue_problems(outputs_catalogue(course_root(root)),
                               ": run `make translations` after `make book`",
                               (_number_places, kept, _space_after_mark))
