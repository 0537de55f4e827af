import math

import numpy as np

import pytest
import torch

from revlib.data import chains
from revlib.experiments import chain_of_thought as cot
from revlib.models.reparam import Reparam, nll
from revlib.theory import one_layer as theory


def test_chain_task_split_invariants():
    task = chains.chain_task(vocab_size=50, n=10, n_heldout=4, seeds=[0, 1])
    assert task.train.shape == (2, 10 + 10 + 6, 3) and task.heldout.shape == (2, 4, 3)
    for s in range(2):
        ents = torch.cat([task.a[s], task.b[s], task.c[s]]).tolist()
        assert len(set(ents)) == 30 and min(ents) >= 2
        train = {tuple(x) for x in task.train[s].tolist()}
        held = {tuple(x) for x in task.heldout[s].tolist()}
        assert not train & held
        assert held == {(task.a[s, i].item(), 1, task.c[s, i].item()) for i in range(4)}
        for i in range(10):  # every triple's one-hop facts are trained
            assert (task.a[s, i].item(), 0, task.b[s, i].item()) in train
            assert (task.b[s, i].item(), 0, task.c[s, i].item()) in train
    alone = chains.chain_task(vocab_size=50, n=10, n_heldout=4, seeds=[1])
    assert torch.equal(alone.train[0], task.train[1])


def test_related_task_layout():
    task = chains.related_task(alphabet=20, n_train=6, n_heldout=3, seeds=[5])
    assert task.vocab_size == 25 and task.train.shape == (1, 9 + 9 + 6, 5)
    idx = task.a[0]
    assert idx.min() >= 5 and idx.max() < 25 and len(set(idx.tolist())) == 9
    assert task.train[0, 0].tolist() == [2, idx[0].item(), 0, 3, idx[0].item()]
    assert task.heldout[0, 0].tolist() == [2, idx[0].item(), 1, 4, idx[0].item()]
    train = {tuple(x) for x in task.train[0].tolist()}
    assert not train & {tuple(x) for x in task.heldout[0].tolist()}


def test_one_gd_step_on_chains_lowers_heldout_Y_AC_by_the_formula():
    """grad of Y[A_i, C_i] for a held-out triple = p(C_i | A_i ->) / N > 0
    (hand-derived)."""
    task = chains.chain_task(vocab_size=20, n=5, n_heldout=2, seeds=[3])
    model = Reparam(1, 20)
    seq = task.train
    nll(model(seq[..., :1], seq[..., 1]), seq[..., 2]).mean().backward()
    a, c = task.a[0, 0], task.c[0, 0]
    assert model.Y.grad[0, a, c].item() == pytest.approx(1 / 20 / task.n_train)
    analytic = theory.gradient_Y(
        model.Y.detach(), seq[..., 0], seq[..., 1], seq[..., 2]
    )
    torch.testing.assert_close(model.Y.grad, analytic)


def test_small_run_shows_intransitivity_and_two_step_success():
    cfg = cot.Config(
        vocab_size=50,
        n=12,
        n_heldout=4,
        n_seeds=1,
        steps=150,
        epochs=1,
        related_epochs=0,
        batch_size=8,
        eval_points=4,
    )
    r = cot.run(cfg)
    assert r.reparam.history["p_AB"][-1, 0] > 0.9
    assert r.reparam_Y_AC_heldout.max() <= 0.0
    assert r.reparam.two_step_acc[0] == 1.0 and r.reparam.direct_acc[0] == 0.0
    assert r.reparam.history["nll_heldout"][-1, 0] > math.log(50)
    assert r.reparam.blocks["C|A"].shape == (1, 12, 12) and r.related is None


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"n_heldout": 0}, "n_heldout"),
        ({"n": 200}, "n"),
        ({"d_model": 30, "n_head": 4}, "d_model"),
        ({"batch_size": 10_000}, "batch_size"),
        ({"related_heldout": 150}, "related_heldout"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        cot.Config(**kwargs)


def test_heldout_in_training_appends_the_heldout_sentences():
    base = chains.chain_task(vocab_size=50, n=10, n_heldout=4, seeds=[2])
    given = chains.chain_task(
        vocab_size=50, n=10, n_heldout=4, seeds=[2], heldout_in_training=True
    )
    assert torch.equal(given.heldout, base.heldout)
    assert torch.equal(given.train, torch.cat([base.train, base.heldout], dim=1))
    rel = chains.related_task(
        alphabet=20, n_train=6, n_heldout=3, seeds=[5], heldout_in_training=True
    )
    assert rel.train.shape == (1, 9 + 9 + 6 + 3, 5)
    assert {tuple(x) for x in rel.heldout[0].tolist()} <= {
        tuple(x) for x in rel.train[0].tolist()
    }


def test_controls_of_the_chain_experiment():
    tiny = dict(
        vocab_size=50,
        n=12,
        n_heldout=4,
        n_seeds=1,
        steps=150,
        epochs=2,
        related_epochs=0,
        batch_size=8,
        eval_points=4,
    )
    frozen = cot.run(cot.Config(no_training=True, **tiny))
    # untrained: Y = Z = 0, every answer at 1/|V|, and nothing is answered right
    assert frozen.reparam.history["p_AB"][-1, 0] == pytest.approx(1 / 50)
    assert frozen.reparam.two_step_acc[0] == 0.0
    assert np.allclose(
        frozen.transformer.history["nll_train"][0],
        frozen.transformer.history["nll_train"][-1],
    )
    given = cot.run(cot.Config(heldout_in_training=True, **tiny))
    # the answer given: the held-out two-hop fact is learnt, so Y[A_i, C_i] rises
    assert (
        given.reparam_Y_AC_heldout[-1, 0] > 0.5 and given.reparam.direct_acc[0] == 1.0
    )
    with pytest.raises(ValueError, match="no_training"):
        cot.Config(no_training=1)
