"""Task generators. Each one is vectorised and seeded per seed, so that seed ``s``
always yields the same data whichever other seeds share its batch."""

import torch as _torch

from revlib import _validate as _v
from revlib import repro as _repro


def derangement(n: int, seed: int) -> _torch.Tensor:
    """A random permutation of ``range(n)`` with no fixed point: one cycle through all
    ``n`` (Sattolo's algorithm on a seeded shuffle), a function of ``seed`` alone.

    The ``shuffled_labels`` controls use it to give every training example another
    example's answer, so that no example keeps its own."""
    _v.integer("n", n, 2, 10**8)
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    order = _torch.randperm(n, generator=_repro.generator(seed + 5_000_011))
    perm = _torch.empty(n, dtype=_torch.long)
    perm[order] = order.roll(-1)  # order[i] -> order[i + 1]
    return perm


def shuffle_answers(answers: _torch.Tensor, seeds: list[int]) -> _torch.Tensor:
    """``[S, N, ...] -> [S, N, ...]``: per seed, example ``i`` gets the answer of
    example ``derangement(N, seed)[i]`` (every answer moves; the trailing axes, e.g. the
    tokens of a multi-token answer, move together)."""
    if answers.dim() < 2 or answers.shape[0] != len(seeds):
        raise ValueError(
            f"answers must be [S, N, ...] with S = len(seeds) = {len(seeds)}, got "
            f"shape {tuple(answers.shape)}"
        )
    return _torch.stack(
        [a[derangement(a.shape[0], s)] for a, s in zip(answers, seeds, strict=True)]
    )


def shuffle_last_tokens(
    sequences: _torch.Tensor, width: int, seeds: list[int]
) -> _torch.Tensor:
    """``[S, N, T] -> [S, N, T]``: the sentences with their answers (the last ``width``
    tokens) moved by :func:`shuffle_answers`; the rest of each sentence stays."""
    _v.integer("width", width, 1, sequences.shape[-1] - 1)
    answers = shuffle_answers(sequences[..., -width:], seeds)
    return _torch.cat([sequences[..., :-width], answers], dim=-1)
