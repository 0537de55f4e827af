"""Chain-of-thought data (Zhu et al. 2024, Section 4.2 and Section 5).

Token 0 is the direct implication "->", token 1 the indirect implication "~>". ``n``
triples ``(A_i, B_i, C_i)`` of distinct entities; every triple contributes "A_i -> B_i"
and "B_i -> C_i" to training, and "A_i ~> C_i" is trained for triples ``i >= n_heldout``
and held out for the first ``n_heldout`` (the paper's code: 200 triples, 60 held out,
vocabulary 800).

:func:`chain_task` returns three-token sentences ``[S, N, 3]`` =
``[entity, relation, answer]`` (the layout of the paper's ``ChainDataset``).
:func:`related_task` builds the correlated-token variant
(``ChainDataset_related_tokens``): fixed type tokens ``x, y, z`` and index tokens ``i``,
entities of two tokens, sentences ``[x,i,->,y,i]``, ``[y,i,->,z,i]``, ``[x,i,~>,z,i]``
of length 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from revlib import _validate
from revlib.data.reversal import entities

DIRECT, INDIRECT = 0, 1
X, Y, Z = 2, 3, 4  # type tokens of the correlated-token variant


@dataclass(frozen=True)
class ChainTask:
    """``a, b, c``: ``[S, n]`` entity ids; rows ``i < n_heldout`` are held-out triples.
    ``train``: ``[S, N, L]`` sentences, ``N = 2n + (n - n_heldout)``; ``heldout``:
    ``[S, n_heldout, L]`` the untrained "A_i ~> C_i". ``L = 3`` (single-token entities)
    or 5 (two-token entities; then ``a, b, c`` hold the index token ``i``)."""

    vocab_size: int
    n_heldout: int
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    train: torch.Tensor
    heldout: torch.Tensor

    @property
    def n_seeds(self) -> int:
        return self.a.shape[0]

    @property
    def n_train(self) -> int:
        return self.train.shape[1]


def _sentences(first: torch.Tensor, rel: int, second: torch.Tensor) -> torch.Tensor:
    return torch.stack([first, torch.full_like(first, rel), second], dim=-1)


def chain_task(
    vocab_size: int,
    n: int,
    n_heldout: int,
    seeds: list[int],
    heldout_in_training: bool = False,
) -> ChainTask:
    """Single-token entities; sentences ``[A, 0, B]``, ``[B, 0, C]``, ``[A, 1, C]``.

    ``heldout_in_training`` (a control: the answer given) appends the held-out
    "A_i ~> C_i" to the training sentences (``heldout`` is unchanged, so it is then a
    training subset)."""
    _validate.integer("vocab_size", vocab_size, 5, 100_000)
    _validate.integer("n", n, 1, (vocab_size - 2) // 3)
    _validate.integer("n_heldout", n_heldout, 0, n)
    seeds = _validate.seeds(seeds)
    ents = torch.stack([entities(vocab_size, 3 * n, s) for s in seeds])
    a, b, c = ents[:, :n], ents[:, n : 2 * n], ents[:, 2 * n :]
    k = n_heldout
    heldout = _sentences(a[:, :k], INDIRECT, c[:, :k])
    train = torch.cat(
        [
            _sentences(a, DIRECT, b),
            _sentences(b, DIRECT, c),
            _sentences(a[:, k:], INDIRECT, c[:, k:]),
        ]
        + ([heldout] if heldout_in_training else []),
        dim=1,
    )
    return ChainTask(
        vocab_size=vocab_size, n_heldout=k, a=a, b=b, c=c, train=train, heldout=heldout
    )


def related_task(
    alphabet: int,
    n_train: int,
    n_heldout: int,
    seeds: list[int],
    heldout_in_training: bool = False,
) -> ChainTask:
    """Two-token entities sharing type tokens: vocabulary ``5 + alphabet`` (0, 1
    relations; 2, 3, 4 the types x, y, z; then ``alphabet`` index tokens). Triple ``i``
    is ``(x i, y i, z i)``; ``n_train + n_heldout`` distinct indices per seed.
    ``heldout_in_training`` appends the held-out sentences to training (a control)."""
    _validate.integer("alphabet", alphabet, 1, 100_000)
    _validate.integer("n_train", n_train, 0, alphabet)
    _validate.integer("n_heldout", n_heldout, 0, alphabet - n_train)
    seeds = _validate.seeds(seeds)
    n, k = n_train + n_heldout, n_heldout
    if n < 1:
        raise ValueError("n_train + n_heldout must be >= 1, got 0")
    idx = (
        torch.stack([entities(alphabet + 2, n, s) for s in seeds]) + 3
    )  # ids 5 .. alphabet+4

    def sent(t1, rel, t2, i):
        S, m = i.shape
        full = lambda v: torch.full((S, m), v)  # noqa: E731
        return torch.stack([full(t1), i, full(rel), full(t2), i], dim=-1)

    heldout = sent(X, INDIRECT, Z, idx[:, :k])
    train = torch.cat(
        [
            sent(X, DIRECT, Y, idx),
            sent(Y, DIRECT, Z, idx),
            sent(X, INDIRECT, Z, idx[:, k:]),
        ]
        + ([heldout] if heldout_in_training else []),
        dim=1,
    )
    return ChainTask(
        vocab_size=alphabet + 5,
        n_heldout=k,
        a=idx,
        b=idx,
        c=idx,
        train=train,
        heldout=heldout,
    )
