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

**Problem trees** (:func:`arithmetic_tree_task`, the paper's own shape): problem ``X``
has ``b`` bridge-1 children, each with ``b`` bridge-2 children, each linked to
``core_links`` core entities; every edge is one relational fact with a small-valued
core entity, stored forward or reversed as in the chains. Distractor links are dropped
so that only some bridge-2 nodes lie on a *complete path* from the known core values up
to ``X``. The probes are the attribute facts of ``X`` and of every bridge node.

A fact is ``(h, r, t)``: a relational fact ``e1 + e2 = e3`` is ``(e1, e2, e3)`` with the
two inputs in random order (as ``form_rel_item``), an attribute fact is
``(e, <=>, value)``. Token ids: values ``[0, P)`` first (so value predictions can be
ranked among ``P`` tokens), then entities (core, then chain variables or problem
nodes), then ``<=>`` and ``<mask>``.

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
    ``derivable``: ``[S, n_probes]`` whether the probe's value follows from the trained
    facts by chaining up from the core values (all True for chains, the default).

    For trees (:func:`arithmetic_tree_task`) the probes are the problem nodes, ``depth``
    is 3 (``X``), 2 (bridge-1) or 1 (bridge-2) and ``chain_len`` is 3.
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
    derivable: torch.Tensor | None = None

    def __post_init__(self):
        if self.derivable is None:
            object.__setattr__(
                self, "derivable", torch.ones_like(self.reverse, dtype=torch.bool)
            )

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

    def fit_ceiling(self) -> torch.Tensor:
        """``[S]`` the highest training accuracy any model can reach: facts that share
        their two inputs ``(h, r)`` but differ in the answer cannot all be right, so
        each group of facts with one input pair counts its most frequent answer only.
        Chains are all but unambiguous (about 0.99); in trees a node with more children
        than there are small-valued core entities is the addend of several facts with
        the same inputs (as in the paper's generator), so the ceiling is lower (about
        0.69 at 4 core entities per value and ``b = 10``, 0.87 at 10 per value)."""
        out = []
        for facts in self.train:
            _, group = torch.unique(facts[:, :2], dim=0, return_inverse=True)
            pairs = torch.stack([group, facts[:, 2]], 1)  # (input pair, answer)
            keys, counts = torch.unique(pairs, dim=0, return_counts=True)
            best = torch.zeros(int(group.max()) + 1, dtype=counts.dtype)
            best = best.scatter_reduce(0, keys[:, 0], counts, reduce="amax")
            out.append(best.sum() / len(facts))
        return torch.stack(out).float()

    def sequences(self, facts: torch.Tensor) -> torch.Tensor:
        """``[S, N, 3]`` facts -> ``[S, N, 4]`` token sequences ``h r <mask> t``."""
        mask = torch.full_like(facts[..., :1], self.mask_token)
        return torch.cat([facts[..., :2], mask, facts[..., 2:]], -1)


def _core(P: int, c: int, n_problem_tokens: int, core_frac: float, gen):
    """The core entities, their attribute facts and the trained core sums (shared by
    chains and trees, drawn first from ``gen``)."""
    n_core = P * c
    core_value = torch.arange(n_core) % P  # core entity j holds value j mod P
    core_tok = P + torch.arange(n_core)
    small = (
        1 + torch.randperm(P - 1, generator=gen)[:2]
    )  # two distinct nonzero small values
    small_ents = torch.cat(
        [torch.nonzero(core_value == a)[:, 0] for a in small]
    )  # [2c]
    eq = P + n_core + n_problem_tokens
    attr = torch.stack([core_tok, torch.full_like(core_tok, eq), core_value], -1)

    # core sums e1 + e2 = e3 for every e1 and every small-valued e2; e3 drawn among the
    # c entities holding the sum; a random fraction core_frac is trained.
    e1 = torch.arange(n_core).repeat_interleave(len(small_ents))
    e2 = small_ents.repeat(n_core)
    s = (core_value[e1] + core_value[e2]) % P
    e3 = s + P * torch.randint(c, s.shape, generator=gen)
    keep = torch.randperm(len(e1), generator=gen)[: round(core_frac * len(e1))]
    core_rel = torch.stack([core_tok[e1], core_tok[e2], core_tok[e3]], -1)[keep]
    return core_value, core_tok, small, small_ents, eq, attr, core_rel


def _train_set(attr, core_rel, problem_rel, gen) -> torch.Tensor:
    """Attribute facts and relational facts (the two inputs in random order), in random
    order: ``[N, 3]``."""
    rel = torch.cat([core_rel, problem_rel])
    swap = torch.rand(len(rel), generator=gen) < 0.5  # shuffle the two inputs
    rel = torch.where(swap[:, None], rel[:, [1, 0, 2]], rel)
    train = torch.cat([attr, rel])
    return train[torch.randperm(len(train), generator=gen)]


def _one_seed(
    P: int, c: int, n_chains: int, K: int, core_frac: float, gen: torch.Generator
):
    core_value, core_tok, small, small_ents, eq, attr, core_rel = _core(
        P, c, n_chains * K, core_frac, gen
    )
    n_core = P * c

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
    train = _train_set(attr, core_rel, chain_rel, gen)

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


def _choose(shape: tuple[int, ...], k: int, gen: torch.Generator) -> torch.Tensor:
    """``[*shape]`` boolean mask with exactly ``k`` True entries along the last axis, at
    random positions."""
    pick = torch.rand(shape, generator=gen).argsort(-1)[..., :k]
    return torch.zeros(shape, dtype=torch.bool).scatter(-1, pick, True)


def _distractors(n: int, b: int, p: float, gen: torch.Generator):
    """``[n, b, b]`` bridge-2 masks ``(nullified, lost_core)``, as the paper's
    generator: ``k = round(p b)`` bridge-1 nodes of each problem are doomed (all their
    children nullified) and ``k`` children of each bridge-1 node are nullified, ``k``
    capped at ``b - 1`` so that a complete bridge-2 node is left. A
    nullified node loses its core links (``lost_core``) or its link to its parent:
    exactly half of the seed's nullified nodes (rounded down), drawn at random, lose
    the core links (the paper draws each 50/50; an exact half gives every seed the same
    number of facts)."""
    k = min(round(p * b), b - 1)
    doomed = _choose((n, b), k, gen)
    nullified = doomed[..., None] | _choose((n, b, b), k, gen)
    where = nullified.nonzero()  # [n_null, 3]
    half = where[_choose((len(where),), len(where) // 2, gen)]
    lost_core = torch.zeros_like(nullified)
    lost_core[tuple(half.T)] = True
    return nullified, lost_core


def _one_tree_seed(
    P: int,
    c: int,
    n: int,
    b: int,
    core_frac: float,
    p: float,
    L: int,
    gen: torch.Generator,
):
    per = 1 + b + b * b  # nodes per problem: X, b bridge-1, b^2 bridge-2
    core_value, core_tok, small, small_ents, eq, attr, core_rel = _core(
        P, c, n * per, core_frac, gen
    )
    node = P + P * c + per * torch.arange(n)[:, None] + torch.arange(per)  # [n, per]
    x_tok, b1_tok, b2_tok = node[:, 0], node[:, 1 : 1 + b], node[:, 1 + b :]
    b2_tok = b2_tok.view(n, b, b)

    def edges(upper_val, shape):
        """One small-valued core entity and a direction per edge below an upper node,
        and the lower node's value: forward (``lower + c = upper``, the upper node is
        the sum) gives ``upper - a``, reversed (``upper + c = lower``, the upper node
        is an addend) gives ``upper + a``."""
        inc = small_ents[torch.randint(len(small_ents), shape, generator=gen)]
        rev = torch.rand(shape, generator=gen) < 0.5
        a = core_value[inc]
        lower_val = (upper_val[..., None] + torch.where(rev, a, -a)) % P
        return inc, rev, lower_val

    def facts(lower, inc, upper, rev):
        """``[..., 3]`` facts: ``(lower, c, upper)`` forward, ``(upper, c, lower)``
        reversed."""
        upper = upper.expand_as(lower)
        e1, e3 = torch.where(rev, upper, lower), torch.where(rev, lower, upper)
        return torch.stack([e1, core_tok[inc], e3], -1)

    x_val = torch.randint(P, (n,), generator=gen)  # any value mod P
    inc1, rev1, b1_val = edges(x_val, (n, b))
    inc2, rev2, b2_val = edges(b1_val, (n, b, b))
    incL, revL, leaf_val = edges(b2_val, (n, b, b, L))
    leaf = leaf_val + P * torch.randint(c, leaf_val.shape, generator=gen)  # core ids
    nullified, lost_core = _distractors(n, b, p, gen)
    lost_parent = nullified & ~lost_core

    x_rel = facts(b1_tok, inc1, x_tok[:, None], rev1)  # [n, b, 3], all kept
    b2_rel = facts(b2_tok, inc2, b1_tok[..., None], rev2)[~lost_parent]
    core_links = facts(core_tok[leaf], incL, b2_tok[..., None], revL)
    core_links = core_links[~lost_core[..., None].expand(-1, -1, -1, L)]
    problem_rel = torch.cat([x_rel.view(-1, 3), b2_rel, core_links])
    train = _train_set(attr, core_rel, problem_rel, gen)

    # derivable: a complete path from core values up to the node; fwd: one that
    # needs no inverted fact (every upper node on it is the sum of its fact)
    complete2 = ~nullified  # core links and the link to its parent both kept
    deriv2 = ~lost_core
    deriv1 = complete2.any(-1)
    fwd2 = deriv2 & (~revL).any(-1)
    fwd1 = (complete2 & fwd2 & ~rev2).any(-1)
    fwdx = (fwd1 & ~rev1).any(-1)
    derivable = torch.cat(
        [torch.ones(n, 1, dtype=torch.bool), deriv1, deriv2.flatten(1)], 1
    )
    forward_only = torch.cat([fwdx[:, None], fwd1, fwd2.flatten(1)], 1)
    val = torch.cat([x_val[:, None], b1_val, b2_val.flatten(1)], 1)  # [n, per]

    probes = torch.stack([node, torch.full_like(node, eq), val], -1).view(-1, 3)
    depth = torch.tensor([3] + [2] * b + [1] * (b * b)).repeat(n)
    reverse = (derivable & ~forward_only).reshape(-1)
    values = torch.cat([torch.full((P,), -1), core_value, val.reshape(-1)])
    return small, train, probes, depth, reverse, derivable.reshape(-1), values


def arithmetic_tree_task(
    modulus: int,
    per_value: int,
    n_problems: int,
    branching: int,
    core_frac: float,
    drop_prob: float,
    core_links: int,
    seeds: list[int],
) -> ArithmeticTask:
    """The paper's problem trees (``data_gen_arithmetic.ipynb``) for each seed in
    ``seeds``, as an :class:`ArithmeticTask` (``chain_len`` 3).

    Problem ``X`` (value uniform mod ``P``; the paper draws it from [200, 800] at
    ``P = 10007`` and bans values to keep the tree's values in range, which a small
    ``P`` cannot do) has ``b = branching`` bridge-1 children, each with ``b`` bridge-2
    children; each bridge-2 node has ``core_links`` links to core entities. Every edge
    is one relational fact with a small-valued core entity ``c`` as ``e2``, stored
    forward (``lower + c = upper``: the upper node, nearer ``X``, is the sum) or
    reversed (``upper + c = lower``: it is an addend), 50/50; values are drawn from
    ``X`` down, and a core link's core entity is drawn among the ``per_value`` holding
    the value it needs.

    Distractors (``drop_prob = p``), as the paper's generator: ``k = round(p b)``
    bridge-1 nodes of each problem are *doomed* (all their bridge-2 children
    nullified) and ``k`` children of every bridge-1 node are nullified, drawn without
    replacement. A nullified bridge-2 node loses either its ``core_links`` facts or its
    fact with its parent: exactly half of a seed's nullified nodes lose the core links
    (the paper flips a coin per node; the exact half gives every seed the same number
    of training facts, so that ``train`` is one tensor). So a problem stores ``b +
    (L + 1) b^2 (1 - q / 2)`` relational facts on average, ``q = p + (1 - p) p`` where
    ``p b`` is an integer (``L = core_links``; 416, 1,644, 3,684, 6,536 at ``b`` = 10,
    20, 30, 40, ``L = 6``, ``p = 0.6``; the paper's stored problems hold 415.7,
    1,635.1 and 3,679.7 on average at ``b`` = 10, 20, 30). A bridge-2 node that keeps
    both is *complete*: it lies on a complete path from the core values to ``X``.
    Every problem has one, *forced*: ``k`` is capped at ``b - 1``, so each of the
    ``b - k >= 1`` spared bridge-1 nodes keeps ``b - k >= 1`` complete children (at
    ``b = 1`` there are no distractors). A core link drawn twice is stored twice (the
    paper keeps a set).

    Trained: the core attribute facts, ``core_frac`` of the core sums, every kept
    problem fact (two inputs in random order). Probes, never trained: ``node <=>
    value`` of ``X`` (``depth`` 3), the bridge-1 (2) and bridge-2 (1) nodes,
    problem-major, each problem ``X``, its bridge-1 nodes, then their children in
    order.

    ``derivable``: the node's value follows by chaining *up* the tree from the core
    values: a bridge-2 node that kept its core links, a bridge-1 node with a complete
    child, every ``X``. (Chaining *down* from a derived ``X`` through the kept facts
    would determine every node of the problem; the paper's "complete path" is the
    upward one, and so is this.) ``reverse``: a derivable node every one of whose
    complete paths from the core values holds at least one fact whose upper node is an
    addend (its value needs the inverse of that fact); a bridge-2 node with
    ``core_links`` 6 has a forward core link unless all 6 are reversed (1/64), so
    ``reverse`` is rare at depth 1 and rarer higher up. False where not derivable.

    Token ids as :func:`arithmetic_task`, the problem nodes in the probes' order.
    Seed ``s``'s data depends only on ``s``."""
    _validate.integer("modulus", modulus, 3, 10**5)
    _validate.integer("per_value", per_value, 1, 1000)
    _validate.integer("n_problems", n_problems, 1, 10**5)
    _validate.integer("branching", branching, 1, 100)
    _validate.real("core_frac", core_frac, 0.0, 1.0)
    _validate.real("drop_prob", drop_prob, 0.0, 1.0, hi_open=True)
    _validate.integer("core_links", core_links, 1, 100)
    seeds = _validate.seeds(seeds)
    parts = [
        _one_tree_seed(
            modulus,
            per_value,
            n_problems,
            branching,
            core_frac,
            drop_prob,
            core_links,
            repro.generator(s),
        )
        for s in seeds
    ]
    small, train, probes, depth, reverse, derivable, values = (
        torch.stack(p) for p in zip(*parts)
    )
    return ArithmeticTask(
        modulus=modulus,
        per_value=per_value,
        chain_len=3,
        small=small,
        train=train,
        probes=probes,
        depth=depth,
        reverse=reverse,
        values=values,
        derivable=derivable,
    )
