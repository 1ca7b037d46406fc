"""No answer above its exercise (course format, "Build exercises"): a learner never sees the
code an exercise asks for, as runnable code in a cell above it, before writing it.

Each exercise has its key expressions (:data:`KEY_EXPRESSIONS`, regular expressions): the
line of its answer that carries the idea (RMSNorm's mean of the squares over the last axis,
RoPE's rotation of a pair, SwiGLU's gated product, ...). None may appear in a code cell above
the exercise's answer cell, in any copy a learner reads: the page (:func:`book_version`: the
earlier answers behind their toggles, no hidden tests), the student notebook and its Chinese
edition. Demo cells use the package's part instead (``tinyk.RMSNorm``, ``apply_rotary_emb``)
or show the idea on numbers. Every key expression must match its own exercise's answer, so
that a misspelt one cannot pass by matching nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tinyk.courseware.checkout import notebook_paths
from tinyk.courseware.exercises import book_version, is_solution, nbgrader, source_text

ROOT = Path(__file__).resolve().parents[1]

# grade_id of the answer cell -> regular expressions of its key lines.
KEY_EXPRESSIONS: dict[str, list[str]] = {
    "ex_05_1_1_solution": [r"\bdim\s*//\s*n_heads\b"],
    "ex_05_1_2_solution": [r"\bn_heads\s*//\s*n_kv_heads\b"],
    "ex_05_1_3_solution": [r"\bn_heads\s*%\s*k\s*==\s*0"],
    "ex_05_2_1_solution": [r"sum\(\s*\w+\s*\*\s*\w+\s+for\b[^)]*\)\s*/\s*len\("],
    "ex_05_2_2_solution": [r"pow\(2\)\.mean\(\s*-1\s*,\s*keepdim\s*=\s*True\s*\)"],
    "ex_05_2_3_solution": [r"torch\.outer\(\s*x\s*,\s*x\s*\)"],
    "ex_05_3_1_solution": [r"\*\*\s*\(\s*-?\s*torch\.arange\(\s*0\s*,\s*\w+\s*,\s*2"],
    # the rotation of a pair, (a cos - b sin, a sin + b cos)
    "ex_05_3_2_solution": [r"\w+\s*\*\s*c\w*\s*-\s*\w+\s*\*\s*s\w*\s*,"
                           r"\s*\w+\s*\*\s*s\w*\s*\+\s*\w+\s*\*\s*c"],
    "ex_05_3_3_solution": [r"\[\s*m\s*:\s*m\s*\+\s*1\s*\]"],
    "ex_05_3_4_solution": [r"\bslice\(\s*start_pos\s*,|\b(?:cos|sin)\[\s*start_pos\s*:"],
    "ex_05_4_1_solution": [r"//\s*\w+\s+for\s+\w+\s+in\s+range\(\s*n_heads\s*\)"],
    "ex_05_4_2_solution": [r"2\s*\*\s*[\w.]*n_layers\s*\*\s*[\w.]*n_kv_heads"],
    "ex_05_4_3_solution": [r"\[\s*:\s*,\s*:\s*,\s*:\s*,\s*None\s*,\s*:\s*\]\.expand\("],
    "ex_05_4_4_solution": [r"masked_fill\(\s*~\s*mask\s*,\s*torch\.finfo"],
    "ex_05_5_1_solution": [r"\+\s*multiple_of\s*-\s*1\s*\)\s*//\s*multiple_of"],
    "ex_05_5_2_solution": [r"silu\([^()]*(?:\([^()]*\))?[^()]*\)\s*\*"],
    "ex_05_5_3_solution": [r"\bx\s*\+\s*[\w.]*attention\(\s*[\w.]*attention_norm\(\s*x\b"],
    "ex_05_6_1_solution": [r"3\s*\*\s*dim\s*\*\s*hidden_dim"],
    "ex_05_6_2_solution": [r"cumsum\(\s*-1\s*\)\s*-\s*1\s*\)\s*\.clamp\("],
    "ex_05_6_3_solution": [r"\.tril\(\s*\w+\s*-\s*query_len\s*\)"],
    "ex_05_6_4_solution": [r"\blabels\[\s*:\s*,\s*1\s*:\s*\]"],
    "ex_05_6_5_solution": [r"\bpad\s+if\s+done\s+else\b"],
    "ex_05_7_1_solution": [r"log\(\s*c\s*/\s*total\s*\)"],
    "ex_05_7_2_solution": [r"line\[1\]\s*!=\s*\"\+\""],
    "ex_05_7_3_solution": [r"remove_duplicate\s*=\s*False"],
    "ex_05_9_1_solution": [r"\btoken\s*==\s*stop_id\b"],
    "ex_05_9_2_solution": [r"return\s+\"needs context\""],
    "ex_05_9_3_solution": [r"\.gather\(\s*-1\s*,"],
    "ex_05_10_1_solution": [r"packed\s*&\s*0x0F"],
    "ex_05_10_2_solution": [r"masked_fill\(\s*padding\s*,\s*-100\s*\)"],
    "ex_05_10_3_solution": [r"pow\(2\)\.mean\(\s*-1\s*,\s*keepdim\s*=\s*True\s*\)",
                            r"silu\([^()]*(?:\([^()]*\))?[^()]*\)\s*\*"],
}


def _copies() -> list[tuple[str, dict]]:
    """Every copy of every chapter notebook a learner reads: (its name, the notebook)."""
    copies = []
    for path in notebook_paths():
        copies.append((f"page of {path.name}", book_version(json.loads(path.read_text()))))
        for folder in ("student", "student/zh"):
            student = ROOT / folder / path.name
            if student.exists():
                copies.append((f"{folder}/{path.name}", json.loads(student.read_text())))
    return copies


COPIES = _copies()


def _answers(nb: dict) -> list[tuple[int, str]]:
    return [(i, nbgrader(cell)["grade_id"]) for i, cell in enumerate(nb["cells"]) if is_solution(cell)]


def test_every_exercise_has_key_expressions_that_match_its_own_answer():
    sources = {nbgrader(cell)["grade_id"]: source_text(cell)
               for path in notebook_paths() for cell in json.loads(path.read_text())["cells"]
               if is_solution(cell)}
    assert sorted(sources) == sorted(KEY_EXPRESSIONS), "one entry per exercise, no entry for none"
    unmatched = [(grade_id, expression) for grade_id, expressions in KEY_EXPRESSIONS.items()
                 for expression in expressions if not re.search(expression, sources[grade_id])]
    assert unmatched == []


@pytest.mark.parametrize("name,nb", COPIES, ids=[name for name, _ in COPIES])
def test_no_key_expression_in_a_code_cell_above_its_exercise(name, nb):
    found = []
    for index, grade_id in _answers(nb):
        for above, cell in enumerate(nb["cells"][:index]):
            if cell["cell_type"] != "code":
                continue
            for expression in KEY_EXPRESSIONS[grade_id]:
                hit = re.search(expression, source_text(cell))
                if hit:
                    found.append(f"{grade_id}: cell {above} holds {hit.group(0)!r}")
    assert found == []


def test_a_planted_answer_above_its_exercise_is_found():
    """The check can fail: 05.3's score cell written as Exercise 05.3.3's answer, and 05.2's
    precision cell with RMSNorm's normalisation written out, are both found."""
    planted = [("page of 05_3_rope.ipynb", "ex_05_3_3_solution",
                "q_m, _ = apply_rotary_emb(q4, q4, cos[m : m + 1], sin[m : m + 1])\n"),
               ("student/05_2_rmsnorm.ipynb", "ex_05_2_2_solution",
                "naive = x16 * torch.rsqrt(x16.pow(2).mean(-1, keepdim=True) + 1e-5)\n")]
    assert len(planted) == 2
    for name, grade_id, source in planted:
        nb = json.loads(json.dumps(dict(COPIES)[name]))
        next(cell for cell in nb["cells"] if cell["cell_type"] == "code")["source"] = source
        with pytest.raises(AssertionError, match=grade_id):
            test_no_key_expression_in_a_code_cell_above_its_exercise(name, nb)
