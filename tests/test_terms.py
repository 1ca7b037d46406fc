"""The Chinese edition's term base (locale/zh_CN/terms.toml): one Chinese term per English
term, the seed's where it has one, enforced over every catalogue by the translations check."""

from __future__ import annotations

import re
import shutil

import pytest
from babel.messages.pofile import read_po, write_po

from tinyk import course, translations
from tinyk.terms import TERMS_FILE, glossary_problems, load_terms, message_term_problems, term_problems

ROOT = course.ROOT


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
    ("token", "token"), ("unique parameters", "唯一参数"), ("tiny", "小模型"),
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
    ("Tiny-K has 19,008 unique parameters", "Tiny-K 有 19,008 个唯一参数"),  # a name, not the word tiny
    ("Taking apart a small LLaMA-style decoder", "把一个小型 LLaMA 风格解码器拆开"),  # small is 小型
    ("Embedding (词嵌入)", "Embedding (词嵌入)"),  # a glossary headword: its Chinese is checked
    ("Batch (批量)", "批量（batch）"),  # and so is it written Chinese first (“batch” is the English)
    # an f-string's placeholder is code the translation keeps; the words around it are checked
    ("embedding {budget['embedding']:,}", "词嵌入 {budget['embedding']:,}"),
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
    found = translations.problems(tmp_path)
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
