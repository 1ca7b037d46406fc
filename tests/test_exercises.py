"""Every exercise: valid nbgrader cells, a solution that passes, a stub that fails, and
hidden tests that a hard-coded answer to the visible asserts does not pass.

Exercise cells are self-contained (their own imports), so each runs here in a fresh
namespace, without the rest of its notebook.
"""

from __future__ import annotations

import json
import re

import pytest

from tinyk.course import notebook_paths
from tinyk.exercises import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    END_HIDDEN,
    END_SOLUTION,
    GRADE_ID,
    book_version,
    is_solution,
    is_test,
    nbgrader,
    source_text,
    student_version,
)

# A wrong answer per exercise that satisfies the visible asserts only: the hidden tests
# must reject it. (Keyed by the solution cell's grade_id.)
GUESSES = {
    "ex_05_1_1_solution": """
def head_dim_and_rope(dim, n_heads):
    return 6, True
""",
    "ex_05_1_2_solution": """
def heads_per_group(n_heads, n_kv_heads):
    return None if n_kv_heads == 4 else 2
""",
    "ex_05_1_3_solution": """
def valid_kv_heads(n_heads):
    return [1, 2, 3, 4, 6, 12]
""",
    "ex_05_2_1_solution": """
def rms(x, eps=0.0):
    return 12.5 ** 0.5
""",
    "ex_05_2_2_solution": """
def rms_norm(x, gamma, eps):
    return [3 / 12.5 ** 0.5, 4 / 12.5 ** 0.5]
""",
    "ex_05_2_3_solution": """
import torch
def rmsnorm_jacobian(x, gamma, eps):
    r = 12.5 ** 0.5
    off = -12 / (2 * r**3)
    return torch.tensor([[1 / r - 9 / (2 * r**3), off], [off, 1 / r - 16 / (2 * r**3)]], dtype=torch.float64)
""",
    "ex_05_3_1_solution": """
def rope_frequency(i, head_dim, theta=10000.0):
    return 1.0 if i == 0 else 0.1
""",
    "ex_05_3_2_solution": """
def rotate_pair(a, b, t, omega):
    return 0.0, 1.0
""",
    "ex_05_3_3_solution": """
import math
def rope_score(q, k, m, n, theta=10000.0):
    return math.cos(1.0)
""",
    "ex_05_4_1_solution": """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [0, 0, 0, 1, 1, 1]
""",
    "ex_05_4_2_solution": """
def cache_bytes(*args):
    return 18_874_368
""",
    "ex_05_5_1_solution": """
def swiglu_width(dim, multiple_of):
    return 2048
""",
    "ex_05_5_2_solution": """
import torch
def swiglu(x, w1, w2, w3):
    return torch.full((1, 2), 12 * torch.sigmoid(torch.tensor(2.0)).item())
""",
    "ex_05_5_3_solution": """
def prenorm_block(x, attention, mlp, norm1, norm2):
    return 6 * x + 1
""",
    "ex_05_6_1_solution": """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    return 19_008
""",
    "ex_05_6_2_solution": """
def last_real_position(mask):
    return 3
""",
    "ex_05_6_3_solution": """
def step_rows(finished, next_tokens, eos, pad):
    return [7, 0, 2], [False, True, True]
""",
    "ex_05_7_1_solution": """
import math
def entropy_of(text):
    return math.log(2)
""",
    "ex_05_7_2_solution": """
def follows_rule(line):
    return line == "3+4=4+3"
""",
    "ex_05_7_3_solution": """
def count_unique(model):
    return 19_008
""",
    "ex_05_9_1_solution": """
def rows_stopping(next_tokens, stop_id):
    return [False, True, True]
""",
    "ex_05_9_2_solution": """
def parses(source):
    return source == "x = 1"
""",
    "ex_05_9_3_solution": """
def counted_targets(targets, ignore_index):
    return 2
""",
    "ex_05_4_3_solution": """
import torch
def my_repeat_kv(x, n_rep):
    return torch.tensor([0.0, 0.0, 1.0, 1.0]).view(1, 1, 4, 1)
""",
}


def _exercises():
    for path in notebook_paths():
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            if is_solution(cell):
                test = next((c for c in cells[i + 1 :] if is_test(c)), None)
                yield pytest.param(path, cell, test, id=nbgrader(cell)["grade_id"])


EXERCISES = list(_exercises())


def _run(*sources: str) -> None:
    namespace: dict = {}
    for src in sources:
        exec(compile(src, "<exercise>", "exec"), namespace)


def _without_markers(cell: dict) -> str:
    return source_text(book_version({"cells": [cell]})["cells"][0]) if is_solution(cell) else "\n".join(
        line for line in source_text(cell).splitlines() if line.strip() not in (BEGIN_HIDDEN, END_HIDDEN))


def _visible_only(test_cell: dict) -> str:
    return source_text(student_version({"cells": [test_cell]})["cells"][0])


def test_every_runnable_notebook_with_exercises_has_at_least_three():
    per_notebook: dict[str, int] = {}
    for param in EXERCISES:
        per_notebook[param.values[0].stem] = per_notebook.get(param.values[0].stem, 0) + 1
    assert all(n >= 3 for n in per_notebook.values()), per_notebook


def test_nbgrader_metadata_is_valid_and_ids_unique():
    seen = set()
    for path in notebook_paths():
        for cell in json.loads(path.read_text())["cells"]:
            meta = nbgrader(cell)
            if not meta:
                continue
            assert meta["schema_version"] == 3, path.name
            assert {"grade", "solution", "locked", "grade_id"} <= set(meta), path.name
            assert GRADE_ID.match(meta["grade_id"]), meta["grade_id"]
            assert meta["grade_id"] not in seen, f"duplicate grade_id {meta['grade_id']}"
            seen.add(meta["grade_id"])
            if meta["grade"]:
                assert meta["locked"] and not meta["solution"] and meta.get("points", 0) > 0
                assert BEGIN_HIDDEN in source_text(cell), f"{meta['grade_id']}: no hidden tests"
            if meta["solution"]:
                assert not meta["locked"] and BEGIN_SOLUTION in source_text(cell)
                assert cell.get("metadata", {}).get("cellView") == "form", "hidden behind a form in Colab"
            if not (meta["solution"] or meta["grade"]):
                pytest.fail(f"{meta['grade_id']}: neither a solution nor a grade cell")


@pytest.mark.parametrize("path,solution,test", EXERCISES)
def test_solution_passes_its_tests(path, solution, test):
    assert test is not None, "a solution cell without a test cell after it"
    assert nbgrader(test)["grade_id"] == re.sub(r"_solution$", "_test", nbgrader(solution)["grade_id"])
    _run(_without_markers(solution), _without_markers(test))


@pytest.mark.parametrize("path,solution,test", EXERCISES)
def test_released_stub_fails(path, solution, test):
    stub = source_text(student_version({"cells": [solution]})["cells"][0])
    assert END_SOLUTION not in stub
    with pytest.raises((NotImplementedError, AssertionError, NameError)):
        _run(stub, _without_markers(test))


@pytest.mark.parametrize("path,solution,test", EXERCISES)
def test_hard_coded_guess_passes_visible_but_fails_hidden_tests(path, solution, test):
    guess = GUESSES.get(nbgrader(solution)["grade_id"])
    assert guess is not None, "register a hard-coded wrong answer for this exercise in GUESSES"
    _run(guess, _visible_only(test))  # the visible asserts alone are fooled...
    with pytest.raises(AssertionError):
        _run(guess, _without_markers(test))  # ...the hidden ones are not


def test_an_object_equal_to_everything_does_not_pass():
    class Liar:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    liar = "class Liar:\n    def __eq__(self, other):\n        return True\n"
    for _, solution, test in (p.values for p in EXERCISES):
        name = re.search(r"def (\w+)\(", source_text(solution)).group(1)
        cheat = liar + f"def {name}(*args, **kwargs):\n    return Liar()"
        with pytest.raises((AssertionError, TypeError, ValueError)):
            _run(cheat, _without_markers(test))
    assert Liar() == 1
