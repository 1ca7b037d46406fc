"""The Chinese edition's term base (locale/zh_CN/terms.toml): one Chinese term per English
term, the seed's where it has one, enforced over every catalogue by the translations check."""

from __future__ import annotations

import re
import shutil

import pytest
from babel.messages.pofile import read_po, write_po

from tinyk.courseware import checkout
from tinyk.translations import checks
from tinyk.translations.terms import (
    TERMS_FILE,
    glossary_problems,
    load_terms,
    message_term_problems,
    term_problems,
)

ROOT = checkout.ROOT


@pytest.fixture(scope="module")
def terms():
    return load_terms(ROOT)


def _term(terms, english):
    return next(t for t in terms if t.found_in(english) == english)


def test_the_catalogues_use_the_term_base(terms):
    assert term_problems(ROOT) == []
    assert glossary_problems(ROOT, terms) == []


@pytest.mark.parametrize("english, chinese", [
    ("K/V heads", "键值头"), ("key/value head", "键值头"), ("tied weights", "共享权重"), ("pair", "坐标对"),
    ("scale invariance", "尺度不变性"), ("prompt", "提示词"), ("hint", "提示"), ("state dict", "状态字典"),
    ("package", "包"), ("hidden width", "中间层宽度"), ("MLP width", "中间层宽度"), ("notebook", "笔记本"),
    ("token", "token"), ("unique parameters", "独立参数"), ("tiny", "小模型"), ("expanded", "展开"),
    ("chat", "聊天"), ("end-of-sequence token", "序列结束符"), ("masked", "屏蔽"), ("cut to fit", "裁剪"),
    ("collapses", "坍缩"), ("feed-forward block", "前馈网络"), ("solution", "答案"),
    ("loses the points", "失分"), ("grader", "评分程序"), ("live", "在线体验"), ("bonus", "选读"),
])
def test_each_english_term_has_one_chinese_term(terms, english, chinese):
    assert _term(terms, english).chinese == chinese
    assert sum(1 for t in terms if t.found_in(english) == english) == 1, f"{english!r} has two entries"


def test_a_choice_said_to_come_from_the_seed_quotes_the_seed_saying_it(terms):
    from_seed = [term for term in terms if term.source.startswith("seed")]
    assert len(from_seed) >= 10, "most choices come from the seed"
    for term in from_seed:
        quoted = "".join(re.findall(r"“([^”]*)”", term.source))
        assert term.chinese in quoted, f"{term.english}: the seed's {quoted!r} lacks {term.chinese!r}"


@pytest.mark.parametrize("english, chinese, term", [
    ("each K/V head serves a group", "每个 K/V 头服务一组", "K/V head"),
    ("each K/V head serves a group", "每个键/值头服务一组", "K/V head"),
    ("05.6 Vocabulary head, tied weights", "05.6 词表头、权重共享", "tied weights"),
    ("Frequencies of the four pairs", "四个维度对的频率", "pairs"),
    ("the short prompt", "短提示", "prompt"),
    ("the state dict has one entry", "state dict 中只有一项", "state dict"),
    ("This notebook loads the file", "本 notebook 加载这个文件", "notebook"),
    ("ms per generated token", "每生成一个词元的毫秒数", "token"),
    ("**tiny** model", "**tiny** 模型", "tiny"),
    ("embedding {budget['embedding']:,}", "嵌入 {budget['embedding']:,}", "embedding"),
    # each variant the native review of the Chinese edition (turn 2) found beside its term
    ("the unexpanded cache", "未扩展的缓存", "unexpanded"),
    ("`repeat_kv` expands $[0, 1]$", "`repeat_kv` 把 $[0, 1]$ 扩展为", "expands"),
    ("A chat answer, with the KV cache", "使用键值缓存的对话回答", "chat"),
    ("the chat template", "对话模板", "chat template"),
    ("drops the end-of-sequence token", "丢掉序列结束 token", "end-of-sequence token"),
    ("its end-of-sequence id, 2", "它的序列结束 ID，即 2", "end-of-sequence id"),
    ("Grey: masked, a later token", "灰色：被掩码遮住的后面的 token", "masked"),
    ("never be cut to fit", "绝不能被截短来凑合", "cut to fit"),
    ("must fail, not be sliced to fit", "不能被切片以适配", "sliced to fit"),
    ("Forcing the wrong table to fit", "强行让错误的表适配", "to fit"),
    ("the output collapses to zero", "输出随之塌缩为零", "collapses"),
    ("the SwiGLU feed-forward block", "SwiGLU 前馈块", "feed-forward block"),
    ("The solution on the course site", "课程网站上的参考答案", "solution"),
    ("Each classic mistake loses the points", "每个典型错误都会丢分", "loses the points"),
    ("the tiled order loses the points", "平铺顺序拿不到分", "loses the points"),
    ("an object that claims to equal everything scores nothing", "这样的对象得不到分数", "scores nothing"),
    ("the grader starts a process", "评分器先启动一个进程", "grader"),
    ("Live: the next token", "现场运行：下一个 token", "Live"),
    ("Live on the course site", "课程网站上可以现场试", "Live"),
    ("19,008 unique parameters", "19,008 个唯一参数", "unique parameters"),
    ("tiny experiment   unique      {0}", "小实验            唯一参数     {0}", "unique"),
    ("bonus: a real trained model", "附加：一个真实的已训练模型", "bonus"),
    # a term of 05.6 and the calque of another
    ("the $B\\times T\\times m$ hidden activation", "$B\\times T\\times m$ 的隐藏激活", "hidden activation"),
    ("the upstream code's quirks", "上游代码的怪异之处", "quirks"),
])
def test_a_wrong_variant_is_named_with_its_term(terms, english, chinese, term):
    found = message_term_problems(english, chinese, terms)
    assert len(found) == 1 and f"“{term}” is written" in found[0], found


@pytest.mark.parametrize("english, chinese", [
    ("Hint 2 of 3: pad the prompt on the left", "提示 2/3：在提示词左侧填充"),  # 提示 is the hint
    ("the gradebook says “graded outside the notebook”", "成绩册注明“graded outside the notebook”"),
    ("the notebooks live in `notebooks/`", "笔记本位于 `notebooks/`"),  # inline code is not prose
    ("the {term}`tied <Tied weights, weight tying (权重共享)>` head",  # a target is not prose
     "{term}`共享权重 <Tied weights, weight tying (权重共享)>`的输出头"),
    ("Tiny-K has 19,008 unique parameters", "Tiny-K 有 19,008 个独立参数"),  # a name, not the word tiny
    ("Taking apart a small LLaMA-style decoder", "把一个小型 LLaMA 风格解码器拆开"),  # small is 小型
    ("Embedding (词嵌入)", "Embedding (词嵌入)"),  # a glossary headword: its Chinese is checked
    ("Batch (批量)", "批量（batch）"),  # and so is it written Chinese first (“batch” is the English)
    # an f-string's placeholder is code the translation keeps; the words around it are checked
    ("embedding {budget['embedding']:,}", "词嵌入 {budget['embedding']:,}"),
    ("the chat template adds one when the conversation has none",
     "当对话中没有系统消息时，聊天模板会添加一条"),
    ("ms per generated token", "每生成一个 token（词元）的毫秒数"),  # the gloss is not the variant 词元
    ("the MLP's hidden activation", "MLP 中间层激活"),
    ("the upstream code's quirks", "上游代码的不合常规之处"),
])
def test_a_right_rendering_or_an_allowed_context_passes(terms, english, chinese):
    assert message_term_problems(english, chinese, terms) == []


def test_a_glossary_headword_is_checked_in_its_parentheses(terms):
    assert message_term_problems("Tied weights (权重共享)", "Tied weights (权重共享)", terms) != []
    assert message_term_problems("Tied weights (权重共享)", "权重共享（tied weights）", terms) != []


def test_a_headword_without_brackets_names_a_term_kept_in_english(tmp_path):
    for folder in ("book", "notebooks"):
        (tmp_path / folder).mkdir()
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / TERMS_FILE).parent.mkdir(parents=True)
    shutil.copy(ROOT / TERMS_FILE, tmp_path / TERMS_FILE)
    glossary = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    assert "\nToken\n" in glossary and "\nLogits\n" in glossary
    (tmp_path / "book" / "glossary.md").write_text(glossary, encoding="utf-8")
    assert glossary_problems(tmp_path) == []
    (tmp_path / "book" / "glossary.md").write_text(glossary.replace("\nBatch (批量)\n", "\nBatch\n"),
                                                   encoding="utf-8")
    assert glossary_problems(tmp_path) == [
        "glossary: 'Batch': the headword's Chinese is not the term base's “批量”"]


def test_a_planted_inconsistent_term_fails_the_check_naming_catalogue_message_and_term(tmp_path):
    shutil.copytree(ROOT / "locale", tmp_path / "locale", ignore=shutil.ignore_patterns("*.mo"))
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "glossary.md", tmp_path / "book" / "glossary.md")
    path = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "notebooks" / "05_4_gqa.po"
    with path.open("rb") as f:
        catalogue = read_po(f)
    message = next(m for m in catalogue if m.id and "K/V head" in m.id and "键值头" in m.string)
    message.string = message.string.replace("键值头", "K/V 头", 1)
    with path.open("wb") as f:
        write_po(f, catalogue, width=76, omit_header=False)
    found = checks.problems(tmp_path)
    assert found == [f"notebooks/05_4_gqa.po: {message.id[:60]!r}: “K/V head” is written “K/V 头”, "
                     f"the term base says “键值头”"] or \
        found == [f"notebooks/05_4_gqa.po: {message.id[:60]!r}: “K/V heads” is written “K/V 头”, "
                  f"the term base says “键值头”"], found

    glossary = tmp_path / "book" / "glossary.md"
    text = glossary.read_text(encoding="utf-8")
    glossary.write_text(text.replace("Batch (批量)", "Batch (批次)"), encoding="utf-8")
    assert glossary_problems(tmp_path) == ["glossary: 'Batch (批次)': the headword's Chinese is not the term "
                                           "base's “批量”"]


@pytest.mark.parametrize("entry, field", [
    ("en = ['tokens?']\nsource = 's'", "zh"),
    ("en = ['(token']\nzh = 'token'\nwrong = ['词元']\nsource = 's'", "en"),
    ("en = 'token'\nzh = 'token'\nwrong = ['词元']\nsource = 's'", "en"),
    ("en = ['token']\nzh = '分组查询注意力'\nwrong = ['查询']\nsource = 's'", "matches the term itself"),
    ("en = ['token']\nzh = 'token'\nwrong = ['词元']\nsource = 's'\nwrongs = ['x']", "unknown field"),
])
def test_a_malformed_entry_is_refused_naming_the_field(tmp_path, entry, field):
    path = tmp_path / TERMS_FILE.name
    path.write_text(f"[[term]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(field)):
        load_terms(path=path)


def test_a_page_glosses_token_once_where_it_first_says_it(terms):
    from tinyk.translations.terms import page_gloss_problems

    glossed = ["本章的问题", "一个 token（词元）是词表中的一项", "每个 token 都有一个 ID", "`token` 是代码"]
    assert page_gloss_problems("p.po", glossed, terms) == []
    assert page_gloss_problems("p.po", ["没有这个词"], terms) == []
    unglossed = ["本章的问题", "一个 token 是词表中的一项", "每个 token（词元）都有一个 ID"]
    assert page_gloss_problems("p.po", unglossed, terms) == [
        "p.po: '一个 token 是词表中的一项': the page's first “token” is not glossed “token（词元）”",
        "p.po: '每个 token（词元）都有一个 ID': “token（词元）” again: the page glosses it once, "
        "where it first says “token”"]
    twice = ["一个 token（词元）是词表中的一项", "每个 token（词元）都有一个 ID"]
    assert len(page_gloss_problems("p.po", twice, terms)) == 1
    # code is not where a reader meets the word: `token` in backticks is not the first place
    assert len(page_gloss_problems("p.po", ["`tokens` 是形参", "一个 token 是一项"], terms)) == 1


def test_each_page_of_the_chinese_edition_glosses_token_once():
    from tinyk.translations.terms import gloss_problems

    assert gloss_problems(ROOT) == []


def test_a_planted_unglossed_page_fails_the_check(tmp_path):
    shutil.copytree(ROOT / "locale", tmp_path / "locale", ignore=shutil.ignore_patterns("*.mo"))
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "notebooks" / "05_3_rope.po"
    text = path.read_text(encoding="utf-8")
    assert text.count("token（词元）") == 1
    path.write_text(text.replace("token（词元）", "token"), encoding="utf-8")
    from tinyk.translations.terms import gloss_problems

    found = gloss_problems(tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith("notebooks/05_3_rope.po: ") and "not glossed" in found[0], found


def test_the_glossary_glosses_token_where_the_chinese_page_first_says_it(tmp_path):
    """The Chinese glossary is in pinyin order (tinyk.translations.pages.sort_glossaries): its
    first token is in 查询、键、值, not in 词嵌入 (the English page's first)."""
    shutil.copytree(ROOT / "locale", tmp_path / "locale", ignore=shutil.ignore_patterns("*.mo"))
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "book" / "glossary.po"
    text = path.read_text(encoding="utf-8")
    assert text.count("每个 token（词元）的三个投影") == text.count("把 token ID") == 1
    path.write_text(text.replace("每个 token（词元）的三个投影", "每个 token 的三个投影")
                    .replace("把 token ID", "把 token（词元）ID"), encoding="utf-8")
    from tinyk.translations.terms import gloss_problems

    found = gloss_problems(tmp_path)
    assert len(found) == 2 and all(p.startswith("book/glossary.po: ") for p in found), found
    assert "每个 token 的三个投影" in found[0] and "not glossed" in found[0], found


def test_a_malformed_gloss_is_refused(tmp_path):
    path = tmp_path / TERMS_FILE.name
    entry = "en = ['tokens?']\nzh = 'token'\nwrong = ['词元']\ngloss = '词元'\nsource = 's'"
    path.write_text(f"[[term]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="gloss"):
        load_terms(path=path)


# Each variant the native review of the Chinese edition (turn 2) found, planted back into the
# message it was fixed in: (catalogue, the right words, the variant, the term named).
_PLANTED = [
    ("notebooks/05_4_gqa.po", "05.4.1：展开后的键值头", "05.4.1：扩展后的键值头", "expanded"),
    ("notebooks/05_10_real_weights.po", "使用键值缓存的聊天回答", "使用键值缓存的对话回答", "chat"),
    ("notebooks/05_9_text_vs_file.po", "EOS 序列结束符。", "EOS 序列结束 token。", "end-of-sequence token"),
    ("interface.po", "灰色：被屏蔽的后续 token", "灰色：被掩码遮住的后续 token", "masked"),
    ("code/05_3_rope.po", "裁剪成一个头的宽度", "截短成一个头的宽度", "cut to fit"),
    ("notebooks/05_2_rmsnorm.po", "每个输出都坍缩为零", "每个输出都塌缩为零", "collapses"),
    ("book/intro.po", "前馈网络、解码器层", "前馈块、解码器层", "feed-forward block"),
    ("interface.po", "[课程网站上的答案]", "[课程网站上的参考答案]", "solution"),
    ("notebooks/05_2_rmsnorm.po", "每种典型错误都会失分", "每种典型错误都会丢分", "loses the points"),
    ("notebooks/05_4_gqa.po", "给出的顺序）会失分", "给出的顺序）拿不到分", "loses the points"),
    ("book/instructors.po", "评分程序**只能在 Linux 上**运行", "评分器**只能在 Linux 上**运行", "grader"),
    ("book/playground.po", "在线体验两个模型", "两个模型，现场运行", "live"),
    ("interface.po", "在线体验：[在浏览器里运行的 SmolLM2]", "现场试：[在浏览器里运行的 SmolLM2]", "Live"),
    ("notebooks/05_6_head_protocol.po", "一个配置的独立参数量", "一个配置的唯一参数量", "unique parameters"),
    ("book/chapter05.po", "选读：", "附加：", "bonus"),
    ("notebooks/05_3_rope.po", "引发 `ValueError`，并写明", "抛出 `ValueError`，并写明", "raises"),
]


def test_each_planted_variant_fails_the_check_naming_its_term(tmp_path):
    shutil.copytree(ROOT / "locale", tmp_path / "locale", ignore=shutil.ignore_patterns("*.mo"))
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "glossary.md", tmp_path / "book" / "glossary.md")
    assert checks.problems(tmp_path) == []
    zh = tmp_path / "locale" / "zh_CN"
    for catalogue, right, wrong, _ in _PLANTED:
        path = zh / catalogue if (zh / catalogue).is_file() else zh / "LC_MESSAGES" / catalogue
        text = path.read_text(encoding="utf-8")
        assert text.count(right) >= 1, (catalogue, right)
        path.write_text(text.replace(right, wrong, 1), encoding="utf-8")
    found = checks.problems(tmp_path)
    assert len(found) == len(_PLANTED) == 16, found
    named = {(p.split(": ")[0], p.split("“")[1].split("”")[0]) for p in found}
    assert named == {(c, t) for c, _, _, t in _PLANTED}, named
