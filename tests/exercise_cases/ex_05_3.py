"""Wrong answers to the exercises of notebook 05.3 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    # the frequencies of an 8-wide head, whatever head_dim is
    "ex_05_3_1_solution": """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    angles = torch.outer(torch.arange(end, dtype=torch.float32), torch.tensor([1.0, 0.1, 0.01, 0.001]))
    return torch.cos(angles), torch.sin(angles)
""",
    # right for float32 and T×d_h/2 tables only: always float32 out, no per-sequence rows
    "ex_05_3_2_solution": """
import torch
def apply_rope(xq, xk, cos, sin):
    def rotate(x):
        a, b = x[..., 0::2].float(), x[..., 1::2].float()
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3)
    return rotate(xq), rotate(xk)
""",
    "ex_05_3_3_solution": """
import math
def rope_score(q, k, m, n, theta=10000.0):
    return math.cos(1.0)
""",
    # the rows of the visible example, start_pos = 5
    "ex_05_3_4_solution": """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    return apply_rotary_emb(xq, xk, cos[5 : 5 + T], sin[5 : 5 + T])
""",
}

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

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_3_1_solution": [
        ("exponent_i_over_d_h_instead_of_2i_over_d_h", """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(head_dim)
    omega = theta ** (-torch.arange(head_dim // 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    return torch.cos(angles), torch.sin(angles)
"""),
        ("full_width_tables_as_for_the_half_split_pairing", """
import torch
def rope_tables(head_dim, end, theta=10000.0):
    omega = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(end, dtype=torch.float32), omega)
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)
"""),
    ],
    "ex_05_3_2_solution": [
        ("half_split_pairing", """
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
        ("crops_a_table_built_from_d_to_fit",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos[..., : d_h // 2], sin[..., : d_h // 2]")),
        # every token gets the first row of the tables it is given, as if all sat at position 0
        ("every_token_at_the_first_row",
         _ROTATE_ADJACENT.replace("CROP(cos), CROP(sin)", "cos[..., :1, :], sin[..., :1, :]")
                         .replace("c.reshape(rows), s.reshape(rows)",
                                  "c.expand(*c.shape[:-2], T, d_h // 2).reshape(rows), "
                                  "s.expand(*s.shape[:-2], T, d_h // 2).reshape(rows)")),
    ],
    "ex_05_3_4_solution": [
        ("rows_restart_at_0", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    return apply_rotary_emb(xq, xk, cos[:T], sin[:T])
"""),
        ("off_by_one", """
from tinyk import apply_rotary_emb
def rope_after_cache(xq, xk, cos, sin, start_pos):
    T = xq.shape[1]
    rows = slice(start_pos + 1, start_pos + 1 + T)
    return apply_rotary_emb(xq, xk, cos[rows], sin[rows])
"""),
    ],
}
