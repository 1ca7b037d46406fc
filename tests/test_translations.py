"""The Chinese edition's catalogues: complete, in step with the English, and undamaged."""

from __future__ import annotations

import json
import shutil

import pytest

from tinyk.courseware import catalogues as translations_catalogues
from tinyk.courseware import checkout
from tinyk.translations import checks, updates
from tinyk.translations.messages import message_problems

ROOT = checkout.ROOT
ENGLISH = ("Only the *length* of $x$ is rescaled by {term}`RMSNorm <RMSNorm, root mean square "
           "normalisation (均方根归一化)>` in `tinyk.RMSNorm` {cite}`zhang2019rmsnorm`; see [the "
           "glossary](../book/glossary.md).")
CHINESE = ("{term}`RMSNorm <RMSNorm, root mean square normalisation (均方根归一化)>` 只缩放 $x$ 的*长度*，"
           "见 `tinyk.RMSNorm` {cite}`zhang2019rmsnorm`；参见[术语表](../book/glossary.md)。")


def test_every_message_is_translated_and_keeps_what_is_not_prose():
    assert checks.problems() == []
    # pages, then code
    assert len(translations_catalogues.catalogues()) == 17 + len(checkout.notebook_paths())


def test_a_faithful_translation_passes():
    assert message_problems(ENGLISH, CHINESE) == []
    maths = "\ny_i = \\gamma_i \\,\\frac{x_i}{r}\n"
    assert message_problems(maths, maths) == []


@pytest.mark.parametrize("damaged, problem", [
    ("", "untranslated"),
    (CHINESE.replace("$x$", "$y$"), "maths differs"),
    (CHINESE.replace("`tinyk.RMSNorm`", "`RMSNorm`"), "inline code differs"),
    (CHINESE.replace("<RMSNorm, root mean square normalisation (均方根归一化)>", "<均方根归一化>"), "role"),
    (CHINESE.replace("{cite}`zhang2019rmsnorm`", ""), "role"),
    (CHINESE.replace("../book/glossary.md", "glossary.html"), "link target"),
    (ENGLISH, "no Chinese"),
])
def test_a_damaged_translation_is_reported(damaged, problem):
    assert any(problem in p for p in message_problems(ENGLISH, damaged)), message_problems(ENGLISH, damaged)


def test_a_bold_that_would_show_its_stars_is_reported():
    """CommonMark's flanking rule: a ``**`` between a full-width punctuation mark and a Chinese
    character opens or closes nothing, and the reader sees the stars."""
    english = "**Release.** These students took the student version; **Grade** them, then `2**30`."
    for shown in ("**发布**。这些学生用的是学生版；然后**评分**，再算 `2**30`。",
                  "**发布。** 这些学生用的是学生版；然后**评分**，再算 `2**30`。"):
        assert message_problems(english, shown) == [], shown
    for stars in ("**发布。**这些学生用的是学生版；然后**评分**，再算 `2**30`。",
                  "**发布**。这些学生用的是学生版；然后在**“评分”**中，再算 `2**30`。"):
        found = message_problems(english, stars)
        assert len(found) == 1 and "flanking" in found[0], (stars, found)


def test_a_space_beside_a_chinese_quotation_or_bold_word_is_reported():
    english = "An exercise scores 0, its detail naming the error; press **Run** in **nbgrader's format**."
    right = "练习得 0 分，其详情（detail）一栏指出错误；以 **nbgrader 的格式**按**运行**。"  # Latin: a space
    assert message_problems(english, right) == []
    for spaced in (right.replace("详情（detail）", "“detail” "), right.replace("按**", "按 **")):
        found = message_problems(english, spaced)
        assert len(found) == 1 and "a space beside" in found[0], (spaced, found)


def test_glossary_headwords_read_chinese_first_and_display_maths_stay_as_they_are():
    assert message_problems("KV cache (键值缓存)", "键值缓存（KV cache）", headword=True) == []
    # a headword whose Chinese holds its English says it once
    assert message_problems("SwiGLU (SwiGLU 门控前馈网络)", "SwiGLU 门控前馈网络", headword=True) == []
    assert message_problems("Batch (批量)", "批量（batch）", headword=True) == []
    assert message_problems("Token", "token", headword=True) == []  # a term the Chinese keeps in English
    # the full name, a full-width comma, the abbreviation, whichever order the English gives
    assert message_problems("RMSNorm, root mean square normalisation (均方根归一化)",
                            "均方根归一化（root mean square normalisation，RMSNorm）", headword=True) == []
    assert message_problems("Grouped-query attention, GQA (分组查询注意力)",
                            "分组查询注意力（grouped-query attention，GQA）", headword=True) == []
    assert message_problems("Query, key, value (查询、键、值)", "查询、键、值（query、key、value）",
                            headword=True) == []
    assert len(message_problems("Grouped-query attention, GQA (分组查询注意力)",
                                "分组查询注意力（grouped-query attention, GQA）", headword=True)) == 1
    for wrong in ("键值缓存", "KV cache (键值缓存)", "键值缓存 (KV cache)", "键值缓存（kV cache）"):
        found = message_problems("KV cache (键值缓存)", wrong, headword=True)
        assert found == ["write '键值缓存（KV cache）': a glossary headword reads Chinese first, its English "
                         "in full-width brackets"], (wrong, found)
    assert message_problems("\na = b\n", "\na = b（公式）\n") != []


@pytest.mark.slow
def test_changed_english_prose_makes_the_check_fail_until_update(tmp_path):
    """A new sentence on a page, and a new comment in a solution (which no student notebook
    has, but the Chinese site shows: tinyk.translations.pages), are named until translated."""
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ("book", "notebooks", "locale"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("*.mo", "_build"))
    assert updates.stale(tmp_path) == []
    playground = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "book" / "playground.po"
    header, title, *rest = playground.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert title.startswith('msgid "The models, live"'), title
    playground.write_text("\n\n".join([header, *rest, title]) + "\n", encoding="utf-8")  # as a merge appends
    page = tmp_path / "book" / "licence.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA sentence nobody has translated yet.\n",
                    encoding="utf-8")
    gqa = tmp_path / "notebooks" / "05_4_gqa.ipynb"
    text = gqa.read_text(encoding="utf-8")
    assert text.count("# finite: never 0/0") == 1  # in the solution of gqa_attention
    gqa.write_text(text.replace("# finite: never 0/0", "# a solution's comment, new"), encoding="utf-8")
    stale = updates.stale(tmp_path)
    assert any("licence.po: 1 English message" in p for p in stale)
    assert "book/playground.po: its messages are not in the page's order: run `make translations`" in stale
    assert "code/05_4_gqa.po: 1 code text(s) not in the catalogue, e.g. \"a solution's comment, new\": " \
           "run `make translations`" in stale, stale

    assert updates.update(tmp_path) == 0
    assert updates.stale(tmp_path) == []
    assert playground.read_text(encoding="utf-8").split("\n\n")[1].startswith('msgid "The models, live"')
    assert [p for p in checks.problems(tmp_path) if "untranslated" in p] == [
        "book/licence.po: 'A sentence nobody has translated yet.': untranslated",
        "code/05_4_gqa.po: \"a solution's comment, new\": untranslated"]


def test_a_book_page_s_shell_comments_and_drawings_are_translated_and_its_outputs_kept():
    """The literal blocks of the book's Markdown pages (tinyk.translations.pages): a shell block's
    comments line by line, not a shebang or a #SBATCH line; a drawing whole; a command's output not."""
    from tinyk.translations import pages

    shell = "#!/bin/bash\n#SBATCH --array=0-3\nmake students      # the same as: tinyk course students\n"
    assert pages.block_texts("bash", shell) == ["the same as: tinyk course students"]
    assert pages.block_texts("text", "5 student(s), 20 row(s) written to grades.csv\n") == []
    drawing = "  ┌──┐\n  │ a sandbox │\n  └──┘\n"
    assert pages.block_texts("text", drawing) == [drawing.strip("\n")]
    chinese, missing = pages.translate_block("bash", shell, {"the same as: tinyk course students": "等同于"})
    assert chinese == shell.replace("# the same as: tinyk course students", "# 等同于") and missing == []
    assert pages.translate_block("bash", shell, {})[1] == ["the same as: tinyk course students"]
    assert pages.translate_block("text", drawing, {drawing.strip("\n"): "┌ 沙箱"})[0] == "┌ 沙箱\n"
    texts = pages.book_block_texts(ROOT)
    assert len(texts) >= 8 and set(texts.values()) == {"book/instructors.md"}, texts
    from tinyk.courseware.catalogues import blocks_catalogue, translated

    assert set(texts) == set(translated(blocks_catalogue(ROOT)))


def test_a_space_after_a_full_width_colon_in_a_printed_line_or_a_code_text_is_reported(tmp_path):
    # The colon carries its own space: print's separator after a translated "label:" wrote a
    # second one, a column padded after the colon another run. A column's labels are padded
    # before their colons instead (tinyk.translations.tables), which passes.
    spaced = ("形状： (2, 3)", "手算：     r = {r:.6f}", "上游，作为一个批量：         {x}")
    right = ("形状：(2, 3)", "手算     ：r = {r:.6f}", "上游，作为一个批量      ：{x}")
    assert len(spaced) == len(right) == 3
    assert all(checks._space_after_mark("", text, None) for text in spaced)
    assert not any(checks._space_after_mark("", text, None) for text in right)
    # in a code catalogue (what the translated code prints) and in outputs.po (the printed line)
    code = checks._page_problems("code/05_2_rmsnorm.po", "shape: {x}", "形状： {x}", set())
    assert code == ["a space after a full-width mark (colon, comma)"]
    assert checks._page_problems("code/05_2_rmsnorm.po", "shape: {x}", "形状：{x}", set()) == []
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_config.yml").write_text("title: t\n", encoding="utf-8")
    (tmp_path / "locale" / "zh_CN").mkdir(parents=True)
    (tmp_path / "locale" / "zh_CN" / "outputs.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "gradcheck passes: True"\nmsgstr "gradcheck 通过： True"\n\n'
        'msgid "same tensor: True"\nmsgstr "同一个张量：True"\n', encoding="utf-8")
    assert checks.output_problems(tmp_path) == [
        "outputs.po: 'gradcheck passes: True': a space after a full-width mark (colon, comma)"]
    assert checks.output_problems() == []


def test_an_english_message_left_in_a_chinese_test_cell_is_reported(tmp_path):
    # Beyond the catalogues: a message left untranslated stays English in the Chinese
    # notebook. A helper's returned words, a join's " and ", an assigned message name it; a
    # compared error text, a prompt given to a call, a dictionary key and a name do not.
    cell = ('def raised(err):\n'
            '    return f"{err}: build the tables for d_h"\n'
            'short = tok("The capital of Italy is")\n'
            'if "size of tensor" in str(err):\n'
            '    hint = "运行 " + f"of {n} rows"\n'
            'words = {"one more layer": "多算了一层"}\n'
            'assert not unrotated, " and ".join(unrotated) + f"没有旋转（{hint}）" \\\n'
            '    + raised(err) + "logits"\n')
    # an f-string's words without its placeholders
    assert checks.english_messages(cell) == [": build the tables for d_h", "of   rows", " and "]
    grader = {"grade": True, "grade_id": "ex_1_test", "solution": False}
    notebook = {"cells": [{"cell_type": "code", "source": cell, "metadata": {"nbgrader": grader}}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "student" / "zh").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_config.yml").write_text("title: t\n", encoding="utf-8")
    (tmp_path / "student" / "zh" / "01_x.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    found = checks.graded_cell_problems(tmp_path)
    assert len(found) == 3 and all(line.startswith("student/zh/01_x.ipynb: ex_1_test: ") for line in found)
    # 05.3.3's helper raised() as it was, its returns English, in the real Chinese notebook
    zh = ROOT / "student" / "zh" / "05_3_rope.ipynb"
    (tmp_path / "student" / "zh" / "01_x.ipynb").unlink()
    planted = zh.read_text(encoding="utf-8").replace(
        'return f\\"{said}：按每头宽度 d_h = q.shape[0]（q 的长度）构建表\\"',
        'return f\\"{said}: build the tables for the head width d_h = q.shape[0], the length of q\\"')
    assert planted != zh.read_text(encoding="utf-8")
    (tmp_path / "student" / "zh" / "05_3_rope.ipynb").write_text(planted, encoding="utf-8")
    assert [line.split(": ")[1] for line in checks.graded_cell_problems(tmp_path)] == ["ex_05_3_3_test"]
    assert checks.graded_cell_problems() == []


@pytest.mark.parametrize(("cell", "english"), [
    # a lone word is English when it is the whole message, capitalised or not
    ('print("Passed")\n', ["Passed"]),
    ('assert ok, "wrong"\n', ["wrong"]),
    # a string given to a helper for a parameter that only flows into a message
    ('def check(ok, why):\n    assert ok, why\ncheck(total == 6, "the sum is wrong")\n',
     ["the sum is wrong"]),
    ('def check(ok, why):\n    assert ok, why\ncheck(total == 6, why="the sum is wrong")\n',
     ["the sum is wrong"]),
    # a printed join's pieces, a warning's text
    ('print("\\n".join(f"row {i} is wrong" for i in bad))\n', ["row   is wrong"]),
    ('import warnings\nwarnings.warn("this is slow")\n', ["this is slow"]),
    # the labels of a loop whose variable is only printed
    ('for name in ["the first row", "the second row"]:\n    print(name)\n',
     ["the first row", "the second row"]),
    # what a helper returns when it is printed, and what is added to a message's name
    ('def summary():\n    return "all rows pass"\nprint(summary())\n', ["all rows pass"]),
    ('why = "行"\nwhy += f" is {n} too long"\nassert ok, why\n', [" is   too long"]),
])
def test_an_english_message_is_reported_however_it_is_written(cell, english):
    assert checks.english_messages(cell) == english


@pytest.mark.parametrize("cell", [
    # a helper's return used as data, not inside a message
    'def device():\n    return "cuda:0" if ok else "cpu"\nx = x.to(device())\n'
    'assert ok, f"设备：{device()}"\n',
    # a message that is code, not prose
    'assert x.dtype == torch.float32, "x.to(torch.float32)"\n',
    'assert ok, f"应调用 {name}" + f"{x}.float()"\n',
    # a prompt the cell gives to a call and also prints: data
    'prompt = "Once upon a time"\nout = generate(prompt)\nprint(f"{prompt!r} -> {out}")\n',
    'for prompt in ["Once upon a time"]:\n    print(prompt, generate(prompt))\n',
    # a helper's parameter that is data, a module's name a message strips, a name a message shows
    'def run(prompt):\n    return generate(prompt)\nassert run("Once upon a time"), "生成失败"\n',
    'came = f"{type(got).__module__}.{type(got).__name__}".removeprefix("builtins.")\n'
    'assert ok, f"不是 {came}"\n',
    'assert ok, "缺少 " + "logits"\n',
])
def test_code_and_data_in_a_test_cell_are_not_reported(cell):
    assert checks.english_messages(cell) == []
