"""The Sphinx runs of the Chinese edition (the book's *For instructors* page): extracting the
English pages' messages (``update``, ``check``) and building the Chinese site
(``python -m tinyk.translations build``) with its interface's words as Sphinx settings.

The Chinese site's search: Sphinx indexes a ``zh_CN`` page with ``sphinx.search.zh``, which
cuts Chinese text into words with ``jieba`` (without it, the index holds no Chinese word at
all, so the build refuses to run without it). ``jieba`` indexes every word of a compound and
its sub-words (``cut_for_search``: the term for attention within that for grouped-query
attention), but a compound it does not know is only its parts, and the search page looks a
query up whole: the course's own terms (:func:`search_words`) are added to its dictionary, so
that the terms for grouped-query attention and the KV cache are found as they are written."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tinyk.courseware.addresses import site_url
from tinyk.courseware.catalogues import LANGUAGE, interface_catalogue, read_catalogue
from tinyk.courseware.checkout import course_root

__all__ = ["build", "extract", "interface_settings", "run_sphinx", "search_dictionary", "search_words"]

# The Sphinx settings of the Chinese edition that are words, by their English value (the
# book's _config.yml and myst-nb's defaults), translated in the interface's catalogue.
_INTERFACE_SETTINGS = {"html_title": "title", "author": "author",
                       "nb_code_prompt_show": "Show code cell {type}",
                       "nb_code_prompt_hide": "Hide code cell {type}"}


def run_sphinx(root: Path, outdir: Path, doctrees: Path, builder: str, overrides: dict, **kwargs) -> int:
    """One Jupyter Book build of the course with extra Sphinx settings (its CLI's defaults)."""
    from jupyter_book.sphinx import build_sphinx

    settings = {"external_toc_path": str(root / "_toc.yml"), "latex_individualpages": False,
                "gettext_compact": False, **overrides}
    result = build_sphinx(root, outdir, noconfig=True, path_config=str(root / "_config.yml"),
                          confoverrides=settings, doctreedir=str(doctrees), builder=builder, **kwargs)
    if isinstance(result, Exception):
        raise result
    return int(result)


def extract(root: Path, folder: Path) -> None:
    """The English messages of every page, as ``.pot`` files under ``folder / "gettext"``."""
    status = run_sphinx(root, folder / "gettext", folder / "doctrees", "gettext",
                        {"nb_execution_mode": "off", "gettext_uuid": False, "gettext_location": False,
                         "project": "tinyk course", "version": "", "release": ""},
                        freshenv=True, really_quiet=True)
    if status != 0:
        raise SystemExit(f"extracting the messages failed (Sphinx exit status {status})")


def interface_settings(root: Path | None = None) -> dict[str, str]:
    """The Chinese edition's Sphinx settings that are words (the site's title, its author, the
    code toggles' labels), from the interface's catalogue; a ``KeyError`` names a missing one."""
    import yaml

    root = course_root(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    words = {str(m.id): str(m.string) for m in read_catalogue(interface_catalogue(root)) if m.id and m.string}
    settings = {}
    for name, english in _INTERFACE_SETTINGS.items():
        english = config.get(english, english)
        if english not in words:
            raise KeyError(f"{interface_catalogue(root).name} has no translation of {english!r} ({name})")
        settings[name] = words[english]
    return settings


_WORD = re.compile(r"[\u3400-\u9fff]{2,}")  # a Chinese word of two characters or more


def search_words(root: Path | None = None) -> list[str]:
    """The course's Chinese terms, each a word of the Chinese site's search: every term of
    ``locale/zh_CN/terms.toml`` and the Chinese of every glossary headword (the Chinese before
    ``(KV cache)``), where it is Chinese characters only (a term with Latin letters or a space,
    such as SwiGLU's, is indexed by its parts), split at the enumeration comma (U+3001)."""
    from tinyk.courseware.catalogues import HEADWORD, glossary_terms
    from tinyk.translations.terms import load_terms

    root = course_root(root)
    terms = [term.chinese for term in load_terms(root)]
    headwords = [m["chinese"] for h in glossary_terms(root) if (m := HEADWORD.match(h.strip()))]
    return sorted({word for text in terms + headwords for word in re.split("[\u3001\uff0c,]", text.strip())
                   if _WORD.fullmatch(word)})


def search_dictionary(root: Path, folder: Path) -> Path:
    """``jieba``'s user dictionary of :func:`search_words` (one word a line, its frequency
    left to ``jieba``), written into ``folder``. Its name carries a hash of its words, so
    that new words change the build's settings and Sphinx indexes every page again."""
    text = "".join(f"{word}\n" for word in search_words(root))
    path = folder / f"search-words-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def _require_jieba() -> None:
    """``jieba`` is there (Sphinx would index no Chinese word without it), and says nothing
    when it loads its dictionary."""
    import logging

    try:
        import jieba
    except ImportError:
        raise SystemExit("the Chinese edition's search needs jieba (requirements.txt): without it, "
                         "Sphinx's Chinese search index holds no Chinese word; run `make setup`") from None
    jieba.setLogLevel(logging.WARNING)


def build(root: Path | None = None, *, everything: bool = False) -> int:
    """Build the Chinese edition into ``_build/html/zh``: the English build's settings with
    ``language`` set, its notebooks' outputs taken from the same execution cache (nothing
    executes that the English build or the notebook stage already ran), warnings are errors.
    The search index is Chinese (``sphinx.search.zh``, the course's terms in ``jieba``'s
    dictionary: :func:`search_dictionary`). Sphinx's own words come from
    :func:`tinyk.translations.sphinx_words.sphinx_locale` where the course words them otherwise."""
    from tinyk.translations.sphinx_words import sphinx_locale

    root = course_root(root)
    _require_jieba()
    doctrees = root / "_build" / ".doctrees-zh"
    words = search_dictionary(root, doctrees)
    sphinx_own = sphinx_locale(root, root / "_build" / ".sphinx-locale-zh")  # the course's words for Sphinx's
    overrides = {"language": LANGUAGE, "locale_dirs": [str(root / "locale"), str(sphinx_own)],
                 "nitpicky": True,
                 "html_search_language": "zh", "html_search_options": {"dict": str(words)},
                 "nb_execution_cache_path": str(root / "_build" / ".jupyter_cache"),
                 "html_baseurl": f"{site_url(root)}zh/", **interface_settings(root)}
    return run_sphinx(root, root / "_build" / "html" / "zh", doctrees, "html",
                      overrides, warningiserror=True, keep_going=True, force_all=everything)
