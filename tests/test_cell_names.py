"""The names a test cell reads from the notebook (tinyk.courseware.cell_names), as Python runs the cell: the
verdict fetches those from the learner's process, and nothing the cell binds itself first."""

from __future__ import annotations

import pytest

from tinyk.courseware.cell_names import bound_names, free_names

# test cell -> the names it reads from the notebook, in the order they first appear
CASES = {
    'for text in ["a"]:\n    f(text)': ["f"],  # a loop's target is the cell's own
    "def g(dim):\n    return dim + h\nx = [i for i in xs]": ["xs", "h"],  # a parameter, a comprehension's
    'RMSNorm = watched("RMSNorm", RMSNorm)\nRMSNorm(3)': ["watched", "RMSNorm"],  # read, then bound
    'from tinyk.learner.own_code import watched\nrepeat_kv = watched("r", repeat_kv)': ["repeat_kv"],
    "try:\n    f()\nexcept ValueError as err:\n    print(err)": ["f"],
    "with open(p) as fh:\n    fh.read()": ["p"],
    "x += 1": ["x"],
    "assert abs(f(3) - 4) < 1e-6": ["f"],  # Python's builtins are never the notebook's
    "missing = [n for n in PART_NAMES if n not in globals()]": ["PART_NAMES"],
    "ids, labels = pad_and_label([[1]], pad_id=0)\nassert ids.shape": ["pad_and_label"],
    "square = lambda z: z + y\n": ["y"],
    "if (n := count(3)) > 2:\n    print(n)": ["count"],
    "def later():\n    return helper()\nhelper = 1\nlater()": [],  # bound by the cell before it runs
    "x[0] = y": ["y", "x"],
}


@pytest.mark.parametrize("test", CASES)
def test_a_test_cell_reads_what_python_would_look_up_in_the_notebook(test):
    assert free_names(test) == CASES[test]


def test_cells_bind_their_names_inside_try_and_through_magics():
    cells = ["%matplotlib inline\nimport math as m\ntry:\n    def rms(x):\n        return x\n"
             "except Exception:\n    pass\n", "for i in range(3):\n    total = i\n"]
    assert bound_names(cells) == ["m", "rms", "i", "total"]
