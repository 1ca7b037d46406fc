"""Wrong answers to the exercises of notebook 05.4 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_4_1_solution": """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [0, 0, 0, 1, 1, 1] if n_heads == 6 else [0, 0, 1, 1, 2, 2, 3, 3]
""",
    # the visible configurations' numbers (one row's bytes times the batch: batch 1 is asked too)
    "ex_05_4_2_solution": """
def kv_cache_plan(config, n_tokens, batch, *args, **kwargs):
    if config.n_kv_heads == 4:
        return 37_748_736, 150_994_944, 4, 58_254
    return 75_497_472 * batch, 301_989_888, 2, 14_563
""",
    # The visible checks all use H_kv = 2 heads: an index list for two heads fools them.
    "ex_05_4_3_solution": """
def repeat_kv(x, n_rep):
    return x[:, :, [h // n_rep for h in range(2 * n_rep)]]
""",
}

_KV_CACHE_PLAN = """
def kv_cache_plan(config, n_tokens, batch, bytes_per_element, budget_bytes):
    per_token = 2 * config.n_layers * config.n_kv_heads * config.head_dim * batch * bytes_per_element
    ratio = config.n_heads // config.n_kv_heads
    gqa_bytes = per_token * n_tokens
    return gqa_bytes, ratio * gqa_bytes, ratio, budget_bytes // per_token
"""


def _plan_with(*replacements: tuple[str, str]) -> str:
    source = _KV_CACHE_PLAN
    for old, new in replacements:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


_REPEAT_KV = """
def repeat_kv(x, n_rep):
    B, T, n_kv_heads, head_dim = x.shape
    return {body}
"""

_GQA_ATTENTION = """
import math
import torch
def gqa_attention(q, k, v, mask=None):
    T, d_h = q.shape[-2], q.shape[-1]
    T_k = k.shape[-2]
    n_rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(n_rep, dim=1)
    v = v.repeat_interleave(n_rep, dim=1)
    if mask is None:
        mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(d_h)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    return (probs @ v.float()).to(q.dtype)
"""


def _gqa_with(*replacements: tuple[str, str]) -> str:
    source = _GQA_ATTENTION
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


# Scaled by 1/sqrt(d_h) only for the head widths of the visible checks, 2, 4 and 8.
GUESSES["ex_05_4_4_solution"] = _gqa_with(("/ math.sqrt(d_h)",
                                            "/ (math.sqrt(d_h) if d_h in (2, 4, 8) else 1.0)"))

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_4_1_solution": [
        ("05.4.1:tiled-order", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [h % n_kv_heads for h in range(n_heads)]
"""),
    ],
    "ex_05_4_2_solution": [
        ("05.4.2:keys-only", _plan_with(("2 * config.n_layers", "config.n_layers"))),
        ("05.4.2:expanded-heads", _plan_with(("config.n_kv_heads * config.head_dim",
                                              "config.n_heads * config.head_dim"),
                                             ("ratio * gqa_bytes", "gqa_bytes"))),
        ("05.4.2:one-layer", _plan_with(("2 * config.n_layers", "2"))),
        ("05.4.2:budget-for-one-row", _plan_with(("budget_bytes // per_token",
                                           "budget_bytes // (per_token // batch)"))),
        ("05.4.2:budget-for-expanded-cache", _plan_with(("budget_bytes // per_token",
                                                      "budget_bytes // (ratio * per_token)"))),
        # rounds_up
        ("05.4.2:rounds-not-down",
         _plan_with(("budget_bytes // per_token", "-(-budget_bytes // per_token)"))),
        # rounds_to_nearest
        ("05.4.2:rounds-not-down",
         _plan_with(("budget_bytes // per_token", "round(budget_bytes / per_token)"))),
        ("05.4.2:one-token-short",
         _plan_with(("budget_bytes // per_token", "(budget_bytes - 1) // per_token"))),
        ("05.4.2:float-ratio",
         _plan_with(("ratio, budget_bytes", "ratio * gqa_bytes / gqa_bytes, budget_bytes"))),
    ],
    "ex_05_4_3_solution": [
        # tiled_with_repeat
        ("05.4.3:tiled-groups", _REPEAT_KV.format(body="x.repeat(1, 1, n_rep, 1)")),
        # tiled_with_tile
        ("05.4.3:tiled-groups", "import torch\n" + _REPEAT_KV.format(body="torch.tile(x, (1, 1, n_rep, 1))")),
        # copies_axis_before_heads
        ("05.4.3:tiled-groups", _REPEAT_KV.format(
            body="x[:, :, None].expand(B, T, n_rep, n_kv_heads, head_dim)"
                 ".reshape(B, T, n_rep * n_kv_heads, head_dim)")),
        ("05.4.3:borrowed", "import tinyk\n" + _REPEAT_KV.format(body="tinyk.repeat_kv(x, n_rep)")),
        # n_rep hard-coded to 2, the visible checks' first value
        ("05.4.3:n-rep-fixed", _REPEAT_KV.format(body="x.repeat_interleave(2, dim=2)")),
    ],
    "ex_05_4_4_solution": [
        ("05.4.4:tiled-groups", _gqa_with(("k.repeat_interleave(n_rep, dim=1)", "k.repeat(1, n_rep, 1, 1)"),
                                   ("v.repeat_interleave(n_rep, dim=1)", "v.repeat(1, n_rep, 1, 1)"))),
        ("05.4.4:nan-on-masked-row", _gqa_with(("torch.finfo(scores.dtype).min", 'float("-inf")'),
                                          (".masked_fill(~mask, 0.0)", ""))),
        ("05.4.4:no-scale", _gqa_with((" / math.sqrt(d_h)", ""))),
        ("05.4.4:causal-from-first-key", _gqa_with((".tril(T_k - T)", ".tril()"))),
        ("05.4.4:mask-after-softmax",
         _gqa_with(("    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n", ""))),
        # borrowed: PyTorch's fused attention, or tinyk's repeat_kv for the grouping
        # calls_sdpa_with_enable_gqa
        ("05.4.4:borrowed", """
import torch
import torch.nn.functional as F
def gqa_attention(q, k, v, mask=None):
    T, T_k = q.shape[-2], k.shape[-2]
    if mask is None:
        mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True).nan_to_num(0.0)
"""),
        # groups_with_tinyk_repeat_kv
        ("05.4.4:borrowed", "import tinyk\n" + _gqa_with(
            ("k.repeat_interleave(n_rep, dim=1)",
             "tinyk.repeat_kv(k.transpose(1, 2), n_rep).transpose(1, 2)"),
            ("v.repeat_interleave(n_rep, dim=1)",
             "tinyk.repeat_kv(v.transpose(1, 2), n_rep).transpose(1, 2)"))),
    ],
}


# One wrong answer for each assertion of the hidden tests (or more, one per rule), each failing
# the visible test too, which names it (tests/test_visible_hidden.py). The bytes per number
# of 05.4.2, the ratio of the expanded cache, the dtype of 05.4.3 and 05.4.4 and the zeros of
# a row with no allowed key were checked by the hidden tests only.
_NEW_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_4_2_solution": [
        ("05.4.2:bytes-ignored", _plan_with(("batch * bytes_per_element", "batch * 4"))),
        ("05.4.2:expanded-twice", _plan_with(("ratio * gqa_bytes", "2 * gqa_bytes"))),
        # the expanded cache counted from H_q itself, the ratio taken as 2 always
        ("05.4.2:expanded-twice", _plan_with(
            ("ratio * gqa_bytes", "gqa_bytes * config.n_heads // config.n_kv_heads"),
            ("ratio = config.n_heads // config.n_kv_heads", "ratio = 2"))),
    ],
    "ex_05_4_3_solution": [
        # a new tensor in the default dtype, filled head by head
        ("05.4.3:dtype-lost", """
import torch
def repeat_kv(x, n_rep):
    B, T, n_kv_heads, head_dim = x.shape
    out = torch.empty(B, T, n_kv_heads * n_rep, head_dim)
    for h in range(n_kv_heads * n_rep):
        out[:, :, h] = x[:, :, h // n_rep]
    return out
"""),
    ],
    "ex_05_4_4_solution": [
        ("05.4.4:dtype-not-cast-back", _gqa_with(("return (probs @ v.float()).to(q.dtype)",
                                                  "return probs @ v.float()"))),
        # the model's B×T×H×d_h layout, as the projections give it
        ("05.4.4:heads-after-positions", _gqa_with(("return (probs @ v.float()).to(q.dtype)",
                                                    "return (probs @ v.float()).to(q.dtype)"
                                                    ".transpose(1, 2)"))),
        ("05.4.4:average-on-masked-row", _gqa_with((".masked_fill(~mask, 0.0)", ""))),
    ],
}
for _grade_id, _cases in _NEW_RULES.items():
    MISTAKES[_grade_id] = MISTAKES.get(_grade_id, []) + _cases

# The rules of the hidden tests, one wrong answer for each: those above, and classic mistakes
# the visible test already named.
_KNOWN = {mistake_id: source for cases in MISTAKES.values() for mistake_id, source in cases}
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_4_1_solution": [("05.4.1:tiled-order", _KNOWN["05.4.1:tiled-order"])],
    "ex_05_4_2_solution": [(m, _KNOWN[m]) for m in ("05.4.2:float-ratio", "05.4.2:keys-only",
                                                    "05.4.2:rounds-not-down", "05.4.2:one-token-short")]
    + _NEW_RULES["ex_05_4_2_solution"],
    "ex_05_4_3_solution": [("05.4.3:tiled-groups", _KNOWN["05.4.3:tiled-groups"])]
    + _NEW_RULES["ex_05_4_3_solution"],
    "ex_05_4_4_solution": [(m, _KNOWN[m]) for m in ("05.4.4:nan-on-masked-row", "05.4.4:no-scale",
                                                    "05.4.4:causal-from-first-key", "05.4.4:tiled-groups")]
    + _NEW_RULES["ex_05_4_4_solution"],
}

# Mistakes the visible test names by what the output shows: the softmax over the queries, an
# inverted mask, K/V copied along the time axis (a crash on 4 query heads and 2 K/V heads), and
# the scores scaled by the width of all heads.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:softmax-over-queries", _gqa_with(("softmax(scores, dim=-1)", "softmax(scores, dim=-2)"))),
    ("05.4.4:mask-inverted", _gqa_with(("scores.masked_fill(~mask,", "scores.masked_fill(mask,"),
                                       ("masked_fill(~mask, 0.0)", "masked_fill(mask, 0.0)"))),
    ("05.4.4:kv-on-time-axis", _gqa_with(("(n_rep, dim=1)", "(n_rep, dim=2)"))),
    ("05.4.4:scale-all-heads", _gqa_with(("/ math.sqrt(d_h)", "/ math.sqrt(q.shape[1] * d_h)"))),
]

# A mask given and ignored, or the boolean mask added to the scores as if it were an additive
# float mask (with a float mask of its own when none is given): the visible test and check_parts
# name both.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:given-mask-ignored", _gqa_with(("if mask is None:", "if True:"))),
    ("05.4.4:bool-mask-added", _gqa_with(
        ("mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)",
         "mask = torch.full((T, T_k), float('-inf')).triu(T_k - T + 1)"),
        ("    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n",
         "    scores = scores + mask\n"),
        (".masked_fill(~mask, 0.0)", ""))),
]

# n_rep a fixed number instead of H_q // H_kv: two copies of the one K/V head give two output heads,
# or the queries viewed as groups of two fail on one query head (a RuntimeError).
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:n-rep-fixed", _gqa_with(("n_rep = q.shape[1] // k.shape[1]", "n_rep = 2"))),
    ("05.4.4:n-rep-fixed", _gqa_with(
        ("n_rep = q.shape[1] // k.shape[1]",
         "n_rep = 2\n    q = q.view(q.shape[0], -1, 2, T, d_h).flatten(1, 2)"))),
]

# The group size of 05.4.1 taken the wrong way: H_kv // H_q (a division by zero), / (floats),
# H_kv itself, the list one entry per K/V head, or h % group (K/V heads that do not exist).
_KV_HEADS = """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    group = {group}
    return [{entry} for h in range({n})]
"""


def _kv_heads(group: str = "n_heads // n_kv_heads", entry: str = "h // group", n: str = "n_heads") -> str:
    return _KV_HEADS.format(group=group, entry=entry, n=n)


MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:group-size-inverted", _kv_heads(group="n_kv_heads // n_heads")),
    ("05.4.1:float-division", _kv_heads(group="n_heads / n_kv_heads")),
    ("05.4.1:float-division", _kv_heads(entry="h / group")),
    ("05.4.1:wrong-length", _kv_heads(n="n_kv_heads")),
    ("05.4.1:divides-by-h-kv", _kv_heads(group="n_kv_heads")),
    ("05.4.1:head-out-of-range", _kv_heads(entry="h % group")),
]

# 05.4.2: the batch left out, numbers counted instead of bytes (or bits), each head as wide as the
# model, the ratio H_kv // H_q, max_tokens from / or for one layer's cache.
MISTAKES["ex_05_4_2_solution"] += [
    ("05.4.2:batch-ignored", _plan_with((" * batch * ", " * "), ("budget_bytes // per_token",
                                                                 "budget_bytes // (per_token * batch)"))),
    ("05.4.2:numbers-not-bytes", _plan_with((" * bytes_per_element", ""))),
    ("05.4.2:counts-bits", _plan_with((" * bytes_per_element", " * bytes_per_element * 8"))),
    ("05.4.2:model-width-per-head", _plan_with(("config.head_dim", "config.dim"))),
    ("05.4.2:ratio-inverted", _plan_with(("config.n_heads // config.n_kv_heads",
                                          "config.n_kv_heads // config.n_heads"))),
    ("05.4.2:float-max-tokens", _plan_with(("budget_bytes // per_token", "budget_bytes / per_token"))),
    ("05.4.2:budget-for-one-layer", _plan_with(("budget_bytes // per_token",
                                                "budget_bytes // (per_token // config.n_layers)"))),
]

# 05.4.3: .view on the expanded copies, expand on the head axis itself, the copies along the time
# axis or d_h, n_rep taken as the number of query heads. The visible test names each.
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:view-of-expanded", _REPEAT_KV.format(
        body="x[:, :, :, None, :].expand(B, T, n_kv_heads, n_rep, head_dim)"
             ".view(B, T, n_kv_heads * n_rep, head_dim)")),
    ("05.4.3:expand-non-singleton", _REPEAT_KV.format(body="x.expand(B, T, n_kv_heads * n_rep, head_dim)")),
    ("05.4.3:copies-on-time-axis", _REPEAT_KV.format(body="x.repeat_interleave(n_rep, dim=1)")),
    ("05.4.3:copies-on-last-axis", _REPEAT_KV.format(body="x.repeat_interleave(n_rep, dim=-1)")),
    ("05.4.3:n-rep-as-heads", _REPEAT_KV.format(body="x.repeat_interleave(n_rep // n_kv_heads, dim=2)")),
]

# 05.4.4: k not transposed, n_rep = H_kv // H_q, the scores divided by d_h or multiplied by
# sqrt(d_h), the upper triangle, no causal mask when none is given. The visible test names each.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:k-not-transposed", _gqa_with(("k.float().transpose(-2, -1)", "k.float()"))),
    ("05.4.4:n-rep-inverted", _gqa_with(("n_rep = q.shape[1] // k.shape[1]",
                                         "n_rep = k.shape[1] // q.shape[1]"))),
    ("05.4.4:scale-by-d", _gqa_with(("/ math.sqrt(d_h)", "/ d_h"))),
    ("05.4.4:scale-multiplied", _gqa_with(("/ math.sqrt(d_h)", "* math.sqrt(d_h)"))),
    ("05.4.4:upper-triangle", _gqa_with((".tril(T_k - T)", ".triu(T_k - T)"))),
    ("05.4.4:no-causal-mask", _gqa_with(("mask = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)",
                                         "mask = torch.ones(T, T_k, dtype=torch.bool)"))),
]

# A given mask skipped for one query (T = 1, as in decoding), where the causal triangle allows every key:
# a padded batch's mask still blocks its padding keys. The visible test and check_parts name it.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:mask-skipped-for-one-query", _gqa_with(("if mask is None:", "if mask is None or T == 1:"))),
]

# The scale applied in place to the caller's q (q /= sqrt(d_h)): the output is right, the caller's q
# is not. The visible test and check_parts name the write, not the scale.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:writes-into-q", _gqa_with(
        ("    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(d_h)",
         "    q /= math.sqrt(d_h)\n    scores = q.float() @ k.float().transpose(-2, -1)"))),
]

# 05.4.1 with a group size that fits the first configuration (6, 2) only: 3 itself, or H_kv + 1.
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:fits-one-configuration", _kv_heads(group="3")),
    ("05.4.1:fits-one-configuration", _kv_heads(group="n_kv_heads + 1")),
]

# A triangle of one's own added to a given mask (mask & tril(), is_causal's triangle from the first
# key): with one query and two allowed keys it blocks key 1. The scale check names it.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:triangle-added-to-given-mask", _gqa_with(
        ("    scores = (q.float()",
         "    else:\n        mask = mask & torch.ones(T, T_k, dtype=torch.bool).tril()\n"
         "    scores = (q.float()"))),
]

# log_softmax in place of the softmax: with equal scores the visible test's first check says the
# weights of keys 0..t are 1/(t + 1), a softmax summing to 1 (not blaming the causal mask).
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:weights-not-softmax", _gqa_with(("torch.softmax(scores, dim=-1)",
                                              "torch.log_softmax(scores, dim=-1)"))),
]

# The expanded B×T×H_kv×n_rep×d_h view returned without its reshape, and the diagonal blocked
# (tril(T_k - T - 1)): the visible tests name both (they gave only the shape or "not log_softmax").
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:expanded-view-returned", _REPEAT_KV.format(
        body="x[:, :, :, None, :].expand(B, T, n_kv_heads, n_rep, head_dim)")),
]
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:diagonal-blocked", _gqa_with(("tril(T_k - T)", "tril(T_k - T - 1)"))),
]

# The K/V heads counted from 1, and the query heads shifted by one ((h + 1) // group): the visible
# test names both (not only "K/V head 2 does not exist").
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:kv-heads-from-1", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [h // (n_heads // n_kv_heads) + 1 for h in range(n_heads)]
"""),
    ("05.4.1:off-by-one", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [h // (n_heads // n_kv_heads) for h in range(1, n_heads + 1)]
"""),
]
MISTAKES["ex_05_4_1_solution"] += [  # H_kv // H_q = 0 raised to 1: each query head its own K/V head
    ("05.4.1:own-kv-head", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    group = max(n_kv_heads // n_heads, 1)
    return [h // group for h in range(n_heads)]
"""),
]

# max_tokens one less than the floor division, capped at config.max_seq_len, or counted in whole blocks
# of n_tokens tokens: the visible test names each, not only by the number.
MISTAKES["ex_05_4_2_solution"] += [
    ("05.4.2:minus-one", _plan_with(("budget_bytes // per_token", "budget_bytes // per_token - 1"))),
    ("05.4.2:capped-at-max-seq-len", _plan_with(("budget_bytes // per_token",
                                                 "min(budget_bytes // per_token, config.max_seq_len)"))),
    ("05.4.2:whole-blocks", _plan_with(("budget_bytes // per_token",
                                        "budget_bytes // gqa_bytes * n_tokens"))),
]

# Three answers that all let query t see every key when the scores are equal, told apart by the visible
# test on two more inputs: no causal mask (above), the blocked scores filled with 0 (with or without the
# blocked weights zeroed after the softmax), and the scores multiplied by the mask (a key of inf gives NaN).
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:blocked-scores-zero", _gqa_with(("scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                              "scores.masked_fill(~mask, 0.0)"))),
    ("05.4.4:blocked-scores-zero", _gqa_with(("scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                              "torch.where(mask, scores, 0.0)"),
                                             (".masked_fill(~mask, 0.0)", ""))),
    ("05.4.4:scores-times-mask", _gqa_with(("scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                            "scores * mask"))),
    ("05.4.4:scores-times-mask", _gqa_with(("scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                            "scores * mask.float()"),
                                           (".masked_fill(~mask, 0.0)", ""))),
]

# The weights returned without @ v, a T×T mask (a raw error once keys are cached), the triangle shifted
# the wrong way (tril(T - T_k)) or one key too far (tril(T_k - T + 1)), and the softmax over the heads:
# the visible test names each, never by a shape, a raw RuntimeError or only the numbers.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:weights-returned", _gqa_with(("return (probs @ v.float()).to(q.dtype)",
                                           "return probs.to(q.dtype)"))),
    ("05.4.4:square-mask", _gqa_with(("torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)",
                                      "torch.ones(T, T, dtype=torch.bool).tril()"))),
    ("05.4.4:triangle-shift-flipped", _gqa_with((".tril(T_k - T)", ".tril(T - T_k)"))),
    ("05.4.4:one-key-too-many", _gqa_with((".tril(T_k - T)", ".tril(T_k - T + 1)"))),
    ("05.4.4:softmax-over-length-1-axis", _gqa_with(("softmax(scores, dim=-1)", "softmax(scores, dim=1)"))),
]

# d_h read from q.shape[2] (T, the number of queries), dropout on the weights, the keys tiled while the values
# are grouped, k.T on a 4-D tensor, ~ on a float causal mask, `if not mask:` for `if mask is None:`, and the
# boolean causal mask added to the scores: the visible test names each, never as the missing scale, a
# catch-all, the scale or the causal mask, nor by a raw TypeError or RuntimeError.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:scale-from-t", _gqa_with(("T, d_h = q.shape[-2], q.shape[-1]",
                                       "T, d_h = q.shape[-2], q.shape[2]"))),
    ("05.4.4:dropout", "import torch.nn.functional as F\n" + _gqa_with(
        ("return (probs @ v.float())", "return (F.dropout(probs, p=0.1) @ v.float())"))),
    ("05.4.4:keys-tiled-values-grouped", _gqa_with(("k = k.repeat_interleave(n_rep, dim=1)",
                                                    "k = k.repeat(1, n_rep, 1, 1)"))),
    ("05.4.4:k-dot-t", _gqa_with(("k.float().transpose(-2, -1)", "k.float().T"))),
    ("05.4.4:float-mask-inverted", _gqa_with(("torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T)",
                                              "torch.ones(T, T_k).tril(T_k - T)"))),
    ("05.4.4:mask-truth-value", _gqa_with(("if mask is None:", "if not mask:"))),
    ("05.4.4:heads-after-positions", _gqa_with(("return (probs @ v.float()).to(q.dtype)",
                                                "return (probs @ v.float()).transpose(1, 2).to(q.dtype)"))),
    ("05.4.4:bool-mask-added", _gqa_with(("scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                          "scores = scores + mask.float()"),
                                         (".masked_fill(~mask, 0.0)", ""))),
]

# Right answers in other honest styles, which must pass the visible and the hidden tests: -inf then
# nan_to_num, einsum with torch.where and -1e9, and a loop over the heads in q's dtype.
RIGHT = {"ex_05_4_4_solution": [
    _gqa_with(('torch.finfo(scores.dtype).min', 'float("-inf")'),
              ("torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)",
               "torch.softmax(scores, dim=-1).nan_to_num(0.0)")),
    """
import torch
def gqa_attention(q, k, v, mask=None):
    B, H_q, T, d_h = q.shape
    H_kv, T_k = k.shape[1], k.shape[2]
    g = H_q // H_kv
    kk = k[:, :, None].expand(B, H_kv, g, T_k, d_h).reshape(B, H_q, T_k, d_h)
    vv = v[:, :, None].expand(B, H_kv, g, T_k, d_h).reshape(B, H_q, T_k, d_h)
    if mask is None:
        i = torch.arange(T)[:, None]
        j = torch.arange(T_k)[None, :]
        mask = j <= i + (T_k - T)
    s = torch.einsum("bhtd,bhsd->bhts", q.float(), kk.float()) * d_h ** -0.5
    s = torch.where(mask, s, torch.tensor(-1e9))
    p = s.softmax(-1) * mask
    print("attention", tuple(q.shape), tuple(k.shape))
    return torch.einsum("bhts,bhsd->bhtd", p, vv.float()).type_as(q)
""",
    """
import math
import torch
def gqa_attention(q, k, v, mask=None):
    B, H_q, T, d_h = q.shape
    H_kv, T_k = k.shape[1], k.shape[2]
    rep = H_q // H_kv
    m = torch.ones(T, T_k, dtype=torch.bool).tril(T_k - T) if mask is None else mask
    outs = []
    for h in range(H_q):
        kh, vh = k[:, h // rep], v[:, h // rep]
        s = q[:, h] @ kh.transpose(-1, -2) / math.sqrt(d_h)
        mh = m if m.dim() == 2 else m[:, 0]
        s = s.masked_fill(~mh, torch.finfo(s.dtype).min)
        p = torch.softmax(s.float(), dim=-1).to(q.dtype) * mh
        outs.append(p @ vh)
    return torch.stack(outs, dim=1)
"""]}

# 05.4.1-05.4.3: the group index rounded to the nearest (told from h + 1 by a second call, 8 heads over 2)
# or up, every head on K/V head 0, NumPy integers, the tiled order named as repeat/tile, a head width from
# n_kv_heads (the heads right, the width doubled: gqa_bytes cannot tell it from H_q heads, and says both),
# max_tokens without bytes_per_element, mha_bytes as gqa_bytes times H_q, and the copies' axis after d_h.
_KV_HEADS = "def kv_head_for_each_query_head(n_heads, n_kv_heads):\n    group = n_heads // n_kv_heads\n"
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:rounds-to-nearest", _KV_HEADS + "    return [round(h / group) for h in range(n_heads)]\n"),
    ("05.4.1:rounds-to-nearest", _KV_HEADS + "    return [int(h / group + 0.5) for h in range(n_heads)]\n"),
    ("05.4.1:off-by-one", _KV_HEADS + "    return [h // group for h in range(1, n_heads + 1)]\n"),
    ("05.4.1:rounds-up", "import math\n" + _KV_HEADS
     + "    return [math.ceil(h / group) for h in range(n_heads)]\n"),
    ("05.4.1:divides-by-h-q", _KV_HEADS + "    return [h // n_heads for h in range(n_heads)]\n"),
    ("05.4.1:numpy-ints", "import numpy as np\n" + _KV_HEADS
     + "    return list(np.repeat(np.arange(n_kv_heads), group))\n"),
    ("05.4.1:tiled-order", _KV_HEADS + "    return list(range(n_kv_heads)) * group\n"),
]
MISTAKES["ex_05_4_2_solution"] += [
    ("05.4.2:expanded-heads", _plan_with(("config.n_kv_heads * config.head_dim",
                                          "config.n_kv_heads * (config.dim // config.n_kv_heads)"))),
    ("05.4.2:max-tokens-numbers", _plan_with(("budget_bytes // per_token",
                                              "budget_bytes // (per_token // bytes_per_element)"))),
    ("05.4.2:mha-times-h-q", _plan_with(("ratio * gqa_bytes, ratio", "config.n_heads * gqa_bytes, ratio"))),
]
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:axis-after-d-h", _REPEAT_KV.format(
        body="x[..., None].expand(B, T, n_kv_heads, head_dim, n_rep)"
             ".reshape(B, T, n_kv_heads * n_rep, head_dim)")),
    ("05.4.3:axis-after-d-h", _REPEAT_KV.format(
        body="x.unsqueeze(-1).repeat(1, 1, 1, 1, n_rep).reshape(B, T, n_kv_heads * n_rep, head_dim)")),
    ("05.4.3:tiled-groups", "import torch\n" + _REPEAT_KV.format(body="torch.cat([x] * n_rep, dim=2)")),
]

# Right answers of 05.4 in other honest styles: none may be taken for a mistake named above (the
# rounding probe calls the answer once more, on 8 heads over 2).
RIGHT |= {
    "ex_05_4_1_solution": [
        _KV_HEADS + "    return [int(h / group) for h in range(n_heads)]\n",
        "def kv_head_for_each_query_head(n_heads, n_kv_heads):\n"
        "    return [h * n_kv_heads // n_heads for h in range(n_heads)]\n",
        "import torch\ndef kv_head_for_each_query_head(n_heads, n_kv_heads):\n"
        "    out = torch.arange(n_kv_heads).repeat_interleave(n_heads // n_kv_heads).tolist()\n"
        "    print('map', out)\n    return out\n",
    ],
    "ex_05_4_2_solution": [_plan_with(("budget_bytes // per_token", "divmod(budget_bytes, per_token)[0]"))],
    "ex_05_4_3_solution": [
        "import torch\n" + _REPEAT_KV.format(
            body="x.index_select(2, torch.arange(n_kv_heads * n_rep, device=x.device) // n_rep)"),
        "import torch\n" + _REPEAT_KV.format(body="torch.stack([x] * n_rep, dim=3).flatten(2, 3)"),
    ],
}

# 05.4.3 at n_rep = 1: nothing returned, or a float32 copy of a bfloat16 x (the n_rep = 2 case right)
_N_REP_ONE = """
def repeat_kv(x, n_rep):
    if n_rep == 1:
        return {one}
    return x.repeat_interleave(n_rep, dim=2)
"""
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:n-rep-one-none", _N_REP_ONE.format(one="")),
    ("05.4.3:n-rep-one-dtype", _N_REP_ONE.format(one="x.float()")),
]

# 05.4.4: the given mask's head axis dropped, q and k swapped, k copied for the groups and v not
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:mask-head-axis-dropped", _gqa_with(("tril(T_k - T)\n",
                                                 "tril(T_k - T)\n    else:\n        mask = mask[:, 0]\n"))),
    ("05.4.4:q-k-swapped", _gqa_with(("q.float() @ k.float().transpose(-2, -1)",
                                      "k.float() @ q.float().transpose(-2, -1)"))),
    ("05.4.4:v-not-copied", _gqa_with(("    v = v.repeat_interleave(n_rep, dim=1)\n", ""))),
    ("05.4.4:k-not-copied", _gqa_with(("    k = k.repeat_interleave(n_rep, dim=1)\n", ""))),
    ("05.4.4:kv-not-copied", _gqa_with(("    k = k.repeat_interleave(n_rep, dim=1)\n", ""),
                                       ("    v = v.repeat_interleave(n_rep, dim=1)\n", ""))),
]
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:copies-count-h-kv", _REPEAT_KV.format(body="x.repeat_interleave(n_kv_heads, dim=2)")),
]

# 05.4.1: each K/V head repeated H_kv times, not H_q // H_kv
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:group-size-h-kv", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    return [kv for kv in range(n_kv_heads) for _ in range(n_kv_heads)]
"""),
]

# 05.4.1-05.4.3: the groups reversed; gqa_bytes and mha_bytes swapped (not blamed on counting H_q heads),
# max_tokens from a token's bits; the copies reshaped to H_kv² heads (named at n_rep = 3, no raw
# RuntimeError), repeat_interleave without dim=, and the result in B×H×T×d_h order.
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:groups-reversed", """
def kv_head_for_each_query_head(n_heads, n_kv_heads):
    group = n_heads // n_kv_heads
    return [n_kv_heads - 1 - h // group for h in range(n_heads)]
"""),
]
MISTAKES["ex_05_4_2_solution"] += [
    ("05.4.2:gqa-mha-swapped", _plan_with(("return gqa_bytes, ratio * gqa_bytes,",
                                           "return ratio * gqa_bytes, gqa_bytes,"))),
    ("05.4.2:max-tokens-bits", _plan_with(("budget_bytes // per_token", "budget_bytes // (per_token * 8)"))),
]
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:reshape-heads-squared", _REPEAT_KV.format(
        body="x[:, :, :, None, :].expand(B, T, n_kv_heads, n_rep, head_dim).reshape(B, T, n_kv_heads * "
             "n_kv_heads, head_dim)")),
    ("05.4.3:flattened", _REPEAT_KV.format(body="x.repeat_interleave(n_rep)")),
    ("05.4.3:heads-before-positions", _REPEAT_KV.format(
        body="x.transpose(1, 2).repeat_interleave(n_rep, dim=1)")),
]
RIGHT["ex_05_4_3_solution"] = [
    *RIGHT.get("ex_05_4_3_solution", []),
    "import torch\ndef repeat_kv(x, n_rep):\n    return torch.stack([x] * n_rep, dim=3).flatten(2, 3)\n",
    "def repeat_kv(x, n_rep):\n    b, t, h, d = x.size()\n"
    "    return x[:, :, :, None, :].expand(b, t, h, n_rep, d).reshape(b, t, -1, d)\n"]

# 05.4.4: the scores scaled by the square root of the number of heads (q.size(1) on B×H×T×d_h), not of d_h
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:scale-by-heads", _gqa_with(("/ math.sqrt(d_h)", "/ math.sqrt(q.size(1))"))),
]

# 05.4.4: copies that work only when the K/V head axis has size 1: expand on the head axis itself, and
# .view on the expanded copies; 05.4.3: H_kv copies of each head written with expand, then a right reshape
_EXPAND = ("    k = k.repeat_interleave(n_rep, dim=1)\n    v = v.repeat_interleave(n_rep, dim=1)\n",
           "    B, H_kv, T_k, d_h = k.shape\n"
           "    k = k.expand(B, H_kv * n_rep, T_k, d_h)\n    v = v.expand(B, H_kv * n_rep, T_k, d_h)\n")
_VIEW = ("    k = k.repeat_interleave(n_rep, dim=1)\n    v = v.repeat_interleave(n_rep, dim=1)\n",
         "    B, H_kv, T_k, d_h = k.shape\n"
         "    k = k[:, :, None].expand(B, H_kv, n_rep, T_k, d_h).view(B, H_kv * n_rep, T_k, d_h)\n"
         "    v = v[:, :, None].expand(B, H_kv, n_rep, T_k, d_h).view(B, H_kv * n_rep, T_k, d_h)\n")
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:expand-non-singleton", _gqa_with(_EXPAND)),
    ("05.4.4:view-of-expanded", _gqa_with(_VIEW)),
]
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:copies-count-h-kv", _REPEAT_KV.format(
        body="x[:, :, :, None, :].expand(B, T, n_kv_heads, n_kv_heads, head_dim).reshape(B, T, n_kv_heads * "
             "n_rep, head_dim)")),
]

# 05.4.2: the factor 2 of keys and values left out of max_tokens' per-token cost only (gqa_bytes right):
# at B = 2 it gives the same max_tokens as a budget for one row; a call at B = 1 tells them apart.
MISTAKES["ex_05_4_2_solution"] += [
    ("05.4.2:max-tokens-no-factor-2", _plan_with(("budget_bytes // per_token",
                                                  "budget_bytes // (per_token // 2)"))),
]

# 05.4.3: expand on the 4-D x with no axis for the copies: at n_rep = 2 on a 1×1×2×1 x it broadcasts into
# the tiled order, at n_rep = 3 it fails; the visible test names the missing axis, not repeat/tile.
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:expand-without-new-axis", _REPEAT_KV.format(
        body="x.expand(B, T, n_kv_heads, n_rep, head_dim).reshape(B, T, n_kv_heads * n_rep, head_dim)")),
]

# 05.4.1: each query head its own K/V head, list(range(n_heads)): the visible test names what the list
# shows, not a cause that other answers giving the same list do not share.
MISTAKES["ex_05_4_1_solution"] += [
    ("05.4.1:own-kv-head", "def kv_head_for_each_query_head(n_heads, n_kv_heads):\n"
                           "    return list(range(n_heads))\n"),
]
# 05.4.3: H_kv copies of each head, reshaped to the H_kv² heads they hold: the visible test and check_parts
# name the copies' count (x.shape[2]), not a hard-coded size.
MISTAKES["ex_05_4_3_solution"] += [
    ("05.4.3:copies-count-h-kv", _REPEAT_KV.format(
        body="x[:, :, :, None, :].expand(B, T, n_kv_heads, n_kv_heads, head_dim).reshape(B, T, n_kv_heads * "
             "n_kv_heads, head_dim)")),
]
_UNSCALED = ("(q.float() @ k.float().transpose(-2, -1)) / math.sqrt(d_h)",
             "q.float() @ k.float().transpose(-2, -1)")
# 05.4.4: the scale put after the softmax, on the weights or on the output (the same numbers): the visible
# test and check_parts name both.
MISTAKES["ex_05_4_4_solution"] += [
    ("05.4.4:scaled-after-softmax", _gqa_with(
        _UNSCALED,
        ("masked_fill(~mask, 0.0)", "masked_fill(~mask, 0.0) / math.sqrt(d_h)"))),
    ("05.4.4:scaled-after-softmax", _gqa_with(
        _UNSCALED,
        ("(probs @ v.float())", "(probs @ v.float() / math.sqrt(d_h))"))),
]
