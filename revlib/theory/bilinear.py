"""What the theory of the bilinear model predicts (Zhu et al. 2024, Section 3).

Notation as in the book: vocabulary ``V`` (``m`` tokens), embeddings ``x, y``, training
set ``D`` of ``N`` pairs, loss
``L(Theta) = (1/N) sum_{(x,y) in D} -log p_Theta(y | x)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def gradient(
    theta: torch.Tensor, vocab: torch.Tensor, inp: torch.Tensor, out: torch.Tensor
) -> torch.Tensor:
    """Analytic ``grad_Theta L = -(1/N) sum_i x_i (y_i - E_{p(.|x_i)}[v])^T``.

    Shapes: ``theta [S, r, r]``, ``vocab [S, m, r]``, ``inp``/``out`` ids ``[S, N]``.
    Every term is an outer product ``x (.)^T`` of embeddings, so the gradient lies in
    ``span(V) (x) span(V)``: gradient descent never leaves the span, which is why
    training in span coordinates is exact.

    Implements eq-bilinear-gradient.
    """
    r = vocab.shape[-1]
    x = torch.gather(vocab, 1, inp[..., None].expand(-1, -1, r))
    y = torch.gather(vocab, 1, out[..., None].expand(-1, -1, r))
    p = torch.softmax(x @ theta @ vocab.transpose(-1, -2), dim=-1)
    expected = p @ vocab
    return -(x.transpose(-1, -2) @ (y - expected)) / inp.shape[1]


def orthogonal_limit_train_loss(t: np.ndarray, m: int, n_train: int) -> np.ndarray:
    """Training loss under gradient flow from ``Theta_0 = 0`` when embeddings are
    orthonormal.

    Each training pair then evolves on its own: the target logit gains
    ``(1 - p)/N`` per unit time and each of the ``m - 1`` others loses
    ``(1 - p)/(N(m-1))``, so the margin ``s`` obeys ``ds/dt = m / (N (e^s + m - 1))``.
    Integrating from ``s = 0``:

        ``e^s + (m - 1) s - 1 = m t / N``,   ``L(t) = log(1 + (m - 1) e^{-s})``.

    This is the ``d -> infinity`` limit; the reverse loss stays at ``log m`` exactly
    there.

    Implements eq-bilinear-limit.
    """
    t = np.asarray(t, dtype=float)
    rhs = m * t / n_train
    s = np.log1p(rhs)  # a good start: e^s - 1 = rhs when m = 1
    for _ in range(60):  # Newton on a convex increasing function: monotone convergence
        f = np.exp(s) + (m - 1) * s - 1 - rhs
        s = s - f / (np.exp(s) + m - 1)
    return np.log1p((m - 1) * np.exp(-s))


def near_orthogonality_scale(m: int, d: np.ndarray) -> np.ndarray:
    """``sqrt(2 log m / d)``: the scale of the largest ``|cos|`` among ``m`` Gaussian
    embeddings in dimension ``d`` (Johnson-Lindenstrauss; why ``d = Omega(log m)``
    suffices).

    Serves thm-bilinear-separation (its near-orthogonality condition; no equation label
    of its own)."""
    return np.sqrt(2 * math.log(m) / np.asarray(d, dtype=float))


def smallest_epsilon(train_loss: np.ndarray, reverse_loss: np.ndarray) -> np.ndarray:
    """Smallest ``epsilon >= 0`` with ``Lrev_t / Lrev_0 >= (L_t / L_0)^epsilon`` for
    every ``t``.

    ``train_loss``, ``reverse_loss``: ``[T, S]``, row 0 at ``t = 0``. Taking logs, the
    bound reads ``log(Lrev_t/Lrev_0) >= epsilon * log(L_t/L_0)``, and
    ``log(L_t/L_0) < 0`` once training has started, so
    ``epsilon >= log(Lrev_t/Lrev_0) / log(L_t/L_0)`` for each ``t``. Returns ``[S]``.

    Implements the bound of thm-bilinear-separation (no equation label of its own).
    """
    ratio = np.log(train_loss[1:] / train_loss[:1])
    rev = np.log(reverse_loss[1:] / reverse_loss[:1])
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(ratio < 0, rev / ratio, 0.0)
    return np.maximum(need.max(axis=0), 0.0)


def initial_probability_range(
    theta0: torch.Tensor, vocab: torch.Tensor
) -> torch.Tensor:
    """``[S, 2]``: min and max of ``m * p_Theta0(y | x)`` over all ``x, y`` in ``V``.

    The pretrained-initialisation theorem needs ``1/(2m) < p < 2/m``, i.e. both in
    ``(1/2, 2)``.

    Implements the condition of thm-bilinear-pretrained on eq-bilinear-model.
    """
    m = vocab.shape[1]
    p = torch.softmax(vocab @ theta0 @ vocab.transpose(-1, -2), dim=-1) * m
    return torch.stack([p.amin(dim=(-2, -1)), p.amax(dim=(-2, -1))], dim=-1)
