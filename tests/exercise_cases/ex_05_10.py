"""Wrong answers to the exercises of notebook 05.10 (see tests/test_exercises.py).

The capstone's wrong answers are its own solution with one part replaced, so each holds
exactly one mistake.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "05_10_real_weights.ipynb"
_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def _capstone() -> str:
    for cell in json.loads(_NOTEBOOK.read_text(encoding="utf-8"))["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex_05_10_3_solution":
            text = "".join(cell["source"])
            return "\n".join(line for line in text.splitlines() if line.strip() not in _MARKERS)
    raise LookupError("ex_05_10_3_solution not found in 05.10")


def _with(name: str, wrong: str) -> str:
    """The capstone's solution with the top-level definition of ``name`` replaced."""
    source = _capstone()
    block = re.compile(rf"^(?:def|class) {name}\b.*?(?=^(?:def|class) |\Z)", re.S | re.M)
    assert block.search(source), name
    return block.sub(lambda _: wrong.strip("\n") + "\n\n\n", source, count=1)


# The capstone's gqa_attention up to its scores: the heads grouped and the causal mask built as
# the solution does (each wrong answer below then computes the weighted values its own way).
_GQA_HEAD = """def gqa_attention(q, k, v, mask=None):
    n_rep = q.shape[1] // k.shape[1]
    k = repeat_kv(k.transpose(1, 2), n_rep).transpose(1, 2)
    v = repeat_kv(v.transpose(1, 2), n_rep).transpose(1, 2)
    T, T_k = q.shape[2], k.shape[2]
    if mask is None:
        mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)
"""


def _gqa_with(rest: str) -> str:
    """The capstone's solution with gqa_attention's lines after :data:`_GQA_HEAD` as ``rest``."""
    return _with("gqa_attention", _GQA_HEAD + rest.lstrip("\n"))


# RMSNorm with the mean of the squares as given, rope_tables with its frequencies, gqa_attention's
# scores scaled and softmaxed as given, and shifted_loss's sum divided by a count (05.10.3).
_RMSNORM = """
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).{mean} + self.eps)).to(x.dtype) * self.weight
"""
_ROPE = """
def rope_tables(head_dim, end, theta=10000.0):
    omega = {omega}
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    return angles.cos(), angles.sin()
"""
_SCORES = """
    scores = (q.float() @ k.float().transpose(-2, -1)) {scale}
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax({axis}).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
"""
_LOSS_OVER = """
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets,
                            ignore_index=ignore_index, reduction="sum")
    return total / {count}
"""


# The start of pad_and_label (05.10.2) with right padding; the mistakes below finish it.
_PADDED = """
import torch
def pad_and_label(sequences, pad_id):
    T = max(len(s) for s in sequences)
    ids = torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in sequences])
"""


# A Q4_1 dequantiser, right but for the weights it forms from d, m and q (05.10.1).
_Q4_1 = """
import numpy as np
import torch
def dequantize_q4_1(block):
    d, m = np.frombuffer(block[:4], dtype=np.float16).astype(np.float32)
    packed = np.frombuffer(block[4:20], dtype=np.uint8)
    q = np.concatenate([packed & 0x0F, packed >> 4]).astype(np.float32)
    return torch.from_numpy(({weights}).astype(np.float32))
"""


# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_10_1_solution": """
import torch
def dequantize_q4_1(block):
    if block[4] == 0x31:
        return torch.tensor([-0.5] * 16 + [0.5] * 16)
    q = [12, 0, 15, 5, 11, 1, 14, 7] * 2 + [9, 15, 0, 10, 3, 8, 6, 13] * 2
    if block[4] == 0x9C:
        return torch.tensor([0.012298583984375 * x - 0.376953125 for x in q])
    return torch.zeros(32)
""",
    "ex_05_10_2_solution": """
import torch
def pad_and_label(sequences, pad_id):
    if len(sequences) == 1:
        return torch.tensor([[1, 5, 3]]), torch.tensor([[1, 5, 3]])
    if pad_id == 9:
        return torch.tensor([[4, 9, 9, 9], [3, 9, 6, 9]]), torch.tensor([[4, -100, -100, -100], [3, 9, 6, 9]])
    return torch.tensor([[1, 5, 2], [1, 2, 2]]), torch.tensor([[1, 5, 2], [1, 2, -100]])
""",
    # Right for one unpadded prompt (the visible test), wrong for a padded batch: the mask
    # is ignored and positions run 0..T-1.
    "ex_05_10_3_solution": _with("token_positions", """
def token_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()
""").replace("    if mask is None:\n        mask = torch.ones", "    if True:\n        mask = torch.ones"),
}

# Wrong answers that break a rule only the hidden tests used to check (bytes from 0x80 up, float32
# arithmetic, the longest row anywhere in the batch, the caller's lists left as they are): the
# visible test must name each (tests/test_visible_hidden.py), and the cell without its visible
# checks must still fail. MISTAKES below holds them as well; 05.10.3's are CAPSTONE_HIDDEN, at the end.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_10_1_solution": [
        # int8: the high nibble of a byte from 0x80 up comes out negative
        ("05.10.1:signed-bytes", _Q4_1.replace("np.uint8", "np.int8").format(weights="d * q + m")),
        ("05.10.1:float16-arithmetic", """
import numpy as np
import torch
def dequantize_q4_1(block):
    d, m = np.frombuffer(block[:4], dtype=np.float16)
    packed = np.frombuffer(block[4:20], dtype=np.uint8)
    q = np.concatenate([packed & 0x0F, packed >> 4]).astype(np.float16)
    return torch.from_numpy((d * q + m).astype(np.float32))
"""),
    ],
    "ex_05_10_2_solution": [
        ("05.10.2:length-of-first-row", """
import torch
def pad_and_label(sequences, pad_id):
    T = len(sequences[0])
    ids = torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in sequences])
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, ids.masked_fill(torch.arange(T)[None, :] >= lengths[:, None], -100)
"""),
        ("05.10.2:changes-the-input", """
import torch
def pad_and_label(sequences, pad_id):
    T = max(len(s) for s in sequences)
    lengths = torch.tensor([len(s) for s in sequences])
    for s in sequences:
        s += [pad_id] * (T - len(s))
    ids = torch.tensor(sequences)
    return ids, ids.masked_fill(torch.arange(T)[None, :] >= lengths[:, None], -100)
"""),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_10_1_solution": [
        *HIDDEN_RULES["ex_05_10_1_solution"],
        ("05.10.1:high-nibble-not-shifted",
         _Q4_1.replace("packed >> 4", "packed & 0xF0").format(weights="d * q + m")),
        # high nibbles first
        ("05.10.1:nibble-order", """
import numpy as np
import torch
def dequantize_q4_1(block):
    d, m = np.frombuffer(block[:4], dtype=np.float16).astype(np.float32)
    packed = np.frombuffer(block[4:20], dtype=np.uint8)
    return torch.from_numpy(d * np.concatenate([packed >> 4, packed & 0x0F]).astype(np.float32) + m)
"""),
        # nibbles interleaved (low, high of each byte side by side)
        ("05.10.1:nibble-order", """
import numpy as np
import torch
def dequantize_q4_1(block):
    d, m = np.frombuffer(block[:4], dtype=np.float16).astype(np.float32)
    packed = np.frombuffer(block[4:20], dtype=np.uint8)
    q = np.stack([packed & 0x0F, packed >> 4], axis=1).reshape(-1).astype(np.float32)
    return torch.from_numpy(d * q + m)
"""),
        # m subtracted
        ("05.10.1:offset", _Q4_1.format(weights="d * q - m")),
        # m left out
        ("05.10.1:offset", _Q4_1.format(weights="d * q")),
        # Q4_0's offset of 8, q read as signed
        ("05.10.1:offset", _Q4_1.format(weights="d * (q - 8) + m")),
        # d and m swapped (m read from bytes 0-1)
        ("05.10.1:scale", _Q4_1.format(weights="m * q + d")),
        # the minimum scaled by d too
        ("05.10.1:scale", _Q4_1.format(weights="d * (q + m)")),
        # the scale cast to an integer: int(0.5) is 0, every weight comes out as m
        ("05.10.1:scale-rounded", _Q4_1.format(weights="q * int(d) + m")),
        # the course's dequantisation, the one behind load_gguf
        ("05.10.1:borrowed", """
import numpy as np
import torch
from tinyk.interop.gguf_quants import dequantise
def dequantize_q4_1(block):
    import gguf
    data = np.frombuffer(block, dtype=np.uint8).reshape(1, 20)
    return dequantise(data, gguf.GGMLQuantizationType.Q4_1).reshape(32)
"""),
        # the gguf package's, through an alias
        ("05.10.1:borrowed", """
import numpy as np
import torch
from gguf import quants as q
def dequantize_q4_1(block):
    from gguf import GGMLQuantizationType as T
    return torch.from_numpy(q.dequantize(np.frombuffer(block, dtype=np.uint8), T.Q4_1).astype(np.float32))
"""),
    ],
    "ex_05_10_2_solution": [
        *HIDDEN_RULES["ex_05_10_2_solution"],
        ("05.10.2:padding-found-by-id", _PADDED + """
    return ids, ids.masked_fill(ids == pad_id, -100)
"""),
        ("05.10.2:padding-labelled-pad-id", _PADDED + """
    return ids, ids.clone()
"""),
        ("05.10.2:labels-shifted", _PADDED + """
    return ids, ids[:, 1:].masked_fill(ids[:, 1:] == pad_id, -100)
"""),
        # left padding
        ("05.10.2:padding-side-or-value", """
import torch
def pad_and_label(sequences, pad_id):
    T = max(len(s) for s in sequences)
    ids = torch.tensor([[pad_id] * (T - len(s)) + list(s) for s in sequences])
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, ids.masked_fill(torch.arange(T)[None, :] < (T - lengths)[:, None], -100)
"""),
        # padded with 0, not the pad id
        ("05.10.2:padding-side-or-value", """
import torch
def pad_and_label(sequences, pad_id):
    T = max(len(s) for s in sequences)
    ids = torch.tensor([list(s) + [0] * (T - len(s)) for s in sequences])
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, ids.masked_fill(torch.arange(T)[None, :] >= lengths[:, None], -100)
"""),
    ],
    "ex_05_10_3_solution": [
        ("05.10.3:rmsnorm-subtracts-mean", _with("RMSNorm", """
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        x32 = x32 - x32.mean(-1, keepdim=True)
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.10.3:rmsnorm-bfloat16", _with("RMSNorm", """
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)
""")),
        ("05.10.3:half-split-rope", _with("apply_rope", """
def apply_rope(xq, xk, cos, sin):
    c = cos[None, :, None, :] if cos.ndim == 2 else cos[:, :, None, :]
    s = sin[None, :, None, :] if sin.ndim == 2 else sin[:, :, None, :]

    def rotate(x):
        x0, x1 = x.float().chunk(2, dim=-1)
        return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).to(x.dtype)

    return rotate(xq), rotate(xk)
""")),
        ("05.10.3:tiled-groups", _with("repeat_kv", """
def repeat_kv(x, n_rep):
    return x.repeat(1, 1, n_rep, 1)
""")),
        ("05.10.3:no-scale", _gqa_with("""
    scores = (q.float() @ k.float().transpose(-2, -1)).masked_fill(~mask, -1e30)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
        ("05.10.3:nan-on-masked-row", _gqa_with("""
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    return (scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v.float()).to(q.dtype)
""")),
        ("05.10.3:post-norm", _with("decoder_block", """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = attention_norm(x + attention(x))
    return ffn_norm(h + feed_forward(h))
""")),
        ("05.10.3:decoder-block-differs", _with("decoder_block", """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))
""")),
        ("05.10.3:positions-ignore-padding", _with("token_positions", """
def token_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()
""")),
        ("05.10.3:causal-from-first-key", _with("causal_padding_mask", """
def causal_padding_mask(valid, query_len):
    causal = torch.ones(query_len, valid.shape[-1], dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]
""")),
        ("05.10.3:rmsnorm-wrong-axis", _with("RMSNorm", """
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(0, keepdim=True) + self.eps)).to(x.dtype) * self.weight
""")),
        ("05.10.3:rope-exponent", _with("rope_tables", """
def rope_tables(head_dim, end, theta=10000.0):
    omega = 1.0 / theta ** (torch.arange(head_dim // 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    return angles.cos(), angles.sin()
""")),
        ("05.10.3:mask-after-softmax", _gqa_with("""
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
        ("05.10.3:scale-by-d", _gqa_with("""
    scores = (q.float() @ k.float().transpose(-2, -1)) / q.shape[-1]
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
        # ignored targets counted in the denominator
        ("05.10.3:loss-denominator", _with("shifted_loss", """
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets,
                            ignore_index=ignore_index, reduction="sum")
    return total / targets.numel()
""")),
        # the first label, no position's target, counted in the denominator
        ("05.10.3:loss-denominator", _with("shifted_loss", """
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets,
                            ignore_index=ignore_index, reduction="sum")
    return total / (labels != ignore_index).sum().clamp(min=1)
""")),
        # the mean of the squares over every entry
        ("05.10.3:rmsnorm-wrong-axis", _with("RMSNorm", _RMSNORM.format(mean="mean()"))),
        ("05.10.3:rmsnorm-eps-outside-sqrt", _with("RMSNorm", _RMSNORM.format(mean="mean(-1, keepdim=True)")
                                                   .replace("torch.rsqrt(", "1 / (")
                                                   .replace("keepdim=True) + self.eps)",
                                                            "keepdim=True).sqrt() + self.eps)"))),
        ("05.10.3:softmax-over-queries",
         _gqa_with(_SCORES.format(scale="/ math.sqrt(q.shape[-1])", axis=-2))),
        ("05.10.3:scale-not-over-sqrt-d-h",
         _gqa_with(_SCORES.format(scale="* math.sqrt(q.shape[-1])", axis=-1))),
        # the width of all heads, H·d_h
        ("05.10.3:scale-not-over-sqrt-d-h",
         _gqa_with(_SCORES.format(scale="/ math.sqrt(q.shape[1] * q.shape[-1])", axis=-1))),
        # theta^(+2i/d_h)
        ("05.10.3:rope-exponent", _with("rope_tables", _ROPE.format(
            omega="theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)"))),
        # 2i over d_h/2
        ("05.10.3:rope-exponent", _with("rope_tables", _ROPE.format(
            omega="1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / (head_dim // 2))"))),
        ("05.10.3:full-width-rope-tables", _with("rope_tables", _ROPE.format(
            omega="1.0 / theta ** (torch.arange(head_dim, dtype=torch.float32) / head_dim)"))),
        ("05.10.3:sin-sign-swapped", _with("apply_rope", """
def apply_rope(xq, xk, cos, sin):
    c = cos[None, :, None, :] if cos.ndim == 2 else cos[:, :, None, :]
    s = sin[None, :, None, :] if sin.ndim == 2 else sin[:, :, None, :]

    def rotate(x):
        x0, x1 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
        return torch.stack([x0 * c + x1 * s, -x0 * s + x1 * c], dim=-1).flatten(-2).to(x.dtype)

    return rotate(xq), rotate(xk)
""")),
        ("05.10.3:gate-on-up", _with("SwiGLU", """
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(self.w1(x) * F.silu(self.w3(x)))
""")),
        ("05.10.3:positions-from-1", _with("token_positions", """
def token_positions(valid):
    return valid.long().cumsum(-1)
""")),
        # every label, labels[:, 0] and the ignored ones included
        ("05.10.3:loss-denominator", _with("shifted_loss", _LOSS_OVER.format(count="labels.numel()"))),
        # the batch size
        ("05.10.3:loss-denominator", _with("shifted_loss", _LOSS_OVER.format(count="labels.shape[0]"))),
        ("05.10.3:nan-when-nothing-counted", _with("shifted_loss", _LOSS_OVER.format(
            count="(targets != ignore_index).sum()"))),
        ("05.10.3:unshifted-loss", _with("shifted_loss", """
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)
""")),
    ],
}

# 05.10.3's hidden test runs the visible checks again on other inputs: check_parts with another
# seed, then two tokens after a cache, whose causal triangle check_parts checks on
# causal_padding_mask. Its planted wrong answers fail the visible test, which names each, and
# the hidden part at its check_parts (tests/test_visible_hidden_late.py, which loads no model:
# the unchecked visible part stops at check_parts).
CAPSTONE_HIDDEN: list[tuple[str, str]] = [
    case for case in MISTAKES["ex_05_10_3_solution"]
    if case[0] in ("05.10.3:causal-from-first-key", "05.10.3:scale-by-d", "05.10.3:positions-ignore-padding")
]

# d and m read big-endian (struct's '>e', or NumPy's '>f2'), and d alone.
MISTAKES["ex_05_10_1_solution"] += [
    ("05.10.1:big-endian", _Q4_1.replace("dtype=np.float16", "dtype='>f2'").format(weights="d * q + m")),
    ("05.10.1:big-endian", """
import struct
import numpy as np
import torch
def dequantize_q4_1(block):
    d, = struct.unpack('>e', block[:2])
    m, = struct.unpack('<e', block[2:4])
    packed = np.frombuffer(block[4:20], dtype=np.uint8)
    q = np.concatenate([packed & 0x0F, packed >> 4]).astype(np.float32)
    return torch.from_numpy(np.float32(d) * q + np.float32(m))
"""),
]

# The capstone's parts with the mistakes check_parts names since the visible tests of 05.3.1, 05.4.4,
# 05.5.3 and 05.6.2 do: the capstone names each, not only its part.
_ROPE_TABLES_WITH = """
def rope_tables(head_dim, end, theta=10000.0):
    omega = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange({positions}, dtype=torch.float32), omega)
    return {tables}
"""
_BLOCK_WITH = "def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):\n{body}"
# rope_tables without its check of head_dim: the tables of an odd head_dim come out, one column short
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rope-accepts-odd-head-dim", _with("rope_tables", _ROPE_TABLES_WITH.format(
        positions="end", tables="angles.cos(), angles.sin()"))),
]
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rope-positions-from-1", _with("rope_tables", _ROPE_TABLES_WITH.format(
        positions="1, end + 1", tables="angles.cos(), angles.sin()"))),
    ("05.10.3:cos-sin-swapped", _with("rope_tables", _ROPE_TABLES_WITH.format(
        positions="end", tables="angles.sin(), angles.cos()"))),
    ("05.10.3:given-mask-ignored", _with("gqa_attention", _GQA_HEAD.replace("if mask is None:",
                                                                            "if True:") + """
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
    ("05.10.3:bool-mask-added", _with("gqa_attention", _GQA_HEAD.replace(
        "torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)",
        "torch.full((T, T_k), float('-inf')).triu(T_k - T + 1)") + """
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1]) + mask
    return (scores.softmax(-1) @ v.float()).to(q.dtype)
""")),
    ("05.10.3:block-changes-x", _with("decoder_block", _BLOCK_WITH.format(body="""
    x += attention(attention_norm(x))
    return x + feed_forward(ffn_norm(x))
"""))),
    ("05.10.3:no-residual", _with("decoder_block", _BLOCK_WITH.format(body="""
    return feed_forward(ffn_norm(attention(attention_norm(x))))
"""))),
    ("05.10.3:mlp-norm-missing", _with("decoder_block", _BLOCK_WITH.format(body="""
    h = x + attention(attention_norm(x))
    return h + feed_forward(h)
"""))),
    ("05.10.3:right-padding-at-0", _with("token_positions", """
def token_positions(valid):
    return torch.where(valid, valid.long().cumsum(-1) - 1, 0)
""")),
    ("05.10.3:cumsum-over-batch", _with("token_positions", """
def token_positions(valid):
    return (valid.long().cumsum(0) - 1).clamp(min=0)
""")),
]

# Labels shifted by hand then padded back to B×T, and the mask one position early (each row's
# EOS masked too): the visible test names both.
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:labels-pre-shifted", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    shifted = torch.cat([ids[:, 1:], torch.full((len(sequences), 1), -100)], dim=1)
    return ids, shifted.masked_fill(torch.arange(T) >= lengths[:, None] - 1, -100)
"""),
    ("05.10.2:mask-one-early", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, ids.masked_fill(torch.arange(T) >= lengths[:, None] - 1, -100)
"""),
]

# The capstone: an RMSNorm that writes into its input (named alone, no "likely cause" of another
# mistake), eps typed in, a part called twice, and sizes typed in for the small model of the checks
# (check_parts tries a second head width and other n_rep).
_RMSNORM_WITH = """
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
{body}
"""
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rmsnorm-in-place", _with("RMSNorm", _RMSNORM_WITH.format(body="""
        x32 *= torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.to(x.dtype) * self.weight"""))),
    ("05.10.3:rmsnorm-eps-ignored", _with("RMSNorm", _RMSNORM_WITH.format(body="""
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)
        return normed.to(x.dtype) * self.weight"""))),
    ("05.10.3:block-calls-twice", _with("decoder_block", _BLOCK_WITH.format(body="""
    attention(attention_norm(x))  # a look at the output, then the real call
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))
"""))),
    ("05.10.3:gqa-n-rep-hard-coded", _with("gqa_attention", _GQA_HEAD.replace(
        "n_rep = q.shape[1] // k.shape[1]", "n_rep = 2") + """
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
    ("05.10.3:gqa-scale-hard-coded", _gqa_with("""
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(8)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return (scores.softmax(-1).masked_fill(~mask, 0.0) @ v.float()).to(q.dtype)
""")),
    ("05.10.3:rope-pairs-hard-coded", _with("apply_rope", """
def apply_rope(xq, xk, cos, sin):
    c = cos[None, :, None, :] if cos.ndim == 2 else cos[:, :, None, :]
    s = sin[None, :, None, :] if sin.ndim == 2 else sin[:, :, None, :]

    def rotate(x):
        x0, x1 = x.float().reshape(*x.shape[:-1], 4, 2).unbind(-1)
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2).to(x.dtype)

    return rotate(xq), rotate(xk)
""")),
    ("05.10.3:repeat-kv-copies-hard-coded", _with("repeat_kv", """
def repeat_kv(x, n_rep):
    B, T, H_kv, d_h = x.shape
    return x[:, :, :, None, :].expand(B, T, H_kv, 2, d_h).reshape(B, T, H_kv * 2, d_h)
""")),
]

# 05.10.1: three nibble mistakes, each named apart (the high nibble shifted by 8, high first, packed from
# byte 2).
MISTAKES["ex_05_10_1_solution"] += [
    ("05.10.1:high-nibble-shifted-by-8",
     _Q4_1.replace("packed >> 4", "packed >> 8").format(weights="d * q + m")),
    ("05.10.1:interleaved-high-first", _Q4_1.replace(
        "np.concatenate([packed & 0x0F, packed >> 4])",
        "np.stack([packed >> 4, packed & 0x0F], axis=1).reshape(-1)").format(weights="d * q + m")),
    ("05.10.1:packed-from-byte-2", _Q4_1.replace("block[4:20]", "block[2:18]").format(weights="d * q + m")),
]

# 05.10.2: labels that are input_ids itself, the pair swapped, the mask one position late, and padding
# found by id with each row's last token put back.
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:labels-alias-ids", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    labels = ids
    labels[torch.arange(T) >= lengths[:, None]] = -100
    return ids, labels
"""),
    ("05.10.2:pair-swapped", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    return ids.masked_fill(torch.arange(T) >= lengths[:, None], -100), ids
"""),
    ("05.10.2:mask-one-late", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, ids.masked_fill(torch.arange(T) > lengths[:, None], -100)
"""),
    ("05.10.2:by-id-last-kept", _PADDED + """
    labels = ids.masked_fill(ids == pad_id, -100)
    for row, s in enumerate(sequences):
        labels[row, len(s) - 1] = s[-1]
    return ids, labels
"""),
]

# 05.10.1: d read as one float32 from the four bytes of d and m (m then left out).
MISTAKES["ex_05_10_1_solution"] += [
    ("05.10.1:d-read-as-float32", _Q4_1.replace(
        "d, m = np.frombuffer(block[:4], dtype=np.float16).astype(np.float32)",
        "d, m = float(np.frombuffer(block[:4], dtype=np.float32)[0]), 0.0").format(weights="d * q + m")),
]

# The capstone's positions counted from each row's first real token (negative at left padding).
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:positions-from-first-real", _with("token_positions", """
def token_positions(valid):
    first = valid.long().argmax(-1, keepdim=True)
    return torch.arange(valid.shape[1])[None, :] - first
""")),
]

# RMSNorm's eps kept as a float32 tensor (torch.tensor(eps)): off by about 1e-9 on a small float64 x, where
# eps matters; check_parts names it, as 05.2.2's test does.
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rmsnorm-eps-float32", _with("RMSNorm", _RMSNORM_WITH.replace(
        "self.eps = eps", "self.eps = torch.tensor(eps)").format(body="""
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight"""))),
]

# 05.10.2: lists instead of tensors (said what came back), and labels that are input_ids unchanged, no
# -100 at all (said so, not as if the end of turn had been hidden).
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:not-tensors", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    return list(ids), list(ids.masked_fill(torch.arange(T) >= lengths[:, None], -100))
"""),
    ("05.10.2:padding-labelled-pad-id", _PADDED + """
    return ids, ids.clone()
"""),
]

# The capstone: check_parts names each, never as "differs by X", a raw error or another mistake's text
# (a float64 input rotated in float32, rows cropped to fit, bfloat16 tables, the scores over sqrt(T_k),
# n_rep over T_k, eps under another keyword, the labels left unshifted).
_ROTATED = "torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)"
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rope-in-float32", _capstone().replace("wide = x.to(torch.promote_types(x.dtype, c.dtype))",
                                                    "wide = x.float()")),
    ("05.10.3:rope-rows-cropped", _capstone().replace(
        "c = cos[None, :, None, :] if cos.ndim == 2 else cos[:, :, None, :]",
        "c = cos[None, : xq.shape[1], None, :] if cos.ndim == 2 else cos[:, : xq.shape[1], None, :]").replace(
        "s = sin[None, :, None, :] if sin.ndim == 2 else sin[:, :, None, :]",
        "s = sin[None, : xq.shape[1], None, :] if sin.ndim == 2 else sin[:, : xq.shape[1], None, :]")),
    ("05.10.3:rope-bfloat16-tables", _capstone().replace(
        "wide = x.to(torch.promote_types(x.dtype, c.dtype))", "wide = x").replace(
        _ROTATED, "torch.stack([x0 * c.to(x.dtype) - x1 * s.to(x.dtype), "
                  "x0 * s.to(x.dtype) + x1 * c.to(x.dtype)], dim=-1)")),
    ("05.10.3:scale-by-t-k", _capstone().replace("/ math.sqrt(q.shape[-1])", "/ math.sqrt(k.shape[2])")),
    ("05.10.3:n-rep-zero", _capstone().replace("n_rep = q.shape[1] // k.shape[1]",
                                               "n_rep = q.shape[1] // k.shape[2]")),
    ("05.10.3:rmsnorm-eps-keyword", _capstone().replace(
        "def __init__(self, dim: int, eps: float = 1e-5) -> None:\n        super().__init__()\n"
        "        self.eps = eps",
        "def __init__(self, dim: int, epsilon: float = 1e-5) -> None:\n        super().__init__()\n"
        "        self.eps = epsilon")),
    ("05.10.3:labels-not-shifted", _capstone().replace("targets = labels[:, 1:].reshape(-1)",
                                                       "targets = labels.reshape(-1)")),
]

# 05.10.2: a missing return (which would be a raw TypeError) and labels cut at the first pad id in the
# row, each named, not told only the numbers.
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:no-return", _PADDED + """
    lengths = torch.tensor([len(s) for s in sequences])
    labels = ids.masked_fill(torch.arange(T) >= lengths[:, None], -100)
"""),
    ("05.10.2:cut-at-first-pad-id", _PADDED + """
    labels = ids.clone()
    for i in range(len(sequences)):
        row = ids[i].tolist()
        if pad_id in row:
            labels[i, row.index(pad_id) + 1:] = -100
    return ids, labels
"""),
]

# 05.10.1's whole bytes as q, d's bits read as an integer and the packed bytes cut one short; 05.10.2's
# extra column, input_ids padded with -100, lengths of the padded rows and -100 in the last column only:
# each named, never told only the numbers or another mistake's message.
MISTAKES["ex_05_10_1_solution"] += [
    ("05.10.1:whole-bytes", _Q4_1.format(weights="d * np.concatenate([packed, packed]) + m")),
    ("05.10.1:d-read-as-integer", _Q4_1.format(weights="d * q + m").replace(
        "    d, m = np.frombuffer(block[:4], dtype=np.float16).astype(np.float32)",
        "    d = np.float32(np.frombuffer(block[:2], dtype=np.uint16)[0])\n"
        "    m = np.frombuffer(block[2:4], dtype=np.float16).astype(np.float32)[0]")),
    ("05.10.1:packed-cut-short", _Q4_1.format(weights="d * q + m").replace("block[4:20]", "block[4:19]")),
]
_MASKED = "ids.masked_fill(torch.arange(T) >= lengths[:, None], -100)"
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:extra-column", _PADDED.replace("T = max(len(s) for s in sequences)",
                                             "T = max(len(s) for s in sequences) + 1") + f"""
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, {_MASKED}
"""),
    ("05.10.2:padded-with-minus-100", _PADDED.replace("[pad_id] * (T", "[-100] * (T") + """
    return ids, ids.clone()
"""),
    # the lengths of the rows after padding: every row is T long, so nothing is masked
    ("05.10.2:padding-labelled-pad-id", _PADDED + f"""
    lengths = torch.tensor([len(row) for row in ids.tolist()])
    return ids, {_MASKED}
"""),
    ("05.10.2:only-last-column", _PADDED + """
    labels = ids.clone()
    for i, s in enumerate(sequences):
        if len(s) < T:
            labels[i, -1] = -100
    return ids, labels
"""),
]

def _once(old: str, new: str) -> str:
    """The capstone's solution with its one ``old`` replaced by ``new``."""
    source = _capstone()
    assert source.count(old) == 1, old
    return source.replace(old, new)


# The capstone: RMSNorm's sum of squares over the first axis's length, its product
# kept in the input dtype (the weight cast to it; an in-place multiply or a cast after it), and RoPE
# tables with the angle doubled or the exponent over the tables' length (end = 16 = 2·d_h in the check,
# where it is also -i/d_h): check_parts names each as 05.2.2's and 05.3.1's tests do.
_RETURN_NORMED = "return normed.to(x.dtype) * self.weight"
MISTAKES["ex_05_10_3_solution"] += [
    ("05.10.3:rmsnorm-divisor-first-axis", _once("x32.pow(2).mean(-1, keepdim=True)",
                                                 "x32.pow(2).sum(-1, keepdim=True) / x.shape[0]")),
    ("05.10.3:rmsnorm-weight-cast",
     _once(_RETURN_NORMED, "return normed.to(x.dtype) * self.weight.to(x.dtype)")),
    ("05.10.3:rmsnorm-product-in-input-dtype",
     _once(_RETURN_NORMED, "return normed.to(x.dtype).mul_(self.weight)")),
    ("05.10.3:rmsnorm-product-in-input-dtype",
     _once(_RETURN_NORMED, "return (normed.to(x.dtype) * self.weight).to(x.dtype)")),
    ("05.10.3:rope-double-angle", _once("angles = torch.outer(", "angles = 2 * torch.outer(")),
    ("05.10.3:rope-exponent-over-end",
     _once("dtype=torch.float32) / head_dim)", "dtype=torch.float32) / end)")),
]

# 05.10.2: the ids equal to pad_id masked only after another pad: each row's first pad is kept.
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:first-pad-kept", """
import torch
def pad_and_label(sequences, pad_id):
    T = max(len(s) for s in sequences)
    ids = torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in sequences])
    is_pad = ids == pad_id
    after_pad = torch.cat([torch.zeros(len(sequences), 1, dtype=torch.bool), is_pad[:, :-1]], 1)
    return ids, ids.masked_fill(is_pad & after_pad, -100)
"""),
]

# 05.10.1: the low nibbles in reverse order: the weights 16..31 are right, so the message must quote a
# wrong one and name the order.
MISTAKES["ex_05_10_1_solution"] += [
    ("05.10.1:half-reversed",
     _Q4_1.replace("[packed & 0x0F, packed >> 4]", "[(packed & 0x0F)[::-1], packed >> 4]")
     .format(weights="d * q + m")),
]

# 05.10.2: padding labelled -1, a value the loss does not skip.
MISTAKES["ex_05_10_2_solution"] += [
    ("05.10.2:ignore-value-not-minus-100", _PADDED + f"""
    lengths = torch.tensor([len(s) for s in sequences])
    return ids, {_MASKED.replace("-100)", "-1)")}
"""),
]
