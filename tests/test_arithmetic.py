"""Unit tests of the arithmetic chapter: the generator's invariants, determinism, config
errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from revlib.data.arithmetic import arithmetic_task
from revlib.experiments import arithmetic


def _task(seeds=(0, 1)):
    return arithmetic_task(7, 3, 5, 4, 0.5, list(seeds))


def test_every_trained_fact_is_true():
    task = _task()
    P, val = task.modulus, task.values
    for s in range(2):
        small = set(task.small[s].tolist())
        for h, r, t in task.train[s].tolist():
            if r == task.eq_token:  # attribute fact: core entity -> value
                assert P <= h < P + task.n_core and t == val[s, h]
            else:  # e1 + e2 = e3 (inputs in any order)
                assert (val[s, h] + val[s, r]) % P == val[s, t]
                assert val[s, h].item() in small or val[s, r].item() in small


def test_probe_values_follow_the_chain_and_are_never_trained():
    task = _task()
    P, K = task.modulus, task.chain_len
    for s in range(2):
        trained_heads = {h for h, r, _ in task.train[s].tolist() if r == task.eq_token}
        assert not trained_heads & set(task.probes[s, :, 0].tolist())
        assert torch.equal(task.probes[s, :, 2], task.values[s, task.probes[s, :, 0]])
    assert torch.equal(task.depth[0], torch.arange(1, K + 1).repeat(5))
    # "needs a reverse step" is monotone along each chain
    rev = task.reverse.view(2, 5, K).int()
    assert bool((rev[..., 1:] >= rev[..., :-1]).all())


def test_reversed_steps_make_the_variable_an_addend():
    # hand check on chain 0: the fact linking x_0 and x_1 is (x_0, c, x_1) forward or
    # (x_1, c, x_0) reversed, up to the order of the inputs
    task = arithmetic_task(11, 2, 1, 1, 0.0, [3])
    x1 = task.probes[0, 0, 0].item()
    (fact,) = [f for f in task.train[0].tolist() if x1 in f]
    assert (fact[2] != x1) == bool(task.reverse[0, 0])


def test_core_fraction_and_seed_independence():
    full, none = (
        arithmetic_task(7, 3, 5, 4, 1.0, [0]),
        arithmetic_task(7, 3, 5, 4, 0.0, [0]),
    )
    n_attr, n_chain = 7 * 3, 5 * 4
    assert none.train.shape[1] == n_attr + n_chain
    assert full.train.shape[1] == n_attr + n_chain + 7 * 3 * 2 * 3
    both, alone = _task((4, 5)), _task((5,))
    assert torch.equal(both.train[1], alone.train[0]) and torch.equal(
        both.probes[1], alone.probes[0]
    )


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="model"):
        arithmetic.Config(model="lstm")
    with pytest.raises(ValueError, match="core_frac"):
        arithmetic.Config(core_frac=1.5)
    with pytest.raises(ValueError, match="chain_len"):
        arithmetic.Config(chain_len=0)
    with pytest.raises(ValueError, match="concept_ln"):
        arithmetic.Config(concept_ln="batchnorm")
    with pytest.raises(ValueError, match="n_rec"):
        arithmetic.Config(model="jepa_memory", n_rec=2)


def test_memory_model_is_a_lookup_of_its_own_token():
    """JEPA with memory: one frozen key per token, each token's top-1 key is its own (so
    every token gets its own trainable value vector; at d = 64, as in the chapter),
    LayerNorm on both sides by default."""
    cfg = arithmetic.Config(
        model="jepa_memory",
        modulus=5,
        per_value=2,
        n_chains=4,
        chain_len=2,
        steps=2,
        batch_size=8,
        d_model=64,
        eval_points=2,
    )
    assert cfg.jepa_config(10).concept_ln == "layernorm"
    assert arithmetic.Config(model="jepa").jepa_config(10).concept_ln == "rms"
    r = arithmetic.run(cfg)
    model, V = r.model, r.task.vocab_size
    assert model.keys.shape[1] == V and not model.wte.requires_grad
    toks = torch.arange(V).expand(cfg.n_seeds, -1)
    top = (model._mean_embedding(toks[..., None]) @ model.keys.transpose(1, 2)).argmax(
        -1
    )
    assert torch.equal(top, toks)


@pytest.mark.parametrize("model", arithmetic.MODELS)
def test_run_is_deterministic_and_reports_groups(model):
    cfg = arithmetic.Config(
        model=model,
        modulus=5,
        per_value=2,
        n_chains=4,
        chain_len=2,
        steps=3,
        batch_size=8,
        d_model=16,
        eval_points=2,
    )
    a, b = arithmetic.run(cfg), arithmetic.run(cfg)
    for k in ("train_acc", "probe_acc", "forward_acc", "reverse_acc"):
        assert a.history[k].shape == (2, 2)
        np.testing.assert_array_equal(a.history[k], b.history[k])
    assert a.by_depth(True).shape == (2, 2)
    np.testing.assert_allclose(a.final("probe_acc"), a.probe_correct.mean(-1))


def test_probes_in_training_adds_the_probed_facts(arithmetic_n_train):
    import revlib.experiments.arithmetic as ar

    seen = arithmetic_n_train
    base = dict(
        modulus=5,
        per_value=2,
        n_chains=4,
        chain_len=2,
        steps=1,
        batch_size=8,
        d_model=16,
        eval_points=2,
    )
    r = ar.run(ar.Config(**base))
    n_train, n_probes = r.task.train.shape[1], r.task.probes.shape[1]
    assert seen["n"] == n_train
    ar.run(ar.Config(probes_in_training=True, **base))
    assert seen["n"] == n_train + n_probes
    with pytest.raises(ValueError, match="probes_in_training"):
        ar.Config(probes_in_training=1)
