"""The sandbox's kernelspec (tinyk.grading.sandbox.Sandbox), which grading no longer starts:
the verdict runs each notebook once, in a learner's process (tinyk.grading.learner_process), whose notebooks
start clean as ``tests/test_verdict.py`` checks
(``test_each_notebooks_answers_start_clean_under_the_sandbox``). Fast: no kernel starts.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_grading import _cell, _drill
from tinyk.grading import runner
from tinyk.grading.sandbox import Sandbox
from tinyk.grading.warm_kernel import imported_modules


def _importing(nb: dict) -> dict:
    """The drill with a first code cell that imports torch and tinyk."""
    nb["cells"].insert(1, {**_cell("code", "import torch\nimport tinyk"), "id": "imports"})
    return nb


def test_the_cold_kernels_switch_writes_a_kernelspec_without_the_launcher(tmp_path):
    def argv(box: Sandbox) -> list[str]:
        return json.loads((box.jupyter / "kernels" / "python3" / "kernel.json").read_text())["argv"]

    cold, warm = argv(Sandbox.create(tmp_path / "a")), argv(Sandbox.create(tmp_path / "b", warm=True))
    assert cold[0].endswith("bwrap") and cold[-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    # the launcher, then the cold kernel's command line it falls back to
    assert warm[1:4] == ["-I", "-S", str(Path(runner.__file__).with_name("kernel_launcher.py"))]
    assert warm[4:7] == [str(tmp_path / "b" / "warm" / "kernels.sock"), "{connection_file}", "--"]
    assert [a.replace(str(tmp_path / "b"), str(tmp_path / "a")) for a in warm[7:]] == cold
    # the server imports what the released notebooks import: here, what the warm batch's import
    magic = {"cells": [_cell("code", "%time x = 1\nfrom a.b import c")]}
    assert imported_modules([_importing(_drill()), magic]) == ["torch", "tinyk", "a.b"]
