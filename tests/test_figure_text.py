"""The figures' words in Chinese (tinyk.courseware.figure_text): the catalogue lookup with numbers
taken out, a figure drawn in Chinese and put back as it was, and the outputs that carry
the Chinese version for the book's Chinese edition."""

from __future__ import annotations

import base64
import io
import re
import warnings
from pathlib import Path

import pytest
from PIL import Image

from tinyk.courseware import figure_text
from tinyk.lessons.plotting import figure, label
from tinyk.lessons.widgets import Choice, slider

CATALOGUE = {
    "Loss after {0} steps": "{0} 步后的损失",
    "{0} of {1} heads": "{1} 个头中的 {0} 个",
    "step": "步",
    "loss (nats)": "损失（奈特）",
    "train": "训练",
    "position t": "位置 t",
    "Rotation at position {0}": "位置 {0} 处的旋转",
    "pair index": "维度对序号",
    "angle": "角度",
    "KV cache": "KV 缓存",
    # the alt text's own sentence (tinyk.lessons.plotting.CourseFigure.describe)
    "{y} against {x}": "{y} 对 {x}",
    "x axis: {x}": "横轴：{x}",
    "{title} ({axes})": "{title}（{axes}）",
    "Figure: {panels}": "图：{panels}",
    "{first}; {then}": "{first}；{then}",
    "Figure": "图",
    "query heads": "查询头",
    "K/V heads": "键值头",
    "d={0}, H_q={1}, H_kv={2}:": "d={0}，H_q={1}，H_kv={2}：",
    "invalid:": "无效：",
    "valid": "有效",
}


@pytest.fixture
def catalogue(monkeypatch):
    monkeypatch.setattr(figure_text, "_catalogue", lambda: CATALOGUE)
    return CATALOGUE


def _cjk_font_or_skip():
    try:
        figure_text._cjk_families()
    except RuntimeError as error:
        from tests.optional import missing

        missing(str(error))


def test_numbers_are_taken_out_of_the_message():
    assert figure_text.message_key("Loss after 300 steps (lr 0.01)") == (
        "Loss after {0} steps (lr {1})", ["300", "0.01"])
    assert figure_text.message_key("1,024 tokens, d_h=64") == ("{0} tokens, d_h={1}", ["1,024", "64"])
    assert figure_text.message_key("w1 and x_2 in 05.4") == ("w1 and x_2 in {0}", ["05.4"])
    assert figure_text.message_key("-1.5e-3 below") == ("{0} below", ["-1.5e-3"])


def test_translation_puts_the_numbers_back_in_the_chinese_order(catalogue):
    assert figure_text.translate("Loss after 300 steps") == "300 步后的损失"
    assert figure_text.translate("3 of 12 heads") == "12 个头中的 3 个"


def test_a_missing_message_stays_english_and_is_collected(catalogue):
    with figure_text.collecting() as missing:
        assert figure_text.translate("Loss after 3 epochs") == "Loss after 3 epochs"
        assert figure_text.translate("x = 3") == "x = 3"  # no words: nothing to translate
        assert figure_text.translate("$\\theta_i$") == "$\\theta_i$"
    assert missing == {"Loss after {0} epochs"}


def test_html_keeps_its_tags_and_translates_the_text_between(catalogue):
    html = "<table><tr><td title='step'>step</td><td> KV cache </td><td>12</td></tr></table>"
    assert figure_text.translate_html(html) == (
        "<table><tr><td title='step'>步</td><td> KV 缓存 </td><td>12</td></tr></table>")


def test_html_has_no_space_after_a_full_width_mark(catalogue):
    # 05.1's slider: the English puts a space after each colon, outside the <b>; the Chinese
    # colon carries its own space, so the one after it goes, tags between or not.
    heading = "<p><b>d=768, H_q=16, H_kv=8:</b> d/H_q = 48</p>"
    error = "<p style='color:#d1495b'><b>invalid:</b> <span>some error</span></p>"
    valid = "<p><b>d=768, H_q=16, H_kv=8:</b> valid</p><table><tr><td>d = 1</td></tr></table>"
    assert figure_text.translate_html(heading) == "<p><b>d=768，H_q=16，H_kv=8：</b>d/H_q = 48</p>"
    assert figure_text.translate_html(error).endswith("<b>无效：</b><span>some error</span></p>")
    assert figure_text.translate_html(valid) == (
        "<p><b>d=768，H_q=16，H_kv=8：</b>有效</p><table><tr><td>d = 1</td></tr></table>")
    frames = [figure_text.translate_html(html) for html in (heading, error, valid)]
    assert len(frames) == 3 and not any(re.search("[：，；。] |[：，；。](<[^>]*>)+ ", f) for f in frames)


def test_the_figure_catalogue_check_refuses_a_space_after_a_full_width_mark(tmp_path, monkeypatch):
    from tinyk.translations import checks

    po = tmp_path / "figures_zh_CN.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  'msgid "invalid:"\nmsgstr "无效："\n\nmsgid "{0}: valid"\nmsgstr "{0}： 有效"\n',
                  encoding="utf-8")
    monkeypatch.setattr(figure_text, "catalogue_path", lambda: po)
    found = checks.figure_problems()
    assert len(found) == 1 and "full-width" in found[0] and "valid" in found[0]


def _panel():
    fig, ax = figure()
    ax.plot([0, 1, 2], [3, 2, 1], label="train")
    ax.set_xticks([0, 1, 2], ["the", "cat", "sat"])
    ax.legend()
    label(ax, "Loss after 300 steps", "step", "loss (nats)")
    return fig, ax


def test_a_figure_in_chinese_and_back_exactly(catalogue):
    _cjk_font_or_skip()
    fig, ax = _panel()
    before = [t.get_text() for t in figure_text._words_of(fig)]
    family = ax.title.get_fontfamily()
    with figure_text.in_chinese(fig):
        assert [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] == ["300 步后的损失", "步", "损失（奈特）"]
        assert ax.get_legend().get_texts()[0].get_text() == "训练"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "sat"]  # data stay
        assert figure_text.CJK_FAMILY in ax.title.get_fontfamily()
        assert fig.describe() == "图：300 步后的损失（损失（奈特） 对 步）"
    assert [t.get_text() for t in figure_text._words_of(fig)] == before
    assert ax.title.get_fontfamily() == family
    assert fig.describe() == "Figure: Loss after 300 steps (loss (nats) against step)"


def test_word_ticks_are_translated_and_data_ticks_are_not(catalogue):
    # Categories named in words on an axis (05.4's "K/V heads"/"query heads"): the Chinese
    # figure shows them in Chinese, drawn with the CJK font, and gives them back afterwards;
    # a word tick without a translation is reported like a title would be.
    from tinyk.lessons.plotting import word_ticks

    _cjk_font_or_skip()
    fig, ax = _panel()
    word_ticks(ax.yaxis, [0, 1], ["K/V heads", "query heads"])
    with figure_text.in_chinese(fig):
        assert [t.get_text() for t in ax.get_yticklabels()] == ["键值头", "查询头"]
        assert figure_text.CJK_FAMILY in ax.get_yticklabels()[0].get_fontfamily()
        assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "sat"]  # data stay
    assert [t.get_text() for t in ax.get_yticklabels()] == ["K/V heads", "query heads"]
    assert figure_text.CJK_FAMILY not in ax.get_yticklabels()[0].get_fontfamily()
    word_ticks(ax.yaxis, [0, 1], ["K/V heads", "value heads"])
    with figure_text.collecting() as missing, figure_text.in_chinese(fig):
        pass
    assert missing == {"value heads"}


def test_the_alt_text_names_the_one_axis_a_panel_labels(catalogue):
    _cjk_font_or_skip()
    fig, ax = figure()
    label(ax, "Loss after 300 steps", "step", "")
    assert fig.describe() == "Figure: Loss after 300 steps (x axis: step)"
    with figure_text.in_chinese(fig):
        assert fig.describe() == "图：300 步后的损失（横轴：步）"


def test_chinese_text_is_drawn_without_a_missing_glyph(catalogue):
    _cjk_font_or_skip()
    fig, _ = _panel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        with figure_text.in_chinese(fig):
            fig._repr_png_()


def test_without_the_book_flag_a_figure_carries_no_chinese(monkeypatch, catalogue):
    monkeypatch.delenv(figure_text.ENV, raising=False)
    fig, _ = _panel()
    assert fig._repr_mimebundle_() == ({}, {})


def test_in_the_books_run_a_figure_carries_its_chinese_version(monkeypatch, catalogue):
    _cjk_font_or_skip()
    monkeypatch.setenv(figure_text.ENV, "1")
    fig, ax = _panel()
    ax.text(0.5, 0.5, "Loss after 3 epochs")
    data, metadata = fig._repr_mimebundle_()
    zh = metadata["tinyk"]["zh"]
    assert data == {} and zh["missing"] == ["Loss after {0} epochs"]
    chinese = Image.open(io.BytesIO(base64.b64decode(zh["image/png"])))
    english = Image.open(io.BytesIO(fig._repr_png_()))
    assert chinese.text["Description"].startswith("图：300 步后的损失")
    assert english.text["Description"].startswith("Figure: Loss after 300 steps")
    assert chinese.size == english.size and chinese.tobytes() != english.tobytes()


def test_a_sliders_chinese_view_has_chinese_labels_and_frames(monkeypatch, catalogue):
    _cjk_font_or_skip()
    monkeypatch.setenv(figure_text.ENV, "1")

    def draw(position):
        _, ax = figure()
        ax.plot([0, position])
        return label(ax, f"Rotation at position {position}", "pair index", "angle").figure

    view = slider(draw, position=Choice([0, 4, 16], label="position t"))
    bundle, metadata = view._repr_mimebundle_()
    zh = metadata["tinyk"]["zh"]
    assert zh["missing"] == []
    assert 'aria-label="位置 t"' in zh["text/html"] and 'aria-label="position t"' in bundle["text/html"]
    assert zh["text/html"].count('alt="图：位置 ') == 3
    assert bundle["text/html"].count('alt="Figure: Rotation at position ') == 3
    calculator = slider(lambda n: f"<p>{n} of 12 heads</p>", n=[1, 3])
    _, metadata = calculator._repr_mimebundle_()
    assert "<p>12 个头中的 3 个</p>" in metadata["tinyk"]["zh"]["text/html"]


def _learner(monkeypatch, language):
    monkeypatch.delenv(figure_text.ENV, raising=False)  # a kernel of Jupyter or Colab, not the book's
    monkeypatch.setenv("TINYK_LANGUAGE", language)


def test_a_chinese_learners_kernel_draws_figures_and_sliders_in_chinese(monkeypatch, catalogue):
    _cjk_font_or_skip()
    _learner(monkeypatch, "zh_CN")
    fig, _ = _panel()
    chinese = Image.open(io.BytesIO(fig._repr_png_()))
    assert chinese.text["Description"].startswith("图：300 步后的损失")
    assert fig.describe().startswith("Figure: Loss after 300 steps")  # the figure itself unchanged
    assert fig._repr_mimebundle_() == ({}, {})  # no second, book-only copy

    def draw(position):
        _, ax = figure()
        ax.plot([0, position])
        return label(ax, f"Rotation at position {position}", "pair index", "angle").figure

    view = slider(draw, position=Choice([0, 4], label="position t"))
    shown = view._repr_mimebundle_()[0]["text/html"]
    assert 'aria-label="位置 t"' in shown and shown.count('alt="图：位置 ') == 2
    assert view.widget.children[0].description == "位置 t"  # the live widget, as Jupyter shows it
    _learner(monkeypatch, "en")
    english = Image.open(io.BytesIO(fig._repr_png_()))
    assert english.text["Description"].startswith("Figure: Loss after 300 steps")
    assert english.tobytes() != chinese.tobytes()
    english_view = slider(draw, position=Choice([0, 4], label="position t"))
    assert 'aria-label="position t"' in english_view._repr_mimebundle_()[0]["text/html"]


def test_without_a_chinese_font_a_learners_figure_stays_english(monkeypatch, catalogue):
    # Empty boxes would be worse than English words: no font, no translation.
    _learner(monkeypatch, "zh_CN")
    monkeypatch.setattr(figure_text, "chinese_font", lambda: None)
    fig, _ = _panel()
    assert Image.open(io.BytesIO(fig._repr_png_())).text["Description"].startswith("Figure: Loss after")
    with pytest.raises(RuntimeError, match="needs a Chinese font"):
        figure_text._cjk_families()


def test_chinese_words_the_code_gives_are_drawn_in_english_without_a_chinese_font(monkeypatch, catalogue):
    # The Chinese notebooks' code gives a figure's words in Chinese (chinese_notebooks.
    # translate_figure_words): without a font that draws them, the figure reads the catalogue
    # backwards and shows the English words, as every course figure does there.
    from tinyk.lessons.plotting import word_ticks

    _learner(monkeypatch, "zh_CN")
    monkeypatch.setattr(figure_text, "chinese_font", lambda: None)
    fig, ax = figure()
    ax.plot([0, 1], label="训练")
    ax.legend()
    word_ticks(ax.yaxis, [0, 1], ["键值头", "查询头"])
    label(ax, "300 步后的损失", "步", "损失（奈特）")
    shown = {}
    monkeypatch.setattr(type(fig), "savefig", lambda self, *a, **k: shown.update(
        title=ax.get_title(), legend=ax.get_legend().get_texts()[0].get_text(),
        ticks=[t.get_text() for t in ax.get_yticklabels()]))
    fig._repr_png_()
    assert shown == {"title": "Loss after 300 steps", "legend": "train",
                     "ticks": ["K/V heads", "query heads"]}
    assert ax.get_title() == "300 步后的损失" and ax.get_xlabel() == "步"  # the figure itself unchanged
    assert figure_text.to_english("一个没有的句子") == "一个没有的句子"


def test_the_figures_catalogue_ships_with_the_package_and_reads_without_babel():
    from babel.messages.pofile import read_po

    import tinyk

    assert figure_text.CATALOGUE.parent.parent == Path(tinyk.__file__).parent
    with figure_text.CATALOGUE.open("rb") as f:
        by_babel = {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}
    figure_text._catalogue.cache_clear()
    assert figure_text._catalogue() == by_babel and len(by_babel) >= 100


def test_the_figure_catalogue_check_catches_a_lost_number(tmp_path, monkeypatch):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    from tinyk.translations import checks
    from tinyk.translations import checks as translations_checks

    catalog = Catalog(locale="zh_CN")
    catalog.add("Loss after {0} steps", "损失")
    catalog.add("Loss after {0} epochs", "{0} 轮后的损失")
    catalog.add("untranslated here")
    path = tmp_path / "figures.po"
    with path.open("wb") as f:
        write_po(f, catalog)
    monkeypatch.setattr(figure_text, "catalogue_path", lambda: path)
    monkeypatch.setattr(checks, "course_root", lambda root=None: tmp_path)
    found = translations_checks.figure_problems()
    assert found == [
        "figures.po: 'Loss after {0} steps': a number's place ({0}, {1}, ...) differs from the English",
        "figures.po: 'untranslated here': untranslated"]
