"""The student notebooks live, as a student runs them: JupyterLab in a real browser.

A JupyterLab server runs on 127.0.0.1 (its own config, runtime and workspace folders, a
random token) over a temporary copy of ``student/`` (``student/zh/`` included); Debian's Chromium, driven by
Playwright as in ``test_browser.py``, loads JupyterLab once per worker and opens the
student notebooks in it one after another (each alone in the main area, with a kernel of
its own, shut down after it). In each it runs every cell in order (a failing cell does not
stop the next, as when a student steps through with Shift+Enter), then moves each live
slider and waits for its figure to change. The only errors allowed are the unanswered
exercises' own (their answer and test cells) and the cells that show an error on purpose
(tagged ``raises-exception``). Every request leaving localhost is blocked and must not
happen.

Each notebook runs once, in one of its two versions: the Chinese one (``student/zh/``) for
four of the nine, the English one for the others. The two versions have the same code
token for token (``tests/test_students_zh.py``), so each notebook's code runs here once, and
each language's strings, printed words and figures are seen live: a Chinese notebook's
kernel speaks Chinese (its setup cell sets ``TINYK_LANGUAGE``), which the test checks in
what its cells print.

Runs in the ``site`` stage of ``make test``, where make installs Chromium.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.test_browser import browser  # noqa: F401  (the fixture: Debian's Chromium)
from tinyk.courseware import checkout
from tinyk.courseware.exercises import nbgrader

pytestmark = [pytest.mark.site, pytest.mark.lab]
# make's site stage runs two pytest workers (--dist loadgroup): the notebooks go in two
# groups of about equal run time, and each worker starts a JupyterLab server of its own. The
# per-test times of two runs of make test, summed by group: 102 and 68 s for this group, 90 and
# 86 s for the other (the groups before, 05.4 and 05.6 here for 05.7 and 05.9: 79 and 52 s
# against 113 and 103 s).
_FIRST_GROUP = {"05_7_checks", "05_9_text_vs_file", "05_10_real_weights", "05_2_rmsnorm"}
_IN_CHINESE = {"05_1_shapes", "05_3_rope", "05_6_head_protocol", "05_10_real_weights"}  # student/zh/
SOURCES = [pytest.param(p, marks=pytest.mark.xdist_group(f"jupyterlab-{int(p.stem not in _FIRST_GROUP)}"),
                        id=f"zh-{p.stem}" if p.stem in _IN_CHINESE else p.stem)
           for p in checkout.notebook_paths()]
_CJK = re.compile(r"[\u3400-\u9fff]")
SHOTS = checkout.ROOT / "artifacts" / "jupyterlab"

# Runs every cell of the open notebook in order, each one awaited, whatever the last one did.
_RUN_EVERY_CELL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  const notebook = panel.content;
  for (let i = 0; i < notebook.widgets.length; i++) {
    notebook.activeCellIndex = i;
    await app.commands.execute("notebook:run-cell");
  }
  return notebook.widgets.length;
}"""

# Each cell's id, type, metadata and outputs, from the notebook model in the page.
_CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(w => ({
  id: w.model.id, type: w.model.type, metadata: w.model.toJSON().metadata,
  count: w.model.type === "code" ? w.model.executionCount : null,
  outputs: w.model.type === "code" ? w.model.outputs.toJSON() : []}))"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a copy of student/: yields (base URL, token)."""
    from tests.optional import need

    need("jupyterlab")
    home = tmp_path_factory.mktemp("lab")
    work = home / "work"
    shutil.copytree(checkout.ROOT / checkout.STUDENTS, work)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), OMP_NUM_THREADS="1",  # see test_wheel.py
               PYTHONPATH=os.pathsep.join(filter(None, [str(checkout.ROOT), os.environ.get("PYTHONPATH")])))
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={work}", "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=", "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         # Kernels on Unix sockets (as tests.helpers.ipc_client's): no TCP port to lose to another process.
         "--KernelManager.transport=ipc", f"--KernelManager.ip={home / 'kernel'}"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # up to two minutes on a loaded machine; ready is a status, not a time
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(home / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer /api/status")
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


class _Lab:
    """One JupyterLab page, kept from notebook to notebook (loading JupyterLab's scripts takes
    about 4 s a time): the requests it tried outside localhost, and whether the last test
    left it in a state to reload from."""

    def __init__(self, page, url: str) -> None:
        self.page, self.url, self.outside, self.stale = page, url, [], True

    def open(self, name: str) -> None:
        """Open the notebook ``name`` alone in the main area (after a reload if needed)."""
        self.outside.clear()
        if self.stale:
            self.page.goto(self.url, wait_until="domcontentloaded")
            self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started")
            self.page.evaluate("async () => { await window.jupyterapp.restored; }")
            self.stale = False
        self.page.evaluate("async ([path]) => { await window.jupyterapp.commands.execute("
                           "'docmanager:open', {path, factory: 'Notebook'}); }", [name])
        self.page.wait_for_function("([name]) => { const w = window.jupyterapp.shell.currentWidget;"
                                    " return w && w.context && w.context.path === name"
                                    " && w.content.widgets.length > 0; }", arg=[name])

    def close(self) -> None:
        """Shut the notebook's kernel down and close it unsaved (it ran: no save dialog)."""
        try:
            left = self.page.evaluate("""async () => {
              const app = window.jupyterapp;
              for (const w of Array.from(app.shell.widgets('main'))) {
                if (w.sessionContext) { await w.sessionContext.shutdown(); }
                if (w.context) { w.context.model.dirty = false; }
                w.dispose();
              }
              return Array.from(app.shell.widgets('main')).filter(w => w.context).length; }""")
            self.stale = left != 0
        except Exception:
            self.stale = True
            raise


@pytest.fixture(scope="module")
def jupyterlab_page(lab, browser):  # noqa: F811
    """A JupyterLab page in a workspace of its own (reset: no tab restored), blocking and
    recording every request that leaves localhost."""
    base, token = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(120_000)
    one = _Lab(page, f"{base}/lab/workspaces/tinyk-{os.getpid()}?reset&token={token}")

    def route(r):
        if urlparse(r.request.url).hostname in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            one.outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    yield one
    context.close()


def _allowed_to_fail(cell: dict) -> bool:
    meta = cell.get("metadata", {})
    return bool(nbgrader(cell).get("solution") or nbgrader(cell).get("grade")) or \
        "raises-exception" in meta.get("tags", [])


@pytest.mark.parametrize("source", SOURCES)
def test_student_notebook_runs_in_jupyterlab_and_its_sliders_move(jupyterlab_page, source):
    page = jupyterlab_page.page
    chinese = source.stem in _IN_CHINESE
    path = f"zh/{source.name}" if chinese else source.name
    try:
        jupyterlab_page.open(path)
        # alone: no other document open (JupyterLab's launcher may come back when the main area empties)
        assert page.evaluate("Array.from(window.jupyterapp.shell.widgets('main')).filter(w => w.context)"
                             ".map(w => w.context.path)") == [path]
        count = page.evaluate(_RUN_EVERY_CELL)
        cells = page.evaluate(_CELLS)
        assert len(cells) == count > 5

        code = [c for c in cells if c["type"] == "code"]
        assert [c["id"] for c in code if not c["count"]] == [], "cells that did not run"
        errors = {c["id"]: [f"{o['ename']}: {o['evalue'][:120]}" for o in c["outputs"]
                            if o["output_type"] == "error"] for c in code}
        unexpected = {i: e for i, e in errors.items() if e and not _allowed_to_fail(
            next(c for c in code if c["id"] == i))}
        assert unexpected == {}, f"{source.name}: errors outside the exercises"
        stubs = [c for c in code if nbgrader(c).get("solution")]
        assert stubs, f"{source.name}: no exercise to leave unanswered"
        for cell in stubs:  # each unanswered exercise fails: its answer cell or its test cell
            test = next((c for c in code[code.index(cell) + 1:] if nbgrader(c).get("grade")), None)
            raised = errors[cell["id"]] + (errors[test["id"]] if test else [])
            assert raised, f"{source.name}: exercise {cell['id']} left unanswered raised nothing"
        assert not page.get_by_text("Error displaying widget").count()
        # What the cells print is in the notebook's language (a Chinese kernel speaks Chinese).
        printed = ["".join(o.get("text", "")) for c in code for o in c["outputs"]
                   if o["output_type"] == "stream"]
        in_chinese = [text for text in printed if _CJK.search(text)]
        assert len(in_chinese) >= 2 if chinese else (printed and in_chinese == []), (path, printed[:5])

        boxes = page.locator(".widget-vbox:has(.widget-output):has(.widget-slider)")
        expected = sum("".join(c["source"]).count("slider(") for c in _source_cells(source))
        assert boxes.count() == expected, f"{source.name}: {boxes.count()} live sliders, {expected} expected"
        for b in range(boxes.count()):
            box = boxes.nth(b)
            box.scroll_into_view_if_needed()
            figure = box.locator(".widget-output").first
            handles = box.locator(".widget-slider .noUi-handle")
            assert handles.count() >= 1
            for h in range(handles.count()):
                readout = box.locator(".widget-slider").nth(h).locator(".widget-readout")
                before_value, before = readout.text_content(), figure.screenshot()
                handles.nth(h).focus()
                at_end = handles.nth(h).get_attribute("aria-valuenow") == handles.nth(h).get_attribute(
                    "aria-valuemax")
                step, back = ("ArrowLeft", "ArrowRight") if at_end else ("ArrowRight", "ArrowLeft")
                page.keyboard.press(step)
                _wait_for_text(readout, lambda text, v=before_value: text != v, "readout did not move")
                name = f"{source.name}: slider {b}.{h}"
                after = _wait_for_change(figure, before, f"{name} did not change its figure")
                # Back to the start, so each slider is moved from the notebook's own defaults (a
                # slider can matter only in some states: an invalid combination ignores d_h).
                handles.nth(h).focus()
                page.keyboard.press(back)
                _wait_for_text(readout, lambda text, v=before_value: text == v, "readout did not move back")
                _wait_for_change(figure, after, f"{name} did not redraw when moved back")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{'zh-' if chinese else ''}{source.stem}.png"))
        assert jupyterlab_page.outside == [], "requests outside localhost"
    finally:
        jupyterlab_page.close()


def _source_cells(source: Path) -> list[dict]:
    import json

    return [c for c in json.loads(source.read_text())["cells"] if c["cell_type"] == "code"]


def _wait_for_text(locator, wanted, message: str) -> None:
    """Poll a locator's text (found again each time: a re-rendered readout is a new element)."""
    for _ in range(480):
        text = locator.text_content()
        if wanted(text):
            return
        locator.page.wait_for_timeout(250)
    pytest.fail(f"{message}: {text!r}")


def _wait_for_change(locator, before: bytes, message: str) -> bytes:
    """Poll until the element looks different: the kernel redraws, then the page shows it."""
    for _ in range(240):
        now = locator.screenshot()
        if now != before:
            return now
        locator.page.wait_for_timeout(250)
    pytest.fail(message)
