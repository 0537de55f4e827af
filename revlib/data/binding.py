"""Reversal data of Wang & Sun (2025), Sections 2-3: entities, relations and surface
names.

Two entity sets: ``E_A`` (``n_a`` entities) teaches the rule, ``E_B`` (``n_b``) is
tested. For each of ``n_rel`` relation pairs ``(r, r^{-1})`` (distinct tokens):

* ``E_A`` is randomly perfectly paired; **both** ``(a, r, b)`` and ``(b, r^{-1}, a)``
  are trained;
* ``E_B`` is paired the same way; a coin picks one direction for training (split
  ``atomic``) and the other is held out (split ``test``: the held-out reverse facts).

An entity is written either as one token (``multiplicity=0``, the abstract level of
Section 2) or as a two-token name ``(first, last)`` (Section 3) in which every
first-name and every last-name token is shared by exactly ``multiplicity`` entities and
no two entities have the same name. A fact ``h r t`` becomes the sequence
``name(h) r <mask> name(t)``; the loss and the metrics look only at the tokens of
``name(t)``, predicted from ``<mask>`` onwards.

Everything carries a leading seed axis ``S``: seed ``s``'s data depends only on ``s``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from revlib import _validate, repro

SPLITS = ("train", "atomic", "test")


@dataclass(frozen=True)
class BindingTask:
    """Facts and names for ``S`` seeds.

    ``facts[split]``: ``[S, N_split, 3]`` entity/relation triples ``(h, r, t)`` (entity
    ids in ``[0, n_entities)``, relation ids in ``[0, 2 n_rel)``; relation ``2k+1`` is
    the inverse of ``2k``). ``names``: ``[S, n_entities, L]`` token ids of each entity's
    name (``L`` = 1 or 2). ``vocab_size``: entity-name tokens, then ``<mask>``, then
    ``2 n_rel`` relation tokens.
    """

    n_a: int
    n_b: int
    n_rel: int
    multiplicity: int
    names: torch.Tensor
    facts: dict[str, torch.Tensor]

    @property
    def n_entities(self) -> int:
        return self.n_a + self.n_b

    @property
    def name_length(self) -> int:
        return self.names.shape[-1]

    @property
    def n_name_tokens(self) -> int:
        """Tokens used by names: ``n_entities`` (one token each) or
        ``2 n_entities / m``."""
        return (
            self.n_entities
            if self.multiplicity == 0
            else 2 * self.n_entities // self.multiplicity
        )

    @property
    def mask_token(self) -> int:
        return self.n_name_tokens

    @property
    def vocab_size(self) -> int:
        return self.n_name_tokens + 1 + 2 * self.n_rel

    def memory_keys(self) -> torch.Tensor:
        """``[S, n_entities + 1 + 2 n_rel, L]``: the tokens of each key of a memory
        layer, one per entity (its name) and one per non-entity token (``<mask>``, the
        relations), padded with ``vocab_size``."""
        S, L = self.names.shape[0], self.name_length
        other = torch.arange(self.mask_token, self.vocab_size)[:, None]
        pad = torch.full((other.shape[0], L - 1), self.vocab_size)
        other = torch.cat([other, pad], -1)
        return torch.cat([self.names, other.expand(S, -1, -1)], 1)

    def test_first_tokens(self) -> torch.Tensor:
        """``[S]``: how many distinct tokens begin the names of the tested entities
        ``E_B``.

        A held-out (``test``) answer is an entity of ``E_B``, so a model that knows the
        answer's type but not the fact picks its first token among these: they, not the
        whole name vocabulary, set the chance level of a rank-based metric (``n_b`` for
        one token per entity; about ``(n_a + n_b) / multiplicity`` first names for
        two-token names)."""
        return torch.tensor(
            [
                len(torch.unique(self.names[s, self.n_a :, 0]))
                for s in range(self.names.shape[0])
            ]
        )

    def sequences(self, split: str) -> torch.Tensor:
        """``[S, N, 2L + 2]``: ``name(h) r <mask> name(t)`` for every fact of
        ``split``."""
        _validate.choice("split", split, SPLITS)
        f = self.facts[split]
        S = f.shape[0]
        seeds = torch.arange(S)[:, None]
        rel = (f[..., 1] + self.mask_token + 1)[..., None]
        mask = torch.full_like(rel, self.mask_token)
        return torch.cat(
            [self.names[seeds, f[..., 0]], rel, mask, self.names[seeds, f[..., 2]]], -1
        )


def names_with_multiplicity(
    n_entities: int, multiplicity: int, gen: torch.Generator
) -> torch.Tensor:
    """``[n_entities, 2]`` (first, last) names; each token shared by exactly
    ``multiplicity`` entities, all names distinct. First names use ids ``[0, F)``, last
    names ``[F, 2F)``, ``F = n_entities / multiplicity``.

    Entity ``q F + j`` (``q < m``, ``j < F``) gets first name ``j`` and last name
    ``sigma((j + c_q) mod F)`` with distinct random shifts ``c_q``: for a fixed first
    name the ``m`` last names differ, and every last name appears once per ``q``. Entity
    ids are then shuffled so that neither token reveals anything about an entity's
    index.
    """
    _validate.integer("n_entities", n_entities, 1, 10**7)
    _validate.integer("multiplicity", multiplicity, 1, n_entities)
    if n_entities % multiplicity or n_entities // multiplicity < multiplicity:
        raise ValueError(
            f"multiplicity must divide n_entities = {n_entities} and be <= "
            f"n_entities / multiplicity (so that all names differ), "
            f"got {multiplicity}"
        )
    if not isinstance(gen, torch.Generator):
        raise ValueError(f"gen must be a torch.Generator, got {gen!r}")
    m = multiplicity
    F = n_entities // m
    shifts = torch.randperm(F, generator=gen)[:m]
    sigma = torch.randperm(F, generator=gen)
    j = torch.arange(F).repeat(m)
    q = torch.arange(m).repeat_interleave(F)
    first = j
    last = F + sigma[(j + shifts[q]) % F]
    order = torch.randperm(n_entities, generator=gen)
    return torch.stack([first, last], -1)[order]


def _pairing(ids: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random perfect pairing of ``ids [n]`` (n even) -> ``[n/2, 2]``."""
    return ids[torch.randperm(len(ids), generator=gen)].view(-1, 2)


def binding_task(
    n_a: int, n_b: int, n_rel: int, multiplicity: int, seeds: list[int]
) -> BindingTask:
    """Build the task for each seed in ``seeds`` (``multiplicity=0``: one token per
    entity)."""
    _validate.integer("n_a", n_a, 2, 10**6)
    _validate.integer("n_b", n_b, 2, 10**6)
    _validate.integer("n_rel", n_rel, 1, 100)
    _validate.integer("multiplicity", multiplicity, 0, 10**4)
    if n_a % 2 or n_b % 2:
        raise ValueError(
            f"n_a and n_b must be even (perfect pairing), got {n_a}, {n_b}"
        )
    E = n_a + n_b
    if multiplicity:
        if E % multiplicity or E // multiplicity < multiplicity:
            raise ValueError(
                f"multiplicity must divide n_a + n_b = {E} and be <= (n_a + n_b) / "
                f"multiplicity (so that all names differ), got {multiplicity}"
            )
    seeds = _validate.seeds(seeds)
    names, facts = [], {k: [] for k in SPLITS}
    for s in seeds:
        gen = repro.generator(s)
        names.append(
            torch.arange(E)[:, None]
            if multiplicity == 0
            else names_with_multiplicity(E, multiplicity, gen)
        )
        per = {k: [] for k in SPLITS}
        for k in range(n_rel):
            r, r_inv = 2 * k, 2 * k + 1
            pa = _pairing(torch.arange(n_a), gen)
            fwd = torch.stack([pa[:, 0], torch.full_like(pa[:, 0], r), pa[:, 1]], -1)
            bwd = torch.stack(
                [pa[:, 1], torch.full_like(pa[:, 0], r_inv), pa[:, 0]], -1
            )
            per["train"] += [fwd, bwd]
            pb = _pairing(torch.arange(n_a, E), gen)
            fwd = torch.stack([pb[:, 0], torch.full_like(pb[:, 0], r), pb[:, 1]], -1)
            bwd = torch.stack(
                [pb[:, 1], torch.full_like(pb[:, 0], r_inv), pb[:, 0]], -1
            )
            coin = torch.rand(len(pb), generator=gen) < 0.5
            per["atomic"].append(torch.where(coin[:, None], fwd, bwd))
            per["test"].append(torch.where(coin[:, None], bwd, fwd))
        for key in SPLITS:
            facts[key].append(torch.cat(per[key]))
    return BindingTask(
        n_a=n_a,
        n_b=n_b,
        n_rel=n_rel,
        multiplicity=multiplicity,
        names=torch.stack(names),
        facts={k: torch.stack(v) for k, v in facts.items()},
    )


def shuffle_atomic(task: BindingTask, seeds: list[int]) -> BindingTask:
    """The task with the tails of its ``atomic`` facts permuted among themselves (per
    seed, its own stream), so that no trained fact is the reverse of a held-out one:
    the ``shuffled_labels`` control of the binding chapters."""
    seeds = _validate.seeds(seeds)
    atomic = task.facts["atomic"].clone()  # [S, N, 3]
    if atomic.shape[0] != len(seeds):
        raise ValueError(
            f"seeds must give one seed per task seed ({atomic.shape[0]}), got {seeds}"
        )
    for i, s in enumerate(seeds):
        perm = torch.randperm(atomic.shape[1], generator=repro.generator(s + 31_337))
        atomic[i, :, 2] = atomic[i, perm, 2]
    return dataclasses.replace(task, facts={**task.facts, "atomic": atomic})
