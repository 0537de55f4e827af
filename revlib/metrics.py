"""The two reductions every chapter's evaluation shares: a masked mean and the rank of
an answer among candidates (with its one tie rule).

It imports only torch, so every layer of revlib (models, probes, experiments) can
use it.
"""

from __future__ import annotations

import torch


def masked_mean(
    values: torch.Tensor, mask: torch.Tensor, dim: int | tuple[int, ...] = (1, 2)
) -> torch.Tensor:
    """Mean of ``values`` over ``dim`` where ``mask`` is true (weighted by ``mask`` when
    it holds numbers), e.g. ``[S, B, T]`` -> ``[S]``; 0 where the mask is empty.
    ``mask`` broadcasts against ``values``."""
    m = mask.to(values.dtype)
    return (values * m).sum(dim=dim) / m.sum(dim=dim).clamp_min(1)


def rank(scores: torch.Tensor, answer_score: torch.Tensor) -> torch.Tensor:
    """Rank of the answer among the candidates, 1 for the top: ``scores [..., C]`` (the
    answer's own score among them), ``answer_score [...]`` -> ``[...]`` (int64).

    Ties count against the answer: the rank is the number of candidates scoring at
    least as high as the answer, itself included, so a model that gives every candidate
    the same score ranks the answer last (``C``), not first: it cannot look right by
    saying nothing.
    """
    return (scores >= answer_score[..., None]).sum(-1)


def answer_rank(scores: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """:func:`rank` of candidate ``answer [...]`` (an index into the last axis of
    ``scores [..., C]``) -> ``[...]``."""
    return rank(scores, scores.gather(-1, answer[..., None])[..., 0])


def mean_reciprocal_rank(ranks: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Mean of ``1 / rank`` over ``dim`` (float32), e.g. ``[S, N]`` -> ``[S]``."""
    return (1.0 / ranks.float()).mean(dim)


def name_metrics(
    model, seqs: torch.Tensor, L: int, n_name_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced exact-match accuracy of the whole target name and MRR of its first
    token, ranked among the name tokens, of a batched sequence model (``model(x)`` ->
    ``[S, N, T, V]`` logits) on the binding task's sequences ``seqs [S, N, 2L+2]`` (an
    entity's ``L`` name tokens, a relation, the answer's ``L`` tokens) ->
    ``([S], [S])``. Shared by the surface-name and arithmetic experiments."""
    logits = model(seqs[..., :-1])[..., L + 1 :, :n_name_tokens]  # [S, N, L, V_names]
    gold = seqs[..., L + 2 :]  # [S, N, L]
    acc = (logits.argmax(-1) == gold).all(-1).float().mean(-1)
    rank = answer_rank(logits[..., 0, :], gold[..., 0])  # ties count against it
    return acc, mean_reciprocal_rank(rank)
