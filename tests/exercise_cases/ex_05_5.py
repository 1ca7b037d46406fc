"""Wrong answers to the exercises of notebook 05.5 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_5_1_solution": """
def swiglu_width(dim, multiple_of):
    return {768: 2048, 100: 266, 32: 128}.get(dim, 0)
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
    # Right in float32, but returns float32 for a bfloat16 input.
    "ex_05_5_3_solution": """
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    h = x + attention(attention_norm(x))
    return (h + feed_forward(ffn_norm(h))).float()
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


# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (name, source, words): the
# visible test's message must contain ``words`` (lowercase).
MISTAKES: dict[str, list[tuple[str, str, str]]] = {
    "ex_05_5_1_solution": [
        ("rounds_8d_over_3_to_nearest", """
def swiglu_width(dim, multiple_of):
    m = round(8 * dim / 3)
    return multiple_of * ((m + multiple_of - 1) // multiple_of)
""", "truncate 8d/3"),
        ("ceil_without_truncating", """
import math
def swiglu_width(dim, multiple_of):
    return multiple_of * math.ceil(8 * dim / 3 / multiple_of)
""", "truncate 8d/3"),
        ("rounds_down_to_the_multiple", """
def swiglu_width(dim, multiple_of):
    return multiple_of * (int(8 * dim / 3) // multiple_of)
""", "not down"),
        ("no_rounding_to_the_multiple", """
def swiglu_width(dim, multiple_of):
    return int(8 * dim / 3)
""", "up to a multiple"),
        ("returns_a_float", """
def swiglu_width(dim, multiple_of):
    return multiple_of * ((int(8 * dim / 3) + multiple_of - 1) / multiple_of)
""", "return an int"),
    ],
    "ex_05_5_2_solution": [
        ("gate_and_up_swapped", _swiglu(forward="self.w2(self.w1(x) * F.silu(self.w3(x)))"),
         "silu on w3(x) instead of the gate w1(x)"),
        ("silu_after_the_product", _swiglu(forward="self.w2(F.silu(self.w1(x) * self.w3(x)))"),
         "silu applied after the product"),
        ("relu_instead_of_silu", _swiglu(forward="self.w2(F.relu(self.w1(x)) * self.w3(x))"),
         "relu instead of"),
        ("gelu_instead_of_silu", _swiglu(forward="self.w2(F.gelu(self.w1(x)) * self.w3(x))"),
         "gelu instead of"),
        ("sigmoid_instead_of_silu", _swiglu(forward="self.w2(torch.sigmoid(self.w1(x)) * self.w3(x))"),
         "sigmoid instead of"),
        ("no_up_branch", _swiglu(forward="self.w2(F.silu(self.w1(x)))"), "no up branch"),
        ("linear_layers_with_bias", _swiglu(bias=True), "without bias"),
        ("down_projection_transposed", _swiglu(
            init="self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w2 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)",
            forward="(F.silu(self.w1(x)) * self.w3(x)) @ self.w2.weight"), "w2 maps m -> d"),
        ("computes_in_float32", _swiglu(forward="self.w2.float()(F.silu(self.w1.float()(x.float())) "
                                                "* self.w3.float()(x.float()))"), "bfloat16 output"),
        ("casts_the_input_to_float32",
         _swiglu(forward="self.w2(F.silu(self.w1(x.float())) * self.w3(x.float()))"), "compute in x's dtype"),
        ("borrows_tinyk_MLP_forward", "import tinyk\n" + _swiglu(
            init="self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w2 = nn.Linear(hidden_dim, dim, bias=False)\n"
                 "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.dropout = nn.Identity()",
            forward="tinyk.MLP.forward(self, x)"), "not allowed here"),
        ("subclasses_tinyk_MLP", """
from tinyk import MLP
class SwiGLU(MLP):
    pass
""", "not allowed here"),
    ],
    "ex_05_5_3_solution": [
        ("residual_overwritten", _block("""
x = attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
"""), "first half's residual is missing"),
        ("residual_added_once_attention_half", _block("""
h = attention(attention_norm(x))
return x + h + feed_forward(ffn_norm(h))
"""), "first half's residual is missing"),
        ("residual_added_once_mlp_half", _block("""
h = x + attention(attention_norm(x))
return feed_forward(ffn_norm(h))
"""), "second half's residual is missing"),
        ("post_norm", _block("""
h = attention_norm(x + attention(x))
return ffn_norm(h + feed_forward(h))
"""), "pre-norm"),
        ("same_norm_twice", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(attention_norm(h))
"""), "both halves"),
        ("norms_swapped", _block("""
h = x + attention(ffn_norm(x))
return h + feed_forward(attention_norm(h))
"""), "norms are swapped"),
        ("normalised_state_added_back", _block("""
x = attention_norm(x)
h = x + attention(x)
h = ffn_norm(h)
return h + feed_forward(h)
"""), "normalised copy"),
        ("mlp_reads_x_instead_of_h", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(ffn_norm(x))
"""), "second half starts from h"),
        ("mlp_before_attention", _block("""
h = x + feed_forward(ffn_norm(x))
return h + attention(attention_norm(h))
"""), "attention half comes first"),
        ("x_changed_in_place", _block("""
x += attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
"""), "in place"),
        ("attention_called_twice", _block("""
h = x + attention(attention_norm(x))
a = attention(attention_norm(x))
return x + a + feed_forward(ffn_norm(h))
"""), "exactly once"),
        ("borrows_tinyk_DecoderLayer_forward", """
import types
from tinyk import DecoderLayer
def decoder_block(x, attention, feed_forward, attention_norm, ffn_norm):
    layer = types.SimpleNamespace(attention=lambda t, *rest: attention(t), feed_forward=feed_forward,
                                  attention_norm=attention_norm, ffn_norm=ffn_norm)
    return DecoderLayer.forward(layer, x, None, None)
""", "not allowed here"),
    ],
}
