"""Arithmetic facts of Wang & Sun (2025), Section 4 (``data_gen_arithmetic.ipynb``),
scaled down.

Values are tokens ``<0> .. <P-1>`` with addition mod ``P``. **Core entities**: ``c`` per
value, each with a stored **attribute fact** ``e <=> value`` (all trained). Two **small
values** ``a_1, a_2`` are the second arguments of every sum. **Core relational facts**
``e1 + e2 = e3`` (``e2`` a core entity holding a small value,
``value(e3) = value(e1) + value(e2)``) teach addition; a fraction ``core_frac`` of them
is trained.

**Problems** (the paper's tree, reduced to chains): chain ``i`` starts at a core entity
``x_0`` and adds new variables ``x_1 .. x_K`` (never given a value). Step ``k`` is one
relational fact with a small-value core entity ``c_k``: with probability 1/2 it is
stored *forward*, ``x_{k-1} + c_k = x_k`` (the unknown is the sum), otherwise
*reversed*, ``x_k + c_k = x_{k-1}`` (the unknown is an addend: its value needs the
inverse of a stored fact, ``value(x_k) = value(x_{k-1}) - value(c_k)``). All chain facts
are trained; the **probes** are the attribute facts ``x_k <=> value(x_k)``, never
trained. ``k`` is the chain size (steps from a known value); a probe *needs a reverse
step* if any of its ``k`` steps is reversed.

A fact is ``(h, r, t)``: a relational fact ``e1 + e2 = e3`` is ``(e1, e2, e3)`` with the
two inputs in random order (as ``form_rel_item``), an attribute fact is
``(e, <=>, value)``. Token ids: values ``[0, P)`` first (so value predictions can be
ranked among ``P`` tokens), then entities (core, then chain variables), then ``<=>`` and
``<mask>``.

Everything carries a leading seed axis ``S``: seed ``s``'s data depends only on ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from revlib import _validate, repro


@dataclass(frozen=True)
class ArithmeticTask:
    """Facts for ``S`` seeds.

    ``train``: ``[S, N, 3]`` token triples ``(h, r, t)`` (core attributes, trained core
    sums, chain facts). ``probes``: ``[S, n_chains * K, 3]`` attribute facts
    ``(x_k, <=>, value)`` of the chain variables, chain-major. ``depth``, ``reverse``:
    ``[S, n_chains * K]`` chain size ``k`` and whether any step up to ``k`` is reversed.
    ``values``: ``[S, n_tokens]`` value of every entity token (-1 for non-entities).
    """

    modulus: int
    per_value: int
    chain_len: int
    small: torch.Tensor
    train: torch.Tensor
    probes: torch.Tensor
    depth: torch.Tensor
    reverse: torch.Tensor
    values: torch.Tensor

    @property
    def n_core(self) -> int:
        return self.modulus * self.per_value

    @property
    def eq_token(self) -> int:
        return self.values.shape[1]

    @property
    def mask_token(self) -> int:
        return self.eq_token + 1

    @property
    def vocab_size(self) -> int:
        return self.mask_token + 1

    def sequences(self, facts: torch.Tensor) -> torch.Tensor:
        """``[S, N, 3]`` facts -> ``[S, N, 4]`` token sequences ``h r <mask> t``."""
        mask = torch.full_like(facts[..., :1], self.mask_token)
        return torch.cat([facts[..., :2], mask, facts[..., 2:]], -1)


def _one_seed(
    P: int, c: int, n_chains: int, K: int, core_frac: float, gen: torch.Generator
):
    n_core = P * c
    core_value = torch.arange(n_core) % P  # core entity j holds value j mod P
    core_tok = P + torch.arange(n_core)
    small = (
        1 + torch.randperm(P - 1, generator=gen)[:2]
    )  # two distinct nonzero small values
    small_ents = torch.cat(
        [torch.nonzero(core_value == a)[:, 0] for a in small]
    )  # [2c]
    eq = P + n_core + n_chains * K
    attr = torch.stack([core_tok, torch.full_like(core_tok, eq), core_value], -1)

    # core sums e1 + e2 = e3 for every e1 and every small-valued e2; e3 drawn among the
    # c entities holding the sum; a random fraction core_frac is trained.
    e1 = torch.arange(n_core).repeat_interleave(len(small_ents))
    e2 = small_ents.repeat(n_core)
    s = (core_value[e1] + core_value[e2]) % P
    e3 = s + P * torch.randint(c, s.shape, generator=gen)
    keep = torch.randperm(len(e1), generator=gen)[: round(core_frac * len(e1))]
    core_rel = torch.stack([core_tok[e1], core_tok[e2], core_tok[e3]], -1)[keep]

    # chains: x_0 a core entity, x_1..x_K new variables, chain-major ids
    x0 = torch.randint(n_core, (n_chains,), generator=gen)
    inc = small_ents[
        torch.randint(len(small_ents), (n_chains, K), generator=gen)
    ]  # [n, K]
    rev = torch.rand(n_chains, K, generator=gen) < 0.5
    # forward step adds value(c), a reversed one (x_k + c = x_{k-1}) subtracts it
    steps = torch.where(rev, -core_value[inc], core_value[inc])
    val = torch.cat(
        [core_value[x0][:, None], (core_value[x0][:, None] + steps.cumsum(1)) % P], 1
    )
    var_tok = P + n_core + torch.arange(n_chains * K).view(n_chains, K)
    tok = torch.cat([core_tok[x0][:, None], var_tok], 1)  # [n, K+1]
    # forward: x_{k-1} + c = x_k; reversed: x_k + c = x_{k-1}
    a = torch.where(rev, tok[:, 1:], tok[:, :-1])
    out = torch.where(rev, tok[:, :-1], tok[:, 1:])
    chain_rel = torch.stack([a, core_tok[inc], out], -1).view(-1, 3)

    rel = torch.cat([core_rel, chain_rel])
    swap = torch.rand(len(rel), generator=gen) < 0.5  # shuffle the two inputs
    rel = torch.where(swap[:, None], rel[:, [1, 0, 2]], rel)
    train = torch.cat([attr, rel])
    train = train[torch.randperm(len(train), generator=gen)]

    probes = torch.stack([var_tok, torch.full_like(var_tok, eq), val[:, 1:]], -1).view(
        -1, 3
    )
    depth = torch.arange(1, K + 1).repeat(n_chains)
    reverse = rev.cummax(1).values.reshape(-1)
    values = torch.cat([torch.full((P,), -1), core_value, val[:, 1:].reshape(-1)])
    return small, train, probes, depth, reverse, values


def arithmetic_task(
    modulus: int,
    per_value: int,
    n_chains: int,
    chain_len: int,
    core_frac: float,
    seeds: list[int],
) -> ArithmeticTask:
    """Build the task for each seed in ``seeds``."""
    _validate.integer("modulus", modulus, 3, 10**5)
    _validate.integer("per_value", per_value, 1, 1000)
    _validate.integer("n_chains", n_chains, 1, 10**5)
    _validate.integer("chain_len", chain_len, 1, 100)
    _validate.real("core_frac", core_frac, 0.0, 1.0)
    seeds = _validate.seeds(seeds)
    parts = [
        _one_seed(
            modulus, per_value, n_chains, chain_len, core_frac, repro.generator(s)
        )
        for s in seeds
    ]
    small, train, probes, depth, reverse, values = (torch.stack(p) for p in zip(*parts))
    return ArithmeticTask(
        modulus=modulus,
        per_value=per_value,
        chain_len=chain_len,
        small=small,
        train=train,
        probes=probes,
        depth=depth,
        reverse=reverse,
        values=values,
    )
