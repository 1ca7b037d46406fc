"""The words in the course's figures, in Chinese for the book's Chinese edition and for a
Chinese learner's kernel.

The book runs each notebook once for both editions (the execution cache), so a figure's
Chinese version must be drawn in that same run. When ``TINYK_FIGURES_ZH=1`` is set (``make
book`` and ``make test`` set it; Jupyter and Colab never need it), every course figure and
every pre-rendered slider draws itself a second time with its words translated: the
English output is unchanged, and the Chinese one travels in the output's metadata
(``metadata["tinyk"]["zh"]``), where the Chinese build takes it from.

A kernel of a Chinese student notebook (``TINYK_LANGUAGE=zh_CN``, set by its setup cell)
shows every course figure and slider frame in Chinese instead, when it finds a font that
draws Chinese (:data:`CJK_FAMILIES`; without one, the figure stays English rather than
showing empty boxes).

The translations are the catalogue ``tinyk/locale/figures_zh_CN.po`` (gettext, like the
pages'), shipped inside the package and read with the standard library, so a learner's
Colab needs no course checkout (:func:`tinyk.translations.package_catalogue.read_words`). Numbers are
not part of a message: ``"loss after 300 steps"`` is looked up as ``"loss after {0}
steps"``, and its Chinese, with ``{0}`` where Chinese word order puts the number (before
the words for "steps" and "loss"), gets the number back. A figure string without a
translation stays English and is listed in the metadata (``missing``); the Chinese build
fails on it, naming the string, and ``make translations`` adds it to the catalogue. Only
words are translated: titles, axis labels, legends, text placed on the axes, slider labels
and the text of HTML calculators. Tick labels are data (token strings, numbers) and stay as
they are, except on an axis whose ticks name categories in words
(:func:`tinyk.lessons.plotting.word_ticks`).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinyk.environment import FIGURES_ZH, feedback_in_chinese, figures_in_chinese

__all__ = ["ENV", "CATALOGUE", "CJK_FAMILIES", "CJK_FAMILY", "FULL_WIDTH_MARKS", "WORD_TICKS",
           "catalogue_path", "chinese_font", "collecting", "drawable", "enabled", "fill", "for_the_learner",
           "in_chinese", "message_key", "needs_words", "to_english", "translate", "translate_html"]

ENV = FIGURES_ZH  # the switch (tinyk.environment)
WORD_TICKS = "tinyk_word_ticks"  # an axis's attribute: (ticks, labels) when its labels are words
CATALOGUE = Path(__file__).resolve().parents[1] / "locale" / "figures_zh_CN.po"
CJK_FAMILY = "Noto Sans CJK SC"  # Debian's fonts-noto-cjk (make cjk-fonts installs it): the book's
# The fonts that draw Chinese, the first found used: the book's, then those of other systems.
CJK_FAMILIES = (CJK_FAMILY, "Source Han Sans SC", "Microsoft YaHei", "SimHei", "PingFang SC",
                "Hiragino Sans GB", "WenQuanYi Zen Hei", "Noto Sans SC")
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?")
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
_MATH = re.compile(r"\$[^$]*\$")
_WORDS = re.compile(r"[A-Za-z]{2,}")
_TAG = re.compile(r"(<[^>]*>)")
_CJK = re.compile(r"[\u3400-\u9fff]")
# A full-width mark (colon, comma, semicolon, full stop, ...) and the tags after it, then the
# spaces that the English put there.
FULL_WIDTH_MARKS = "[\uff1a\uff0c\uff1b\u3002\uff01\uff1f\u3001]"
_SPACE_AFTER_MARK = re.compile(f"({FULL_WIDTH_MARKS})((?:<[^>]*>)*)[ \t]+")
_missing: list[set[str]] = []  # one set per open collecting() block


def enabled() -> bool:
    """True when figures should also be drawn in Chinese (``TINYK_FIGURES_ZH=1``,
    :mod:`tinyk.environment`)."""
    return figures_in_chinese()


def for_the_learner() -> bool:
    """True when a figure shows itself in Chinese to the learner: in a Chinese notebook's
    kernel (``TINYK_LANGUAGE=zh_CN``), not in the book's run, with a Chinese font at hand."""
    return feedback_in_chinese() and not enabled() and chinese_font() is not None


def catalogue_path() -> Path:
    """The figures' catalogue, ``tinyk/locale/figures_zh_CN.po`` (:data:`CATALOGUE`)."""
    return CATALOGUE


@functools.cache
def _catalogue() -> dict[str, str]:
    # Without the file every string is reported missing, and the Chinese build names them.
    from tinyk.translations.package_catalogue import read_words

    path = catalogue_path()
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return {english: chinese for (_, english), chinese in read_words(text).items()}


def message_key(text: str) -> tuple[str, list[str]]:
    """(the catalogue's message for ``text``, the numbers taken out of it, in order)."""
    numbers: list[str] = []

    def take(match: re.Match[str]) -> str:
        numbers.append(match[0])
        return "{" + str(len(numbers) - 1) + "}"

    return _NUMBER.sub(take, text), numbers


def fill(message: str, numbers: list[str]) -> str:
    """A catalogue's translation of a :func:`message_key` message with its numbers put back:
    ``{0}`` becomes ``numbers[0]``, wherever the translation places it."""
    return _PLACEHOLDER.sub(lambda m: numbers[int(m[1])], message)


def needs_words(text: str) -> bool:
    """Whether ``text`` has words to translate (outside ``$maths$``), not only numbers,
    symbols and one-letter names."""
    return bool(_WORDS.search(_MATH.sub(" ", text)))


def translate(text: str) -> str:
    """``text`` in Chinese, from the catalogue; unchanged (and recorded as missing) when the
    catalogue has no entry, unchanged when it has no words."""
    if not needs_words(text):
        return text
    key, numbers = message_key(text)
    chinese = _catalogue().get(key)
    if chinese is None:
        for missing in _missing:
            missing.add(key)
        return text
    return fill(chinese, numbers)


def translate_html(fragment: str) -> str:
    """An HTML fragment (a calculator's table, a slider's label) with each run of text
    between tags translated, and the tags and their attributes kept. The space that follows
    an English colon goes where a full-width mark now ends the text (05.1's slider: a full-width
    colon, ``</b>``, then the word for valid, no space): the mark carries its own space."""
    joined = "".join(part if part.startswith("<") or not part.strip() else _keep_space(part)
                     for part in _TAG.split(fragment))
    return _SPACE_AFTER_MARK.sub(r"\1\2", joined)


def _keep_space(part: str) -> str:
    lead, core, trail = re.match(r"(\s*)(.*?)(\s*)$", part, re.S).groups()
    return lead + translate(core) + trail


@contextmanager
def collecting() -> Iterator[set[str]]:
    """Collect the messages that :func:`translate` could not find inside the block."""
    found: set[str] = set()
    _missing.append(found)
    try:
        yield found
    finally:
        _missing.remove(found)


@functools.cache
def chinese_font() -> str | None:
    """The first of :data:`CJK_FAMILIES` that matplotlib can draw with, or None. Noto Sans CJK
    SC is registered with matplotlib when its font list (cached from before the font was
    installed) does not have it."""
    from matplotlib import font_manager

    if CJK_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
        files = subprocess.run(["fc-list", f":family={CJK_FAMILY}", "file"], capture_output=True,
                               text=True, check=False).stdout if shutil.which("fc-list") else ""
        for line in sorted({ln.split(":")[0].strip() for ln in files.splitlines() if ln.strip()}):
            font_manager.fontManager.addfont(line)
    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((family for family in CJK_FAMILIES if family in names), None)


def _cjk_families() -> list[str]:
    """The font families for Chinese figure text: matplotlib's default, falling back to the
    Chinese font glyph by glyph."""
    import matplotlib

    font = chinese_font()
    if font is None:
        raise RuntimeError(f"Chinese figure text needs a Chinese font, such as {CJK_FAMILY!r}: install "
                           f"Debian's fonts-noto-cjk (`make cjk-fonts`, or apt-get install fonts-noto-cjk)")
    return [*matplotlib.rcParams["font.sans-serif"][:1], font]


def _words_of(fig: Any) -> list[Any]:
    """Every Text artist of ``fig`` that holds words: titles, axis labels, legends, texts."""
    texts = list(fig.texts)
    if getattr(fig, "_suptitle", None) is not None:
        texts.append(fig._suptitle)
    legends = list(fig.legends)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
    for legend in legends:
        texts += [legend.get_title(), *legend.get_texts()]
    return [t for t in texts if t.get_text()]


@contextmanager
def in_chinese(fig: Any) -> Iterator[Any]:
    """Inside the block, ``fig``'s words are Chinese, drawn with a CJK font; afterwards the
    figure is exactly as it was."""
    from matplotlib import rcParams

    families, english = _cjk_families(), rcParams["font.family"]
    saved = [(t, t.get_text(), t.get_fontproperties().copy()) for t in _words_of(fig)]
    word_axes = [(axis, *getattr(axis, WORD_TICKS)) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                 if getattr(axis, WORD_TICKS, None) is not None]
    fig._tinyk_language = "zh"
    try:
        for text, words, _ in saved:
            text.set_text(translate(words))
            text.set_fontfamily(families)
        for axis, ticks, labels in word_axes:
            axis.set_ticks(ticks, [translate(label) for label in labels], fontfamily=families)
        yield fig
    finally:
        for text, words, font in saved:
            text.set_text(words)
            text.set_fontproperties(font)
        for axis, ticks, labels in word_axes:
            axis.set_ticks(ticks, labels, fontfamily=english)
        fig._tinyk_language = "en"


def _english_of() -> dict[str, str]:
    return {chinese: english for english, chinese in _catalogue().items()}


def to_english(text: str) -> str:
    """A figure's Chinese ``text`` in English, the catalogue read backwards (unchanged when it
    has no Chinese or the catalogue has no such translation)."""
    if not _CJK.search(text):
        return text
    key, numbers = message_key(text)
    english = _english_of().get(key)
    return text if english is None else fill(english, numbers)


@contextmanager
def drawable(fig: Any) -> Iterator[Any]:
    """Inside the block, a figure whose code gave it Chinese words (a Chinese notebook's:
    :func:`tinyk.courseware.chinese_notebooks.translate_figure_words`) can be drawn here: with a Chinese
    font, its words are set in it; without one, they are English (:func:`to_english`), as a
    Chinese kernel without a Chinese font draws every course figure. A figure without Chinese
    is left as it is."""
    chinese = [t for t in _words_of(fig) if _CJK.search(t.get_text())]
    word_axes = [(axis, *getattr(axis, WORD_TICKS)) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                 if getattr(axis, WORD_TICKS, None) is not None]
    word_axes = [(axis, ticks, labels) for axis, ticks, labels in word_axes if _CJK.search("".join(labels))]
    if not chinese and not word_axes:
        yield fig
        return
    if chinese_font() is not None:
        with in_chinese(fig):
            yield fig
        return
    saved = [(t, t.get_text()) for t in chinese]
    try:
        for text, words in saved:
            text.set_text(to_english(words))
        for axis, ticks, labels in word_axes:
            axis.set_ticks(ticks, [to_english(label) for label in labels])
        yield fig
    finally:
        for text, words in saved:
            text.set_text(words)
        for axis, ticks, labels in word_axes:
            axis.set_ticks(ticks, labels)
