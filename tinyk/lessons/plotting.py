"""The course's one plotting style, and the figures several sections share.

Every figure in the notebooks goes through :func:`figure`, so all have the same size,
fonts, colours and grid, and every axis gets a label and every figure a title. Importing
this module applies the style to matplotlib's settings.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Sequence
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tinyk.courseware import figure_text
from tinyk.courseware.chinese_notebooks import display_width
from tinyk.environment import grading_run

__all__ = ["STYLE", "COLORS", "CourseFigure", "column", "figure", "label", "plot_attention_mask",
           "decoder_layer_diagram", "word_ticks"]

COLORS = ["#1f5fa8", "#d1495b", "#2a9d8f", "#e9a23b", "#6a4c93", "#6c757d"]

STYLE = {
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=COLORS),
    "legend.frameon": False,
    "image.cmap": "viridis",
}


class CourseFigure(Figure):
    """A figure that shows itself as a PNG when it is a cell's result, without pyplot.

    The PNG carries its alt text (``alt_text`` if set, else a sentence built from each
    panel's title and axis labels) in its ``Description`` field; the book's extension puts
    it on the page's ``<img>`` when the cell gives no ``mystnb.image.alt`` of its own.
    When the book executes the notebook (``TINYK_FIGURES_ZH=1``), the output's metadata also
    holds the figure drawn with Chinese words, for the Chinese edition; in a Chinese student
    notebook's kernel, the PNG itself is drawn with them (:mod:`tinyk.courseware.figure_text`).
    """

    alt_text: str | None = None
    _tinyk_language = "en"

    def describe(self) -> str:
        """The alt text: what the figure shows, in words (in Chinese inside
        :func:`tinyk.courseware.figure_text.in_chinese`)."""
        words = figure_text.translate if self._tinyk_language == "zh" else str
        if self.alt_text:
            return words(self.alt_text)
        panels = []
        for ax in self.axes:
            title, x, y = ax.get_title(), ax.get_xlabel(), ax.get_ylabel()
            if x and y:
                axes = words("{y} against {x}").format(y=y, x=x)
            elif x or y:  # one axis named: say which
                axes = words("x axis: {x}").format(x=x) if x else words("y axis: {y}").format(y=y)
            else:
                axes = ""
            panels.append(words("{title} ({axes})").format(title=title, axes=axes) if title and axes
                          else title or axes)
        panels = [p for p in panels if p]
        if not panels:
            return words("Figure")
        joined = functools.reduce(lambda a, b: words("{first}; {then}").format(first=a, then=b), panels)
        return words("Figure: {panels}").format(panels=joined)

    def _repr_png_(self) -> bytes | None:
        if grading_run():  # in the grader's kernels nobody looks at figures: no PNG, no cost
            return None
        if self._tinyk_language == "en" and figure_text.for_the_learner():  # a Chinese notebook's kernel
            with figure_text.in_chinese(self):
                return self._repr_png_()
        if self._tinyk_language == "en" and not figure_text.enabled():  # words the code gave in Chinese
            self._tinyk_language = "drawable"
            try:
                with figure_text.drawable(self):
                    return self._repr_png_()
            finally:
                self._tinyk_language = "en"
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", metadata={"Description": self.describe()})
        return buffer.getvalue()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        """No data of its own (IPython takes the PNG from ``_repr_png_``); the Chinese
        figure as metadata when the book asks for it."""
        if not figure_text.enabled() or grading_run():
            return {}, {}
        with figure_text.collecting() as missing, figure_text.in_chinese(self):
            png = base64.b64encode(self._repr_png_()).decode("ascii")
        return {}, {"tinyk": {"zh": {"image/png": png, "missing": sorted(missing)}}}


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6,
           **kwargs) -> tuple[Figure, Axes | Sequence[Axes]]:
    """A new figure in the course style: ``ncols × nrows`` panels of ``width × height`` inches.

    Returns ``(fig, ax)`` (one axis) or ``(fig, axes)`` (a flat list), without registering
    the figure with pyplot's global state, so sliders can redraw it many times cheaply.
    """
    fig = CourseFigure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs).ravel().tolist()
    return fig, axes[0] if len(axes) == 1 else axes


matplotlib.rcParams.update(STYLE)


def label(ax: Axes, title: str, xlabel: str, ylabel: str) -> Axes:
    """Title and axis labels in one call (every course figure has all three)."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def word_ticks(axis: Any, ticks: Sequence[float], labels: Sequence[str]) -> None:
    """Ticks at ``ticks`` labelled with words that name categories (``["K/V heads", "query
    heads"]``), not data: the figure's Chinese version translates them like its title
    (:mod:`tinyk.courseware.figure_text`), where other tick labels (tokens, numbers) stay as they are."""
    axis.set_ticks(ticks, labels)
    setattr(axis, figure_text.WORD_TICKS, (list(ticks), list(labels)))


def column(text: str, width: int) -> str:
    """``text`` left-aligned in a printed table's column ``width`` characters wide, as a
    terminal shows it: a Chinese character takes two columns (``f"{text:{width}s}"`` counts it
    as one), so the Chinese notebooks' tables line up too.

    >>> column("tiny", 6) + "|"
    'tiny  |'
    """
    return text + " " * max(0, width - display_width(text))


def plot_attention_mask(mask: object, title: str, key_labels: Sequence[str] | None = None,
                        width: float = 5.4, height: float = 3.4) -> Figure:
    """Heatmap of one ``T×T_k`` boolean attention mask (section 05.4), True = may attend.

    ``mask``: anything NumPy reads as a 2-D array (a bool tensor, an array, nested lists).

    Rows are query positions, columns key positions (the queries are the last ``T`` keys).
    Allowed cells are coloured, blocked ones grey, and a query row with no allowed key at
    all (left padding) is outlined in red: its attention output must be zeros, not NaN.
    ``key_labels`` names the columns (e.g. ``"pad"`` for padding keys).
    """
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch, Rectangle

    allowed = np.asarray(mask, dtype=bool)
    if allowed.ndim != 2:
        raise ValueError(f"plot_attention_mask: mask must be T×T_k (2-D), got shape {allowed.shape}; "
                         f"for a B×1×T×T_k mask pass one row, mask[b, 0]")
    n_queries, n_keys = allowed.shape
    fig, ax = figure(width=width, height=height)
    ax.imshow(allowed, cmap=ListedColormap(["#dee2e6", COLORS[0]]), vmin=0, vmax=1, aspect="equal")
    ax.set_xticks(range(n_keys), key_labels if key_labels is not None else range(n_keys))
    ax.set_yticks(range(n_queries), [f"{i}" for i in range(n_queries)])
    ax.set_xticks(np.arange(-0.5, n_keys), minor=True)
    ax.set_yticks(np.arange(-0.5, n_queries), minor=True)
    ax.grid(False)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    dead = [i for i in range(n_queries) if not allowed[i].any()]
    for i in dead:
        ax.add_patch(Rectangle((-0.5, i - 0.5), n_keys, 1, fill=False, edgecolor=COLORS[1], linewidth=2.5))
    handles = [Patch(color=COLORS[0], label="allowed (True)"),
               Patch(color="#dee2e6", label="blocked (False)")]
    if dead:
        handles.append(Patch(fill=False, edgecolor=COLORS[1], linewidth=2, label="no allowed key"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    label(ax, title, "key position j", "query position i")
    return fig


def _layer_nodes(ax: Axes) -> tuple[tuple[float, float], float]:
    """:func:`decoder_layer_diagram`'s boxes, sums and ends: the sums' centres and radius."""
    from matplotlib.patches import Circle, FancyBboxPatch

    blocks = {  # name -> (centre x, label, colour)
        "norm1": (2.3, "RMSNorm\nattention_norm", COLORS[2]),
        "attn": (4.7, "attention\n(GQA, RoPE)", COLORS[0]),
        "norm2": (8.1, "RMSNorm\nffn_norm", COLORS[2]),
        "mlp": (10.5, "SwiGLU\nfeed_forward", COLORS[3]),
    }
    half_w, half_h, radius = 0.85, 0.42, 0.28
    for x, text, color in blocks.values():
        ax.add_patch(FancyBboxPatch((x - half_w, -half_h), 2 * half_w, 2 * half_h,
                                    boxstyle="round,pad=0.02,rounding_size=0.12",
                                    facecolor=color, alpha=0.18, edgecolor=color, lw=1.5))
        ax.text(x, 0, text, ha="center", va="center", fontsize=9)
    sums = (6.4, 12.2)
    for x in sums:
        ax.add_patch(Circle((x, 0), radius, facecolor="white", edgecolor=COLORS[1], lw=1.5))
        ax.text(x, 0, "+", ha="center", va="center", fontsize=13, color=COLORS[1])
    ax.text(0.0, 0, "x", ha="center", va="center", fontsize=13, style="italic")
    ax.text(14.0, 0, "y", ha="center", va="center", fontsize=13, style="italic")
    return sums, radius


def decoder_layer_diagram() -> Figure:
    """One pre-norm decoder layer drawn as a flow from left to right (course section 05.5).

    ``x → RMSNorm → attention → ⊕ → RMSNorm → SwiGLU → ⊕ → y``: every arrow carries a
    ``B×T×d`` tensor, and the two residual paths above the line bring ``x`` to the first
    sum (giving ``h``) and ``h`` to the second (giving ``y``). Only the copies read by
    attention and SwiGLU are normalised; the state on the residual paths is not.
    """
    from matplotlib.patches import Circle, FancyArrowPatch

    fig, ax = figure(width=11.0, height=2.6)
    ax.set_axis_off()
    ax.set_xlim(-0.2, 14.2)
    ax.set_ylim(-0.6, 1.7)
    ax.set_aspect("equal")
    sums, radius = _layer_nodes(ax)

    def arrow(points: list[tuple[float, float]], color: str = "black") -> None:
        ax.plot([p[0] for p in points[:-1]], [p[1] for p in points[:-1]], color=color, lw=1.3)
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>",
                                     mutation_scale=12, color=color, lw=1.3))

    # The main line: left and right edge of each node, in order, with the shape on top.
    edges = [(0.25, 1.45), (3.15, 3.85), (5.55, 6.12), (6.68, 7.25), (8.95, 9.65),
             (11.35, 11.92), (12.48, 13.75)]
    for start, end in edges:
        arrow([(start, 0), (end, 0)])
        ax.text((start + end) / 2, -0.22, "B×T×d", ha="center", va="top", fontsize=8,
                color=COLORS[5])
    ax.text(7.15, 0.08, "h", ha="center", va="bottom", fontsize=12, style="italic")
    # The residual paths leave before each norm and enter the top of each sum.
    for branch, target, name in ((0.85, sums[0], "x"), (6.95, sums[1], "h")):
        arrow([(branch, 0), (branch, 1.25), (target, 1.25), (target, radius)], color=COLORS[1])
        ax.add_patch(Circle((branch, 0), 0.06, color=COLORS[1]))
        ax.text((branch + target) / 2, 1.32, f"residual: {name} added back unchanged (B×T×d)",
                ha="center", va="bottom", fontsize=8.5, color=COLORS[1])
    ax.set_title("One pre-norm decoder layer: h = x + attention(RMSNorm(x)), "
                 "y = h + SwiGLU(RMSNorm(h))")
    return fig
