"""No seed crashes a notebook: every generator of :mod:`revlib.data`, over many seeds
and sizes (a seeded loop), returns a task whose invariants hold or raises a
``ValueError`` that names the offending argument. Any other exception fails the test.

Seeds: 0, 1, 2, 7, 999, 4242, 2**31 - 1 and a few drawn from a fixed numpy Generator;
then seeds a reader might mistype (negative, huge, a float, None, a string). Sizes: the
smallest allowed, a typical one, and the values just outside the allowed range. A valid
task is rebuilt from the same arguments and must come out equal (determinism).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math

import numpy as np
import pytest
import torch

from revlib.data import arithmetic, bilinear, binding, caching, chains, noisy_recall
from revlib.data import probe_prompts, reversal, reversal_sequences, small_corpus

_RNG = np.random.default_rng(20_250_522)
SEEDS = [0, 1, 2, 7, 999, 4242, 2**31 - 1]
SEEDS += [int(s) for s in _RNG.integers(0, 2**31, 5)]
# seeds a reader might type: each gives a task or a ValueError naming the seed
ODD_SEEDS = [-1, 2**40, 2**63 - 1, 2**63, 2**64, 1.5, float("nan"), None, "0", True]
# what a reader might pass as the list of seeds
ODD_SEED_LISTS = [[], 3, None, "01", (0,), range(2), [0, 0], [0, None]]
NAN = float("nan")


def fails(fn, names, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ValueError naming one of ``names``."""
    names = (names,) if isinstance(names, str) else names
    with pytest.raises(ValueError) as err:
        fn(*args, **kwargs)
    assert any(n in str(err.value) for n in names), (names, str(err.value))


def task_or_error(fn, names, *args, **kwargs):
    """The result of ``fn``, or None where it raises ValueError naming one of ``names``
    (another exception propagates: a failure)."""
    names = (names,) if isinstance(names, str) else names
    try:
        return fn(*args, **kwargs)
    except ValueError as err:
        assert any(n in str(err) for n in names), (names, str(err))
        return None


def same(x, y) -> bool:
    """Equal tasks: tensors, arrays, dataclasses, dicts and lists compared exactly."""
    if dataclasses.is_dataclass(x):
        return type(x) is type(y) and same(vars(x), vars(y))
    if isinstance(x, torch.Tensor):
        return x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    if isinstance(x, np.ndarray):
        return x.shape == y.shape and np.array_equal(x, y)
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    return x == y


def deterministic(fn, *args, **kwargs):
    first = fn(*args, **kwargs)
    assert same(first, fn(*args, **kwargs)), fn.__name__
    return first


def seed_lists():
    """A few seed lists of one or more seeds from :data:`SEEDS`."""
    return [[s] for s in SEEDS] + [SEEDS[:3], [SEEDS[-1], SEEDS[0]]]


def check_odd_seeds(fn, *args, **kwargs):
    """``fn(*args, seeds, **kwargs)`` for odd seeds and odd seed lists: each gives a
    task or a ValueError naming the seed; returns the ``(seeds, task)`` that were
    built."""
    out = []
    for seeds in [[s] for s in ODD_SEEDS] + ODD_SEED_LISTS:
        task = task_or_error(fn, "seed", *args, seeds, **kwargs)
        if task is not None:
            out.append((list(seeds), task))
    return out


def rows(t: torch.Tensor) -> set:
    """The rows of a 2-D tensor as a set of tuples."""
    return {tuple(r) for r in t.tolist()}


# ---------------------------------------------------------------- arithmetic


def check_arithmetic(t: arithmetic.ArithmeticTask, P, c, n_chains, K, S):
    n_tok = P + P * c + n_chains * K
    assert t.values.shape == (S, n_tok) and t.vocab_size == n_tok + 2
    assert t.probes.shape == (S, n_chains * K, 3)
    assert t.depth.shape == t.reverse.shape == (S, n_chains * K)
    assert t.train.min() >= 0 and t.train.max() <= t.eq_token
    assert ((t.small >= 1) & (t.small < P)).all()
    assert (t.small[:, 0] != t.small[:, 1]).all()
    for s in range(S):
        v, tr = t.values[s], t.train[s]
        attr = tr[:, 1] == t.eq_token
        assert (v[tr[attr, 0]] == tr[attr, 2]).all()
        rel = tr[~attr]
        assert ((v[rel[:, 0]] + v[rel[:, 1]] - v[rel[:, 2]]) % P == 0).all()
        assert not rows(t.probes[s]) & rows(tr)
        assert (t.probes[s][:, 2] < P).all()


def test_arithmetic_task_over_seeds_and_sizes():
    sizes = [(3, 1, 1, 1, 0.0), (3, 2, 2, 3, 1.0), (5, 2, 3, 2, 0.5), (7, 1, 4, 4, 0.3)]
    for P, c, n, K, frac in sizes:
        for seeds in seed_lists():
            t = deterministic(arithmetic.arithmetic_task, P, c, n, K, frac, seeds)
            check_arithmetic(t, P, c, n, K, len(seeds))
    for seeds, t in check_odd_seeds(arithmetic.arithmetic_task, 5, 2, 3, 2, 0.5):
        check_arithmetic(t, 5, 2, 3, 2, len(seeds))
    good = dict(modulus=5, per_value=2, n_chains=3, chain_len=2, core_frac=0.5)
    bad = {
        "modulus": [2, 0, -1, 5.0, None, 10**5 + 1],
        "per_value": [0, -1, 1001, 1.5],
        "n_chains": [0, -3, True],
        "chain_len": [0, 101, None],
        "core_frac": [-0.1, 1.1, NAN, math.inf, None, "0.5"],
    }
    for name, values in bad.items():
        for value in values:
            fails(arithmetic.arithmetic_task, name, **{**good, name: value}, seeds=[0])


# ---------------------------------------------------------------- bilinear


def check_bilinear(t: bilinear.BilinearTask, m, n, d, k, S):
    assert t.coords.shape == (S, m, min(d, m)) and t.x.shape == t.y.shape == (S, n)
    assert t.train_in.shape == t.train_out.shape == (S, 2 * n - k)
    assert torch.equal(t.heldout_in, t.y[:, :k])
    assert torch.equal(t.heldout_out, t.x[:, :k])
    assert ((t.max_abs_cos >= 0) & (t.max_abs_cos <= 1 + 1e-6)).all()
    for s in range(S):
        ids = torch.cat([t.x[s], t.y[s]])
        assert len(set(ids.tolist())) == 2 * n and ids.min() >= 0 and ids.max() < m
        train = set(zip(t.train_in[s].tolist(), t.train_out[s].tolist()))
        held = set(zip(t.heldout_in[s].tolist(), t.heldout_out[s].tolist()))
        assert not train & held


def test_bilinear_task_and_embeddings_over_seeds_and_sizes():
    for m, n, d, k in [(2, 1, 1, 1), (6, 3, 2, 3), (10, 4, 16, 1), (9, 2, 5, 2)]:
        for seeds in seed_lists():
            t = deterministic(bilinear.bilinear_task, m, n, d, k, seeds)
            check_bilinear(t, m, n, d, k, len(seeds))
    for seeds, t in check_odd_seeds(bilinear.bilinear_task, 10, 3, 4, 1):
        check_bilinear(t, 10, 3, 4, 1, len(seeds))
    good = dict(m=10, n=3, d=4, n_reverse_heldout=1)
    bad = {
        "m": [1, 0, -2, 100_001, 10.0],
        "n": [0, 6, -1, None],
        "d": [0, -1, 1_000_001, 2.5],
        "n_reverse_heldout": [0, 4, None],
    }
    for name, values in bad.items():
        for value in values:
            fails(bilinear.bilinear_task, name, **{**good, name: value}, seeds=[0])
    for m, d in [(2, 1), (5, 3), (7, 40)]:
        for seed in SEEDS:
            v = deterministic(bilinear.embeddings, m, d, seed)
            assert v.shape == (m, d) and torch.isfinite(v).all()
    for seed in ODD_SEEDS:
        v = task_or_error(bilinear.embeddings, "seed", 4, 3, seed)
        assert v is None or v.shape == (4, 3)
    for m, d in [(1, 3), (4, 0), (100_001, 1), (None, 3), (4, 1.5)]:
        fails(bilinear.embeddings, ("m", "d"), m, d, 0)


# ---------------------------------------------------------------- binding


def check_binding(t: binding.BindingTask, n_a, n_b, n_rel, mult, S):
    E = n_a + n_b
    L = 1 if mult == 0 else 2
    assert t.names.shape == (S, E, L)
    assert t.names.min() >= 0 and t.names.max() < t.n_name_tokens
    half = n_rel * n_a // 2
    assert t.facts["train"].shape == (S, 2 * half, 3)
    assert t.facts["atomic"].shape == t.facts["test"].shape == (S, n_rel * n_b // 2, 3)
    for s in range(S):
        assert len(rows(t.names[s])) == E  # all names differ
        train, atomic, test = (t.facts[k][s] for k in binding.SPLITS)
        assert (train[:, [0, 2]] < n_a).all() and (atomic[:, [0, 2]] >= n_a).all()
        assert (train[:, 1] < 2 * n_rel).all() and (atomic[:, 1] < 2 * n_rel).all()
        # a held-out fact is the reverse of its atomic fact, never trained
        assert torch.equal(test[:, [0, 2]], atomic[:, [2, 0]])
        assert torch.equal(test[:, 1] ^ 1, atomic[:, 1])
        assert not rows(test) & (rows(train) | rows(atomic))
    for split in binding.SPLITS:
        seq = t.sequences(split)
        assert seq.shape[-1] == 2 * L + 2
        assert seq.min() >= 0 and seq.max() < t.vocab_size


def test_binding_task_over_seeds_and_sizes():
    sizes = [
        (2, 2, 1, 0),
        (2, 2, 1, 1),
        (2, 2, 1, 2),
        (4, 4, 2, 2),
        (6, 6, 1, 3),
        (4, 12, 3, 4),
        (10, 6, 2, 0),
    ]
    for n_a, n_b, n_rel, mult in sizes:
        for seeds in seed_lists()[::2]:
            t = deterministic(binding.binding_task, n_a, n_b, n_rel, mult, seeds)
            check_binding(t, n_a, n_b, n_rel, mult, len(seeds))
    for seeds, t in check_odd_seeds(binding.binding_task, 4, 4, 1, 2):
        check_binding(t, 4, 4, 1, 2, len(seeds))
    good = dict(n_a=4, n_b=4, n_rel=1, multiplicity=2)
    bad = {
        "n_a": [0, 1, 3, -2, 4.0, None],
        "n_b": [0, 5, 10**6 + 2],
        "n_rel": [0, 101, -1],
        "multiplicity": [-1, 3, 4, 5, 10**4 + 1, 1.5, None],
    }
    for name, values in bad.items():
        for value in values:
            fails(binding.binding_task, name, **{**good, name: value}, seeds=[0])
    t = binding.binding_task(4, 4, 1, 2, [0])
    for split in ["val", "", None, 0]:
        fails(t.sequences, "split", split)


def test_names_with_multiplicity_over_seeds_and_sizes():
    for E, m in [(1, 1), (4, 1), (4, 2), (9, 3), (12, 2), (60, 5)]:
        for seed in SEEDS:
            names = deterministic(
                lambda: binding.names_with_multiplicity(
                    E, m, torch.Generator().manual_seed(seed)
                )
            )
            F = E // m
            assert names.shape == (E, 2) and len(rows(names)) == E
            each = torch.full((F,), m)  # every token is shared by m entities
            assert torch.equal(torch.bincount(names[:, 0], minlength=F), each)
            last = names[:, 1] - F
            assert last.min() >= 0
            assert torch.equal(torch.bincount(last, minlength=F), each)
    gen = torch.Generator().manual_seed(0)
    for E, m in [(0, 1), (-4, 2), (10**7 + 1, 1), (None, 2), (4.0, 2)]:
        fails(binding.names_with_multiplicity, "n_entities", E, m, gen)
    for E, m in [(8, 0), (8, -1), (8, 3), (8, 4), (9, 2), (8, 9), (8, 2.0), (8, True)]:
        fails(binding.names_with_multiplicity, "multiplicity", E, m, gen)
    for g in [0, None, np.random.default_rng(0)]:
        fails(binding.names_with_multiplicity, "gen", 8, 2, g)


# ---------------------------------------------------------------- chains


def check_chain(t: chains.ChainTask, vocab, n, k, S, in_training, L=3):
    assert t.a.shape == t.b.shape == t.c.shape == (S, n)
    assert t.train.shape == (S, 3 * n - k + (k if in_training else 0), L)
    assert t.heldout.shape == (S, k, L) and t.vocab_size == vocab
    assert t.train.min() >= 0 and t.train.max() < vocab
    for s in range(S):
        if L == 3:
            ents = torch.cat([t.a[s], t.b[s], t.c[s]]).tolist()
            assert len(set(ents)) == 3 * n and min(ents) >= 2
        else:
            assert len(set(t.a[s].tolist())) == n and t.a[s].min() >= 5
        held, train = rows(t.heldout[s]), rows(t.train[s])
        assert held <= train if in_training else not held & train


def test_chain_task_over_seeds_and_sizes():
    for vocab, n, k in [(5, 1, 0), (5, 1, 1), (20, 6, 6), (30, 4, 2), (11, 3, 1)]:
        for flag in (False, True):
            for seeds in seed_lists()[::2]:
                t = deterministic(
                    chains.chain_task, vocab, n, k, seeds, heldout_in_training=flag
                )
                check_chain(t, vocab, n, k, len(seeds), flag)
    for seeds, t in check_odd_seeds(chains.chain_task, 20, 4, 2):
        check_chain(t, 20, 4, 2, len(seeds), False)
    good = dict(vocab_size=20, n=4, n_heldout=2)
    bad = {
        "vocab_size": [4, 0, -1, 100_001, 20.0],
        "n": [0, 7, -1, None],
        "n_heldout": [-1, 5, 1.5],
    }
    for name, values in bad.items():
        for value in values:
            fails(chains.chain_task, name, **{**good, name: value}, seeds=[0])


def test_related_task_over_seeds_and_sizes():
    sizes = [(1, 1, 0), (1, 0, 1), (10, 4, 2), (6, 0, 6), (8, 8, 0)]
    for alphabet, n_train, k in sizes:
        for flag in (False, True):
            for seeds in seed_lists()[::2]:
                t = deterministic(
                    chains.related_task,
                    alphabet,
                    n_train,
                    k,
                    seeds,
                    heldout_in_training=flag,
                )
                check_chain(t, alphabet + 5, n_train + k, k, len(seeds), flag, L=5)
    for seeds, t in check_odd_seeds(chains.related_task, 10, 4, 2):
        check_chain(t, 15, 6, 2, len(seeds), False, L=5)
    good = dict(alphabet=10, n_train=4, n_heldout=2)
    bad = {
        "alphabet": [0, -1, 100_001, None],
        "n_train": [-1, 11, 2.0],
        "n_heldout": [-1, 7, None],
    }
    for name, values in bad.items():
        for value in values:
            fails(chains.related_task, name, **{**good, name: value}, seeds=[0])
    fails(chains.related_task, ("n_train", "n_heldout"), 10, 0, 0, [0])


# ---------------------------------------------------------------- noisy recall


def check_noisy(d: noisy_recall.NoisyRecall, n, T, alpha, S):
    assert d.x.shape == d.y.shape == d.occurrence.shape == d.noise.shape == (S, n, T)
    assert d.ybar.shape == (S, n)
    assert d.x.min() >= 0 and d.x.max() < noisy_recall.VOCAB_SIZE
    assert torch.equal(d.x[..., 1:], d.y[..., :-1])
    trig = d.x == noisy_recall.TRIGGER
    tau = torch.full_like(d.y, noisy_recall.NOISE_TOKEN)
    answer = d.ybar[..., None].expand_as(d.y)
    assert torch.equal(d.y[trig], torch.where(d.noise, tau, answer)[trig])
    assert not (d.noise & ~trig).any()
    if alpha == 0:
        assert not d.noise.any()
    if alpha == 1:
        assert torch.equal(d.noise, trig)


def test_noisy_recall_sample_over_seeds_and_sizes():
    for n, T, alpha, stream in [(1, 2, 0.0, 0), (3, 17, 1.0, 5), (2, 40, 0.3, 10**6)]:
        for seeds in seed_lists():
            d = deterministic(noisy_recall.sample, seeds, n, T, alpha, stream=stream)
            check_noisy(d, n, T, alpha, len(seeds))
    for seeds, d in check_odd_seeds(lambda s: noisy_recall.sample(s, 2, 8, 0.2)):
        check_noisy(d, 2, 8, 0.2, len(seeds))
    good = dict(n=2, seq_len=8, alpha=0.2, stream=0)
    bad = {
        "n": [0, -1, 10**7 + 1, 2.0],
        "seq_len": [1, 0, 10**5 + 1, None],
        "alpha": [-0.1, 1.1, NAN, None],
        "stream": [-1, 10**6 + 1, 0.5],
    }
    for name, values in bad.items():
        for value in values:
            fails(noisy_recall.sample, name, [0], **{**good, name: value})
    for conc in [0.5, 8.0]:
        pi, cond = noisy_recall.character_statistics(conc)
        assert np.isclose(pi.sum(), 1) and np.allclose(cond.sum(1), 1)
        assert (cond > 0).all()
    for conc in [0.0, -1.0, NAN, math.inf, None]:
        fails(noisy_recall.character_statistics, "concentration", conc)


# ---------------------------------------------------------------- IOI prompts


def check_ioi(items, n, remove_io):
    assert len(items) == n
    for i, d in enumerate(items):
        assert d["io"] != d["s"] and {d["io"], d["s"]} <= set(probe_prompts.IOI_NAMES)
        assert d["order"] == ("ABBA" if i % 2 == 0 else "BABA")
        assert d["prompt"].count(d["s"]) >= 2
        assert (d["io"] in d["prompt"]) != remove_io


def test_ioi_prompts_over_seeds_and_sizes():
    for n in [1, 2, 17]:
        for remove_io in (False, True):
            for seed in SEEDS + [-1, 2**64, 1.5]:
                items = deterministic(
                    probe_prompts.ioi_prompts, n, seed, remove_io=remove_io
                )
                check_ioi(items, n, remove_io)
    for seed in ODD_SEEDS:
        items = task_or_error(probe_prompts.ioi_prompts, "seed", 3, seed)
        if items is not None:
            check_ioi(items, 3, False)
    for n in [0, -1, 10**6 + 1, 2.0, None, "3"]:
        fails(probe_prompts.ioi_prompts, "n", n, 0)


# ---------------------------------------------------------------- reversal


def check_reversal(t: reversal.ReversalTask, M, n, k, S, typed):
    first = 4 if typed else 2
    assert t.a.shape == t.b.shape == (S, n) and t.n_train == 2 * n - k
    assert t.train_ctx.shape == (S, 2 * n - k, 2 if typed else 1)
    assert t.heldout_target.shape == (S, k)
    for s in range(S):
        ents = torch.cat([t.a[s], t.b[s]]).tolist()
        assert len(set(ents)) == 2 * n and min(ents) >= first and max(ents) < M
        sent = torch.cat(
            [
                t.train_ctx[s][:, :1],
                t.train_query[s][:, None],
                t.train_target[s][:, None],
            ],
            1,
        )
        held = torch.cat(
            [
                t.heldout_ctx[s][:, :1],
                t.heldout_query[s][:, None],
                t.heldout_target[s][:, None],
            ],
            1,
        )
        assert not rows(sent) & rows(held)
        if typed:
            types = set(t.train_ctx[s][:, 1].tolist())
            assert types <= {reversal.A_TYPE, reversal.B_TYPE}


@pytest.mark.parametrize("typed", [False, True], ids=["one-token", "typed"])
def test_reversal_task_over_seeds_and_sizes(typed):
    fn = reversal.typed_reversal_task if typed else reversal.reversal_task
    low = 6 if typed else 4
    reserved = 4 if typed else 2
    sizes = [(low, 1, 0), (low, 1, 1), (low + 10, 5, 2), (low + 7, 3, 3)]
    for M, n, k in sizes:
        for seeds in seed_lists():
            t = deterministic(fn, M, n, k, seeds)
            check_reversal(t, M, n, k, len(seeds), typed)
    for seeds, t in check_odd_seeds(fn, 14, 3, 1):
        check_reversal(t, 14, 3, 1, len(seeds), typed)
    good = dict(M=14, n=3, n_heldout=1)
    bad = {
        "M": [low - 1, 0, -1, 100_001, 14.0, None],
        "n": [0, (14 - reserved) // 2 + 1, -1],
        "n_heldout": [-1, 4, 0.5],
    }
    for name, values in bad.items():
        for value in values:
            fails(fn, name, **{**good, name: value}, seeds=[0])


def test_entities_over_seeds_and_sizes():
    for M, count, first in [(3, 1, 2), (10, 8, 2), (10, 3, 0), (50, 10, 4)]:
        for seed in SEEDS + [-1_000_003]:
            e = deterministic(reversal.entities, M, count, seed, first=first)
            assert e.shape == (count,) and len(set(e.tolist())) == count
            assert e.min() >= first and e.max() < M
    for seed in ODD_SEEDS:
        e = task_or_error(reversal.entities, "seed", 10, 3, seed)
        assert e is None or e.shape == (3,)
    for M, count, first in [
        (2, 1, 2),
        (0, 1, 2),
        (10**7 + 1, 1, 2),
        (None, 1, 2),
        (10.0, 1, 2),
    ]:
        fails(reversal.entities, "M", M, count, 0, first=first)
    for first in [-1, 1.5, None, 10**7]:
        fails(reversal.entities, "first", 10, 1, 0, first=first)
    for count in [0, 9, -1, None]:
        fails(reversal.entities, "count", 10, count, 0)


# ---------------------------------------------------------------- reversal sequences


def check_sequences(d: reversal_sequences.ReversalSequences, vocab, w, ratio, S, flag):
    alphabet = vocab // 4
    P = reversal_sequences.n_pairs(vocab, w)
    n_both = int(round(ratio * P))
    assert d.a.shape == d.b.shape == (S, P, w) and d.vocab_size == vocab + 2
    assert d.val.shape == d.val_pairs.shape + (2 * w + 1,) == (S, P - n_both, 2 * w + 1)
    assert d.n_train == 2 * n_both + (P - n_both) + (P - n_both if flag else 0)
    for s in range(S):
        a, b = d.a[s], d.b[s]
        assert len(rows(a)) == len(rows(b)) == P
        ids_a, ids_b = set(a.flatten().tolist()), set(b.flatten().tolist())
        assert not ids_a & ids_b and len(ids_a) <= alphabet and len(ids_b) <= alphabet
        assert min(ids_a | ids_b) >= 2 and max(ids_a | ids_b) < vocab + 2
        assert int(d.both[s].sum()) == n_both
        assert torch.equal(d.val_pairs[s], torch.nonzero(~d.both[s])[:, 0])
        train, val = rows(d.train[s]), rows(d.val[s])
        assert val <= train if flag else not val & train


def test_reversal_sequences_over_seeds_and_sizes():
    sizes = [(8, 1, 0.0), (8, 2, 0.5), (40, 1, 0.7), (40, 3, 0.9), (33, 2, 0.3)]
    for vocab, w, ratio in sizes:
        for flag in (False, True):
            for seeds in seed_lists()[::2]:
                d = deterministic(
                    reversal_sequences.reversal_sequences,
                    vocab,
                    w,
                    seeds,
                    split_ratio=ratio,
                    heldout_in_training=flag,
                )
                check_sequences(d, vocab, w, ratio, len(seeds), flag)
    for seeds, d in check_odd_seeds(reversal_sequences.reversal_sequences, 16, 1):
        check_sequences(d, 16, 1, 0.7, len(seeds), False)
    fn = reversal_sequences.reversal_sequences
    for vocab in [7, 0, -8, 100_001, 16.0, None]:
        fails(fn, "vocab", vocab, 1, [0])
    for w in [0, 5, -1, 1.5, None]:
        fails(fn, "word_size", 16, w, [0])
    for ratio in [-0.1, 1.0, 0.99, NAN, None]:  # 0.99 of 4 pairs: none held out
        fails(fn, "split_ratio", 16, 1, [0], split_ratio=ratio)
    # 25_000 ** 3 possible entities cannot be permuted: a ValueError, not an allocation
    fails(fn, ("word_size", "vocab"), 100_000, 3, [0])


def test_n_pairs_over_sizes():
    for vocab in [8, 9, 31, 200, 800, 100_000]:
        for w in [1, 2, 3, 4]:
            a = vocab // 4
            assert reversal_sequences.n_pairs(vocab, w) == min(a**w, 2 * a)
    for vocab in [7, 0, -1, 100_001, None, "800"]:
        fails(reversal_sequences.n_pairs, "vocab", vocab, 1)
    for w in [0, 5, None, 2.0]:
        fails(reversal_sequences.n_pairs, "word_size", 800, w)


def check_in_context(
    d: reversal_sequences.InContextSequences, vocab, n_x, n_y, n_tr, S
):
    assert d.train.shape == (S, n_x * n_tr, 7)
    assert d.val.shape == (S, n_x * (n_y - n_tr), 7)
    assert d.vocab_size == vocab + 3
    for s in range(S):
        tr, va = d.train[s], d.val[s]
        ents = torch.cat([tr, va])[:, [0, 2]]
        assert ents.min() >= 3 and ents.max() < vocab + 3
        assert torch.equal(tr[:, 0], tr[:, 6]) and torch.equal(tr[:, 2], tr[:, 4])
        assert not rows(tr[:, [0, 2]]) & rows(va[:, [0, 2]])
        assert len(rows(ents)) == n_x * n_y


def test_in_context_sequences_over_seeds_and_sizes():
    fn = reversal_sequences.in_context_sequences
    for vocab, n_x, n_y, n_tr in [(3, 1, 2, 1), (20, 3, 4, 2), (30, 5, 10, 9)]:
        for seeds in seed_lists():
            d = deterministic(fn, vocab, n_x, n_y, n_tr, seeds)
            check_in_context(d, vocab, n_x, n_y, n_tr, len(seeds))
    for seeds, d in check_odd_seeds(fn, 20, 3, 4, 2):
        check_in_context(d, 20, 3, 4, 2, len(seeds))
    good = dict(vocab=20, n_x=3, n_y=4, n_y_train=2)
    bad = {
        "vocab": [1, 0, 100_001, None],
        "n_x": [0, 20, -1, 3.0],
        "n_y": [1, 18, None],
        "n_y_train": [0, 4, -1],
    }
    for name, values in bad.items():
        for value in values:
            fails(fn, name, **{**good, name: value}, seeds=[0])


# ---------------------------------------------------------------- small corpus


def check_corpus(c: small_corpus.Corpus, n, T, alpha, S):
    assert c.x.shape == c.y.shape == c.answer.shape == c.io.shape == (S, n, T)
    assert c.x.min() >= 0 and c.x.max() < small_corpus.VOCAB_SIZE
    assert c.y.min() >= 0 and c.y.max() < small_corpus.VOCAB_SIZE
    assert torch.equal(c.x[..., 1:], c.y[..., :-1])
    ans = c.answer
    assert (c.x[ans] == small_corpus.TOKEN["to"]).all()
    assert (c.io[ans] != c.s[ans]).all() and (c.io[~ans] == -1).all()
    assert ((c.y[ans] == c.io[ans]) | (c.y[ans] == small_corpus.THE)).all()
    if alpha == 0:
        assert torch.equal(c.y[ans], c.io[ans])


def test_small_corpus_sample_over_seeds_and_sizes():
    for n, T, p_ioi, alpha in [
        (1, 2, 0.0, 0.0),
        (2, 30, 1.0, 0.0),
        (3, 25, 0.5, 1.0),
        (2, 64, 0.3, 0.2),
    ]:
        for seeds in seed_lists():
            c = deterministic(small_corpus.sample, seeds, n, T, p_ioi, alpha)
            check_corpus(c, n, T, alpha, len(seeds))
    for seeds, c in check_odd_seeds(lambda s: small_corpus.sample(s, 2, 20, 0.5, 0.2)):
        check_corpus(c, 2, 20, 0.2, len(seeds))
    good = dict(n=2, seq_len=20, p_ioi=0.5, alpha=0.2, stream=0)
    bad = {
        "n": [0, -1, 10**7 + 1, None],
        "seq_len": [1, 0, 10**5 + 1, 2.0],
        "p_ioi": [-0.1, 1.1, NAN],
        "alpha": [-0.1, 1.5, None],
        "stream": [-1, 10**6 + 1, 1.5],
    }
    for name, values in bad.items():
        for value in values:
            fails(small_corpus.sample, name, [0], **{**good, name: value})


# ---------------------------------------------------------------- caching

HAS_FACTS = importlib.util.find_spec("countryinfo") is not None


def check_split(split: caching.Split):
    keys = [q.key for q in split.questions]
    assert len(set(split.texts())) == len(split.texts())
    assert split.pairs.shape == (len(split.labels), 2)
    assert len(split.types) == len(split.labels)
    if len(split.pairs):
        assert split.pairs.min() >= 0 and split.pairs.max() < len(keys)
    for (i, j), y in zip(split.pairs, split.labels):
        assert i != j and y == (keys[i] == keys[j])
    assert set(split.types.tolist()) <= set(caching.PAIR_TYPES)


def check_stream(split, rows_, length):
    assert rows_.shape == (length,)
    assert rows_.min() >= 0 and rows_.max() < len(split.questions)
    count: dict = {}
    for q in split.questions:
        count[q.key] = count.get(q.key, 0) + 1
    assert all(count[split.questions[r].key] >= 2 for r in rows_)


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
def test_caching_build_and_stream_over_seeds_and_sizes():
    cases = [
        (0, 1, 1, 0.05),
        (2**32 - 1, 2, 1, 0.95),
        (SEEDS[-1], 3, 2, 0.5),
        (4242, 1, 3, 0.3),
    ]
    for seed, n_train, n_test, frac in cases:
        train, test = deterministic(caching.build, seed, n_train, n_test, frac)
        assert not set(train.countries) & set(test.countries)
        for split in (train, test):
            check_split(split)
            for s, length, zipf in [
                (seed, 1, 1.1),
                (0, 40, 0.0),
                (2**70, 7, -0.5),
                (1, 3, math.inf),
            ]:
                rows_ = deterministic(caching.stream, split, length, s, zipf=zipf)
                check_stream(split, rows_, length)
    good = dict(seed=0, n_train_per_type=2, n_test_per_type=2, test_fraction=0.5)
    bad = {
        "seed": [-1, 2**32, 1.5, None, "0"],
        "n_train_per_type": [0, -1, 100_001],
        "n_test_per_type": [0, 2.0, None],
        "test_fraction": [0.0, 0.04, 0.96, NAN],
    }
    for name, values in bad.items():
        for value in values:
            fails(caching.build, name, **{**good, name: value})
    _, test = caching.build(1, 1, 1)
    for length in [0, -1, 10**6 + 1, 2.5, None]:
        fails(caching.stream, "length", test, length, 0)
    for seed in [-1, 1.5, None, "0"]:
        fails(caching.stream, "seed", test, 5, seed)
    for zipf in [NAN, -math.inf, None, "1", -5000.0]:  # -5000: the weights overflow
        fails(caching.stream, "zipf", test, 5, 0, zipf=zipf)
    for split in [caching.build(1, 1, 1), None, 0, "test"]:  # the pair, not one side
        fails(caching.stream, "split", split, 5, 0)


def test_hard_subset_over_seeds_and_sizes():
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        for P in [0, 1, 2, 30]:
            cos = rng.uniform(-1, 1, P)
            labels = rng.integers(0, 2, P)
            for gap in [1e-3, 0.01, 0.3, 5.0, -0.05, math.inf]:
                keep = deterministic(caching.hard_subset, cos, labels, max_gap=gap)
                assert keep.dtype.kind == "i" and len(set(keep.tolist())) == len(keep)
                assert (np.diff(keep) > 0).all() and (keep < max(P, 1)).all()
                bins = np.floor(cos[keep] / gap)
                for b in np.unique(bins):
                    lab = labels[keep][bins == b]
                    assert (lab == 1).sum() == (lab == 0).sum()
    cos, labels = np.array([0.1, 0.2]), np.array([1, 0])
    for gap in [0.0, NAN, None, "0.01"]:
        fails(caching.hard_subset, "max_gap", cos, labels, max_gap=gap)
    for c, lab in [(cos, labels[:1]), (cos[:, None], labels), (cos, np.ones((2, 2)))]:
        fails(caching.hard_subset, ("cos", "labels"), c, lab)
