"""The walk-through cells show the package's code as it is when the page is built."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tinyk
from tinyk.lessons.shown_code import show_source


def test_shows_the_current_source_with_its_file_and_line_numbers():
    view = show_source(tinyk.apply_rotary_emb)
    assert view.path == "tinyk/model.py"
    assert view.lines[0].startswith("def apply_rotary_emb(")
    assert f"{view.first}  def apply_rotary_emb(" in repr(view)
    assert "apply_rotary_emb" in view._repr_html_()


def test_a_passage_runs_from_start_to_stop_inclusive():
    view = show_source(tinyk.Attention.forward, start="B, T, _ = x.shape", stop="apply_rotary_emb")
    assert "B, T, _ = x.shape" in view.lines[0]
    assert "apply_rotary_emb" in view.lines[-1]
    assert len(view.lines) == 5


def test_a_passage_that_moved_is_a_clear_error():
    with pytest.raises(ValueError, match="start='no such line' is not a line of apply_rotary_emb"):
        show_source(tinyk.apply_rotary_emb, start="no such line")


def test_a_changed_line_of_the_package_changes_what_is_shown(tmp_path: Path):
    copy = tmp_path / "tinyk"
    shutil.copytree(Path(tinyk.__file__).parent, copy)
    model = copy / "model.py"
    text = model.read_text()
    old = "    out_re = x_re * cos - x_im * sin\n"
    assert old in text
    model.write_text(text.replace(old, "    out_re = x_re * cos - x_im * sin  # changed\n"))
    script = textwrap.dedent("""
        import tinyk
        from tinyk.lessons.shown_code import show_source
        assert tinyk.__file__.startswith(%r), tinyk.__file__
        print(repr(show_source(tinyk.model._rotate_adjacent)))
    """) % str(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert "out_re = x_re * cos - x_im * sin  # changed" in out
