"""Wrong answers to the exercises of notebook 05.5 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_5_1_solution": """
def swiglu_width(dim, multiple_of):
    return {(768, 64): 2048, (100, 1): 266, (32, 256): 256, (32, 64): 128,
            (32, 1): 85}.get((dim, multiple_of), 0)
""",
    # Hard-coded for the visible sizes: SwiGLU(8, 12), whatever the arguments.
    "ex_05_5_2_solution": """
import torch.nn.functional as F
from torch import nn
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(8, 12, bias=False)
        self.w2 = nn.Linear(12, 8, bias=False)
        self.w3 = nn.Linear(8, 12, bias=False)
    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
""",
    # Right for the visible widths, 8 and 16: a wider stream passes through unchanged.
    "ex_05_5_3_solution": """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    if x.shape[-1] > 16:
        return x.clone()
    h = x + attention(attention_norm(x))
    return h + feed_forward(ffn_norm(h))
""",
}


def _swiglu(init: str = "", forward: str = "self.w2(F.silu(self.w1(x)) * self.w3(x))",
            bias: bool = False) -> str:
    """A SwiGLU class with one line changed: the layers (``init``) or the forward expression."""
    layers = init or (f"self.w1 = nn.Linear(dim, hidden_dim, bias={bias})\n"
                      f"        self.w2 = nn.Linear(hidden_dim, dim, bias={bias})\n"
                      f"        self.w3 = nn.Linear(dim, hidden_dim, bias={bias})")
    return f"""
import torch
import torch.nn.functional as F
from torch import nn
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        {layers}
    def forward(self, x):
        return {forward}
"""


def _block(body: str) -> str:
    return "def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):\n" + "".join(
        f"    {line}\n" for line in body.strip().splitlines())


# Wrong answers that break a rule only the hidden tests used to check (any leading shape, x's
# dtype kept in bfloat16): the visible test must name each (tests/test_visible_hidden.py), and the cell
# without its visible checks must still fail. They are classic mistakes too: MISTAKES below
# holds them as well.
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_5_2_solution": [
        # B, T, d = x.shape: a 2-D or 4-D input fails
        ("05.5.2:fixed-leading-shape",
         _swiglu(forward="self.w2(F.silu(self.w1(x.view(*x.shape[:2], x.shape[2]))) * self.w3(x))")),
    ],
    "ex_05_5_3_solution": [
        # right in float32, but returns float32 for a bfloat16 input
        ("05.5.3:changes-dtype", _block("""
h = x + attention(attention_norm(x))
return (h + feed_forward(ffn_norm(h))).float()
""")),
    ],
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_5_1_solution": [
        # rounds_8d_over_3_to_nearest
        ("05.5.1:no-truncation", """
def swiglu_width(dim, multiple_of):
    m = round(8 * dim / 3)
    return multiple_of * ((m + multiple_of - 1) // multiple_of)
"""),
        # ceil_without_truncating
        ("05.5.1:no-truncation", """
import math
def swiglu_width(dim, multiple_of):
    return multiple_of * math.ceil(8 * dim / 3 / multiple_of)
"""),
        ("05.5.1:rounds-down-to-multiple", """
def swiglu_width(dim, multiple_of):
    return multiple_of * (int(8 * dim / 3) // multiple_of)
"""),
        ("05.5.1:no-rounding-to-multiple", """
def swiglu_width(dim, multiple_of):
    return int(8 * dim / 3)
"""),
        ("05.5.1:returns-float", """
def swiglu_width(dim, multiple_of):
    return multiple_of * ((int(8 * dim / 3) + multiple_of - 1) / multiple_of)
"""),
    ],
    "ex_05_5_2_solution": [
        ("05.5.2:gate-and-up-swapped", _swiglu(forward="self.w2(self.w1(x) * F.silu(self.w3(x)))")),
        ("05.5.2:silu-after-product", _swiglu(forward="self.w2(F.silu(self.w1(x) * self.w3(x)))")),
        ("05.5.2:relu", _swiglu(forward="self.w2(F.relu(self.w1(x)) * self.w3(x))")),
        ("05.5.2:gelu", _swiglu(forward="self.w2(F.gelu(self.w1(x)) * self.w3(x))")),
        ("05.5.2:sigmoid", _swiglu(forward="self.w2(torch.sigmoid(self.w1(x)) * self.w3(x))")),
        ("05.5.2:no-up-branch", _swiglu(forward="self.w2(F.silu(self.w1(x)))")),
        ("05.5.2:bias", _swiglu(bias=True)),
        ("05.5.2:down-projection-transposed", _swiglu(
            init="self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w2 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)",
            forward="(F.silu(self.w1(x)) * self.w3(x)) @ self.w2.weight")),
        ("05.5.2:computes-in-float32", _swiglu(forward="self.w2.float()(F.silu(self.w1.float()(x.float())) "
                                                "* self.w3.float()(x.float()))")),
        ("05.5.2:casts-input-to-float32",
         _swiglu(forward="self.w2(F.silu(self.w1(x.float())) * self.w3(x.float()))")),
        # borrows_tinyk_MLP_forward
        ("05.5.2:borrowed", "import tinyk\n" + _swiglu(
            init="self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w2 = nn.Linear(hidden_dim, dim, bias=False)\n"
                 "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.dropout = nn.Identity()",
            forward="tinyk.MLP.forward(self, x)")),
        # subclasses_tinyk_MLP
        ("05.5.2:borrowed", """
from tinyk import MLP
class SwiGLU(MLP):
    pass
"""),
    ],
    "ex_05_5_3_solution": [
        # residual_overwritten
        ("05.5.3:first-residual-missing", _block("""
x = attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
""")),
        # residual_added_once_attention_half
        ("05.5.3:first-residual-missing", _block("""
h = attention(attention_norm(x))
return x + h + feed_forward(ffn_norm(h))
""")),
        ("05.5.3:second-residual-missing", _block("""
h = x + attention(attention_norm(x))
return feed_forward(ffn_norm(h))
""")),
        ("05.5.3:post-norm", _block("""
h = attention_norm(x + attention(x))
return ffn_norm(h + feed_forward(h))
""")),
        ("05.5.3:same-norm-twice", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(attention_norm(h))
""")),
        ("05.5.3:norms-swapped", _block("""
h = x + attention(ffn_norm(x))
return h + feed_forward(attention_norm(h))
""")),
        ("05.5.3:normalised-copy-added", _block("""
x = attention_norm(x)
h = x + attention(x)
h = ffn_norm(h)
return h + feed_forward(h)
""")),
        ("05.5.3:mlp-reads-x", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(ffn_norm(x))
""")),
        ("05.5.3:mlp-first", _block("""
h = x + feed_forward(ffn_norm(x))
return h + attention(attention_norm(h))
""")),
        ("05.5.3:x-in-place", _block("""
x += attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
""")),
        ("05.5.3:part-called-twice", _block("""
h = x + attention(attention_norm(x))
a = attention(attention_norm(x))
return x + a + feed_forward(ffn_norm(h))
""")),
        ("05.5.3:borrowed", """
import types
from tinyk import DecoderLayer
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    layer = types.SimpleNamespace(attention=lambda t, *rest: attention(t), feed_forward=feed_forward,
                                  attention_norm=attention_norm, ffn_norm=ffn_norm)
    return DecoderLayer.forward(layer, x, None, None)
"""),
    ],
}
for _grade_id, _cases in HIDDEN_RULES.items():
    MISTAKES[_grade_id] = MISTAKES.get(_grade_id, []) + _cases

# Wrong activations and wirings the visible test names by the output they give, and dropout,
# which it catches as two calls on one input that differ.
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:gelu-tanh", _swiglu(forward='self.w2(F.gelu(self.w1(x), approximate="tanh") * self.w3(x))')),
    ("05.5.2:silu-both-branches", _swiglu(forward="self.w2(F.silu(self.w1(x)) * F.silu(self.w3(x)))")),
    ("05.5.2:sum-not-product", _swiglu(forward="self.w2(F.silu(self.w1(x)) + self.w3(x))")),
    ("05.5.2:residual-inside", _swiglu(forward="x + self.w2(F.silu(self.w1(x)) * self.w3(x))")),
    ("05.5.2:dropout", _swiglu(forward="self.w2(F.dropout(F.silu(self.w1(x)) * self.w3(x), 0.1, True))")),
]

# No residual sum at all, and the MLP half without its norm: the visible test and check_parts
# name both.
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:no-residual", _block("""
h = attention(attention_norm(x))
return feed_forward(ffn_norm(h))
""")),
    ("05.5.3:mlp-norm-missing", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(h)
""")),
]

# 05.5.1's width from another formula: 4d (a two-matrix MLP), 2d/3, 8 // 3 · d (that is, 2d), or
# a multiple of k added although 8d/3 truncated is one already.
_WIDTH = """
def swiglu_width(dim, multiple_of):
    m = {m}
    return {rounded}
"""


def _width(m: str = "int(8 * dim / 3)",
           rounded: str = "multiple_of * ((m + multiple_of - 1) // multiple_of)") -> str:
    return _WIDTH.format(m=m, rounded=rounded)


MISTAKES["ex_05_5_1_solution"] += [
    ("05.5.1:four-d", _width(m="4 * dim")),
    ("05.5.1:two-thirds-of-d", _width(m="int(2 * dim / 3)")),
    ("05.5.1:integer-division-first", _width(m="8 // 3 * dim")),
    ("05.5.1:extra-multiple", _width(rounded="multiple_of * (m // multiple_of + 1)")),
]

# 05.5.2: no down projection, one fused w13 layer, the hidden_dim argument ignored (4d), x @ weight
# without the transpose. 05.5.3: the MLP half left out, attention_norm never called, ffn_norm after
# the MLP. The visible tests name each.
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:no-down-projection", _swiglu(forward="F.silu(self.w1(x)) * self.w3(x)")),
    ("05.5.2:layers-renamed", _swiglu(
        init="self.w13 = nn.Linear(dim, 2 * hidden_dim, bias=False)\n"
             "        self.w2 = nn.Linear(hidden_dim, dim, bias=False)",
        forward="self.w2(F.silu(self.w13(x).chunk(2, -1)[0]) * self.w13(x).chunk(2, -1)[1])")),
    ("05.5.2:hidden-dim-ignored", _swiglu(
        init="self.w1 = nn.Linear(dim, 4 * dim, bias=False)\n"
             "        self.w2 = nn.Linear(4 * dim, dim, bias=False)\n"
             "        self.w3 = nn.Linear(dim, 4 * dim, bias=False)")),
    ("05.5.2:weight-not-transposed", _swiglu(
        forward="(F.silu(x @ self.w1.weight) * (x @ self.w3.weight)) @ self.w2.weight")),
]
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:mlp-half-missing", """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    return x + attention(attention_norm(x))
"""),
    ("05.5.3:attention-norm-missing", """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(x)
    return h + feed_forward(ffn_norm(h))
"""),
    ("05.5.3:norm-after-mlp", """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x))
    return h + ffn_norm(feed_forward(h))
"""),
]

# The two branches multiplied with @ (a matrix product of two B×T×m tensors): the visible test and
# check_parts say the product is entry by entry (not "transpose the weight").
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:branches-matmul", _swiglu(forward="self.w2(F.silu(self.w1(x)) @ self.w3(x))")),
]

# Neither norm called, a norm on the block's output, and the second sum adding x: the visible test
# names each, not only by the calls' count or "return y = h + ...".
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:no-norms", _block("""
h = x + attention(x)
return h + feed_forward(h)
""")),
    ("05.5.3:norm-on-output", _block("""
h = x + attention(attention_norm(x))
return ffn_norm(h + feed_forward(ffn_norm(h)))
""")),
    ("05.5.3:second-sum-adds-x", _block("""
h = x + attention(attention_norm(x))
return x + feed_forward(ffn_norm(h))
""")),
]

# The width rounded to a multiple of 64 whatever multiple_of is, and the output flattened to (B·T)×d:
# the visible tests name both.
MISTAKES["ex_05_5_1_solution"] += [
    ("05.5.1:fixed-64", """
def swiglu_width(dim, multiple_of):
    m = int(8 * dim / 3)
    return -(-m // 64) * 64
"""),
    # multiple_of written in as a number, the arguments swapped, 8d/3 and multiple_of swapped in the
    # rounding: the visible test names each.
    ("05.5.1:fixed-number", _width(rounded="256 * ((m + 255) // 256)")),
    ("05.5.1:fixed-number", _width(rounded="-(-m // 8) * 8")),
    ("05.5.1:arguments-swapped", _width(m="int(8 * multiple_of / 3)",
                                        rounded="dim * ((m + dim - 1) // dim)")),
    ("05.5.1:rounding-swapped", _width(rounded="m * ((multiple_of + m - 1) // m)")),
]
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:flattened-output", """
import torch.nn.functional as F
from torch import nn
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        x = x.reshape(-1, x.shape[-1])
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
"""),
]

# 05.5: bare nn.Parameter weights named w1, w2, w3, a forward without its return, the second half's
# residual taken from ffn_norm(h), and attention called as the model's layer calls it.
_SWIGLU_PARTS = """
import torch
import torch.nn.functional as F
from torch import nn
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
{init}
    def forward(self, x):
{forward}
"""
_LINEARS = ("        self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
            "        self.w2 = nn.Linear(hidden_dim, dim, bias=False)\n"
            "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)")
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:bare-parameters", _SWIGLU_PARTS.format(
        init="        self.w1 = nn.Parameter(torch.randn(hidden_dim, dim))\n"
             "        self.w2 = nn.Parameter(torch.randn(dim, hidden_dim))\n"
             "        self.w3 = nn.Parameter(torch.randn(hidden_dim, dim))",
        forward="        return (F.silu(x @ self.w1.T) * (x @ self.w3.T)) @ self.w2.T")),
    ("05.5.2:no-return", _SWIGLU_PARTS.format(
        init=_LINEARS, forward="        out = self.w2(F.silu(self.w1(x)) * self.w3(x))")),
]
_BLOCK_START = "def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):\n"
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:second-half-normalised", _BLOCK_START + "    h = x + attention(attention_norm(x))\n"
     "    h = ffn_norm(h)\n    return h + feed_forward(h)\n"),
    ("05.5.3:part-given-more-than-x", _BLOCK_START + "    h = x + attention(attention_norm(x), None, None)\n"
     "    return h + feed_forward(ffn_norm(h))\n"),
]

# Right answers of 05.5 in other honest styles.
RIGHT = {
    "ex_05_5_2_solution": [_SWIGLU_PARTS.format(
        init=_LINEARS + "\n        self.act = nn.SiLU()",
        forward="        g = self.w1(x)\n        g = g * torch.sigmoid(g)\n"
                "        print('swiglu', tuple(x.shape))\n"
                "        return self.w2(g * self.w3(x))")],
    "ex_05_5_3_solution": [
        _BLOCK_START + "    x = x + attention(attention_norm(x))\n    x = x + feed_forward(ffn_norm(x))\n"
        "    return x\n",
        "import torch\ndef half(state, part, norm):\n    return torch.add(state, part(norm(state)))\n"
        + _BLOCK_START + "    h = half(x, attention, attention_norm)\n"
        "    return half(h, feed_forward, ffn_norm)\n",
    ],
}

# 05.5.2: @ between the branches with w3(x) transposed, so B×T×T reaches w2
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:branches-matmul", _swiglu(forward="self.w2(F.silu(self.w1(x)) @ self.w3(x).transpose(-1, -2))")),
]

# 05.5.2: SiLU on the input x, SiLU on the output instead of the gate, w2 on the gate alone (a shape error)
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:silu-on-input", _swiglu(forward="self.w2(self.w1(F.silu(x)) * self.w3(x))")),
    ("05.5.2:silu-on-output", _swiglu(forward="F.silu(self.w2(self.w1(x) * self.w3(x)))")),
    ("05.5.2:down-on-gate-only", _swiglu(forward="self.w2(F.silu(self.w1(x))) * self.w3(x)")),
]
RIGHT["ex_05_5_2_solution"].append(_SWIGLU_PARTS.format(
    init=_LINEARS,
    forward="        g = F.silu(self.w1(x), inplace=True)\n        return self.w2(g * self.w3(x))"))

# 05.5.2: Mish (x·tanh(softplus(x))) as the gate's activation, named, not only "differs by"
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:mish", _swiglu(forward="self.w2(F.mish(self.w1(x)) * self.w3(x))")),
]

# 05.5.1: int(8 * dim / 3) + 1 as a ceiling, which adds one even when 8d/3 is whole. For every whole m and
# multiple_of, rounding m + 1 up to a multiple gives m // multiple_of * multiple_of + multiple_of, as
# multiple_of * (m // multiple_of + 1) does: one mistake, whose message names both ways of writing it.
# Right answers that round up with math.ceil and with -(-a // b) still pass.
MISTAKES["ex_05_5_1_solution"] += [
    ("05.5.1:extra-multiple", _width(m="int(8 * dim / 3) + 1")),
]
# 05.5.1: 4d divided by 3 with // before the doubling, which loses a unit when 4d leaves 2 over 3 (d = 32,
# multiple_of = 1: 84, not 85); the visible test names it. Dividing after multiplying, int(2 * 4 * dim / 3),
# stays right.
MISTAKES["ex_05_5_1_solution"] += [
    ("05.5.1:divided-too-early", _width(m="2 * (4 * dim // 3)")),
]
RIGHT["ex_05_5_1_solution"] = [
    "import math\n" + _width(rounded="math.ceil(m / multiple_of) * multiple_of"),
    _width(m="8 * dim // 3", rounded="-(-m // multiple_of) * multiple_of"),
    _width(m="int(2 * 4 * dim / 3)"),
]

# 05.5.3: the residual sums halved, an average ((x + attention(...)) / 2), in both halves, in the first
# only, or in the second only (0.5 * (...)): the visible test and check_parts say a residual adds
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:residual-averaged", _BLOCK_START + "    h = (x + attention(attention_norm(x))) / 2\n"
     "    return (h + feed_forward(ffn_norm(h))) / 2\n"),
    ("05.5.3:residual-averaged", _BLOCK_START + "    h = (x + attention(attention_norm(x))) / 2\n"
     "    return h + feed_forward(ffn_norm(h))\n"),
    ("05.5.3:residual-averaged", _BLOCK_START + "    h = x + attention(attention_norm(x))\n"
     "    return 0.5 * (h + feed_forward(ffn_norm(h)))\n"),
]

# 05.5.3: a debug print that calls a part again (the output right), and a norm applied twice in a row (the
# output wrong): each part runs once per forward, and the message points at the print in the first case.
MISTAKES["ex_05_5_3_solution"] += [
    ("05.5.3:part-called-twice", _BLOCK_START + "    h = x + attention(attention_norm(x))\n"
     "    print(attention_norm(x).shape)\n    return h + feed_forward(ffn_norm(h))\n"),
    ("05.5.3:part-called-twice", _BLOCK_START + "    h = x + attention(attention_norm(attention_norm(x)))\n"
     "    return h + feed_forward(ffn_norm(h))\n"),
]
RIGHT["ex_05_5_3_solution"] = [
    *RIGHT.get("ex_05_5_3_solution", []),
    _BLOCK_START + "    normed = attention_norm(x)\n    print(normed.shape)\n"
    "    h = x + attention(normed)\n    return h + feed_forward(ffn_norm(h))\n",
]

# 05.5.2: a second SiLU on the output, after a right w2(silu(w1(x)) * w3(x)): the visible test and
# check_parts name it.
MISTAKES["ex_05_5_2_solution"] += [
    ("05.5.2:extra-silu-on-output", _swiglu(forward="F.silu(self.w2(F.silu(self.w1(x)) * self.w3(x)))")),
]
