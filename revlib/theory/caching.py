"""The book's own theory of caching prediction with a linear head (not the paper's).

Chapter "Prompt caching via embedding similarity" (Part IV). The paper states
finite-sample guarantees "under different types of loss functions" but its theorems are
not public, so what follows is **this book's** model and statements, labelled so in the
chapter:

- the caching model ``P(q1 ≡ q2) = sigma(cos(v(q1), v(q2)) / lam - c)``
  (:func:`hit_probability`);
- a linear logit ``s_theta = theta^T psi`` on frozen pair features ``psi`` ``[n, D]``
  (``E psi psi^T = Sigma``) with a realisable teacher ``p* = sigma(theta*^T psi)``;
- **BCE with hard labels** ``y ~ Bernoulli(p*)`` is logistic maximum likelihood: its
  excess risk (the expected KL from the teacher) is ``D / (2 n)`` to first order
  (:func:`predicted_bce_hard`);
- a **squared logit difference (SLD)** against a soft teacher's logits ``z = s* + eps``
  (``Var eps = tau^2``) is least squares: excess KL ``tau^2 tr(Sigma^-1 H) / (2 n)``,
  ``H = E[sigma'(s*) psi psi^T]`` (:func:`predicted_sld`);
- **BCE on noisy soft labels** ``sigma(s* + eps)`` is biased (``E sigma(s + eps) !=
  sigma(s)``): its excess KL stops at a floor ``KL(theta_bar)``, where ``theta_bar``
  solves the population BCE equation (:func:`bce_soft_floor`).

:func:`simulate` measures the three excess risks against ``n`` by Monte Carlo. Shapes:
``psi`` ``[n, D]``, ``theta`` ``[D]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from revlib import _validate

KINDS = ("bce_hard", "sld_soft", "bce_soft_noisy")


def sigmoid(x):
    """The sigma of eq-caching-model."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


def hit_probability(cos, lam: float, c: float):
    """``sigma(cos / lam - c)``: the caching model's probability that a cached response
    answers the new prompt (``lam > 0`` a temperature, ``c`` an offset).

    Implements eq-caching-model."""
    _validate.real("lam", lam, 0.0, None, lo_open=True)
    return sigmoid(np.asarray(cos, dtype=float) / lam - c)


def kl_bernoulli(p, q) -> np.ndarray:
    """``KL(Bern(p) || Bern(q))`` elementwise (clipped away from 0 and 1).

    Implements the KL of eq-caching-risk."""
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    q = np.clip(np.asarray(q, dtype=float), 1e-12, 1 - 1e-12)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def excess_risk(theta, theta_star, psi) -> float:
    """``E_psi KL(sigma(theta*^T psi) || sigma(theta^T psi))``: the excess log-loss of
    ``theta`` over the teacher, averaged over the rows of ``psi`` ``[m, D]``.

    Implements eq-caching-risk."""
    return float(kl_bernoulli(sigmoid(psi @ theta_star), sigmoid(psi @ theta)).mean())


def fit_bce(psi, targets, ridge: float = 1e-6, iters: int = 50) -> np.ndarray:
    """Minimiser of the mean BCE between ``targets`` ``[n]`` (hard 0/1 or soft in
    [0, 1]) and ``sigma(psi theta)``, by Newton's method with a tiny ridge (for
    separable data).

    Serves thm-caching-bce and thm-caching-bias (the BCE fit; no equation label of its
    own)."""
    n, D = psi.shape
    theta = np.zeros(D)
    for _ in range(iters):
        p = sigmoid(psi @ theta)
        g = psi.T @ (p - targets) / n + ridge * theta
        H = (psi * (p * (1 - p))[:, None]).T @ psi / n + ridge * np.eye(D)
        step = np.linalg.solve(H, g)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta


def fit_sld(psi, logits) -> np.ndarray:
    """Minimiser of the mean squared logit difference ``(psi theta - z)^2``: least
    squares.

    Serves thm-caching-sld (the least-squares fit; no equation label of its own)."""
    return np.linalg.lstsq(psi, logits, rcond=None)[0]


def features(rng, n: int, D: int) -> np.ndarray:
    """Pair features ``[n, D]``, i.i.d. N(0, I / D) (so ``E |psi|^2 = 1``).

    Serves eq-caching-risk (the features psi; no equation label of its own)."""
    return rng.standard_normal((n, D)) / np.sqrt(D)


def teacher(rng, D: int, scale: float) -> np.ndarray:
    """``theta*`` of norm ``scale * sqrt(D)``, so that the teacher logits have standard
    deviation ``scale``.

    Serves eq-caching-risk (the teacher theta*; no equation label of its own)."""
    t = rng.standard_normal(D)
    return scale * np.sqrt(D) * t / np.linalg.norm(t)


def predicted_bce_hard(n, D: int) -> np.ndarray:
    """First-order excess KL of logistic maximum likelihood: ``D / (2 n)``.

    Implements the rate of thm-caching-bce."""
    return D / (2.0 * np.asarray(n, dtype=float))


def predicted_sld(n, theta_star, psi, tau: float) -> np.ndarray:
    """First-order excess KL of least squares on noisy logits:
    ``tau^2 tr(Sigma^-1 H) / (2 n)`` with ``Sigma``, ``H`` estimated on ``psi``
    ``[m, D]``.

    Implements the rate of thm-caching-sld."""
    s = psi @ theta_star
    w = sigmoid(s) * (1 - sigmoid(s))
    Sigma = psi.T @ psi / len(psi)
    H = (psi * w[:, None]).T @ psi / len(psi)
    return (
        tau**2
        * np.trace(np.linalg.solve(Sigma, H))
        / (2.0 * np.asarray(n, dtype=float))
    )


def bce_soft_floor(theta_star, tau: float, rng, m: int = 400_000) -> float:
    """Excess KL of the population minimiser of BCE on soft labels ``sigma(s* + eps)``,
    ``eps ~ N(0, tau^2)``: the floor that more data cannot lower (0 when ``tau = 0``).

    Implements the floor of thm-caching-bias."""
    psi = features(rng, m, len(theta_star))
    soft = sigmoid(psi @ theta_star + tau * rng.standard_normal(m))
    theta_bar = fit_bce(psi, soft)
    test = features(rng, m, len(theta_star))
    return excess_risk(theta_bar, theta_star, test)


@dataclass(frozen=True)
class Rates:
    """``excess[kind]`` ``[reps, len(n)]``; ``predicted[kind]`` ``[len(n)]`` (the floor
    line for ``bce_soft_noisy``); ``slope[kind]`` the least-squares slope of log mean
    excess risk against log n over ``n``."""

    n: np.ndarray
    excess: dict
    predicted: dict
    slope: dict
    floor: float


def loglog_slope(n, y) -> float:
    """Least-squares slope of ``log y`` against ``log n``.

    Serves thm-caching-sld and thm-caching-bce (their rates' slopes)."""
    return float(
        np.polyfit(np.log(np.asarray(n, float)), np.log(np.asarray(y, float)), 1)[0]
    )


def simulate(
    n_grid=(250, 1000, 4000, 16000),
    D: int = 16,
    scale: float = 2.0,
    tau: float = 1.0,
    reps: int = 5,
    seed: int = 0,
    m_test: int = 50_000,
    shuffle: bool = False,
    unbiased_soft: bool = False,
) -> Rates:
    """Excess risk of the three fits against ``n``. ``tau``: the teacher's logit noise
    (SLD's ``z = s* + eps`` and the noisy soft labels); ``shuffle``: permute the targets
    across samples (a control: the features then carry no information, and no rate
    survives); ``unbiased_soft``: the soft labels' noise is made zero-mean in
    probability (``sigma(s*) +- tau/2 * min(p, 1 - p)``, a control: BCE is then
    unbiased, no floor).

    Serves thm-caching-sld, thm-caching-bce and thm-caching-bias (eq-caching-risk
    against n)."""
    _validate.integer("D", D, 1, 10_000)
    _validate.integer("reps", reps, 1, 1_000)
    _validate.real("tau", tau, 0.0, None)
    n_grid = np.asarray(n_grid, dtype=int)
    rng = np.random.default_rng(seed)
    theta_star = teacher(rng, D, scale)
    test = features(rng, m_test, D)
    excess = {k: np.zeros((reps, len(n_grid))) for k in KINDS}
    for r in range(reps):
        for j, n in enumerate(n_grid):
            psi = features(rng, int(n), D)
            s = psi @ theta_star
            eps = tau * rng.standard_normal(int(n))
            y = (rng.random(int(n)) < sigmoid(s)).astype(float)
            z, soft = s + eps, sigmoid(s + eps)
            if unbiased_soft:
                p = sigmoid(s)
                sign = rng.choice((-1.0, 1.0), int(n))
                soft = p + sign * min(tau / 2, 1.0) * np.minimum(p, 1 - p)
            if shuffle:
                perm = rng.permutation(int(n))
                y, z, soft = y[perm], z[perm], soft[perm]
            excess["bce_hard"][r, j] = excess_risk(fit_bce(psi, y), theta_star, test)
            excess["sld_soft"][r, j] = excess_risk(fit_sld(psi, z), theta_star, test)
            excess["bce_soft_noisy"][r, j] = excess_risk(
                fit_bce(psi, soft), theta_star, test
            )
    floor = (
        0.0
        if unbiased_soft
        else bce_soft_floor(theta_star, tau, np.random.default_rng(seed + 1))
    )
    predicted = {
        "bce_hard": predicted_bce_hard(n_grid, D),
        "sld_soft": predicted_sld(n_grid, theta_star, test, tau),
        "bce_soft_noisy": np.full(len(n_grid), floor),
    }
    slope = {k: loglog_slope(n_grid, v.mean(0)) for k, v in excess.items()}
    return Rates(n_grid, excess, predicted, slope, floor)
