"""Unit tests of the arithmetic problem trees (the paper's Section 4 generator): shapes
and token ranges, true facts, the paper's fact counts, derivability against an
independent solver, determinism, config errors, and a tiny run of the experiment."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from revlib.data.arithmetic import arithmetic_task, arithmetic_tree_task
from revlib.experiments import arithmetic


def _tree(b=3, seeds=(0, 1), P=11, c=2, n=3, frac=0.5, p=0.6, L=4):
    return arithmetic_tree_task(P, c, n, b, frac, p, L, list(seeds))


def _levels(task, b: int) -> torch.Tensor:
    """``[n_tokens]`` tree level of every entity token from the layout: core 0,
    bridge-2 1, bridge-1 2, X 3 (-1 for values)."""
    P, n_core = task.modulus, task.n_core
    per = 1 + b + b * b
    node = torch.arange(task.eq_token - P - n_core) % per
    problem = torch.where(node == 0, 3, torch.where(node <= b, 2, 1))
    return torch.cat(
        [torch.full((P,), -1), torch.zeros(n_core, dtype=torch.long), problem]
    )


def _solve(task, s: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Chain up the tree over the stored facts of seed ``s`` alone. A fact links its
    highest node ``u`` (level k) to a node one level down (a core entity for k = 1; its
    third entity is the small-valued one); ``u`` is derived if that node is, by a
    forward fact if ``u`` is the fact's sum. ``[n_probes]`` (derivable, reached by
    forward facts only)."""
    level, eq = _levels(task, b), task.eq_token
    known = torch.zeros(eq, dtype=torch.bool)
    fwd = torch.zeros(eq, dtype=torch.bool)
    known[level == 0] = fwd[level == 0] = True
    links = []  # (k, u, lower, u is the sum)
    for f in task.train[s].tolist():
        if f[1] == eq:
            continue
        u = max(f, key=lambda e: level[e].item())
        k = level[u].item()
        if k == 0:  # a core sum
            continue
        rest = list(f)
        rest.remove(u)
        lower = [e for e in rest if level[e] == k - 1]
        assert len(lower) == (2 if k == 1 else 1), f
        links.append((k, u, lower[0], f[2] == u))
    for k in (1, 2, 3):  # bottom-up: lower levels are final before they are read
        for kk, u, low, is_sum in links:
            if kk == k:
                known[u] |= known[low]
                fwd[u] |= fwd[low] & is_sum
    nodes = task.probes[s, :, 0]
    return known[nodes], fwd[nodes]


def test_shapes_and_token_ranges():
    b, n, P, c, S = 3, 3, 11, 2, 2
    t = _tree(b)
    per = 1 + b + b * b
    n_tok = P + P * c + n * per
    assert t.values.shape == (S, n_tok) and t.vocab_size == n_tok + 2
    assert t.chain_len == 3 and t.small.shape == (S, 2)
    assert t.probes.shape == (S, n * per, 3)
    assert t.depth.shape == t.reverse.shape == t.derivable.shape == (S, n * per)
    assert t.derivable.dtype == torch.bool
    nodes = P + P * c + torch.arange(n * per)
    for s in range(S):
        assert torch.equal(t.probes[s, :, 0], nodes)  # problem-major, in token order
        assert (t.probes[s, :, 1] == t.eq_token).all()
        assert torch.equal(t.probes[s, :, 2], t.values[s, nodes])
        assert ((t.values[s, nodes] >= 0) & (t.values[s, nodes] < P)).all()
    assert torch.equal(t.depth[0], torch.tensor([3] + [2] * b + [1] * b * b).repeat(n))
    assert t.train.min() >= 0 and t.train.max() <= t.eq_token
    assert not t.reverse[~t.derivable].any()  # reverse only where derivable


def test_every_fact_is_true_and_probes_are_never_trained():
    t = _tree(4, seeds=(0, 1, 2))
    P, eq, n_core = t.modulus, t.eq_token, t.n_core
    for s in range(3):
        v, tr = t.values[s], t.train[s]
        attr = tr[:, 1] == eq
        # trained attribute facts: the core entities, each once, with its value
        assert torch.equal(tr[attr, 0].sort().values, P + torch.arange(n_core))
        assert torch.equal(v[tr[attr, 0]], tr[attr, 2])
        rel = tr[~attr]
        assert ((v[rel[:, 0]] + v[rel[:, 1]] - v[rel[:, 2]]) % P == 0).all()
        # every problem fact has a small-valued core entity among its two inputs
        small = set(t.small[s].tolist())
        for h, r, o in rel.tolist():
            core_small = [e for e in (h, r) if e < P + n_core and v[e].item() in small]
            assert core_small, (h, r, o)
        assert not {tuple(f) for f in t.probes[s].tolist()} & {
            tuple(f) for f in tr.tolist()
        }


def _per_problem(t, b, s):
    """Relational facts of each problem (each holds nodes of one problem only)."""
    P, n_core, per = t.modulus, t.n_core, 1 + b + b * b
    rel = t.train[s][t.train[s, :, 1] != t.eq_token]
    problem = (rel - P - n_core).clamp_min(-1) // per  # -1 for values / core
    owner = problem.max(-1).values
    assert ((problem == owner[:, None]) | (problem < 0)).all()
    return torch.bincount(owner[owner >= 0], minlength=(t.values.shape[1] - P) // per)


@pytest.mark.parametrize(
    "b, p, paper", [(10, 0.6, 416), (20, 0.6, 1_644), (10, 0.3, None)]
)
def test_fact_count_per_problem_matches_the_paper(b, p, paper):
    """b + 7 b^2 (1 - q / 2), q = p + (1 - p) p: the paper's table (about 416 and 1.6K
    at b = 10, 20); its stored problems hold 415.7 and 1,635.1 on average."""
    n, seeds = 20, [0, 1, 2]
    t = arithmetic_tree_task(101, 1, n, b, 0.0, p, 6, seeds)
    q = p + (1 - p) * p
    expected = b + 7 * b * b * (1 - q / 2)
    counts = torch.stack([_per_problem(t, b, s)[:n] for s in range(len(seeds))])
    assert counts.sum(-1).tolist() == [len(t.train[s]) - 101 for s in range(3)]
    mean = counts.float().mean().item()
    assert abs(mean - expected) < 0.03 * expected, (mean, expected)
    if paper is not None:
        assert abs(mean - paper) < 0.03 * paper
    assert counts.min() < counts.max()  # the side a distractor loses is random


def test_tiny_tree_by_hand():
    """b = 2, drop_prob 0.6: round(1.2) = 1 doomed bridge-1 node (both children
    nullified) and one nullified child of the other, so one complete bridge-2 node,
    under the one derivable bridge-1 node; each nullified node keeps its core links
    (derivable) or its parent link (not), half of them each over the seed."""
    b, n, L = 2, 4, 6
    t = arithmetic_tree_task(13, 1, n, b, 0.0, 0.6, L, [5])
    d = t.derivable[0].view(n, 1 + b + b * b)
    assert d[:, 0].all() and (d[:, 1:3].sum(-1) == 1).all()
    counts = _per_problem(t, b, 0)[:n]
    keeps_core = d[:, 3:].sum(-1) - 1  # the complete one, then the nullified ones
    # 2 facts X-bridge-1, 7 for the complete node, 6 or 1 for each nullified node
    assert torch.equal(counts, 2 + 7 + 6 * keeps_core + (3 - keeps_core))
    assert keeps_core.sum() == 3 * n // 2
    # by hand from the stored facts: under the derivable bridge-1 node exactly one
    # child has both its link to it and core links, under the doomed one none
    nodes = t.probes[0, :, 0].view(n, -1).tolist()
    level = _levels(t, b)
    rel = [set(f) for f in t.train[0].tolist() if f[1] != t.eq_token]
    for i in range(n):
        for j in range(b):
            br1, kids = nodes[i][1 + j], nodes[i][1 + b + b * j : 1 + b + b * (j + 1)]
            complete = [
                kid
                for kid in kids
                if any({br1, kid} <= f for f in rel)
                and any(kid in f and max(level[list(f)]) == 1 for f in rel)
            ]
            assert len(complete) == int(d[i, 1 + j])
            if complete:
                assert d[i, nodes[i].index(complete[0])]


@pytest.mark.parametrize("b, p", [(2, 0.6), (4, 0.6), (3, 0.0), (5, 0.9)])
def test_derivable_and_reverse_agree_with_a_solver(b, p):
    t = arithmetic_tree_task(13, 2, 3, b, 0.3, p, 3, [0, 1])
    for s in range(2):
        known, fwd = _solve(t, s, b)
        assert torch.equal(known, t.derivable[s])
        assert torch.equal(known & ~fwd, t.reverse[s])
    assert t.reverse.any() and (t.derivable & ~t.reverse).any()


@pytest.mark.parametrize("b", [1, 2, 3, 5])
@pytest.mark.parametrize("p", [0.0, 0.6, 0.99])
def test_every_problem_has_a_complete_path(b, p):
    t = arithmetic_tree_task(7, 1, 6, b, 0.0, p, 2, [0, 1])
    assert t.derivable[t.depth == 3].all()
    for s in range(2):
        known, _ = _solve(t, s, b)
        assert known[t.depth[s] == 3].all()


def test_determinism_per_seed():
    both, alone = _tree(seeds=(4, 5)), _tree(seeds=(5,))
    for f in ("train", "probes", "depth", "reverse", "derivable", "values", "small"):
        assert torch.equal(getattr(both, f)[1], getattr(alone, f)[0]), f
        assert torch.equal(getattr(both, f), getattr(_tree(seeds=(4, 5)), f)), f
    assert not torch.equal(both.values[0], both.values[1])


def test_chains_are_all_derivable():
    t = arithmetic_task(7, 3, 5, 4, 0.5, [0, 1])
    assert t.derivable.dtype == torch.bool and t.derivable.all()
    assert t.derivable.shape == t.reverse.shape


def test_bad_inputs_name_the_field():
    good = dict(
        modulus=7,
        per_value=2,
        n_problems=3,
        branching=2,
        core_frac=0.5,
        drop_prob=0.6,
        core_links=6,
    )
    bad = {
        "modulus": [2, 7.0],
        "per_value": [0],
        "n_problems": [0, True],
        "branching": [0, -1, 101, 2.0],
        "core_frac": [1.5, float("nan")],
        "drop_prob": [1.0, -0.1, float("nan"), None],
        "core_links": [0, 101],
    }
    for name, values in bad.items():
        for value in values:
            with pytest.raises(ValueError, match=name):
                arithmetic_tree_task(**{**good, name: value}, seeds=[0])
    cases = {
        "shape": ["trees", None],
        "branching": [0, 101],
        "drop_prob": [1.0, -0.5],
        "core_links": [0, 1.5],
    }
    for name, values in cases.items():
        for value in values:
            with pytest.raises(ValueError, match=name):
                arithmetic.Config(**{"shape": "tree", name: value})
    assert arithmetic.Config().shape == "chain"


TINY = dict(
    shape="tree",
    modulus=5,
    per_value=2,
    n_chains=3,
    branching=3,
    core_links=2,
    steps=3,
    batch_size=8,
    d_model=16,
    eval_points=2,
)


@pytest.mark.parametrize("model", arithmetic.MODELS)
def test_tree_run_reports_the_groups(model):
    r = arithmetic.run(arithmetic.Config(model=model, **TINY))
    keys = ("train_acc", "probe_acc", "forward_acc", "reverse_acc", "x_acc")
    for k in (*keys, "underivable_acc"):
        assert r.history[k].shape == (2, 2)
    assert r.task.chain_len == 3 and r.probe_correct.shape == r.task.depth.shape
    ok, x = r.task.derivable.numpy(), r.task.depth.numpy() == 3
    for s in range(2):
        np.testing.assert_allclose(
            r.final("probe_acc")[s], r.probe_correct[s, ok[s]].mean(), rtol=1e-6
        )
        np.testing.assert_allclose(
            r.final("x_acc")[s], r.probe_correct[s, x[s]].mean(), rtol=1e-6
        )
    assert r.by_depth(False).shape == (2, 3)


def test_tree_probes_in_training_adds_every_probe(arithmetic_n_train):
    import revlib.experiments.arithmetic as ar

    seen = arithmetic_n_train
    r = ar.run(ar.Config(**{**TINY, "steps": 1}))
    n_train, n_probes = r.task.train.shape[1], r.task.probes.shape[1]
    assert n_probes == 3 * (1 + 3 + 9) and seen["n"] == n_train
    ar.run(ar.Config(probes_in_training=True, **{**TINY, "steps": 1}))
    assert seen["n"] == n_train + n_probes


def test_fit_ceiling_counts_the_most_frequent_answer_per_input_pair():
    from collections import Counter, defaultdict

    for task in (
        arithmetic_tree_task(23, 4, 3, 10, 0.3, 0.6, 6, [0, 1]),
        arithmetic_task(7, 2, 5, 3, 0.3, [0]),
    ):
        want = []
        for facts in task.train.tolist():
            answers = defaultdict(Counter)
            for h, r, t in facts:
                answers[(h, r)][t] += 1
            best = sum(c.most_common(1)[0][1] for c in answers.values())
            want.append(best / len(facts))
        assert task.fit_ceiling().tolist() == pytest.approx(want)
    # trees: several reversed facts share the inputs (node, small entity)
    assert arithmetic_tree_task(23, 4, 20, 10, 0.3, 0.6, 6, [0]).fit_ceiling() < 0.8
