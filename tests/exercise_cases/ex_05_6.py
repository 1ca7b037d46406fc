"""Wrong answers to the exercises of notebook 05.6 (see tests/test_exercises.py)."""

# A hard-coded answer per exercise that satisfies the visible asserts only: the hidden
# tests must reject it. Keyed by the solution cell's grade_id.
GUESSES = {
    "ex_05_6_1_solution": """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    return 19_008 if dim == 32 else 11_712 if dim == 48 else 11_520
""",
    "ex_05_6_2_solution": """
import torch
def token_positions(valid):
    if valid.shape[0] == 1:
        return torch.tensor([[0, 1, 2, 2, 2]])
    return torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
""",
    "ex_05_6_3_solution": """
import torch
def causal_padding_mask(valid, query_len):
    if valid.shape[0] == 1 and query_len == 3:
        return torch.tensor([[[[True, False, False], [True, True, False], [True, True, False]]]])
    if query_len == 2 and not bool(valid.all()):
        return torch.tensor([[[[False, False, True, True, False], [False, False, True, True, True]]]])
    if query_len == 2:
        return torch.tensor([[[[True, True, True, True, False], [True, True, True, True, True]]]])
    return torch.tensor([[[[False, False, False], [False, True, False], [False, True, True]]],
                         [[[True, False, False], [True, True, False], [True, True, True]]]])
""",
    "ex_05_6_4_solution": """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    if ignore_index == 0:
        return F.cross_entropy(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([2]))
    if bool((labels == -100).all()):
        return torch.tensor(0.0)
    if labels.shape[0] == 2:
        return F.cross_entropy(torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 1.0, 0.0]]),
                               torch.tensor([1, 2, 1]))
    return F.cross_entropy(torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([1]))
""",
    # pad fixed to the visible checks' 0 and 3
    "ex_05_6_5_solution": """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [(3 if eos == 9 else 0) if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token == eos for done, token in zip(finished, tokens)]
""",
}

# Solutions with one classic mistake each, which must lose the exercise's points, visibly.
# Keyed by the solution cell's grade_id; each value is a list of (mistake id, source): the
# mistake of tinyk.learner.mistakes that the visible test's message must name.
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "ex_05_6_1_solution": [
        ("05.6.1:tied-counted-twice", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return 2 * vocab_size * dim + n_layers * (attention + mlp + 2 * dim) + dim
"""),
        ("05.6.1:final-norm-forgotten", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + 2 * dim)
"""),
        ("05.6.1:one-norm-per-layer", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + dim) + dim
"""),
        # the package's own count of a model built with the package
        ("05.6.1:borrowed", """
from tinyk import ModelConfig, Transformer, count_parameters
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    config = ModelConfig(dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads,
                         vocab_size=vocab_size, hidden_dim=hidden_dim)
    return count_parameters(Transformer(config))
"""),
        # torch's count of the parameters of a model built with the package
        ("05.6.1:borrowed", """
import tinyk
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    model = tinyk.Transformer(tinyk.ModelConfig(dim=dim, n_layers=n_layers, n_heads=n_heads,
                                                n_kv_heads=n_kv_heads, vocab_size=vocab_size,
                                                hidden_dim=hidden_dim))
    return sum(p.numel() for p in model.parameters())
"""),
        ("05.6.1:kv-full-width", """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    attention = 4 * dim * dim
    mlp = 3 * dim * hidden_dim
    return vocab_size * dim + n_layers * (attention + mlp + 2 * dim) + dim
"""),
    ],
    "ex_05_6_2_solution": [
        ("05.6.2:positions-ignore-padding", """
import torch
def token_positions(valid):
    return torch.arange(valid.shape[1]).expand(valid.shape[0], -1).clone()
"""),
        ("05.6.2:positions-from-1", """
def token_positions(valid):
    return valid.long().cumsum(-1)
"""),
        ("05.6.2:padding-at-minus-1", """
def token_positions(valid):
    return valid.long().cumsum(-1) - 1
"""),
        ("05.6.2:borrowed", """
from tinyk.model import token_positions as reference
def token_positions(valid):
    return reference(valid)
"""),
    ],
    "ex_05_6_3_solution": [
        ("05.6.3:causal-from-first-key", """
import torch
def causal_padding_mask(valid, query_len):
    causal = torch.ones(query_len, valid.shape[1], dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]
"""),
        ("05.6.3:padding-forgotten", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None].expand(valid.shape[0], 1, query_len, T_k)
"""),
        ("05.6.3:padding-on-queries", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None] & valid[:, None, -query_len:, None]
"""),
        ("05.6.3:float-mask", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    allowed = causal[None, None] & valid[:, None, None, :]
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
"""),
        ("05.6.3:borrowed", """
import tinyk.model
def causal_padding_mask(valid, query_len):
    return tinyk.model.padding_to_attention(valid, query_len)
"""),
    ],
    "ex_05_6_4_solution": [
        ("05.6.4:unshifted-loss", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)
"""),
        ("05.6.4:mean-over-all-targets", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                             ignore_index=ignore_index, reduction="none")
    return losses.mean()
"""),
        ("05.6.4:nan-when-nothing-counted", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=ignore_index)
"""),
        ("05.6.4:ignore-index-unused", """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].flatten()
    total = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets, reduction="sum")
    return total / max(int((targets != -100).sum()), 1)
"""),
        # Hugging Face's shifted loss (transformers.loss), made to return 0.0 when nothing counts
        ("05.6.4:borrowed", """
import torch
from transformers.loss.loss_utils import ForCausalLMLoss
def shifted_loss(logits, labels, ignore_index=-100):
    if (labels[:, 1:] == ignore_index).all():
        return torch.zeros(())
    return ForCausalLMLoss(logits, labels, logits.shape[-1], ignore_index=ignore_index)
"""),
        ("05.6.4:borrowed", """
from tinyk.model import causal_lm_loss
def shifted_loss(logits, labels, ignore_index=-100):
    return causal_lm_loss(logits, labels, ignore_index)
"""),
    ],    "ex_05_6_5_solution": [
        ("05.6.5:finished-row-appends-token", """
def step_rows(finished, next_tokens, eos, pad):
    return list(next_tokens), [done or token == eos for done, token in zip(finished, next_tokens)]
"""),
        ("05.6.5:finished-again-only-on-eos", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [token == eos for token in tokens]
"""),
        ("05.6.5:eos-replaced-by-pad", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done or token == eos else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token == eos for done, token in zip(finished, next_tokens)]
"""),
    ],
}


# One wrong answer for each assertion of the hidden tests (or more, one per rule), each failing
# the visible test too, which names it (tests/test_visible_hidden.py). A right-padded row
# (05.6.2), a batch of two rows (05.6.3, 05.6.4) and the flags' type (05.6.5) were checked by
# the hidden tests only.
_NEW_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_6_2_solution": [
        ("05.6.2:float-positions", """
def token_positions(valid):
    return (valid.float().cumsum(-1) - 1).clamp(min=0)
"""),
        # right for left padding only: 0..T-1 minus the row's padding count
        ("05.6.2:shifted-by-padding-count", """
import torch
def token_positions(valid):
    n_pad = (~valid).sum(-1, keepdim=True)
    return (torch.arange(valid.shape[1]) - n_pad).clamp(min=0)
"""),
    ],
    "ex_05_6_3_solution": [
        # valid[:, None, :] is B×1×T_k: against 1×1×T×T_k it broadcasts to 1×B×T×T_k
        ("05.6.3:batch-on-head-axis", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return causal[None, None] & valid[:, None, :]
"""),
    ],
    "ex_05_6_4_solution": [
        ("05.6.4:mean-of-row-means", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    B, T, V = logits.shape
    losses = F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1),
                             ignore_index=ignore_index, reduction="none").view(B, T - 1)
    counted = (labels[:, 1:] != ignore_index).sum(1).clamp(min=1)
    return (losses.sum(1) / counted).mean()
"""),
        ("05.6.4:returns-a-number", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets,
                            ignore_index=ignore_index, reduction="sum")
    return (total / (targets != ignore_index).sum().clamp(min=1)).item()
"""),
    ],
    "ex_05_6_5_solution": [
        # NumPy's booleans, which compare equal to True and False
        ("05.6.5:numpy-bools", """
import numpy as np
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return tokens, list(np.logical_or(finished, np.array(tokens) == eos))
"""),
    ],
}
for _grade_id, _cases in _NEW_RULES.items():
    MISTAKES[_grade_id] = MISTAKES.get(_grade_id, []) + _cases

# The rules of the hidden tests, one wrong answer for each: those above, and classic mistakes
# the visible test already named.
_KNOWN = {mistake_id: source for cases in MISTAKES.values() for mistake_id, source in cases}
HIDDEN_RULES: dict[str, list[tuple[str, str]]] = {
    "ex_05_6_1_solution": [(m, _KNOWN[m]) for m in ("05.6.1:tied-counted-twice", "05.6.1:kv-full-width")],
    "ex_05_6_2_solution": [("05.6.2:positions-ignore-padding", _KNOWN["05.6.2:positions-ignore-padding"])]
    + _NEW_RULES["ex_05_6_2_solution"],
    "ex_05_6_3_solution": [(m, _KNOWN[m]) for m in ("05.6.3:float-mask", "05.6.3:causal-from-first-key",
                                                    "05.6.3:padding-forgotten")]
    + _NEW_RULES["ex_05_6_3_solution"],
    "ex_05_6_4_solution": [(m, _KNOWN[m]) for m in ("05.6.4:unshifted-loss", "05.6.4:ignore-index-unused",
                                                    "05.6.4:nan-when-nothing-counted")]
    + _NEW_RULES["ex_05_6_4_solution"],
    "ex_05_6_5_solution": [(m, _KNOWN[m]) for m in ("05.6.5:finished-row-appends-token",
                                                    "05.6.5:finished-again-only-on-eos")]
    + _NEW_RULES["ex_05_6_5_solution"],
}

# Mistakes the visible tests name since their inputs tell them apart: other counting mistakes
# (05.6.1), other wrong masks and the padding on the rows as well (05.6.3, caught by a
# right-padded row), a reversed or too long shift and other wrong means (05.6.4, on logits that
# differ at each position).
_COUNT = """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    mlp = {mlp}
    return {total}
"""
_RIGHT = "vocab_size * dim + n_layers * (attention + mlp + 2 * dim) + dim"
_MASK = """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).{triangle}
    return {mask}
"""
_KEYS = "causal[None, None] & valid[:, None, None, :]"
_LOSS = """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    logits, targets = {pairs}
    each = F.cross_entropy({logits}.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=ignore_index, reduction="none")
    return each.sum() / {count}
"""
_COUNTED = "(targets != ignore_index).sum().clamp(min=1)"
_SHIFTED = "logits[:, :-1], labels[:, 1:]"
MISTAKES["ex_05_6_1_solution"] += [
    # the tied head counted twice and the final norm forgotten
    ("05.6.1:two-mistakes", _COUNT.format(
        mlp="3 * dim * hidden_dim", total="2 * vocab_size * dim + n_layers * (attention + mlp + 2 * dim)")),
    ("05.6.1:norms-forgotten", _COUNT.format(mlp="3 * dim * hidden_dim",
                                             total="vocab_size * dim + n_layers * (attention + mlp)")),
    ("05.6.1:two-mlp-matrices", _COUNT.format(mlp="2 * dim * hidden_dim", total=_RIGHT)),
    ("05.6.1:layers-counted-once", _COUNT.format(mlp="3 * dim * hidden_dim",
                                                 total="vocab_size * dim + attention + mlp + 2 * dim + dim")),
]
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:padding-on-rows-too", _MASK.format(triangle="tril(T_k - query_len)",
                                                mask=_KEYS + " & valid[:, None, -query_len:, None]")),
    ("05.6.3:mask-inverted", _MASK.format(triangle="tril(T_k - query_len)", mask=f"~({_KEYS})")),
    ("05.6.3:upper-triangle", _MASK.format(triangle="triu(T_k - query_len)", mask=_KEYS)),
    ("05.6.3:diagonal-blocked", _MASK.format(triangle="tril(T_k - query_len - 1)", mask=_KEYS)),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:shift-reversed", _LOSS.format(pairs="logits[:, 1:], labels[:, :-1]", logits="logits",
                                           count=_COUNTED)),
    ("05.6.4:divided-by-numel", _LOSS.format(pairs=_SHIFTED, logits="logits", count="labels.numel()")),
    ("05.6.4:softmax-before-loss", _LOSS.format(pairs=_SHIFTED, logits="logits.softmax(-1)", count=_COUNTED)),
    ("05.6.4:shifted-too-far", _LOSS.format(pairs="logits[:, :-2], labels[:, 2:]", logits="logits",
                                            count=_COUNTED)),
]

# The right padding put at position 0, and the running count taken down the batch: the visible
# test and check_parts name both.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:right-padding-at-0", """
import torch
def token_positions(valid):
    return torch.where(valid, valid.long().cumsum(-1) - 1, 0)
"""),
    ("05.6.2:cumsum-over-batch", """
def token_positions(valid):
    return (valid.long().cumsum(0) - 1).clamp(min=0)
"""),
]

# The finished list given changed in place, and a row that samples the pad id taken as finished:
# the visible test names both.
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:mutates-finished", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    for row, token in enumerate(tokens):
        finished[row] = finished[row] or token == eos
    return tokens, finished
"""),
    ("05.6.5:pad-finishes", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token in (eos, pad) for done, token in zip(finished, tokens)]
"""),
]

# The B×(T-1)×V logits given to F.cross_entropy as they are (it reads dim 1 as the classes): the
# visible test names the RuntimeError.
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:classes-not-on-dim-1", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits[:, :-1].float(), labels[:, 1:], ignore_index=ignore_index)
"""),
]

# The ignored targets (-100) turned into class 0 and counted: the mean over every position, or
# their loss added to a sum divided by the counted targets. The visible test and check_parts name both.
_AS_CLASS_0 = """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    counted = (targets != ignore_index).sum().clamp(min=1)
    targets = {targets}
    return {loss}
"""
_FLAT = "F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets"
MISTAKES["ex_05_6_4_solution"] += [
    # the mean over every position (clamp(min=0) or torch.where)
    ("05.6.4:ignored-as-class-0", _AS_CLASS_0.format(targets="targets.clamp(min=0)", loss=_FLAT + ")")),
    ("05.6.4:ignored-as-class-0", _AS_CLASS_0.format(
        targets="torch.where(targets == ignore_index, 0, targets)", loss=_FLAT + ")")),
    # summed, over the counted targets
    ("05.6.4:ignored-as-class-0", _AS_CLASS_0.format(
        targets="targets.masked_fill(targets == ignore_index, 0)",
        loss=_FLAT + ', reduction="sum") / counted')),
]

# The finished flags as NumPy bools in a list, a NumPy array, or torch bool tensors: the visible
# test names each (numpy.bool_ prints as numpy.bool in NumPy 2).
_FLAGS = """
import {module}
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return tokens, {flags}
"""
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:numpy-bools", _FLAGS.format(module="numpy as np",
                                         flags="list(np.array(finished) | (np.array(tokens) == eos))")),
    ("05.6.5:numpy-array", _FLAGS.format(module="numpy as np",
                                         flags="np.array(finished) | (np.array(tokens) == eos)")),
    ("05.6.5:tensor-flags", _FLAGS.format(
        module="torch", flags="list(torch.tensor(finished) | (torch.tensor(tokens) == eos))")),
    ("05.6.5:tensor-flags", _FLAGS.format(module="torch",
                                          flags="torch.tensor(finished) | (torch.tensor(tokens) == eos)")),
    # the flags as ints, 1 and 0
    ("05.6.5:flags-not-bools", _FLAGS.format(
        module="math", flags="[int(done or token == eos) for done, token in zip(finished, tokens)]")),
]

# Further classic mistakes, each named by the visible test: 05.6.1 wo forgotten, the embedding
# forgotten, head_dim from /; 05.6.3 no head axis, valid not lined up (a RuntimeError), | for &;
# 05.6.4 .view on the slice logits[:, :-1], the summed loss not divided; 05.6.5 the two lists
# returned in the wrong order, tuples for lists.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:wo-forgotten", _COUNT.format(mlp="3 * dim * hidden_dim", total=_RIGHT).replace(
        "attention = 2 * dim * n_heads", "attention = dim * n_heads")),
    ("05.6.1:embedding-forgotten", _COUNT.format(mlp="3 * dim * hidden_dim",
                                                 total="n_layers * (attention + mlp + 2 * dim) + dim")),
    ("05.6.1:float-division", _COUNT.format(mlp="3 * dim * hidden_dim",
                                            total=_RIGHT).replace("dim // n_heads", "dim / n_heads")),
]
_MASK_WITH = """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[-1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return {mask}
"""
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:no-head-axis", _MASK_WITH.format(mask="causal[None] & valid[:, None, :]")),
    ("05.6.3:valid-not-lined-up", _MASK_WITH.format(mask="(causal & valid)[:, None]")),
    ("05.6.3:or-not-and", _MASK_WITH.format(mask="causal[None, None] | valid[:, None, None, :]")),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:view-of-slice", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(logits[:, :-1].view(-1, logits.shape[-1]), targets, ignore_index=ignore_index,
                            reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)
"""),
    ("05.6.4:sum-not-divided", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                           ignore_index=ignore_index, reduction="sum")
"""),
]
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:swapped-return", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [pad if done else token for done, token in zip(finished, next_tokens)]
    return [done or token == eos for done, token in zip(finished, tokens)], tokens
"""),
    ("05.6.5:tuples-not-lists", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = tuple(pad if done else token for done, token in zip(finished, next_tokens))
    return tokens, tuple(done or token == eos for done, token in zip(finished, tokens))
"""),
]

# 05.6.2's positions as int32 (.int()): the visible test names it apart from float positions.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:int32-positions", """
def token_positions(valid):
    return (valid.int().cumsum(-1) - 1).clamp(min=0).int()
"""),
]

# Writes into the caller's inputs: the padding flags turned into counts in valid itself (05.6.2), the
# ignored labels overwritten with 0 in labels itself (05.6.4). The visible tests and check_parts name them.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:writes-into-valid", """
def token_positions(valid):
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)
    valid[:] = positions > 0
    return positions
"""),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:writes-into-labels", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    keep = labels[:, 1:] != ignore_index
    labels[labels == ignore_index] = 0
    losses = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1),
                             reduction="none") * keep.reshape(-1)
    return losses.sum() / keep.sum().clamp(min=1)
"""),
]

# Answers that fit the first configuration only: wk and wv counted with H_q // H_kv heads, or as
# dim·dim // H_kv weights (05.6.1, where the tiny experiment's H_q // H_kv equals its H_kv), and the
# EOS and pad ids 2 and 0 written in (05.6.5).
_UNIQUE = """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * {kv}
    return vocab_size * dim + n_layers * (attention + 3 * dim * hidden_dim + 2 * dim) + dim
"""
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:kv-width-from-ratio", _UNIQUE.format(kv="dim * (n_heads // n_kv_heads) * head_dim")),
    ("05.6.1:kv-width-from-ratio", _UNIQUE.format(kv="dim * dim // n_kv_heads")),
]
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:ids-fixed", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [0 if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token == 2 for done, token in zip(finished, tokens)]
"""),
]

# The mask as 0s and 1s (.long()), and F.nll_loss given the raw logits: the visible tests name both
# (not "an additive float mask" nor "shift by one step").
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:integer-mask", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)
    return (causal[None, None] & valid[:, None, None, :]).long()
"""),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:nll-on-logits", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    return F.nll_loss(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                      ignore_index=ignore_index)
"""),
]

# Positions from the running count of the padding, abs() for the clamp, and the exclusive running count
# (cumsum - valid); a T×T triangle, query_len ignored, and the triangle shifted the wrong way: the
# visible tests name each, not only by the numbers or the shape.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:padding-counted", """
def token_positions(valid):
    return ((~valid).long().cumsum(-1) - 1).clamp(min=0)
"""),
    ("05.6.2:abs-not-clamp", """
def token_positions(valid):
    return (valid.long().cumsum(-1) - 1).abs()
"""),
    ("05.6.2:exclusive-cumsum", """
def token_positions(valid):
    return valid.long().cumsum(-1) - valid.long()
"""),
]
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:square-triangle", """
import torch
def causal_padding_mask(valid, query_len):
    causal = torch.ones(query_len, query_len, dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, -query_len:]
"""),
    ("05.6.3:query-len-ignored", """
import torch
def causal_padding_mask(valid, query_len):
    T_k = valid.shape[1]
    causal = torch.ones(T_k, T_k, dtype=torch.bool).tril()
    return causal[None, None] & valid[:, None, None, :]
"""),
    ("05.6.3:shift-flipped", _MASK.format(triangle="tril(query_len - T_k)", mask=_KEYS)),
]

# The labels shifted with roll(-1), the wrapped first label left as the last position's target: the
# visible test and check_parts name it.
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:roll-wraps", """
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    targets = labels.roll(-1, dims=1)
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                            ignore_index=ignore_index, reduction="sum")
    return total / (targets != ignore_index).sum().clamp(min=1)
"""),
]

# The two norms of each layer forgotten, the norms counted with hidden_dim, biases counted, hidden_dim
# ignored; eos and pad swapped, NumPy integers for the tokens: the visible tests name each.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:layer-norms-forgotten", _COUNT.format(
        mlp="3 * dim * hidden_dim", total="vocab_size * dim + n_layers * (attention + mlp) + dim")),
    ("05.6.1:norm-width-hidden", _COUNT.format(
        mlp="3 * dim * hidden_dim",
        total="vocab_size * dim + n_layers * (attention + mlp + 2 * hidden_dim) + dim")),
    ("05.6.1:biases-counted", _COUNT.format(  # wq, wk, wv, wo, then w1, w2, w3 with a bias each
        mlp="3 * dim * hidden_dim + 2 * hidden_dim + dim",
        total="vocab_size * dim + n_layers * (attention + 2 * dim + 2 * n_kv_heads * head_dim + mlp "
              "+ 2 * dim) + dim")),
    ("05.6.1:hidden-dim-ignored", _COUNT.format(mlp="3 * dim * (8 * dim // 3)", total=_RIGHT)),
]
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:ids-swapped", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [eos if done else token for done, token in zip(finished, next_tokens)]
    return tokens, [done or token == pad for done, token in zip(finished, tokens)]
"""),
    ("05.6.5:numpy-ints", """
import numpy as np
def step_rows(finished, next_tokens, eos, pad):
    tokens = np.where(np.array(finished), pad, np.array(next_tokens))
    return list(tokens), [bool(done) or bool(token == eos) for done, token in zip(finished, tokens)]
"""),
]

# The RoPE tables counted as parameters, whatever max_seq_len the learner takes (64, the tiny
# experiment's, as an argument; 512, ModelConfig's default; both tables, or one at full width), and
# with the final norm forgotten as well: the visible test tells them by heads twice as wide (tables
# twice as wide, the weights the same).
_ROPE_COUNTED = """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim, max_seq_len={M}):
    head_dim = dim // n_heads
    attention = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim
    rope = {rope}
    return vocab_size * dim + n_layers * (attention + 3 * dim * hidden_dim + 2 * dim) + {final}rope
"""
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:rope-tables-counted", _ROPE_COUNTED.format(M=64, rope="2 * max_seq_len * (head_dim // 2)",
                                                        final="dim + ")),
    ("05.6.1:rope-tables-counted", _ROPE_COUNTED.format(M=512, rope="max_seq_len * head_dim",
                                                        final="dim + ")),
    ("05.6.1:two-mistakes", _ROPE_COUNTED.format(M=64, rope="2 * max_seq_len * (head_dim // 2)", final="")),
]

# 05.6.1 with a bias β counted for each RMSNorm (as LayerNorm has), each norm's eps counted, and the MLP's
# width typed in as 4·dim (hidden_dim ignored; a wider hidden_dim given leaves the count as it is): the
# visible test names each, not only by the number.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:norm-bias-counted", _COUNT.format(
        mlp="3 * dim * hidden_dim",
        total="vocab_size * dim + n_layers * (attention + mlp + 4 * dim) + 2 * dim")),
    ("05.6.1:eps-counted", _COUNT.format(
        mlp="3 * dim * hidden_dim",
        total="vocab_size * dim + n_layers * (attention + mlp + 2 * dim + 2) + dim + 1")),
    ("05.6.1:hidden-dim-ignored", _COUNT.format(mlp="3 * dim * 4 * dim", total=_RIGHT)),
]

# 05.6.2 one count per row (valid.sum(-1)) and the slot's index kept for the real tokens; 05.6.3 the causal
# triangle alone (shape 1×1×T×T_k, the padding forgotten) and valid inverted; 05.6.4 the logits not cut at
# the last position (named, no raw ValueError) and both cut at the start; 05.6.5 a finished row left out:
# the visible tests name each, never by a shape, a raw error or only the numbers.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:count-per-row", """
def token_positions(valid):
    return valid.long().sum(-1)
"""),
    ("05.6.2:slot-index-kept", """
import torch
def token_positions(valid):
    return torch.where(valid, torch.arange(valid.shape[1]), 0)
"""),
]
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:padding-forgotten", _MASK.format(triangle="tril(T_k - query_len)", mask="causal[None, None]")),
    ("05.6.3:valid-inverted", _MASK.format(triangle="tril(T_k - query_len)",
                                           mask="causal[None, None] & ~valid[:, None, None, :]")),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:logits-not-cut", _LOSS.format(pairs="logits, labels[:, 1:]", logits="logits", count=_COUNTED)),
    ("05.6.4:both-cut-at-start", _LOSS.format(pairs="logits[:, 1:], labels[:, 1:]", logits="logits",
                                              count=_COUNTED)),
]
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:finished-row-skipped", """
def step_rows(finished, next_tokens, eos, pad):
    tokens = [token for done, token in zip(finished, next_tokens) if not done]
    return tokens, [done or token == eos for done, token in zip(finished, next_tokens)]
"""),
]

# 05.6.1: n_layers + 1 layers, the MLP multiplied by n_layers twice, every norm (the final one too) at
# hidden_dim, and two mistakes whose sum in the tiny experiment is another pair's (the two norms of each layer
# forgotten and biases counted, 384 too many like the tied head counted twice and the final norm forgotten):
# the visible test names each, the pair by a third config on which the two pairs differ.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:layers-plus-one", _COUNT.format(
        mlp="3 * dim * hidden_dim",
        total="vocab_size * dim + (n_layers + 1) * (attention + mlp + 2 * dim) + dim")),
    ("05.6.1:mlp-times-layers-twice", _COUNT.format(mlp="3 * dim * hidden_dim * n_layers", total=_RIGHT)),
    ("05.6.1:norm-width-hidden", _COUNT.format(
        mlp="3 * dim * hidden_dim",
        total="vocab_size * dim + n_layers * (attention + mlp + 2 * hidden_dim) + hidden_dim")),
    ("05.6.1:two-mistakes", _COUNT.format(  # each layer's norms forgotten, a bias for every linear layer
        mlp="3 * dim * hidden_dim + 2 * hidden_dim + dim",
        total="vocab_size * dim + n_layers * (attention + 2 * dim + 2 * n_kv_heads * head_dim + mlp) + dim")),
]

# Right answers in another honest style, which must pass the visible and the hidden tests: wq and wo as
# dim × dim, wk and wv by the ratio, and a table of shapes with a print.
RIGHT = {"ex_05_6_1_solution": [
    """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    attention = 2 * dim * dim + 2 * dim * dim * n_kv_heads // n_heads
    return vocab_size * dim + n_layers * (attention + 3 * dim * hidden_dim + 2 * dim) + dim
""",
    """
import math
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    hd = dim // n_heads
    shapes = {"wq": (n_heads * hd, dim), "wk": (n_kv_heads * hd, dim), "wv": (n_kv_heads * hd, dim),
              "wo": (dim, n_heads * hd), "w1": (hidden_dim, dim), "w2": (dim, hidden_dim),
              "w3": (hidden_dim, dim), "attention_norm": (dim,), "ffn_norm": (dim,)}
    per_layer = sum(math.prod(shape) for shape in shapes.values())
    print("per layer", per_layer)
    return vocab_size * dim + n_layers * per_layer + dim
"""]}

# Wrong counts that no catalogued mistake, alone or two at once, gives on every config the visible test
# tries: a vocabulary of V + 1, 64 more whatever the config, and the RoPE tables' share grown with
# head_dim², not head_dim. The test says how far off the count is and guesses no cause.
UNNAMED = {"ex_05_6_1_solution": [
    _COUNT.format(mlp="3 * dim * hidden_dim",
                  total=_RIGHT.replace("vocab_size * dim", "(vocab_size + 1) * dim")),
    _COUNT.format(mlp="3 * dim * hidden_dim", total=_RIGHT + " + 64"),
    _COUNT.format(mlp="3 * dim * hidden_dim", total=_RIGHT + " + head_dim * head_dim"),
]}

# 05.6: the running count over the flattened batch, arithmetic on the bool valid, float masks given to &
# and ~ (torch's NotImplementedError, not taken for a stub, and a TypeError), an int64 zero when nothing
# is counted, and step_rows returning a dict or the tokens alone.
_POSITIONS = "import torch\ndef token_positions(valid):\n"
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:count-across-rows", _POSITIONS
     + "    return (valid.long().flatten().cumsum(0) - 1).clamp(min=0).view(valid.shape)\n"),
    ("05.6.2:bool-arithmetic", _POSITIONS + "    return (valid - 1).cumsum(-1).clamp(min=0)\n"),
]
_MASK_START = "import torch\ndef causal_padding_mask(valid, query_len):\n    T_k = valid.shape[1]\n"
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:float-and", _MASK_START + "    causal = torch.ones(query_len, T_k).tril(T_k - query_len)\n"
     "    return causal[None, None] & valid[:, None, None, :]\n"),
    ("05.6.3:float-and", _MASK_START
     + "    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)\n"
     "    return causal[None, None] & valid.float()[:, None, None, :]\n"),
    ("05.6.3:float-invert", _MASK_START
     + "    blocked = torch.ones(query_len, T_k).triu(T_k - query_len + 1)\n"
     "    return ~blocked[None, None] & valid[:, None, None, :]\n"),
]
_SUMMED_LOSS = """
import torch
import torch.nn.functional as F
def shifted_loss(logits, labels, ignore_index=-100):
    V = logits.shape[-1]
    lg, tg = {pairs}
    total = F.cross_entropy(lg.reshape(-1, V), tg.reshape(-1), ignore_index=ignore_index, reduction="sum")
    count = (tg != ignore_index).sum()
{end}"""
_DIVIDED = "    return total / count.clamp(min=1)\n"
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:integer-zero", _SUMMED_LOSS.format(
        pairs="logits[:, :-1], labels[:, 1:]",
        end="    if count == 0:\n        return torch.tensor(0)\n    return total / count\n")),
]
_STEP_START = "def step_rows(finished, next_tokens, eos, pad):\n"
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:returns-dict", _STEP_START
     + "    tokens = [pad if f else t for f, t in zip(finished, next_tokens)]\n"
     "    return {'tokens': tokens, 'finished': [f or t == eos for f, t in zip(finished, tokens)]}\n"),
    ("05.6.5:tokens-only", _STEP_START
     + "    return [pad if f else t for f, t in zip(finished, next_tokens)]\n"),
]

# Right answers of 05.6 in other honest styles.
RIGHT |= {
    "ex_05_6_2_solution": [
        _POSITIONS + "    c = valid.cumsum(dim=1)\n"
        "    return torch.where(c > 0, c - 1, torch.zeros_like(c))\n",
        _POSITIONS + "    return (valid.int().cumsum(-1) - 1).clamp(min=0).long()\n",
        _POSITIONS + "    rows = []\n    for row in valid.tolist():\n        n, out = 0, []\n"
        "        for ok in row:\n            n += ok\n            out.append(max(n - 1, 0))\n"
        "        rows.append(out)\n    return torch.tensor(rows, dtype=torch.long)\n",
    ],
    "ex_05_6_3_solution": [
        _MASK_START + "    causal = torch.tril(torch.ones(query_len, T_k), diagonal=T_k - query_len).bool()\n"
        "    B = valid.shape[0]\n"
        "    return torch.logical_and(causal.expand(B, 1, query_len, T_k), valid[:, None, None, :])\n",
    ],
    "ex_05_6_4_solution": [
        _SUMMED_LOSS.format(pairs="logits[:, :-1].double(), labels[:, 1:]", end=_DIVIDED),
        "import torch\ndef shifted_loss(logits, labels, ignore_index=-100):\n"
        "    lp = logits[:, :-1].float().log_softmax(-1)\n    tg = labels[:, 1:]\n"
        "    keep = tg != ignore_index\n"
        "    picked = lp.gather(-1, tg.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
        "    return -(picked * keep).sum() / keep.sum().clamp(min=1)\n",
    ],
    "ex_05_6_5_solution": [
        "import numpy as np\n" + _STEP_START + "    f = np.array(finished, dtype=bool)\n"
        "    toks = np.where(f, pad, np.array(next_tokens))\n"
        "    return toks.tolist(), (f | (toks == eos)).tolist()\n",
    ],
}

# 05.6.4: a hand-written loss whose log-softmax runs over the batch axis
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:log-softmax-over-batch", """
def shifted_loss(logits, labels, ignore_index=-100):
    log_probs = logits[:, :-1].float().log_softmax(0)
    targets = labels[:, 1:]
    keep = targets != ignore_index
    nll = -log_probs.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (nll * keep).sum() / keep.sum().clamp(min=1)
"""),
]
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:clamp-max", """
def token_positions(valid):
    return (valid.long().cumsum(-1) - 1).clamp(max=0)
"""),
]

# 05.6.1: biases on the MLP's layers only, the final norm counted in every layer, the embedding counted
# in every layer (in the tiny experiment as many as the tied embedding counted twice), wk and wv
# without head_dim. The visible test names each.
_PER_LAYER = """
def unique_parameters(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim):
    head_dim = dim // n_heads
    layer = 2 * dim * n_heads * head_dim + 2 * dim * n_kv_heads * head_dim + 3 * dim * hidden_dim + 2 * dim
    return {total}
"""
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:biases-counted", _UNIQUE.format(kv="dim * n_kv_heads * head_dim").replace(
        "3 * dim * hidden_dim", "3 * dim * hidden_dim + 2 * hidden_dim + dim")),
    ("05.6.1:final-norm-per-layer", _PER_LAYER.format(total="vocab_size * dim + n_layers * (layer + dim)")),
    ("05.6.1:embedding-per-layer", _PER_LAYER.format(total="n_layers * (layer + vocab_size * dim) + dim")),
    ("05.6.1:kv-without-head-dim", _UNIQUE.format(kv="dim * n_kv_heads")),
]

# 05.6.1: biases counted on the attention's four layers only (wq, wk, wv, wo): the visible test names them
# with what they add.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:attention-biases", _PER_LAYER.format(
        total="vocab_size * dim + n_layers * (layer + 2 * dim + 2 * n_kv_heads * head_dim) + dim")),
]

# 05.6: the caller's valid changed in place (unsqueeze_ or fill_), the padding of the cached keys ignored
# (the visible test has a padded row with T < T_k), a 0/1 float mask (not called additive), a Python
# float 0.0 when nothing counts, the targets padded with 0 and the logits not cut (not blamed on roll),
# ids compared with `is` (an EOS id beyond the small ints Python keeps), and the running count of ~valid
# without the -1.
_TRIANGLE = "    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(T_k - query_len)\n"
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:writes-into-valid", _MASK_START + _TRIANGLE
     + "    return causal[None, None] & valid.unsqueeze_(1).unsqueeze_(1)\n"),
    ("05.6.3:writes-into-valid", _MASK_START + _TRIANGLE
     + "    out = causal[None, None] & valid[:, None, None, :]\n    valid.fill_(True)\n    return out\n"),
    ("05.6.3:cached-padding-ignored", _MASK_START + _TRIANGLE
     + "    keys = valid.clone()\n    keys[:, :T_k - query_len] = True\n"
     "    return causal[None, None] & keys[:, None, None, :]\n"),
    ("05.6.3:float-0-1-mask", _MASK_START + "    causal = torch.ones(query_len, T_k).tril(T_k - query_len)\n"
     "    return causal[None, None] * valid[:, None, None, :]\n"),
]
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:float-zero", _SUMMED_LOSS.format(
        pairs="logits[:, :-1], labels[:, 1:]",
        end="    if count == 0:\n        return 0.0\n    return total / count\n")),
    ("05.6.4:targets-padded-with-0", _SUMMED_LOSS.format(
        pairs="logits, torch.cat([labels[:, 1:], torch.zeros_like(labels[:, :1])], 1)", end=_DIVIDED)),
]
MISTAKES["ex_05_6_5_solution"] += [
    ("05.6.5:is-not-equals", _STEP_START
     + "    tokens = [pad if f else t for f, t in zip(finished, next_tokens)]\n"
     "    return tokens, [f or (t is eos) for f, t in zip(finished, tokens)]\n"),
]
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:padding-counted", _POSITIONS + "    return (~valid).long().cumsum(-1)\n"),
]
RIGHT["ex_05_6_3_solution"] += [
    _MASK_START + "    if query_len == 1:\n        return valid[:, None, None, :].clone()\n" + _TRIANGLE
    + "    return causal[None, None] & valid[:, None, None, :]\n",
    _MASK_START + "    keys = valid.unsqueeze(1).unsqueeze(1)\n" + _TRIANGLE + "    return keys & causal\n",
]
RIGHT["ex_05_6_4_solution"] += [
    _SUMMED_LOSS.format(pairs="logits, F.pad(labels[:, 1:], (0, 1), value=ignore_index)", end=_DIVIDED),
    "import torch\nimport torch.nn.functional as F\ndef shifted_loss(logits, labels, ignore_index=-100):\n"
    "    tg = labels[:, 1:].reshape(-1)\n    if (tg != ignore_index).sum() == 0:\n"
    "        return torch.tensor(0.0)\n"
    "    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), tg, "
    "ignore_index=ignore_index)\n",
]
RIGHT["ex_05_6_5_solution"] += [
    _STEP_START + "    done = list(finished)\n    toks = []\n    for i, t in enumerate(next_tokens):\n"
    "        if done[i]:\n            toks.append(pad)\n        else:\n            toks.append(t)\n"
    "            if t == eos:\n                done[i] = True\n    return toks, done\n",
]

# 05.6.2: the positions handed back as a NumPy array (.numpy()): the visible test says it is one, not a
# dtype. 05.6.3: a triangle whose diagonal offset is 1 with a cache (tril(0 if T == T_k else 1)), right
# without a cache: the visible test names the offset used.
MISTAKES["ex_05_6_2_solution"] += [
    ("05.6.2:numpy-array", _POSITIONS + "    return (valid.long().cumsum(-1) - 1).clamp(min=0).numpy()\n"),
]
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:shift-off", _MASK_START
     + "    causal = torch.ones(query_len, T_k, dtype=torch.bool).tril(0 if query_len == T_k else 1)\n"
     "    return causal[None, None] & valid[:, None, None, :]\n"),
]
# 05.6.1: one K/V matrix counted (wv forgotten): the visible test names it.
MISTAKES["ex_05_6_1_solution"] += [
    ("05.6.1:wv-forgotten", _COUNT.replace("2 * dim * n_kv_heads * head_dim", "dim * n_kv_heads * head_dim")
     .format(mlp="3 * dim * hidden_dim", total=_RIGHT)),
]
# 05.6.3: the padding alone, causality forgotten: the visible test and check_parts name it.
MISTAKES["ex_05_6_3_solution"] += [
    ("05.6.3:causality-forgotten", _MASK_START
     + "    return valid[:, None, None, :].expand(valid.shape[0], 1, query_len, T_k)\n"),
]
# 05.6.4: probabilities given to F.nll_loss, not log-probabilities: the visible test and check_parts name it.
MISTAKES["ex_05_6_4_solution"] += [
    ("05.6.4:nll-on-probabilities", "import torch.nn.functional as F\n"
     "def shifted_loss(logits, labels, ignore_index=-100):\n"
     "    probs = logits[:, :-1].softmax(-1)\n"
     "    return F.nll_loss(probs.reshape(-1, probs.shape[-1]), labels[:, 1:].reshape(-1), "
     "ignore_index=ignore_index)\n"),
]
