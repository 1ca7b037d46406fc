"""The Chinese chapter pages print in Chinese (``_build/html/zh/notebooks``, built from the
same execution as the English pages; :mod:`tinyk.translations.outputs`).

Read from the built HTML, no browser: every line of a printed output (a stream, a text
result) that holds an English phrase, two Latin words joined by one space outside quoted
strings and ``<...>``, also holds Chinese, or is one of the lines the catalogue keeps as
printed (each with its reviewed reason, ``# kept: ...`` in ``locale/zh_CN/outputs.po``).
"""

from __future__ import annotations

import re

import pytest

from tinyk.courseware import checkout

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site-zh")]
HTML = checkout.ROOT / "_build" / "html"
_CJK = re.compile(r"[\u3400-\u9fff]")
_DATA = re.compile(r"""(?<![A-Za-z])'[^'\n]*'|"[^"\n]*"|<[^<>\n]*>""")
_PHRASE = re.compile(r"(?<![\w.])[A-Za-z]{2,} [A-Za-z]{2,}(?![\w(])")


def _printed_blocks(page) -> list[list[str]]:
    """The lines of each printed output of a page (a stream, a text result)."""
    from bs4 import BeautifulSoup, SoupStrainer

    # Only myst-nb's printed outputs are parsed: a third of the time of the whole page.
    outputs = SoupStrainer("div", class_=re.compile(r"^output (stream|text_plain)\b"))
    blocks = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser", parse_only=outputs).select("pre")
    return [re.split(r"\r\n|\r|\n", block.get_text()) for block in blocks]


def _printed_lines(page) -> list[str]:
    return [line for block in _printed_blocks(page) for line in block]


def _kept() -> set[str]:
    from tinyk.courseware.catalogues import outputs_catalogue, read_catalogue
    from tinyk.translations.outputs import KEPT

    return {str(m.id) for m in read_catalogue(outputs_catalogue())
            if m.id and any(c.startswith(KEPT) for c in m.user_comments)}


def _english(line: str) -> bool:
    return bool(_PHRASE.search(_DATA.sub(" ", line))) and not _CJK.search(line)


@pytest.fixture(scope="module")
def pages():
    found = sorted((HTML / "zh" / "notebooks").glob("*.html"))
    if not found:
        from tests.optional import missing

        missing("no Chinese edition in _build/html/zh: build it first (make book)")
    return {page.stem: (_printed_lines(page), _printed_lines(HTML / "notebooks" / page.name))
            for page in found}


def test_every_printed_line_with_words_on_a_chinese_chapter_page_is_chinese(pages):
    from tinyk.courseware.figure_text import message_key

    kept = _kept()
    assert len(pages) == len(checkout.notebook_paths())
    english = {stem: left for stem, (zh, _) in pages.items()
               if (left := [ln for ln in zh if _english(ln) and message_key(ln)[0] not in kept])}
    assert english == {}, f"printed lines left in English on the Chinese pages: {english}"


def _line_problems(zh: list[str], en: list[str], kept: set[str]) -> tuple[list[str], int]:
    """The lines of a Chinese page that do not match its English page's, and how many English
    lines have an English phrase: each is Chinese on the Chinese page, or a kept line printed
    as it is; the lines without words are the same."""
    from tinyk.courseware.figure_text import message_key

    if len(zh) != len(en):
        return [f"{len(zh)} lines on the Chinese page, {len(en)} on the English one"], 0
    problems = [f"{e!r} -> {z!r}" for z, e in zip(zh, en, strict=True)
                if (z != e if message_key(e)[0] in kept else _english(e) and not _CJK.search(z))]
    return problems, sum(1 for e in en if _english(e))


def test_the_chinese_pages_print_the_english_pages_lines_in_chinese(pages):
    # The same execution, line for line: each English phrase is Chinese on the Chinese page, or
    # a line the catalogue keeps as printed, and the lines without words are the same.
    kept = _kept()
    assert len(pages) == len(checkout.notebook_paths()) >= 9
    found = {stem: _line_problems(zh, en, kept) for stem, (zh, en) in pages.items()}
    assert {stem: problems for stem, (problems, _) in found.items() if problems} == {}
    phrases = sum(count for _, count in found.values())
    assert phrases >= 130, phrases  # 141 lines with an English phrase when this was written
    rope = pages["05_3_rope"]
    assert "largest change of any score under a common shift: 1.64e-14" in rope[1]
    assert "所有位置共同平移时，分数的最大变化：1.64e-14" in rope[0]


def _code_lines(page) -> list[str]:
    """The lines of a page's code cells (the translated code the Chinese page shows)."""
    from bs4 import BeautifulSoup, SoupStrainer

    inputs = SoupStrainer("div", class_=re.compile(r"^cell_input\b"))
    blocks = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser", parse_only=inputs).select("pre")
    return [line for block in blocks for line in re.split(r"\r\n|\r|\n", block.get_text())]


def _spaced_colons(lines: list[str]) -> list[str]:
    """The lines with a space after a full-width colon, which carries its own space (a column
    pads its labels before the colon: tinyk.translations.tables)."""
    return [line for line in lines if "\uff1a " in line]


def test_a_line_with_a_space_after_a_full_width_colon_is_found():
    lines = ["形状：(2, 3) | 对称：True", "手算     ：r = 3.5", "LayerNorm: y = [1.0]", "形状： (2, 3)",
             '    print(f"上游，作为一个批量：   {x}")']
    assert _spaced_colons(lines) == lines[3:]


def test_no_space_follows_a_full_width_colon_on_a_chinese_chapter_page(pages):
    # printed lines, and the translated code above them
    assert len(pages) == len(checkout.notebook_paths())
    code = {page.stem: _code_lines(page) for page in sorted((HTML / "zh" / "notebooks").glob("*.html"))}
    spaced = {stem: found for stem, (zh, _) in pages.items() if (found := _spaced_colons(zh + code[stem]))}
    assert spaced == {}
    printed = sum(line.count("\uff1a") for zh, _ in pages.values() for line in zh)
    shown = sum(line.count("\uff1a") for lines in code.values() for line in lines)
    assert printed >= 100 and shown >= 100, (printed, shown)


def _error_messages(page) -> list[str]:
    """The last line of each error a page shows: ``ValueError: <the message>``."""
    from bs4 import BeautifulSoup, SoupStrainer

    errors = SoupStrainer("div", class_=re.compile(r"^output traceback\b"))
    blocks = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser", parse_only=errors).select("pre")
    return [block.get_text().rstrip("\n").rsplit("\n", 1)[-1] for block in blocks]


def _error_problems(zh: list[str], en: list[str], kept: set[str]) -> list[str]:
    """The errors of a Chinese page whose message is neither Chinese nor, for a kept message
    (Python's or PyTorch's own), the English page's as it is."""
    from tinyk.courseware.figure_text import message_key

    def kept_message(line: str) -> bool:
        # A SyntaxError's message is kept with the place Python's str() adds to it, "(<unknown>,
        # line 6)", which its traceback's last line does not show.
        key = message_key(line.partition(": ")[2])[0]
        whole = message_key(line)[0]  # a printed error line is kept whole, its exception's name first
        return key in kept or whole in kept or any(k.startswith((f"{key} (<", f"{whole} (<")) for k in kept)

    if len(zh) != len(en):
        return [f"{len(zh)} errors on the Chinese page, {len(en)} on the English one"]
    return [f"{e!r} -> {z!r}" for z, e in zip(zh, en, strict=True)
            if (z != e if kept_message(e) else not _CJK.search(z))]


_ERROR_LINE = re.compile(r"^[A-Z]\w*(?:Error|Exception): ")


def test_the_errors_the_chinese_pages_show_have_chinese_messages_or_pythons_own(pages):
    # A cell that shows an error catches it and prints it (as Colab's "Run all" must reach the
    # end): no page shows a traceback, and each printed error line is the package's refusal
    # (ModelConfig's, reshape_for_broadcast's, the attention mask's) in Chinese, or a message
    # Python or PyTorch wrote, as the reader's own run prints it, followed by a Chinese gloss.
    kept = _kept()
    tracebacks = {page.stem: shown for page in sorted((HTML / "zh" / "notebooks").glob("*.html"))
                  if (shown := _error_messages(page) + _error_messages(HTML / "notebooks" / page.name))}
    assert tracebacks == {}, tracebacks
    found = {stem: ([ln for ln in zh if _ERROR_LINE.match(ln)], [ln for ln in en if _ERROR_LINE.match(ln)])
             for stem, (zh, en) in pages.items()}
    assert sum(len(en) for _, en in found.values()) >= 12  # 13 printed when this was written
    assert {stem: p for stem, (zh, en) in found.items() if (p := _error_problems(zh, en, kept))} == {}
    # Python's and PyTorch's own messages: as the reader's own run prints them, then a gloss.
    glossed = {ln.split(":")[0]: ln for zh, _ in found.values() for ln in zh if "（中文说明：" in ln}
    assert set(glossed) >= {"IndentationError", "SyntaxError", "RuntimeError", "TypeError"}, glossed
    assert glossed["RuntimeError"].startswith("RuntimeError: Boolean value of Tensor with more than one")
    assert "ValueError: ModelConfig.n_layers=0：必须是正整数" in found["05_1_shapes"][0]
    assert "ValueError: ModelConfig.n_layers=0: must be a positive integer" in found["05_1_shapes"][1]


# A printed table of each page the Chinese edition's readers found misaligned: a text its
# rows hold (in the English edition).
TABLES = {"05_4_gqa": ["K and V projections"], "05_6_head_protocol": ["unique", "as one batch"],
          "05_7_checks": ["generated lines ending"], "05_9_text_vs_file": ["one row"],
          "05_10_real_weights": ["layout:"]}


def _tables(english: list[str], chinese: list[str]) -> list[tuple[list[str], list[str]]]:
    """(English rows, Chinese rows) of each table of one printed output, as the Chinese build
    finds them (tinyk.translations.tables.runs)."""
    from tinyk.translations.tables import runs

    return [(english[n:end], chinese[n:end]) for n, end in runs(english, chinese)]


def _misaligned(english: list[str], chinese: list[str]) -> tuple[list[str], int]:
    """The columns of a table that do not start (or, for one padded on the left, end) at one
    display column in each edition, and how many columns were measured."""
    from tinyk.courseware.chinese_notebooks import display_width
    from tinyk.translations.tables import cells, column_of

    rows = {"en": [cells(line) for line in english], "zh": [cells(line) for line in chinese]}
    problems, groups = [], {}
    for (i, k), key in column_of(rows["en"]).items():
        groups.setdefault(key, []).append((i, k))
    for key, members in groups.items():
        for edition, table in rows.items():
            at = {table[i][k].start + (display_width(table[i][k].text) if key[0] == "end" else 0)
                  for i, k in members}
            if len(at) != 1:
                problems.append(f"{edition}: column {key} at display columns {sorted(at)}: "
                                f"{[(english if edition == 'en' else chinese)[i] for i, _ in members]}")
    return problems, len(groups)


@pytest.fixture(scope="module")
def printed_blocks():
    found = {page.stem: (_printed_blocks(page), _printed_blocks(HTML / "notebooks" / page.name))
             for page in sorted((HTML / "zh" / "notebooks").glob("*.html"))}
    if not found:
        from tests.optional import missing

        missing("no Chinese edition in _build/html/zh: build it first (make book)")
    return found


def test_every_printed_table_lines_up_in_both_editions(printed_blocks):
    """Each printed table's columns start (a column padded on the left: end) at one display
    column, a Chinese character counting two, on the English page and on the Chinese one
    (tinyk.translations.tables); the tables named in TABLES are among those measured."""
    measured, problems, found = 0, [], {stem: [] for stem in TABLES}
    assert len(printed_blocks) == len(checkout.notebook_paths())
    for stem, (zh_blocks, en_blocks) in printed_blocks.items():
        assert len(zh_blocks) == len(en_blocks), stem
        for zh, en in zip(zh_blocks, en_blocks, strict=True):
            for en_rows, zh_rows in _tables(en, zh) if len(en) == len(zh) else []:
                wrong, columns = _misaligned(en_rows, zh_rows)
                problems += [f"{stem}: {p}" for p in wrong]
                measured += columns
                found.get(stem, []).extend(m for m in TABLES.get(stem, []) if columns and
                                           any(m in row for row in en_rows))
    assert problems == []
    assert {stem: sorted(set(marks)) for stem, marks in found.items()} == \
        {stem: sorted(marks) for stem, marks in TABLES.items()}
    assert measured >= 20, measured
