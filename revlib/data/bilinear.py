"""Reversal data for the bilinear model (Zhu et al. 2024, Section 3).

Vocabulary ``V = {v_1..v_m}``, ``v_j ~ N(0, I_d / d)`` i.i.d.; ``n`` pairs of distinct
tokens ``(x_i, y_i)``. Training set: every forward fact ``(x_i, y_i)`` and the reverse
facts ``(y_i, x_i)`` for ``i > k``; the first ``k`` reverse facts are held out (the
paper has ``k = 1``: the single test pair ``(y_1, x_1)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from revlib import _validate, repro


@dataclass(frozen=True)
class BilinearTask:
    """All tensors carry a leading seed axis ``S``.

    ``coords``: ``[S, m, r]`` the embeddings written in an orthonormal basis of their
    span (``r = min(d, m)``). Inner products are exactly those of the ``d``-dimensional
    embeddings, and gradient descent from any start never leaves the span (see
    :mod:`revlib.theory.bilinear`), so training in ``r`` coordinates is exact and costs
    nothing extra when ``d`` is large.
    ``x``, ``y``: ``[S, n]`` token ids of the pairs. ``train_in``, ``train_out``:
    ``[S, N]`` with ``N = 2n - k``. ``heldout_in``, ``heldout_out``: ``[S, k]``
    (``y_i -> x_i``, ``i <= k``). ``max_abs_cos``: ``[S]`` the largest ``|cos|`` between
    two distinct embeddings.
    """

    m: int
    d: int
    coords: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    train_in: torch.Tensor
    train_out: torch.Tensor
    heldout_in: torch.Tensor
    heldout_out: torch.Tensor
    max_abs_cos: torch.Tensor

    @property
    def n_seeds(self) -> int:
        return self.coords.shape[0]

    @property
    def n_train(self) -> int:
        return self.train_in.shape[1]


def embeddings(m: int, d: int, seed: int) -> torch.Tensor:
    """Gaussian vocabulary ``[m, d]`` with rows ``~ N(0, I_d / d)`` (so
    ``E|v|^2 = 1``)."""
    _validate.integer("m", m, 2, 100_000)
    _validate.integer("d", d, 1, 1_000_000)
    gen = repro.generator(seed)
    return torch.randn(m, d, generator=gen) / math.sqrt(d)


def span_coordinates(vocab: torch.Tensor) -> torch.Tensor:
    """``[..., m, d] -> [..., m, r]``: coordinates in an orthonormal basis of the rows'
    span.

    With ``vocab^T = Q R`` (reduced QR, ``Q`` orthonormal ``[d, r]``),
    ``vocab = R^T Q^T`` and the coordinates are ``R^T``; all inner products are
    preserved exactly.
    """
    _, r = torch.linalg.qr(vocab.transpose(-1, -2), mode="reduced")
    return r.transpose(-1, -2).contiguous()


def max_abs_cosine(vocab: torch.Tensor) -> torch.Tensor:
    """``[..., m, d] -> [...]``: largest ``|cos|`` between distinct rows."""
    unit = vocab / vocab.norm(dim=-1, keepdim=True)
    cos = unit @ unit.transpose(-1, -2)
    eye = torch.eye(cos.shape[-1], dtype=torch.bool)
    return cos.abs().masked_fill(eye, 0.0).amax(dim=(-2, -1))


def bilinear_task(
    m: int, n: int, d: int, n_reverse_heldout: int, seeds: list[int]
) -> BilinearTask:
    """Build the reversal task of the bilinear model for each seed in ``seeds``."""
    _validate.integer("m", m, 2, 100_000)
    _validate.integer("n", n, 1, m // 2)
    _validate.integer("d", d, 1, 1_000_000)
    _validate.integer("n_reverse_heldout", n_reverse_heldout, 1, n)
    seeds = _validate.seeds(seeds)
    coords, xs, ys, cosines = [], [], [], []
    for seed in seeds:  # a loop over seeds (few), each vectorised; never over examples
        vocab = embeddings(m, d, seed)
        tokens = torch.randperm(m, generator=repro.generator(seed + 1_000_003))[: 2 * n]
        xs.append(tokens[:n])
        ys.append(tokens[n:])
        coords.append(span_coordinates(vocab.double()).float())
        cosines.append(max_abs_cosine(vocab))
    x, y = torch.stack(xs), torch.stack(ys)
    k = n_reverse_heldout
    return BilinearTask(
        m=m,
        d=d,
        coords=torch.stack(coords),
        x=x,
        y=y,
        train_in=torch.cat([x, y[:, k:]], dim=1),
        train_out=torch.cat([y, x[:, k:]], dim=1),
        heldout_in=y[:, :k],
        heldout_out=x[:, :k],
        max_abs_cos=torch.stack(cosines),
    )
