"""What a translation must keep (the Chinese edition, the book's *For instructors* page): the
rules one message of a catalogue is checked by, for the pages' prose and for the code texts of
the Chinese student notebooks."""

from __future__ import annotations

import re

from tinyk.courseware.catalogues import CODE, LINK, MATH, ROLE, chinese_headword

__all__ = ["code_problems", "message_problems"]

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")  # a Chinese character
_WORD = re.compile(r"[A-Za-z]{2,}")
_IDENTIFIER = re.compile(r"\w*_\w*")  # n_rep, H_kv: a name from the code, not an English word
_TARGET = re.compile(r"<[^<>`]*>`")  # a role's explicit target: a glossary term's own (bilingual) name
# A space beside a Chinese quotation mark or a Chinese bold word, between Chinese: Chinese sets
# neither apart with spaces (a space stays between Chinese and a Latin word).
_HAN = "\u3400-\u9fff\uff0c\u3002\uff1a\uff1b\u3001\uff08\uff09"
_SPACED = re.compile(f"[{_HAN}] [\u201c\u201d]|[\u201c\u201d] [{_HAN}]|[{_HAN}] \\*\\*[\u3400-\u9fff]"
                     f"|[\u3400-\u9fff]\\*\\* [{_HAN}]")


def _roles(text: str) -> list[tuple[str, str]]:
    """(role, what it points at): a term's target, a citation's keys. The shown text of a
    term may be translated when the target is written out (``{term}`shown <target>```: the
    shown words in Chinese, the target the glossary's bilingual headword as it is)."""
    out = []
    for role, body in ROLE.findall(text):
        target = re.search(r"<([^<>]+)>\s*$", body)
        out.append((role, target.group(1) if target else body))
    return sorted(out)


def _without_roles_and_math(text: str) -> str:
    return MATH.sub(" ", ROLE.sub(" ", text))


def _code(text: str) -> list[str]:
    return sorted(a or b for a, b in CODE.findall(_without_roles_and_math(text)))


def _bold(text: str) -> tuple[int, int, int]:
    """How the book's Markdown parser reads the ``**`` of ``text``: the ones it shows as they are
    (in its text, not in code or maths), the bold spans, and how deep they nest. A bold that
    CommonMark's flanking rule does not close (a ``**`` between a full-width full stop before
    it and a Chinese letter after it) shows its stars, or pairs with another."""
    from tinyk.courseware.myst import myst_parser

    shown = spans = depth = deepest = 0
    for token in myst_parser().parseInline(text):
        for child in token.children or []:
            shown += child.content.count("**") if child.type == "text" else 0
            spans += child.type == "strong_open"
            depth += {"strong_open": 1, "strong_close": -1}.get(child.type, 0)
            deepest = max(deepest, depth)
    return shown, spans, deepest


def message_problems(msgid: str, msgstr: str, *, headword: bool = False) -> list[str]:
    """What is wrong with one translation (an empty list when nothing is).

    ``headword``: the message is a glossary headword, and its translation is the headword
    Chinese first (:func:`tinyk.courseware.catalogues.chinese_headword`), exactly."""
    if not msgstr:
        return ["untranslated"]
    if headword:
        expected = chinese_headword(msgid)
        return [] if msgstr == expected else [f"write {expected!r}: a glossary headword reads Chinese "
                                              f"first, its English in full-width brackets"]
    if msgid.startswith("\n"):  # the body of a display-maths block: Sphinx keeps it only if unchanged
        return [] if msgstr == msgid else ["a display-maths block changed (it stays as the English has it)"]
    found = []
    if sorted(MATH.findall(msgid)) != sorted(MATH.findall(msgstr)):
        found.append("maths differs from the English")
    if _code(msgid) != _code(msgstr):
        found.append("inline code differs from the English")
    if _roles(msgid) != _roles(msgstr):
        found.append("a role ({term}, {cite}, ...) or its target differs from the English")
    if ("**" in msgstr or "**" in msgid) and _bold(msgstr) != _bold(msgid):
        found.append("its bold is not the English's: a ** shows as it is or pairs with another (CommonMark's "
                     "flanking rule: a ** between a punctuation mark and a letter opens or closes nothing; "
                     "put the full-width mark outside the bold), or a bold was added or dropped")
    if sorted(a or b for a, b in LINK.findall(msgid)) != sorted(a or b for a, b in LINK.findall(msgstr)):
        found.append("a link target differs from the English")
    if _SPACED.search(CODE.sub("`", msgstr)):
        found.append("a space beside a Chinese quotation mark or bold word, between Chinese characters: "
                     "Chinese sets neither apart with spaces")
    prose = CODE.sub(" ", _without_roles_and_math(LINK.sub(" ", msgid)))
    if len(_WORD.findall(_IDENTIFIER.sub(" ", prose))) >= 2 and not _CJK.search(_TARGET.sub("`", msgstr)):
        found.append("no Chinese in the translation of a sentence")
    return found


def code_problems(msgid: str, msgstr: str) -> list[str]:
    """What is wrong with the translation of a code text beyond :func:`message_problems`: it
    is written into a Python string literal (an f-string's, perhaps) or a comment."""
    from tinyk.courseware.chinese_notebooks import placeholders

    found = []
    if placeholders(msgid) != placeholders(msgstr):
        found.append("an f-string placeholder ({got}, ...) differs from the English")
    if sorted(re.findall(r"\\.", msgid)) != sorted(re.findall(r"\\.", msgstr)) or \
            any(msgstr.count(q) > msgid.count(q) for q in "'\""):
        found.append("an escape (\\n, ...) differs from the English, or an ASCII quote was added (the text "
                     "goes into a Python string literal: write Chinese quotes “” instead)")
    return found
