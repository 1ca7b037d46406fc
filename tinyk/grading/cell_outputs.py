"""A notebook cell's outputs, as a Jupyter kernel gives them, within bounds (course: the
instructors' page, grading).

In the learner's process (:mod:`tinyk.grading.learner_process`), the notebook's cells run through IPython's
shell, and what each cell shows is kept here as a kernel would send it: its prints on stdout
and stderr (a stream each, in order with the rest), its displays (``display(...)``), its
result (the value of its last line) and its error, with IPython's traceback. A cell keeps the
first :data:`CELL_OUTPUT_LIMIT` characters of its outputs, a notebook's run the first
:data:`NOTEBOOK_OUTPUT_LIMIT`; what comes past them is counted and dropped as it arrives, and
a line at the cell's end says how much. Output written to the process's file descriptors
(``os.write(1, ...)``, a program the cell starts) is not a cell's: it goes to the learner's
stderr, which the grader keeps bounded (:mod:`tinyk.grading.answer_server`).

On the grader's side, :func:`parse` reads the outputs sent back (:mod:`tinyk.grading.verdict`) as
data of a fixed form, nothing else: what it returns is written into the autograded
notebooks that ``feedback`` shows, inertly (:mod:`tinyk.reports.inert`).
"""

from __future__ import annotations

import io
import json
from typing import Any

__all__ = ["CAPTURED", "CELL_OUTPUT_LIMIT", "NOTEBOOK_OUTPUT_LIMIT", "Captured", "capturing", "parse",
           "shell_classes"]

# Under grading a course figure renders no PNG (tinyk.environment.GRADING) and pyplot shows
# nothing: a cell's outputs are text, a training loop's losses or a generated answer, some
# kilobytes; the drill's 20,000 printed lines (tests/test_grading.py) are 2 MB.
CELL_OUTPUT_LIMIT = 4 * 2**20  # characters of one cell's outputs kept
NOTEBOOK_OUTPUT_LIMIT = 32 * 2**20  # characters of one notebook's outputs kept


class Captured:
    """The outputs of the cells of one run of a notebook, within the bounds."""

    def __init__(self, cell_limit: int = CELL_OUTPUT_LIMIT,
                 notebook_limit: int = NOTEBOOK_OUTPUT_LIMIT) -> None:
        self.cell_limit, self.notebook_limit = cell_limit, notebook_limit
        self.cells: list[list[dict]] = []  # each finished cell's outputs, until the grader takes them
        self.outputs: list[dict] = []  # the running cell's
        self.kept = self.total = self.dropped = 0

    def start(self) -> None:
        self.outputs, self.kept, self.dropped = [], 0, 0

    def end(self) -> None:
        for output in self.outputs:  # a stream's text, kept as its pieces while the cell ran
            if output["output_type"] == "stream":
                output["text"] = "".join(output["text"])
        if self.dropped:
            self.outputs.append({"output_type": "stream", "name": "stdout", "text": (
                f"\n[{self.dropped:,} characters of output dropped: the grader keeps "
                f"{self.cell_limit:,} a cell and {self.notebook_limit:,} a notebook]\n")})
        self.cells.append(self.outputs)
        self.start()

    def take(self) -> bytes:
        """The finished cells' outputs as JSON (UTF-8), which the grader then holds."""
        cells, self.cells = self.cells, []
        return json.dumps(cells, ensure_ascii=False).encode("utf-8", "replace")

    def _room(self, size: int) -> int:
        room = max(0, min(self.cell_limit - self.kept, self.notebook_limit - self.total))
        kept = min(size, room)
        self.kept += kept
        self.total += kept
        self.dropped += size - kept
        return kept

    def stream(self, name: str, text: str) -> None:
        text = text[:self._room(len(text))]
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"].append(text)  # joined at the cell's end: no copy of the whole per write
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": [text]})

    def data(self, output_type: str, data: dict) -> None:
        """A display or a result: its text representations (a widget's or JSON's dropped)."""
        texts = {str(k): v for k, v in data.items() if isinstance(v, str)}
        size = sum(len(v) for v in texts.values())
        if size > max(0, min(self.cell_limit - self.kept, self.notebook_limit - self.total)):
            texts = {"text/plain": texts.get("text/plain", "")}  # the plain text alone, cut to the room
            size = len(texts["text/plain"])
        room = self._room(size)
        if room < size:
            texts["text/plain"] = texts["text/plain"][:room]
        output = {"output_type": output_type, "data": texts, "metadata": {}}
        if output_type == "execute_result":
            output["execution_count"] = None
        self.outputs.append(output)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        evalue = evalue[:self._room(len(evalue))]
        lines = []
        for line in traceback:
            if (kept := self._room(len(line))) == 0:
                break
            lines.append(line[:kept])
        self.outputs.append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines})

    def clear(self) -> None:  # IPython's clear_output: the cell's outputs so far go
        self.outputs = []


CAPTURED = Captured()  # the outputs of this process's run of a notebook


class _Stream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` while a cell runs: its writes are the cell's stream."""

    def __init__(self, name: str) -> None:
        self.name_ = name

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        CAPTURED.stream(self.name_, str(text))
        return len(text)

    def isatty(self) -> bool:
        return False


class capturing:
    """A cell's run: ``sys.stdout`` and ``sys.stderr`` its streams, its outputs collected."""

    def __enter__(self) -> None:
        import sys

        CAPTURED.start()
        self.saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Stream("stdout"), _Stream("stderr")

    def __exit__(self, *exc: object) -> None:
        import sys

        sys.stdout, sys.stderr = self.saved
        CAPTURED.end()


def shell_classes() -> tuple[type, type]:
    """IPython's display hook and display publisher for a shell whose results and displays
    are kept as the cell's outputs (``InteractiveShell.displayhook_class``, ``display_pub_class``)."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher

    class Results(DisplayHook):
        def write_output_prompt(self) -> None:
            return None

        def write_format_data(self, format_dict: dict, md_dict: Any = None) -> None:
            CAPTURED.data("execute_result", format_dict)

        def finish_displayhook(self) -> None:
            return None

    class Displays(DisplayPublisher):
        def publish(self, data: dict, metadata: Any = None, source: Any = None, *, transient: Any = None,
                    update: bool = False, **kwargs: Any) -> None:
            CAPTURED.data("display_data", data)

        def clear_output(self, wait: bool = False) -> None:
            CAPTURED.clear()

    return Results, Displays


_TEXT_KEYS = {"stream": ("name", "text"), "error": ("ename", "evalue")}


def _output(node: Any) -> dict | None:
    """One output sent back, rebuilt from its fields of the expected types; None for any other."""
    if type(node) is not dict:
        return None
    kind = node.get("output_type")
    if kind == "stream" and node.get("name") in ("stdout", "stderr") and type(node.get("text")) is str:
        return {"output_type": "stream", "name": node["name"], "text": node["text"]}
    if kind == "error" and all(type(node.get(k)) is str for k in _TEXT_KEYS["error"]) \
            and type(node.get("traceback")) is list and all(type(x) is str for x in node["traceback"]):
        return {"output_type": "error", "ename": node["ename"], "evalue": node["evalue"],
                "traceback": list(node["traceback"])}
    if kind in ("display_data", "execute_result") and type(node.get("data")) is dict:
        data = {k: v for k, v in node["data"].items() if type(k) is str and type(v) is str}
        output = {"output_type": kind, "data": data, "metadata": {}}
        if kind == "execute_result":
            output["execution_count"] = None
        return output
    return None


def parse(payload: bytes) -> list[list[dict]]:
    """The outputs of each cell, from :meth:`Captured.take`'s JSON as the learner's process sent
    it: only lists of outputs of the four kinds, each with its fields' types checked; anything
    else in their place is left out."""
    try:
        cells = json.loads(payload.decode("utf-8", "replace"))
    except ValueError:
        return []
    if type(cells) is not list:
        return []
    return [[out for node in cell if (out := _output(node)) is not None] if type(cell) is list else []
            for cell in cells]
