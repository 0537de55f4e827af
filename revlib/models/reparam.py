"""The one-layer transformer of Zhu et al. 2024 (Section 4), in two forms.

Both read a sequence ``x_1 .. x_T`` whose last token ``x_T`` is the query and predict
``x_{T+1}``. The query attends to the context tokens ``x_1 .. x_{T-1}`` only (not to
itself), with weights ``b_t = softmax_t Z[x_T, x_t]``, and a residual carries the
query's own token, so that the logit of token ``k`` is

    ``logit(k) = sum_{t<T} b_t Y[x_t, k] + Y[x_T, k]``.

* :class:`Reparam` trains ``Y`` and ``Z`` (``[S, M, M]``) directly: the
  reparameterisation of Tian et al. (2023), ``Z = U W_Q W_K^T U^T / sqrt(d)``,
  ``Y = U W_V^T U^T``.
* :class:`OneLayer` is the transformer those matrices come from: frozen embeddings ``U``
  (``[S, M, d]``, orthonormal rows or Gaussian), trainable ``W_Q, W_K, W_V``
  (``[S, d, d]``); the value map ``W_V`` acts on the residual sum (attention output plus
  query embedding) and the unembedding is ``U`` itself. Its logits are exactly those of
  :class:`Reparam` at ``(Y, Z) = (effective_Y(), effective_Z())``, for any ``U``.

The residual term is our reading of the model (the paper's exact form was not available
to us); without it the relation token could not enter the logits at all when ``T = 2``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from revlib import _validate, repro

EMBEDDINGS = ("orthonormal", "gaussian")


def reparam_logits(
    Y: torch.Tensor, Z: torch.Tensor, ctx: torch.Tensor, query: torch.Tensor
) -> torch.Tensor:
    """``Y, Z [S, M, M]``, ``ctx [S, B, T-1]``, ``query [S, B]`` ids -> logits
    ``[S, B, M]``."""
    S, B, C = ctx.shape
    seeds = torch.arange(S)[:, None, None]
    scores = Z[seeds, query[..., None], ctx]  # [S, B, C]: Z[x_T, x_t]
    b = torch.softmax(scores, dim=-1)
    rows = Y[seeds, ctx]  # [S, B, C, M]: Y[x_t, :]
    own = Y[torch.arange(S)[:, None], query]  # [S, B, M]: Y[x_T, :] (residual)
    return (b[..., None] * rows).sum(dim=2) + own


def nll(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``logits [S, B, M]``, ``target [S, B]`` -> ``-log p(target)`` ``[S, B]``."""
    return -torch.gather(F.log_softmax(logits, dim=-1), 2, target[..., None]).squeeze(
        -1
    )


class Reparam(nn.Module):
    """``S`` reparameterised one-layer transformers: ``Y, Z [S, M, M]``, zero at the
    start."""

    def __init__(self, n_seeds: int, M: int):
        super().__init__()
        _validate.integer("n_seeds", n_seeds, 1, None)
        _validate.integer("M", M, 2, None)
        self.Y = nn.Parameter(torch.zeros(n_seeds, M, M))
        self.Z = nn.Parameter(torch.zeros(n_seeds, M, M))

    def forward(self, ctx: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        return reparam_logits(self.Y, self.Z, ctx, query)


def embedding_matrix(kind: str, M: int, d: int, seed: int) -> torch.Tensor:
    """Frozen embeddings ``U [M, d]``: ``"orthonormal"`` rows (needs ``d >= M``) or
    ``"gaussian"`` rows ``~ N(0, I_d / d)``."""
    _validate.choice("embedding", kind, EMBEDDINGS)
    g = repro.generator(seed)
    if kind == "gaussian":
        return torch.randn(M, d, generator=g) / math.sqrt(d)
    if d < M:
        raise ValueError(f"d must be >= M={M} for orthonormal embeddings, got {d}")
    q, _ = torch.linalg.qr(torch.randn(d, M, generator=g, dtype=torch.float64))
    return q.T.to(torch.get_default_dtype()).contiguous()


class OneLayer(nn.Module):
    """``S`` one-layer transformers with frozen embeddings ``U [S, M, d]`` and trainable
    ``W_Q, W_K, W_V [S, d, d]`` (i.i.d. ``N(0, init_std^2)``; ``W_V`` may start at
    zero)."""

    def __init__(
        self,
        n_seeds: int,
        M: int,
        d: int,
        embedding: str = "gaussian",
        init_std: float = 0.02,
        value_init: str = "zero",
        seed: int = 0,
    ):
        super().__init__()
        _validate.integer("n_seeds", n_seeds, 1, None)
        _validate.integer("d", d, 1, None)
        _validate.real("init_std", init_std, 0.0, 10.0)
        _validate.choice("value_init", value_init, ("zero", "random"))
        self.d = d
        self.register_buffer(
            "U",
            torch.stack(
                [embedding_matrix(embedding, M, d, seed + i) for i in range(n_seeds)]
            ),
        )

        def draw(offset):
            return (
                torch.stack(
                    [
                        torch.randn(d, d, generator=repro.generator(seed + i + offset))
                        for i in range(n_seeds)
                    ]
                )
                * init_std
            )

        self.W_Q = nn.Parameter(draw(10_007))
        self.W_K = nn.Parameter(draw(20_011))
        self.W_V = nn.Parameter(
            draw(30_011) if value_init == "random" else torch.zeros(n_seeds, d, d)
        )

    def forward(self, ctx: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """``ctx [S, B, T-1]``, ``query [S, B]`` -> logits ``[S, B, M]``."""
        S = ctx.shape[0]
        seeds = torch.arange(S)
        u_ctx = self.U[seeds[:, None, None], ctx]  # [S, B, C, d]
        u_q = self.U[seeds[:, None], query]  # [S, B, d]
        q = torch.einsum("sbd,sde->sbe", u_q, self.W_Q)
        k = torch.einsum("sbcd,sde->sbce", u_ctx, self.W_K)
        b = torch.softmax(
            torch.einsum("sbe,sbce->sbc", q, k) / math.sqrt(self.d), dim=-1
        )
        f = (b[..., None] * u_ctx).sum(dim=2) + u_q  # attention output + residual
        # logit(k) = f^T W_V^T u_k, i.e. rows of U W_V^T U^T weighted as in the
        # reparameterisation
        return torch.einsum("sbd,sed,sme->sbm", f, self.W_V, self.U)

    def effective_Y(self) -> torch.Tensor:
        """``Y = U W_V^T U^T``, ``[S, M, M]``."""
        return self.U @ self.W_V.transpose(1, 2) @ self.U.transpose(1, 2)

    def effective_Z(self) -> torch.Tensor:
        """``Z = U W_Q W_K^T U^T / sqrt(d)``, ``[S, M, M]``."""
        return (
            self.U
            @ self.W_Q
            @ self.W_K.transpose(1, 2)
            @ self.U.transpose(1, 2)
            / math.sqrt(self.d)
        )
