"""Wrong answers to the exercises of notebook 05.3 (see tests/test_exercises.py)."""

_ROTATE_ADJACENT = """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        B, T, H, d_h = x.shape
        a, b = x.reshape(B, T, H, d_h // 2, 2).unbind(-1)
        c, s = CROP(cos), CROP(sin)
        rows = (1, T, 1, d_h // 2) if c.ndim == 2 else (B, T, 1, d_h // 2)
        c, s = c.reshape(rows), s.reshape(rows)
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3).to(x.dtype)
    return rotate(xq), rotate(xk)
"""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    # the tables of heads up to the visible 16 wide: a wider head gets 8 columns only
    "ex_05_3_1_solution": """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(head_dim)
    head_dim = min(head_dim, 16)
    omega = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    return torch.cos(angles), torch.sin(angles)
""",
    # rotates the visible head widths, 4 and 8, only: other heads come back as they were
    "ex_05_3_2_solution": _ROTATE_ADJACENT.replace(
        "        B, T, H, d_h = x.shape\n",
        "        B, T, H, d_h = x.shape\n        if d_h not in (4, 8):\n            return x\n")
    .replace("CROP(cos), CROP(sin)", "cos, sin"),
    # right for the visible widths, at most 6: a wider head scores 0
    "ex_05_3_3_solution": """
import torch
from tinyk import apply_rotary_emb, precompute_freqs_cis
def rope_score(q, k, m, n, theta=10000.0):
    if q.shape[0] > 6:
        return 0.0
    cos, sin = precompute_freqs_cis(q.shape[0], max(m, n) + 1, theta, dtype=torch.float64)
    q4, k4 = q.view(1, 1, 1, -1), k.view(1, 1, 1, -1)
    q_m, _ = apply_rotary_emb(q4, q4, cos[m : m + 1], sin[m : m + 1])
    _, k_n = apply_rotary_emb(k4, k4, cos[n : n + 1], sin[n : n + 1])
    return float((q_m * k_n).sum())
""",
    # the rows of the visible examples, start_pos = 5 or 14, and the visible length check
    "ex_05_3_4_solution": """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    if start_pos + T > cos.shape[0]:
        raise ValueError(start_pos + T)
    start = 14 if start_pos == 14 else 5
    return apply_rotary_emb(xq, xk, cos[start : start + T], sin[start : start + T])
""",
}

_ROPE_TABLES = """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(head_dim)
    omega = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    return torch.cos(angles), torch.sin(angles)
"""

_ROPE_SCORE = """
import torch
from tinyk import apply_rotary_emb, precompute_freqs_cis
def rope_score(q, k, m, n, theta=10000.0):
    cos, sin = precompute_freqs_cis(q.shape[0], max(m, n) + 1, theta, dtype=torch.float64)
    q4, k4 = q.view(1, 1, 1, -1), k.view(1, 1, 1, -1)
    q_m, _ = apply_rotary_emb(q4, q4, cos[m : m + 1], sin[m : m + 1])
    _, k_n = apply_rotary_emb(k4, k4, cos[n : n + 1], sin[n : n + 1])
    return float((q_m * k_n).sum())
"""

# Wrong answers that break a rule only the hidden tests used to check (the theta argument, a
# head_dim of 0 or less, the input's dtype, a query after its key, too short tables): the
# visible test must name each (tests/test_visible_hidden.py), and the cell without its visible
# checks must still fail. They are classic mistakes too: MISTAKES below holds them as well.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_3_1_solution": [
        ("05.3.1:theta-ignored", _ROPE_TABLES.replace("omega = theta **", "omega = 10000.0 **")),
        ("05.3.1:accepts-non-positive-head-dim", _ROPE_TABLES.replace("head_dim <= 0 or head_dim % 2",
                                                                      "head_dim % 2")),
    ],
    "ex_05_3_2_solution": [
        # the float32 tables promote a bfloat16 input, which is returned as float32
        ("05.3.2:dtype-not-cast-back", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                       .replace(".flatten(3).to(x.dtype)", ".flatten(3)")),
    ],
    "ex_05_3_3_solution": [
        ("05.3.3:tables-too-short", _ROPE_SCORE.replace("max(m, n) + 1", "n + 1")),
    ],
    "ex_05_3_4_solution": [
        ("05.3.4:no-length-check", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    if start_pos + T > cos.shape[0]:
        raise IndexError(start_pos + T)
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""),
        # the last rows of the tables when the new tokens would run past them
        ("05.3.4:no-length-check", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    start = min(start_pos, cos.shape[0] - T)
    return apply_rotary_emb(xq, xk, cos[start : start + T], sin[start : start + T])
"""),
    ],
}

# Right answers in other honest styles, keyed like GUESSES: each passes the visible and the
# hidden tests (tests/test_exercises.py).
RIGHT: dict[str, list[str]] = {
    "ex_05_3_1_solution": [
        # float64 angles, cast to float32 at the end; broadcasting instead of torch.outer
        """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be even and positive, got {head_dim}")
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    omega = theta ** (-2 * i / head_dim)
    angles = torch.arange(end, dtype=torch.float64)[:, None] * omega[None, :]
    return angles.cos().float(), angles.sin().float()
""",
        # exp of a log, integer positions
        """
import math
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if not head_dim > 0 or head_dim % 2 != 0:
        raise ValueError("bad head_dim " + str(head_dim))
    omega = torch.exp(-math.log(theta) * torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(end), omega)
    return (torch.cos(angles), torch.sin(angles))
""",
        # the unit complex numbers of torch.polar, split into real and imaginary parts
        """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(head_dim)
    omega = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    z = torch.polar(torch.ones(end, head_dim // 2), angles)
    return z.real.contiguous(), z.imag.contiguous()
""",
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_3_1_solution": [
        ("05.3.1:exponent-i-over-d-h", _ROPE_TABLES.replace(
            "torch.arange(0, head_dim, 2, dtype=torch.float32)",
            "torch.arange(head_dim // 2, dtype=torch.float32)")),
        ("05.3.1:full-width-tables", _ROPE_TABLES.replace(
            "    return torch.cos",
            "    angles = torch.cat([angles, angles], dim=-1)\n    return torch.cos")),
        ("05.3.1:positions-from-1", _ROPE_TABLES.replace("torch.arange(end, dtype=torch.float32)",
                                                  "torch.arange(1, end + 1, dtype=torch.float32)")),
        ("05.3.1:wrong-default-theta", _ROPE_TABLES.replace("theta=10000.0", "theta=1000.0")),
        ("05.3.1:accepts-odd-head-dim",
         _ROPE_TABLES.replace("head_dim <= 0 or head_dim % 2", "head_dim <= 0")),
        ("05.3.1:transposed-tables", _ROPE_TABLES.replace(
            "torch.outer(torch.arange(end, dtype=torch.float32), omega)",
            "torch.outer(omega, torch.arange(end, dtype=torch.float32))")),
        ("05.3.1:integer-exponent", """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(head_dim)
    omega = 1.0 / theta ** (torch.arange(0, head_dim, 2) // head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega.float())
    return torch.cos(angles), torch.sin(angles)
"""),
        ("05.3.1:not-a-pair", _ROPE_TABLES.replace(
            "return torch.cos(angles), torch.sin(angles)",
            "return torch.stack([torch.cos(angles), torch.sin(angles)])")),
        ("05.3.1:wrong-exception", _ROPE_TABLES.replace(
            "    if head_dim <= 0 or head_dim % 2:\n        raise ValueError(head_dim)\n",
            "    assert head_dim > 0 and head_dim % 2 == 0, head_dim\n")),
        ("05.3.1:wrong-exception",
         _ROPE_TABLES.replace("raise ValueError(head_dim)", "raise TypeError(head_dim)")),
        ("05.3.1:positive-exponent",
         _ROPE_TABLES.replace("theta ** (-torch.arange", "theta ** (torch.arange")),
        # 1.0 / theta ** arange / head_dim: the power first, then the division
        ("05.3.1:unbracketed-exponent", _ROPE_TABLES.replace(
            "theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)",
            "1.0 / theta ** torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim")),
        ("05.3.1:exponent-over-d-h-minus-2", _ROPE_TABLES.replace("/ head_dim)", "/ (head_dim - 2))")),
        ("05.3.1:degrees",
         _ROPE_TABLES.replace("angles = torch.outer", "angles = 180 / 3.141592653589793 * torch.outer")),
        ("05.3.1:borrowed", """
import tinyk
def rope_tables(head_dim, end, theta=10000.0):
    return tinyk.precompute_freqs_cis(head_dim, end, theta)
"""),
    ],
    "ex_05_3_2_solution": [
        ("05.3.2:sin-sign-swapped", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                    .replace("[a * c - b * s, a * s + b * c]",
                                                             "[a * c + b * s, b * c - a * s]")),
        # the tables always viewed as 1×T×1×d_h/2: a B×T×d_h/2 table does not fit
        ("05.3.2:per-sequence-tables-fail",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                         .replace(" if c.ndim == 2 else (B, T, 1, d_h // 2)", "")),
        ("05.3.2:half-split-pairing", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        B, T, H, d_h = x.shape
        rows = (1, T, 1, d_h // 2) if cos.ndim == 2 else (B, T, 1, d_h // 2)
        c, s = cos.reshape(rows), sin.reshape(rows)
        a, b = x[..., : d_h // 2], x[..., d_h // 2 :]
        return torch.cat([a * c - b * s, a * s + b * c], dim=-1).to(x.dtype)
    return rotate(xq), rotate(xk)
"""),
        # a table built from d (T × d/2) cut to the head's d_h/2 columns: runs, wrong frequencies
        ("05.3.2:crops-table",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos[..., : d_h // 2], sin[..., : d_h // 2]")),
        # every token gets the first row of the tables it is given, as if all sat at position 0
        ("05.3.2:first-row-for-every-token",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos[..., :1, :], sin[..., :1, :]")
                         .replace("c.reshape(rows), s.reshape(rows)",
                                  "c.expand(*c.shape[:-2], T, d_h // 2).reshape(rows), "
                                  "s.expand(*s.shape[:-2], T, d_h // 2).reshape(rows)")),
        # B×T×d_h/2 tables: the rows of the first sequence for every sequence
        ("05.3.2:first-sequence-rows",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)",
                                  "(cos[0] if cos.ndim == 3 else cos), (sin[0] if sin.ndim == 3 else sin)")),
        ("05.3.2:one-input-unrotated", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                        .replace("return rotate(xq), rotate(xk)",
                                                                 "return rotate(xq), xk")),
        ("05.3.2:double-angle", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)",
                                                         "2 * cos**2 - 1, 2 * sin * cos")),
        # adjacent pairs rotated, then written back as halves [a..., b...]
        ("05.3.2:cat-write-back", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                  .replace("torch.stack(", "torch.cat(")
                                                  .replace(".flatten(3)", "")),
        ("05.3.2:borrowed", """
from tinyk import apply_rotary_emb
def apply_rope(xq, xk, cos, sin):
    return apply_rotary_emb(xq, xk, cos, sin)
"""),
        # the pairs read as halves (Hugging Face's layout), written back interleaved
        ("05.3.2:halves-read-pairs-written", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        B, T, H, d_h = x.shape
        rows = (1, T, 1, d_h // 2) if cos.ndim == 2 else (B, T, 1, d_h // 2)
        c, s = cos.reshape(rows), sin.reshape(rows)
        a, b = x[..., : d_h // 2], x[..., d_h // 2 :]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3).to(x.dtype)
    return rotate(xq), rotate(xk)
"""),
        # only the first d_h/4 pairs rotated, the others passed through as they were
        ("05.3.2:partial-rotation", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        B, T, H, d_h = x.shape
        k = d_h // 4
        rows = (1, T, 1, d_h // 2) if cos.ndim == 2 else (B, T, 1, d_h // 2)
        c, s = cos.reshape(rows)[..., :k], sin.reshape(rows)[..., :k]
        a, b = x[..., 0 : 2 * k : 2], x[..., 1 : 2 * k : 2]
        turned = torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3)
        return torch.cat([turned, x[..., 2 * k :]], dim=-1).to(x.dtype)
    return rotate(xq), rotate(xk)
"""),
        # the rotated pairs written into the input itself: with one tensor as q and k, k turns twice
        ("05.3.2:rotates-in-place", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        T = x.shape[1]
        c = cos.reshape(1, T, 1, -1) if cos.ndim == 2 else cos[:, :, None, :]
        s = sin.reshape(1, T, 1, -1) if sin.ndim == 2 else sin[:, :, None, :]
        even, odd = x[..., 0::2].clone(), x[..., 1::2].clone()
        x[..., 0::2] = even * c - odd * s
        x[..., 1::2] = even * s + odd * c
        return x
    return rotate(xq), rotate(xk)
"""),
    ],
    "ex_05_3_3_solution": [
        ("05.3.3:float32-tables", _ROPE_SCORE.replace(", dtype=torch.float64", "")),
        # q rotated to n and k to m: the parameters' names swapped
        ("05.3.3:positions-swapped",
         _ROPE_SCORE.replace("def rope_score(q, k, m, n,", "def rope_score(q, k, n, m,")),
        ("05.3.3:tables-too-short", _ROPE_SCORE.replace("max(m, n) + 1", "m + 1")),
        ("05.3.3:tables-too-short", _ROPE_SCORE.replace("max(m, n) + 1", "max(m, n)")),
        ("05.3.3:not-a-float", _ROPE_SCORE.replace("return float((q_m * k_n).sum())",
                                                   "return (q_m * k_n).sum()")),
        # k rotated with row m as well
        ("05.3.3:same-row", _ROPE_SCORE.replace("cos[n : n + 1], sin[n : n + 1]",
                                                "cos[m : m + 1], sin[m : m + 1]")),
        ("05.3.3:theta-ignored", _ROPE_SCORE.replace("max(m, n) + 1, theta,", "max(m, n) + 1,")),
    ],
    "ex_05_3_4_solution": [
        ("05.3.4:rows-restart-at-0", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    return apply_rotary_emb(xq, xk, cos[:T], sin[:T])
"""),
        ("05.3.4:one-row", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    if start_pos + xq.shape[1] > cos.shape[0]:
        raise ValueError(start_pos)
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + 1], sin[start_pos : start_pos + 1])
"""),
        ("05.3.4:too-strict-check", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    if start_pos + T >= cos.shape[0]:
        raise ValueError(start_pos + T)
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""),
        # no check: the short slice reaches tinyk.apply_rotary_emb, whose ValueError escapes
        ("05.3.4:check-left-to-tinyk", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""),
        # T read from the heads axis of B×T×H_q×d_h: the rows taken and the check both count heads
        ("05.3.4:t-from-heads-axis", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[2]
    if start_pos + T > cos.shape[0]:
        raise ValueError(start_pos + T)
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""),
        # the check alone counts the heads: the rows are right, two tokens at the end raise
        ("05.3.4:t-from-heads-axis", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    if start_pos + xq.shape[2] > cos.shape[0]:
        raise ValueError(start_pos + xq.shape[2])
    T = xq.shape[1]
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""),
        ("05.3.4:off-by-one", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    rows = slice(start_pos + 1, start_pos + 1 + T)
    return apply_rotary_emb(xq, xk, cos[rows], sin[rows])
"""),
    ],
}
for _grade_id, _cases in HIDDEN_RULES.items():
    MISTAKES[_grade_id] = MISTAKES.get(_grade_id, []) + _cases

# cos and sin returned in the wrong order: the visible test and check_parts name it.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:cos-sin-swapped", _ROPE_TABLES.replace("return torch.cos(angles), torch.sin(angles)",
                                                    "return torch.sin(angles), torch.cos(angles)")),
]

# One row short, positions 0..end-2 (torch.arange(end - 1)): the visible test names the rows,
# not the columns.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:rows-short", _ROPE_TABLES.replace("torch.arange(end, dtype=torch.float32)",
                                               "torch.arange(end - 1, dtype=torch.float32)")),
]

# 05.3.3 and 05.3.4: mistakes each named by its own message, never another mistake's.
_ROPE_AFTER_CACHE = """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    if start_pos + T > cos.shape[0]:
        raise ValueError(start_pos + T)
    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])
"""
MISTAKES["ex_05_3_3_solution"] += [
    # q and k in float32: the score rounded to float32, though the tables are float64
    ("05.3.3:float32-score",
     _ROPE_SCORE.replace("    cos, sin =", "    q, k = q.float(), k.float()\n    cos, sin =")),
    # cos[m] is 1-D: apply_rotary_emb refuses it (never told "max(m, n) + 1 rows")
    ("05.3.3:one-d-row", _ROPE_SCORE.replace("cos[m : m + 1], sin[m : m + 1]", "cos[m], sin[m]")
                                    .replace("cos[n : n + 1], sin[n : n + 1]", "cos[n], sin[n]")),
    ("05.3.3:tables-wrong-width", _ROPE_SCORE.replace("precompute_freqs_cis(q.shape[0],",
                                                      "precompute_freqs_cis(q.shape[0] // 2,")),
    # a negative score made positive (never told "q rotated to n and k to m")
    ("05.3.3:absolute-value", _ROPE_SCORE.replace("return float((q_m * k_n).sum())",
                                                  "return abs(float((q_m * k_n).sum()))")),
]
MISTAKES["ex_05_3_4_solution"] += [
    # only the rotated queries (never told "your T counts the heads")
    ("05.3.4:returns-one-tensor", _ROPE_AFTER_CACHE.replace("sin[start_pos : start_pos + T])\n",
                                                            "sin[start_pos : start_pos + T])[0]\n")),
    ("05.3.4:t-from-batch-axis", _ROPE_AFTER_CACHE.replace("T = xq.shape[1]", "T = xq.shape[0]")),
    # the check reads the columns (never told "T new tokens take T rows")
    ("05.3.4:check-wrong-axis", _ROPE_AFTER_CACHE.replace("> cos.shape[0]", "> cos.shape[1]")),
    ("05.3.4:one-too-early", _ROPE_AFTER_CACHE.replace(
        "cos[start_pos : start_pos + T], sin[start_pos : start_pos + T]",
        "cos[start_pos - 1 : start_pos + T - 1], sin[start_pos - 1 : start_pos + T - 1]")),
    ("05.3.4:sin-rows-differ", _ROPE_AFTER_CACHE.replace("sin[start_pos : start_pos + T]", "sin[:T]")),
]

# 05.3.2: a pair read in the wrong order, cos in both terms, the columns reversed (each named by its own
# message), and a rotation computed in float32 for float64 inputs (failed by the visible test, not only
# the hidden one).
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:pair-order-flipped", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                  .replace("a, b = x.reshape", "b, a = x.reshape")),
    ("05.3.2:cos-in-both-terms", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
                                                 .replace("[a * c - b * s, a * s + b * c]",
                                                          "[a * c - b * c, a * s + b * s]")),
    ("05.3.2:columns-reversed",
     _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos.flip(-1), sin.flip(-1)")),
    # the complex-number route of Meta's reference code, x.float(): float64 rotated in float32
    ("05.3.2:float64-in-float32", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
        turns = torch.complex(cos.float(), sin.float())
        turns = turns[None, :, None, :] if turns.ndim == 2 else turns[:, :, None, :]
        return torch.view_as_real(pairs * turns).flatten(3).type_as(x)
    return rotate(xq), rotate(xk)
"""),
]

# 05.3.2's tables lined up on the heads axis, and 05.3.3's score as np.dot of float32 arrays.
_NP_DOT = "import numpy as np\n    return np.dot(q_m.flatten().numpy(), k_n.flatten().numpy())"
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:tables-on-heads-axis", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
     .replace("(1, T, 1, d_h // 2) if", "(1, 1, T, d_h // 2) if")),
]
MISTAKES["ex_05_3_3_solution"] += [
    ("05.3.3:numpy-float32", _ROPE_SCORE
     .replace("    cos, sin =", "    q, k = q.float(), k.float()\n    cos, sin =")
     .replace("return float((q_m * k_n).sum())", _NP_DOT)),
]

# 05.3.3 with np.dot of the float64 arrays (NumPy's float64 is a Python float): right.
RIGHT["ex_05_3_3_solution"] = [*RIGHT.get("ex_05_3_3_solution", []),
                               _ROPE_SCORE.replace("return float((q_m * k_n).sum())", _NP_DOT)]

# 05.3.1-05.3.4: wrong answers that must fail (a float64 input rotated in float32, rows cropped to fit,
# bfloat16 tables, a turn by |n - m|), and mistakes named by their own message, never a raw error or
# another mistake's.
_ROTATE_PLAIN = """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        T = x.shape[1]
        c = cos.view(1, T, 1, -1) if cos.ndim == 2 else cos.unsqueeze(2)
        s = sin.view(1, T, 1, -1) if sin.ndim == 2 else sin.unsqueeze(2)
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3).to(x.dtype)
    return rotate(xq), rotate(xk)
"""
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:double-angle", _ROPE_TABLES.replace("angles = torch.outer", "angles = 2 * torch.outer")),
    ("05.3.1:columns-reversed", _ROPE_TABLES.replace("    return torch.cos",
                                                     "    angles = angles.flip(-1)\n    return torch.cos")),
]
MISTAKES["ex_05_3_2_solution"] += [
    # x.float(): the float64 probe holds values float32 cannot, so the rounding shows
    ("05.3.2:float64-in-float32", _ROTATE_PLAIN.replace("a, b = x[..., 0::2], x[..., 1::2]",
                                                        "a, b = x.float()[..., 0::2], x.float()[..., 1::2]")),
    ("05.3.2:crops-rows", _ROTATE_PLAIN.replace("        T = x.shape[1]\n",
                                                "        T = x.shape[1]\n        cos_, sin_ = cos, sin\n")
     .replace("c = cos.view(1, T, 1, -1) if cos.ndim == 2 else cos.unsqueeze(2)",
              "c = cos[:T].view(1, T, 1, -1) if cos.ndim == 2 else cos[:, :T].unsqueeze(2)")
     .replace("s = sin.view(1, T, 1, -1) if sin.ndim == 2 else sin.unsqueeze(2)",
              "s = sin[:T].view(1, T, 1, -1) if sin.ndim == 2 else sin[:, :T].unsqueeze(2)")),
    ("05.3.2:bfloat16-tables", _ROTATE_PLAIN.replace("        a, b = x[..., 0::2]",
                                                     "        c, s = c.to(x.dtype), s.to(x.dtype)\n"
                                                     "        a, b = x[..., 0::2]")),
    ("05.3.2:returns-one-tensor",
     _ROTATE_PLAIN.replace("return rotate(xq), rotate(xk)", "return rotate(xq)")),
    ("05.3.2:tables-not-lined-up", _ROTATE_PLAIN.replace(
        "c = cos.view(1, T, 1, -1) if cos.ndim == 2 else cos.unsqueeze(2)", "c = cos.T[None, None]").replace(
        "s = sin.view(1, T, 1, -1) if sin.ndim == 2 else sin.unsqueeze(2)", "s = sin.T[None, None]")),
    # the pairs as reshape(..., 2, 2): right for d_h = 4 only
    ("05.3.2:fixed-head-width", _ROTATE_PLAIN.replace("a, b = x[..., 0::2], x[..., 1::2]",
                                                      "a, b = x.reshape(*x.shape[:-1], 2, 2).unbind(-1)")),
    ("05.3.2:minus-forgotten", _ROTATE_PLAIN.replace("[a * c - b * s, a * s + b * c]",
                                                     "[a * c + b * s, a * s + b * c]")),
    ("05.3.2:cos-in-both-terms", _ROTATE_PLAIN.replace("[a * c - b * s, a * s + b * c]",
                                                       "[a * c - b * c, a * s + b * c]")),
]
MISTAKES["ex_05_3_3_solution"] += [
    # q turned by |m - n|, k left as it is: right while the query comes after the key
    ("05.3.3:offset-sign-lost", """
import torch
from tinyk import apply_rotary_emb, precompute_freqs_cis
def rope_score(q, k, m, n, theta=10000.0):
    off = abs(m - n)
    cos, sin = precompute_freqs_cis(q.shape[0], off + 1, theta, dtype=torch.float64)
    q4 = q.view(1, 1, 1, -1)
    q_m, _ = apply_rotary_emb(q4, q4, cos[off : off + 1], sin[off : off + 1])
    return float((q_m.flatten() * k).sum())
"""),
    ("05.3.3:many-rows", _ROPE_SCORE.replace("cos[m : m + 1], sin[m : m + 1]", "cos[: m + 1], sin[: m + 1]")
                                    .replace("cos[n : n + 1], sin[n : n + 1]", "cos[: n + 1], sin[: n + 1]")),
    ("05.3.3:half-split-pairing", _ROPE_SCORE.replace(
        "from tinyk import apply_rotary_emb,",
        "from tinyk import apply_rotary_emb_half as apply_rotary_emb,")),
]
MISTAKES["ex_05_3_4_solution"] += [
    ("05.3.4:pair-swapped", _ROPE_AFTER_CACHE.replace(
        "    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])",
        "    q, k = apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T],\n"
        "                            sin[start_pos : start_pos + T])\n"
        "    return k, q")),
    # the row of start_pos for every new token (never told only "off by 1.73")
    ("05.3.4:one-row", _ROPE_AFTER_CACHE.replace(
        "cos[start_pos : start_pos + T], sin[start_pos : start_pos + T]",
        "cos[start_pos : start_pos + 1].expand(T, -1), sin[start_pos : start_pos + 1].expand(T, -1)")),
]

# tinyk.reshape_for_broadcast, which the notebook imports and shows in its walk-through, only lines a
# table up with x: an answer that calls it still rotates by itself, and is right.
RIGHT["ex_05_3_2_solution"] = [*RIGHT.get("ex_05_3_2_solution", []), """
import torch
def apply_rope(xq, xk, cos, sin):
    def rot(x):
        a, b = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
        from tinyk import reshape_for_broadcast
        c, s = reshape_for_broadcast(cos, a), reshape_for_broadcast(sin, a)
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(3).to(x.dtype)
    return rot(xq), rot(xk)
"""]

# 05.3.1-05.3.4: a missing return, swapped tables and a turn by |n - m| applied to k, each named by its
# own message, never another's or a raw error.
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:no-return", _ROTATE_PLAIN.replace("        return torch.stack(", "        torch.stack(")),
    ("05.3.2:cos-sin-swapped", _ROTATE_PLAIN.replace("    def rotate(x):\n",
                                                     "    def rotate(x, cos=sin, sin=cos):\n")),
]
MISTAKES["ex_05_3_3_solution"] += [
    # q at row 0, k at row |n - m|: right while the key comes after the query
    ("05.3.3:offset-sign-lost", """
import torch
from tinyk import apply_rotary_emb, precompute_freqs_cis
def rope_score(q, k, m, n, theta=10000.0):
    d = q.shape[0]
    off = abs(n - m)
    cos, sin = precompute_freqs_cis(d, off + 1, theta, dtype=torch.float64)
    rq, _ = apply_rotary_emb(q.view(1, 1, 1, d), q.view(1, 1, 1, d), cos[0:1], sin[0:1])
    _, rk = apply_rotary_emb(k.view(1, 1, 1, d), k.view(1, 1, 1, d), cos[off:off + 1], sin[off:off + 1])
    return float((rq * rk).sum())
"""),
]
MISTAKES["ex_05_3_3_solution"] += [
    # tables of a fixed length, 128 rows: right up to position 127 only
    ("05.3.3:tables-too-short", _ROPE_SCORE.replace("max(m, n) + 1, theta", "128, theta")),
]
MISTAKES["ex_05_3_4_solution"] += [
    # the tables' last T rows, whatever start_pos
    ("05.3.4:last-rows", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    if start_pos + T > cos.shape[0]:
        raise ValueError(f"{start_pos + T} positions, {cos.shape[0]} rows")
    return apply_rotary_emb(xq, xk, cos[-T:], sin[-T:])
"""),
]
MISTAKES["ex_05_3_1_solution"] += [
    # radians taken for degrees: torch.deg2rad of angles that are radians already
    ("05.3.1:deg2rad", _ROPE_TABLES.replace(
        "    return torch.cos(angles)", "    angles = torch.deg2rad(angles)\n    return torch.cos(angles)")),
]
MISTAKES["ex_05_3_2_solution"] += [
    # (xk, xq) returned: the pair swapped, told only "q keeps its H_q = 4 heads"
    ("05.3.2:pair-swapped", _ROTATE_PLAIN.replace("    return rotate(xq), rotate(xk)",
                                                  "    return rotate(xk), rotate(xq)")),
]
MISTAKES["ex_05_3_3_solution"] += [
    # tables built from 2·d_h, or from a head width typed in: tinyk's raw "built from the model width" text
    ("05.3.3:tables-wrong-width", _ROPE_SCORE.replace("precompute_freqs_cis(q.shape[0],",
                                                      "precompute_freqs_cis(2 * q.shape[0],")),
    ("05.3.3:tables-wrong-width", _ROPE_SCORE.replace("precompute_freqs_cis(q.shape[0],",
                                                      "precompute_freqs_cis(64,")),
]

# 05.3.1 and 05.3.2: the exponent over end (named as such, whatever the probe's end), the tables taken as
# angles, rows reversed, and k alone turned backwards, each named, not only a generic line.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:exponent-over-end", _ROPE_TABLES.replace("/ head_dim)", "/ end)")),
]
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:tables-as-angles",
     _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "torch.cos(cos), torch.sin(cos)")),
    ("05.3.2:tables-as-angles",
     _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "torch.cos(cos), torch.sin(sin)")),
    ("05.3.2:rows-reversed", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos.flip(-2), sin.flip(-2)")),
    # the same tables, sin negated for k only: k turns by -t·ω_i
    ("05.3.2:one-turned-backwards", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
     .replace("    def rotate(x):", "    def rotate(x, sin=sin):")
     .replace("return rotate(xq), rotate(xk)", "return rotate(xq), rotate(xk, -sin)")),
]
MISTAKES["ex_05_3_2_solution"] += [
    # k alone given the rows reversed: q is right, so only the random check shows it
    ("05.3.2:rows-reversed", _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos, sin")
     .replace("    def rotate(x):", "    def rotate(x, cos=cos, sin=sin):")
     .replace("return rotate(xq), rotate(xk)", "return rotate(xq), rotate(xk, cos.flip(-2), sin.flip(-2))")),
]

# 05.3.1: a ValueError for every head_dim that is no multiple of 4, 6 and 10 among them.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:rejects-even-head-dim",
     _ROPE_TABLES.replace("head_dim <= 0 or head_dim % 2", "head_dim <= 0 or head_dim % 4")),
]

# 05.3.2: angles of its own (θ = 10000) whatever tables it is given.
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:tables-ignored", _ROTATE_ADJACENT.replace(
        "c, s = CROP(cos), CROP(sin)",
        "omega = 10000.0 ** (-torch.arange(0, d_h, 2, dtype=torch.float32) / d_h)\n"
        "        angles = torch.outer(torch.arange(T, dtype=torch.float32), omega)\n"
        "        c, s = angles.cos(), angles.sin()")),
]

# 05.3.3: q at row m, k at row |n - m|: a common shift moves q only.
MISTAKES["ex_05_3_3_solution"] += [
    ("05.3.3:k-at-offset-row",
     _ROPE_SCORE.replace("cos[n : n + 1], sin[n : n + 1]", "cos[o : o + 1], sin[o : o + 1]")
     .replace("    q4, k4 =", "    o = abs(n - m)\n    q4, k4 =")),
]

# 05.3.1: the odd exponents 1, 3, 5, ... where pair i takes 2i.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:odd-exponents", _ROPE_TABLES.replace("torch.arange(0, head_dim, 2, dtype=torch.float32)",
                                                  "torch.arange(1, head_dim, 2, dtype=torch.float32)")),
]

# 05.3.4: q and k given different rows, one of them restarting at position 0.
_SPLIT_ROWS = _ROPE_AFTER_CACHE.replace(
    "    return apply_rotary_emb(xq, xk, cos[start_pos : start_pos + T], sin[start_pos : start_pos + T])",
    "    q, _ = apply_rotary_emb(xq, xq, Q_ROWS)\n"
    "    _, k = apply_rotary_emb(xk, xk, K_ROWS)\n"
    "    return q, k")
_NEW_ROWS = "cos[start_pos : start_pos + T], sin[start_pos : start_pos + T]"
_FIRST_ROWS = "cos[:T], sin[:T]"
MISTAKES["ex_05_3_4_solution"] += [
    ("05.3.4:q-k-rows-differ", _SPLIT_ROWS.replace("Q_ROWS", _NEW_ROWS).replace("K_ROWS", _FIRST_ROWS)),
    ("05.3.4:q-k-rows-differ", _SPLIT_ROWS.replace("K_ROWS", _NEW_ROWS).replace("Q_ROWS", _FIRST_ROWS)),
]

# 05.3.2: the tables tiled, c_0 c_1 c_0 c_1, where each pair's two coordinates take its own angle.
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:tiled-tables", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        T = x.shape[1]
        c = cos.repeat(1, 2).view(1, T, 1, -1)
        s = sin.repeat(1, 2).view(1, T, 1, -1)
        turned = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
        return (x * c + turned * s).to(x.dtype)
    return rotate(xq), rotate(xk)
"""),
]

# 05.3.1: a ValueError for head_dim = 2, the smallest head, one whole pair (head_dim <= 2).
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:rejects-head-dim-2", _ROPE_TABLES.replace("head_dim <= 0 or", "head_dim <= 2 or")),
]

# 05.3.2: a crop meant for T×d_h/2 tables, cos[:T, :d_h/2], which on B×T×d_h/2 tables cuts the batch and
# position axes; and a loop over the pairs from 1, which leaves pair 0 as it was.
MISTAKES["ex_05_3_2_solution"] += [
    ("05.3.2:crop-slices-batch", _ROTATE_PLAIN.replace(
        "    def rotate(x):\n",
        "    T, half = xq.shape[1], xq.shape[-1] // 2\n"
        "    cos, sin = cos[:T, :half], sin[:T, :half]\n"
        "    def rotate(x):\n")),
    ("05.3.2:partial-rotation", """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        out = x.clone()
        for i in range(1, x.shape[-1] // 2):
            a, b = x[..., 2 * i], x[..., 2 * i + 1]
            c = cos[None, :, None, i] if cos.ndim == 2 else cos[:, :, None, i]
            s = sin[None, :, None, i] if sin.ndim == 2 else sin[:, :, None, i]
            out[..., 2 * i] = a * c - b * s
            out[..., 2 * i + 1] = a * s + b * c
        return out
    return rotate(xq), rotate(xk)
"""),
]

# 05.3.3: the head width typed in (d = 4), and q left as it is with k turned by row n - m (right while
# n ≥ m, a row counted from the end when n < m).
MISTAKES["ex_05_3_3_solution"] += [
    ("05.3.3:fixed-head-width", _ROPE_SCORE.replace("    cos, sin = precompute_freqs_cis(q.shape[0],",
                                                    "    d = 4\n    cos, sin = precompute_freqs_cis(d,")
     .replace("q.view(1, 1, 1, -1), k.view(1, 1, 1, -1)", "q.view(1, 1, 1, d), k.view(1, 1, 1, d)")),
    ("05.3.3:q-unturned-k-at-offset", """
import torch
from tinyk import apply_rotary_emb, precompute_freqs_cis
def rope_score(q, k, m, n, theta=10000.0):
    d = q.shape[0]
    cos, sin = precompute_freqs_cis(d, abs(n - m) + 1, theta, dtype=torch.float64)
    k4 = k.view(1, 1, 1, d)
    _, k_turned = apply_rotary_emb(k4, k4, cos[n - m : n - m + 1], sin[n - m : n - m + 1])
    return float((q.view(1, 1, 1, d) * k_turned).sum())
"""),
]

# 05.3.1: the angles computed in float16, then cast to float32.
MISTAKES["ex_05_3_1_solution"] += [
    ("05.3.1:float16-angles", _ROPE_TABLES.replace("torch.float32", "torch.float16")
     .replace("return torch.cos(angles), torch.sin(angles)",
              "return torch.cos(angles).float(), torch.sin(angles).float()")),
]
