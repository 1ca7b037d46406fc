"""Sphinx's own words on the Chinese site, as the Chinese edition says them.

Sphinx's Chinese catalogue (``sphinx/locale/zh_CN``) addresses the reader with the polite
"you" (U+60A8) in a few strings (the search page's answer when nothing matches), where the
course says the plain one (U+4F60), as every Chinese page of the course does. Sphinx
reads its own words from the first of its ``locale_dirs`` that has them, before its own
catalogue: the templates' from ``<lang>/LC_MESSAGES/sphinx.mo`` (merged, message by message,
with Sphinx's) and the JavaScript's from ``<lang>/LC_MESSAGES/sphinx.js`` (the search page's,
copied whole as ``_static/translations.js``). ``locale/zh_CN/sphinx.po`` holds the messages the
course words differently, each under Sphinx's msgid; :func:`sphinx_locale` writes both files
from it into a folder of the build, the JavaScript's as Sphinx's own with those messages
replaced, and the Chinese build adds that folder to ``locale_dirs``
(:func:`tinyk.translations.builds.build`)."""

from __future__ import annotations

import json
from pathlib import Path

from tinyk.courseware.catalogues import LANGUAGE, read_catalogue
from tinyk.courseware.checkout import course_root

__all__ = ["SPHINX_WORDS", "sphinx_catalogue", "sphinx_js_messages", "sphinx_locale", "sphinx_problems",
           "sphinx_words"]

SPHINX_WORDS = Path("locale") / LANGUAGE / "sphinx.po"
_JS_START, _JS_END = "Documentation.addTranslations(", ");"


def sphinx_catalogue(name: str) -> Path:
    """Sphinx's own Chinese catalogue file ``name`` (``sphinx.po``, ``sphinx.js``)."""
    import sphinx

    return Path(sphinx.__file__).parent / "locale" / LANGUAGE / "LC_MESSAGES" / name


def sphinx_js_messages(path: Path) -> dict:
    """The translations of a ``sphinx.js`` (``{"locale", "messages", "plural_expr"}``)."""
    text = path.read_text(encoding="utf-8").strip()
    if not (text.startswith(_JS_START) and text.endswith(_JS_END)):
        raise ValueError(f"{path}: not a Sphinx JavaScript catalogue ({_JS_START}…{_JS_END})")
    return json.loads(text[len(_JS_START):-len(_JS_END)])


def sphinx_words(root: Path | None = None) -> dict[str, str]:
    """``msgid -> msgstr`` of ``locale/zh_CN/sphinx.po``: Sphinx's messages as the course says them."""
    path = course_root(root) / SPHINX_WORDS
    return {str(m.id): str(m.string) for m in read_catalogue(path)
            if m.id and isinstance(m.id, str) and m.string}


_POLITE = "\u60a8"  # the polite "you", which the Chinese edition never writes


def _known() -> set[str]:
    """Every msgid of Sphinx's own Chinese catalogues, the templates' and the JavaScript's."""
    js = sphinx_js_messages(sphinx_catalogue("sphinx.js"))["messages"]
    return {str(m.id) for m in read_catalogue(sphinx_catalogue("sphinx.po")) if m.id} | set(js)


def sphinx_problems(root: Path | None = None) -> list[str]:
    """The messages of ``locale/zh_CN/sphinx.po`` that Sphinx does not have (renamed: the course's
    words would never show) or that say the polite "you"; and every message of Sphinx's own
    Chinese catalogues that says it without ``sphinx.po`` wording it otherwise."""
    words = sphinx_words(root)
    known = _known()
    own = {str(m.id): str(m.string) for m in read_catalogue(sphinx_catalogue("sphinx.po")) if m.id}
    own.update(sphinx_js_messages(sphinx_catalogue("sphinx.js"))["messages"])
    found = [f"sphinx.po: {msgid[:60]!r}: Sphinx has no such message (its wording changed): copy the new "
             f"msgid from {sphinx_catalogue('sphinx.po')}" for msgid in sorted(set(words) - known)]
    found += [f"sphinx.po: {msgid[:60]!r}: says the polite you; the course says the plain one"
              for msgid, msgstr in words.items() if _POLITE in msgstr]
    found += [f"sphinx.po: {msgid[:60]!r}: Sphinx's Chinese says the polite you here: word it in sphinx.po"
              for msgid, msgstr in own.items()
              if _POLITE in (msgstr if isinstance(msgstr, str) else "".join(msgstr)) and msgid not in words]
    return found


def sphinx_locale(root: Path | None, folder: Path) -> Path:
    """A locale folder (``folder``) holding ``zh_CN/LC_MESSAGES/sphinx.mo`` and ``sphinx.js``:
    the course's words for Sphinx's messages over Sphinx's own. A message of ``sphinx.po``
    that Sphinx does not have is refused (Sphinx renamed it: the override would never show)."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    words = sphinx_words(root)
    js = sphinx_js_messages(sphinx_catalogue("sphinx.js"))
    unknown = sorted(set(words) - _known())
    if unknown:
        raise SystemExit(f"{SPHINX_WORDS}: Sphinx has no message {unknown[0]!r}: its wording changed; "
                         f"copy the new msgid from {sphinx_catalogue('sphinx.po')}")
    out = folder / LANGUAGE / "LC_MESSAGES"
    out.mkdir(parents=True, exist_ok=True)
    catalogue = Catalog(locale=LANGUAGE, domain="sphinx", fuzzy=False)
    for msgid, msgstr in words.items():
        catalogue.add(msgid, msgstr)
    with (out / "sphinx.mo").open("wb") as f:
        write_mo(f, catalogue)
    js["messages"].update({msgid: msgstr for msgid, msgstr in words.items() if msgid in js["messages"]})
    (out / "sphinx.js").write_text(_JS_START + json.dumps(js, ensure_ascii=False, indent=4, sort_keys=True)
                                   + _JS_END + "\n", encoding="utf-8")
    return folder
