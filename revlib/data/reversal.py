"""Reversal data for the one-layer transformer (Zhu et al. 2024, Section 4).

Vocabulary ``[M]``: token 0 is the forward relation "->", token 1 the backward
relation "<-", tokens ``2 .. M-1`` are entities. ``n`` pairs ``(A_i, B_i)`` of distinct
entities. Every forward sentence "A_i -> B_i" is trained; the backward sentence
"B_i <- A_i" is trained for pairs ``i >= n_heldout`` and held out for the first
``n_heldout`` pairs. (The paper's code holds out a random direction per pair; we always
hold out the backward one so that "reverse" has one meaning.) A sentence is stored as
context ``[S, N, 1]`` (the entity), query ``[S, N]`` (the relation token) and target
``[S, N]`` (the answer entity).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from revlib import _validate, repro

FORWARD, BACKWARD = 0, 1


@dataclass(frozen=True)
class ReversalTask:
    """``a``, ``b``: ``[S, n]`` entity ids; rows ``i < n_heldout`` are the held-out
    pairs. ``train_*``: ``N = n + (n - n_heldout)`` sentences (forward first).
    ``heldout_*``: the ``n_heldout`` backward sentences "B_i <- A_i" never trained."""

    M: int
    n_heldout: int
    a: torch.Tensor
    b: torch.Tensor
    train_ctx: torch.Tensor
    train_query: torch.Tensor
    train_target: torch.Tensor
    heldout_ctx: torch.Tensor
    heldout_query: torch.Tensor
    heldout_target: torch.Tensor

    @property
    def n_seeds(self) -> int:
        return self.a.shape[0]

    @property
    def n_train(self) -> int:
        return self.train_target.shape[1]


def entities(M: int, count: int, seed: int, first: int = 2) -> torch.Tensor:
    """``count`` distinct entity ids from ``first .. M-1``, a random draw that depends
    only on ``seed``."""
    _validate.integer("first", first, 0, 10**7 - 1)
    _validate.integer("M", M, first + 1, 10**7)
    if not isinstance(seed, int):  # its range: repro.generator(seed + 1_000_003)
        raise ValueError(f"seed must be an integer, got {seed!r}")
    _validate.integer("count", count, 1, M - first)
    return (
        first
        + torch.randperm(M - first, generator=repro.generator(seed + 1_000_003))[:count]
    )


def reversal_task(M: int, n: int, n_heldout: int, seeds: list[int]) -> ReversalTask:
    """Build the task for each seed in ``seeds`` (a loop over seeds only)."""
    _validate.integer("M", M, 4, 100_000)
    _validate.integer("n", n, 1, (M - 2) // 2)
    _validate.integer("n_heldout", n_heldout, 0, n)
    seeds = _validate.seeds(seeds)
    ents = torch.stack([entities(M, 2 * n, s) for s in seeds])
    a, b = ents[:, :n], ents[:, n:]
    S, k = len(seeds), n_heldout
    fwd = torch.full((S, n), FORWARD)
    bwd = torch.full((S, n - k), BACKWARD)
    return ReversalTask(
        M=M,
        n_heldout=k,
        a=a,
        b=b,
        train_ctx=torch.cat([a, b[:, k:]], dim=1)[..., None],
        train_query=torch.cat([fwd, bwd], dim=1),
        train_target=torch.cat([b, a[:, k:]], dim=1),
        heldout_ctx=b[:, :k, None],
        heldout_query=torch.full((S, k), BACKWARD),
        heldout_target=a[:, :k],
    )


A_TYPE, B_TYPE = 2, 3


def typed_reversal_task(
    M: int, n: int, n_heldout: int, seeds: list[int]
) -> ReversalTask:
    """The same facts with two-token entities "A_i a" and "B_i b", where ``a`` (token 2)
    and ``b`` (token 3) are type tokens shared by all A- and all B-entities; unique
    tokens come from ``4 .. M-1``. Sentences "A_i a -> B_i" and "B_i b <- A_i": two
    context tokens and the relation token as query (``T = 3``), the answer's unique
    token as target. ``a``, ``b`` of the result hold the unique tokens; ``*_ctx`` is
    ``[S, N, 2]``."""
    _validate.integer("M", M, 6, 100_000)
    _validate.integer("n", n, 1, (M - 4) // 2)
    _validate.integer("n_heldout", n_heldout, 0, n)
    seeds = _validate.seeds(seeds)
    ents = torch.stack([entities(M, 2 * n, s, first=4) for s in seeds])
    a, b = ents[:, :n], ents[:, n:]
    S, k = len(seeds), n_heldout

    def typed(u, t):
        return torch.stack([u, torch.full_like(u, t)], dim=-1)

    return ReversalTask(
        M=M,
        n_heldout=k,
        a=a,
        b=b,
        train_ctx=torch.cat([typed(a, A_TYPE), typed(b[:, k:], B_TYPE)], dim=1),
        train_query=torch.cat(
            [torch.full((S, n), FORWARD), torch.full((S, n - k), BACKWARD)], dim=1
        ),
        train_target=torch.cat([b, a[:, k:]], dim=1),
        heldout_ctx=typed(b[:, :k], B_TYPE),
        heldout_query=torch.full((S, k), BACKWARD),
        heldout_target=a[:, :k],
    )
