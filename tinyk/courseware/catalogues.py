"""Where the Chinese edition's words live and how its Markdown is read (course: the Chinese
edition, the instructors' page): the catalogues' language and folder, the glossary's
headwords, and the patterns of what a message holds besides words (a MyST role, maths,
inline code, a link's target), shared by :mod:`tinyk.translations` and :mod:`tinyk.translations.terms`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tinyk.courseware.checkout import course_root

if TYPE_CHECKING:
    from babel.messages.catalog import Catalog

__all__ = ["CODE", "LANGUAGE", "LINK", "MATH", "ROLE", "blocks_catalogue", "catalogues", "chinese_headword",
           "glossary_terms",
           "interface_catalogue", "outputs_catalogue", "pinyin_key", "read_catalogue", "translated"]

LANGUAGE = "zh_CN"
ROLE = re.compile(r"\{([a-z:-]+)\}`([^`]*)`")  # {term}`shown <target>`: its name, its text
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
CODE = re.compile(r"``(.+?)``|`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>")
HEADWORD = re.compile(r"^(?P<english>[^()]+?) \((?P<chinese>[^()]+)\)$")  # "KV cache (...)"
# The brackets of the Chinese edition's headwords: full-width, as Chinese prose has them.
_OPEN, _CLOSE = "\uff08", "\uff09"
_COMMA, _LIST = "\uff0c", "\u3001"  # between two names of a headword; between the items of a list


def read_catalogue(path: Path) -> Catalog:
    """The gettext catalogue at ``path`` as Babel reads it (every message, fuzzy and
    untranslated ones included); an empty catalogue of the Chinese edition when the file
    does not exist. Every ``.po`` file the course and the package read goes through here."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po

    if not Path(path).is_file():
        return Catalog(locale=LANGUAGE, project="tinyk course", fuzzy=False)
    with Path(path).open("rb") as f:
        return read_po(f)


def translated(path: Path) -> dict[str, str]:
    """English -> Chinese of the messages of the catalogue at ``path`` that are translated
    and not marked fuzzy (a missing file has none)."""
    return {str(m.id): str(m.string) for m in read_catalogue(path) if m.id and m.string and not m.fuzzy}


def catalogues(root: Path | None = None) -> list[Path]:
    """Every ``.po`` file of the Chinese edition, sorted."""
    return sorted((course_root(root) / "locale" / LANGUAGE / "LC_MESSAGES").rglob("*.po"))


def interface_catalogue(root: Path | None = None) -> Path:
    """The Chinese edition's words for the site's interface around a page's content (the
    theme's labels, the solution toggles): ``locale/zh_CN/interface.po``."""
    return course_root(root) / "locale" / LANGUAGE / "interface.po"


def blocks_catalogue(root: Path | None = None) -> Path:
    """The Chinese edition's words for the literal blocks of the book's Markdown pages (a shell
    block's comments, a drawing; :func:`tinyk.translations.pages.block_texts`):
    ``locale/zh_CN/blocks.po``."""
    return course_root(root) / "locale" / LANGUAGE / "blocks.po"


def outputs_catalogue(root: Path | None = None) -> Path:
    """The Chinese edition's words for what the chapter notebooks print (their text outputs,
    translated line by line when the Chinese pages are rendered; :mod:`tinyk.translations.outputs`):
    ``locale/zh_CN/outputs.po``."""
    return course_root(root) / "locale" / LANGUAGE / "outputs.po"


def glossary_terms(root: Path | None = None) -> set[str]:
    """The headwords of the book's glossary (``book/glossary.md``), as written there."""
    text = (course_root(root) / "book" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}")[1].split("```")[0]
    return {ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith(" ")}


def chinese_headword(headword: str) -> str:
    """How the Chinese edition writes a glossary headword of the English one: its Chinese
    first, then its English in full-width brackets, a plain word's first letter in lower
    case (``Batch (<Chinese>)`` becomes ``<Chinese>(batch)`` with full-width brackets;
    ``KV cache`` and ``RMSNorm`` keep their capitals), an abbreviation after the full name
    and a full-width comma between them (``RMSNorm, root mean square normalisation``
    becomes ``root mean square normalisation<comma>RMSNorm``). A headword without brackets names a
    term the Chinese prose keeps in English (``Token``): it reads as the prose writes it,
    ``token``. A headword whose Chinese already holds its English (``SwiGLU (SwiGLU
    <Chinese>)``) is its Chinese alone, the name said once. Only the words shown change: the
    entry's anchor and every ``{term}`` reference stay the English headword's."""
    match = HEADWORD.match(headword.strip())
    english, chinese = (match["english"], match["chinese"]) if match else (headword.strip(), "")

    def plain(word: str) -> str:
        return word[0].lower() + word[1:] if word[:2].istitle() and word.split()[0][1:].islower() else word

    parts = [plain(part) for part in english.split(", ")]
    if ", ".join(parts) in chinese:
        return chinese
    # An abbreviation (GQA, RMSNorm) goes after the full name; a list of three words or more
    # (query, key, value) takes the enumeration comma, two names the full-width comma.
    parts.sort(key=lambda part: " " not in part and any(c.isupper() for c in part[1:]))
    english = (_LIST if len(parts) > 2 else _COMMA).join(parts)
    return f"{chinese}{_OPEN}{english}{_CLOSE}" if chinese else english


_LETTERS = re.compile(r"[^a-z]")


def pinyin_key(text: str) -> tuple:
    """A sort key that puts Chinese headwords in dictionary order: syllable by syllable, by
    the pinyin's letters, then its tone (neutral last), then by the characters. A Latin word
    ("SwiGLU", "token") sorts by its letters among the syllables; punctuation is skipped."""
    from pypinyin import Style, lazy_pinyin

    syllables = []
    for part in lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True):
        letters = _LETTERS.sub("", part.lower())
        if letters:
            tone = int(part[-1]) if part[-1].isdigit() else 0
            syllables.append((letters, tone))
    return (tuple(syllables), text)
