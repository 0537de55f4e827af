"""Gradient entanglement (Wang & Sun 2025, Section 3): what one optimiser step on a
linear layer ``V`` does to the outputs of two concepts.

Math convention: ``V [out, in]``, ``a = V alpha``, ``b = V beta``, ``g_a = dL/da``,
``g_b = dL/db``, so ``dL/dV = g_a alpha^T + g_b beta^T``. (revlib's ``SeedLinear``
stores the transpose, ``W = V^T``; the functions below take vectors only, so the
convention is moot.) All functions accept leading batch axes ``[..., in]`` /
``[..., out]`` (matrices ``[..., out, in]``).
"""

from __future__ import annotations

import torch


def _dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * y).sum(-1, keepdim=True)


def sgd_delta(alpha, beta, g_a, g_b, eta: float):
    """One SGD step on ``V`` with ``alpha``, ``beta`` fixed:
    ``Delta a = -eta (|alpha|^2 g_a + alpha^T beta g_b)``,
    ``Delta b = -eta (|beta|^2 g_b + alpha^T beta g_a)``. Returns
    ``(Delta a, Delta b)``.

    Implements eq-ent-sgd."""
    ab = _dot(alpha, beta)
    return (
        -eta * (_dot(alpha, alpha) * g_a + ab * g_b),
        -eta * (_dot(beta, beta) * g_b + ab * g_a),
    )


def momentum_delta(alpha, beta, g_a, g_b, eta: float, mu: float, buffer: torch.Tensor):
    """SGD with heavy-ball momentum as torch implements it (``B <- mu B + G``,
    ``V <- V - eta B``): the SGD terms plus the old buffer ``buffer [out, in]`` applied
    to each input, ``Delta a = -eta mu B alpha + sgd term``. Past gradients ``g' h'^T``
    stored in ``B`` enter through ``h'^T alpha``: every past input that overlaps
    ``alpha`` keeps moving ``a``.

    Implements eq-ent-sgd with torch's momentum buffer (no equation label of its
    own)."""
    da, db = sgd_delta(alpha, beta, g_a, g_b, eta)
    return (
        da - eta * mu * torch.einsum("...i,...oi->...o", alpha, buffer),
        db - eta * mu * torch.einsum("...i,...oi->...o", beta, buffer),
    )


def preconditioned_delta(alpha, beta, g_a, g_b, eta: float, P: torch.Tensor):
    """A step ``Delta V = -eta P * G`` with an element-wise preconditioner
    ``P [out, in]`` (Adam's first step: ``P = 1 / (|G| + eps)``). For output unit ``i``:
    ``Delta a_i = -eta (sum_j P_ij alpha_j^2 g_a,i + sum_j P_ij alpha_j beta_j g_b,i)``:
    the overlap ``alpha^T beta`` becomes a ``P``-weighted overlap, one per output unit;
    it is zero only when ``alpha`` and ``beta`` have disjoint supports.

    Implements eq-ent-adam."""
    aa = torch.einsum("...i,...oi->...o", alpha * alpha, P)  # [..., out]
    ab = torch.einsum("...i,...oi->...o", alpha * beta, P)
    bb = torch.einsum("...i,...oi->...o", beta * beta, P)
    return -eta * (aa * g_a + ab * g_b), -eta * (bb * g_b + ab * g_a)


def cross_to_self(alpha, beta, g_a, g_b) -> torch.Tensor:
    """``|alpha^T beta| |g_b| / (|alpha|^2 |g_a|)``: size of the interference term in
    ``Delta a`` relative to ``a``'s own term (SGD).

    Implements the ratio of the two terms of eq-ent-sgd (thm-entanglement)."""
    return (
        _dot(alpha, beta).abs()
        * g_b.norm(dim=-1, keepdim=True)
        / (_dot(alpha, alpha) * g_a.norm(dim=-1, keepdim=True))
    ).squeeze(-1)
