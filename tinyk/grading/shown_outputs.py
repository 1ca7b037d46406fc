"""The outputs the feedback shows, from the verdict's one run of a student's notebook (course
section "For instructors", feedback).

The verdict runs the student's notebook once, in the sandbox, and brings back what each cell
showed (:mod:`tinyk.grading.cell_outputs`); its test cells run in the grader's process, hidden tests
included, and show nothing of their own prints. ``nbgrader autograde`` then writes the
autograded notebooks and the gradebook as it always does, with :class:`VerdictOutputs` in place
of its Execute preprocessor: no kernel starts, and each code cell gets the outputs of the
verdict's run (:func:`write`), so that stock nbgrader reads the course and ``generate_feedback``
renders it. A test cell shows one output at most, the error of its failure, and only when the
line that raised it is not in its hidden tests (:func:`outputs_of_test`): no hidden test's source
or message reaches the page. Cells after the last test cell do not run in the verdict, and
show no output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from tinyk.courseware.exercises import BEGIN_HIDDEN, END_HIDDEN, is_test, nbgrader, source_text

__all__ = ["VerdictOutputs", "hidden_lines", "outputs_of_test", "write"]


def hidden_lines(test: str) -> set[int]:
    """The lines of the test cell ``test`` (from 1) in its hidden tests, markers included."""
    found, hidden = set(), False
    for number, text in enumerate(test.splitlines(), 1):
        if text.strip() == BEGIN_HIDDEN:
            hidden = True
        if hidden:
            found.add(number)
        if text.strip() == END_HIDDEN:
            hidden = False
    return found


def outputs_of_test(verdict: Any, test: str) -> list[dict]:
    """What a test cell shows: nothing when it passed or when a hidden test failed (or a line
    the grader cannot place); else the error it failed with, as Jupyter would show it. A failure
    in the answer (its error, a time or memory limit) is the student's own and always shown."""
    if verdict is None or verdict.passed:
        return []
    detail = str(verdict.detail)
    if detail.startswith("test: ") and (verdict.line <= 0 or verdict.line in hidden_lines(test)):
        return []
    text = detail.removeprefix("test: ").removeprefix("answer: ")
    ename, _, evalue = text.partition(": ")
    return [{"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [text]}]


def write(path: Path, sources: dict[str, dict], outputs: dict[str, list[tuple[str, list[dict]]]],
          verdicts: dict[tuple[str, str], Any]) -> None:
    """The file :class:`VerdictOutputs` reads: by notebook, each cell the verdict ran with its
    outputs, and each test cell's (:func:`outputs_of_test` of its verdict, with the test cell of
    ``sources``, the instructor's notebooks by name)."""
    shown = {}
    for name, cells in outputs.items():
        tests = {nbgrader(c).get("grade_id"): source_text(c) for c in sources[name].get("cells", [])
                 if is_test(c)}
        shown[name] = {"cells": [[source, outs] for source, outs in cells],
                       "tests": {g: outputs_of_test(verdicts.get((name, g)), text)
                                 for g, text in tests.items()}}
    path.write_text(json.dumps(shown, ensure_ascii=False), encoding="utf-8")


class VerdictOutputs(NbGraderPreprocessor):
    """In ``nbgrader autograde``, in place of Execute: every code cell's outputs from the
    verdict's run (the file :func:`write` wrote, ``--VerdictOutputs.path``), matched by their
    place among the notebook's code cells that are not test cells, and by their source (a cell
    emptied for grading, or one the verdict did not run, shows nothing)."""

    path = Unicode("", help="the JSON file of the verdict's outputs (tinyk.grading.shown_outputs.write)"
                   ).tag(config=True)

    def preprocess(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        from nbformat import from_dict

        shown = json.loads(Path(self.path).read_text(encoding="utf-8")) if self.path else {}
        mine = shown.get(resources.get("nbgrader", {}).get("notebook", ""), {})
        ran, tests = mine.get("cells", []), mine.get("tests", {})
        index, count = 0, 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.outputs, cell.execution_count = [], None
            if is_test(cell):
                cell.outputs = [from_dict(o) for o in tests.get(nbgrader(cell).get("grade_id"), [])]
                continue
            if index < len(ran) and ran[index][0] == source_text(cell):
                count += 1
                cell.outputs, cell.execution_count = [from_dict(o) for o in ran[index][1]], count
            index += 1
        return nb, resources
