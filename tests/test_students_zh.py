"""The Chinese student notebooks (``student/zh/``): what the Chinese site's Colab links open.

Each is its English student version with the words in Chinese: Markdown from the pages'
catalogues, comments, docstrings and test messages from the code catalogues. Checked here:
the code and nbgrader's metadata are the English version's, every prose cell is Chinese, the
links go to the Chinese site, a missing translation is reported rather than left in English,
and 05.2 runs in a kernel as a student runs it. (No solution and no hidden test: the checks
of ``test_students.py``, run on both folders.)
"""

from __future__ import annotations

import ast
import json
import re

import pytest

from tinyk.courseware import addresses, checkout, student_versions
from tinyk.courseware.chinese_notebooks import (
    code_messages,
    placeholders,
    same_code,
    translate_code,
    translate_markdown,
)
from tinyk.courseware.exercises import nbgrader, source_text
from tinyk.lessons.plotting import column
from tinyk.translations.messages import code_problems

ROOT = checkout.ROOT
SOURCES = checkout.notebook_paths()
CJK = re.compile(r"[\u3400-\u9fff]")


def _cells(source, language):
    return json.loads(checkout.student_path(source, language=language).read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_chinese_version_is_the_english_one_but_for_its_words(source):
    """Same cells, ids, metadata (nbgrader's included) and code; only strings and comments differ."""
    english, chinese = _cells(source, "en"), _cells(source, checkout.ZH)
    assert [(c["cell_type"], c.get("id"), c["metadata"]) for c in chinese] == \
        [(c["cell_type"], c.get("id"), c["metadata"]) for c in english]
    code = [(e, z) for e, z in zip(english, chinese, strict=True) if e["cell_type"] == "code"]
    assert all(same_code(source_text(z), source_text(e)) for e, z in code)
    changed = [z for e, z in code if source_text(z) != source_text(e)]
    # Chinese words, or Chinese punctuation alone (print("tinyk：", ...))
    assert changed and all(CJK.search(source_text(z)) or "：" in source_text(z) for z in changed)
    assert sum(bool(nbgrader(z)) for z in chinese) == sum(bool(nbgrader(e)) for e in english) > 0


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_prose_cell_is_chinese_and_links_to_the_chinese_site(source):
    texts = [source_text(c) for c in _cells(source, checkout.ZH) if c["cell_type"] == "markdown"]
    assert len(texts) == sum(c["cell_type"] == "markdown" for c in _cells(source, "en")) > 0
    proses = [(text, re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$|```.*?```|`[^`\n]+`|\]\([^)]*\)|<[^>]+>", " ", text,
                            flags=re.S)) for text in texts]
    words = [(text, prose) for text, prose in proses if re.search(r"[A-Za-z]{2,}", prose)]  # not code/maths
    assert len(words) > 0
    english = [text[:80] for text, prose in words if not CJK.search(prose)]
    assert english == [], f"{source.stem}: Markdown cells without Chinese: {english}"
    links = re.findall(r"\]\((https://[^)\s]+)\)",
                       "\n".join(source_text(c) for c in _cells(source, checkout.ZH)))
    site = addresses.site_url()
    assert links and all(u.startswith(f"{site}{checkout.ZH}/") for u in links if u.startswith(site)), links
    english = re.findall(r"\]\((https://[^)\s]+)\)", "\n".join(source_text(c) for c in _cells(source, "en")))
    assert [u.replace(f"{site}{checkout.ZH}/", site) for u in links] == english  # the same targets, in order


def test_markdown_is_put_together_from_its_translated_blocks():
    messages = {"A title": "标题", "First paragraph, on two lines.": "第一段。", "one item;": "一项；",
                "a second item, also on two lines.": "第二项。", "Hint 1 of 2: a nudge": "提示 1/2：推一把",
                "Use `expand`.": "用 `expand`。", "Careful.": "小心。"}
    text = ("## A title\n\nFirst paragraph,\non two lines.\n\n- one item;\n- a second item,\n"
            "  also on two lines.\n\n$$\nx = 1\n$$\n\n```\nkeep = this\n```\n\n"
            ":::{dropdown} Hint 1 of 2: a nudge\nUse `expand`.\n:::\n\n"
            "```{warning}\nCareful.\n```")
    missing: list[str] = []
    assert translate_markdown(text, messages, missing, "cell 3") == (
        "## 标题\n\n第一段。\n\n- 一项；\n- 第二项。\n\n$$\nx = 1\n$$\n\n```\nkeep = this\n```\n\n"
        ":::{dropdown} 提示 1/2：推一把\n用 `expand`。\n:::\n\n```{warning}\n小心。\n```")
    assert missing == []
    del messages["Careful."]
    assert "Careful." in translate_markdown(text, messages, missing, "cell 3")
    assert missing == ["cell 3: 'Careful.'"]


CELL = '''def f(x):
    """Square ``x``.

    Any shape.
    """
    return x * x  # elementwise, in x's dtype


got = f(3)
hints = {8: "you added instead"}
hint = hints.get(got, "something else")
assert got == 9, (f"3 squared is 9, not {got}: "
                  f"{hint}")
assert repr(got) != "nine words here", "compared strings stay"
'''


def test_code_keeps_its_tokens_and_translates_only_what_is_read():
    assert code_messages(CELL) == [
        ("Square ``x``.\n\nAny shape.\n", "docstring"), ("elementwise, in x's dtype", "comment"),
        ("you added instead", "message"), ("something else", "message"),
        ("3 squared is 9, not {got}: {hint}", "message"), ("compared strings stay", "message")]
    words = {"Square ``x``.\n\nAny shape.\n": "``x`` 的平方。\n\n任意形状。\n",
             "elementwise, in x's dtype": "逐元素", "you added instead": "你做了加法",
             "something else": "别的错误", "compared strings stay": "比较的字符串不变",
             "3 squared is 9, not {got}: {hint}": "3 的平方是 9，而不是 {got}：{hint}"}
    missing: list[str] = []
    chinese = translate_code(CELL, words, missing)
    assert missing == [] and same_code(chinese, CELL)
    assert '    """``x`` 的平方。\n\n    任意形状。\n    """' in chinese and "# 逐元素" in chinese
    assert '"nine words here"' in chinese and '{8: "你做了加法"}' in chinese


def test_what_a_print_writes_is_translated_and_what_it_is_given_is_not():
    # The literals a print writes are words; a string given to a call inside it, or computed
    # into a printed value, is data the code needs as it is.
    cell = ('losses = F.cross_entropy(x, y, reduction="none")\n'
            'print("tied head:", losses.sum(), f"{n} of {m} heads" + (" (per layer)" if n else ""))\n'
            'print(tok.decode(tok.encode("Hello there")), ["a list", "of data"])\n')
    assert code_messages(cell) == [("tied head:", "message"), ("{n} of {m} heads", "message"),
                                   (" (per layer)", "message")]
    words = {"tied head:": "共享权重的输出头：", "{n} of {m} heads": "{m} 个头中的 {n} 个",
             " (per layer)": "（每层）"}
    missing: list[str] = []
    chinese = translate_code(cell, words, missing)
    assert missing == [] and same_code(chinese, cell)
    assert 'reduction="none"' in chinese and '"Hello there"' in chinese and '"a list"' in chinese
    assert ('print("共享权重的输出头：", losses.sum(), f"{m} 个头中的 {n} 个" + ("（每层）" if n else ""))'
            in chinese)


def test_a_message_built_in_a_generator_is_found():
    # 05.5's SwiGLU test: the hint is the first suspect that matches, worded in a generator.
    cell = ('suspects = {"relu instead of silu": 1}\n'
            'hint = next((f"it looks like {what}" for what, wrong in suspects.items() if wrong == got), "")\n'
            'assert got == 0, f"differs by {got}: {hint}"\n')
    assert code_messages(cell) == [("relu instead of silu", "message"), ("it looks like {what}", "message"),
                                   ("differs by {got}: {hint}", "message")]


def test_a_message_a_helper_returns_is_found_and_the_helpers_other_strings_are_not():
    # 05.3.3's test: raise AssertionError(raised(err, m, n)), raised() returning f-strings. What
    # the helper returns, and a string that only flows into its returns, are messages; a
    # pattern it searches with, and a helper called outside a message, are code.
    cell = ('def raised(err, m):\n'
            '    said = f"m = {m} raised {err}"\n'
            '    if re.search("size of tensor", str(err)):\n'
            '        return f"{said}: the tables need m + 1 rows"\n'
            '    return said\n'
            'def score(x):\n'
            '    return "not a message"\n'
            'try:\n'
            '    got = score(0)\n'
            'except IndexError as err:\n'
            '    raise AssertionError(raised(err, 0)) from None\n')
    assert code_messages(cell) == [("m = {m} raised {err}", "message"),
                                   ("{said}: the tables need m + 1 rows", "message")]
    words = {"m = {m} raised {err}": "m = {m} 引发了 {err}",
             "{said}: the tables need m + 1 rows": "{said}：表需要 m + 1 行"}
    missing: list[str] = []
    chinese = translate_code(cell, words, missing)
    assert missing == [] and same_code(chinese, cell)
    assert 'return f"{said}：表需要 m + 1 行"' in chinese and '"size of tensor"' in chinese
    assert '"not a message"' in chinese


def test_a_printed_helper_a_helpers_message_parameter_and_a_warning_are_messages():
    # What a printed helper returns, what a helper is given for a parameter that only flows into
    # its assertion, a warning's text and what is added to a message's name are words; a
    # helper whose parameter is data, and what a helper used outside a message returns, are code.
    cell = ('def summary():\n'
            '    return "all rows pass"\n'
            'def check(ok, why):\n'
            '    assert ok, why\n'
            'def device():\n'
            '    return "cpu"\n'
            'def run(prompt):\n'
            '    return generate(prompt)\n'
            'print(summary())\n'
            'check(run("Once upon a time") == device(), "the sum is wrong")\n'
            'warnings.warn("this is slow")\n'
            'hint = "the rows"\n'
            'hint += " are too long"\n'
            'assert ok, hint\n')
    assert code_messages(cell) == [("all rows pass", "message"), ("the sum is wrong", "message"),
                                   ("this is slow", "message"), ("the rows", "message"),
                                   (" are too long", "message")]


def test_the_labels_a_loop_only_writes_out_are_words_and_its_keys_are_not():
    # A label flows through a loop variable into a print, a figure's legend or the key a result
    # is stored under; a string that is also looked up, compared or given to a call is code.
    cell = ('for name, cfg in [("tiny experiment", 1), ("upstream default", 2)]:\n'
            '    print(f"{column(name, 17)} {cfg}")\n'
            'for part in ("embedding", "mlp"):\n'
            '    print(f"{part}: {budget[part]}")\n'
            'for name, scheme in [("no rescaling", "none")]:\n'
            '    if scheme == "none":\n'
            '        variants[name] = 1\n'
            '    plt.plot([1], label=name)\n'
            'for kind, m in [("adjacent layout", 1)]:\n'
            '    losses[kind] = m\n'
            'print(losses["adjacent layout"])\n'
            'for word in ["hello there"]:\n'
            '    print(tok.encode(word))\n'
            'print("your parts: " + ", ".join(parts))\n')
    assert code_messages(cell) == [("tiny experiment", "message"), ("upstream default", "message"),
                                   ("no rescaling", "message"), ("your parts: ", "message"),
                                   (", ", "message")]
    words = {"tiny experiment": "小实验", "upstream default": "上游默认配置", "no rescaling": "不缩放",
             "your parts: ": "你的部件：", ", ": "、"}
    missing: list[str] = []
    chinese = translate_code(cell, words, missing)
    assert missing == [] and same_code(chinese, cell) and 'print("你的部件：" + "、".join(parts))' in chinese
    # The Chinese labels line up: a Chinese character takes two columns of the table.
    assert [column(label, 17) + "|" for label in ("tiny experiment", "小实验", "上游默认配置")] == [
        "tiny experiment  |", "小实验           |", "上游默认配置     |"]


def test_a_translation_that_would_change_the_code_is_caught():
    with pytest.raises(AssertionError, match="3 的平方是 9，而不是 9：别的错误"):
        exec(translate_code(CELL, {"3 squared is 9, not {got}: {hint}": "3 的平方是 9，而不是 {got}：{hint}",
                                   "something else": "别的错误"}, []).replace("got == 9", "got == 10"), {})
    broken = translate_code(CELL, {"compared strings stay": 'a "quote'}, [])
    assert not same_code(broken, CELL)
    assert code_problems("not {got}: {hint}", "而不是 {got}") != []  # a placeholder lost
    assert code_problems("not {got}", "而不是 {got!r}") != []
    assert code_problems("say it", '说 "它"') != [] and code_problems("say it", "说“它”") == []
    assert code_problems("a\\nb", "甲乙") != [] and code_problems("a\\nb", "甲\\n乙") == []
    assert placeholders("{a} and {b[0]:.2f} {{not}}") == ["{a}", "{b[0]:.2f}"]


def test_a_missing_code_translation_or_student_word_is_named(tmp_path):
    """A code text, and a word the student versions add (an admonition's title, in the
    interface's catalogue), each named with its notebook; a lost ``{url}`` in the solution
    line fails the translations' check. (A missing prose translation, and the notebook then
    left unwritten: test_students.py.)"""
    from tests.test_students import _copy_course
    from tinyk.courseware.catalogues import interface_catalogue
    from tinyk.translations.checks import interface_problems

    root = _copy_course(tmp_path)
    catalogue = root / "locale" / "zh_CN" / "LC_MESSAGES" / "code" / "05_2_rmsnorm.po"
    text = catalogue.read_text(encoding="utf-8")
    entry = ('msgid "return a Python float, float(r), not {type(got).__name__}"\nmsgstr '
             '"应返回 Python 的浮点数（float），即 float(r)，而不是 {type(got).__name__}"')
    assert text.count(entry) == 1
    catalogue.write_text(text.replace(entry, entry.split("msgstr ")[0] + 'msgstr ""'), encoding="utf-8")
    interface = interface_catalogue(root)
    text = interface.read_text(encoding="utf-8")
    assert text.count('msgid "Warning"\nmsgstr "警告"\n') == 1
    assert text.count("({url})") == 6  # STUCK, LIVE, LIVE_SMOLLM2: each msgid and msgstr
    interface.write_text(text.replace('msgid "Warning"\nmsgstr "警告"\n', "")
                         .replace("上的答案]({url})", "上的答案]()"), encoding="utf-8")
    english = {checkout.student_path(p, root): checkout.student_path(p).read_text(encoding="utf-8")
               for p in SOURCES}
    chinese, missing = student_versions.chinese_student_notebooks(english, root)
    assert missing == ["notebooks/05_2_rmsnorm.ipynb: cell 22: 'return a Python float, float(r), not "
                       "{type(got).__name__}': "
                       "no translation in locale/zh_CN/LC_MESSAGES/code/05_2_rmsnorm.po"] + [
        f"notebooks/{stem}.ipynb: 'Warning': no translation in locale/zh_CN/interface.po"
        for stem in ("05_4_gqa", "05_5_swiglu_layer", "05_6_head_protocol", "05_9_text_vs_file")]
    kept = chinese[root / checkout.STUDENTS / checkout.ZH / "05_2_rmsnorm.ipynb"]
    assert 'return a Python float, float(r), not {type(got).__name__}\\"' in kept
    assert interface_problems(root) == [
        "interface.po: 'Stuck? [The solution on the course site]({url}) waits behind': "
        "a placeholder ({url}, ...) differs from the English",
        "interface.po: 'Warning': missing (a word the Chinese student notebooks add: "
        "add it with its translation)"]


def test_the_chinese_site_opens_and_serves_the_chinese_student_notebooks(tmp_path):
    """The book's extension, in each edition: the Colab button, the download, and the link to the
    other edition, whose tooltip names it in both languages (full-width brackets on a Chinese page)."""
    import importlib.util
    from types import SimpleNamespace

    extension = ROOT / "book" / "_ext" / "tinyk_book.py"
    spec = importlib.util.spec_from_file_location("tinyk_book_zh", extension)
    book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book)
    colab = "https://colab.research.google.com/github/tinyk-course/tinyk/blob/main/"
    for language, folder in (("en", "student"), ("zh_CN", "student/zh")):
        app = SimpleNamespace(srcdir=str(ROOT), outdir=str(tmp_path / language), config=SimpleNamespace(
            language=language), builder=SimpleNamespace(format="html"))
        context = {"header_buttons": [{"buttons": [{"url": f"{colab}notebooks/05_2_rmsnorm.ipynb"}]}]}
        book._colab_opens_student_version(app, "notebooks/05_2_rmsnorm", "page.html", context, None)
        assert context["header_buttons"][0]["buttons"][0]["url"] == f"{colab}{folder}/05_2_rmsnorm.ipynb"
        app.env = SimpleNamespace(found_docs={"notebooks/05_2_rmsnorm"},
                                  doc2path=lambda name: str(ROOT / f"{name}.ipynb"))
        book._publish_student_notebooks(app, None)
        published = tmp_path / language / "_sources" / "notebooks" / "05_2_rmsnorm.ipynb"
        assert published.read_bytes() == (ROOT / folder / "05_2_rmsnorm.ipynb").read_bytes()
    _, to_chinese = book._other_edition(app, "en")
    _, to_english = book._other_edition(app, "zh")
    assert 'title="中文版 (Chinese edition)"' in to_chinese, to_chinese
    assert 'title="英文版（English edition）"' in to_english, to_english


@pytest.mark.slow
def test_chinese_05_2_runs_top_to_bottom_in_a_kernel(tmp_path, monkeypatch):
    """As a student runs it (test_jupyterlab.py's rules, without the browser): every cell in
    order, a failing cell does not stop the next; the only errors are the unanswered
    exercises' own, and each unanswered exercise fails. A wrong answer gets its Chinese message,
    the notebook prints in Chinese, and the package speaks Chinese in its kernel: the setup cell
    set TINYK_LANGUAGE (a cell added at the end checks the stub of 05.2's RMSNorm)."""
    import base64
    import io
    import os

    import nbformat
    from PIL import Image

    from tests.helpers import ipc_client
    from tests.test_jupyterlab import _allowed_to_fail

    nb = nbformat.read(checkout.student_path(ROOT / "notebooks" / "05_2_rmsnorm.ipynb", language=checkout.ZH),
                       as_version=4)
    first = next(c for c in nb.cells if nbgrader(c).get("solution"))
    first.source = "def rms(x, eps=0.0):\n    return float(sum(x))  # 错的：没有平方，也没有开方"
    check = "from tinyk.learner.part_checks import check_parts\ncheck_parts(RMSNorm=RMSNorm)"
    nb.cells.append(nbformat.v4.new_code_cell(check))
    monkeypatch.delenv("TINYK_LANGUAGE", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as test_jupyterlab.py's server
    ipc_client(nb, tmp_path, timeout=300, allow_errors=True).execute()
    *code, added = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "cells that did not run"
    errors = {i: [o for o in c.outputs if o.output_type == "error"] for i, c in enumerate(code)}
    assert [i for i, e in errors.items() if e and not _allowed_to_fail(code[i])] == []
    unanswered = [(i, next(c for c in code[i + 1:] if nbgrader(c).get("grade")))
                  for i, cell in enumerate(code) if nbgrader(cell).get("solution") and cell is not first]
    assert len(unanswered) == 2  # 05.2's other two exercises
    silent = [i for i, test in unanswered if not (errors[i] or errors[code.index(test)])]
    assert silent == [], "an unanswered exercise raised nothing"
    graded = errors[code.index(first) + 1]
    assert [e.ename for e in graded] == ["AssertionError"]
    assert graded[0].evalue == ("(3, 4) 的 r 是平方均值的平方根，即 sqrt((9 + 16) / 2) = 3.5355...，"
                                "而不是 7.0：应先把每个元素平方，在 d 个元素上对平方求平均，再开平方根")
    assert [o.evalue for o in added.outputs if o.output_type == "error"] == [
        "RMSNorm（第 05.2 节）：仍是占位代码（它引发 NotImplementedError）："
        "请在第 05.2 节的笔记本中写出它的实现"]
    printed = "".join(o.get("text", "") for c in code for o in c.outputs if o.output_type == "stream")
    assert "手算     ：r = sqrt(12.5) = 3.535534, y = (0.8485, 1.1314)" in printed
    assert "gradcheck 通过：True" in printed and "by hand" not in printed
    # Its figures too (a Chinese font is at hand here): the PNG's alt text, the slider's frames.
    shown = [o.data for c in code for o in c.outputs if o.output_type in ("display_data", "execute_result")]
    pngs = [Image.open(io.BytesIO(base64.b64decode(d["image/png"]))) for d in shown if "image/png" in d]
    assert pngs and all(CJK.search(png.text["Description"]) for png in pngs)
    alts = [alt for d in shown if "text/html" in d for alt in re.findall(r'alt="([^"]*)"', d["text/html"])]
    assert alts and all(CJK.search(alt) for alt in alts), alts


def test_graded_against_the_english_release_a_chinese_notebook_is_not_counted_as_edited():
    """A Chinese learner's locked cells are the Chinese student version's: not an edit; they
    are restored from the release (graded with the original tests). An edit beyond the
    translation is still one, and the English version is graded as before."""
    from tinyk.grading import chapter, submission

    source = ROOT / checkout.NOTEBOOKS / "05_2_rmsnorm.ipynb"
    english, chinese = (json.loads(checkout.student_path(source, language=lang).read_text(encoding="utf-8"))
                        for lang in checkout.LANGUAGES)
    (nb,) = chapter.chapter_notebooks([source], None)
    assert sorted(nb.translated) == sorted(nbgrader(c)["grade_id"] for c in chinese["cells"]
                                           if nbgrader(c).get("grade_id"))
    edited = ["ex_05_2_1_test edited", "ex_05_2_2_test edited", "ex_05_2_3_test edited"]
    assert submission.restore_release(chinese, english)[1] == edited  # without the translations
    restored, changes = submission.restore_release(chinese, english, nb.translated)
    assert changes == []
    assert submission.restore_release(english, english, nb.translated)[1] == []
    tests = [c for c in restored["cells"] if nbgrader(c).get("grade")]
    originals = [source_text(c) for c in english["cells"] if nbgrader(c).get("grade")]
    assert [source_text(c) for c in tests] == originals
    # a Chinese test cell edited beyond its translation is an edit
    cheat = json.loads(json.dumps(chinese))
    test = next(c for c in cheat["cells"] if nbgrader(c).get("grade_id") == "ex_05_2_1_test")
    test["source"] = "pass\n"
    assert submission.restore_release(cheat, english, nb.translated)[1] == ["ex_05_2_1_test edited"]


def test_a_hints_pseudocode_is_translated_and_real_code_fences_are_not():
    """A fence with no language (or ``text``) inside a hint's dropdown is pseudocode, one
    message of the code catalogue; a fence with a language, or outside a dropdown, is code."""
    from tinyk.courseware.chinese_notebooks import pseudocode_blocks, translate_pseudocode

    text = ("Before.\n\n```\nkeep = outside\n```\n\n:::{dropdown} Hint 2 of 2: the steps\n"
            "Steps:\n\n```\nx = f(y)     B × T\nreturn x cast back\n```\n\n```bash\npython -m keep\n```\n\n"
            "```text\nthe last step\n```\n:::\n")
    assert [body for _, _, body in pseudocode_blocks(text)] == ["x = f(y)     B × T\nreturn x cast back",
                                                                 "the last step"]
    missing: list[str] = []
    messages = {"x = f(y)     B × T\nreturn x cast back": "x = f(y)     B × T\n返回转回的 x"}
    chinese = translate_pseudocode(text, messages, missing, "cell 7")
    assert chinese == text.replace("return x cast back", "返回转回的 x")
    assert missing == ["cell 7: 'the last step'"]


def test_the_setup_cell_and_the_hints_pseudocode_read_from_the_catalogues():
    """The setup cell's words come from the interface's catalogue, the hints' pseudocode from
    the code catalogue: the Chinese notebook shows what they hold."""
    from tinyk.courseware.addresses import SETUP_NOT_INSTALLED, SETUP_WORDS, setup_cell_source
    from tinyk.courseware.catalogues import interface_catalogue, translated
    from tinyk.courseware.chinese_notebooks import code_catalogue_path, load_messages

    words = translated(interface_catalogue(ROOT))
    assert all(CJK.search(words[w]) for w in SETUP_WORDS)
    # printed as it is, outside Markdown: a backtick would show as one (quote with “”)
    assert "`" not in words[SETUP_NOT_INSTALLED] and "“pip install -e .”" in words[SETUP_NOT_INSTALLED]
    chinese = setup_cell_source(addresses.repository_url(), words.__getitem__, language="zh_CN")
    firsts = {s.stem: source_text(next(c for c in _cells(s, checkout.ZH) if c["cell_type"] == "code"))
              for s in SOURCES}
    assert len(firsts) == len(SOURCES) >= 9 and firsts == dict.fromkeys(firsts, chinese)
    messages = load_messages(code_catalogue_path(ROOT, "05_4_gqa"), code=True)
    hints = [body for body in messages if body.startswith("scores = q @ kᵀ")]
    assert len(hints) == 1 and "最后一个轴" in messages[hints[0]]
    gqa = checkout.student_path(ROOT / "notebooks" / "05_4_gqa.ipynb",
                                language=checkout.ZH).read_text("utf-8")
    assert json.dumps(messages[hints[0]].split("\n")[1] + "\n", ensure_ascii=False) in gqa
    assert "blocked scores" not in gqa


def test_the_setup_cell_sets_the_language_unless_the_grader_did(monkeypatch):
    """A Chinese notebook's kernel speaks Chinese; a grading kernel (TINYK_LANGUAGE=en, set by
    the grader) keeps English, the language of the release's tests and of the mistakes' words."""
    import os

    import torch

    from tinyk.grading.sandbox import KERNEL_ENV
    from tinyk.learner import mistakes
    from tinyk.learner.part_checks import check_parts
    from tinyk.learner.part_compare import PartError

    def setup(language):
        cells = _cells(ROOT / "notebooks" / "05_6_head_protocol.ipynb", language)
        exec(source_text(next(c for c in cells if c["cell_type"] == "code")), {})
        return os.environ["TINYK_LANGUAGE"]

    def token_positions(valid):  # 05.6.2's classic mistake: positions 0..T-1 whatever the padding
        return torch.arange(valid.shape[1]).expand_as(valid)

    def feedback():
        with pytest.raises(PartError) as err:
            check_parts(token_positions=token_positions)
        return mistakes.match("ex_05_6_2_test", str(err.value)), str(err.value)

    monkeypatch.delenv("TINYK_LANGUAGE", raising=False)
    assert setup("en") == "en"
    assert feedback()[0].id == "05.6.2:positions-ignore-padding"
    monkeypatch.delenv("TINYK_LANGUAGE")
    assert setup(checkout.ZH) == "zh_CN"
    found, said = feedback()
    assert found is None and CJK.search(said)  # Chinese words: no English mistake's words in them
    monkeypatch.setenv("TINYK_LANGUAGE", KERNEL_ENV["TINYK_LANGUAGE"])
    assert setup(checkout.ZH) == "en"
    assert feedback()[0].id == "05.6.2:positions-ignore-padding"
    # A submission that switches the language itself, inside the grader's kernel: grading wins.
    monkeypatch.setenv("TINYK_GRADING", KERNEL_ENV["TINYK_GRADING"])
    monkeypatch.setenv("TINYK_LANGUAGE", "zh_CN")
    assert feedback()[0].id == "05.6.2:positions-ignore-padding"


@pytest.mark.parametrize("middle", ["14,563", "[1, 5, 2]", "{x[0, 0]:.3g}"])
def test_a_long_translated_message_is_wrapped_between_words_not_inside_a_number_or_a_list(middle):
    # The Chinese of a wrapped English message is wrapped again, near 100 columns: never
    # inside 14,563, [1, 5, 2] or a placeholder, so the learner reads the test cell unbroken.
    head = "assert got == want, (\n    \"the budget holds \"\n    f\"{x[0, 0]:.3g} tokens\")\n"
    # The middle is where an even split would cut; the placeholder must come through.
    chinese = "预算" * 16 + middle + "容纳" * 16 + ("" if "{" in middle else "：{x[0, 0]:.3g}")
    translated = translate_code(head, {"the budget holds {x[0, 0]:.3g} tokens": chinese}, [])
    assert same_code(translated, head)
    pieces = [ast.literal_eval(line.strip().rstrip(")").lstrip("f")) for line in translated.splitlines()[1:]
              if line.strip().startswith(("f\"", "\""))]
    assert len(pieces) == 2 and "".join(pieces) == chinese
    assert any(middle in p for p in pieces)
