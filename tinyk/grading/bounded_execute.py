"""nbgrader's Execute preprocessor with the outputs it keeps bounded (course section "For
instructors", grading).

nbgrader's kernel run keeps every output of a cell in memory, then writes them into the
autograded notebook; its LimitOutput preprocessor counts lines only, after the fact. A
student's cell that prints in a loop would fill the grader's memory and disk. Here a cell
keeps the first :data:`CELL_OUTPUT_LIMIT` bytes of its outputs, and a notebook the first
:data:`NOTEBOOK_OUTPUT_LIMIT`; what comes past them is counted and dropped as it arrives,
and a line on stdout at the cell's end says how much. The outputs that decide a grade are
kept, shortened, whatever the bound: nbgrader scores a test cell 0 from its first error or
stderr output and partial credit from its first result (``nbgrader.utils.determine_grade``),
and :mod:`tinyk.grading.scoring` reads a cell's error (a timeout, a memory error). The
runner puts this class in place of nbgrader's in ``autograde``
(:func:`tinyk.grading.runner.run_nbgrader`).
"""

from __future__ import annotations

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute

__all__ = ["CELL_OUTPUT_LIMIT", "DECISIVE_COUNT", "DECISIVE_LIMIT", "NOTEBOOK_OUTPUT_LIMIT", "BoundedExecute",
           "size"]

# Under grading a course figure renders no PNG (tinyk.switches.GRADING) and pyplot shows
# nothing: a cell's outputs are text, a training loop's losses or a generated answer, some
# kilobytes; the drill's 20,000 printed lines (tests/test_grading.py) are 2 MB.
CELL_OUTPUT_LIMIT = 4 * 2**20  # bytes of one cell's outputs kept
NOTEBOOK_OUTPUT_LIMIT = 32 * 2**20  # bytes of one notebook's outputs kept
DECISIVE_LIMIT = 16 * 2**10  # characters of each text of an output kept past the bounds for the grade
DECISIVE_COUNT = 4  # outputs of a cell kept past the bounds for the grade (a cell ends on one error)


def size(output: NotebookNode) -> int:
    """Characters of ``output``'s text: a stream's, each representation of a result or a
    display, an error's name, value and traceback."""
    if output.output_type == "stream":
        return len(output.get("text", ""))
    if output.output_type == "error":
        return (len(output.get("ename", "")) + len(output.get("evalue", ""))
                + sum(len(line) for line in output.get("traceback", [])))
    return sum(len(v) if isinstance(v, str) else len(str(v)) for v in output.get("data", {}).values())


def _decisive(output: NotebookNode) -> bool:
    """Whether ``output`` may decide a test cell's grade (``nbgrader.utils.determine_grade``)."""
    return (output.output_type in ("error", "execute_result")
            or (output.output_type == "stream" and output.get("name") == "stderr"))


def _shortened(output: NotebookNode, limit: int) -> NotebookNode:
    """``output`` with each of its texts cut to ``limit`` characters (a traceback to its first
    lines within it)."""
    if output.output_type == "stream":
        output.text = output.text[:limit]
    elif output.output_type == "error":
        output.evalue = output.get("evalue", "")[:limit]
        kept, room = [], limit
        for line in output.get("traceback", []):
            if room <= 0:
                break
            kept.append(line[:room])
            room -= len(line)
        output.traceback = kept
    else:
        output.data = {k: (v[:limit] if isinstance(v, str) else v) for k, v in output.get("data", {}).items()
                       if isinstance(v, str) or len(str(v)) <= limit}
    return output


class BoundedExecute(Execute):
    """nbgrader's :class:`~nbgrader.preprocessors.Execute` (its configuration too: it is a
    subclass), keeping the first :data:`CELL_OUTPUT_LIMIT` bytes of a cell's outputs and
    :data:`NOTEBOOK_OUTPUT_LIMIT` of a notebook's (see the module's docstring)."""

    cell_limit = CELL_OUTPUT_LIMIT
    notebook_limit = NOTEBOOK_OUTPUT_LIMIT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notebook_kept = 0
        self.cell_kept = self.cell_dropped = self.cell_past = 0
        self.decided = False  # the cell kept an output that decides its grade

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None) -> Any:
        self.notebook_kept = 0
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> Any:
        """Run the cell, its outputs bounded; past the bound, a line at its end says how much
        was dropped."""
        self.cell_kept = self.cell_dropped = self.cell_past = 0
        self.decided = False
        cell, resources = super().preprocess_cell(cell, resources, index)
        if self.cell_dropped:
            cell.outputs.append(new_output("stream", name="stdout", text=(
                f"\n[{self.cell_dropped:,} more characters of output dropped: the grader keeps the "
                f"first {self.cell_limit:,} of a cell and {self.notebook_limit:,} of a notebook]\n")))
        return cell, resources

    def _update_display_id(self, display_id: str, msg: dict) -> None:
        """nbclient's update of the outputs shown under ``display_id`` (in any cell), each of
        its representations cut to a cell's bound: an update replaces an output already kept."""
        data = msg.get("content", {}).get("data")
        if isinstance(data, dict):
            limit = self.cell_limit
            msg["content"]["data"] = {k: v[:limit] if isinstance(v, str) else v for k, v in data.items()
                                      if isinstance(v, str) or len(str(v)) <= limit}
        super()._update_display_id(display_id, msg)

    def output(self, outs: list[NotebookNode], msg: dict, display_id: str | None,
               cell_index: int) -> NotebookNode | None:
        """nbclient's handling of one output message, within the bounds: an output past them is
        dropped (counted), or kept shortened when it may decide the grade and none has yet."""
        before = len(outs)
        out = super().output(outs, msg, display_id, cell_index)
        if len(outs) != before + 1 or out is None or outs[-1] is not out:
            return out  # a widget's hook took it, or nbclient kept nothing
        n = size(out)
        room = min(self.cell_limit - self.cell_kept, self.notebook_limit - self.notebook_kept)
        if n > room:
            if out.output_type == "stream" and room > 0:  # the part that fits, as a stream is
                kept = out.text[:room]
                self.cell_dropped += n - len(kept)
                out.text, n = kept, len(kept)
            elif self.cell_past < DECISIVE_COUNT and (out.output_type == "error"
                                                      or (_decisive(out) and not self.decided)):
                out = _shortened(out, DECISIVE_LIMIT)
                self.cell_dropped += max(0, n - size(out))
                self.cell_past += 1
                outs[-1], n = out, 0  # kept outside the bounds
            else:
                outs.pop()
                self.cell_dropped += n
                return None
        self.decided = self.decided or _decisive(out)
        self.cell_kept += n
        self.notebook_kept += n
        return out
