"""Sliders that work with a kernel and without one: the course's only slider helper.

``slider(draw, x=[...], eps=[...])`` returns one output with two views of the same thing:

- for a live frontend (Jupyter, JupyterLab, Colab; ipywidgets 7 or 8), an ipywidgets box
  of selection sliders that calls ``draw`` again whenever one moves;
- for the built book, which has no kernel, an HTML block holding every frame rendered in
  advance and plain ``<input type="range">`` sliders that switch between them, with the
  same labels and the same values. The book is configured to prefer this HTML view.

``draw(**values)`` returns a matplotlib ``Figure`` (shown as a PNG) or an HTML string
(for calculators). Frames are rendered for every combination of the slider values, so
keep the value lists short: at most ``max_frames`` combinations.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from PIL import Image

from tinyk.courseware import figure_text
from tinyk.environment import grading_run

__all__ = ["Choice", "slider", "SliderView"]

_counter = itertools.count()

# Switches the visible frame when a range input moves. Frame index = mixed-radix number of
# the sliders' positions, in the order the sliders were given (the order frames were made).
_SCRIPT = (
    "(function(){var root=document.getElementById('__UID__');if(!root)return;"
    "var inputs=root.querySelectorAll('input[type=range]');var sizes=__SIZES__;"
    "function show(){var i=0;inputs.forEach(function(inp,p){i=i*sizes[p]+Number(inp.value);"
    "var label=JSON.parse(inp.dataset.labels)[inp.value];inp.nextElementSibling.textContent=label;"
    "inp.setAttribute('aria-valuetext',label);});"
    "root.querySelectorAll('.tinyk-frame').forEach(function(f){"
    "f.hidden=Number(f.dataset.frame)!==i;});}"
    "inputs.forEach(function(inp){inp.addEventListener('input',show);});})();"
)


@dataclass
class Choice:
    """The values one slider steps through, its label, and where it starts."""

    values: Sequence[Any]
    label: str | None = None
    default: Any = None

    def __post_init__(self) -> None:
        if len(self.values) == 0:
            raise ValueError("a slider needs at least one value")
        if self.default is None:
            self.default = self.values[len(self.values) // 2]
        if self.default not in self.values:
            raise ValueError(f"default {self.default!r} is not one of the values {list(self.values)!r}")


def _render(result: Figure | str) -> str:
    """One frame as an HTML fragment: an inline PNG for a figure, the string itself otherwise."""
    drawn = getattr(result, "_tinyk_drawable", False)
    if isinstance(result, Figure) and not figure_text.enabled() and not drawn:
        result._tinyk_drawable = True  # words a Chinese notebook's code gave: drawable here (figure_text)
        try:
            with figure_text.drawable(result):
                return _render(result)
        finally:
            result._tinyk_drawable = False
    if isinstance(result, Figure):
        buffer = io.BytesIO()
        result.savefig(buffer, format="png")
        # A 64-colour palette keeps a line plot crisp at a third of the bytes: pages with
        # dozens of frames stay light.
        image = Image.open(buffer).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        describe = getattr(result, "describe", None)  # course figures describe themselves
        title = result.axes[0].get_title() if result.axes else "Figure"
        alt = html.escape(describe() if describe else title)
        return f'<img src="data:image/png;base64,{data}" alt="{alt}">'
    if isinstance(result, str):
        return result
    raise TypeError(f"draw() must return a matplotlib Figure or an HTML string, not {type(result).__name__}")


def _render_in_chinese(result: Figure | str) -> str:
    """One frame with its words in Chinese (:mod:`tinyk.courseware.figure_text`)."""
    if isinstance(result, Figure):
        with figure_text.in_chinese(result):
            return _render(result)
    return figure_text.translate_html(_render(result))


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class SliderView:
    """The output of :func:`slider`: a live widget for kernels, pre-rendered frames for the book."""

    def __init__(self, draw: Callable[..., Figure | str], choices: dict[str, Choice],
                 max_frames: int) -> None:
        self.draw, self.choices = draw, choices
        names = list(choices)
        combos = list(itertools.product(*(c.values for c in choices.values())))
        if len(combos) > max_frames:
            raise ValueError(f"{len(combos)} slider combinations exceed max_frames={max_frames}: "
                             f"use fewer values per slider")
        self.uid = f"tinyk-slider-{next(_counter)}"
        self.frames: list[str] = []
        self.frames_zh: list[str] = []  # the Chinese edition's, in the book's run only
        self.missing_zh: set[str] = set()
        self.widget = None
        # A Chinese learner's kernel: its frames and labels in Chinese (tinyk.courseware.figure_text).
        self.learner_zh = figure_text.for_the_learner()
        if grading_run():  # nobody looks at the frames: draw nothing, cost nothing
            return
        with figure_text.collecting() as missing:
            for combo in combos:
                result = draw(**dict(zip(names, combo, strict=True)))
                self.frames.append(self._frame(result))
                if figure_text.enabled():  # the book's run: the Chinese edition's frames too
                    self.frames_zh.append(_render_in_chinese(result))
        self.missing_zh = missing
        self.widget = self._live_widget()

    # -- the book's view -------------------------------------------------------------
    def static_html(self, language: str = "en") -> str:
        """Every frame and the range inputs; ``language="zh"``: the Chinese frames and labels."""
        zh = language == "zh"
        uid = self.uid
        controls, sizes, start = [], [], []
        for i, (name, choice) in enumerate(self.choices.items()):
            labels = [_fmt(v) for v in choice.values]  # values are data, like tick labels
            title = choice.label or name
            title = figure_text.translate(title) if zh or self.learner_zh else title
            k = list(choice.values).index(choice.default)
            sizes.append(len(labels))
            start.append(k)
            controls.append(
                f'<label class="tinyk-slider-control" style="display:block">'
                f'{html.escape(title)} '
                f'<input type="range" min="0" max="{len(labels) - 1}" step="1" value="{k}" '
                f'data-param="{i}" data-labels=\'{html.escape(json.dumps(labels))}\' '
                f'aria-label="{html.escape(title)}" '
                f'aria-valuetext="{html.escape(labels[k])}"> '
                f'<output aria-live="polite">{html.escape(labels[k])}</output></label>')
        index = 0
        for size, k in zip(sizes, start, strict=True):
            index = index * size + k
        frames = "".join(
            f'<div class="tinyk-frame" data-frame="{n}"{"" if n == index else " hidden"}>{frame}</div>'
            for n, frame in enumerate(self.frames_zh if zh else self.frames))
        script = _SCRIPT.replace("__UID__", uid).replace("__SIZES__", json.dumps(sizes))
        return (f'<div class="tinyk-slider" id="{uid}">'
                f'<div class="tinyk-slider-controls">{"".join(controls)}</div>'
                f'<div class="tinyk-slider-frames">{frames}</div><script>{script}</script></div>')

    # -- the live view ---------------------------------------------------------------
    def _label(self, words: str) -> str:
        return figure_text.translate(words) if self.learner_zh else words

    def _frame(self, result: Figure | str) -> str:
        return _render_in_chinese(result) if self.learner_zh else _render(result)

    def _live_widget(self) -> Any:
        try:
            import ipywidgets as widgets
            from IPython.display import HTML, display
        except ImportError:  # no widgets: the static view still works
            return None
        sliders = {name: widgets.SelectionSlider(
            options=[(_fmt(v), v) for v in choice.values], value=choice.default,
            description=self._label(choice.label or name), continuous_update=False,
            style={"description_width": "initial"}) for name, choice in self.choices.items()}
        out = widgets.Output()

        def redraw(_change: object = None) -> None:
            with out:
                out.clear_output(wait=True)
                display(HTML(self._frame(self.draw(**{n: s.value for n, s in sliders.items()}))))

        for s in sliders.values():
            s.observe(redraw, names="value")
        redraw()
        return widgets.VBox([*sliders.values(), out])

    def _repr_mimebundle_(self, include: Any = None,
                          exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle: dict[str, Any] = {"text/plain": f"<slider over {', '.join(self.choices)}>"}
        metadata: dict[str, Any] = {}
        if self.frames:
            bundle["text/html"] = self.static_html()
        if self.frames_zh:
            with figure_text.collecting() as missing:
                chinese = self.static_html("zh")
            metadata["tinyk"] = {"zh": {"text/html": chinese,
                                        "missing": sorted(self.missing_zh | missing)}}
        if self.widget is not None:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        return bundle, metadata


def slider(draw: Callable[..., Figure | str], *, max_frames: int = 64,
           **params: Sequence[Any] | Choice) -> SliderView:
    """Sliders over ``params`` (name -> values or :class:`Choice`) that redraw ``draw(**values)``.

    Example::

        slider(lambda t: plot_rotation(t), t=Choice(range(0, 33, 4), label="position t"))
    """
    if not params:
        raise ValueError("slider() needs at least one parameter, e.g. slider(draw, t=[0, 1, 2])")
    choices = {name: p if isinstance(p, Choice) else Choice(list(p)) for name, p in params.items()}
    return SliderView(draw, choices, max_frames)
