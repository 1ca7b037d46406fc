"""Wrong answers to the exercises of notebook 05.6 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_6_1_solution": """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    return 19_008
""",
    "ex_05_6_2_solution": """
import torch
def token_positions(valid):
    return torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
""",
    "ex_05_6_3_solution": """
import torch
def causal_padding_mask(valid, query_len):
    return torch.tensor([[[[False, False, False], [False, True, False], [False, True, True]]]])
""",
    "ex_05_6_4_solution": """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([1]))
""",
    "ex_05_6_5_solution": """
def step_rows(finished, next_tokens, eos, pad):
    return [7, 0, 2], [False, True, True]
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points.
# Keyed by the solution cell's grade_id; each value is a list of (name, source).
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_6_2_solution": [
        ("positions shifted by padding (0..T-1 whatever the padding)", """
import torch
def token_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()
"""),
        ("positions from 1 (cumsum without the -1)", """
def token_positions(valid):
    return valid.long().cumsum(-1)
"""),
        ("padding at -1 (no clamp)", """
def token_positions(valid):
    return valid.long().cumsum(-1) - 1
"""),
    ],
    "ex_05_6_3_solution": [
        ("causal triangle aligned to the first T keys", """
import torch
def causal_padding_mask(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]
"""),
        ("padding forgotten (causal only)", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None].expand(valid.shape[0], 1, query_len, T_k)
"""),
        ("padding applied to the queries instead of the keys", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None] & valid[:, None, -query_len:, None]
"""),
        ("an additive float mask instead of booleans", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    allowed = causal[None, None] & valid[:, None, None, :]
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
"""),
    ],
    "ex_05_6_4_solution": [
        ("the unshifted loss", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)
"""),
        ("averaging over all targets, ignored ones included", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                             ignore_index=ignore_index, reduction="none")
    return losses.mean()
"""),
        ("NaN when nothing is counted", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=ignore_index)
"""),
        ("ignore_index argument not used (always -100)", """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].flatten()
    total = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets, reduction="sum")
    return total / max(int((targets != -100).sum()), 1)
"""),
    ],
}
