"""The verdict outside the student's process (tinyk.grading.verdict): cheats that worked inside the
kernel score 0 here, honest answers keep their points, and a forged reply is never data.

Each case replaces one answer cell of a real chapter notebook and judges that exercise with
its real test cell (visible and hidden asserts); one learner's process serves them all.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from unittest import mock

import pytest

from tests.helpers import processes_left, processes_running, processes_running_source
from tests.test_grading import SOLUTION_A, SOLUTION_B, _answer, _drill
from tinyk.courseware import checkout
from tinyk.courseware.cell_names import free_names
from tinyk.courseware.exercises import is_solution, nbgrader, source_text
from tinyk.grading import answer_server, verdict

NOTEBOOKS = {"_".join(p.stem.split("_")[:2]): p for p in checkout.notebook_paths()}  # "05_2": 05_2_rmsnorm


def _source(stem: str) -> dict:
    return json.loads(NOTEBOOKS[stem].read_text())


def _only(nb: dict, grade_id: str, answer: str | None) -> dict:
    """The notebook cut down to one exercise: its answer cell (replaced by ``answer``) and its test."""
    cells, keep = nb["cells"], []
    index = next(i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id)
    solution = next(c for c in reversed(cells[:index]) if is_solution(c))
    keep = [copy.deepcopy(solution), cells[index]]
    if answer is not None:
        keep[0]["source"] = answer
    return {**nb, "cells": keep}


@pytest.fixture(scope="module")
def server():
    box = answer_server.AnswerServer(timeout=60)
    yield box
    box.close()


def test_the_learners_process_lives_within_one_with_and_is_ended_on_the_way_out():
    """The one life cycle of a student's learner's process (tinyk.grading.scoring.learner_server):
    started, with the student's total time limit, inside; ended on the way out, after an error
    inside as well."""
    from tinyk.grading.runner import Limits, total_limit
    from tinyk.grading.scoring import learner_server

    limits = Limits(cell_timeout=60, total_timeout=7)
    with pytest.raises(RuntimeError, match="planted"), learner_server(limits, False, 3) as box:
        proc = box.proc
        assert proc is not None and proc.poll() is None
        assert box.total == 21 == total_limit(limits, 3) and box.timeout == 60
        raise RuntimeError("planted")
    assert box.proc is None and proc.poll() is not None


def _judge(server, stem: str, grade_id: str, answer: str | None) -> verdict.Verdict:
    source = _source(stem)
    [result] = verdict.judge(source, _only(source, grade_id, answer), server)
    assert result.grade_id == grade_id
    return result


_RMS_WRONG = "def rms(x, eps=0.0):\n    return 1.0\n"
_NORM_WRONG = ("import torch\nfrom torch import nn\n\nclass RMSNorm(nn.Module):\n"
               "    def __init__(self, dim, eps=1e-5):\n        super().__init__()\n"
               "        self.weight = nn.Parameter(torch.ones(dim))\n\n"
               "    def forward(self, x):\n        return x * self.weight\n")
_ENCODED = base64.b64encode(b"import math\nmath.isclose = lambda *a, **k: True\n").decode()

# Each cheat (by kind, as a determined student tried them inside the kernel) with a wrong answer.
CHEATS = {
    "alias_rebinding": ("05_2", "ex_05_2_1_test",
                        "import math as m\nm.isclose = lambda *a, **k: True\n" + _RMS_WRONG),
    "sys_modules": ("05_2", "ex_05_2_1_test",
                    "import sys\nsys.modules['math'].isclose = lambda *a, **k: True\n" + _RMS_WRONG),
    "importlib": ("05_2", "ex_05_2_2_test",
                  "import importlib\ntorch = importlib.import_module('torch')\n"
                  "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
                  + _NORM_WRONG),
    "encoded_exec": ("05_2", "ex_05_2_1_test",
                     f"import base64\nexec(base64.b64decode('{_ENCODED}'))\n" + _RMS_WRONG),
    "ast_transformer": ("05_2", "ex_05_2_1_test",
                        "import ast\nclass T(ast.NodeTransformer):\n    pass\n"
                        "get_ipython().ast_transformers.append(T())\n" + _RMS_WRONG),
    "input_transformer": ("05_2", "ex_05_2_1_test",
                          "get_ipython().input_transformers_post.append(lambda lines: [])\n" + _RMS_WRONG),
    "pre_run_cell_hook": ("05_2", "ex_05_2_1_test",
                          "get_ipython().events.register('pre_run_cell', lambda *a: None)\n" + _RMS_WRONG),
    "torch_function_mode": ("05_4", "ex_05_4_3_test",
                            "import torch\nfrom torch.overrides import TorchFunctionMode\n"
                            "class Agree(TorchFunctionMode):\n"
                            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                            "        if func in (torch.equal, torch.allclose):\n            return True\n"
                            "        return func(*args, **(kwargs or {}))\n"
                            "Agree().__enter__()\n"
                            "def repeat_kv(x, n_rep):\n    return x.repeat(1, 1, n_rep, 1)\n"),
    "lying_tensor": ("05_4", "ex_05_4_3_test",
                     "import torch\nclass Liar(torch.Tensor):\n"
                     "    def __eq__(self, other):\n        return torch.ones_like(self, dtype=torch.bool)\n"
                     "def repeat_kv(x, n_rep):\n    return x.repeat(1, 1, n_rep, 1).as_subclass(Liar)\n"),
    "lying_float": ("05_2", "ex_05_2_1_test",
                    "class F(float):\n    def __eq__(self, other):\n        return True\n"
                    "def rms(x, eps=0.0):\n    return F(1.0)\n"),
    "course_reference": ("05_2", "ex_05_2_2_test", "from tinyk import RMSNorm\n"),
    "reference_subclass": ("05_4", "ex_05_4_3_test", "import tinyk\n"
                           "def repeat_kv(x, n_rep):\n    return tinyk.model.repeat_kv(x, n_rep)\n"),
    "fused_attention": ("05_4", "ex_05_4_4_test", "import torch.nn.functional as F\n"
                        "def gqa_attention(q, k, v, mask=None):\n"
                        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, "
                        "is_causal=mask is None, enable_gqa=True)\n"),
}


@pytest.mark.parametrize("cheat", CHEATS)
def test_a_cheat_from_inside_the_answer_scores_0(server, cheat):
    stem, grade_id, answer = CHEATS[cheat]
    result = _judge(server, stem, grade_id, answer)
    assert not result.passed, f"{cheat} passed"
    assert result.detail, "every 0 has a reason"


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    """A learner's process under the grader's sandbox, where the package's files are hidden."""
    from tinyk.grading.sandbox import sandbox_argv

    if shutil.which("bwrap") is None:
        from tests.optional import missing

        missing("bubblewrap is not installed (make test installs it)")
    scratch, runtime = tmp_path_factory.mktemp("scratch"), tmp_path_factory.mktemp("run")
    # its tmpfs sized for a memory limit of 1024 MB (64 MiB each), which a test fills cheaply
    box = answer_server.AnswerServer(sandbox_argv(scratch, runtime, memory_mb=TMPFS_MEMORY_MB), timeout=60)
    yield box
    box.close()


TMPFS_MEMORY_MB = 1024


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm", "."])
def test_a_file_past_the_tmpfs_bound_fails_its_exercise_alone(sandboxed, folder):
    """/tmp, /dev/shm and the working folder of a notebook's answers are tmpfs in memory, each
    bounded (tinyk.grading.sandbox.tmpfs_bytes): the answer that writes past the bound gets
    ENOSPC, an OSError in its own code, and the next answer keeps its points. Under the bound,
    a file is written and read back."""
    from tinyk.grading.sandbox import tmpfs_bytes

    bound = tmpfs_bytes(TMPFS_MEMORY_MB)
    assert bound == 64 * 2**20
    answer = (f"import os\nchunk = bytes(2**20)\nwith open(os.path.join({folder!r}, 'small'), 'wb') as f:\n"
              f"    f.write(chunk)\nassert open(os.path.join({folder!r}, 'small'), 'rb').read() == chunk\n"
              f"with open(os.path.join({folder!r}, 'big'), 'wb') as f:\n"
              f"    for _ in range({bound // 2**20 + 8}):\n        f.write(chunk)\n" + SOLUTION_A)
    source = _drill()
    [first, second] = verdict.judge(source, _answer(source, answer, SOLUTION_B), sandboxed)
    assert not first.passed and "No space left on device" in first.detail, first.detail
    assert second.passed, second.detail
    assert [v.passed for v in verdict.judge(source, _answer(source, SOLUTION_A, SOLUTION_B), sandboxed)] \
        == [True, True]


# A student's first notebook leaves things behind in the verdict's run of its answers; the
# second notebook's answer is wrong if it finds any of them. The sleep's argument names this run.
LEFTOVER = ["sleep", f"3041.{os.getpid()}"]
LEAVES = f"""
import ctypes, os, subprocess
for path in ['/tmp/left-by-notebook-1', '/dev/shm/left-by-notebook-1', 'left-by-notebook-1',
             '/tmp/.tinyk-answers/tinyk/left_by_notebook_1.py']:  # the last in the package's copy
    try:
        open(path, 'w').write('x')
    except OSError as err:
        print('not written:', path, err)
libc = ctypes.CDLL(None, use_errno=True)
libc.umount2(b'/tmp', 2)  # the sandbox's own /tmp under this notebook's, if it could
libc.mount(None, b'/tmp/.tinyk-answers', None, 32 | 4096, None)  # the package's copy writable again
subprocess.Popen({LEFTOVER!r}, start_new_session=True)
""" + SOLUTION_A
FINDS = f"""
{processes_running_source()}
LEFT = [name for name, found in [
    ('tmp', os.path.exists('/tmp/left-by-notebook-1')),
    ('shm', os.path.exists('/dev/shm/left-by-notebook-1')),
    ('working folder', os.listdir('.')),
    ('package', os.path.exists('/tmp/.tinyk-answers/tinyk/left_by_notebook_1.py')),
    ('process', processes_running({LEFTOVER!r})),
] if found]
def double(x):
    return LEFT or 2 * x
"""


def _two_notebooks(server: answer_server.AnswerServer) -> tuple[list[verdict.Verdict], list[verdict.Verdict]]:
    """The verdicts of a first notebook that leaves things behind and of a second that looks for them."""
    source = _drill()
    first = verdict.judge(source, _answer(source, LEAVES, SOLUTION_B), server)
    return first, verdict.judge(source, _answer(source, FINDS, SOLUTION_B), server)


def test_each_notebooks_answers_start_clean_under_the_sandbox(sandboxed):
    """Under the sandbox, each notebook's answers run in namespaces of their own: the second
    notebook finds nothing of the first's files (/tmp, /dev/shm, its working folder, the
    package's copy, which is read-only) nor its process, which ended before the second
    notebook started; both keep full marks, as an honest student's would."""
    try:
        first, second = _two_notebooks(sandboxed)
        assert processes_running(LEFTOVER) == []  # killed with the first notebook's namespaces
    finally:
        for pid in processes_running(LEFTOVER):
            os.kill(pid, 9)
    assert sandboxed.shared == ""
    assert [(v.grade_id, v.passed, v.detail) for v in first + second] == \
        [("a_test", True, ""), ("b_test", True, "")] * 2


def _bwrap_can_disable_userns() -> bool:
    done = subprocess.run([shutil.which("bwrap") or "bwrap", "--help"], capture_output=True, text=True)
    return "--disable-userns" in done.stdout


def test_without_nested_namespaces_the_notebooks_share_one_sandbox_and_it_is_said(tmp_path):
    """Where the sandbox cannot make namespaces within it (bubblewrap's --disable-userns), the
    notebooks' answers share the learner's process's, as the second notebook finds, and the
    grader says so once a run."""
    from tinyk.grading import runner, scoring
    from tinyk.grading.sandbox import sandbox_argv

    if shutil.which("bwrap") is None or not _bwrap_can_disable_userns():
        from tests.optional import missing

        missing("bubblewrap 0.8 or newer is not installed (make test installs it)")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "run").mkdir()
    prefix = sandbox_argv(tmp_path / "scratch", tmp_path / "run")
    box = answer_server.AnswerServer([*prefix[:-1], "--unshare-user", "--disable-userns", "--"], timeout=60)
    said = io.StringIO()
    try:
        with mock.patch.object(runner, "_SAID", set()), contextlib.redirect_stderr(said):
            first, second = _two_notebooks(box)
            scoring.say_shared(box)
            scoring.say_shared(box)
    finally:
        box.close()
        assert processes_left(LEFTOVER) == []  # ended with the sandbox
    assert box.shared.startswith("no nested namespaces here: ")
    assert said.getvalue().count("a clean start for each notebook's verdict unavailable (no nested") == 1
    assert [v.passed for v in first] == [True, True]
    assert [v.passed for v in second] == [False, True]  # it found what the first left


# Routes to the course's own RMSNorm from 05.2.2's answer, each with the error that stops it: a
# name that binds the package's RMSNorm binds what stands for it while the notebook is graded.
_WITHHELD = "tinyk's RMSNorm is withheld while this notebook is graded"
ROUTES = {
    "import": ("from tinyk import RMSNorm\n", _WITHHELD),
    "import_module": ("from tinyk.model import RMSNorm\n", _WITHHELD),
    "getattr": ("import tinyk.model\nRMSNorm = getattr(tinyk.model, 'Rms'.replace('ms', 'MS') + 'Norm')\n",
                _WITHHELD),
    # the module's text, lent to inspect, has the withheld part's lines blank (tinyk.grading.kept_source)
    "source_as_text": ("import inspect, tinyk.model\nns = {}\nexec(inspect.getsource(tinyk.model), ns)\n"
                       "RMSNorm = ns['RMSNorm']\n", "KeyError: 'RMSNorm'"),
    "file_as_text": ("import tinyk.model\nns = {'__name__': 'copy'}\n"
                     "exec(open(tinyk.model.__file__).read(), ns)\nRMSNorm = ns['RMSNorm']\n",
                     "FileNotFoundError"),
}


@pytest.mark.parametrize("route", ROUTES)
def test_the_reference_of_the_part_asked_for_is_out_of_reach(sandboxed, route):
    """Under the sandbox the package's files are gone from the learner's process, and the
    part an exercise asks for is withheld in the package's modules there: each route fails,
    naming why."""
    answer, error = ROUTES[route]
    result = _judge(sandboxed, "05_2", "ex_05_2_2_test", answer)
    assert not result.passed, result.detail
    assert error in result.detail, result.detail


# Routes to the course's own grouped attention from 05.4.4's answer, through the modules the
# parts' checks live in and the model's public methods, each with what stops it.
GQA_ROUTES = {
    "checks_module": ("from tinyk.learner.part_checks import reference_gqa_attention as gqa_attention\n",
                      "tinyk's reference_gqa_attention is withheld"),
    "checks_globals": ("import tinyk.learner.parts\n"
                       "gqa_attention = (tinyk.learner.parts.check_parts\n"
                       "                 .__globals__['reference_gqa_attention'])\n",
                       "tinyk's reference_gqa_attention is withheld"),
    "model_method": ("import tinyk\nfrom tinyk.model import repeat_kv\n"
                     "_layer = tinyk.Transformer(tinyk.ModelConfig.tiny()).layers[0].attention\n"
                     "def gqa_attention(q, k, v, mask=None):\n"
                     "    n = q.shape[1] // k.shape[1]\n"
                     "    k = repeat_kv(k.transpose(1, 2), n).transpose(1, 2)\n"
                     "    v = repeat_kv(v.transpose(1, 2), n).transpose(1, 2)\n"
                     "    return _layer.attention_by_hand(q, k, v, mask)\n",
                     "tinyk's Attention is withheld"),  # no model to build: Attention is withheld
}


@pytest.mark.parametrize("route", GQA_ROUTES)
def test_the_attention_of_the_package_is_out_of_reach_too(sandboxed, route):
    """The parts' checks (tinyk.learner.part_checks) hold a reference attention, and the model a public
    one (Attention.attention_by_hand): neither gives 05.4.4's points."""
    answer, error = GQA_ROUTES[route]
    result = _judge(sandboxed, "05_4", "ex_05_4_4_test", answer)
    assert not result.passed, result.detail
    assert error in result.detail, result.detail


def test_under_the_sandbox_an_answer_may_import_the_packages_other_modules(sandboxed):
    """Only the modules that hold the parts are gone: an honest answer that imports the
    course's plotting and data modules (as the notebooks do) keeps its points."""
    source = _source("05_2")
    nb = _only(source, "ex_05_2_2_test", None)
    solution = nb["cells"][0]["source"]
    nb["cells"][0]["source"] = "import tinyk.data\nimport tinyk.lessons.plotting\n" + (
        solution if isinstance(solution, str) else "".join(solution))
    [result] = verdict.judge(source, nb, sandboxed)
    assert result.passed, result.detail


@pytest.mark.parametrize("stem,grade_id", [("05_2", "ex_05_2_2_test"), ("05_3", "ex_05_3_3_test"),
                                           ("05_5", "ex_05_5_3_test")])
def test_under_the_sandbox_honest_answers_keep_their_points(sandboxed, stem, grade_id):
    """05.3.3's answer imports tinyk's RoPE (it asks for no part of its own): still there."""
    assert "from tinyk import apply_rotary_emb" in "".join(
        c["source"] if isinstance(c["source"], str) else "".join(c["source"])
        for c in _source("05_3")["cells"] if nbgrader(c).get("grade_id") == "ex_05_3_3_solution")
    result = _judge(sandboxed, stem, grade_id, None)
    assert result.passed, result.detail


def test_a_forged_reply_is_not_data_and_runs_nothing(server, tmp_path):
    """The answer writes its own 'reply' into every pipe it holds: a pickle that would run a
    command when unpickled. The grader reads replies with torch.load(weights_only=True)."""
    marker = tmp_path / "ran"
    answer = ("import os, pickle, struct\n"
              "class Evil:\n    def __reduce__(self):\n"
              f"        return (os.system, ('touch {marker}',))\n"
              "payload = pickle.dumps(('ok', ('d', [('rms', Evil())])))\n"
              "for fd in range(3, 64):\n    try:\n"
              "        os.write(fd, struct.pack('<Q', len(payload)) + payload)\n"
              "    except OSError:\n        pass\n" + _RMS_WRONG)
    result = _judge(server, "05_2", "ex_05_2_1_test", answer)
    assert not result.passed and not marker.exists()
    # the server goes on serving the next exercise: an honest answer keeps its points
    assert _judge(server, "05_2", "ex_05_2_1_test", None).passed


def _forged(prelude: str, reply: str) -> str:
    """An answer cell that writes into every pipe it holds a well-formed frame of ``reply``
    (a torch.save payload, after ``prelude``), then defines a wrong ``rms``."""
    return (f"import io, os, struct, torch\n{prelude}\nbuffer = io.BytesIO()\n"
            f"torch.save({reply}, buffer)\npayload = buffer.getvalue()\n"
            "for fd in range(3, 64):\n    try:\n"
            "        os.write(fd, struct.pack('<Q', len(payload)) + payload)\n"
            "    except OSError:\n        pass\n" + _RMS_WRONG)


# Replies past the wire's bounds (tinyk.grading.answer_wire), each with what its failure names.
OVERSIZED = {
    # 4 bytes of storage standing for 2**26 float32s: refused once rebuilt, before any use
    "stride_0": (_forged("", "('ok', ('t', torch.zeros(1).expand(2**26)))"),
                 "strides (0,)): 268,435,456 bytes (256.0 MiB), over the grader's bound of 134,217,728"),
    # a real tensor, returned as an honest student would: its frame is refused by its header
    "huge_real": ("import torch\ndef rms(x, eps=0.0):\n    return torch.zeros(2**25 + 2**22)\n",
                  "sent a reply: 150,996,"),
    "deeply_nested": (_forged("x = ('v', 1)\nfor _ in range(200):\n    x = ('l', [x])", "('ok', x)"),
                      "nested: 65 levels, over the grader's bound of 64 levels"),
}


@pytest.mark.parametrize("case", OVERSIZED)
def test_a_reply_past_the_bounds_fails_its_exercise_alone(server, case):
    """A reply over a bound of the wire ends its own exercise, with the size and the bound in
    its reason, and the grader's process holds nothing of its size; the next exercise gets a
    new process and keeps its points."""
    import resource

    answer, reason = OVERSIZED[case]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB: the grader's peak so far
    result = _judge(server, "05_2", "ex_05_2_1_test", answer)
    assert not result.passed and reason in result.detail, result.detail
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 64 * 2**10, f"the grader's peak memory grew by {grown} KiB"  # 128 MiB refused
    assert _judge(server, "05_2", "ex_05_2_1_test", None).passed


def _saved(tree: object, **options: object) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(tree, buffer, **options)
    return buffer.getvalue()


def test_a_small_expanded_tensor_crosses_the_wire_as_it_is():
    """A stride-0 view within the bounds is read back as that view (12 bytes of storage)."""
    import torch

    from tinyk.grading import answer_wire
    from tinyk.grading.proxies import decode

    reply = answer_wire.load_reply(_saved(("ok", ("t", torch.arange(3.0).expand(4, 3)))))
    tensor = decode(None, reply[1])
    assert tensor.stride() == (0, 1) and tensor.untyped_storage().nbytes() == 12
    assert tensor.tolist() == [[0.0, 1.0, 2.0]] * 4


def test_the_wire_counts_what_a_tensor_stands_for_and_every_value():
    """The checks of a reply once read (answer_wire.check_reply), each past its bound: a view of
    8 KiB of storage standing for a tebibyte, tensors past the bound only together, a million
    values and one, 65 levels."""
    import torch

    from tinyk.grading import answer_wire

    def refused(tree: object) -> str:
        with pytest.raises(answer_wire.TooLarge) as caught:
            answer_wire.check_reply(tree)
        return str(caught.value)

    huge = torch.zeros(2**11).as_strided((2**10, 2**28), (1, 0))
    assert "strides (1, 0)): 1,099,511,627,776 bytes (1.0 TiB), over the grader's bound" in refused(huge)
    half = torch.zeros(1).expand(answer_wire.TENSOR_LIMIT // 8)  # 64 MiB each, 4 bytes of storage
    answer_wire.check_reply([half, half])
    assert "134,217,732 bytes" in refused([half, half, torch.zeros(1)])
    assert "1,000,001 values, over the grader's bound of 1,000,000 values" in refused([None] * 1_000_000)
    nested: list = []
    for _ in range(63):  # 64 lists
        nested = [nested]
    answer_wire.check_reply(nested)
    assert "nested: 65 levels, over the grader's bound of 64 levels" in refused([nested])


def test_the_wire_checks_a_frame_and_a_payload_before_reading_them():
    """A frame's header over the bound: refused with its payload left unread. A payload of
    another form than torch.save's stored zip (the legacy format sizes its storages from the
    stream; a compressed entry may inflate past the frame), or whose pickle is over its bound:
    refused before it is unpickled."""
    import struct
    import zipfile

    import torch

    from tinyk.grading import answer_wire

    stream = io.BytesIO(struct.pack("<Q", answer_wire.FRAME_LIMIT + 1) + b"x" * 100)
    with pytest.raises(answer_wire.TooLarge, match=r"134,217,729 bytes .* bound of 134,217,728 bytes"):
        answer_wire.read_frame(stream, answer_wire.FRAME_LIMIT)
    assert stream.tell() == 8
    stream = io.BytesIO(struct.pack("<Q", 3) + b"abc")
    assert answer_wire.read_frame(stream, answer_wire.FRAME_LIMIT) == b"abc"
    with pytest.raises(ValueError, match=r"not a torch\.save archive"):
        answer_wire.load_reply(_saved(torch.zeros(3), _use_new_zipfile_serialization=False))
    squeezed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_saved(torch.zeros(2**16)))) as plain, \
            zipfile.ZipFile(squeezed, "w", zipfile.ZIP_DEFLATED) as packed:
        for entry in plain.infolist():
            packed.writestr(entry.filename, plain.read(entry))
    assert len(squeezed.getvalue()) < 2**16  # 256 KiB of zeros in far less
    with pytest.raises(ValueError, match="compressed entry"):
        answer_wire.load_reply(squeezed.getvalue())
    words = [("v", f"{i:07d}" * 150) for i in range(4000)]  # 4.3 MB of pickle
    with pytest.raises(answer_wire.TooLarge, match=r"a reply's pickle: 4,27.* bound of 4,194,304 bytes"):
        answer_wire.load_reply(_saved(("ok", ("l", words))))
    assert answer_wire.load_reply(_saved(("ok", ("l", words[:3800]))))[1][1][-1] == words[3799]


def test_a_print_flood_is_cut_to_the_bound_and_the_answer_keeps_its_points(server):
    """200 MiB written by an answer to its file descriptors 1 and 2 (both the learner's stderr;
    what it prints through ``sys.stdout`` is its cell's output, bounded by tinyk.grading.cell_outputs):
    the grader keeps the first OUTPUT_LIMIT bytes and counts the rest, the honest answer passes."""
    from tinyk.grading.answer_server import OUTPUT_LIMIT

    before = server.dropped + len(server.printed)
    answer = ("import os\nchunk = b'x' * 2**20\nfor i in range(200):\n"
              "    os.write(1 if i % 2 else 2, chunk)\n"
              "def rms(x, eps=0.0):\n    return (sum(v * v for v in x) / len(x) + eps) ** 0.5\n")
    result = _judge(server, "05_2", "ex_05_2_1_test", answer)
    assert result.passed, result.detail
    output = server.output()
    assert len(server.printed) == OUTPUT_LIMIT
    assert server.dropped + len(server.printed) - before >= 200 * 2**20
    assert output.endswith(f"more bytes of output dropped: the grader keeps the first {OUTPUT_LIMIT:,}]\n")


HONEST = {
    "solution_05_2_2": ("05_2", "ex_05_2_2_test", None),
    "solution_05_4_4": ("05_4", "ex_05_4_4_test", None),
    "warns_and_prints": ("05_2", "ex_05_2_1_test",
                         "import math, sys, warnings\nwarnings.warn('from the answer cell')\n"
                         "print('a note', file=sys.stderr)\nprint('and one on stdout')\n"
                         "def rms(x, eps=0.0):\n    warnings.warn('from the call')\n"
                         "    return math.sqrt(sum(v * v for v in x) / len(x) + eps)\n"),
    "callbacks_05_5_3": ("05_5", "ex_05_5_3_test", None),  # the test hands the learner's code its parts
    "module_by_value_05_7_3": ("05_7", "ex_05_7_3_test", None),
    "learner_part_in_tinyk_model_05_6_2": ("05_6", "ex_05_6_2_test", None),
}


@pytest.mark.parametrize("case", HONEST)
def test_an_honest_answer_keeps_its_points(server, case):
    stem, grade_id, answer = HONEST[case]
    result = _judge(server, stem, grade_id, answer)
    assert result.passed, result.detail


def _capstone_answer(old: str, new: str) -> str:
    """05.10.3's instructor answer (the ten parts) with ``old`` replaced by ``new``."""
    [cell] = [c for c in _source("05_10")["cells"] if nbgrader(c).get("grade_id") == "ex_05_10_3_solution"]
    text = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    assert text.count(old) == 1
    return text.replace(old, new)


SMOLLM2 = pytest.mark.xdist_group("smollm2")  # with test_gguf.py: one worker loads SmolLM2 here


@SMOLLM2
def test_the_capstone_runs_the_learners_model_over_there_in_a_few_calls(sandboxed, monkeypatch):
    """05.10.3 (SmolLM2 on the learner's ten parts) is decided here too, in the real grader's
    set-up: the model is assembled in the learner's process, under the sandbox, and each of
    its forward passes crosses once, not once per part and layer (thousands of calls in all)."""
    asked: list[str] = []
    ask = answer_server.AnswerServer.ask
    monkeypatch.setattr(answer_server.AnswerServer, "ask", lambda self, request: (asked.append(request[0]),
                                                                           ask(self, request))[1])
    result = _judge(sandboxed, "05_10", "ex_05_10_3_test", None)
    assert result.passed, result.detail
    assert asked.count("assemble") == 1 and asked.count("cache") == 2, asked  # generate's, the hidden test's
    # check_parts's calls (370: each part on a few shapes, sizes and dtypes), never one per part and
    # layer (over 200 a forward pass in SmolLM2's 30 layers, and the test makes several passes)
    assert len(asked) < 600, len(asked)


# The capstone with parts that pass when checked one by one, but whose repeat_kv tiles the
# heads once it has been called 40 times (in the model: 30 layers a pass), and a torch
# function mode in the learner's process that makes every difference of logits (a vocabulary
# of 49,152) zero and every comparison agree (in the kernel, it made the capstone's asserts pass).
_AGREE = ("import itertools\nimport torch\nfrom torch.overrides import TorchFunctionMode\n"
          "class Agree(TorchFunctionMode):\n"
          "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
          "        if func in (torch.equal, torch.allclose):\n            return True\n"
          "        if getattr(func, '__name__', '') in ('__sub__', 'sub') and args[0].shape[-1] == 49152:\n"
          "            return torch.zeros_like(args[0])\n"
          "        return func(*args, **(kwargs or {}))\n"
          "Agree().__enter__()\n_CALLS = itertools.count()\n")
_TILES_LATER = ("    B, T, H_kv, d_h = x.shape\n",
                "    if next(_CALLS) >= 40:\n        return x.repeat(1, 1, n_rep, 1)\n"
                "    B, T, H_kv, d_h = x.shape\n")


@SMOLLM2
def test_a_capstone_right_part_by_part_but_wrong_in_the_model_scores_0(server):
    result = _judge(server, "05_10", "ex_05_10_3_test", _AGREE + _capstone_answer(*_TILES_LATER))
    assert not result.passed
    assert "logits differ" in result.detail and "layer 0, attention: the weighted values (gqa_attention)" \
        in result.detail, result.detail  # its own repeat_kv runs inside its gqa_attention


def test_a_model_the_grader_cannot_load_is_named_as_its_failure(monkeypatch):
    """When the weights a test assembles cannot be loaded in the learner's process, the
    exercise's reply says so, before any answer runs: the grader's failure, not the answer's."""
    import io

    import torch

    from tinyk.grading import answer_wire
    from tinyk.grading import learner_process as answers

    def missing():
        raise FileNotFoundError("SmolLM2-135M-Instruct.Q4_1.gguf not found")

    monkeypatch.setitem(answers.PREPARED, "smollm2", (answers.PREPARED["smollm2"][0], missing))
    out = io.BytesIO()
    answers._run([], ["smollm2"], io.BytesIO(), out)
    reply = torch.load(io.BytesIO(answer_wire.read_frame(io.BytesIO(out.getvalue()))), weights_only=True)
    assert reply[0] == "err" and reply[2].startswith("the grader could not load smollm2"), reply
    assert "FileNotFoundError: SmolLM2-135M-Instruct.Q4_1.gguf not found" in reply[2]


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, killed and not yet reaped, does not), after a few
    looks: SIGKILL is delivered at once, the exit itself takes the kernel a moment."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


def test_an_answer_that_exits_or_hangs_fails_alone(tmp_path):
    box = answer_server.AnswerServer(timeout=3)
    try:
        exits = _judge(box, "05_2", "ex_05_2_1_test", "import os\nos._exit(0)\n")
        assert not exits.passed and "exited" in exits.detail
        pid_file = tmp_path / "pid"
        hangs = _judge(box, "05_2", "ex_05_2_1_test",
                       f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                       "def rms(x, eps=0.0):\n    while True:\n        pass\n")
        assert not hangs.passed and "within 3 s" in hangs.detail
        assert not _running(int(pid_file.read_text())), "the hung exercise's process was left running"
        half = _judge(box, "05_2", "ex_05_2_1_test",  # half a reply, then nothing
                      "import os, struct, time\nfor fd in range(3, 64):\n    try:\n"
                      "        os.write(fd, struct.pack('<Q', 100))\n    except OSError:\n        pass\n"
                      "time.sleep(3600)\n")
        assert not half.passed  # its own replies are garbled, or never come
        assert _judge(box, "05_2", "ex_05_2_1_test", None).passed  # a new process for the next one
    finally:
        box.close()


def test_answers_run_while_another_students_test_cell_has_the_turn(server, tmp_path):
    """Only test cells take turns in the grader's process (verdict.TEST_CELL_LOCK: seeds, stdout,
    swapped functions). While one student's test cell runs, another student's answer cells run
    in their own process, and that student's test cell waits for the turn, then passes."""
    import threading

    marker = tmp_path / "answered"
    source = _source("05_2")
    submitted = _only(source, "ex_05_2_1_test", None)
    answer = submitted["cells"][0]
    answer["source"] = f"{''.join(answer['source'])}\nopen({str(marker)!r}, 'w').write('ran')\n"
    results: list[list[verdict.Verdict]] = []
    judging = threading.Thread(target=lambda: results.append(verdict.judge(source, submitted, server)))
    verdict.TEST_CELL_LOCK.acquire()  # another student's test cell, running
    try:
        judging.start()
        for _ in range(1200):  # the answer runs in the learner's process, whatever the lock
            if marker.exists() and marker.read_text() == "ran":
                break
            time.sleep(0.1)
        assert marker.read_text() == "ran"
        judging.join(timeout=5)  # not a measure: whatever the wait, the test cell cannot have run
        assert judging.is_alive() and results == []
    finally:
        verdict.TEST_CELL_LOCK.release()
        judging.join(timeout=600)
    assert [(v.grade_id, v.passed) for v in results[0]] == [("ex_05_2_1_test", True)]


def test_the_test_cells_source_is_the_instructors(server):
    """The verdict runs the source notebook's test cell, hidden asserts included, not the
    submission's (whose test cell a student could have emptied)."""
    source = _source("05_2")
    submitted = _only(source, "ex_05_2_1_test", _RMS_WRONG)
    submitted["cells"][1] = {**submitted["cells"][1], "source": "pass"}
    [result] = verdict.judge(source, submitted, server)
    assert not result.passed and "AssertionError" in result.detail


def _with_answer(nb: dict, grade_id: str, answer: str, before: list[str] = ()) -> dict:
    """The whole notebook ``nb`` with the answer cell of ``grade_id``'s exercise replaced by
    ``answer``, and code cells of the student's own (no nbgrader metadata) put before it."""
    nb = copy.deepcopy(nb)
    cells = nb["cells"]
    index = next(i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id)
    solution = next(i for i in range(index - 1, -1, -1) if is_solution(cells[i]))
    cells[solution]["source"] = answer
    for offset, text in enumerate(before):
        cells.insert(solution + offset, {"cell_type": "code", "metadata": {}, "execution_count": None,
                                         "outputs": [], "source": text, "id": f"own-{offset}"})
    return nb


_REPEAT = "    return x[:, :, :, None, :].expand(B, T, H_kv, n_rep, d_h).reshape(B, T, H_kv * n_rep, d_h)\n"
# Notebook code as students write it, which Jupyter runs and the test cell passes on: each keeps
# its points, judged with the rest of the notebook's cells before it.
NOTEBOOK_STYLES = {
    # torch comes from the notebook's setup cell: 05.4.3's stub imports only Tensor
    "setup_import": ("05_4", "ex_05_4_3_test",
                     "from torch import Tensor\n\ndef repeat_kv(x: Tensor, n_rep: int) -> Tensor:\n"
                     "    return torch.repeat_interleave(x, n_rep, dim=2)\n", []),
    "own_helper_cell": ("05_4", "ex_05_4_3_test",
                        "def repeat_kv(x, n_rep):\n    if n_rep == 1:\n        return x\n"
                        "    return tile(x, n_rep)\n",
                        ["def tile(x, n_rep):\n    B, T, H_kv, d_h = x.shape\n" + _REPEAT]),
    "def_inside_try": ("05_2", "ex_05_2_1_test",
                       "import math\ntry:\n    def rms(x, eps=0.0):\n"
                       "        return math.sqrt(sum(v * v for v in x) / len(x) + eps)\n"
                       "except Exception as err:\n    print(err)\n", []),
    "magic_line": ("05_2", "ex_05_2_1_test",
                   "%matplotlib inline\nimport math\n\ndef rms(x, eps=0.0):\n"
                   "    return math.sqrt(sum(v * v for v in x) / len(x) + eps)\n", []),
}


@pytest.mark.parametrize("style", NOTEBOOK_STYLES)
def test_notebook_code_keeps_its_points_as_in_jupyter(server, style):
    """The verdict runs the notebook's cells in order, through IPython, as Jupyter does: the
    setup cell's imports, a helper in a cell of the student's own, a ``def`` inside ``try`` and
    a magic line all work, as they do in the student's notebook."""
    stem, grade_id, answer, before = NOTEBOOK_STYLES[style]
    source = _source(stem)
    [result] = verdict.judge(source, _with_answer(source, grade_id, answer, before), server, only=[grade_id])
    assert result.passed, result.detail


def test_the_notebooks_other_exercises_may_use_the_packages_parts(server):
    """05.3.3's and 05.3.4's answers use tinyk's RoPE, which 05.3.1 and 05.3.2 ask for: the
    whole notebook's run withholds both, those exercises fail there after using them, and each
    is judged again in a run that withholds only its own parts (none): full marks, as alone."""
    source = _source("05_3")
    results = {v.grade_id: v for v in verdict.judge(source, source, server)}
    assert [v.passed for v in results.values()] == [True] * 4, results
    wrong = _with_answer(source, "ex_05_3_3_test", "from tinyk import apply_rotary_emb\n"
                         "def rope_score(q, k, m, n, theta=10000.0):\n    return 0.0\n")
    [again] = verdict.judge(source, wrong, server, only=["ex_05_3_3_test"])
    assert not again.passed and "AssertionError" in again.detail, again.detail


@functools.cache
def _release_text(stem: str) -> str:
    from tinyk.courseware.student_versions import released

    return json.dumps(released(_source(stem), NOTEBOOKS[stem].stem))


def _release(stem: str) -> dict:
    """The student version of the chapter notebook ``stem``, as nbgrader's release gives it."""
    return json.loads(_release_text(stem))


def _judged_again(server, stem: str, submitted: dict, released: bool = True
                  ) -> tuple[dict[str, verdict.Verdict], list[str], dict[str, verdict.Verdict]]:
    """``submitted`` (a student version of ``stem``, edited) judged as the grader judges it:
    restored from the release, emptied for grading, with the release's stubs known (unless not
    ``released``); its verdicts, the exercises run again (in order) and the first run's verdicts."""
    from tinyk.grading.submission import for_grading, restore_release

    release = _release(stem)
    graded = for_grading(restore_release(submitted, release)[0])
    first, real = [], verdict._first_run

    def first_run(*args, **kwargs):
        verdicts, again = real(*args, **kwargs)
        first.append(dict(verdicts))  # judge puts the second runs' verdicts into its own
        return verdicts, again

    with mock.patch.object(verdict, "_own_run", wraps=verdict._own_run) as again, \
            mock.patch.object(verdict, "_first_run", first_run):
        results = verdict.judge(_source(stem), graded, server,
                                released=for_grading(release) if released else None)
    assert len(first) == 1
    return {v.grade_id: v for v in results}, [call.args[2] for call in again.call_args_list], first[0]


def _answered(stem: str, answers: dict[str, str], after: dict[str, str] | None = None) -> dict:
    """The student version of ``stem`` with the answer cells ``answers`` (grade_id -> code) written
    in, and cells of the student's own put right after the answer cells ``after`` names."""
    nb = _release(stem)
    for grade_id, text in (after or {}).items():
        index = next(i for i, c in enumerate(nb["cells"]) if nbgrader(c).get("grade_id") == grade_id)
        nb["cells"].insert(index + 1, {"cell_type": "code", "metadata": {}, "execution_count": None,
                                       "outputs": [], "source": text, "id": f"own-{grade_id}"})
    found = 0
    for cell in nb["cells"]:
        if nbgrader(cell).get("grade_id") in answers:
            cell["source"], found = answers[nbgrader(cell)["grade_id"]], found + 1
    assert found == len(answers)
    return nb


def _solution(stem: str, grade_id: str) -> str:
    [cell] = [c for c in _source(stem)["cells"] if nbgrader(c).get("grade_id") == grade_id]
    return "".join(line for line in source_text(cell).splitlines(keepends=True)
                   if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_untouched_release_runs_no_exercise_again(server, language):
    """An exercise whose answer is still the stub fails in any run: the verdict does not run it
    again. The untouched student version of 05.3 (English, or the Chinese one, whose stubs'
    words differ) fails all four exercises with no second run; without the release's stubs
    known, its first run's demo cells use tinyk's RoPE (withheld) and each would run again."""
    submitted = _release("05_3") if language == "en" else \
        json.loads((NOTEBOOKS["05_3"].parents[1] / "student" / "zh" / NOTEBOOKS["05_3"].name).read_text())
    results, again, _ = _judged_again(server, "05_3", copy.deepcopy(submitted))
    assert len(results) == 4 and [v.passed for v in results.values()] == [False] * 4, results
    assert again == []
    assert all("NotImplementedError" in v.detail for v in results.values()), results
    unknown, planted, _ = _judged_again(server, "05_3", copy.deepcopy(submitted), released=False)
    assert [v.passed for v in unknown.values()] == [False] * 4
    assert sorted(planted) == list(results), "the stubs not known, each exercise runs again"


def _stub_of(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if nbgrader(c).get("grade_id") == grade_id)


def _edited_stub(change) -> dict:
    """05.3's student version with 05.3.3's answer cell changed by ``change(cell, cells, index)``."""
    nb = _release("05_3")
    cell = _stub_of(nb, "ex_05_3_3_solution")
    change(cell, nb["cells"], nb["cells"].index(cell))
    return nb


def _own(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": text}


_ANSWER = _solution("05_3", "ex_05_3_3_solution")
# How a careless or a determined student leaves 05.3.3's stub, and whether it is still the stub
# (not run again: it fails in any run) or may be an answer (run again when it fails).
STUB_EDITS = {
    "untouched": (lambda cell, cells, i: None, True),
    "saved_with_outputs_and_spaces": (lambda cell, cells, i: cell.update(
        source=[line.rstrip("\n") + "  \n" for line in source_text(cell).splitlines()] + ["\n"],
        outputs=[{"output_type": "stream", "name": "stdout", "text": "run\n"}], execution_count=7), True),
    "comment_and_docstring_reworded": (lambda cell, cells, i: cell.update(source=source_text(cell).replace(
        "# YOUR CODE HERE", "# todo: later").replace("``q`` rotated", "q turned")), True),
    # Jupyter runs the stub after it, which binds rope_score again: 0 there too
    "answer_in_an_own_cell_above": (lambda cell, cells, i: cells.insert(i, _own(_ANSWER)), True),
    "answer_in_an_own_cell_below": (lambda cell, cells, i: cells.insert(i + 1, _own(_ANSWER)), False),
    "empty_own_cell_below": (lambda cell, cells, i: cells.insert(i + 1, _own("")), False),
    "answer_in_a_copy_below": (lambda cell, cells, i: cells.insert(
        i + 1, {**copy.deepcopy(cell), "id": "copy", "source": _ANSWER}), False),
    "answered": (lambda cell, cells, i: cell.update(source=_ANSWER), False),
    "one_token_changed": (lambda cell, cells, i: cell.update(source=source_text(cell).replace(
        "raise NotImplementedError()", "raise NotImplementedError")), False),
    "magic_line_added": (lambda cell, cells, i: cell.update(
        source="%load_ext autoreload\n" + source_text(cell)), False),
    "nbgrader_metadata_removed": (lambda cell, cells, i: cell["metadata"].pop("nbgrader"), True),
    "answer_with_the_metadata_removed": (lambda cell, cells, i: (cell["metadata"].pop("nbgrader"),
                                                                 cell.update(source=_ANSWER)), False),
}


@pytest.mark.parametrize("edit", STUB_EDITS)
def test_an_answer_is_still_the_stub_only_when_it_runs_as_the_stub(edit):
    """:func:`tinyk.grading.verdict.still_stubs` on 05.3 as the grader judges it (restored from the
    release, emptied for grading): 05.3.3 is the stub when its cells from the answer to the test
    run the stub's code (saved by Jupyter, comments reworded; a cell of the student's own above
    it is shadowed by the stub, as in Jupyter), never when anything between could be an answer."""
    from tinyk.grading.submission import for_grading, restore_release

    change, expected = STUB_EDITS[edit]
    release = _release("05_3")
    graded = for_grading(restore_release(_edited_stub(change), release)[0])
    found = verdict.still_stubs(_source("05_3"), graded, for_grading(release))
    others = {"ex_05_3_1_test", "ex_05_3_2_test", "ex_05_3_4_test"}
    assert found == others | ({"ex_05_3_3_test"} if expected else set())
    assert verdict.still_stubs(_source("05_3"), graded, None) == set()


# Answers and cells of a student's own around 05.3's stubs that need the second run (they use
# tinyk's RoPE, which 05.3.1 and 05.3.2 ask for and the first run withholds): each still gets
# it and keeps its points, as in Jupyter.
_TABLES = ("import tinyk\nimport torch\n\n"
           "tables = {d: tinyk.precompute_freqs_cis(d, 200, 10000.0, dtype=torch.float64) for d in (2, 4)}\n")
_USES_TABLES = ("import tinyk\nimport torch\nfrom tinyk import apply_rotary_emb\n\n"
                "def rope_score(q, k, m, n, theta=10000.0):\n"
                "    d = q.shape[0]\n"
                "    if d in tables and max(m, n) < 200 and theta == 10000.0:\n"
                "        cos, sin = tables[d]\n"
                "    else:\n"
                "        cos, sin = tinyk.precompute_freqs_cis(d, max(m, n) + 1, theta,\n"
                "                                              dtype=torch.float64)\n"
                "    q4, k4 = q.view(1, 1, 1, -1), k.view(1, 1, 1, -1)\n"
                "    q_m, _ = apply_rotary_emb(q4, q4, cos[m : m + 1], sin[m : m + 1])\n"
                "    _, k_n = apply_rotary_emb(k4, k4, cos[n : n + 1], sin[n : n + 1])\n"
                "    return float((q_m * k_n).sum())\n")
RUN_AGAIN = {
    # the answer written into its cell
    "edited_answer": ({"ex_05_3_3_solution": _solution("05_3", "ex_05_3_3_solution")}, {}),
    # the stub left as it is, the answer in a cell of the student's own between it and the test
    "own_cell_after_the_stub": ({}, {"ex_05_3_3_solution": _solution("05_3", "ex_05_3_3_solution")}),
    # a cell above the answer makes RoPE's tables with tinyk's, which the answer reads: in the
    # first run that cell fails (a stand-in), and the test's call fails with a NameError
    "cell_above_used_a_stand_in": ({"ex_05_3_3_solution": _USES_TABLES}, {"ex_05_3_2_test": _TABLES}),
}


@pytest.mark.parametrize("case", RUN_AGAIN)
def test_an_answer_that_used_a_stand_in_still_runs_again(server, case):
    """05.3.3 answered (in its cell, or in a cell of the student's own after the untouched
    stub) with tinyk's RoPE: it fails in the first run, which withholds RoPE for 05.3.1, and
    gets its own run, where it passes; the exercises left as stubs run once."""
    answers, after = RUN_AGAIN[case]
    results, again, first = _judged_again(server, "05_3", _answered("05_3", answers, after))
    assert again == ["ex_05_3_3_test"]
    assert [g for g, v in results.items() if v.passed] == ["ex_05_3_3_test"], results
    assert not first["ex_05_3_3_test"].passed, "the first run withholds tinyk's RoPE"
    if case == "cell_above_used_a_stand_in":
        assert "NameError: name 'tables' is not defined" in first["ex_05_3_3_test"].detail, first


def _shown(server, nb: dict) -> tuple[list[tuple[str, list[dict]]], list]:
    """The outputs :func:`tinyk.grading.verdict.judge` gives of 05.3's student version ``nb`` (judged as
    the grader judges it), and the cells of its first run as they ran."""
    from tinyk.grading.submission import for_grading, restore_release

    release, outputs = _release("05_3"), []
    with mock.patch.object(verdict, "_outputs", wraps=verdict._outputs) as made:
        verdict.judge(_source("05_3"), for_grading(restore_release(nb, release)[0]), server, outputs=outputs,
                      released=for_grading(release))
    return outputs, made.call_args.args[0]


def _of(outputs: list[tuple[str, list[dict]]], start: str) -> list[dict]:
    [found] = [outs for source, outs in outputs if source.startswith(start)]
    return found


_TABLES_CELL = "cos, sin = precompute_freqs_cis(32, 64)"
_NOTE = "[the grader shows no output of this cell: "
_IN_COLAB = "; in Colab it runs as usual]\n"


def test_a_cell_that_used_a_stand_in_never_shows_its_error(server):
    """05.3's demo cells use tinyk's RoPE, withheld in the notebook's first run: there they fail
    with WithheldPart (and cells after them with a NameError), errors Colab never shows. The
    outputs the feedback shows take such a cell's outputs from an exercise's second run, where
    RoPE was not withheld (05.3.3 answered with tinyk's RoPE), or else show a note that says why
    there is none (the untouched student version: no second run)."""
    untouched, first = _shown(server, _release("05_3"))
    raw = _of([(cell.source, cell.outputs) for cell in first], _TABLES_CELL)
    assert [(o["output_type"], o.get("ename")) for o in raw] == [("error", "WithheldPart")], raw
    assert len(untouched) == len(first) > 20
    errors = [o for _, outs in untouched for o in outs if o["output_type"] == "error"]
    assert errors == [] and "WithheldPart" not in json.dumps(untouched)
    assert _of(untouched, _TABLES_CELL) == [{"output_type": "stream", "name": "stdout", "text": (
        f"{_NOTE}it uses tinyk's own precompute_freqs_cis, which is withheld while your notebook is "
        f"graded (an exercise asks you to write it){_IN_COLAB}")}]
    assert _of(untouched, "offsets = list(range(0, 65))")[0]["text"] == (
        f"{_NOTE}it reads score, which a cell above could not define while tinyk's own parts were "
        f"withheld{_IN_COLAB}")
    answer = {"ex_05_3_3_solution": _solution("05_3", "ex_05_3_3_solution")}
    answered, _ = _shown(server, _answered("05_3", answer))
    assert _of(answered, _TABLES_CELL) == [{"output_type": "stream", "name": "stdout",
                                            "text": "table shapes: (64, 16) (64, 16)\n"}]
    assert "WithheldPart" not in json.dumps(answered) and _NOTE not in json.dumps(answered)


def _printed(text: str) -> list[dict]:
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def test_the_outputs_shown_take_a_stand_ins_cell_from_a_second_run_within_the_notebooks_bound(monkeypatch):
    """Which outputs a cell shows (tinyk.grading.verdict._outputs), on runs made here: a cell that used
    a stand-in, and one that failed on a name it could not bind, show a second run's outputs
    where that run had them without a stand-in, else the note; a second run's outputs count
    against the notebook's bound with the first run's kept cells, past it the note."""
    Shown = verdict._Shown
    used = "WithheldPart: tinyk's RMSNorm is withheld while this notebook is graded (...)"
    first = [Shown("x = 1", _printed("kept\n")),
             Shown("norm = RMSNorm(4)\nprint('built')", [], used, True),
             Shown("print(norm)", [], "NameError: name 'norm' is not defined"),
             Shown("print(y)", [{"output_type": "error", "ename": "NameError", "evalue": "y"}],
                   "NameError: name 'y' is not defined")]  # the student's own mistake: shown
    second = [Shown(c.source, []) for c in first]
    second[1].outputs, second[2].outputs = _printed("built\n"), _printed("RMSNorm()\n")
    assert [outs for _, outs in verdict._outputs(first, [second])] == [
        _printed("kept\n"), _printed("built\n"), _printed("RMSNorm()\n"), first[3].outputs]
    notes = [outs[0].get("text") for _, outs in verdict._outputs(first, [])]
    assert notes[1].startswith("[the grader shows no output of this cell: it uses tinyk's own RMSNorm, ")
    assert notes[2].startswith("[the grader shows no output of this cell: it reads norm, which a cell above")
    again = copy.deepcopy(second)
    again[1] = Shown(again[1].source, [], used, True)  # the second run used it too: no better
    again[2] = Shown(again[2].source, [], first[2].why)
    assert [outs[0].get("text") for _, outs in verdict._outputs(first, [again])] == notes
    kept = verdict._size(first[0].outputs) + verdict._size(first[3].outputs)
    built = verdict._size(second[1].outputs)
    monkeypatch.setattr(verdict, "NOTEBOOK_OUTPUT_LIMIT", kept + built)  # room for one of the two
    shown = [outs for _, outs in verdict._outputs(first, [second])]
    assert shown[1] == _printed("built\n") and shown[2][0]["text"] == notes[2]


@SMOLLM2
def test_the_capstones_demo_cells_show_no_stand_ins_error(server):
    """05.10's demo cells build tinyk's own SmolLM2, whose parts the capstone (05.10.3) asks for:
    in every run of the notebook they are withheld, and the cell that loads it fails with
    WithheldPart, the cells reading its model, config or tokenizer with a NameError. None of
    those errors is shown as the student's: each such cell shows a note; the points stand."""
    from tests.optional import smollm2_file
    from tinyk.grading.submission import for_grading

    smollm2_file()  # or a skip that says how to install it
    source, outputs = _source("05_10"), []
    results = verdict.judge(source, for_grading(copy.deepcopy(source)), server, outputs=outputs)
    assert [(v.grade_id, v.passed) for v in results] == [
        ("ex_05_10_1_test", True), ("ex_05_10_2_test", True), ("ex_05_10_3_test", True)], results
    assert [o for _, outs in outputs for o in outs if o["output_type"] == "error"] == []
    assert "WithheldPart" not in json.dumps(outputs) and "is not defined" not in json.dumps(outputs)
    [loads] = _of(outputs, "from collections import Counter")
    assert loads["text"].startswith(f"{_NOTE}it uses tinyk's own ") and loads["text"].endswith(_IN_COLAB)
    assert _of(outputs, "cfg = model.config")[0]["text"].startswith(f"{_NOTE}it reads model, which a cell")
    assert sum(_NOTE in json.dumps(outs) for _, outs in outputs) == 5, outputs


def _exercises_only(nb: dict, grade_ids: list[str]) -> dict:
    """``nb`` cut down to the answer and test cells of the exercises ``grade_ids`` (their tests' ids)."""
    cells = nb["cells"]
    keep = []
    for grade_id in grade_ids:
        index = next(i for i, c in enumerate(cells) if nbgrader(c).get("grade_id") == grade_id)
        keep += [next(c for c in reversed(cells[:index]) if is_solution(c)), cells[index]]
    return {**nb, "cells": copy.deepcopy(keep)}


# Reading a part of the package in an answer, the ways Python reads a function.
READING = {"getsource": "inspect.getsource(tinyk.repeat_kv)",
           "getsourcelines": "inspect.getsourcelines(tinyk.repeat_kv)",
           "signature": "inspect.signature(tinyk.repeat_kv)",
           "code": "tinyk.repeat_kv.__code__", "wrapped": "getattr(tinyk.repeat_kv, '__wrapped__', None)",
           # inspect reads no attribute of the stand-in here (tinyk.grading.withheld), and the answer reads
           # what Jupyter gives (a KeyError else): tinyk/model.py, the module tinyk.model
           "getfile": "{'model.py': 1}[inspect.getfile(tinyk.repeat_kv).rsplit('/', 1)[-1]]",
           "getsourcefile": "{'model.py': 1}[inspect.getsourcefile(tinyk.repeat_kv).rsplit('/', 1)[-1]]",
           "getabsfile": "{'model.py': 1}[inspect.getabsfile(tinyk.repeat_kv).rsplit('/', 1)[-1]]",
           "getmodule": "{'tinyk.model': 1}[inspect.getmodule(tinyk.repeat_kv).__name__]"}


@pytest.mark.parametrize("reading", READING)
def test_reading_a_withheld_part_counts_as_using_it(server, reading):
    """05.4.4's answer reads tinyk's repeat_kv (which 05.4.3 asks for) before its own attention:
    withheld in the notebook's run, reading it is using it, and the exercise, failed there, is
    judged again in a run that withholds only its own parts, where tinyk's repeat_kv is there
    to read: full marks, as in Jupyter."""
    source = _exercises_only(_source("05_4"), ["ex_05_4_3_test", "ex_05_4_4_test"])
    submitted = copy.deepcopy(source)
    answer = submitted["cells"][2]
    reads = f"import inspect\nimport tinyk\nread = {READING[reading]}\n"
    answer["source"] = reads + "".join(answer["source"])
    results = verdict.judge(source, submitted, server)
    assert [(v.grade_id, v.passed, v.detail) for v in results] == [
        ("ex_05_4_3_test", True, ""), ("ex_05_4_4_test", True, "")], results


def test_under_the_sandbox_a_part_read_is_lent_to_inspect_but_not_the_withheld_ones(sandboxed):
    """Under the sandbox the files of the modules that hold the parts are gone; their text is
    lent to inspect, without the parts the run withholds. 05.4.4's answer reads tinyk's
    repeat_kv (withheld in the notebook's run, there in its own run) and checks that the
    module's text holds no line of the attention that it asks for: full marks."""
    source = _exercises_only(_source("05_4"), ["ex_05_4_3_test", "ex_05_4_4_test"])
    submitted = copy.deepcopy(source)
    answer = submitted["cells"][2]
    answer["source"] = ("import inspect\nimport tinyk.model\n"
                        "assert 'n_rep' in inspect.getsource(tinyk.repeat_kv)\n"
                        "text = inspect.getsource(tinyk.model)\n"
                        "assert 'def repeat_kv(' in text and 'class Transformer(' in text\n"
                        "assert 'class Attention(' not in text and 'attention_by_hand(self' not in text\n"
                        + "".join(answer["source"]))
    results = verdict.judge(source, submitted, sandboxed)
    assert [(v.grade_id, v.passed, v.detail) for v in results] == [
        ("ex_05_4_3_test", True, ""), ("ex_05_4_4_test", True, "")], results


def _waits_for_the_turn(thread) -> bool:
    """Whether ``thread`` is blocked on the grader's turn (in verdict._run_cell, at the lock)."""
    import sys

    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is verdict._run_cell.__code__:
            return True
        frame = frame.f_back
    return False


def test_waiting_for_another_students_test_cell_costs_none_of_ones_own_time():
    """A slow classmate's test cell keeps the turn (verdict.TEST_CELL_LOCK) longer than this
    student's whole time limit: the student's clock counts only the time their own process
    works, so it stands still while they wait, and they keep the points they get alone."""
    import threading

    box = answer_server.AnswerServer(timeout=60)
    source = _source("05_2")
    submitted = _only(source, "ex_05_2_1_test", None)
    results: list[list[verdict.Verdict]] = []
    try:
        box.start()
        box.limit_total(2.0)
        judging = threading.Thread(target=lambda: results.append(verdict.judge(source, submitted, box)))
        verdict.TEST_CELL_LOCK.acquire()  # the classmate's test cell
        try:
            judging.start()
            for _ in range(6000):  # until the student's test cell waits for the turn
                if _waits_for_the_turn(judging):
                    break
                time.sleep(0.05)
            assert _waits_for_the_turn(judging)
            spent = box.spent
            time.sleep(3.0)  # the turn is kept past the student's 2 s
            assert box.spent == spent, "waiting for the turn counted as the student's time"
        finally:
            verdict.TEST_CELL_LOCK.release()
        judging.join(timeout=600)
    finally:
        box.close()
    assert [(v.grade_id, v.passed, v.detail) for v in results[0]] == [("ex_05_2_1_test", True, "")]


# A code object's digest by its content, a nested code object (a function defined inside) by its own
# digest: its repr names its address, which differs between processes.
_DIGEST = ("import hashlib, types\n\n"
           "def digest(code):\n"
           "    consts = tuple(digest(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)\n"
           "    return hashlib.sha256(repr((code.co_name, code.co_code, code.co_names, code.co_varnames,\n"
           "                                consts)).encode()).hexdigest()\n\n"
           "def nested(code):\n"
           "    inner = [n for c in code.co_consts if isinstance(c, types.CodeType) for n in nested(c)]\n"
           "    return [code, *inner]\n")
# The student's cell: every function and code object the collector can reach, and every class
# of the package's own, as a determined student would look for the reference.
_WALK = (_DIGEST + "import gc\n\n"
         "def walk():\n"
         "    held = gc.get_objects()\n"
         "    codes = {id(c): c for o in held for c in gc.get_referents(o)\n"
         "             if isinstance(c, types.CodeType)}\n"
         "    codes.update((id(o.__code__), o.__code__) for o in held if isinstance(o, types.FunctionType))\n"
         "    found_codes = sorted({digest(n) for c in codes.values() for n in nested(c)})\n"
         "    found_classes = sorted({f'{o.__module__}.{o.__qualname__}' for o in held\n"
         "                            if isinstance(o, type) and str(o.__module__).startswith('tinyk')})\n"
         "    return found_codes, found_classes\n\n"
         "found_codes, found_classes = walk()\n")
# The test cell, in the grader's process: the reference's code objects, from the package here.
_NONE_OF_IT = (_DIGEST + "import tinyk.model, tinyk.learner.part_checks\n\n"
               "def codes(obj):\n"
               "    if isinstance(obj, types.FunctionType):\n        return nested(obj.__code__)\n"
               "    methods = [getattr(f, '__func__', f) for f in vars(obj).values()]  # staticmethods too\n"
               "    return [n for f in methods if isinstance(f, types.FunctionType)\n"
               "            for n in nested(f.__code__)]\n\n"
               "want = {digest(c) for name in NAMES for module in (tinyk.model, tinyk.learner.part_checks)\n"
               "        if hasattr(module, name) for c in codes(getattr(module, name))}\n"
               "assert len(want) >= len(NAMES), want\n"
               "assert not want & set(found_codes), 'a code object of the reference is reachable'\n"
               "assert not {f'tinyk.model.{n}' for n in NAMES} & set(found_classes), found_classes\n")


@pytest.mark.parametrize("stem,grade_id,names", [
    ("05_2", "ex_05_2_2_test", ["RMSNorm"]),
    ("05_4", "ex_05_4_4_test", ["Attention", "reference_gqa_attention"]),
    ("05_5", "ex_05_5_3_test", ["DecoderLayer", "reference_decoder_block"]),
])
def test_no_code_of_a_withheld_part_is_left_in_the_learners_process(sandboxed, stem, grade_id, names):
    """A student's cell walks everything the garbage collector holds (functions, code objects,
    classes: what ``__subclasses__`` and a module's attributes lead to as well) after the
    notebook's cells before it ran: no code object equal to the reference's (compared by
    their code, not by file name) and no class of it is there."""
    source = copy.deepcopy(_source(stem))
    index = next(i for i, c in enumerate(source["cells"]) if nbgrader(c).get("grade_id") == grade_id)
    source["cells"][index] = {**source["cells"][index], "source": f"NAMES = {names!r}\n" + _NONE_OF_IT}
    submitted = _with_answer(source, grade_id, "")
    solution = next(c for c in reversed(submitted["cells"][:index]) if is_solution(c))
    original = next(c for c in reversed(_source(stem)["cells"][:index]) if is_solution(c))
    solution["source"] = "".join(original["source"]) + "\n" + _WALK
    [result] = verdict.judge(source, submitted, sandboxed, only=[grade_id])
    assert result.passed, result.detail


# 05.10.3's answer (the ten parts) with a decoder_block that walks the collector's objects from
# inside the assembled model's first forward pass, and a walk the test calls once the model is built.
_CAPSTONE_WALK = (_WALK + "_INSIDE = []\n_block = decoder_block\n\n"
                  "def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):\n"
                  "    if not _INSIDE:\n        _INSIDE.append(walk())\n"
                  "    return _block(x, attention, feed_forward, attention_norm, ffn_norm)\n\n"
                  "def inside():\n    return _INSIDE[0]\n")
# The test cell: SmolLM2 assembled from the learner's parts (over there), one forward pass, then the
# collector's objects there, walked by the learner's code after it and from inside it.
_CAPSTONE_NONE_OF_IT = ("import torch\nfrom tinyk.learner.part_compare import PART_NAMES\n"
                        "from tinyk.learner.parts import build_model, smollm2\n\n"
                        "base, info, tok = smollm2()\n"
                        "mine = build_model(base, {name: globals()[name] for name in PART_NAMES})\n"
                        "ids = torch.tensor([[1, 504, 3575, 282]])\n"
                        "with torch.no_grad():\n"
                        "    assert (mine(ids).logits - base(ids).logits).abs().max() < 1e-4\n"
                        "found_codes, found_classes = walk()\n"
                        + _NONE_OF_IT +
                        "found_codes, found_classes = inside()\n"
                        "assert not want & set(found_codes), 'a reference code object is in the model'\n"
                        "assert not {f'tinyk.model.{n}' for n in NAMES} & set(found_classes), \\\n"
                        "    found_classes\n")


@SMOLLM2
def test_the_capstones_model_holds_weights_and_the_learners_parts_only(sandboxed):
    """05.10.3 puts the learner's ten parts into SmolLM2: in the learner's process, the model they
    are assembled into holds the file's weights and those parts only. After it is built, and from
    inside its forward pass, the collector holds no code object equal to one of the ten parts'
    references (tinyk.learner.own_code.REFERENCES) and no class of theirs."""
    from tinyk.learner.own_code import REFERENCES

    names = sorted({name for refs in REFERENCES.values() for name in refs})
    assert len(names) >= 10
    grade_id = "ex_05_10_3_test"
    source = copy.deepcopy(_source("05_10"))
    index = next(i for i, c in enumerate(source["cells"]) if nbgrader(c).get("grade_id") == grade_id)
    test = f"NAMES = {names!r}\n" + _CAPSTONE_NONE_OF_IT
    source["cells"][index] = {**source["cells"][index], "source": test}
    submitted = _with_answer(source, grade_id, "")
    solution = next(c for c in reversed(submitted["cells"][:index]) if is_solution(c))
    original = next(c for c in reversed(_source("05_10")["cells"][:index]) if is_solution(c))
    solution["source"] = "".join(original["source"]) + "\n" + _CAPSTONE_WALK
    [result] = verdict.judge(source, submitted, sandboxed, only=[grade_id])
    assert result.passed, result.detail


def _two_cells(before: str, answer: str, test: str) -> tuple[dict, dict]:
    """(source, submission) of a one-exercise notebook: a cell of the student's own, the answer
    cell and the test cell (the source's answer is ``def f(v): return v + 1``)."""
    def notebook(answer_text: str) -> dict:
        meta = {"grade": False, "grade_id": "f_solution", "locked": False, "schema_version": 3,
                "solution": True}
        test_meta = {"grade": True, "grade_id": "f_test", "locked": True, "points": 1, "schema_version": 3,
                     "solution": False}
        cells = [("", {}, before), ("", {"nbgrader": meta}, answer_text), ("", {"nbgrader": test_meta}, test)]
        return {"cells": [{"cell_type": "code", "metadata": m, "source": text, "outputs": [],
                           "execution_count": None} for _, m, text in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return notebook("def f(v):\n    return v + 1\n"), notebook(answer)


@pytest.mark.parametrize("case", ["big", "deep"])
def test_the_test_takes_only_the_names_it_reads(server, case):
    """The test's loop variable, parameter and comprehension variable are its own: a notebook
    value of the same name, too big or too deep to send, is never fetched; an honest answer
    keeps its point, and its next exercise is judged as usual."""
    before = {"big": "x = 'a' * (5 * 2**20)\n",  # over the wire's 4 MiB bound for a reply's pickle
              "deep": "x = []\nfor _ in range(30):\n    x = [x]\n"}[case]  # over 20 levels
    test = ("for x in [1, 2]:\n    assert f(x) == x + 1\n"
            "def g(x):\n    return f(x)\n"
            "assert [g(x) for x in (3,)] == [4]\n")
    source, submitted = _two_cells(before, "def f(v):\n    return v + 1\n", test)
    assert free_names(test) == ["f"]
    assert [(v.passed, v.detail) for v in verdict.judge(source, submitted, server)] == [(True, "")]
    assert _judge(server, "05_2", "ex_05_2_1_test", None).passed


def test_a_value_that_cannot_cross_as_data_is_reached_over_there(server):
    """A value the test reads that is nested too deep to send as data stays with the student, as
    a handle (a function's way): the test still runs, and the verdict goes on."""
    before = "x = []\nfor _ in range(30):\n    x = [x]\n"
    source, submitted = _two_cells(before, "def f(v):\n    return v + 1\n",
                                   "assert f(1) == 2 and type(x).__name__ == 'Remote'\n")
    assert [(v.passed, v.detail) for v in verdict.judge(source, submitted, server)] == [(True, "")]
    assert _judge(server, "05_2", "ex_05_2_1_test", None).passed


def test_an_answer_cannot_rebind_a_builtin_the_test_uses(server):
    """``def abs`` in the answer cell does not become the test's abs: the comparison stays
    Python's own, and a wrong answer still scores 0."""
    source, submitted = _two_cells("", "def f(v):\n    return 0\n\ndef abs(v):\n    return 0.0\n",
                                   "assert abs(f(3) - 4) < 1e-6\n")
    [result] = verdict.judge(source, submitted, server)
    assert not result.passed and result.detail.startswith("test: AssertionError"), result.detail
