"""A small causal transformer, nanoGPT-like, for all three parts of the book.

Every parameter carries a leading seed axis ``S``, so ``S`` independent models (one per
seed) train as one batched model: activations are ``[S, B, T, d]`` and each matrix
product is a batched ``[S, ...]`` product. The switches are the ones the papers vary:
number of layers, heads and width; positional encoding (none / absolute / rotary);
learned or frozen embeddings and unembedding; tied or untied output; the feed-forward
block of each layer (``"mlp"``, ``"linear"`` or ``"none"``); LayerNorm on or off; the
query map fixed to the identity (the toy model of Chen et al.).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from revlib import _validate
from revlib.metrics import masked_mean

FF_KINDS = ("mlp", "linear", "none")
POSITIONS = ("none", "absolute", "rotary")


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture. ``ff`` is one kind for every layer or a tuple with one kind per
    layer."""

    vocab_size: int
    block_size: int
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    ff: str | tuple[str, ...] = "mlp"
    ff_mult: int = 4
    positional: str = "absolute"
    layernorm: bool = True
    tied: bool = True
    freeze_embeddings: bool = False
    freeze_unembedding: bool = False
    query_identity: bool = False
    init_std: float = 0.02
    embed_std: float | None = (
        None  # default init_std; 1/sqrt(d) for "random frozen" models
    )
    head_std: float | None = None  # untied unembedding; default embed_std

    def __post_init__(self):
        _validate.integer("vocab_size", self.vocab_size, 2, 10**6)
        _validate.integer("block_size", self.block_size, 1, 10**5)
        check_shape(self.n_layer, self.n_head, self.d_model, self.positional)
        for i, kind in enumerate(self.ff_kinds):
            _validate.choice(f"ff[{i}]", kind, FF_KINDS)
        if not isinstance(self.ff, str) and len(self.ff) != self.n_layer:
            raise ValueError(
                f"ff must name one kind per layer ({self.n_layer}), got {len(self.ff)}"
            )
        _validate.integer("ff_mult", self.ff_mult, 1, 64)
        for name in (
            "layernorm",
            "tied",
            "freeze_embeddings",
            "freeze_unembedding",
            "query_identity",
        ):
            _validate.boolean(name, getattr(self, name))
        if self.tied and self.freeze_unembedding != self.freeze_embeddings:
            raise ValueError(
                "freeze_unembedding must equal freeze_embeddings when tied=True"
            )
        if self.query_identity and self.n_head != 1:
            raise ValueError(
                f"n_head must be 1 when query_identity=True, got {self.n_head}"
            )
        _validate.real("init_std", self.init_std, 0.0, 10.0, lo_open=True)
        if self.embed_std is not None:
            _validate.real("embed_std", self.embed_std, 0.0, 10.0, lo_open=True)
        if self.head_std is not None:
            _validate.real("head_std", self.head_std, 0.0, 10.0, lo_open=True)

    @property
    def ff_kinds(self) -> tuple[str, ...]:
        return (self.ff,) * self.n_layer if isinstance(self.ff, str) else tuple(self.ff)


def check_shape(
    n_layer: int, n_head: int, d_model: int, positional: str = "absolute"
) -> None:
    """Validate a transformer's sizes as :class:`TransformerConfig` does, without
    building one (an experiment's Config checks them before it knows its vocabulary)."""
    _validate.integer("n_layer", n_layer, 1, 64)
    _validate.integer("n_head", n_head, 1, 64)
    _validate.integer("d_model", d_model, 1, 8192)
    if d_model % n_head:
        raise ValueError(
            f"d_model must be a multiple of n_head={n_head}, got {d_model}"
        )
    _validate.choice("positional", positional, POSITIONS)
    if positional == "rotary" and (d_model // n_head) % 2:
        raise ValueError(
            "d_model / n_head must be even for rotary positions, "
            f"got {d_model // n_head}"
        )


class SeedLinear(nn.Module):
    """``y = x @ W`` with one ``W [in, out]`` per seed: ``x [S, ..., in]`` ->
    ``[S, ..., out]``.

    ``W`` starts at zero: the model that owns the layer draws it, ``N(0, std^2)``, from
    the seed's own stream (:func:`draw_weights`), so building a layer draws nothing from
    the global random stream."""

    def __init__(self, n_seeds: int, d_in: int, d_out: int, std: float):
        super().__init__()
        self.std = std
        self.weight = nn.Parameter(torch.zeros(n_seeds, d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = torch.bmm(x.reshape(shape[0], -1, shape[-1]), self.weight)
        return y.reshape(*shape[:-1], y.shape[-1])


class SeedLayerNorm(nn.Module):
    """LayerNorm with per-seed gain and bias ``[S, d]`` (identity when disabled)."""

    def __init__(self, n_seeds: int, d: int, enabled: bool):
        super().__init__()
        self.enabled = enabled
        if enabled:
            self.gain = nn.Parameter(torch.ones(n_seeds, d))
            self.bias = nn.Parameter(torch.zeros(n_seeds, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
        return F.layer_norm(x, x.shape[-1:]) * self.gain.view(shape) + self.bias.view(
            shape
        )


def _rotary(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x [..., T, dh]`` (pairs of channels rotated by
    position)."""
    T, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (
        10000 ** (torch.arange(0, dh, 2, dtype=torch.get_default_dtype()) / dh)
    )
    ang = torch.arange(T, dtype=torch.get_default_dtype())[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class Attention(nn.Module):
    """Causal multi-head self-attention; keeps its last attention pattern when asked."""

    def __init__(self, S: int, cfg: TransformerConfig, out_std: float):
        super().__init__()
        d, std = cfg.d_model, cfg.init_std
        self.n_head, self.rotary = cfg.n_head, cfg.positional == "rotary"
        self.query_identity = cfg.query_identity
        self.q = None if cfg.query_identity else SeedLinear(S, d, d, std)
        self.k = SeedLinear(S, d, d, std)
        self.v = SeedLinear(S, d, d, std)
        self.o = SeedLinear(S, d, d, out_std)

    def forward(self, x: torch.Tensor, keep: list | None = None) -> torch.Tensor:
        S, B, T, d = x.shape
        H = self.n_head

        def heads(t):
            return t.view(S, B, T, H, d // H).transpose(2, 3)  # [S, B, H, T, dh]

        q = heads(x if self.query_identity else self.q(x))
        k, v = heads(self.k(x)), heads(self.v(x))
        if self.rotary:
            q, k = _rotary(q), _rotary(k)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // H)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        if keep is not None:
            keep.append(att.detach())
        y = (att @ v).transpose(2, 3).reshape(S, B, T, d)
        return self.o(y)


class FeedForward(nn.Module):
    """``"mlp"``: ``W2 relu(W1 x)`` with width ``ff_mult * d``; ``"linear"``:
    ``W x``."""

    def __init__(self, S: int, cfg: TransformerConfig, kind: str, out_std: float):
        super().__init__()
        d = cfg.d_model
        self.kind = kind
        if kind == "mlp":
            self.fc1 = SeedLinear(S, d, cfg.ff_mult * d, cfg.init_std)
            self.fc2 = SeedLinear(S, cfg.ff_mult * d, d, out_std)
        else:
            self.fc = SeedLinear(S, d, d, out_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "mlp":
            return self.fc2(F.relu(self.fc1(x)))
        return self.fc(x)


class Block(nn.Module):
    def __init__(self, S: int, cfg: TransformerConfig, ff_kind: str):
        super().__init__()
        out_std = cfg.init_std / math.sqrt(
            2 * cfg.n_layer
        )  # GPT-2's scaled residual init
        self.ln1 = SeedLayerNorm(S, cfg.d_model, cfg.layernorm)
        self.attn = Attention(S, cfg, out_std)
        self.ff = None if ff_kind == "none" else FeedForward(S, cfg, ff_kind, out_std)
        self.ln2 = SeedLayerNorm(S, cfg.d_model, cfg.layernorm) if self.ff else None

    def forward(self, x, keep=None, ff_off=False):
        x = x + self.attn(self.ln1(x), keep)
        if self.ff is not None and not ff_off:
            x = x + self.ff(self.ln2(x))
        return x


@dataclass
class Internals:
    """Filled by :meth:`Transformer.forward` when asked: attention patterns
    ``[S, B, H, T, T]`` per layer and the final residual stream ``[S, B, T, d]``."""

    attention: list[torch.Tensor] = field(default_factory=list)
    residual: torch.Tensor | None = None


class Transformer(nn.Module):
    """``S`` causal transformers sharing one architecture; tokens ``[S, B, T]`` ->
    logits ``[S, B, T, V]``."""

    def __init__(self, cfg: TransformerConfig, n_seeds: int, seed: int = 0):
        super().__init__()
        _validate.integer("n_seeds", n_seeds, 1, 1024)
        self.cfg, self.n_seeds = cfg, n_seeds
        d, V = cfg.d_model, cfg.vocab_size
        emb_std = cfg.embed_std if cfg.embed_std is not None else cfg.init_std
        self.wte = nn.Parameter(
            torch.empty(n_seeds, V, d), requires_grad=not cfg.freeze_embeddings
        )
        self.wpe = (
            nn.Parameter(
                torch.empty(n_seeds, cfg.block_size, d),
                requires_grad=not cfg.freeze_embeddings,
            )
            if cfg.positional == "absolute"
            else None
        )
        self.blocks = nn.ModuleList(Block(n_seeds, cfg, kind) for kind in cfg.ff_kinds)
        self.ln_f = SeedLayerNorm(n_seeds, d, cfg.layernorm)
        self.head = (
            None
            if cfg.tied
            else nn.Parameter(
                torch.empty(n_seeds, V, d), requires_grad=not cfg.freeze_unembedding
            )
        )
        head_std = cfg.head_std if cfg.head_std is not None else emb_std
        draw_weights(self, {"wte": emb_std, "wpe": emb_std, "head": head_std}, seed)

    def n_params(self) -> int:
        """Trainable parameters of one seed's model."""
        return sum(p[0].numel() for p in self.parameters() if p.requires_grad)

    def forward(
        self,
        idx: torch.Tensor,
        internals: Internals | None = None,
        ff_off: set[int] | frozenset = frozenset(),
    ) -> torch.Tensor:
        """``idx [S, B, T]`` -> logits ``[S, B, T, V]``. ``ff_off``: layers whose FF is
        skipped."""
        S, B, T = idx.shape
        if S != self.n_seeds or T > self.cfg.block_size:
            raise ValueError(
                f"idx must be [n_seeds={self.n_seeds}, B, T<={self.cfg.block_size}], "
                f"got {tuple(idx.shape)}"
            )
        seeds = torch.arange(S)[:, None, None]
        x = self.wte[seeds, idx]
        if self.wpe is not None:
            x = x + self.wpe[:, None, :T]
        keep = internals.attention if internals is not None else None
        for i, block in enumerate(self.blocks):
            x = block(x, keep, ff_off=i in ff_off)
        x = self.ln_f(x)
        if internals is not None:
            internals.residual = x.detach()
        out = self.wte if self.head is None else self.head
        return (x.reshape(S, B * T, -1) @ out.transpose(1, 2)).view(S, B, T, -1)


def draw_weights(model: nn.Module, stds: dict[str, float], seed: int) -> None:
    """Draw ``model``'s parameters named in ``stds`` and every :class:`SeedLinear`
    weight (with its ``std``), ``N(0, std^2)``, seed ``i`` of the batch from its own
    stream ``(seed + i, parameter name)``: a seed's model does not depend on how many
    seeds share the batch, and the global random stream is neither read nor moved."""
    stds = {
        **stds,
        **{
            f"{name}.weight": m.std
            for name, m in model.named_modules()
            if isinstance(m, SeedLinear)
        },
    }
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in stds:
                for i in range(p.shape[0]):
                    g = torch.Generator().manual_seed(_stream(seed + i, name))
                    p[i].copy_(torch.randn(p.shape[1:], generator=g) * stds[name])


def _stream(seed: int, name: str) -> int:
    """A seed for the stream of parameter ``name`` of model ``seed`` (stable across
    runs)."""
    h = 0
    for c in name:
        h = (h * 131 + ord(c)) % 2**31
    return (seed * 2**31 + h) % 2**63


def answer_loss(
    logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy per seed over the positions where ``mask`` is true.

    ``logits [S, B, T, V]``, ``targets [S, B, T]`` (the next token at each position),
    ``mask [S, B, T]`` bool -> ``[S]``.
    """
    nll = F.cross_entropy(logits.flatten(0, 2), targets.flatten(), reduction="none")
    return masked_mean(nll.view(targets.shape), mask)
