"""Closed forms for noisy in-context recall at initialisation (Chen, Bruna & Bietti
2025, Theorem 1, in the simplified form derived in the chapter).

The simplified predictor at a trigger position ``t`` (input ``q``) with orthonormal
embeddings (so weights are written directly as ``V x V`` matrices) is

    xi = W_F e_q + W_V h_t,      h_t = (1 / t) sum_{s <= t} e_{z_s}

(uniform attention over the context, the state at initialisation). At ``W_F = W_V = 0``
the prediction is uniform, ``p = 1 / V``, and the cross-entropy gradients are

    -grad_{W_F} L e_q = E[e_y] - 1/V,        -grad_{W_V} L = E[(e_y - 1/V) h_t^T].
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from revlib.data import noisy_recall as nr


def ff_signal(alpha, V: int = nr.VOCAB_SIZE):
    """Expected FF gradient column ``-grad W_F e_q`` at ``tau`` and at any other token:
    ``(alpha (1 - 1/V), -alpha / V)``; their difference, the margin it writes, is
    ``alpha``.

    Implements item 1 of thm-grad-init (eq-memory-gradient at
    eq-simplified-predictor)."""
    alpha = np.asarray(alpha, dtype=float)
    return alpha * (1 - 1 / V), -alpha / V


def ff_noise(alpha, n_positions, V: int = nr.VOCAB_SIZE):
    """Standard deviation of the empirical ``tau`` entry over ``n_positions`` loss
    positions, treating the labels as independent: ``sqrt(p (1 - p) / M)``,
    ``p = alpha + (1-alpha)/V``.

    Serves thm-grad-init (the noise of its FF signal; no equation label of its own)."""
    p = np.asarray(alpha, dtype=float) + (1 - np.asarray(alpha, dtype=float)) / V
    return np.sqrt(p * (1 - p) / np.asarray(n_positions, dtype=float))


def attention_signal_exact(mean_label_frequency, V: int = nr.VOCAB_SIZE):
    """Copy signal of ``-grad W_V``: mean diagonal minus mean off-diagonal entry, which
    equals ``(E[h_t(y)] - 1/V) / (V - 1)`` exactly (rows of ``E[(e_y - 1/V) h^T]`` sum
    to zero).

    Implements the left-hand side of eq-copy-signal."""
    return (np.asarray(mean_label_frequency, dtype=float) - 1 / V) / (V - 1)


def attention_signal_leading(alpha, rho, V: int = nr.VOCAB_SIZE):
    """Leading order of :func:`attention_signal_exact`: the label ``y`` sits at each of
    the ``n - 1`` earlier trigger-followers with probability ``(1 - alpha)^2 + alpha^2``
    (both ``ybar`` and ``tau`` are labels that copying rewards), and
    ``rho = E[(n - 1) / t]`` is the share of the context they occupy, so the signal is
    about ``((1 - alpha)^2 + alpha^2 - 1/V) rho / (V - 1) = O(1 / V)``.

    Implements the right-hand side of eq-copy-signal."""
    alpha = np.asarray(alpha, dtype=float)
    return ((1 - alpha) ** 2 + alpha**2 - 1 / V) * rho / (V - 1)


def context_histograms(data: nr.NoisyRecall, attention: bool = True) -> torch.Tensor:
    """``h_t`` ``[S, N, T, V]``: the share of each token among inputs ``z_1 .. z_t``.
    With ``attention=False`` (the attention removed, a control) the value path reads the
    current token only, ``h_t = e_{z_t}``.

    Implements h_t of eq-simplified-predictor."""
    if not attention:
        return F.one_hot(data.x, nr.VOCAB_SIZE).double()
    counts = F.one_hot(data.x, nr.VOCAB_SIZE).double().cumsum(dim=2)
    t = torch.arange(1, data.x.shape[2] + 1, dtype=torch.float64)
    return counts / t[:, None]


def init_gradients(data: nr.NoisyRecall) -> tuple[torch.Tensor, torch.Tensor]:
    """Empirical ``-grad_{W_F} L e_q`` ``[S, V]`` and ``-grad_{W_V} L`` ``[S, V, V]`` at
    ``W_F = W_V = 0`` over the loss positions of ``data`` (mean cross-entropy).

    Implements eq-memory-gradient at W_F = W_V = 0 for eq-simplified-predictor."""
    V = nr.VOCAB_SIZE
    m = data.mask.double()
    resid = F.one_hot(data.y, V).double() - 1 / V  # [S, N, T, V]
    count = m.sum(dim=(1, 2))[:, None]
    g_f = (resid * m[..., None]).sum(dim=(1, 2)) / count
    h = context_histograms(data)
    g_v = torch.einsum("sntj,sntk->sjk", resid * m[..., None], h) / count[..., None]
    return g_f, g_v


def autograd_init_gradients(
    data: nr.NoisyRecall, attention: bool = True, h: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The same gradients as :func:`init_gradients`, measured independently of its
    formulas: ``torch.autograd`` through the cross-entropy of
    ``xi = W_F e_{z_t} + W_V h_t`` at ``W_F = W_V = 0``. Returns ``-grad_{W_F} L e_q``
    ``[S, V]``, ``-grad_{W_V} L`` ``[S, V, V]`` of the mean loss over the loss
    positions, and their count ``[S]`` (to pool chunks). ``h``:
    :func:`context_histograms` of ``data`` if already computed.

    Measures eq-memory-gradient for eq-simplified-predictor by autograd (the check of
    init_gradients)."""
    V = nr.VOCAB_SIZE
    h = context_histograms(data, attention) if h is None else h
    g_f, g_v, count = [], [], []
    for s in range(data.x.shape[0]):
        m = data.mask[s]
        w_f = torch.zeros(V, V, dtype=torch.float64, requires_grad=True)
        w_v = torch.zeros(V, V, dtype=torch.float64, requires_grad=True)
        logits = w_f[:, data.x[s][m]].T + h[s][m] @ w_v.T  # [P, V]
        loss = F.cross_entropy(logits, data.y[s][m])
        f, v = torch.autograd.grad(loss, (w_f, w_v))
        g_f.append(-f[:, data.trigger])
        g_v.append(-v)
        count.append(m.sum().double())
    return torch.stack(g_f), torch.stack(g_v), torch.stack(count)


def ff_margin(g_f: torch.Tensor, noise_token: int) -> torch.Tensor:
    """``tau`` entry minus the mean of the other entries of ``g_f``
    ``[..., V] -> [...]``; ``noise_token``: ``tau``, the data's ``noise_token``.

    Implements the FF margin of thm-grad-init, item 1."""
    V = g_f.shape[-1]
    tau = g_f[..., noise_token]
    return tau - (g_f.sum(-1) - tau) / (V - 1)


def copy_signal(g_v: torch.Tensor) -> torch.Tensor:
    """Mean diagonal minus mean off-diagonal entry of ``g_v`` ``[..., V, V] -> [...]``.

    Implements the copy signal of eq-copy-signal."""
    V = g_v.shape[-1]
    diag = torch.diagonal(g_v, dim1=-2, dim2=-1).sum(-1)
    return diag / V - (g_v.sum(dim=(-2, -1)) - diag) / (V * (V - 1))


def sequence_statistics(
    data: nr.NoisyRecall, attention: bool = True, h: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Per-sequence sums from which any batch's empirical gradients follow,
    ``[S, N, ...]``: ``n_pos`` loss positions, ``n_tau`` labels equal to ``tau``,
    ``sum_hy`` the summed ``h_t(y)``, ``diag`` ``[S, N, V]`` the summed copy entries
    ``(1{y=j} - 1/V) h_t(j)``, ``rho`` the summed ``(n - 1) / t``; ``attention`` as in
    :func:`context_histograms` (``h``: its value if already computed).

    Serves eq-memory-gradient and eq-copy-signal (their per-sequence sums)."""
    V = nr.VOCAB_SIZE
    m = data.mask.double()
    h = context_histograms(data, attention) if h is None else h
    hy = h.gather(-1, data.y[..., None])[..., 0]
    resid = F.one_hot(data.y, V).double() - 1 / V
    t = torch.arange(1, data.x.shape[2] + 1, dtype=torch.float64)
    return {
        "n_pos": m.sum(-1),
        "n_tau": ((data.y == data.noise_token) * m).sum(-1),
        "sum_hy": (hy * m).sum(-1),
        "diag": (resid * h * m[..., None]).sum(2),
        "rho": ((data.occurrence - 1).clamp_min(0) / t * m).sum(-1),
    }


def batch_estimates(
    stats: dict[str, torch.Tensor], batch: int
) -> dict[str, torch.Tensor]:
    """Split the sequences into consecutive batches of ``batch`` and return, per batch
    ``[S, K]``: ``ff_tau`` (the empirical ``tau`` entry of ``-grad W_F e_q``),
    ``ff_margin`` (``tau`` entry minus mean of the others), ``copy`` (the copy signal)
    and ``diag`` ``[S, K, V]`` (each diagonal entry of ``-grad W_V``).

    Serves eq-memory-gradient and eq-copy-signal (their per-batch estimates)."""
    V = nr.VOCAB_SIZE
    S, N = stats["n_pos"].shape
    K = N // batch

    def chunk(x):
        return x[:, : K * batch].reshape(S, K, batch, *x.shape[2:]).sum(2)

    n = chunk(stats["n_pos"])
    ff_tau = chunk(stats["n_tau"]) / n - 1 / V
    # the other entries sum to -ff_tau (the column sums to zero)
    ff_margin = ff_tau + ff_tau / (V - 1)
    hy = chunk(stats["sum_hy"]) / n
    return {
        "ff_tau": ff_tau,
        "ff_margin": ff_margin,
        "copy": (hy - 1 / V) / (V - 1),
        "diag": chunk(stats["diag"]) / n[..., None],
        "n_pos": n,
    }
