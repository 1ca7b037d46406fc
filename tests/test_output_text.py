"""Printed output in Chinese (tinyk.translations.outputs): which lines have words, a line
translated with its numbers put back in the translation's order, a line without words left
as printed, a missing message named by the Chinese build, the catalogue's messages found in
the execution cache and checked like the figures'."""

from __future__ import annotations

import json

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from tinyk.translations import outputs
from tinyk.translations.checks import output_problems

CATALOGUE = {
    "{0} of {1} prompts completed": "{1} 个提示词中有 {0} 个被补全",
    "first loss {0}, mean of the last {1} steps {2}": "第一步损失 {0}，最后 {1} 步的平均 {2}",
    "training": "训练",
}


@pytest.mark.parametrize("line", [
    "tensor([[1, 1, 1, 1, 0],", "        [1, 1, 1, 1, 1]], dtype=torch.int32)", "8+4=42",
    "  1024    -0.02    +0.78", "{'w1.weight': (64, 32), 'w2.weight': (32, 64)}", '      "passed": true',
    "<CourseFigure size 400x288 with 1 Axes>", "repeat_kv == repeat_interleave: True",
    "layers.0                 DecoderLayer  2×5×32  2×5×32", "",
])
def test_a_line_of_numbers_code_or_data_has_no_words(line):
    assert not outputs.has_words(line)
    assert outputs.translate_line(line, {}) == (line, None)  # as printed, nothing missing


@pytest.mark.parametrize("line", [
    "same tensor: True", "tinyk's loss counts them: 5.117", "right layout: 'The capital of France is Paris.'",
    "upstream, hand-written path, query 0: [nan, nan, nan, nan]", "embedding     4,718,592",
])
def test_a_line_with_words_is_translated(line):
    assert outputs.has_words(line)


def test_numbers_come_back_in_the_translations_order():
    assert outputs.translate_line("7 of 12 prompts completed", CATALOGUE) == (
        "12 个提示词中有 7 个被补全", None)
    assert outputs.translate_line("first loss 2.604, mean of the last 50 steps 0.666", CATALOGUE) == (
        "第一步损失 2.604，最后 50 步的平均 0.666", None)


def test_a_progress_bar_has_its_description_translated_and_the_rest_kept():
    bar = "training:  42%|████████           | 253/600 [00:07<00:10, 33.84it/s, loss=0.809]"
    assert outputs.translate_line(bar, CATALOGUE) == ("训练：" + bar[len("training:  "):], None)
    assert outputs.translate_line(bar, {}) == (bar, "training")


def test_a_text_is_translated_line_by_line_and_its_line_breaks_kept():
    text = ("\rtraining: 100%|███| 600/600\nfirst loss 2.604, mean of the last 50 steps 0.666\n"
            "8+4=42\nnew words 3\n")
    chinese, missing = outputs.translate_text(text, CATALOGUE)
    assert chinese == ("\r训练：100%|███| 600/600\n第一步损失 2.604，最后 50 步的平均 0.666\n"
                       "8+4=42\nnew words 3\n")
    assert missing == ["new words {0}"]


def _cell(*outs, tags=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": "", "outputs": list(outs)}


STREAM = {"output_type": "stream", "name": "stdout", "text": "7 of 12 prompts completed\n"}
FIGURE = {"output_type": "display_data", "data": {"image/png": "", "text/plain": "<Figure size 4x3>"},
          "metadata": {}}
RESULT = {"output_type": "execute_result", "data": {"text/plain": "lost words"}, "metadata": {},
          "execution_count": 1}


def test_only_the_texts_a_page_shows_are_translated():
    assert list(outputs.printed_texts(_cell(STREAM, FIGURE, RESULT))) == [(0, "text"), (2, "text/plain")]
    assert list(outputs.printed_texts(_cell(STREAM, RESULT, tags=["remove-output"]))) == []
    assert list(outputs.printed_texts(_cell(STREAM, RESULT, tags=["remove-stdout"]))) == [(1, "text/plain")]
    cell = _cell(STREAM, FIGURE, RESULT)
    translated, missing = outputs.translated_outputs(cell, CATALOGUE)
    assert translated[0]["text"] == "12 个提示词中有 7 个被补全\n" and missing == ["lost words"]
    assert cell["outputs"][0] is STREAM and STREAM["text"] == "7 of 12 prompts completed\n"  # a copy


class _Logger:
    def __init__(self):
        self.warnings = []

    def warning(self, message, **kwargs):
        self.warnings.append(message)


class _Client:  # what the patched myst-nb method reads of its notebook client
    def __init__(self, cell):
        self.notebook = {"cells": [cell]}
        self.logger = _Logger()


def test_the_chinese_build_renders_translated_outputs_and_names_a_missing_message():
    from myst_nb.core.execute.base import NotebookClientBase

    original = NotebookClientBase.code_cell_outputs
    client = _Client(_cell(STREAM, RESULT))
    try:
        outputs.install(CATALOGUE)
        _, shown = NotebookClientBase.code_cell_outputs(client, 0)
        assert shown[0]["text"] == "12 个提示词中有 7 个被补全\n"
        assert shown[1]["data"]["text/plain"] == "lost words"
        assert client.logger.warnings == [
            "cell 0: printed output without a Chinese translation: 'lost words' "
            "(`make translations` adds it to locale/zh_CN/outputs.po)"]
        outputs.install(None)  # the English build: outputs as they are, streams merged
        _, shown = NotebookClientBase.code_cell_outputs(client, 0)
        assert shown == [STREAM, RESULT] and len(client.logger.warnings) == 1
    finally:
        NotebookClientBase.code_cell_outputs = original


def _piece(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def test_a_print_the_kernel_sent_in_two_pieces_is_one_line_in_both_editions():
    # One print, "e_0 at position 1 (adjacent):  " then the array, arrived as two outputs on
    # one run and as one on another: the line is looked up whole either way.
    catalogue = {"e_0 at position {0} (adjacent): [{1} {2}]": "位置 {0} 的 e_0（相邻配对）：[{1} {2}]"}
    split = _cell(_piece("e_0 at position 1 (adjacent):"), _piece(" [0.5403 0.8415]\n"),
                  _piece("warned\n", "stderr"), _piece("8+4=42\n"), FIGURE, _piece("done 1\n"))
    whole = _cell(_piece("e_0 at position 1 (adjacent): [0.5403 0.8415]\n"), _piece("warned\n", "stderr"),
                  _piece("8+4=42\n"), FIGURE, _piece("done 1\n"))
    assert outputs.merged_streams(split["outputs"]) == whole["outputs"]
    assert split["outputs"][0]["text"] == "e_0 at position 1 (adjacent):"  # a copy
    assert outputs.translated_outputs(split, catalogue) == outputs.translated_outputs(whole, catalogue)
    shown, missing = outputs.translated_outputs(split, catalogue)
    assert shown[0]["text"] == "位置 1 的 e_0（相邻配对）：[0.5403 0.8415]\n"
    assert missing == ["warned", "done {0}"]


def _error(evalue, ename="ValueError"):
    last = f"\x1b[31m{ename}\x1b[39m\x1b[31m:\x1b[39m {evalue}\n"
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": ["frame", last]}


def test_an_errors_message_is_translated_in_its_traceback_and_a_missing_one_named():
    refusal = "ModelConfig.n_layers=0: must be a positive integer"
    catalogue = {"ModelConfig.n_layers={0}: must be a positive integer":
                 "ModelConfig.n_layers={0}：必须是正整数",
                 "unexpected indent": "unexpected indent"}  # Python's own, kept as printed
    shown, missing = outputs.translated_outputs(_cell(_error(refusal)), catalogue)
    assert missing == [] and shown[0]["evalue"] == "ModelConfig.n_layers=0：必须是正整数"
    assert shown[0]["traceback"] == ["frame", "\x1b[31mValueError\x1b[39m\x1b[31m:\x1b[39m "
                                              "ModelConfig.n_layers=0：必须是正整数\n"]
    kept = _cell(_error("unexpected indent", "IndentationError"))
    assert outputs.translated_outputs(kept, catalogue) == (kept["outputs"], [])
    assert outputs.translated_outputs(_cell(_error("an untold rule 3")), {})[1] == ["an untold rule {0}"]
    removed = _cell(_error("an untold rule 3"), tags=["remove-output"])
    assert outputs.translated_outputs(removed, {}) == (removed["outputs"], [])


def _course(tmp_path, messages: dict[str, tuple[str, list[str]]]):
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "locale" / "zh_CN" / "outputs.po"
    path.parent.mkdir(parents=True)
    catalogue = Catalog(locale="zh_CN")
    for msgid, (msgstr, comments) in messages.items():
        catalogue.add(msgid, msgstr, user_comments=comments)
    with path.open("wb") as f:
        write_po(f, catalogue)
    return path


def test_the_check_names_an_untranslated_damaged_or_unexplained_message(tmp_path):
    _course(tmp_path, {"first loss {0}": ("", []), "loss {0} after {1} steps": ("{0} 步后损失", []),
                       "tok_embeddings  Embedding": ("tok_embeddings  Embedding", []),
                       "dropout  Dropout": ("dropout  Dropout", ["kept: a module listing's row"]),
                       "same tensor: True": ("同一个张量：True", [])})
    assert output_problems(tmp_path) == [
        "outputs.po: 'first loss {0}': untranslated",
        "outputs.po: 'loss {0} after {1} steps': a number's place ({0}, {1}, ...) differs from the English",
        "outputs.po: 'tok_embeddings  Embedding': translated as itself without a '# kept: why' comment"]


def test_the_term_base_reads_the_printed_outputs_catalogue(tmp_path):
    from tinyk.translations.terms import catalogue_messages, load_terms, message_term_problems

    _course(tmp_path, {"{0} tokens, greedy": ("{0} 个词元，贪婪", [])})
    found = [message for message in catalogue_messages(tmp_path) if message[0] == "outputs.po"]
    assert found == [("outputs.po", "{0} tokens, greedy", "{0} 个词元，贪婪")]
    problems = message_term_problems(found[0][1], found[0][2], load_terms())
    assert [p.split("”")[0] for p in problems] == ["“tokens", "“greedy"]


def test_update_adds_the_lines_of_the_newest_execution_in_the_cache(tmp_path):
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    path = _course(tmp_path, {"same tensor: {0}": ("同一个张量：{0}", [])})
    cache = get_cache(str(tmp_path / "_build" / ".jupyter_cache"))
    for n, text in enumerate(["old words 1\n", "7 of 12 prompts completed\nsame tensor: 3\n8+4=42\n"]):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({n})", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=text)])])
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(tmp_path / "notebooks" / "05_1_x.ipynb")),
                                    check_validity=False)
    (tmp_path / "notebooks" / "05_1_x.ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))
    assert outputs.output_messages(tmp_path) == {"{0} of {1} prompts completed": ["05_1_x"],
                                                  "same tensor: {0}": ["05_1_x"]}  # not the older run's
    catalogue = path.read_text()
    path.write_text(catalogue + '\nmsgid "no page prints this {0}"\nmsgstr "没有页面打印它 {0}"\n')
    assert outputs.update_outputs(tmp_path) == (1, 1) and outputs.update_outputs(tmp_path) == (0, 0)
    assert "no page prints this" not in path.read_text() and "same tensor: {0}" in path.read_text()
    # A notebook without a run in the cache: what it prints is unknown, so nothing is removed.
    (tmp_path / "notebooks" / "05_2_y.ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))
    path.write_text(catalogue + '\nmsgid "no page prints this {0}"\nmsgstr "没有页面打印它 {0}"\n')
    assert outputs.update_outputs(tmp_path) == (1, 0) and "no page prints this" in path.read_text()
    assert "#. 05_1_x\n" in path.read_text() and output_problems(tmp_path) == [
        "outputs.po: '{0} of {1} prompts completed': untranslated"]


def test_the_package_codes_figure_gets_a_chinese_caption_and_note_and_keeps_its_code():
    # 05.2's comparison cell: show_source(tinyk.RMSNorm), its output as the kernel sends it.
    import tinyk
    from tinyk.lessons.shown_code import show_source
    from tinyk.translations import source_figures

    view = show_source(tinyk.RMSNorm)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [{
        "output_type": "execute_result", "execution_count": 1, "metadata": {},
        "data": {"text/html": view._repr_html_(), "text/plain": repr(view)}}]}
    shown_data = cell["outputs"][0]["data"]
    caption, note = (outputs.message_key(m)[0] for m in source_figures.figure_messages(shown_data))
    assert caption == "tinyk/model.py, lines {0}–{1}"
    assert note.startswith("RMSNorm: ``y_i = γ_i x_i / r``")  # the docstring's first paragraph
    _, missing = outputs.translated_outputs(cell, {})
    assert missing == [caption, note]  # what `update` adds to the catalogue
    chinese = {caption: "tinyk/model.py，第 {0}–{1} 行", note: "中文说明：RMSNorm（课程第 {0} 节）。"}
    done, missing = outputs.translated_outputs(cell, chinese)
    shown = done[0]["data"]["text/html"]
    assert missing == [] and f"第 {view.first}–{view.first + len(view.lines) - 1} 行" in shown
    assert '<p class="tinyk-source-note" lang="zh-CN">中文说明：RMSNorm（课程第 05.2 节）。</p>' in shown
    import html
    import re

    assert "<code>tinyk/model.py, lines" not in shown
    code = html.unescape(re.sub(r"<[^>]+>", "", shown.split("</p>", 1)[1]))
    assert all(line.strip() in code for line in view.lines)  # the package's code, as it is
    assert cell["outputs"][0]["data"]["text/html"] == view._repr_html_()  # the English page's, untouched
