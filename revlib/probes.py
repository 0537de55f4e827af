"""Probes shared by the chapters: attention mass on chosen positions, feed-forward
margins, and the one SVD truncation routine (LASER-style low-rank ablation) of the book.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from revlib import _validate
from revlib.metrics import masked_mean, rank


def thin_svd(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Thin SVD of ``weight`` ``[..., m, n]`` in float64, as :func:`truncate` computes
    it: ``(U [..., m, k], S [..., k], Vh [..., k, n])`` with ``k = min(m, n)``. Pass it
    to :func:`truncate` to try several ranks of one matrix without repeating the SVD."""
    u, s, vh = torch.linalg.svd(weight.double(), full_matrices=False)
    return u, s, vh


def truncate(
    weight: torch.Tensor,
    rank: int,
    svd: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Best rank-``rank`` approximation of ``weight`` ``[..., m, n]`` (batched over
    leading axes, e.g. the seed axis): keep the ``rank`` largest singular values.
    ``rank = 0`` gives zeros (the layer is removed); ``rank >= min(m, n)`` returns the
    matrix unchanged. ``svd``: optional precomputed :func:`thin_svd` ``(weight)``; the
    result is then identical to the one computed without it."""
    _validate.integer("rank", rank, 0, None)
    full = min(weight.shape[-2:])
    if rank >= full:
        return weight.clone()
    if rank == 0:
        return torch.zeros_like(weight)
    u, s, vh = thin_svd(weight) if svd is None else svd
    approx = (u[..., :rank] * s[..., None, :rank]) @ vh[..., :rank, :]
    return approx.to(weight.dtype)


def rank_of_fraction(weight: torch.Tensor, fraction: float) -> int:
    """``floor(fraction * min(m, n))``: the rank LASER keeps for a fraction ``rho``."""
    _validate.real("fraction", fraction, 0.0, 1.0)
    return int(fraction * min(weight.shape[-2:]) + 1e-9)


@contextlib.contextmanager
def truncated(
    param: torch.nn.Parameter,
    rank: int,
    svd: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
):
    """Temporarily replace ``param`` by :func:`truncate` ``(param, rank, svd)``;
    restored exactly on exit."""
    saved = param.detach().clone()
    with torch.no_grad():
        param.copy_(truncate(saved, rank, svd))
    try:
        yield param
    finally:
        with torch.no_grad():
            param.copy_(saved)


def attention_mass(
    att: torch.Tensor, query: torch.Tensor, key: torch.Tensor
) -> torch.Tensor:
    """Mean attention mass that query positions put on key positions, per seed.

    ``att`` ``[S, B, H, T, T]`` (rows: queries), ``query`` ``[S, B, T]`` bool (which
    rows to average), ``key`` ``[S, B, T]`` bool (which columns to sum) -> ``[S]``
    (heads averaged).
    """
    mass = (att * key[:, :, None, None, :].to(att.dtype)).sum(-1).mean(2)  # [S, B, T]
    return masked_mean(mass, query)


def margin(logits: torch.Tensor, target: int) -> torch.Tensor:
    """Logit of ``target`` minus the largest other logit, ``[..., V] -> [...]``."""
    others = logits.clone()
    others[..., target] = float("-inf")
    return logits[..., target] - others.max(dim=-1).values


def chance_mrr(n_candidates: int) -> float:
    """Mean reciprocal rank of a uniform guess among ``n_candidates`` answers of the
    right type, ``H_n / n``. Chance must be counted over the candidates a model could
    confuse the answer with (e.g. the 240 tested entities), not over the whole
    vocabulary."""
    if isinstance(n_candidates, np.integer):
        n_candidates = int(n_candidates)
    _validate.integer("n_candidates", n_candidates, 1, None)
    return float(np.mean(1.0 / np.arange(1, n_candidates + 1)))


def diagonal_reciprocal_rank(block: np.ndarray, rows) -> np.ndarray:
    """Reciprocal rank of the diagonal entry ``block[r, r]`` within row ``r`` for each
    of ``rows``; ``block [n, n]`` holds the logits of the ``n`` candidate answers
    (columns) after each input (rows). Ties count against the answer
    (:func:`revlib.metrics.rank`)."""
    block = np.asarray(block)
    rows = np.asarray(list(rows))
    ranks = rank(torch.as_tensor(block[rows]), torch.as_tensor(block[rows, rows]))
    return 1.0 / ranks.numpy()
