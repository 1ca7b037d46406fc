"""The slider helper: one output, a live widget for kernels and pre-rendered frames for the book."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from tinyk.lessons.plotting import figure, label
from tinyk.lessons.widgets import Choice, slider


def _draw(a, b):
    fig, ax = figure(width=2, height=2)
    ax.plot([0, 1], [0, a * b])
    label(ax, f"a={a}, b={b}", "x", "y")
    return fig


def test_both_views_in_one_output_with_every_frame():
    view = slider(_draw, a=[1, 2, 3], b=Choice([1, 10], label="b value", default=10))
    bundle, _ = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "text/html" in bundle
    html = bundle["text/html"]
    assert len(re.findall(r'class="tinyk-frame"', html)) == 6
    assert len(set(re.findall(r"data:image/png;base64,([^\"]+)", html))) == 6  # six different figures
    assert html.count('type="range"') == 2 and "b value" in html
    shown = re.findall(r'data-frame="(\d+)"(?! hidden)>', html)
    assert shown == ["3"]  # a = 2 (index 1), b = 10 (index 1): 1 * 2 + 1


def test_live_widget_redraws_when_a_slider_moves():
    calls = []

    def draw(t):
        calls.append(t)
        return f"<p>t = {t}</p>"

    view = slider(draw, t=[0, 1, 2])
    sliders = view.widget.children[:-1]  # (the last child is the Output the figure goes to)
    assert [s.description for s in sliders] == ["t"]
    before = len(calls)
    sliders[0].value = 2
    assert calls[before:] == [2]  # moving the slider calls draw() again with the new value


def test_too_many_frames_and_bad_defaults_are_refused():
    with pytest.raises(ValueError, match="max_frames=4"):
        slider(lambda a, b: "", max_frames=4, a=[1, 2, 3], b=[1, 2])
    with pytest.raises(ValueError, match="not one of the values"):
        Choice([1, 2], default=3)
    with pytest.raises(TypeError, match="Figure or an HTML string"):
        slider(lambda a: 42, a=[1])


def test_figures_carry_alt_text_that_says_what_they_show():
    fig = _draw(2, 3)
    assert fig.describe() == "Figure: a=2, b=3 (y against x)"
    assert Image.open(io.BytesIO(fig._repr_png_())).text["Description"] == "Figure: a=2, b=3 (y against x)"
    fig.alt_text = "A straight line from 0 to 6."
    assert Image.open(io.BytesIO(fig._repr_png_())).text["Description"] == "A straight line from 0 to 6."
    frames = slider(_draw, a=[1, 2], b=[5])._repr_mimebundle_()[0]["text/html"]
    for a in (1, 2):
        assert f'alt="Figure: a={a}, b=5 (y against x)"' in frames


def test_static_sliders_announce_their_value():
    view = slider(_draw, a=Choice([1, 2, 3], label="a value", default=2), b=[5])
    html = view._repr_mimebundle_()[0]["text/html"]
    assert 'aria-label="a value" aria-valuetext="2"' in html
    assert '<output aria-live="polite">2</output>' in html
    assert "setAttribute('aria-valuetext'" in html  # kept in step when the slider moves
