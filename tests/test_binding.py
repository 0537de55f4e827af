"""Unit tests of Part II: the binding data, the entanglement formula, config
validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from revlib.data.binding import binding_task, names_with_multiplicity
from revlib.experiments import entanglement, surface_names
from revlib.theory import entanglement as theory


def test_names_share_each_token_exactly_m_times_and_are_distinct():
    names = names_with_multiplicity(60, 5, torch.Generator().manual_seed(3))
    assert names.shape == (60, 2)
    assert len({tuple(n) for n in names.tolist()}) == 60
    assert torch.bincount(names[:, 0]).tolist() == [5] * 12
    assert torch.bincount(names[:, 1] - 12).tolist() == [5] * 12


def test_splits_are_reverses_and_partition_the_e_b_facts():
    task = binding_task(8, 6, 2, 0, [0, 1])
    tr, at, te = (task.facts[k] for k in ("train", "atomic", "test"))
    assert tr.shape == (2, 2 * 8, 3) and at.shape == te.shape == (2, 6, 3)
    # each test fact is the reverse of the atomic fact in the same row: (t, r^-1, h)
    assert torch.equal(te[..., 0], at[..., 2]) and torch.equal(te[..., 2], at[..., 0])
    assert torch.equal(te[..., 1], at[..., 1] ^ 1)
    assert bool((at[..., 0] >= 8).all()) and bool((tr[..., 0] < 8).all())
    # both directions of every E_A fact are trained
    fwd = {tuple(f) for f in tr[0].tolist()}
    assert all((t, r ^ 1, h) in fwd for h, r, t in fwd)


def test_sequences_layout_and_seed_independence():
    task = binding_task(50, 50, 1, 10, [4, 5])
    seq = task.sequences("test")
    assert seq.shape == (2, 25, 6)
    assert bool((seq[..., 3] == task.mask_token).all())
    alone = binding_task(50, 50, 1, 10, [5])
    assert torch.equal(alone.sequences("test")[0], seq[1])


def test_sgd_formula_matches_autograd():
    torch.manual_seed(0)
    V = torch.randn(3, 5, requires_grad=True)
    alpha, beta, ca, cb = torch.randn(5), torch.randn(5), torch.randn(3), torch.randn(3)
    loss = (ca * (V @ alpha)).sum() ** 2 + (cb * (V @ beta)).sum()
    a, b = V @ alpha, V @ beta
    ga, gb = 2 * (ca @ a) * ca, cb  # dL/da, dL/db by hand
    (G,) = torch.autograd.grad(loss, V)
    eta = 0.1
    dV = -eta * G
    da, db = theory.sgd_delta(alpha, beta, ga.detach(), gb, eta)
    assert torch.allclose(da, dV @ alpha, atol=1e-5) and torch.allclose(
        db, dV @ beta, atol=1e-5
    )
    # orthogonal inputs: no interference
    beta_perp = beta - (beta @ alpha) / (alpha @ alpha) * alpha
    da0, _ = theory.sgd_delta(alpha, beta_perp, ga.detach(), gb, eta)
    assert torch.allclose(da0, -eta * (alpha @ alpha) * ga.detach(), atol=1e-5)


def test_preconditioned_formula_reduces_to_sgd_for_constant_p():
    alpha, beta, ga, gb = torch.randn(4), torch.randn(4), torch.randn(2), torch.randn(2)
    p = theory.preconditioned_delta(alpha, beta, ga, gb, 0.5, torch.full((2, 4), 2.0))
    s = theory.sgd_delta(alpha, beta, ga, gb, 1.0)
    assert torch.allclose(p[0], s[0]) and torch.allclose(p[1], s[1])


def _small(**kw):
    return entanglement.step_check(
        entanglement.Config(d_model=16, n_head=2, n_seeds=2, adam_steps=2, **kw)
    )


def test_step_check_exact_cases():
    res = _small()
    for k in entanglement.EXACT:
        assert res.rel_error[k].max() < 1e-9, k
    for k in entanglement.INEXACT:
        assert res.rel_error[k].min() > 1e-2, k
    # the measured drag of a by a step on b alone is the formula's
    # |alpha^T beta| / |beta|^2
    np.testing.assert_allclose(res.drag, res.drag_predicted, rtol=1e-9)
    assert res.drag.min() > 0.1


def test_step_check_controls_break_what_they_name():
    removed, met, disjoint = (
        _small(assumptions="removed"),
        _small(assumptions="met"),
        _small(disjoint=True),
    )
    for k in entanglement.EXACT:
        assert removed.rel_error[k].min() > 1e-2, k  # alpha, beta move: not exact
    for k in entanglement.INEXACT:
        assert met.rel_error[k].max() < 1e-2, k  # assumptions given: (nearly) exact
    np.testing.assert_array_equal(disjoint.drag, 0.0)  # alpha^T beta = 0: no drag
    for k in entanglement.EXACT:
        assert disjoint.rel_error[k].max() < 1e-9, k  # the formula still holds


def test_entanglement_config_errors():
    with pytest.raises(ValueError, match="assumptions"):
        entanglement.Config(assumptions="some")
    with pytest.raises(ValueError, match="disjoint"):
        entanglement.Config(disjoint=1)


def test_shuffled_names_permute_entities_per_seed():
    names = binding_task(20, 20, 1, 4, [0, 1]).names
    sh = entanglement.shuffled_names(names)
    assert sh.shape == names.shape and not torch.equal(sh, names)
    for s in range(2):
        assert sorted(map(tuple, sh[s].tolist())) == sorted(
            map(tuple, names[s].tolist())
        )


def test_reverse_in_training_trains_the_held_out_facts(n_train_spy):
    import revlib.experiments.surface_names as sn

    seen = n_train_spy(sn)
    base = dict(
        n_a=8,
        n_b=8,
        n_rel=1,
        multiplicity=0,
        steps=1,
        batch_size=4,
        d_model=16,
        n_head=2,
        n_seeds=1,
        eval_points=2,
    )
    task = binding_task(8, 8, 1, 0, [0])
    sizes = {k: task.facts[k].shape[1] for k in ("train", "atomic", "test")}
    sn.run(sn.Config(**base))
    assert seen["n"] == sizes["train"] + sizes["atomic"]
    sn.run(sn.Config(reverse_in_training=True, **base))
    assert seen["n"] == sum(sizes.values())
    with pytest.raises(ValueError, match="reverse_in_training"):
        sn.Config(reverse_in_training="yes")


def test_stored_records_predating_a_control_field_take_its_default():
    from pathlib import Path
    from revlib import records

    df = records.load(
        Path(__file__).resolve().parent.parent / "data/sweeps/surface_names"
    )
    # the stored control run has the field; the records made before it do not (NaN)
    old = df[df["reverse_in_training"].isna()]
    assert len(old) == 6 and df["reverse_in_training"].eq(True).sum() == 1
    assert records.config_of(old.iloc[0], steps=10).reverse_in_training is False


@pytest.mark.parametrize(
    "field,value", [("multiplicity", -1), ("n_seeds", 0), ("d_model", 30)]
)
def test_config_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field if field != "d_model" else "d_model"):
        surface_names.Config(**{field: value})


def test_bad_multiplicity_rejected():
    with pytest.raises(ValueError, match="multiplicity"):
        binding_task(10, 10, 1, 3, [0])


def test_infonce_loss_hand_case():
    from revlib.models.jepa import infonce_loss

    # B = 1, P = 2: logits [pred.c0, pred.c1] = [0, 1]; gold is the last patch (index 1)
    pred = torch.tensor([[[1.0, 0.0]]])
    concepts = torch.tensor([[[[0.0, 0.0], [1.0, 0.0]]]])
    expected = -torch.log(torch.tensor(torch.e / (1 + torch.e)))
    assert torch.allclose(infonce_loss(pred, concepts), expected.reshape(1))


def test_jepa_patches_and_memory_lookup_is_per_entity():
    from revlib.experiments import jepa
    from revlib.models.jepa import JEPA, JEPAConfig

    task = binding_task(50, 50, 1, 10, [0])
    p, last, gold = jepa.patches(task, "test")
    assert p.shape == (1, 25, 4, 2) and torch.equal(p[0, :, 3], task.names[0, gold[0]])
    assert bool((p[..., 1:3, 1] == task.vocab_size).all())  # relation and mask padded
    keys = task.memory_keys()
    model = JEPA(
        JEPAConfig(vocab_size=task.vocab_size + 1, memory=True, d_model=64),
        1,
        memory_keys=keys,
    )
    c = model.concepts(task.names, torch.ones(1, 100, dtype=torch.long))
    # top-1 with keys = mean name embeddings: (almost) every entity reads its own value
    own = (c[0] @ model.values[0].T).argmax(-1) == torch.arange(100)
    assert own.float().mean() > 0.9


def test_layernorm_concepts_normalise_prediction_and_candidates_but_not_the_context():
    from revlib.models.jepa import JEPA, JEPAConfig

    task = binding_task(50, 50, 1, 10, [0])
    from revlib.experiments import jepa

    p, last, _ = jepa.patches(task, "train")
    model = JEPA(JEPAConfig(vocab_size=task.vocab_size + 1, concept_ln="layernorm"), 1)
    pred, cand = model(p, last)
    for x in (
        pred,
        cand,
    ):  # gain 1, bias 0 at init: zero mean, unit variance per vector
        assert torch.allclose(x.mean(-1), torch.zeros(()), atol=1e-5)
        var = x.var(
            -1, unbiased=False
        )  # just below 1: LayerNorm's eps 1e-5 vs small inputs
        assert bool(((var > 0.95) & (var <= 1.0 + 1e-5)).all())
    raw = model.concepts(p[:, :, 3], last[:, :, 3])
    assert (
        raw.norm(dim=-1).mean() < 1.0
    )  # raw concepts (the semantic module's input) are small
    rms = JEPA(JEPAConfig(vocab_size=task.vocab_size + 1), 1)
    pred, cand = rms(p, last)
    assert torch.allclose(
        pred.pow(2).mean(-1), torch.ones(()), atol=2e-2
    )  # RMS norm, eps 1e-5
    assert torch.equal(
        cand[:, :, 3], rms.concepts(p[:, :, 3], last[:, :, 3])
    )  # targets untouched


def test_relation_blindness_counts_answers_of_the_head_under_another_relation(
    monkeypatch,
):
    from revlib.experiments import jepa

    task = binding_task(20, 10, 2, 5, [0])
    res = jepa.Result(
        config=jepa.Config(n_a=20, n_b=10, n_rel=2, multiplicity=5, n_seeds=1),
        task=task,
        model=None,
        history=None,
    )
    f = task.facts["train"][0]
    tails = {}
    for h, r, t in f.tolist():
        tails.setdefault(h, {})[r // 2] = t  # one answer per head and relation pair
    wrong = torch.tensor([tails[h][1 - r // 2] for h, r, _ in f.tolist()])
    answer = {"gold": f[:, 2], "other": wrong}

    def scores(model, task, p, last, pick=None):
        return torch.nn.functional.one_hot(answer[pick], 30).float()[None, : p.shape[1]]

    same = float(
        (wrong[:30] == f[:30, 2]).float().mean()
    )  # partners that coincide: correct
    for pick, expected in (("gold", (1.0, 0.0)), ("other", (same, 1.0 - same))):
        monkeypatch.setattr(
            jepa, "_scores", lambda *a, pick=pick: scores(*a, pick=pick)
        )
        out = jepa.relation_blindness(res, "train", n=30)
        assert np.allclose((out["correct"][0], out["other_relation"][0]), expected)
    with pytest.raises(ValueError, match="split"):
        jepa.relation_blindness(res, "valid")


def test_jepa_config_errors():
    from revlib.experiments import jepa
    from revlib.models.jepa import JEPAConfig

    with pytest.raises(ValueError, match="concept_ln"):
        jepa.Config(concept_ln="cosine")
    with pytest.raises(ValueError, match="concept_ln"):
        JEPAConfig(vocab_size=10, concept_ln="none")
    with pytest.raises(ValueError, match="n_rec"):
        jepa.Config(memory=True, n_rec=2)
    assert jepa.Config(memory=True).model_config(10).concept_ln == "layernorm"
    assert jepa.Config().model_config(10).concept_ln == "rms"
    for field, value in (("steps", 0), ("lr", -1.0), ("batch_size", 0)):
        with pytest.raises(ValueError, match=field):
            jepa.Config(**{field: value})


def test_test_first_tokens_counts_the_answer_type():
    from revlib.data.binding import binding_task

    one = binding_task(40, 24, 1, 0, [0, 1])
    assert one.test_first_tokens().tolist() == [24, 24]
    names = binding_task(40, 24, 1, 4, [0])
    first = names.names[0, 40:, 0]
    assert names.test_first_tokens().tolist() == [len(set(first.tolist()))]
    assert names.test_first_tokens()[0] <= 64 // 4


@pytest.mark.parametrize(
    "memory, concept_ln, n_rec",
    [(False, "rms", 1), (False, "layernorm", 2), (True, "layernorm", 1)],
)
def test_deduplicated_infonce_is_the_same_loss_and_gradient(memory, concept_ln, n_rec):
    """JEPA.infonce(dedupe=True) computes each relation and <mask> concept once per
    batch and weighs its column by its count: the plain loss and its gradient, to
    round-off, for both norms, deeper recognition and the memory layer, two seeds."""
    from revlib.experiments import jepa
    from revlib.models.jepa import JEPA

    cfg = jepa.Config(
        n_a=160, n_b=40, n_seeds=2, memory=memory, concept_ln=concept_ln, n_rec=n_rec
    )
    task = binding_task(cfg.n_a, cfg.n_b, cfg.n_rel, cfg.multiplicity, cfg.seeds)
    p, last, _ = jepa.patches(task, "train")
    model = JEPA(
        cfg.model_config(task.vocab_size + 1),
        2,
        seed=0,
        memory_keys=task.memory_keys() if memory else None,
    )
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # away from the initial weights, where losses are all alike
        for q in model.parameters():
            q.add_(0.3 * torch.randn(q.shape, generator=gen))
    # seed 0's batch: facts of one relation only, so the other relations' tokens are
    # absent from it (a column of count 0, weight -inf) while seed 1 has them all
    rel = p[0, :, 1, 0]
    one_rel = torch.nonzero(rel == rel[0]).flatten()
    idx = torch.stack(
        [
            one_rel[torch.randperm(len(one_rel), generator=gen)[:64]],
            torch.randperm(p.shape[1], generator=gen)[:64],
        ]
    )
    seeds = torch.arange(2)[:, None]
    batch = (p[seeds, idx], last[seeds, idx])
    assert len(set(batch[0][0, :, 1, 0].tolist())) == 1
    assert len(set(batch[0][1, :, 1, 0].tolist())) > 1
    losses, grads = [], []
    for dedupe in (False, True):
        model.zero_grad()
        if dedupe:  # the fast path never runs forward: fail if it fell back
            model.forward = lambda *a: pytest.fail("dedupe fell back to the plain loss")
        loss = model.infonce(*batch, dedupe=dedupe)
        loss.sum().backward()
        losses.append(loss.detach())
        grads.append([q.grad.clone() for q in model.parameters() if q.grad is not None])
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-5)
    for plain, fast in zip(*grads, strict=True):
        assert bool(torch.isfinite(fast).all())
        scale = plain.abs().max().item()
        torch.testing.assert_close(fast, plain, rtol=0, atol=1e-5 * max(scale, 1.0))


def test_deduplicated_infonce_falls_back_to_the_plain_loss_where_it_cannot_apply():
    """Where a patch position is single-token in some examples only, or the gold patch
    is single-token, or (with the memory layer, which averages every real token) a
    single-token patch has a real token after its first, dedupe=True is the plain
    loss, bit for bit."""
    from revlib.experiments import jepa
    from revlib.models.jepa import JEPA, JEPAConfig

    task = binding_task(50, 50, 1, 10, [0])
    p, last, _ = jepa.patches(task, "train")
    model = JEPA(JEPAConfig(vocab_size=task.vocab_size + 1), 1)
    mixed = last.clone()
    mixed[0, 0, 1] = 1  # one relation patch read at its pad
    gold_single = last.clone()
    gold_single[..., 3] = 0
    for lst in (mixed, gold_single):
        assert torch.equal(
            model.infonce(p, lst, dedupe=True), model.infonce(p, lst, dedupe=False)
        )
    memory = JEPA(
        JEPAConfig(vocab_size=task.vocab_size + 1, memory=True, concept_ln="layernorm"),
        1,
        memory_keys=task.memory_keys(),
    )
    unpadded = p.clone()
    unpadded[..., 1, 1] = unpadded[..., 0, 0]  # relation patches with a second token
    assert torch.equal(
        memory.infonce(unpadded, last, dedupe=True),
        memory.infonce(unpadded, last, dedupe=False),
    )


def test_a_deduplicated_run_trains_as_the_plain_one():
    """A short training run with dedupe ends near the plain run (the default stays
    off: the stored runs were made without it); a bad value is a ValueError."""
    from revlib.experiments import jepa

    cfg = jepa.Config(n_a=160, n_b=40, n_seeds=2, steps=30, eval_points=2, n_eval=40)
    assert cfg.dedupe is False
    runs = [
        jepa.run(jepa.Config(**{**cfg.__dict__, "dedupe": d})) for d in (False, True)
    ]
    start = jepa.run(jepa.Config(**{**cfg.__dict__, "no_training": True})).model
    weights = [
        torch.cat([q.detach().flatten() for q in m.parameters()])
        for m in (runs[0].model, runs[1].model, start)
    ]
    moved = (weights[0] - weights[2]).norm()
    # AdamW turns round-off in near-zero gradients into whole steps, so the two runs
    # part slowly (2% of how far they moved after 30 steps, measured); a wrong loss
    # would send them apart at once
    assert (weights[1] - weights[0]).norm() < 0.1 * moved and moved > 0
    with pytest.raises(ValueError, match="dedupe"):
        jepa.Config(dedupe=1)
