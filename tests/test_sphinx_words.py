"""The Chinese site says 你, never 您: the course's catalogues, and Sphinx's and the theme's own
words as the Chinese build gets them (tinyk.translations.sphinx_words)."""

from __future__ import annotations

import gettext
import shutil
from pathlib import Path

import pytest

from tinyk.courseware import checkout
from tinyk.courseware.catalogues import read_catalogue
from tinyk.translations.sphinx_words import (
    SPHINX_WORDS,
    sphinx_catalogue,
    sphinx_js_messages,
    sphinx_locale,
    sphinx_words,
)
from tinyk.translations.terms import catalogue_messages

ROOT = checkout.ROOT
POLITE = "您"
NO_MATCH = ("Your search did not match any documents. Please make sure that all words are spelled correctly "
            "and that you've selected enough categories.")


def _polite(messages: dict) -> set[str]:
    return {k for k, v in messages.items() if POLITE in (v if isinstance(v, str) else "".join(v))}


def test_no_catalogue_of_the_chinese_edition_says_nin():
    messages = catalogue_messages(ROOT)
    assert len(messages) > 1000
    assert [(name, msgid[:60]) for name, msgid, msgstr in messages if POLITE in msgstr] == []
    assert [msgid for msgid, msgstr in sphinx_words(ROOT).items() if POLITE in msgstr] == []


def test_every_message_of_sphinx_that_says_nin_has_the_courses_words():
    own = {str(m.id): str(m.string) for m in read_catalogue(sphinx_catalogue("sphinx.po")) if m.id}
    polite = _polite(own) | _polite(sphinx_js_messages(sphinx_catalogue("sphinx.js"))["messages"])
    assert NO_MATCH in polite  # the search page's, found by the native review
    assert polite <= set(sphinx_words(ROOT)), polite - set(sphinx_words(ROOT))


def test_the_chinese_build_gets_sphinxs_words_with_the_courses_over_them(tmp_path):
    folder = sphinx_locale(ROOT, tmp_path / "sphinx-locale")
    js = sphinx_js_messages(folder / "zh_CN" / "LC_MESSAGES" / "sphinx.js")
    theirs = sphinx_js_messages(sphinx_catalogue("sphinx.js"))
    assert set(js["messages"]) == set(theirs["messages"]) and js["plural_expr"] == theirs["plural_expr"]
    assert _polite(js["messages"]) == set()
    assert js["messages"][NO_MATCH] == sphinx_words(ROOT)[NO_MATCH]
    assert js["messages"]["Search Results"] == theirs["messages"]["Search Results"]  # the rest is Sphinx's
    # the templates' words: ours first, Sphinx's behind them (as Sphinx's locale.init merges them)
    words = gettext.translation("sphinx", localedir=str(folder), languages=["zh_CN"])
    words.add_fallback(gettext.translation("sphinx", localedir=str(sphinx_catalogue("sphinx.mo").parents[2]),
                                           languages=["zh_CN"]))
    assert words.gettext(NO_MATCH) == sphinx_words(ROOT)[NO_MATCH] and POLITE not in words.gettext(NO_MATCH)
    assert words.gettext("Search") == "搜索"


def test_a_removed_override_lets_sphinxs_nin_through_and_a_renamed_message_is_refused(tmp_path):
    root = tmp_path / "course"
    (root / SPHINX_WORDS).parent.mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "notebooks").mkdir()
    text = (ROOT / SPHINX_WORDS).read_text(encoding="utf-8")
    (root / SPHINX_WORDS).write_text(text.split("#. the search page")[0], encoding="utf-8")
    js = sphinx_js_messages(sphinx_locale(root, tmp_path / "a") / "zh_CN" / "LC_MESSAGES" / "sphinx.js")
    assert _polite(js["messages"]) == {NO_MATCH}
    (root / SPHINX_WORDS).write_text(text.replace("did not match", "matched no"), encoding="utf-8")
    with pytest.raises(SystemExit, match="Sphinx has no message"):
        sphinx_locale(root, tmp_path / "b")


def test_the_themes_chinese_words_do_not_say_nin():
    import pydata_sphinx_theme
    import sphinx_book_theme

    files = [*Path(pydata_sphinx_theme.__file__).parent.glob("locale/zh*/LC_MESSAGES/*.mo"),
             *Path(sphinx_book_theme.__file__).parent.rglob("locales/zh_CN/LC_MESSAGES/*.mo")]
    assert len(files) == 2, files
    for path in files:
        with path.open("rb") as f:
            catalogue = gettext.GNUTranslations(f)
        assert _polite({str(k): str(v) for k, v in catalogue._catalog.items()}) == set(), path


def test_sphinx_builds_a_chinese_search_page_with_the_courses_words(tmp_path):
    from sphinx.application import Sphinx

    source = tmp_path / "src"
    source.mkdir()
    (source / "index.rst").write_text("Page\n====\n\n注意力\n", encoding="utf-8")
    folder = sphinx_locale(ROOT, tmp_path / "sphinx-locale")
    app = Sphinx(str(source), None, str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                 confoverrides={"language": "zh_CN", "locale_dirs": [str(ROOT / "locale"), str(folder)],
                                "html_search_language": "zh"},
                 status=None, warning=None, freshenv=True)
    app.build()
    shown = (tmp_path / "html" / "_static" / "translations.js").read_text(encoding="utf-8")
    assert "没有找到与你的搜索匹配的页面" in shown and POLITE not in shown
    assert "您" not in (tmp_path / "html" / "search.html").read_text(encoding="utf-8")


def test_the_translations_check_names_sphinxs_polite_you_and_a_renamed_message(tmp_path):
    from tinyk.translations.sphinx_words import sphinx_problems

    assert sphinx_problems(ROOT) == []
    root = tmp_path / "course"
    (root / SPHINX_WORDS).parent.mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "notebooks").mkdir()
    text = (ROOT / SPHINX_WORDS).read_text(encoding="utf-8")
    planted = text.replace("did not match", "matched no").replace("你可以", POLITE + "可以")
    (root / SPHINX_WORDS).write_text(planted, encoding="utf-8")
    found = sphinx_problems(root)
    assert len(found) == 3, found
    assert "Sphinx has no such message" in found[0] and "says the polite you" in found[1]
    assert found[2].startswith("sphinx.po: 'Your search did not match any documents.")
    assert "word it" in found[2]
