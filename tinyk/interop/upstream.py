"""The upstream Tiny-K code's behaviour, reproduced on purpose (sections 05.4, 05.6, 05.9).

Nothing here is how ``tinyk`` works: every function and class reproduces what Datawhale
Happy-LLM chapter 5 does, so the notebooks can run the quirk next to the corrected code in
:mod:`tinyk.model` and :mod:`tinyk.generation`. Two versions exist upstream:

- the **standalone file** ``k_model.py`` (:class:`UpstreamTransformer`): keyword aliases,
  a 3-D/4-D mask cut to its first query row and turned into ``mask > 0``
  (:func:`prepare_attention_mask`), ``ignore_index`` = the pad id unless some target is
  -100, the last position taken as ``mask.sum(1) - 1``, batched generation with per-row
  ``finished``;
- the **chapter text** (``UpstreamTransformer(config, text_version=True)``):
  ``ignore_index=0``, no padding mask, and :meth:`UpstreamTransformer.generate_text`
  stopping with ``if idx_next == stop_id``.

Shared by both: the flash switch that only checks that the API exists
(:class:`UpstreamAttention`), a hand-written path whose fully masked rows become NaN, the
scaled init on ``w3`` (:func:`upstream_init_`), and one output object stored on the module.

The upstream's attention and decoder layer take a ``B×T`` valid-token mask
(``attention_mask``); ``tinyk``'s take a ``B×1×T×T_k`` one that already holds causality.
:class:`UpstreamAttention` and :class:`UpstreamDecoderLayer` keep the upstream's contract
in their own signatures instead of passing a ``B×T`` mask through ``tinyk``'s layer.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.generation import sample_next_token
from tinyk.model import MLP, ModelConfig, RMSNorm, Transformer, apply_rotary_emb, repeat_kv

__all__ = [
    "UpstreamOutput",
    "UpstreamAttention",
    "UpstreamDecoderLayer",
    "UpstreamTransformer",
    "upstream_init_",
    "prepare_attention_mask",
    "last_position_by_sum",
    "sft_masked_loss",
]
HOLDS_PARTS = True  # withheld from a graded run (tinyk.grading.learner_process.HIDDEN)


class UpstreamOutput(dict):
    """The upstream's output container: one object, created once, refilled by every call."""

    def __getattr__(self, name: str) -> Tensor | None:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


def upstream_init_(model: nn.Module, n_layers: int) -> None:
    """The upstream's init: standard deviation 0.02 (``N(0, 0.02²)``), then ``0.02/sqrt(2L)``
    on names ending in ``w3.weight`` or ``wo.weight`` (05.6).

    ``w3`` is the SwiGLU's second *up*-projection; the projection into the residual stream
    is ``w2``, which keeps the full 0.02. Since the MLP's output is linear in both, the
    residual stream's scale at init comes out the same either way; what changes is that
    the ``B×T×m`` hidden activation is ``sqrt(2L)`` times smaller and the large relative
    gradients land on ``w3`` instead of ``w2``.
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
    for name, p in model.named_parameters():
        if name.endswith(("w3.weight", "wo.weight")):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layers))


def prepare_attention_mask(mask: Tensor | None, tokens: Tensor | None = None) -> Tensor | None:
    """The standalone file's ``_prepare_attention_mask``, line by line (05.6).

    A 4-D mask becomes ``mask[:, 0, 0, :]`` and a 3-D one ``mask[:, 0, :]``: the **first**
    query row. For a ``B×T`` flag mask broadcast to those shapes that row is the flags; for
    a causal mask it is ``[1, 0, 0, …]``, so every key but the first comes out as padding.
    A mask that is not boolean becomes ``mask > 0``: right for 0/1 flags, lossy for an
    additive mask, where 0 (allowed) and -inf (blocked) are both ``<= 0`` and every
    position comes out False. With ``tokens`` (the upstream always passes them) the mask
    is moved to their device and must then have their shape.
    """
    if mask is None:
        return None
    if mask.dim() == 4:
        mask = mask[:, 0, 0, :]  # B×1×T×T_k -> B×T_k, the first query's row
    elif mask.dim() == 3:
        mask = mask[:, 0, :]  # B×T×T_k -> B×T_k, the first query's row
    if tokens is not None:
        mask = mask.to(tokens.device)
    if mask.dtype != torch.bool:
        mask = mask > 0
    if tokens is not None and mask.shape != tokens.shape:
        raise ValueError(f"attention_mask shape {mask.shape} must match input_ids shape {tokens.shape}")
    return mask


def last_position_by_sum(valid: Tensor) -> Tensor:
    """The upstream's "last valid position": ``valid.sum(1).clamp(min=1) - 1`` (05.6).

    Right for right padding only. For left padding it is a real token, too early: for
    ``[0, 0, 1, 1]`` it gives 1 (a padding position only because there are as many pads
    as real tokens), and for 8 pads then 12 real tokens it gives 11, the fourth real token
    where the last is at 19. A row with no real token gives 0.
    """
    return valid.long().sum(1).clamp(min=1) - 1


def sft_masked_loss(per_token_loss: Tensor, loss_mask: Tensor) -> Tensor:
    """The upstream SFT loss ``sum(loss * mask) / mask.sum()``: 0/0 = NaN for a batch with
    no counted (assistant) token."""
    loss_mask = loss_mask.reshape(-1).float()
    return torch.sum(per_token_loss.reshape(-1) * loss_mask) / loss_mask.sum()


class UpstreamAttention(nn.Module):
    """Attention as the upstream writes it, with its own mask contract (05.4).

    ``forward(x, freqs_cos, freqs_sin, attention_mask=None)``: ``attention_mask`` is a
    ``B×T`` valid-token mask (True = real token); causality is added inside. Same weights
    and state-dict names as :class:`tinyk.model.Attention`.

    - ``self.flash`` is ``hasattr(F, "scaled_dot_product_attention")``: always True on
      PyTorch 2, whatever ``config.flash_attn`` says.
    - The hand-written path adds a ``-inf`` upper triangle, fills padded keys with ``-inf``
      and takes a plain ``softmax``: a query row with no allowed key becomes NaN.
    - K/V are expanded with ``repeat_kv`` before attention; there is no KV cache.
    """

    def __init__(self, config: ModelConfig, layer_id: int = 0) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.n_heads, self.n_kv_heads = config.n_heads, config.n_kv_heads
        self.head_dim, self.n_rep = config.head_dim, config.n_rep
        self.wq = nn.Linear(config.dim, config.n_heads * config.head_dim, bias=False)
        self.wk = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wv = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.dropout = config.dropout
        self.flash = hasattr(F, "scaled_dot_product_attention")  # config.flash_attn not read

    def forward(self, x: Tensor, freqs_cos: Tensor, freqs_sin: Tensor,
                attention_mask: Tensor | None = None) -> Tensor:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)  # B×T×H_q×d_h
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)  # B×T×H_kv×d_h
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q, k = apply_rotary_emb(q, k, freqs_cos, freqs_sin)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # B×T×H_q×d_h
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # B×H_q×T×d_h
        key_padding = None if attention_mask is None else attention_mask[:, None, None, :].bool()  # B×1×1×T
        dropout_p = self.dropout if self.training else 0.0
        if self.flash:
            if key_padding is not None:
                causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal[None, None] & key_padding,
                                                     dropout_p=dropout_p, is_causal=False)
            else:
                out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # B×H_q×T×T
            scores = scores + torch.full((T, T), float("-inf"), device=x.device).triu(1)
            if key_padding is not None:
                scores = scores.masked_fill(~key_padding, float("-inf"))
            probs = F.softmax(scores.float(), dim=-1).type_as(q)  # a row of only -inf: NaN
            out = self.attn_dropout(probs) @ v
        out = out.transpose(1, 2).contiguous().view(B, T, -1)  # B×T×H_q·d_h
        return self.resid_dropout(self.wo(out))


class UpstreamDecoderLayer(nn.Module):
    """The upstream's pre-norm decoder layer, with its ``B×T`` mask contract (05.5).

    ``forward(x, freqs_cos, freqs_sin, attention_mask=None)`` hands the ``B×T`` valid-token
    mask to :class:`UpstreamAttention`. Built from its parts, which keep ``tinyk``'s
    state-dict names (``attention_norm``, ``attention``, ``ffn_norm``, ``feed_forward``).
    """

    def __init__(self, layer_id: int, attention_norm: RMSNorm, attention: UpstreamAttention,
                 ffn_norm: RMSNorm, feed_forward: MLP) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.attention_norm, self.attention = attention_norm, attention
        self.ffn_norm, self.feed_forward = ffn_norm, feed_forward

    def forward(self, x: Tensor, freqs_cos: Tensor, freqs_sin: Tensor,
                attention_mask: Tensor | None = None) -> Tensor:
        h = x + self.attention(self.attention_norm(x), freqs_cos, freqs_sin, attention_mask=attention_mask)
        return h + self.feed_forward(self.ffn_norm(h))


class UpstreamTransformer(Transformer):
    """The upstream model's interface and quirks over ``tinyk``'s layers (same state dict).

    ``forward(tokens, targets=None, **kwargs)``: ``tokens`` has no default, so
    ``model(input_ids=ids)`` raises ``TypeError`` before the body runs (05.6); targets are
    given already shifted; the loss goes to ``last_loss``, per token and unreduced, with
    ``ignore_index`` = the pad id, switched to -100 whenever any target is -100 (the
    chapter text: always 0). Its layers are :class:`UpstreamDecoderLayer`.
    """

    def __init__(self, config: ModelConfig, text_version: bool = False) -> None:
        super().__init__(config)
        self.text_version = text_version
        self.layers = nn.ModuleList(
            UpstreamDecoderLayer(layer.layer_id, layer.attention_norm,
                                 UpstreamAttention(config, layer.layer_id),
                                 layer.ffn_norm, layer.feed_forward)
            for layer in self.layers
        )
        upstream_init_(self, config.n_layers)
        self.last_loss: Tensor | None = None
        self.OUT = UpstreamOutput()

    def forward(self, tokens: Tensor, targets: Tensor | None = None,  # type: ignore[override]
                **kwargs: Tensor) -> UpstreamOutput:
        if "input_ids" in kwargs:
            tokens = kwargs["input_ids"]
        if "labels" in kwargs and not self.text_version:
            targets = kwargs["labels"]
        valid = None if self.text_version else prepare_attention_mask(kwargs.get("attention_mask"), tokens)
        T = tokens.shape[1]
        cos, sin = self.freqs_cos[:T], self.freqs_sin[:T]  # positions 0..T-1, padding or not
        h = self.dropout(self.tok_embeddings(tokens))
        for layer in self.layers:
            h = layer(h, cos, sin, attention_mask=valid)  # B×T valid-token mask
        h = self.norm(h)
        if targets is not None:
            logits = self.output(h)
            if self.text_version:
                ignore = 0
            else:  # the pad id, unless some target is -100
                ignore = -100 if bool((targets == -100).any()) else self.config.pad_token_id
            self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1),
                                             ignore_index=ignore, reduction="none")
        else:
            if valid is None:
                last = torch.full((h.shape[0],), T - 1, device=h.device)
            else:
                last = last_position_by_sum(valid)
            logits = self.output(h[torch.arange(h.shape[0], device=h.device), last][:, None])
            self.last_loss = None
        self.OUT["logits"] = logits
        self.OUT["last_loss"] = self.last_loss
        return self.OUT

    @torch.no_grad()
    def generate_text(self, idx: Tensor, stop_id: int | None = None, max_new_tokens: int = 256,
                      temperature: float = 1.0, top_k: int | None = None) -> Tensor:
        """The chapter text's ``generate``: returns only new tokens; stops with
        ``if idx_next == stop_id: break``, which raises "Boolean value of Tensor with more
        than one value is ambiguous" for a batch, and breaks *before* appending, so the
        stop token never comes back (05.9)."""
        start = idx.shape[1]
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.config.max_seq_len:]
            logits = self(idx_cond).logits[:, -1, :]
            idx_next = sample_next_token(logits, temperature, top_k, None)[:, None]  # B×1
            if idx_next == stop_id:
                break
            idx = torch.cat((idx, idx_next), dim=1)
        return idx[:, start:]

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], eos_token_id: int, max_new_tokens: int = 256,
                 temperature: float = 1.0, top_k: int | None = None) -> Tensor:
        """The standalone file's batched ``generate`` (05.6): prompts are packed with
        **left** padding, each row keeps a ``finished`` flag, EOS is appended, and a
        finished row gets the pad id (and a 0 in the mask).

        But ``forward`` reads each row's logits at ``mask.sum(1) - 1``, a right-padding
        rule. With left padding that index is a real token, only too early: prompts of 20
        and 12 tokens give the shorter row 8 pads, and ``sum - 1 = 11`` is its fourth real
        token, 8 positions before its last. Its first new token is the model's continuation
        of its first 4 tokens; every later step reads 8 positions behind the end (through
        its own prompt, then through its own output). The positions ``0..T-1``, which
        count the padding, change nothing by themselves: RoPE's attention scores depend on
        differences of positions, and all of a row's real tokens are shifted alike.
        """
        pad = self.config.pad_token_id
        width = max(len(p) for p in prompts)
        idx = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        finished = torch.zeros(len(prompts), dtype=torch.bool)
        new = []
        for _ in range(max_new_tokens):
            logits = self(idx[:, -self.config.max_seq_len:],
                          attention_mask=mask[:, -self.config.max_seq_len:]).logits[:, -1, :]
            idx_next = sample_next_token(logits, temperature, top_k, None)
            idx_next = torch.where(finished, torch.full_like(idx_next, pad), idx_next)
            new.append(idx_next)
            next_mask = (~finished).long()[:, None]  # a row finished before this step: 0
            finished |= idx_next == eos_token_id
            idx = torch.cat((idx, idx_next[:, None]), dim=1)
            mask = torch.cat((mask, next_mask), dim=1)
            if finished.all():
                break
        return torch.stack(new, dim=1)
