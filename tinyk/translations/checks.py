"""``python -m tinyk.translations check``'s look at the catalogues themselves (the Chinese
edition, the book's *For instructors* page): every message translated, not fuzzy, not obsolete,
undamaged (:mod:`tinyk.translations.messages`), every term as the term base says
(:mod:`tinyk.translations.terms`), in the pages', code texts', figures' and interface's catalogues;
and, beyond the catalogues, no English message left in a Chinese student notebook's test cell
(:func:`graded_cell_problems`): the messages :mod:`tinyk.courseware.message_flow` finds, the same
the extraction takes for translation, read in the notebook the students get."""

from __future__ import annotations

import ast
import json
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
from tinyk.courseware.message_flow import is_print, is_warning, message_nodes
from tinyk.courseware.student_markdown import STUDENT_WORDS
from tinyk.translations.messages import code_problems, message_problems

__all__ = ["blocks_problems", "english_messages", "figure_problems", "graded_cell_problems",
           "interface_problems", "output_problems", "problems"]

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
            + blocks_problems(root) + term_problems(root) + sphinx_problems(root)
            + graded_cell_problems(root))


_ENGLISH = re.compile(r"\b[A-Za-z]{2,}\b")
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_PUNCTUATION = re.compile(r"[^\w\s]")


def _literal_words(node: ast.AST) -> str | None:
    """The words of a string literal (an f-string's, between its placeholders), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def _is_code(node: ast.AST) -> bool:
    """A literal that is Python rather than prose (``"x.to(torch.float32)"``, ``f"{x}.float()"``):
    its text, each placeholder read as a name, parses as an expression with punctuation in it."""
    if isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "_" for v in node.values)
    else:
        text = node.value
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):  # ValueError: a NUL in the text
        return False
    return bool(_PUNCTUATION.search(text))


def _written_as_is(tree: ast.Module) -> set[int]:
    """The literals that are a whole message by themselves: a ``print``'s argument, an
    assertion's message, a raised error's or a warning's argument."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.msg is not None:
            found.add(id(node.msg))
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            found |= {id(a) for a in node.exc.args}
        elif is_print(node) or is_warning(node):
            found |= {id(a) for a in node.args}
    return found


def english_messages(source: str) -> list[str]:
    """The English words of a code cell's ``source`` that reach a reader: of each message
    :func:`tinyk.courseware.message_flow.message_nodes` finds (the same messages the extraction
    takes for translation), a literal with a word and no Chinese that is not code. Code is a
    literal that parses as a Python expression (``"x.to(torch.float32)"``) or a lone lowercase
    (dotted) name (``"logits"``, ``"builtins."``) that is only part of a message; a lone word
    written as the whole message (``print("Passed")``, ``print("passed")``) is English. A
    function's return is a message only when the function is used only inside messages."""
    tree = ast.parse(source)
    _docstrings, messages = message_nodes(tree)
    whole = _written_as_is(tree)
    found, seen = [], set()
    for node in sorted(messages, key=lambda n: (n.lineno, n.col_offset)):
        words = _literal_words(node)
        if words is None or id(node) in seen or not _ENGLISH.search(words) or _CJK.search(words):
            continue
        seen.add(id(node))
        name = words.removesuffix(".")  # "builtins." that a type's module is stripped of; " and " is prose
        lone = all(part.isidentifier() for part in name.split("."))
        if lone and name == name.lower() and id(node) not in whole:
            continue  # a name a message shows (a key, a module's name)
        if not lone and _is_code(node):
            continue
        found.append(words)
    return found


def graded_cell_problems(root: Path | None = None) -> list[str]:
    """Every English message of a test cell of the Chinese student notebooks
    (:func:`english_messages`): a message whose translation is missing or kept English stays
    English in a Chinese notebook, which the catalogues' own check cannot see."""
    from tinyk.courseware.checkout import STUDENTS, ZH
    from tinyk.courseware.exercises import is_test

    found = []
    for path in sorted((course_root(root) / STUDENTS / ZH).glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if not is_test(cell):
                continue
            name = cell["metadata"]["nbgrader"].get("grade_id", "?")
            found += [f"{STUDENTS}/{ZH}/{path.name}: {name}: {words[:60]!r}: English in a Chinese test cell "
                      f"(a message left untranslated: translate it in its code catalogue)"
                      for words in english_messages("".join(cell["source"]))]
    return found


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
