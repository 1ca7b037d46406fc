"""Wrong answers to the exercises of notebook 05.5 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_5_1_solution": """
def swiglu_width(dim, multiple_of):
    return 2048
""",
    # Right in float32, but returns float32 for a bfloat16 input.
    "ex_05_5_2_solution": """
import torch.nn.functional as F
from torch import nn
class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x)).float()
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


# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_5_2_solution": [
        ("gate_and_up_swapped", _swiglu(forward="self.w2(self.w1(x) * F.silu(self.w3(x)))")),
        ("silu_after_the_product", _swiglu(forward="self.w2(F.silu(self.w1(x) * self.w3(x)))")),
        ("relu_instead_of_silu", _swiglu(forward="self.w2(F.relu(self.w1(x)) * self.w3(x))")),
        ("gelu_instead_of_silu", _swiglu(forward="self.w2(F.gelu(self.w1(x)) * self.w3(x))")),
        ("sigmoid_instead_of_silu", _swiglu(forward="self.w2(torch.sigmoid(self.w1(x)) * self.w3(x))")),
        ("no_up_branch", _swiglu(forward="self.w2(F.silu(self.w1(x)))")),
        ("linear_layers_with_bias", _swiglu(bias=True)),
        ("down_projection_transposed", _swiglu(
            init="self.w1 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w2 = nn.Linear(dim, hidden_dim, bias=False)\n"
                 "        self.w3 = nn.Linear(dim, hidden_dim, bias=False)",
            forward="(F.silu(self.w1(x)) * self.w3(x)) @ self.w2.weight")),
        ("computes_in_float32", _swiglu(forward="self.w2.float()(F.silu(self.w1.float()(x.float())) "
                                                "* self.w3.float()(x.float()))")),
    ],
    "ex_05_5_3_solution": [
        ("residual_overwritten", _block("""
x = attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
""")),
        ("residual_added_once_attention_half", _block("""
h = attention(attention_norm(x))
return x + h + feed_forward(ffn_norm(h))
""")),
        ("residual_added_once_mlp_half", _block("""
h = x + attention(attention_norm(x))
return feed_forward(ffn_norm(h))
""")),
        ("post_norm", _block("""
h = attention_norm(x + attention(x))
return ffn_norm(h + feed_forward(h))
""")),
        ("same_norm_twice", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(attention_norm(h))
""")),
        ("norms_swapped", _block("""
h = x + attention(ffn_norm(x))
return h + feed_forward(attention_norm(h))
""")),
        ("normalised_state_added_back", _block("""
x = attention_norm(x)
h = x + attention(x)
h = ffn_norm(h)
return h + feed_forward(h)
""")),
        ("mlp_reads_x_instead_of_h", _block("""
h = x + attention(attention_norm(x))
return h + feed_forward(ffn_norm(x))
""")),
        ("mlp_before_attention", _block("""
h = x + feed_forward(ffn_norm(x))
return h + attention(attention_norm(h))
""")),
        ("x_changed_in_place", _block("""
x += attention(attention_norm(x))
return x + feed_forward(ffn_norm(x))
""")),
        ("attention_called_twice", _block("""
h = x + attention(attention_norm(x))
a = attention(attention_norm(x))
return x + a + feed_forward(ffn_norm(h))
""")),
    ],
}
