"""What the Chinese edition changes in a page after Sphinx reads it (tinyk.translations.pages):
the comments, docstrings and messages of the code shown (a solution's included) from the code
catalogue, and the glossary in pinyin order. No build here: a doctree made as myst-nb makes it."""

from __future__ import annotations

import json

import pytest
from docutils import nodes
from sphinx import addnodes

from tinyk.courseware import catalogues, checkout
from tinyk.courseware.chinese_notebooks import (
    code_catalogue_path,
    code_messages,
    load_messages,
    same_code,
    translate_code,
)
from tinyk.courseware.exercises import is_solution
from tinyk.translations import pages

ROOT = checkout.ROOT
GQA = ROOT / "notebooks" / "05_4_gqa.ipynb"


def _page(*sources: str) -> nodes.document:
    """A doctree holding one myst-nb code cell per source, each with an output block (whose
    text is never translated: outputs are the English execution's)."""
    from docutils.utils import new_document

    document = new_document("<page>")
    for i, text in enumerate(sources):
        cell = nodes.container(nb_element="cell_code", cell_index=i, classes=["cell"])
        code = nodes.container(nb_element="cell_code_source", classes=["cell_input"])
        code += nodes.literal_block(text, text, language="ipython3")
        out = nodes.container(nb_element="cell_code_output", classes=["cell_output"])
        out += nodes.literal_block("# finite: never 0/0", "# finite: never 0/0")
        cell += [code, out]
        document += cell
    return document


@pytest.fixture(scope="module")
def solution() -> str:
    """The solution of gqa_attention as the book shows it (no student version has it)."""
    nb = json.loads(GQA.read_text(encoding="utf-8"))
    solutions = {i for i, cell in enumerate(nb["cells"]) if is_solution(cell)}
    shown = [code for i, code in pages.shown_code(nb) if i in solutions and "def gqa_attention" in code]
    assert len(shown) == 1
    return shown[0]


def test_a_solution_cell_shows_chinese_comments_and_docstring_and_the_same_code(solution):
    assert "# finite: never 0/0" in solution and "### BEGIN SOLUTION" not in solution
    messages = load_messages(code_catalogue_path(ROOT, GQA.stem), code=True)
    page = _page(solution)
    assert pages.translate_code_cells(page, messages, "notebooks/05_4_gqa.ipynb") == []
    shown, output = (block.astext() for block in page.findall(nodes.literal_block))
    assert "# 有限值：绝不会出现 0/0" in shown and "# finite" not in shown
    assert '"""因果的分组查询注意力' in shown, shown[:300]
    assert "Causal grouped-query attention" not in shown
    assert same_code(shown, solution)  # every token of the code as it ran
    block = next(iter(page.findall(nodes.literal_block)))
    assert block.rawsource == shown  # what Sphinx's HTML writer highlights
    assert output == "# finite: never 0/0"  # an output is not code shown


def test_messages_are_the_chinese_notebooks_and_a_missing_text_is_named():
    source = ('def f(x):\n    """Return x."""\n    # check the input\n'
              '    assert x, "x must not be empty"\n    print("x is", x)\n'
              '    raise ValueError(f"bad {x}")  # never here\n')
    messages = {"Return x.": "返回 x。", "check the input": "检查输入", "x is": "x 是",
                "x must not be empty": "x 不能为空", "bad {x}": "错误 {x}"}
    page = _page(source, "%xmode minimal  # a magic, not Python")
    missing = pages.translate_code_cells(page, messages, "nb.ipynb")
    shown = next(iter(page.findall(nodes.literal_block))).astext()
    assert '"""返回 x。"""' in shown and "# 检查输入" in shown
    # A visible test's, a print's and an error's message: as the Chinese notebook has them.
    assert '"x 不能为空"' in shown and 'print("x 是", x)' in shown and 'f"错误 {x}"' in shown
    assert shown == translate_code(source, messages, [], "nb.ipynb")  # the notebooks' one function
    assert "must not be empty" not in shown and same_code(shown, source)
    assert missing == [
        "nb.ipynb: cell 0: 'never here'",
        "nb.ipynb: cell 1: not read as Python (invalid syntax), its comments are not translated"]


def test_the_shown_code_of_a_page_leaves_out_removed_cells_and_keeps_solutions():
    nb = json.loads(GQA.read_text(encoding="utf-8"))
    shown = dict(pages.shown_code(nb))
    removed = [i for i, c in enumerate(nb["cells"]) if "remove-cell" in c.get("metadata", {}).get("tags", [])]
    assert removed and not set(removed) & set(shown)
    texts = {m for _, code in shown.items() for m, kind in code_messages(code) if kind in pages.SHOWN_KINDS}
    catalogue = load_messages(code_catalogue_path(ROOT, GQA.stem), code=True)
    assert {"finite: never 0/0", "no allowed key: zeros"} <= texts <= set(catalogue)
    assert any(kind == "message" for _, code in shown.items() for _, kind in code_messages(code))


@pytest.mark.parametrize(("earlier", "later"), [
    ("残差连接（residual connection）", "残差流（residual stream）"),  # can cha lian < can cha liu
    ("词表（vocabulary）", "多头注意力（multi-head attention, MHA）"),  # ci < duo
    ("多查询注意力（multi-query attention, MQA）", "多头注意力（multi-head attention, MHA）"),  # cha < tou
    ("键值缓存（KV cache）", "解码器层（decoder layer）"),  # jian < jie
    ("批量（batch）", "前向钩子（forward hook）"),  # pi < qian
    ("缩放点积注意力（scaled dot-product attention, SDPA）", "SwiGLU 门控前馈网络（SwiGLU）"),  # suo < swiglu
    ("SwiGLU 门控前馈网络（SwiGLU）", "贪心解码（greedy decoding）"),  # swiglu < tan
    ("提示词（prompt）", "token"),  # ti < token
    ("层归一化（layer normalisation, LayerNorm）", "查询、键、值（query, key, value）"),  # ceng < cha
])
def test_pinyin_order_is_a_chinese_dictionarys(earlier, later):
    assert catalogues.pinyin_key(earlier) < catalogues.pinyin_key(later)


def test_the_glossary_is_sorted_by_pinyin_and_keeps_its_anchors():
    document = nodes.document(None, None)
    glossary, entries = addnodes.glossary(), nodes.definition_list(classes=["glossary"])
    for headword, anchor in [("批量（batch）", "term-Batch"), ("token", "term-Token"),
                             ("词表（vocabulary）", "term-Vocabulary"), ("奈特（nat）", "term-Nat")]:
        entries += nodes.definition_list_item("", nodes.term(headword, headword, ids=[anchor]),
                                              nodes.definition())
    glossary += entries
    document += glossary
    assert pages.sort_glossaries(document) == 4
    assert [(t.astext(), t["ids"]) for t in document.findall(nodes.term)] == [
        ("词表（vocabulary）", ["term-Vocabulary"]), ("奈特（nat）", ["term-Nat"]),
        ("批量（batch）", ["term-Batch"]), ("token", ["term-Token"])]


def test_a_hints_pseudocode_is_translated_on_the_page_and_code_is_not():
    """A literal block in a dropdown (a hint's pseudocode) takes its translation from the code
    catalogue; a code cell's source, an output and a block with a language stay as they are."""
    messages = load_messages(code_catalogue_path(ROOT, GQA.stem), code=True)
    english = next(m for m in messages if m.startswith("scores = q @ kᵀ"))
    page = _page("x = 1  # scores = q @ kᵀ")
    dropdown = nodes.container(design_component="dropdown")
    dropdown += nodes.literal_block(english + "\n", english + "\n", language="default")
    dropdown += nodes.literal_block("python -m tinyk check", "python -m tinyk check", language="bash")
    dropdown += nodes.literal_block("unknown pseudocode", "unknown pseudocode", language="text")
    page += dropdown
    assert pages.translate_pseudocode_blocks(page, messages, "nb.ipynb") == [
        "nb.ipynb: pseudocode 'unknown pseudocode'"]
    blocks = [block.astext() for block in page.findall(nodes.literal_block)]
    assert blocks[2] == messages[english] + "\n" and "被屏蔽的分数" in blocks[2]
    assert blocks[:2] == ["x = 1  # scores = q @ kᵀ", "# finite: never 0/0"]
    assert blocks[3:] == ["python -m tinyk check", "unknown pseudocode"]


def test_every_text_of_the_code_the_chinese_pages_show_has_its_translation():
    # Solutions included: what no student notebook has (05.3's refusals, say) is in the
    # catalogue too (`update` adds it), so no page shows a message in English.
    missing, count = [], 0
    for source in checkout.notebook_paths():
        messages = load_messages(code_catalogue_path(ROOT, source.stem), code=True)
        for i, code in pages.shown_code(json.loads(source.read_text(encoding="utf-8"))):
            count += 1
            translate_code(code, messages, missing, f"{source.stem}: cell {i}", kinds=pages.SHOWN_KINDS)
    assert count >= 150 and len(checkout.notebook_paths()) >= 9
    assert missing == []


CALCULATOR = '''def panel(H_q, H_kv):
    if H_q % H_kv:
        return f"<p>H_q={H_q} is not divisible by H_kv={H_kv}: no equal groups</p>"
    rows = [("saving", f"{H_q // H_kv}×")]
    return "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in rows)


slider(panel, H_q=Choice([16], label="H_q (query heads)", default=16), H_kv=Choice([8], label="bogus words"))
fig, ax = figure()
for ax, title in zip(axes, ("grouped: [0, 0, 1, 1]", "tiled: [0, 1, 0, 1]")):
    label(ax, title, "head", "")
print("training")  # a message: the code catalogue's, not a figure's
'''


def test_the_words_figures_sliders_and_calculators_draw_are_chinese_in_the_page_code():
    # From the figures' catalogue, as the figure below the code draws them: a calculator's
    # returned HTML and the rows flowing into it, a slider's labels, a plot's title through a
    # loop, its axis label; a placeholder stays as it is; a word the catalogue lacks is named.
    from tinyk.courseware.chinese_notebooks import translate_figure_words

    missing: list[str] = []
    chinese = translate_figure_words(CALCULATOR, missing, "page")
    assert missing == ["page: figure words 'bogus words' (tinyk/locale/figures_zh_CN.po)"]
    assert 'f"<p>H_q={H_q} 不能被 H_kv={H_kv} 整除：无法均分成组</p>"' in chinese
    assert '("缓存缩小倍数", f"{H_q // H_kv}×")' in chinese
    assert 'label="H_q（查询头数）"' in chinese and 'label="bogus words"' in chinese
    assert '("分组：[0, 0, 1, 1]", "平铺：[0, 1, 0, 1]")' in chinese
    assert 'label(ax, title, "头", "")' in chinese
    assert 'print("training")' in chinese  # not a figure's word
    assert same_code(chinese, CALCULATOR)


def test_a_loops_labels_that_a_legend_shows_first_are_read_in_the_legends_message():
    # 05.7's reference lines: the catalogue holds "unigram entropy: {0}" and "format only: {0}",
    # so the labels are their Chinese beginnings and the f-string keeps their common end.
    from tinyk.courseware.chinese_notebooks import translate_figure_words

    code = ('for value, name in [(2.36, "unigram entropy"), (1.15, "format only")]:\n'
            '    ax.axhline(value, label=f"{name}: {value:.2f}")\n')
    missing: list[str] = []
    chinese = translate_figure_words(code, missing, "page")
    assert missing == []
    assert '[(2.36, "一元语法熵"), (1.15, "只学会格式")]' in chinese
    assert 'label=f"{name}：{value:.2f}"' in chinese and same_code(chinese, code)
