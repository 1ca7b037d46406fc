"""The package's own Chinese words (tinyk/locale/zh_CN.po): every catalogued mistake, every
word of the class report and every message the package says to a learner has its Chinese
there, a missing one is named by the translations check and stops the report, the catalogue
reads the same without babel as with it, and the modules it serves hold no Chinese of their
own."""

from __future__ import annotations

import re
import sys

import pytest
from babel.messages.pofile import read_po, write_po

from tinyk.courseware.checkout import ROOT
from tinyk.learner import mistakes
from tinyk.reports import report_words
from tinyk.translations import cli, package_catalogue, package_words

CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")


def test_every_mistake_and_report_word_has_its_chinese_in_the_catalogue():
    assert package_words.problems() == []
    assert len(mistakes.CATALOGUE) >= 100
    assert all(CJK.search(m.zh) for m in mistakes.CATALOGUE)
    half = mistakes.by_id("05.3.2:half-split-pairing")
    assert half.zh == "把前后两半配对（i 与 i + d_h/2），而不是相邻坐标"  # the Chinese as it was in the code
    chinese = report_words.words("zh")
    assert set(chinese) == set(report_words.words("en")) == {*report_words.WORDS, "other_lang"}
    assert all(CJK.search(text) for key, text in chinese.items() if key != "other_lang")
    assert (chinese["points"], chinese["axis_x"]) == ("分", "得分")  # one English, two Chinese: msgctxt
    assert report_words.words("en")["other_lang"] == "中文" and chinese["other_lang"] == "English"
    assert report_words.status_label("tests-modified", "zh") == "测试被改动"
    assert report_words.share_sentence("35%", 14, 40, "X", "zh") == "全班 35%（40 人中 14 人）：X"


@pytest.fixture
def damaged(tmp_path):
    """The catalogue with a mistake's Chinese emptied, a report word's message deleted, a
    status's Chinese marked fuzzy, a place dropped and a message nobody uses added."""
    with package_catalogue.PATH.open("rb") as f:
        catalogue = read_po(f)
    catalogue["the sum of the squares instead of their mean"].string = ""
    catalogue.delete("Most common named mistakes")
    catalogue.get("timeout", context=report_words.STATUS).flags.add("fuzzy")
    catalogue.get("Scores in exercise {0}: students per score").string = "练习的得分"
    catalogue.add("a label nobody uses", "没人用的标签")
    path = tmp_path / "zh_CN.po"
    with path.open("wb") as f:
        write_po(f, catalogue)
    return path


def test_a_missing_or_damaged_word_is_named_by_the_check(damaged):
    found = package_words.problems(damaged)
    assert found == [
        "tinyk/locale/zh_CN.po: 'the sum of the squares instead of their mean' "
        "(mistake 05.2.1:sum-not-mean): no Chinese",
        "tinyk/locale/zh_CN.po: 'Most common named mistakes' (class report: mistakes): no Chinese",
        "tinyk/locale/zh_CN.po: 'Scores in exercise {0}: students per score' (class report: chart): "
        "a number's place ({0}, {1}, ...) or a field ({name}) differs from the English",
        "tinyk/locale/zh_CN.po: 'timeout' (class report: the status timeout): marked fuzzy (the English "
        "changed; check the translation)",
        "tinyk/locale/zh_CN.po: 'a label nobody uses': the package uses it nowhere: remove it",
    ]
    assert package_words.problems(damaged.parent / "none.po") == [
        "tinyk/locale/zh_CN.po: missing: the package's Chinese words (the mistakes', the class report's)"]


def test_a_word_without_its_chinese_stops_rather_than_showing_english(damaged, monkeypatch):
    monkeypatch.setattr(package_catalogue, "PATH", damaged)
    missing = package_catalogue.MissingChinese
    with pytest.raises(missing, match="no Chinese for 'the sum of the squares instead of their mean'"):
        _ = mistakes.by_id("05.2.1:sum-not-mean").zh
    with pytest.raises(missing, match="'timeout' in the context 'grading status'"):
        report_words.status_label("timeout", "zh")
    assert report_words.words("en")["mistakes"] == "Most common named mistakes"  # English needs no Chinese


def test_the_translations_check_runs_the_package_catalogues_check(monkeypatch, capsys):
    monkeypatch.setattr(cli, "stale", lambda: [])
    monkeypatch.setattr(cli, "problems", lambda: [])
    monkeypatch.setattr(package_words, "problems", lambda: ["tinyk/locale/zh_CN.po: 'x': no Chinese"])
    assert cli.main(["check"]) == 1
    assert "tinyk/locale/zh_CN.po: 'x': no Chinese" in capsys.readouterr().out


def test_the_term_base_checks_the_package_catalogue(tmp_path, monkeypatch):
    from tinyk.translations.terms import term_problems

    with package_catalogue.PATH.open("rb") as f:
        catalogue = read_po(f)
    english = mistakes.by_id("05.10.3:tiled-groups").en
    assert catalogue[english].string.startswith("键值头")
    catalogue[english].string = catalogue[english].string.replace("键值头", "K/V 头")
    with (tmp_path / "zh_CN.po").open("wb") as f:
        write_po(f, catalogue)
    monkeypatch.setattr(package_catalogue, "PATH", tmp_path / "zh_CN.po")
    assert term_problems(ROOT) == [f"tinyk/locale/zh_CN.po: {english!r}: “K/V heads” is written “K/V 头”, "
                                   f"the term base says “键值头”"]


def test_the_catalogue_reads_the_same_without_babel_as_with_it():
    # A learner's Colab has no babel: the package reads its words with the standard library.
    with package_catalogue.PATH.open("rb") as f:
        catalogue = read_po(f)
    by_babel = {(m.context or "", m.id): m.string for m in catalogue if m.id and m.string and not m.fuzzy}
    assert package_catalogue.read_words(package_catalogue.PATH.read_text(encoding="utf-8")) == by_babel
    assert len(by_babel) >= 250
    odd = ('msgid ""\nmsgstr "header"\n\n#, fuzzy\nmsgid "old"\nmsgstr "旧"\n\nmsgctxt "axis"\n'
           'msgid "a \\"quoted\\"\\n"\n"line"\nmsgstr ""\n"引\\"号\\"\\n行"\n'
           '#~ msgid "gone"\n#~ msgstr "没了"\nmsgid "empty"\nmsgstr ""\n')
    assert package_catalogue.read_words(odd) == {("axis", 'a "quoted"\nline'): '引"号"\n行'}


def test_say_speaks_the_learners_language_and_falls_back_to_english(monkeypatch):
    say = package_catalogue.say
    message = "ModelConfig.{name}={value}: must be a positive integer"
    monkeypatch.delenv("TINYK_LANGUAGE", raising=False)
    assert say(message, name="n_layers", value=0) == "ModelConfig.n_layers=0: must be a positive integer"
    for language in ("zh_CN", "zh-CN", "zh", " ZH_cn "):
        monkeypatch.setenv("TINYK_LANGUAGE", language)
        assert say(message, name="n_layers", value=0) == "ModelConfig.n_layers=0：必须是正整数"
    assert say("a message nobody translated {n}", n=3) == "a message nobody translated 3"
    monkeypatch.setenv("TINYK_LANGUAGE", "en")
    assert say(message, name="dim", value=-1) == "ModelConfig.dim=-1: must be a positive integer"
    # A learner's Colab has no babel: the words are read without it.
    monkeypatch.setitem(sys.modules, "babel", None)
    monkeypatch.setenv("TINYK_LANGUAGE", "zh_CN")
    package_catalogue._translations.cache_clear()
    assert say(message, name="n_layers", value=0) == "ModelConfig.n_layers=0：必须是正整数"


def test_every_message_the_package_says_is_found_and_one_built_in_place_is_named(tmp_path):
    found, unreadable = package_words.said()
    assert unreadable == [] and len(found) >= 110
    assert "tinyk/learner/part_compare.py" in found["{what} differs from tinyk's: {detail}"][0]
    fused = found["it is PyTorch's fused version of the part"]
    assert [w.split(":")[0] for w in fused] == ["tinyk/learner/own_code.py"]
    (tmp_path / "loud.py").write_text(
        'from tinyk.translations.package_catalogue import noted, say\n'
        'WHY = noted("a reason given later")\n'
        'def f(x, why=WHY):\n'
        '    say(why)\n'
        '    say(f"built {x} in place")\n'
        '    return say("x is {x}", x=x) + say("a" + "b")\n')
    found, unreadable = package_words.said(tmp_path)
    assert found == {"a reason given later": ["tinyk/loud.py:2"], "x is {x}": ["tinyk/loud.py:6"]}
    assert sorted(unreadable) == ["tinyk/loud.py:5", "tinyk/loud.py:6"]
