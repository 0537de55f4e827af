import math

import numpy as np
import pytest
import torch

from revlib.data import reversal
from revlib.experiments import one_layer
from revlib.models.reparam import (
    OneLayer,
    Reparam,
    embedding_matrix,
    nll,
    reparam_logits,
)
from revlib.theory import one_layer as theory


def test_reparam_logits_by_hand():
    Y = torch.zeros(1, 4, 4)
    Y[0, 2, 3], Y[0, 1, 3], Y[0, 3, 0] = 2.0, 1.0, 5.0
    Z = torch.zeros(1, 4, 4)
    Z[0, 1, 3] = math.log(3.0)  # query 1 attends 3 : 1 to tokens 3 and 2
    ctx, query = torch.tensor([[[2, 3]]]), torch.tensor([[1]])
    out = reparam_logits(Y, Z, ctx, query)[0, 0]
    # logit(k) = 1/4 Y[2,k] + 3/4 Y[3,k] + Y[1,k]
    torch.testing.assert_close(out, torch.tensor([3.75, 0.0, 0.0, 1.5]))


@pytest.mark.parametrize("embedding, d", [("orthonormal", 12), ("gaussian", 5)])
def test_transformer_logits_equal_reparam_at_effective_weights(embedding, d):
    model = OneLayer(2, 10, d, embedding, init_std=0.5, value_init="random", seed=3)
    ctx = torch.randint(0, 10, (2, 6, 2), generator=torch.Generator().manual_seed(0))
    query = torch.randint(0, 10, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(
            model(ctx, query),
            reparam_logits(model.effective_Y(), model.effective_Z(), ctx, query),
            rtol=1e-4,
            atol=1e-5,
        )


def test_orthonormal_embeddings_and_dimension_check():
    U = embedding_matrix("orthonormal", 6, 9, seed=0)
    torch.testing.assert_close(U @ U.T, torch.eye(6), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="d must be"):
        embedding_matrix("orthonormal", 6, 5, seed=0)


def test_analytic_gradient_matches_autograd():
    task = reversal.reversal_task(M=14, n=5, n_heldout=2, seeds=[0, 1])
    model = Reparam(2, 14)
    with torch.no_grad():
        model.Y.normal_(generator=torch.Generator().manual_seed(0))
    ctx, q, t = task.train_ctx, task.train_query, task.train_target
    nll(model(ctx, q), t).mean(dim=1).sum().backward()
    analytic = theory.gradient_Y(model.Y.detach(), ctx[..., 0], q, t)
    torch.testing.assert_close(model.Y.grad, analytic, rtol=1e-5, atol=1e-6)
    assert torch.count_nonzero(model.Z.grad) == 0  # one context token: Z does not enter


def test_gd_on_value_matrix_is_gd_on_Y_for_orthonormal_embeddings():
    """Y = U W_V^T U^T is linear in W_V and U U^T = I, so the two trajectories
    coincide."""
    task = reversal.reversal_task(M=10, n=3, n_heldout=1, seeds=[2])
    ctx, q, t = task.train_ctx, task.train_query, task.train_target
    tf, rp = OneLayer(1, 10, 13, "orthonormal", seed=5), Reparam(1, 10)
    for model in (tf, rp):
        opt = torch.optim.SGD(model.parameters(), lr=3.0)
        for _ in range(25):
            opt.zero_grad()
            nll(model(ctx, q), t).mean().backward()
            opt.step()
    torch.testing.assert_close(
        tf.effective_Y().detach(), rp.Y.detach(), rtol=1e-4, atol=1e-4
    )


def test_task_split_invariants():
    task = reversal.reversal_task(M=40, n=8, n_heldout=3, seeds=[4, 5])
    for s in range(2):
        ents = torch.cat([task.a[s], task.b[s]]).tolist()
        assert len(set(ents)) == 16 and min(ents) >= 2
        train = set(
            zip(
                task.train_ctx[s, :, 0].tolist(),
                task.train_query[s].tolist(),
                task.train_target[s].tolist(),
            )
        )
        held = set(
            zip(
                task.heldout_ctx[s, :, 0].tolist(),
                task.heldout_query[s].tolist(),
                task.heldout_target[s].tolist(),
            )
        )
        assert len(train) == task.n_train == 8 + 5 and not train & held
        assert held == {(task.b[s, i].item(), 1, task.a[s, i].item()) for i in range(3)}
        # the held-out B_i never appear as an input: their rows of Y get no gradient
        assert not set(task.b[s, :3].tolist()) & set(task.train_ctx[s, :, 0].tolist())
    alone = reversal.reversal_task(M=40, n=8, n_heldout=3, seeds=[5])
    assert torch.equal(alone.a[0], task.a[1])


def test_flow_matches_small_step_gd_and_heldout_row_stays_zero():
    cfg = one_layer.Config(
        M=30,
        n=8,
        n_heldout=3,
        n_seeds=1,
        lr=2.0,
        steps=200,
        d=16,
        tf_steps=1,
        eval_points=5,
    )
    r = one_layer.run(cfg)
    pred = r.predicted(r.history.time)
    np.testing.assert_allclose(
        r.history["Y_AB"][:, 0], pred["Y_AB"], rtol=0.01, atol=1e-3
    )
    np.testing.assert_allclose(
        r.history["forward_p"][:, 0], pred["p"], rtol=0.01, atol=1e-3
    )
    assert np.all(r.history["Y_BA_heldout"] == 0.0)
    assert np.all(r.history["heldout_p_max"][1:] < 1 / 30)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"n_heldout": 0}, "n_heldout"),
        ({"M": 3}, "M"),
        ({"embedding": "sparse"}, "embedding"),
        ({"embedding": "orthonormal", "d": 50}, "d"),
        ({"tf_lr": 0.0}, "lr"),
        ({"no_training": 0}, "no_training"),
        ({"reverse_in_training": None}, "reverse_in_training"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        one_layer.Config(**kwargs)


def test_typed_task_and_t3_run_keep_heldout_weights_at_zero():
    from revlib.data.reversal import A_TYPE, B_TYPE, typed_reversal_task

    task = typed_reversal_task(M=30, n=6, n_heldout=2, seeds=[3, 4])
    assert task.train_ctx.shape == (2, 10, 2) and task.heldout_ctx.shape == (2, 2, 2)
    assert torch.all(task.train_ctx[:, :6, 1] == A_TYPE) and torch.all(
        task.train_ctx[:, 6:, 1] == B_TYPE
    )
    for s in range(2):  # held-out unique B tokens never occur in a training context
        assert not set(task.b[s, :2].tolist()) & set(
            task.train_ctx[s].flatten().tolist()
        )
    res = one_layer.run_typed(
        one_layer.Config(
            M=30, n=6, n_heldout=2, n_seeds=2, steps=60, eval_points=5, tf_steps=1
        )
    )
    h = res.history
    assert h["Y_BA_heldout"].max() == 0.0 and h["Z_BA_heldout"].max() == 0.0
    assert np.all(h["attention_unique"][-1] > 0.6)  # the attention moved off 1/2


def test_controls_give_the_answer_or_remove_the_training():
    """reverse_in_training: the held-out rows are inputs now, so they move and the
    held-out sentences are learnt; no_training: every model keeps its start (uniform
    predictions)."""
    kw = dict(
        M=30,
        n=8,
        n_heldout=3,
        n_seeds=2,
        lr=20.0,
        steps=100,
        d=16,
        tf_steps=100,
        tf_lr=8.0,
        eval_points=5,
    )
    given = one_layer.run(one_layer.Config(reverse_in_training=True, **kw))
    assert given.task.n_train == 8 + 8
    assert np.all(given.history["Y_BA_heldout"][-1] > 1.0)
    assert np.all(given.history["heldout_p"][-1] > 0.5)
    typed = one_layer.run_typed(
        one_layer.Config(reverse_in_training=True, **kw)
    ).history
    assert np.all(typed["heldout_p"][-1] > 0.5) and np.all(
        typed["Z_BA_heldout"][-1] > 0
    )
    frozen = one_layer.run(one_layer.Config(no_training=True, **kw))
    for h in (frozen.history, frozen.tf_history):
        np.testing.assert_allclose(h["forward_p"], 1 / 30, rtol=1e-5)
        np.testing.assert_allclose(h["heldout_p"], 1 / 30, rtol=1e-5)
    assert np.all(frozen.Y == 0.0)
