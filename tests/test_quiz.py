"""Concept checks (:mod:`tinyk.courseware.quiz`): the quiz's parsing, its plain-Markdown form in the student
notebooks, its translation, and the book's ``quiz`` directive in a one-page Sphinx build (HTML,
and the gettext builder that extracts the Chinese edition's messages). The quiz in a real
browser, in both editions: ``tests/test_browser.py``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tinyk.courseware.checkout import NOTEBOOKS, ROOT, notebook_paths
from tinyk.courseware.chinese_notebooks import translate_markdown
from tinyk.courseware.exercises import source_text
from tinyk.courseware.quiz import QUIZ_DIRECTIVE, SHOW_ANSWERS, VERDICTS, parse_quiz, split_options
from tinyk.courseware.student_markdown import STUDENT_WORDS, markdown_for_notebooks

BODY = """:answer: 2
What does RMSNorm divide by, for $x = (3, 4)$?

- The standard
  deviation.

  That is *LayerNorm*, after it subtracts the mean.
- The RMS, $\\sqrt{12.5}$.

  It rescales the length.

  ```
  r = sqrt(mean(x ** 2))
  ```
- The length, 5.

  That gives length 1.
"""


def test_a_quiz_parses_into_question_choices_explanations_and_answer():
    options, body, n = split_options(BODY)
    assert options == {"answer": "2"} and n == 1
    quiz = parse_quiz(body, options["answer"])
    assert quiz.question == "What does RMSNorm divide by, for $x = (3, 4)$?"
    assert [c.text for c in quiz.choices] == ["The standard\ndeviation.", "The RMS, $\\sqrt{12.5}$.",
                                              "The length, 5."]
    assert quiz.choices[0].explanation == "That is *LayerNorm*, after it subtracts the mean."
    assert quiz.choices[1].explanation == "It rescales the length.\n\n```\nr = sqrt(mean(x ** 2))\n```"
    assert quiz.answer == 2
    lines = body.split("\n")  # each piece's line, for the page's line numbers
    assert [lines[c.line] for c in quiz.choices] == ["- The standard", "- The RMS, $\\sqrt{12.5}$.",
                                                     "- The length, 5."]
    assert lines[quiz.choices[1].explanation_line] == "  It rescales the length."


@pytest.mark.parametrize(("body", "answer", "error"), [
    (BODY.split("\n", 1)[1], None, r":answer: is None; it must be the number of the right choice"),
    (BODY.split("\n", 1)[1], "two", r":answer: is 'two'"),
    (BODY.split("\n", 1)[1], "0", r":answer: is 0, but there are 3 choices \(.*1 to 3\)"),
    (BODY.split("\n", 1)[1], "4", r":answer: is 4, but there are 3 choices"),
    ("- A.\n\n  Why.\n- B.\n\n  Why.\n", "1",
     r"one paragraph \(the question\) then one bullet list .*found bullet_list"),
    ("Q?\n\nMore?\n\n- A.\n\n  Why.\n- B.\n\n  Why.\n", "1", r"found paragraph, paragraph, bullet_list"),
    ("Q?\n\n- A.\n\n  Why.\n- B.\n\n  Why.\n\nAfter.\n", "1", r"found paragraph, bullet_list, paragraph"),
    ("Q?\n\n1. A.\n\n   Why.\n2. B.\n\n   Why.\n", "1", r"found paragraph, ordered_list"),
    ("Q?\n\n- A.\n- B.\n\n  Why.\n", "1", r"choice 1 \('A.'\) has no explanation"),
    ("Q?\n\n- A.\n\n  Why.\n", "1", r"at least two choices; found 1"),
    ("Q?\n\n- ```\n  code\n  ```\n\n  Why.\n- B.\n\n  Why.\n", "1",
     r"choice 1 does not start with a paragraph"),
    ("", "1", r"found nothing"),
])
def test_a_malformed_quiz_is_refused_with_what_is_wrong(body, answer, error):
    with pytest.raises(ValueError, match=error) as info:
        parse_quiz(body, answer, "05_2_rmsnorm: the quiz at line 7")
    assert str(info.value).startswith("05_2_rmsnorm: the quiz at line 7: ")


def test_the_student_notebooks_show_the_choices_and_hide_the_explanations_in_details():
    words = {"Correct.": "正确。", "Not quite.": "不太对。", "Show the answers": "查看答案与解析"}
    text = markdown_for_notebooks(f"Before.\n\n:::{{quiz}}\n{BODY}:::\n\nAfter.\n", "https://x/", {},
                                  words.__getitem__)
    assert text == ("Before.\n\nWhat does RMSNorm divide by, for $x = (3, 4)$?\n\n"
                    "1. The standard\n   deviation.\n2. The RMS, $\\sqrt{12.5}$.\n3. The length, 5.\n\n"
                    "<details>\n<summary>查看答案与解析</summary>\n\n"
                    "1. **不太对。** That is *LayerNorm*, after it subtracts the mean.\n"
                    "2. **正确。** It rescales the length.\n\n   ```\n   r = sqrt(mean(x ** 2))\n   ```\n"
                    "3. **不太对。** That gives length 1.\n\n</details>\n\nAfter.\n")
    assert {SHOW_ANSWERS, *VERDICTS.values()} <= set(STUDENT_WORDS)  # the interface catalogue checks them


def test_a_translated_quiz_keeps_its_options_and_translates_every_piece():
    source = f":::{{quiz}}\n{BODY}:::\n"
    quiz = parse_quiz(split_options(BODY)[1], "2")
    english = [quiz.question] + [p for c in quiz.choices for p in (c.text, c.explanation.split("\n\n")[0])]
    messages = {" ".join(e.split()): f"【{i}】" for i, e in enumerate(english)}
    missing: list[str] = []
    chinese = translate_markdown(source, messages, missing)
    assert missing == []
    assert chinese.startswith(":::{quiz}\n:answer: 2\n【0】\n\n- 【1】\n\n  【2】\n- 【3】")
    zh = parse_quiz(split_options(QUIZ_DIRECTIVE.match(chinese).group(1))[1], "2")
    assert zh.question == "【0】" and [c.text for c in zh.choices] == ["【1】", "【3】", "【5】"]


def _notebook_quizzes() -> dict[str, list[str]]:
    out = {}
    for path in notebook_paths():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        bodies = [m.group(1) for c in cells if c["cell_type"] == "markdown"
                  for m in QUIZ_DIRECTIVE.finditer(source_text(c))]
        if bodies:
            out[path.stem] = bodies
    return out


def test_the_chapter_quizzes_parse_and_spread_their_answers():
    quizzes = _notebook_quizzes()
    assert sorted(quizzes) == sorted(path.stem for path in notebook_paths())  # every section has its checks
    for stem, bodies in quizzes.items():
        assert 2 <= len(bodies) <= 4, stem
        parsed = [parse_quiz(split_options(b)[1], split_options(b)[0].get("answer"), stem) for b in bodies]
        assert all(len(q.choices) >= 3 for q in parsed), stem
        assert len({q.answer for q in parsed}) > 1, f"{stem}: every answer is choice {parsed[0].answer}"
        # The verdict is the page's: an explanation does not say it again.
        assert not any(re.match(r"(Yes|No|Correct|Wrong|Right)\b", c.explanation)
                       for q in parsed for c in q.choices), stem


@pytest.fixture(scope="module")
def scratch_book(tmp_path_factory):
    """A one-page Sphinx build (MyST, the book's extension) of a page with two quizzes: its
    HTML and, from the gettext builder, its messages."""
    src = tmp_path_factory.mktemp("quiz-book")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['myst_parser', 'tinyk_book']\ntinyk_course_model = False\n"
        "myst_enable_extensions = ['colon_fence', 'dollarmath']\n", encoding="utf-8")
    second = BODY.replace(":answer: 2", ":answer: 1").replace("What does", "If 1 < 2 & 3 > 2, what does")
    second = second.replace("- The length, 5.", "- $5 < 6$")
    (src / "index.md").write_text(f"# Page\n\n:::{{quiz}}\n{BODY}:::\n\n:::{{quiz}}\n{second}:::\n",
                                  encoding="utf-8")
    out = {}
    for builder in ("gettext", "html"):
        # A process of its own: Sphinx and docutils keep registries per process, and another
        # test's build in this worker (with myst-nb) would leave them in another state.
        run = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-q", "-b", builder, str(src),
                              str(src / "_build" / builder)], capture_output=True, text=True, check=False)
        assert run.returncode == 0 and run.stderr.strip() == "", run.stderr
        out[builder] = src / "_build" / builder
    return out


def test_the_directive_renders_radios_a_button_and_a_live_region(scratch_book):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((scratch_book["html"] / "index.html").read_text(encoding="utf-8"), "html.parser")
    quizzes = soup.select("div.tinyk-quiz")
    assert [q["id"] for q in quizzes] == ["tinyk-quiz-1", "tinyk-quiz-2"]
    first = quizzes[0]
    legend = first.select_one("fieldset > legend").get_text()
    assert legend == "What does RMSNorm divide by, for \\(x = (3, 4)\\)?"
    radios = first.select("fieldset input[type=radio]")
    assert [r["name"] for r in radios] == ["tinyk-quiz-1"] * 3
    assert [r["data-correct"] for r in radios] == ["false", "true", "false"]
    labels = [first.select_one(f"label[for={r['id']}]").get_text() for r in radios]
    assert labels == ["The standard\ndeviation.", "The RMS, \\(\\sqrt{12.5}\\).", "The length, 5."]
    explanations = first.select(".tinyk-quiz-explanation")
    assert all(e.has_attr("hidden") for e in explanations)
    assert explanations[1].select_one("pre").get_text().strip() == "r = sqrt(mean(x ** 2))"
    assert first.select_one("em").get_text() == "LayerNorm"
    assert first.select_one("button[type=button].tinyk-quiz-check").get_text() == "Check answer"
    live = first.select_one(".tinyk-quiz-feedback")
    assert live["role"] == "status" and live["aria-live"] == "polite" and live.get_text() == ""
    assert {w["data-word"]: w.get_text() for w in first.select(".tinyk-quiz-word")} == {
        "none": "Choose an answer first.", "right": "Correct.", "wrong": "Not quite."}
    second = quizzes[1]
    assert second.select_one("legend").decode_contents().startswith("If 1 &lt; 2 &amp; 3 &gt; 2, what does")
    assert [r["data-correct"] for r in second.select("input")] == ["true", "false", "false"]
    # a label of maths alone names its radio button with the TeX (MathJax's output gives no name)
    assert [r.get("aria-label") for r in second.select("input")] == [None, None, "5 < 6"]
    assert (scratch_book["html"] / "_static" / "tinyk-quiz.js").is_file()
    assert 'src="_static/tinyk-quiz.js' in (scratch_book["html"] / "index.html").read_text(encoding="utf-8")


def test_the_gettext_builder_extracts_every_piece_of_a_quiz(scratch_book):
    from tinyk.courseware.catalogues import read_catalogue

    messages = {str(m.id) for m in read_catalogue(scratch_book["gettext"] / "index.pot") if m.id}
    quiz = parse_quiz(split_options(BODY)[1], "2")
    pieces = [quiz.question] + [" ".join(c.text.split()) for c in quiz.choices] + \
        [c.explanation.split("\n\n")[0] for c in quiz.choices]
    assert set(pieces) <= messages, set(pieces) - messages
    assert "2" not in messages and not any(m.startswith(":answer:") for m in messages)


def test_the_numbers_and_facts_the_chapter_quizzes_state():
    """05.2: RMSNorm of (3, 4), the mean of its outputs, the length-1 distractor, float16's
    overflow and output dtype; 05.3: tables from d refused, and pairs from d turn faster; 05.4: a
    finite fill gives uniform weights where -inf gives NaN."""
    import torch

    import tinyk

    norm = tinyk.RMSNorm(2, eps=0.0)
    y = norm(torch.tensor([3.0, 4.0])).detach()
    assert torch.allclose(y, torch.tensor([0.8485, 1.1314]), atol=1e-4) and round(float(y.mean()), 2) == 0.99
    assert torch.allclose(torch.tensor([3.0, 4.0]) / 5, torch.tensor([0.6, 0.8]))
    assert float((y**2).mean()) == pytest.approx(1.0) and float(y.norm()) == pytest.approx(2**0.5)
    big = torch.full((1, 4), 300.0, dtype=torch.float16)
    assert torch.isinf(big.pow(2).mean(-1)).all() and torch.finfo(torch.float16).max == 65504
    out = tinyk.RMSNorm(4).half()(big)
    assert out.dtype == torch.float16 and torch.isfinite(out).all()

    d, d_h = 64, 16
    cos_d, sin_d = tinyk.precompute_freqs_cis(d, 5)
    with pytest.raises(ValueError, match=r"\(5, 32\).*\(1, 5, 4, 8\)"):
        tinyk.apply_rotary_emb(torch.randn(1, 5, 4, d_h), torch.randn(1, 5, 2, d_h), cos_d, sin_d)
    cos_h, _ = tinyk.precompute_freqs_cis(d_h, 5)
    assert torch.allclose(cos_d[:, 0], cos_h[:, 0])  # the first pair turns at 1 radian a position either way
    faster = torch.acos(cos_d[1, 1 : d_h // 2]) > torch.acos(cos_h[1, 1:])
    assert faster.all()

    scores = torch.randn(4)
    blocked = torch.zeros(4, dtype=torch.bool)
    uniform = torch.softmax(scores.masked_fill(~blocked, torch.finfo(torch.float32).min), -1)
    assert torch.allclose(uniform, torch.full((4,), 0.25))
    assert torch.isnan(torch.softmax(scores.masked_fill(~blocked, float("-inf")), -1)).all()


def test_the_numbers_and_facts_the_later_quizzes_state():
    """05.1: the layers' shape, the three refused configurations, the attention count; 05.5:
    the SwiGLU width for d = 32 and its cost, the blocks' weights; 05.6: the tied count; 05.7:
    the three loss levels; 05.9: the lines whose answer needs a 0; 05.10: SmolLM2's cache, keys
    only and expanded (from its sizes, without loading the file). What only a run prints (the
    growth exponents, the stream's norm, the init's statistics, the generated text, the losses of
    SmolLM2) the site test asserts on the built pages (tests/test_site.py, KEY_NUMBERS)."""
    import torch
    from torch import nn

    import tinyk
    from tinyk import (
        ModelConfig,
        Transformer,
        count_parameters,
        count_parameters_naive,
        kv_cache_bytes,
        parameter_budget,
        swiglu_hidden_dim,
    )
    from tinyk.data import ENTROPY_FLOOR, FORMAT_ONLY_LOSS, synthetic_text, unigram_entropy
    from tinyk.lessons.tracing import trace_shapes

    tiny = ModelConfig.tiny()
    torch.manual_seed(0)
    records = {r.name: r.output for r in trace_shapes(Transformer(tiny), torch.randint(0, 13, (2, 5)))}
    assert (tiny.dim, tiny.mlp_hidden_dim, tiny.vocab_size) == (32, 64, 13)
    assert records["layers.0"] == records["layers.1"] == (2, 5, 32) and records["output"] == (2, 5, 13)
    refused = [(dict(dim=30, n_heads=4), "not divisible"),
               (dict(dim=36, n_heads=4, n_kv_heads=4), "head_dim=9, which is odd"),
               (dict(dim=48, n_heads=6, n_kv_heads=4), "does not divide")]
    for kwargs, rule in refused:
        with pytest.raises(ValueError, match=rule):
            ModelConfig(**kwargs)
    assert ModelConfig(dim=48, n_heads=6, n_kv_heads=6).head_dim == 8  # even: rule 3 is what fails with 4
    upstream = ModelConfig.upstream_default()
    assert (upstream.dim, upstream.n_heads, upstream.n_kv_heads, upstream.head_dim) == (768, 16, 8, 48)
    assert parameter_budget(upstream)["attention"] == 1_769_472 == 3 * 768**2 < 4 * 768**2

    assert int(8 * 32 / 3) == 85 and f"{8 * 32 / 3:.2f}" == "85.33"
    assert swiglu_hidden_dim(32, 64) == 128 and 3 * 32 * 128 / (8 * 32**2) == 1.5  # 50% over the budget
    relu = nn.Sequential(nn.Linear(16, 64, bias=False), nn.ReLU(), nn.Linear(64, 16, bias=False))
    swiglu = tinyk.MLP(16, swiglu_hidden_dim(16, multiple_of=1))
    assert count_parameters(relu) == 2_048 and count_parameters(swiglu) == 2_016

    model = Transformer(tiny)
    assert (count_parameters(model), count_parameters_naive(model)) == (19_008, 19_424) and 13 * 32 == 416

    text = synthetic_text(n_lines=3000, seed=0)
    levels = (unigram_entropy(text), FORMAT_ONLY_LOSS, ENTROPY_FLOOR)
    assert [round(v, 2) for v in levels] == [2.36, 1.15, 0.58]
    assert {len(line) for line in text.split("\n")[:-1]} == {7}  # 8 symbols with the newline

    assert sum(0 in (a, b) for a in range(10) for b in range(10)) == 19  # 05.9: the sums whose answer has a 0

    smollm2 = ModelConfig(dim=576, n_layers=30, n_heads=9, n_kv_heads=3, vocab_size=49152, hidden_dim=1536)
    cache = kv_cache_bytes(smollm2, 2048)
    assert [f"{b / 1e6:.1f}" for b in (cache, cache / 2, kv_cache_bytes(smollm2, 2048, expanded=True))] == [
        "94.4", "47.2", "283.1"]

    stated = {"05_1_shapes": ["1,769,472", "$2\\times5\\times32$"],
              "05_5_swiglu_layer": ["85", "128", "2,016", "2,048"],
              "05_6_head_protocol": ["19,008", "19,424", "416"], "05_7_checks": ["2.36", "1.15", "0.58"],
              "05_9_text_vs_file": ["19"], "05_10_real_weights": ["94.4", "47.2", "283.1"]}
    cells = {stem: json.loads((ROOT / NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
             for stem in stated}
    quizzes = {stem: "".join(source_text(c) for c in cells[stem] if c.get("id") == "quiz") for stem in stated}
    assert {stem: [n for n in numbers if n not in quizzes[stem]] for stem, numbers in stated.items()} == {
        stem: [] for stem in stated}  # each number computed above is the one its quiz states
