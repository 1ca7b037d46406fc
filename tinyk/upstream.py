"""The upstream Tiny-K code's behaviour, reproduced on purpose (sections 05.4, 05.6, 05.9).

Nothing here is how ``tinyk`` works: every function and class reproduces what Datawhale
Happy-LLM chapter 5 does, so the notebooks can run the quirk next to the corrected code in
:mod:`tinyk.model` and :mod:`tinyk.generation`. Two versions exist upstream:

- the **standalone file** ``k_model.py`` (:class:`UpstreamTransformer`): keyword aliases,
  a padding mask turned into ``mask > 0``, ``ignore_index`` = the pad id, the last
  position taken as ``mask.sum(1) - 1``, batched generation with per-row ``finished``;
- the **chapter text** (``UpstreamTransformer(config, text_version=True)``):
  ``ignore_index=0``, no padding mask, and :meth:`UpstreamTransformer.generate_text`
  stopping with ``if idx_next == stop_id``.

Shared by both: the flash switch that only checks that the API exists
(:class:`UpstreamAttention`), a hand-written path whose fully masked rows become NaN, the
scaled init on ``w3`` (:func:`upstream_init_`), and one output object stored on the module.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinyk.generation import sample_next_token
from tinyk.model import Attention, ModelConfig, Transformer, apply_rotary_emb, repeat_kv

__all__ = [
    "UpstreamOutput",
    "UpstreamAttention",
    "UpstreamTransformer",
    "upstream_init_",
    "prepare_attention_mask",
    "last_position_by_sum",
    "sft_masked_loss",
]


class UpstreamOutput(dict):
    """The upstream's output container: one object, created once, refilled by every call."""

    def __getattr__(self, name: str) -> Tensor | None:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


def upstream_init_(model: nn.Module, n_layers: int) -> None:
    """The upstream's init: ``N(0, 0.02)``, then ``0.02/sqrt(2L)`` on names ending in
    ``w3.weight`` or ``wo.weight`` (05.6).

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


def prepare_attention_mask(mask: Tensor | None) -> Tensor | None:
    """The standalone file's mask preparation: slice a 3-D/4-D mask to ``B×T``, keep ``> 0``.

    Right for 0/1 "valid token" flags; lossy for an additive mask: 0 (allowed) and -inf
    (blocked) are both ``<= 0``, so every position comes out False (05.6).
    """
    if mask is None:
        return None
    if mask.ndim == 4:
        mask = mask[:, 0, -1, :]  # B×1×T×T -> B×T, the last query's row
    elif mask.ndim == 3:
        mask = mask[:, -1, :]  # B×T×T -> B×T
    return mask > 0


def last_position_by_sum(valid: Tensor) -> Tensor:
    """The upstream's "last valid position": ``valid.sum(1) - 1``. Right for right padding
    only: ``[0, 0, 1, 1]`` gives 1, where the last real token is at 3 (05.6)."""
    return valid.long().sum(1) - 1


def sft_masked_loss(per_token_loss: Tensor, loss_mask: Tensor) -> Tensor:
    """The upstream SFT loss ``sum(loss * mask) / mask.sum()``: 0/0 = NaN for a batch with
    no counted (assistant) token."""
    loss_mask = loss_mask.reshape(-1).float()
    return torch.sum(per_token_loss.reshape(-1) * loss_mask) / loss_mask.sum()


class UpstreamAttention(Attention):
    """Attention as the upstream writes it.

    - ``self.flash`` is ``hasattr(F, "scaled_dot_product_attention")``: always True on
      PyTorch 2, whatever ``config.flash_attn`` says (05.4).
    - The hand-written path adds a ``-inf`` upper triangle, fills padded keys with ``-inf``
      and takes a plain ``softmax``: a query row with no allowed key becomes NaN.
    - K/V are expanded with ``repeat_kv`` before attention; RoPE positions are ``0..T-1``.
    """

    def __init__(self, config: ModelConfig, layer_id: int = 0) -> None:
        super().__init__(config, layer_id)
        self.flash = hasattr(F, "scaled_dot_product_attention")  # config.flash_attn not read

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor,  # type: ignore[override]
                attention_mask: Tensor | None = None, cache: object = None) -> Tensor:
        if cache is not None:
            raise ValueError("the upstream attention has no KV cache")
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q, k = apply_rotary_emb(q, k, cos, sin)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # B×H_q×T×d_h
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if self.flash:
            if attention_mask is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                allowed = causal[None, None] & attention_mask[:, None, None, :]
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            scores = scores + torch.full((T, T), float("-inf"), device=x.device).triu(1)
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
            out = F.softmax(scores.float(), dim=-1).type_as(q) @ v  # all -inf row: NaN
        out = out.transpose(1, 2).reshape(B, T, -1)
        return self.wo(out)


class UpstreamTransformer(Transformer):
    """The upstream model's interface and quirks over ``tinyk``'s layers (same state dict).

    ``forward(tokens, targets=None, **kwargs)``: ``tokens`` has no default, so
    ``model(input_ids=ids)`` raises ``TypeError`` before the body runs (05.6); targets are
    given already shifted; the loss goes to ``last_loss``, per token and unreduced.
    """

    def __init__(self, config: ModelConfig, text_version: bool = False) -> None:
        super().__init__(config)
        self.text_version = text_version
        for layer in self.layers:
            layer.attention = UpstreamAttention(config, layer.layer_id)
        upstream_init_(self, config.n_layers)
        self.last_loss: Tensor | None = None
        self.OUT = UpstreamOutput()

    def forward(self, tokens: Tensor, targets: Tensor | None = None,  # type: ignore[override]
                **kwargs: Tensor) -> UpstreamOutput:
        if "input_ids" in kwargs:
            tokens = kwargs["input_ids"]
        if "labels" in kwargs and not self.text_version:
            targets = kwargs["labels"]
        valid = None if self.text_version else prepare_attention_mask(kwargs.get("attention_mask"))
        T = tokens.shape[1]
        cos, sin = self.freqs_cos[:T], self.freqs_sin[:T]  # positions 0..T-1, padding or not
        h = self.dropout(self.tok_embeddings(tokens))
        for layer in self.layers:
            h = layer(h, cos, sin, valid)  # tinyk's DecoderLayer around the upstream attention
        h = self.norm(h)
        if targets is not None:
            logits = self.output(h)
            ignore = 0 if self.text_version else self.config.pad_token_id
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
        """The standalone file's batched ``generate``: prompts are packed with **left**
        padding, each row keeps a ``finished`` flag, EOS is appended and finished rows get
        the pad id. But ``forward`` takes each row's logits at ``mask.sum(1) - 1``, a
        right-padding rule, so a padded row reads a padding position at the first step
        and RoPE positions count the padding: the batch disagrees with each prompt alone."""
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
            finished |= idx_next == eos_token_id
            idx = torch.cat((idx, idx_next[:, None]), dim=1)
            mask = torch.cat((mask, torch.ones_like(mask[:, :1])), dim=1)
            if finished.all():
                break
        return torch.stack(new, dim=1)

