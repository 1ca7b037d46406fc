"""Printed tables line up in Chinese as a terminal shows them (a wide character takes two
columns): on the Chinese pages, the translated lines of a table are spaced again after the
English columns (tinyk.translations.tables); in the Chinese notebooks, the labels a cell pads
to one width in English have one display width in Chinese (the code catalogues). The built
pages' tables are measured in tests/test_site_zh_outputs.py."""

from __future__ import annotations

import json
import re

import pytest

from tinyk.courseware import checkout
from tinyk.courseware.chinese_notebooks import (
    code_catalogue_path,
    code_messages,
    display_width,
    load_messages,
)
from tinyk.courseware.exercises import source_text
from tinyk.translations import outputs, tables

# 05.4's table as the English page prints it, and its lines as the catalogue translates them
# one by one (a wide character padded as two columns, never as one).
GQA_EN = [
    "MHA             H_kv=16: K and V projections 1,572,864 weights per layer, model total  82,594,560",
    "GQA (upstream)  H_kv= 8: K and V projections   786,432 weights per layer, model total  76,303,104",
    "MQA             H_kv= 1: K and V projections    98,304 weights per layer, model total  70,797,312",
]
GQA_ZH = [
    "MHA             H_kv=16：每层 K 和 V 投影 1,572,864 个权重，模型总计  82,594,560",
    "GQA（上游）      H_kv= 8：每层 K 和 V 投影   786,432 个权重，模型总计  76,303,104",
    "MQA             H_kv= 1：每层 K 和 V 投影    98,304 个权重，模型总计  70,797,312",
]
BATCH_EN = ["upstream, each prompt alone: ['4+3\\n', '13+5\\n']",
            "upstream, as one batch:      ['4+3\\n', '1+5\\n']",
            "tinyk, as one batch:         ['4+3\\n', '13+5\\n']"]
# (its labels padded by characters: the colons and values out of line by display width)
BATCH_ZH = ["上游，每个提示词单独生成：['4+3\\n', '13+5\\n']",
            "上游，作为一个批量   ：['4+3\\n', '1+5\\n']",
            "tinyk，作为一个批量        ：['4+3\\n', '13+5\\n']"]
COUNT_EN = ["tiny experiment   unique      14,563   naive      15,331   (difference V·d = 768)",
            "upstream default  unique  82,594,560   naive  87,313,152   (difference V·d = 4,718,592)"]
COUNT_ZH = ["小实验            唯一参数      14,563   朴素计数      15,331   （相差 V·d = 768）",
            "上游默认配置      唯一参数  82,594,560   朴素计数  87,313,152   （相差 V·d = 4,718,592）"]


def _where(lines: list[str], text: str, end: bool = False) -> set[int]:
    """The display columns where ``text`` starts (or ends) on each of ``lines``."""
    found = set()
    for line in lines:
        at = line.index(text) if text in line else line.index(text.split()[0])
        found.add(display_width(line[:at]) + (display_width(text) if end else 0))
    return found


def test_the_gqa_table_lines_up_by_display_width():
    assert len(_where(GQA_ZH, "H_kv")) > 1  # as translated line by line: not one column
    aligned = tables.align(GQA_EN, GQA_ZH)
    assert len(_where(aligned, "H_kv")) == 1
    assert len(_where(aligned, "每层")) == 1
    numbers_end = {display_width(line[:line.index(" 个权重")]) for line in aligned}
    assert len(numbers_end) == 1  # the numbers, padded on the left, end in one column
    assert len(_where(aligned, "模型总计")) == 1
    assert [line.split() for line in aligned] == [line.split() for line in GQA_ZH]  # only spaces change
    assert tables.align(GQA_EN, GQA_EN) == GQA_EN  # the English, already aligned, as it is


@pytest.mark.parametrize(("english", "chinese", "marks"), [
    (BATCH_EN, BATCH_ZH, ["['4+3"]),
    (COUNT_EN, COUNT_ZH, ["唯一参数", "朴素计数", "（相差"]),
])
def test_a_tables_columns_start_in_one_column(english, chinese, marks):
    aligned = tables.align(english, chinese)
    assert [len(_where(aligned, mark)) for mark in marks] == [1] * len(marks)
    assert [line.replace(" ", "") for line in aligned] == [line.replace(" ", "") for line in chinese]


def test_a_column_after_full_width_colons_follows_them_and_the_labels_pad_before_them():
    # the colon carries its own space: the values come right after it, the labels are padded
    # before it, and the colons line up in one column
    aligned = tables.align(BATCH_EN, BATCH_ZH)
    assert len(aligned) == 3 and all("\uff1a['4+3" in line for line in aligned)
    assert len(_where(aligned, "\uff1a")) == 1
    assert aligned[1] == "上游，作为一个批量      \uff1a['4+3\\n', '1+5\\n']"
    # a label's padding before its colon is part of its cell, not a gap
    assert [c.text for c in tables.cells("手算 \uff1ar = 3.5")] == ["手算 \uff1a", "r = 3.5"]
    assert tables.runs(BATCH_EN, BATCH_ZH) == [(0, 3)]


def test_lines_that_are_no_table_stay_as_printed():
    english = ["loss 2.604", "first loss 2.604, mean of the last 50 steps 0.666", "x  1"]
    chinese = ["损失 2.604", "第一步损失 2.604，最后 50 步的平均 0.666", "x  1"]
    assert tables.align(english, chinese) == chinese
    assert tables.align(english[:2], chinese) == chinese  # lines that do not pair up: as they are


def test_a_translated_text_has_its_table_aligned():
    catalogue = {"MHA             H_kv={0}: K and V projections {1} weights per layer, model total  {2}":
                 "MHA             H_kv={0}：每层 K 和 V 投影 {1} 个权重，模型总计  {2}",
                 "GQA (upstream)  H_kv= {0}: K and V projections   {1} weights per layer, model total  {2}":
                 "GQA（上游）      H_kv= {0}：每层 K 和 V 投影   {1} 个权重，模型总计  {2}",
                 "MQA             H_kv= {0}: K and V projections    {1} weights per layer, model total  {2}":
                 "MQA             H_kv= {0}：每层 K 和 V 投影    {1} 个权重，模型总计  {2}"}
    text, missing = outputs.translate_text("\n".join(GQA_EN) + "\n", catalogue)
    assert missing == [] and text.endswith("\n")
    assert text.rstrip("\n").split("\n") == tables.align(GQA_EN, GQA_ZH)
    assert len(_where(text.rstrip("\n").split("\n"), "H_kv")) == 1


_PADDED = re.compile(r"\S {2,}(\S|$)")


# a printed label: up to the last colon before the first placeholder, and the spaces after it
# (English), or up to that full-width colon (Chinese, which pads before it; a label kept in
# English, such as 05.2's "LayerNorm: ", keeps its colon and space)
_LABEL = {"en": re.compile(r"[^{]*: *|[^{]*"), "zh": re.compile(r"[^{]*\uff1a|[^{]*: *|[^{]*")}


def _label(text: str, language: str) -> str:
    return _LABEL[language].match(text)[0]


def _padded_label_groups():
    """(notebook, cell, [(English, Chinese), ...]) for each set of messages of one code cell of
    a student notebook whose labels (:func:`_label`) are one display width in English, one of
    them padded with spaces (labels printed one above the other, their values in one column)."""
    found = []
    for path in sorted((checkout.ROOT / "student").glob("*.ipynb")):
        words = load_messages(code_catalogue_path(checkout.ROOT, path.stem), code=True)
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] != "code":
                continue
            by_width: dict[int, list[str]] = {}
            for msgid, kind in code_messages(source_text(cell)):
                if kind == "message":
                    by_width.setdefault(display_width(_label(msgid, "en")), []).append(msgid)
            found += [(path.stem, i, [(m, words.get(m, "")) for m in group]) for group in by_width.values()
                      if len(group) > 1 and any(_PADDED.search(_label(m, "en")) for m in group)]
    return found


def test_the_chinese_notebooks_pad_their_labels_by_display_width():
    groups = _padded_label_groups()
    assert len(groups) >= 12  # 14 when this was written
    uneven = [(stem, i, pairs) for stem, i, pairs in groups
              if len({display_width(_label(zh, "zh")) for _, zh in pairs}) > 1]
    assert uneven == []
    assert any(stem == "05_6_head_protocol" and
               "upstream, as one batch:      {[tok.decode(row) for row in batched]}" in dict(pairs)
               for stem, _, pairs in groups)


def test_a_title_above_columns_of_numbers_and_a_coincidence_of_ends_move_nothing():
    # 05.5's table: its title's cells (split after colons) are no row of the numbers' columns,
    # and the numbers stay in theirs; 05.6's "label: value" lines whose values end at one place
    # by chance are no right-aligned column (only numbers are).
    english = ["3dm over the budget 8d², in % (rows: d; columns: multiple_of)",
               "     d        1       32       64      256",
               "   288    +0.00    +0.00    +0.00    +0.00"]
    chinese = ["3dm 超出预算 8d² 的百分比（行：d；列：multiple_of）", *english[1:]]
    assert tables.align(english, chinese) == chinese
    english = ["buffers: ['freqs_cos', 'freqs_sin']", "follows .to(float64): torch.float64"]
    chinese = ["缓冲区： ['freqs_cos', 'freqs_sin']", "随 .to(float64) 转换： torch.float64"]
    assert tables.align(english, chinese) == chinese


def test_a_chinese_table_the_code_already_lined_up_stays_as_printed():
    # 05.1's budget: f"{column(name, 21)} {count:>12,}" lines up by display width in Chinese
    # too, with gaps of its own: the page shows what that code prints.
    from tinyk.lessons.plotting import column

    english = [f"{column(n, 21)} {c:>12,}" for n, c in [("embedding", 4718592), ("norms", 19200)]]
    chinese = [f"{column(n, 21)} {c:>12,}" for n, c in [("词嵌入", 4718592), ("归一化", 19200)]]
    assert tables.align(english, chinese) == chinese
    shifted = [chinese[0].replace("  ", " ", 1), chinese[1]]  # not lined up: spaced again
    assert len({display_width(line) for line in tables.align(english, shifted)}) == 1
