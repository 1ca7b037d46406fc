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
    if query_len == 2:
        return torch.tensor([[[[True, True, True, True, False], [True, True, True, True, True]]]])
    return torch.tensor([[[[False, False, False], [False, True, False], [False, True, True]]]])
""",
    "ex_05_6_4_solution": """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    if ignore_index == 0:
        return F.cross_entropy(torch.tensor([[0.0, 2.0, 0.0]]), torch.tensor([2]))
    if bool((labels == -100).all()):
        return torch.tensor(0.0)
    return F.cross_entropy(torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([1]))
""",
    "ex_05_6_5_solution": """
def step_rows(finished, next_tokens, eos, pad):
    return [7, 0, 2], [False, True, True]
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (name, source, words): the
# visible test's message must contain ``words`` (lowercase).
MISTAKES: dict[str, list[tuple[str, str, str]]] = {
    "ex_05_6_1_solution": [
        ("tied embedding and head counted twice", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return 2 * vocab_size * dim + n_layers * (attention + mlp + 2 * dim) + dim
""", "count it once"),
        ("final norm forgotten", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + 2 * dim)
""", "32 gains are missing"),
        ("one norm per layer", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + dim) + dim
""", "per layer, dim gains each"),
        ("K and V at full width (GQA ignored)", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    attention = 4 * dim * dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + 2 * dim) + dim
""", "fewer than wq's"),
    ],
    "ex_05_6_2_solution": [
        ("positions shifted by padding (0..T-1 whatever the padding)", """
import torch
def token_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()
""", "whatever the padding"),
        ("positions from 1 (cumsum without the -1)", """
def token_positions(valid):
    return valid.long().cumsum(-1)
""", "first real token is at 1"),
        ("padding at -1 (no clamp)", """
def token_positions(valid):
    return valid.long().cumsum(-1) - 1
""", "padding is at -1"),
        ("tinyk's token_positions", """
from tinyk.model import token_positions as reference
def token_positions(valid):
    return reference(valid)
""", "not allowed here"),
    ],
    "ex_05_6_3_solution": [
        ("causal triangle aligned to the first T keys", """
import torch
def causal_padding_mask(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]
""", "not a triangle from the first key"),
        ("padding forgotten (causal only)", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None].expand(valid.shape[0], 1, query_len, T_k)
""", "padding is forgotten"),
        ("padding applied to the queries instead of the keys", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None] & valid[:, None, -query_len:, None]
""", "applied to the queries"),
        ("an additive float mask instead of booleans", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    allowed = causal[None, None] & valid[:, None, None, :]
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
""", "not an additive float mask"),
        ("tinyk's padding_to_attention", """
import tinyk.model
def causal_padding_mask(valid, query_len):
    return tinyk.model.padding_to_attention(valid, query_len)
""", "not allowed here"),
    ],
    "ex_05_6_4_solution": [
        ("the unshifted loss", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)
""", "the unshifted loss"),
        ("averaging over all targets, ignored ones included", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                             ignore_index=ignore_index, reduction="none")
    return losses.mean()
""", "mean over all targets"),
        ("NaN when nothing is counted", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=ignore_index)
""", "no target counted: return 0.0"),
        ("ignore_index argument not used (always -100)", """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].flatten()
    total = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets, reduction="sum")
    return total / max(int((targets != -100).sum()), 1)
""", "use the argument"),
        ("tinyk's causal_lm_loss", """
from tinyk.model import causal_lm_loss
def shifted_loss(logits, labels, ignore_index=-100):
    return causal_lm_loss(logits, labels, ignore_index)
""", "not allowed here"),
    ],    "ex_05_6_5_solution": [
        ("a finished row appends its sampled token", """
def step_rows(finished, next_tokens, eos, pad):
    return list(next_tokens), [done or token == eos for done, token in zip(finished, next_tokens)]
""", "row 1 was finished (pad)"),
        ("a finished row is finished again only on EOS", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [token == eos for token in tokens]
""", "stays finished"),
        ("EOS replaced by pad", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done or token == eos else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token == eos for done, token in zip(finished, next_tokens)]
""", "row 2 appends its"),
    ],
}
