"""JEPA for entity facts (Wang & Sun 2025, Section 3), in plain PyTorch with a seed
axis.

A fact ``h r <mask> t`` is four **patches**, each padded with ``<pad>`` to ``K`` tokens.

* **Recognition module** (``n_rec`` blocks): runs inside each patch on its own (causal,
  no positions) and returns the hidden state at the patch's last real token: the patch's
  **concept vector**. With ``memory=True`` it is replaced by the paper's memory layer at
  top-1 with frozen keys and embeddings: the mean of the patch's token embeddings
  selects the best-matching key and returns its (trainable) value, i.e. one free vector
  per entity.
* **Semantic module** (``n_sem`` blocks): runs causally over the concept vectors of
  ``h, r, <mask>``; its output at ``<mask>`` through a parameter-free RMS norm is the
  **predicted concept** of ``t``. With ``concept_ln="layernorm"`` (the paper's
  memory-layer script, ``concept_ln_type normal``) one learnable LayerNorm is applied to
  the prediction **and** to every candidate concept; its gain acts as a learned inverse
  temperature.
* **Loss**: in-batch InfoNCE with no temperature: the prediction is scored against the
  concept vectors of every patch of every example in the batch, and the gold class is
  the ``t`` patch of the same example. Gradients flow into the targets too (no
  stop-gradient, no EMA encoder).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from revlib import _validate
from revlib.metrics import masked_mean
from revlib.models.transformer import (
    Block,
    SeedLayerNorm,
    TransformerConfig,
    check_shape,
    draw_weights,
)


def resolve_concept_ln(concept_ln: str, memory: bool) -> str:
    """The concept norm an experiment's ``concept_ln`` asks for: ``"auto"`` is what the
    paper's scripts use, the learnable LayerNorm with the memory layer
    (``concept_ln_type normal``) and the parameter-free RMS norm without; ``"rms"`` and
    ``"layernorm"`` are kept as they are."""
    if concept_ln not in ("auto", "rms", "layernorm"):
        raise ValueError(
            f"concept_ln must be 'auto', 'rms' or 'layernorm', got {concept_ln!r}"
        )
    if concept_ln == "auto":
        return "layernorm" if memory else "rms"
    return concept_ln


def check_sizes(
    n_rec: int, n_sem: int, d_model: int, n_head: int, memory: bool
) -> None:
    """Validate a JEPA's sizes as :class:`JEPAConfig` does, without building one (an
    experiment's Config checks them before it knows its vocabulary)."""
    _validate.boolean("memory", memory)
    _validate.integer("n_rec", n_rec, 0 if memory else 1, 32)
    _validate.integer("n_sem", n_sem, 1, 32)
    if memory and n_rec != 1:
        raise ValueError(
            "n_rec must be 1 with memory=True (the memory layer replaces "
            f"it), got {n_rec}"
        )
    check_shape(n_rec + n_sem, n_head, d_model, "none")


@dataclass(frozen=True)
class JEPAConfig:
    """``vocab_size`` includes ``<pad>`` (the last id); ``patch_len`` tokens per
    patch."""

    vocab_size: int
    patch_len: int = 2
    n_rec: int = 1
    n_sem: int = 1
    d_model: int = 64
    n_head: int = 4
    memory: bool = False
    init_std: float = 0.02
    concept_ln: str = "rms"

    def __post_init__(self):
        _validate.integer("vocab_size", self.vocab_size, 2, 10**6)
        _validate.integer("patch_len", self.patch_len, 1, 16)
        check_sizes(self.n_rec, self.n_sem, self.d_model, self.n_head, self.memory)
        if self.concept_ln not in ("rms", "layernorm"):
            raise ValueError(
                f"concept_ln must be 'rms' or 'layernorm', got {self.concept_ln!r}"
            )
        _validate.real("init_std", self.init_std, 0.0, 10.0, lo_open=True)

    def block_config(self, n_layer: int) -> TransformerConfig:
        return TransformerConfig(
            vocab_size=self.vocab_size,
            block_size=max(self.patch_len, 3),
            n_layer=n_layer,
            n_head=self.n_head,
            d_model=self.d_model,
            positional="none",
            init_std=self.init_std,
        )


class JEPA(nn.Module):
    """``S`` JEPA models. ``patches [S, B, P, K]`` of token ids and ``last [S, B, P]``
    (index of each patch's last real token)."""

    def __init__(
        self,
        cfg: JEPAConfig,
        n_seeds: int,
        seed: int = 0,
        memory_keys: torch.Tensor | None = None,
    ):
        super().__init__()
        self.cfg, self.n_seeds = cfg, n_seeds
        bc = cfg.block_config(cfg.n_rec + cfg.n_sem)
        d = cfg.d_model
        self.wte = nn.Parameter(
            torch.empty(n_seeds, cfg.vocab_size, d), requires_grad=not cfg.memory
        )
        self.rec = nn.ModuleList(
            [] if cfg.memory else [Block(n_seeds, bc, "mlp") for _ in range(cfg.n_rec)]
        )
        self.sem = nn.ModuleList(Block(n_seeds, bc, "mlp") for _ in range(cfg.n_sem))
        self.concept_ln = SeedLayerNorm(n_seeds, d, cfg.concept_ln == "layernorm")
        if cfg.memory:
            if memory_keys is None:
                raise ValueError(
                    "memory=True needs memory_keys: "
                    "[S, n_keys, K] token ids of each key's patch"
                )
            self.register_buffer("key_tokens", memory_keys)
            self.values = nn.Parameter(torch.empty(n_seeds, memory_keys.shape[1], d))
        draw_weights(self, {"wte": cfg.init_std, "values": cfg.init_std}, seed)
        if cfg.memory:  # the embeddings are frozen, so the keys can be computed once
            with torch.no_grad():  # [S, n_keys, d]
                self.register_buffer("keys", self._mean_embedding(memory_keys))

    def _mean_embedding(self, patches: torch.Tensor) -> torch.Tensor:
        """Mean of the real (non-pad) token embeddings of each patch:
        ``[S, ..., K] -> [S, ..., d]``."""
        S = patches.shape[0]
        idx = (slice(None),) + (None,) * (patches.dim() - 1)
        emb = self.wte[torch.arange(S)[idx], patches]
        real = (patches != self.cfg.vocab_size - 1)[..., None]
        return masked_mean(emb, real, dim=-2)

    def concepts(self, patches: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """Recognition: ``patches [S, N, K]``, ``last [S, N]`` -> concept vectors
        ``[S, N, d]``."""
        S, N, K = patches.shape
        if self.cfg.memory:
            q = self._mean_embedding(patches)  # [S, N, d]
            top = (q @ self.keys.transpose(1, 2)).argmax(-1)  # top-1 key
            return self.values[torch.arange(S)[:, None], top]
        x = self.wte[torch.arange(S)[:, None, None], patches]  # [S, N, K, d]
        for blk in self.rec:
            x = blk(x)
        return x.gather(2, last[..., None, None].expand(-1, -1, 1, x.shape[-1]))[
            :, :, 0
        ]

    def predict(self, ctx: torch.Tensor) -> torch.Tensor:
        """Semantic module: context concepts ``[S, B, 3, d]`` -> predicted concept
        ``[S, B, d]``."""
        x = ctx
        for blk in self.sem:
            x = blk(x)
        out = x[:, :, -1]
        if self.cfg.concept_ln == "layernorm":
            return self.concept_ln(out)
        return out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + 1e-5)

    def candidates(self, concepts: torch.Tensor) -> torch.Tensor:
        """Concept vectors as InfoNCE candidates: unchanged (``rms``) or through the
        shared learnable LayerNorm (``layernorm``). ``[S, ..., d] -> [S, ..., d]``."""
        return self.concept_ln(concepts)

    def forward(self, patches: torch.Tensor, last: torch.Tensor):
        """``patches [S, B, 4, K]`` -> (prediction ``[S, B, d]``, candidate concepts
        ``[S, B, 4, d]``)."""
        S, B, P, K = patches.shape
        c = self.concepts(patches.reshape(S, B * P, K), last.reshape(S, B * P)).view(
            S, B, P, -1
        )
        return self.predict(c[:, :, :3]), self.candidates(c)

    def infonce(
        self, patches: torch.Tensor, last: torch.Tensor, dedupe: bool = False
    ) -> torch.Tensor:
        """In-batch InfoNCE of ``patches [S, B, P, K]`` (:func:`infonce_loss` of
        :meth:`forward`), per seed ``[S]``.

        ``dedupe``: the same loss in exact arithmetic with fewer products. A patch whose
        last real token is its first (``last == 0``: in the facts, the relation and the
        ``<mask>`` patch) has a concept that depends on that token alone (causal blocks,
        no positions), so every such patch of the batch repeats one of a handful of
        concepts. They are computed once per distinct token, and each enters the
        InfoNCE denominator once with its count as weight (its logit plus the log of
        how often it occurs), which is what the repeated columns sum to. This halves
        the recognition module's work and the logits' at batch 1024. Round-off
        differs from the plain loss, so a run is bit-for-bit repeatable only with the
        same setting. Patch positions must be single-token in every example or in
        none, the gold (last) patch not single-token, and with the memory layer (which
        averages every real token, whatever ``last`` says) a single-token patch padded
        after its first token; otherwise the plain loss is used. For the CPU: the
        split and ``torch.unique`` read values on the host, which a captured CUDA graph
        cannot (:func:`revlib.train.train` then steps eagerly)."""
        split = self._single_token_split(patches, last) if dedupe else None
        if split is None:
            pred, c = self(patches, last)
            return infonce_loss(pred, c)
        single, multi = split
        S, B, P, K = patches.shape
        tokens, inverse = torch.unique(patches[:, :, single, 0], return_inverse=True)
        n_u = tokens.numel()
        table = self.concepts(
            tokens.view(1, n_u, 1).expand(S, n_u, 1).contiguous(),
            torch.zeros(S, n_u, dtype=torch.long),
        )  # [S, U, d]: the concept of each distinct single token
        many = self.concepts(
            patches[:, :, multi].reshape(S, B * len(multi), K),
            last[:, :, multi].reshape(S, B * len(multi)),
        ).view(S, B, len(multi), -1)
        seeds = torch.arange(S)[:, None]
        cols = [
            table[seeds, inverse[:, :, single.index(p)]]
            if p in single
            else many[:, :, multi.index(p)]
            for p in range(P)
        ]
        pred = self.predict(torch.stack(cols[:3], 2))
        counts = torch.zeros(S, n_u).scatter_add_(
            1, inverse.reshape(S, -1), torch.ones(S, B * len(single))
        )
        d = table.shape[-1]
        logits = torch.cat(
            [
                pred @ self.candidates(many).reshape(S, -1, d).transpose(1, 2),
                pred @ self.candidates(table).transpose(1, 2)
                + counts.log()[:, None, :],  # a token absent from a seed's batch: -inf
            ],
            -1,
        )
        gold = torch.arange(B) * len(multi) + multi.index(P - 1)
        return (
            F.cross_entropy(logits.flatten(0, 1), gold.repeat(S), reduction="none")
            .view(S, B)
            .mean(-1)
        )

    def _single_token_split(
        self, patches: torch.Tensor, last: torch.Tensor
    ) -> tuple[list[int], list[int]] | None:
        """The patch positions that are single-token in every example and those that are
        in none, for :meth:`infonce`'s ``dedupe``; None where it cannot apply (a mixed
        position, no single-token one, a single-token gold, or with the memory layer a
        single-token patch with a real token after its first)."""
        P = patches.shape[2]
        one = last == 0
        single = [p for p in range(P) if bool(one[..., p].all())]
        multi = [p for p in range(P) if not bool(one[..., p].any())]
        if not single or len(single) + len(multi) != P or (P - 1) not in multi:
            return None
        if self.cfg.memory and not bool(
            (patches[:, :, single, 1:] == self.cfg.vocab_size - 1).all()
        ):
            return None
        return single, multi


def infonce_loss(pred: torch.Tensor, concepts: torch.Tensor) -> torch.Tensor:
    """In-batch InfoNCE, temperature 1: ``pred [S, B, d]`` against all
    ``concepts [S, B, P, d]``; the gold class of example ``i`` is its last patch.
    Returns ``[S]``."""
    S, B, P, d = concepts.shape
    logits = pred @ concepts.reshape(S, B * P, d).transpose(1, 2)  # [S, B, B P]
    gold = torch.arange(B) * P + (P - 1)
    return (
        F.cross_entropy(logits.flatten(0, 1), gold.repeat(S), reduction="none")
        .view(S, B)
        .mean(-1)
    )
