"""A learner's part that calls a reference implementation is caught by what runs (05.2-05.10).

Each cheat below computes the right numbers by borrowing: from ``tinyk``, from Hugging Face,
or from PyTorch's fused ops, by five routes (import, alias, ``getattr``, a copied function
object, ``importlib``) and below the Python API (``torch.ops``). Honest parts in plain torch
pass, and so do callables that the test itself hands to the part.
"""

from __future__ import annotations

import importlib
import math
import sys
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tinyk
from tinyk.learner.own_code import BorrowedCall, run_own, trusted, watched
from tinyk.learner.part_checks import check_parts
from tinyk.learner.part_compare import PartError

Q, K = torch.randn(1, 4, 3, 8), torch.randn(1, 2, 3, 8)
X = torch.randn(1, 3, 2, 8)  # B×T×H_kv×d_h


def honest_attention(q, k, v, mask=None):
    k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    return scores.masked_fill(~causal, -1e9).softmax(-1) @ v


def test_honest_parts_in_plain_torch_pass():
    assert torch.allclose(run_own("gqa_attention", honest_attention, Q, K, K),
                          F.scaled_dot_product_attention(Q, K, K, is_causal=True, enable_gqa=True), atol=1e-6)
    own = run_own("repeat_kv", lambda x, n: x.repeat_interleave(n, dim=2), X, 2)
    assert torch.equal(own, tinyk.repeat_kv(X, 2))


sdpa_copy = F.scaled_dot_product_attention
repeat_clone = types.FunctionType(tinyk.repeat_kv.__code__, tinyk.repeat_kv.__globals__)
CHEATS = {
    "import": (lambda x, n: tinyk.repeat_kv(x, n), (X, 2), "tinyk.model.repeat_kv"),
    "alias": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
              (Q, K, K), "scaled_dot_product_attention"),
    "getattr": (lambda q, k, v: getattr(F, "scaled_dot_" + "product_attention")(q, k, v, enable_gqa=True),
                (Q, K, K), "scaled_dot_product_attention"),
    "copied function object": (lambda x, n: repeat_clone(x, n), (X, 2), "tinyk.model.repeat_kv"),
    "importlib": (lambda x, n: importlib.import_module("tinyk.model").repeat_kv(x, n), (X, 2),
                  "tinyk.model.repeat_kv"),
    "a saved reference": (lambda q, k, v: sdpa_copy(q, k, v, enable_gqa=True), (Q, K, K),
                          "scaled_dot_product_attention"),
    "torch.ops": (lambda q, k, v: torch.ops.aten.scaled_dot_product_attention(q, q, q), (Q, K, K),
                  "torch.ops.aten.scaled_dot_product_attention"),
    "nn.RMSNorm": (lambda x: torch.nn.RMSNorm(8, eps=1e-5)(x), (X,), "rms_norm"),
    "tinyk.RMSNorm": (lambda x: tinyk.RMSNorm(8)(x), (X,), "tinyk.model.RMSNorm"),
    "Hugging Face": (lambda x, n: importlib.import_module("transformers.models.llama.modeling_llama")
                     .repeat_kv(x.transpose(1, 2), n), (X, 2), "transformers (repeat_kv)"),
    "gguf": (lambda block: importlib.import_module("gguf").quants.dequantize(
        np.frombuffer(block, dtype=np.uint8), importlib.import_module("gguf").GGMLQuantizationType.Q4_1),
             (bytes(20),), "gguf.quants.dequantize"),
    "gguf's class": (lambda block: importlib.import_module("gguf").quants.Q4_1.dequantize(
        np.frombuffer(block, dtype=np.uint8)), (bytes(20),), "gguf.quants.Q4_1.dequantize"),
}


@pytest.mark.parametrize("route", sorted(CHEATS))
def test_a_borrowed_call_is_caught_whatever_the_route(route):
    cheat, args, call = CHEATS[route]
    with pytest.raises(BorrowedCall, match="not allowed here") as caught:
        run_own("the part", cheat, *args)
    assert call in caught.value.call and str(caught.value).startswith("the part: calls ")
    # the function the part called, not one that function calls in turn
    assert caught.value.call == call or not call.startswith("gguf"), caught.value.call
    # what to write it with instead: the dequantisation is NumPy's bit work, the rest torch's
    advice = "NumPy or plain torch" if call.startswith("gguf") else "plain torch operations (matmul"
    assert advice in str(caught.value), str(caught.value)


def test_switching_the_watch_off_is_tampering():
    def sneaky(x, n):
        import sys
        sys.settrace(None)
        return tinyk.repeat_kv(x, n)

    def profiler(x, n):  # another hook than the watch's own changes nothing
        import sys
        sys.setprofile(None)
        return tinyk.repeat_kv(x, n)

    with pytest.raises(BorrowedCall, match="switched off the check"):
        run_own("repeat_kv", sneaky, X, 2)
    with pytest.raises(BorrowedCall, match=r"tinyk\.model\.repeat_kv"):
        run_own("repeat_kv", profiler, X, 2)


def test_callables_handed_to_the_part_may_run_anything():
    config = tinyk.ModelConfig.tiny()
    attention = tinyk.Attention(config)
    cos, sin = tinyk.precompute_freqs_cis(config.head_dim, 5)
    x = torch.randn(1, 5, config.dim)

    def block(x, attend):
        return x + attend(x)

    got = run_own("decoder_block", block, x, trusted(lambda y: attention(y, cos, sin)))
    assert torch.allclose(got, x + attention(x, cos, sin))
    with pytest.raises(BorrowedCall):  # the same callable, not handed over as trusted
        run_own("decoder_block", block, x, lambda y: attention(y, cos, sin))


def test_check_parts_names_the_borrowed_call():
    def repeat_kv(x, n_rep):
        return tinyk.repeat_kv(x, n_rep)

    with pytest.raises(PartError, match=r"repeat_kv \(section 05\.4\): calls tinyk\.model\.repeat_kv"):
        check_parts(repeat_kv=repeat_kv)


def test_a_watched_name_watches_every_later_call_and_a_class_stays_a_module():
    def repeat_kv(x, n_rep):
        return x.repeat_interleave(n_rep, dim=2) if x.shape[1] < 5 else tinyk.repeat_kv(x, n_rep)

    repeat_kv = watched("repeat_kv", repeat_kv)
    assert watched("repeat_kv", repeat_kv) is repeat_kv and repeat_kv.__name__ == "repeat_kv"
    assert torch.equal(repeat_kv(X, 2), tinyk.repeat_kv(X, 2))  # short inputs: its own code
    with pytest.raises(BorrowedCall, match=r"tinyk\.model\.repeat_kv"):
        repeat_kv(torch.randn(1, 6, 2, 8), 2)  # longer ones: tinyk's

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.inner = tinyk.RMSNorm(dim, eps)

        def forward(self, x):
            return self.inner(x)

    Watched = watched("RMSNorm", RMSNorm)
    assert issubclass(Watched, torch.nn.Module) and Watched.__name__ == "RMSNorm"
    with pytest.raises(BorrowedCall, match=r"tinyk\.model\.RMSNorm"):
        Watched(8)


def test_a_part_can_forbid_named_torch_functions_whatever_the_route():
    def own(logits, targets):
        return -logits.log_softmax(-1).gather(-1, targets[:, None]).squeeze(-1)

    logits, targets = torch.randn(4, 5), torch.tensor([0, 3, 1, 4])
    forbid = (F.cross_entropy, F.nll_loss)
    assert watched("per_target_loss", own, forbid=forbid) is not watched("per_target_loss", own)
    assert torch.allclose(watched("per_target_loss", own, forbid=forbid)(logits, targets),
                          F.cross_entropy(logits, targets, reduction="none"))
    routes = [  # (the cheat, the call named)
        (lambda x, t: F.cross_entropy(x, t, reduction="none"), "torch.nn.functional.cross_entropy"),
        (lambda x, t: F.nll_loss(x.log_softmax(-1), t, reduction="none"), "torch.nn.functional.nll_loss"),
        (lambda x, t: torch.nn.CrossEntropyLoss(reduction="none")(x, t), "torch.nn.functional.cross_entropy"),
        (lambda x, t: torch._C._nn.cross_entropy_loss(x, t, None, 0), "torch.cross_entropy_loss"),
        (lambda x, t: torch.ops.aten.nll_loss_forward(x, t, None, 0, -100)[0],
         "torch.ops.aten.nll_loss_forward"),
    ]
    assert len(routes) == 5
    for cheat, call in routes:
        with pytest.raises(BorrowedCall, match="not allowed here: this exercise asks you to write") as caught:
            watched("per_target_loss", cheat, forbid=forbid)(logits, targets)
        assert caught.value.call.startswith(call)
    assert torch.allclose(watched("shifted_loss", routes[2][0])(logits, targets),
                          own(logits, targets))  # forbidden for that part only


def test_importing_gguf_inside_a_part_is_not_a_borrowed_call():
    """The first import of ``gguf`` runs ``gguf.quants``' dunder methods (its classes register
    themselves): a part that imports it, then computes with NumPy, is the learner's own."""
    import subprocess
    import sys

    script = ("import numpy as np\n"
              "from tinyk.learner.own_code import run_own\n"
              "def part(block):\n"
              "    import gguf  # noqa: F401\n"
              "    return np.frombuffer(block, dtype=np.uint8).astype(np.float32)\n"
              "assert 'gguf' not in __import__('sys').modules\n"
              "print(run_own('dequantize_q4_1', part, bytes(20)).shape)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(20,)"



class _Loud(type):
    @property
    def __name__(cls):
        raise RuntimeError("a metaclass's code, run inside the watch")


class _Base:
    @classmethod
    def dequantize(cls):
        return sys._getframe()

    def method(self):
        return sys._getframe()


class _Sub(_Base, metaclass=_Loud):  # as a learner's subclass of a gguf.quants class could be
    pass


def test_a_called_method_is_named_by_its_class_whatever_the_metaclass_says():
    """The watch names a gguf method by the class it was called on; a learner's metaclass whose
    ``__name__`` runs code (here it raises) is not run inside the watch."""
    from tinyk.learner.own_code import _called_name

    assert _called_name(_Sub.dequantize()) == "_Sub.dequantize"  # the class called, not _Base
    assert _called_name(_Sub().method()) == "_Sub.method"
    here = sys._getframe()
    assert _called_name(here) == here.f_code.co_name  # a plain function: its own name


# The course's functions compared by what they compute, not by their file's name: the package's
# repeat_kv (180 bytes of bytecode), its code moved to another file name, and its exact text run
# anew with the package's names.
_MOVED = types.FunctionType(tinyk.repeat_kv.__code__.replace(co_filename="/home/student/mine.py"),
                            tinyk.repeat_kv.__globals__)
_RETYPED: dict = {}
exec(compile(__import__("inspect").getsource(tinyk.model.repeat_kv), "<retyped>", "exec"),
     vars(tinyk.model).copy(), _RETYPED)


@pytest.mark.parametrize("copy", [_MOVED, _RETYPED["repeat_kv"]], ids=["moved", "retyped"])
def test_the_courses_code_under_another_file_name_is_still_the_courses(copy):
    """A part that calls a function of the package whose code it copied under another file name
    (``code.replace(co_filename=...)``), or whose exact text it ran anew, is caught, naming it."""
    def attention(q, k, v, mask=None):
        return honest_attention(q, copy(k.transpose(1, 2), 1).transpose(1, 2), v)

    with pytest.raises(BorrowedCall, match=r"calls tinyk\.model\.repeat_kv, which is not allowed"):
        run_own("gqa_attention", attention, Q, K, K)
    assert torch.equal(copy(X, 2), tinyk.repeat_kv(X, 2))  # the same code: the same numbers


def test_a_part_written_as_the_course_writes_it_is_the_learners_own():
    """The part watched may match its own reference instruction for instruction (a learner who
    writes repeat_kv as llama2.c does): only the course's other functions count as borrowed."""
    assert torch.equal(run_own("repeat_kv", _RETYPED["repeat_kv"], X, 2), tinyk.repeat_kv(X, 2))
