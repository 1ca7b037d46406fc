"""The Chinese site's downloads of its Markdown pages (tinyk.translations.sources) and the
words of its search (tinyk.translations.builds): each page's blocks, tables and glossary
included, in Chinese; the course's terms kept whole by the search's word cutter. The built
site's downloads and search are tested in test_site_zh.py."""

from __future__ import annotations

import pytest

from tinyk.courseware import checkout
from tinyk.translations.builds import search_dictionary, search_words
from tinyk.translations.sources import translate_page_source, translated_page

PAGE = """# Symbols

(symbols)=
The chapter uses these symbols.

| symbol | meaning |
|---|---|
| $B$ | batch size |
| `d` | model width |

- A list item.

```python
x = 1  # batch size
```

```{glossary}
Batch (批量)
  The $B$ sequences processed
  together in one call.

Logits
  Scores before the softmax.
```
"""

MESSAGES = {"Symbols": "符号", "The chapter uses these symbols.": "本章使用这些符号。", "symbol": "符号",
            "meaning": "含义", "$B$": "$B$", "batch size": "批量大小", "`d`": "`d`",
            "model width": "模型宽度",
            "A list item.": "一个列表项。", "Batch (批量)": "批量（batch）",
            "The $B$ sequences processed together in one call.": "一次调用中一起处理的 $B$ 个序列。",
            "Logits": "logits", "Scores before the softmax.": "softmax 之前的分数。"}


def test_a_page_s_every_block_is_translated_tables_and_glossary_included():
    missing: list[str] = []
    out = translate_page_source(PAGE, MESSAGES, missing, "book/symbols")
    assert missing == []
    lines = out.split("\n")
    assert lines[0] == "# 符号" and "(symbols)=" in lines and "本章使用这些符号。" in lines
    assert ["| 符号 | 含义 |", "|---|---|", "| $B$ | 批量大小 |", "| `d` | 模型宽度 |"] == \
        [ln for ln in lines if ln.startswith("|")]
    assert "- 一个列表项。" in lines
    assert "x = 1  # batch size" in lines  # code stays as it ran
    glossary = lines[lines.index("```{glossary}"):]
    assert glossary[:6] == ["```{glossary}", "批量（batch）", "  一次调用中一起处理的 $B$ 个序列。", "",
                            "logits", "  softmax 之前的分数。"]


def test_a_glossary_left_open_at_the_end_of_the_page_is_translated_to_its_last_line():
    """Markdown closes a fence at the end of the page (book/glossary.md ends so)."""
    missing: list[str] = []
    out = translate_page_source(PAGE.rstrip("\n").removesuffix("```"), MESSAGES, missing, "book/symbols")
    assert missing == [] and out.endswith("logits\n  softmax 之前的分数。\n")


def test_a_block_without_its_translation_is_named_and_left_as_it_is():
    """A careless catalogue: a table cell and a definition lack their translation."""
    messages = {k: v for k, v in MESSAGES.items() if k not in ("model width", "Scores before the softmax.")}
    missing: list[str] = []
    out = translate_page_source(PAGE, messages, missing, "book/symbols")
    assert missing == ["book/symbols: 'model width'", "book/symbols: 'Scores before the softmax.'"]
    assert "| `d` | model width |" in out and "  Scores before the softmax." in out


def test_a_table_cell_it_cannot_place_is_an_error_that_names_it():
    with pytest.raises(ValueError, match=r"book/x: cannot find the table cell 'a \| b'"):
        translate_page_source("| h |\n|---|\n| a \\| b |\n", {"h": "头"}, [], "book/x")


def test_every_markdown_page_of_the_book_has_its_chinese_source():
    """The catalogues of the book's Markdown pages cover every block (tables and glossary
    included): no message of a page's catalogue is left in English in its Chinese source."""
    from tinyk.courseware.chinese_notebooks import load_messages
    from tinyk.translations.sources import page_catalogue

    pages = sorted((checkout.ROOT / "book").glob("*.md"))
    assert len(pages) >= 8
    compared = 0
    for path in pages:
        text, missing = translated_page(checkout.ROOT, f"book/{path.stem}", path)
        assert missing == [], missing[:3]
        text, source = " ".join(text.split()), " ".join(path.read_text(encoding="utf-8").split())
        messages = load_messages(page_catalogue(checkout.ROOT, f"book/{path.stem}"))
        english = [en for en, zh in messages.items()  # not the table of contents' captions (intro.po)
                   if en != zh and len(en.split()) >= 4 and en in source]
        assert [en[:60] for en in english if en in text or messages[en] not in text] == [], path.name
        compared += len(english)
    assert compared >= 100
    glossary, _ = translated_page(checkout.ROOT, "book/glossary", checkout.ROOT / "book" / "glossary.md")
    assert "\n键值缓存（KV cache）\n  在生成的各步之间保留下来的" in glossary
    # a shell block's comments and a drawing come in Chinese too (blocks.po), the commands as they are
    instructors, _ = translated_page(checkout.ROOT, "book/instructors",
                                     checkout.ROOT / "book" / "instructors.md")
    assert "make students      # 等同于：tinyk course students\n```" in instructors
    assert "┌─ 沙箱（bubblewrap，无网络）" in instructors and "sandbox (bubblewrap" not in instructors


def test_the_search_words_are_the_course_s_chinese_terms():
    words = search_words()
    assert {"分组查询注意力", "旋转位置编码", "键值缓存", "填充掩码", "均方根归一化", "查询"} <= set(words)
    assert all("\u3400" <= ch <= "\u9fff" for word in words for ch in word) and min(map(len, words)) >= 2
    assert "查询、键、值" not in words and "SwiGLU 门控前馈网络" not in words  # cut at 、; a space: its parts


def test_the_dictionary_keeps_the_course_s_terms_whole_and_their_parts_too(tmp_path):
    """jieba cuts 键值缓存 and 旋转位置编码 into parts without the course's dictionary, so the
    search page (which looks a query up whole) would miss them; with it, each is a word, and
    its parts (注意力 within 分组查询注意力) are words too."""
    import jieba

    path = search_dictionary(checkout.ROOT, tmp_path)
    assert path.read_text(encoding="utf-8").split() == search_words()
    assert search_dictionary(checkout.ROOT, tmp_path) == path  # the same words, the same file
    text = "本节讲分组查询注意力与键值缓存，以及旋转位置编码。"
    jieba.setLogLevel(40)
    cutter = jieba.Tokenizer()
    before = set(cutter.cut_for_search(text))
    assert not {"分组查询注意力", "键值缓存", "旋转位置编码"} & before
    cutter.load_userdict(str(path))
    after = set(cutter.cut_for_search(text))
    assert {"分组查询注意力", "键值缓存", "旋转位置编码", "注意力", "查询", "缓存", "位置"} <= after
