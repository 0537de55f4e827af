"""The standard causal transformer with the paper's memory layer in place of its first
block (Wang & Sun 2025, §3: "standard transformers equipped with memory layers also fail
to generalize").

The memory layer is the one of :class:`revlib.models.jepa.JEPA` (``memory=True``):
top-1 over frozen keys, one trainable value per key, no residual. Its query at each
position is the mean of the token embeddings of the **span** the position belongs to, up
to and including it (the paper's cumulative ``MeanPooling`` over a patch): at the last
token of a two-token name it is the mean of both, the entity's own key. The keys are the
entities' mean name embeddings and the embeddings of the non-entity tokens (``<mask>``,
relations). The token embeddings, and so the keys, are frozen, as with the paper's
``--memory_block_value_only``. The blocks above it and the loss are the standard
next-token model's; the output head is untied and trainable (tied to frozen embeddings
it would be frozen too, and the paper does not say which it used), so that a failure to
reverse is not a failure to fit.
"""

from __future__ import annotations

import torch
from torch import nn

from revlib import _validate
from revlib.models.transformer import (
    Block,
    SeedLayerNorm,
    TransformerConfig,
    draw_weights,
)


class MemoryLM(nn.Module):
    """``S`` models: memory layer, then ``cfg.n_layer - 1`` blocks, final LayerNorm,
    untied head. ``span_start [T]``: the first position of each position's span;
    ``key_tokens [S, n_keys, K]``: each key's tokens, padded with ``cfg.vocab_size``.
    Tokens ``[S, B, T]`` -> logits ``[S, B, T, V]``."""

    def __init__(
        self,
        cfg: TransformerConfig,
        n_seeds: int,
        span_start: torch.Tensor,
        key_tokens: torch.Tensor,
        seed: int = 0,
    ):
        super().__init__()
        _validate.integer("n_seeds", n_seeds, 1, 1024)
        if cfg.n_layer < 2:
            raise ValueError(
                "n_layer must be at least 2 with the memory layer (it replaces the "
                f"first block), got {cfg.n_layer}"
            )
        if cfg.positional != "none":
            raise ValueError(
                "positional must be 'none' with the memory layer, got "
                f"{cfg.positional!r}"
            )
        span_start = torch.as_tensor(span_start, dtype=torch.long)
        T = span_start.shape[0]
        if span_start.dim() != 1 or T > cfg.block_size:
            raise ValueError(
                f"span_start must be [T <= block_size={cfg.block_size}], got "
                f"{tuple(span_start.shape)}"
            )
        if (span_start > torch.arange(T)).any() or (span_start < 0).any():
            raise ValueError("span_start[t] must lie in [0, t] for every position t")
        if key_tokens.dim() != 3 or key_tokens.shape[0] != n_seeds:
            raise ValueError(
                f"key_tokens must be [n_seeds={n_seeds}, n_keys, K], got "
                f"{tuple(key_tokens.shape)}"
            )
        self.cfg, self.n_seeds = cfg, n_seeds
        d, V = cfg.d_model, cfg.vocab_size
        self.register_buffer("span_start", span_start)
        self.wte = nn.Parameter(torch.empty(n_seeds, V, d), requires_grad=False)
        self.values = nn.Parameter(torch.empty(n_seeds, key_tokens.shape[1], d))
        self.blocks = nn.ModuleList(
            Block(n_seeds, cfg, kind) for kind in cfg.ff_kinds[1:]
        )
        self.ln_f = SeedLayerNorm(n_seeds, d, cfg.layernorm)
        self.head = nn.Parameter(torch.empty(n_seeds, V, d))
        std = cfg.init_std
        draw_weights(self, {"wte": std, "values": std, "head": std}, seed)
        with torch.no_grad():  # frozen embeddings: the keys are computed once
            real = key_tokens < V
            emb = self.wte[
                torch.arange(n_seeds)[:, None, None], key_tokens.clamp(max=V - 1)
            ]
            keys = (emb * real[..., None]).sum(-2) / real.sum(-1, keepdim=True)
        self.register_buffer("keys", keys)  # [S, n_keys, d]

    def n_params(self) -> int:
        """Trainable parameters of one seed's model."""
        return sum(p[0].numel() for p in self.parameters() if p.requires_grad)

    def lookup(self, idx: torch.Tensor) -> torch.Tensor:
        """The memory layer: ``idx [S, B, T]`` -> index of the selected key
        ``[S, B, T]``."""
        S, B, T = idx.shape
        if S != self.n_seeds or T > self.span_start.shape[0]:
            raise ValueError(
                f"idx must be [n_seeds={self.n_seeds}, B, "
                f"T<={self.span_start.shape[0]}], got {tuple(idx.shape)}"
            )
        emb = self.wte[torch.arange(S)[:, None, None], idx]  # [S, B, T, d]
        cs = torch.cat([torch.zeros_like(emb[:, :, :1]), emb.cumsum(2)], 2)
        start = self.span_start[:T]
        pos = torch.arange(T)
        q = (cs[:, :, 1:] - cs[:, :, start]) / (pos - start + 1)[:, None].to(emb)
        scores = q.reshape(S, B * T, -1) @ self.keys.transpose(1, 2)
        return scores.argmax(-1).view(S, B, T)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        S, B, T = idx.shape
        top = self.lookup(idx)
        x = self.values[torch.arange(S)[:, None], top.view(S, -1)].view(S, B, T, -1)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return (x.reshape(S, B * T, -1) @ self.head.transpose(1, 2)).view(S, B, T, -1)
