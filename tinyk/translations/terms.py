"""The Chinese edition's term base: one Chinese term for each English term of chapter 05.

``locale/zh_CN/terms.toml`` maps each English term of the course (05.1 to 05.10, the glossary)
to its one Chinese term, the seed's where the Chinese source chapter has one, and lists the
variants that must not render it (for a key/value head, "K/V" followed by the Chinese word
for a head: the seed has a Chinese term of its own; the entry shows both).
:func:`term_problems` reads every catalogue of the Chinese edition (the pages', the notebooks',
the code texts of the Chinese student notebooks, the figures' words, the notebooks' printed
output and the package's own, ``tinyk/locale/zh_CN.po``) and reports each translated message
whose English has a term while its Chinese has a wrong variant, naming the catalogue, the
message and the term.
``python -m tinyk.translations check`` (``make lint``) runs it. A glossary headword (kept
bilingual: the English, then the Chinese in brackets) must carry its entry's term.

A variant is searched in the Chinese prose only: inline code, maths, link targets and the
targets of glossary references are left out (they stay as the English has them). An entry's
``allow_en`` names English contexts in which a variant rightly renders another word of the
same message (the course's Chinese word for "hint", a wrong variant of "prompt", in a message
that says both); its ``allow_zh`` names Chinese text that may contain one (an English message
quoted as it is printed).

An entry's ``gloss`` (for token: the term, then the Chinese word zh.d2l.ai writes for it in
full-width brackets; the course keeps the seed's token) is written once on each page a reader
may open first: the first place a page's Chinese says the term, in document order, writes the
gloss, and no other place on the page does (:func:`gloss_problems`, over the pages'
catalogues, ``book/`` and ``notebooks/``). The gloss is never a wrong variant.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the package tomli (a dependency there)
    import tomli as tomllib

from tinyk.courseware.catalogues import (
    CODE,
    LANGUAGE,
    LINK,
    MATH,
    ROLE,
    blocks_catalogue,
    catalogues,
    chinese_headword,
    glossary_terms,
    interface_catalogue,
    outputs_catalogue,
    pinyin_key,
    read_catalogue,
)
from tinyk.courseware.checkout import course_root
from tinyk.courseware.chinese_notebooks import PLACEHOLDER

__all__ = ["TERMS_FILE", "Term", "catalogue_messages", "gloss_problems", "glossary_problems", "load_terms",
           "message_term_problems", "term_problems"]

TERMS_FILE = Path("locale") / "zh_CN" / "terms.toml"
_FIELDS = {"en", "zh", "wrong", "allow_en", "allow_zh", "gloss", "source"}
PAGE_FOLDERS = ("book", "notebooks")  # the catalogues of pages, under locale/zh_CN/LC_MESSAGES
_PAREN = re.compile(r"[(\uff08]([^()\uff08\uff09]*)[)\uff09]")  # in ASCII or full-width brackets
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True)
class Term:
    """One entry of the term base: English forms, the Chinese term, the wrong variants."""

    english: tuple[str, ...]
    chinese: str
    wrong: tuple[re.Pattern[str], ...]
    allow_en: tuple[re.Pattern[str], ...]
    allow_zh: tuple[re.Pattern[str], ...]
    source: str
    pattern: re.Pattern[str]
    gloss: str | None = None

    def found_in(self, english: str) -> str | None:
        """The term's form as the English message has it, or None."""
        match = self.pattern.search(english)
        return match.group(0) if match else None


def _words(forms: list[str]) -> re.Pattern[str]:
    """Any of the forms as a whole word, the longest first ("tied weights" before "tied")."""
    alternatives = "|".join(sorted(forms, key=len, reverse=True))
    return re.compile(r"(?<![\w-])(?:" + alternatives + r")(?![\w-])", re.I)


def _compile(where: str, field: str, value: object, *, words: bool = False) -> tuple[re.Pattern[str], ...]:
    if words and value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: {field} = {value!r}: must be a list of non-empty strings")
    try:
        return (_words(value),) if words else tuple(re.compile(v) for v in value)
    except re.error as error:
        raise ValueError(f"{where}: {field} = {value!r}: not a regular expression ({error})") from None


def load_terms(root: Path | None = None, path: Path | None = None) -> list[Term]:
    """The entries of ``locale/zh_CN/terms.toml`` (or ``path``); a malformed entry raises
    ``ValueError`` naming the entry, the field and the rule."""
    path = path or course_root(root) / TERMS_FILE
    with path.open("rb") as f:
        data = tomllib.load(f)
    entries = data.get("term")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: no [[term]] entries")
    terms = []
    for n, entry in enumerate(entries, 1):
        where = f"{path.name}, term {n} ({entry.get('en')!r})"
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; the fields are {sorted(_FIELDS)}")
        for field in ("zh", "source"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise ValueError(f"{where}: {field} = {entry.get(field)!r}: must be a non-empty string")
        english = entry.get("en")
        pattern = _compile(where, "en", english, words=True)[0]
        wrong = _compile(where, "wrong", entry.get("wrong"))
        for variant in wrong:
            if variant.search(entry["zh"]):
                raise ValueError(f"{where}: wrong variant {variant.pattern!r} matches the term itself "
                                 f"{entry['zh']!r}")
        allow_en = _compile(where, "allow_en", entry.get("allow_en", []), words=True)
        allow_zh = _compile(where, "allow_zh", entry.get("allow_zh", []))
        gloss = entry.get("gloss")
        if gloss is not None:
            if not isinstance(gloss, str) or not gloss.startswith(entry["zh"]) or gloss == entry["zh"]:
                raise ValueError(f"{where}: gloss = {gloss!r}: must be the term {entry['zh']!r} followed by "
                                 f"its gloss")
            allow_zh += (re.compile(re.escape(gloss)),)
        terms.append(Term(tuple(english), entry["zh"], wrong, allow_en, allow_zh, entry["source"], pattern,
                          gloss))
    return terms


def _prose(text: str) -> str:
    """The words of a message: inline code, maths, link targets and an f-string's placeholders
    (``{budget['embedding']:,}``, code the translation keeps) out, and a role's target out
    while its shown text stays (``{term}`shown <target>``` reads as its shown words)."""
    def shown(role: re.Match[str]) -> str:
        return re.sub(r"\s*<[^<>]+>\s*$", "", role.group(2)) if role.group(1) == "term" else " "

    text = ROLE.sub(shown, text)
    text = LINK.sub(lambda m: "]" if m.group(1) else " ", text)
    return PLACEHOLDER.sub(" ", CODE.sub(" ", MATH.sub(" ", text)))


def message_term_problems(msgid: str, msgstr: str, terms: list[Term]) -> list[str]:
    """The terms a translation renders with a wrong variant, each as ``“term” is written
    “variant”, the term base says “Chinese”`` (an empty list when none is).

    A glossary headword ("Tied weights, weight tying" and its Chinese in brackets), kept as
    it is or written Chinese first (:func:`tinyk.courseware.catalogues.chinese_headword`), is checked
    in the English's brackets."""
    if not msgstr:
        return []
    english, chinese = _prose(msgid), _prose(msgstr)
    if msgstr in (msgid, chinese_headword(msgid)):
        english = _PAREN.sub(" ", msgid)
        chinese = " ".join(p for p in _PAREN.findall(msgid) if _CJK.search(p))
    found = []
    for term in terms:
        form = term.found_in(english)
        if not form or (term.allow_en and term.allow_en[0].search(english)):
            continue
        text = chinese
        for allowed in term.allow_zh:
            text = allowed.sub(" ", text)
        for variant in term.wrong:
            match = variant.search(text)
            if match:
                found.append(f"“{form}” is written “{match.group(0)}”, the term base says “{term.chinese}”")
                break
    return found


def catalogue_messages(root: Path | None = None) -> list[tuple[str, str, str]]:
    """``(catalogue, msgid, msgstr)`` of every message of the Chinese edition: every ``.po``
    under ``locale/zh_CN/LC_MESSAGES`` (named relative to it), ``outputs.po``, ``interface.po``,
    and the package's own: its figures' words (``tinyk/locale/figures_zh_CN.po``) and the rest
    (``tinyk/locale/zh_CN.po``: the mistakes', the class report's, its feedback's)."""
    from tinyk.courseware.figure_text import catalogue_path
    from tinyk.translations import package_catalogue

    root = course_root(root)
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    out = []
    for path in [*catalogues(root), catalogue_path(), outputs_catalogue(root), interface_catalogue(root),
                 blocks_catalogue(root), package_catalogue.PATH]:
        catalogue = read_catalogue(path)  # a missing file has no message
        name = (path.relative_to(base).as_posix() if path.is_relative_to(base)
                else package_catalogue.SHOWN if path == package_catalogue.PATH else path.name)
        out += [(name, str(m.id), str(m.string or "")) for m in catalogue if m.id and isinstance(m.id, str)]
    return out


def glossary_problems(root: Path | None = None, terms: list[Term] | None = None) -> list[str]:
    """Glossary headwords whose Chinese is not their term-base entry's: the brackets of
    "Batch (...)" must hold the ``zh`` of the entry whose English it names, and a headword
    without brackets ("Token") names a term whose ``zh`` is its English."""
    root = course_root(root)
    terms = load_terms(root) if terms is None else terms
    found = []
    for headword in sorted(glossary_terms(root)):
        english = _PAREN.sub(" ", headword)
        chinese = " ".join(_PAREN.findall(headword)) or headword.lower()
        for term in terms:
            if term.found_in(english) and term.pattern.fullmatch(english.split(",")[0].strip()) \
                    and term.chinese not in chinese:
                found.append(f"glossary: {headword!r}: the headword's Chinese is not the term base's "
                             f"“{term.chinese}”")
    return found


def _chinese_word(term: Term) -> re.Pattern[str]:
    """The term as a word of the Chinese prose (``token``, not ``tokens`` or ``tokenizer``)."""
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(term.chinese) + r"(?![A-Za-z0-9_])", re.I)


def page_gloss_problems(name: str, messages: list[str], terms: list[Term]) -> list[str]:
    """A page's Chinese messages (``messages``, in document order) against the glosses of the
    term base: the first place the page says a glossed term writes its gloss, no other place
    on the page writes it again."""
    found = []
    for term in terms:
        if term.gloss is None:
            continue
        word = _chinese_word(term)
        prose = [_prose(text) for text in messages]
        places = [(n, match) for n, text in enumerate(prose) for match in [word.search(text)] if match]
        glossed = [n for n, text in enumerate(prose) if term.gloss in text]
        if not places:
            continue
        first, match = places[0]
        if not prose[first].startswith(term.gloss, match.start()):
            found.append(f"{name}: {messages[first][:60]!r}: the page's first “{term.chinese}” is not "
                         f"glossed “{term.gloss}”")
        found += [f"{name}: {messages[n][:60]!r}: “{term.gloss}” again: the page glosses it once, where "
                  f"it first says “{term.chinese}”" for n in glossed if n != first]
    return found


def gloss_problems(root: Path | None = None, terms: list[Term] | None = None) -> list[str]:
    """The pages' catalogues (``locale/zh_CN/LC_MESSAGES/book`` and ``notebooks``: the Chinese
    site's pages and the Chinese student notebooks' text) against the term base's glosses
    (:func:`page_gloss_problems`)."""
    root = course_root(root)
    terms = load_terms(root) if terms is None else terms
    base = root / "locale" / LANGUAGE / "LC_MESSAGES"
    found = []
    for folder in PAGE_FOLDERS:
        for path in sorted((base / folder).glob("*.po")):
            pairs = [(str(m.id), str(m.string or "")) for m in read_catalogue(path)
                     if m.id and isinstance(m.id, str)]
            if path == base / "book" / "glossary.po":
                pairs = _glossary_order(pairs)
            found += page_gloss_problems(path.relative_to(base).as_posix(), [zh for _, zh in pairs], terms)
    return found


def _glossary_order(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The glossary's messages (``(msgid, msgstr)``, in the English page's order) in the order
    the Chinese page shows them: what comes before the first entry, then each entry (its
    headword, translated as :func:`tinyk.courseware.catalogues.chinese_headword` writes it, and its
    definition) by the pinyin of its Chinese headword (:func:`tinyk.translations.pages.sort_glossaries`)."""
    head: list[tuple[str, str]] = []
    entries: list[list[tuple[str, str]]] = []
    for pair in pairs:
        if pair[1] == chinese_headword(pair[0]):
            entries.append([pair])
        else:
            (entries[-1] if entries else head).append(pair)
    entries.sort(key=lambda entry: pinyin_key(entry[0][1]))
    return head + [pair for entry in entries for pair in entry]


def term_problems(root: Path | None = None) -> list[str]:
    """Every message of the Chinese edition (:func:`catalogue_messages`: the package's own
    words too, the mistake labels Chinese learners read in their feedback) that renders a term
    of the term base with a wrong variant, as ``catalogue: message: problem``, then the
    glossary's headwords, then the pages' glosses."""
    root = course_root(root)
    terms = load_terms(root)
    found = []
    for name, msgid, msgstr in catalogue_messages(root):
        found += [f"{name}: {msgid[:60]!r}: {issue}" for issue in message_term_problems(msgid, msgstr, terms)]
    return found + glossary_problems(root, terms) + gloss_problems(root, terms)
