"""What the theory of the reparameterised one-layer transformer predicts (Zhu et al.
2024, Section 4).

Notation as in the book: vocabulary ``[M]``, ``Y, Z in R^{M x M}``, training set of
``N`` sentences, loss ``L = (1/N) sum -log p(target | context, query)``. With one
context token (``T = 2``) the attention weight is 1 and ``Z`` does not enter the loss.
"""

from __future__ import annotations

import numpy as np
import torch


def gradient_Y(
    Y: torch.Tensor, ctx: torch.Tensor, query: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Analytic ``grad_Y L`` for one context token (``T = 2``).

    ``Y [S, M, M]``, ``ctx, query, target [S, N]`` ids. The logits of sentence ``n`` are
    ``Y[ctx_n] + Y[query_n]``, so with ``p_n`` its softmax

        ``grad_Y L = (1/N) sum_n (e_{ctx_n} + e_{query_n}) (p_n - e_{target_n})^T``.

    Row ``x`` of the gradient is zero unless ``x`` is a context or query token of some
    training sentence: a token never seen as input keeps its row of ``Y`` forever.

    Implements eq-onelayer-grad-y.
    """
    S, N = target.shape
    M = Y.shape[-1]
    s = torch.arange(S)[:, None]
    p = torch.softmax(Y[s, ctx] + Y[s, query], dim=-1)
    err = p - torch.nn.functional.one_hot(target, M).to(p.dtype)  # [S, N, M]
    grad = torch.zeros_like(Y)
    grad.scatter_add_(1, ctx[..., None].expand(-1, -1, M), err)
    grad.scatter_add_(1, query[..., None].expand(-1, -1, M), err)
    return grad / N


def forward_flow(
    t: np.ndarray, M: int, n: int, n_train: int, dt: float | None = None
) -> dict[str, np.ndarray]:
    """Gradient flow of the forward sentences "A_i -> B_i" from ``Y = 0`` (orthonormal
    embeddings).

    Row ``A_i`` of ``Y`` is used by sentence ``i`` only and row "->" by all ``n``
    forward sentences; no backward sentence touches either. By symmetry five numbers
    describe them: ``a = Y[A_i, B_i]``, ``b = Y[A_i, B_j]`` (``j != i``),
    ``c = Y[A_i, k]`` for the ``M - n`` non-B tokens, ``r_B = Y[->, B_j]`` and
    ``r_O = Y[->, k]`` (non-B). With ``p, q, w`` the probabilities of the target, of
    each other B and of each non-B token after "A_i ->",

        ``a' = (1-p)/N,  b' = -q/N,  c' = -w/N,
        r_B' = ((1-p) - (n-1) q)/N,  r_O' = -n w/N``.

    Integrated with RK4 (step ``dt``, default ``0.05 N``: every rate is at most
    ``1/N``). Returns ``Y_AB`` (``a``) and ``p`` at the times ``t``.

    Implements eq-onelayer-flow.
    """
    t = np.asarray(t, dtype=float)
    N = float(n_train)
    dt = 0.05 * N if dt is None else dt

    def rates(v):
        a, b, c, rB, rO = v
        la, lb, lc = a + rB, b + rB, c + rO
        top = max(la, lb, lc)
        ea, eb, ec = np.exp(la - top), np.exp(lb - top), np.exp(lc - top)
        z = ea + (n - 1) * eb + (M - n) * ec
        p, q, w = ea / z, eb / z, ec / z
        return np.array([(1 - p), -q, -w, (1 - p) - (n - 1) * q, -n * w]) / N, p

    v, now = np.zeros(5), 0.0
    out_a, out_p = np.empty_like(t), np.empty_like(t)
    for i in np.argsort(t):
        while now < t[i] - 1e-12:
            h = min(dt, t[i] - now)
            k1, _ = rates(v)
            k2, _ = rates(v + h / 2 * k1)
            k3, _ = rates(v + h / 2 * k2)
            k4, _ = rates(v + h * k3)
            v = v + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            now += h
        out_a[i] = v[0]
        out_p[i] = rates(v)[1]
    return {"Y_AB": out_a, "p": out_p}
