import math

import numpy as np
import pytest
import torch

from revlib.data import bilinear as bilinear_data
from revlib.experiments import bilinear
from revlib.models.bilinear import Bilinear
from revlib.theory import bilinear as theory


def test_analytic_gradient_matches_autograd():
    task = bilinear_data.bilinear_task(
        m=12, n=4, d=20, n_reverse_heldout=1, seeds=[0, 1]
    )
    theta0 = 0.3 * torch.randn(2, 12, 12, generator=torch.Generator().manual_seed(0))
    model = Bilinear(2, 12, theta0)
    model.loss(task.coords, task.train_in, task.train_out).sum().backward()
    analytic = theory.gradient(
        model.theta.detach(), task.coords, task.train_in, task.train_out
    )
    torch.testing.assert_close(model.theta.grad, analytic, rtol=1e-5, atol=1e-6)


def test_training_in_span_coordinates_equals_training_in_full_dimension():
    m, d, steps, lr = 10, 40, 30, 1.0
    vocab = bilinear_data.embeddings(m, d, seed=3).double()
    coords = bilinear_data.span_coordinates(vocab)
    # the coordinates preserve every inner product
    torch.testing.assert_close(coords @ coords.T, vocab @ vocab.T)
    inp, out = torch.tensor([[0, 1, 2, 5, 6]]), torch.tensor([[5, 6, 7, 0, 1]])
    theta_full = 0.1 * torch.randn(
        d, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    q, _ = torch.linalg.qr(vocab.T)
    # choose the sign convention of the coordinates: vocab = coords @ basis^T
    basis = torch.linalg.lstsq(coords, vocab).solution.T
    theta_small = basis.T @ theta_full @ basis
    for _ in range(steps):
        theta_full = (
            theta_full
            - lr * theory.gradient(theta_full[None], vocab[None], inp, out)[0]
        )
        theta_small = (
            theta_small
            - lr * theory.gradient(theta_small[None], coords[None], inp, out)[0]
        )
    torch.testing.assert_close(
        vocab @ theta_full @ vocab.T, coords @ theta_small @ coords.T
    )
    assert q.shape == (d, m)


def test_task_split_invariants():
    task = bilinear_data.bilinear_task(
        m=30, n=10, d=8, n_reverse_heldout=3, seeds=[4, 5, 6]
    )
    for s in range(3):
        tokens = torch.cat([task.x[s], task.y[s]])
        assert len(set(tokens.tolist())) == 20  # 2n distinct tokens
        train = set(zip(task.train_in[s].tolist(), task.train_out[s].tolist()))
        assert len(train) == task.n_train == 2 * 10 - 3
        held = set(zip(task.heldout_in[s].tolist(), task.heldout_out[s].tolist()))
        assert not held & train
        assert held == {(task.y[s, i].item(), task.x[s, i].item()) for i in range(3)}
        forward = {(task.x[s, i].item(), task.y[s, i].item()) for i in range(10)}
        assert forward <= train
    assert task.coords.shape == (3, 30, 8)


def test_seed_data_does_not_depend_on_batch_companions():
    a = bilinear_data.bilinear_task(m=20, n=5, d=16, n_reverse_heldout=1, seeds=[7])
    b = bilinear_data.bilinear_task(m=20, n=5, d=16, n_reverse_heldout=1, seeds=[6, 7])
    torch.testing.assert_close(a.coords[0], b.coords[1])
    assert torch.equal(a.x[0], b.x[1])


def test_orthogonal_limit_solves_its_equation_and_matches_large_d():
    t = np.array([0.0, 1.0, 10.0, 300.0])
    loss = theory.orthogonal_limit_train_loss(t, m=64, n_train=31)
    assert loss[0] == pytest.approx(math.log(64))
    s = np.log((64 - 1) / np.expm1(loss))
    np.testing.assert_allclose(
        np.exp(s) + 63 * s - 1, 64 * t / 31, rtol=1e-9, atol=1e-9
    )
    run = bilinear.run(bilinear.Config(d=4096, n_seeds=2, steps=200, eval_points=10))
    measured = run.train_loss.mean(axis=1)
    np.testing.assert_allclose(measured, run.predicted_train_loss(), rtol=0.05)


def test_smallest_epsilon_by_hand():
    train_loss = np.array([[4.0], [2.0], [1.0]])
    reverse = np.array([[4.0], [4.0 * 0.5**0.1], [4.0 * 0.25**0.05]])
    # t=1: log(0.5^0.1)/log(0.5) = 0.1; t=2: log(0.25^0.05)/log(0.25) = 0.05
    np.testing.assert_allclose(theory.smallest_epsilon(train_loss, reverse), [0.1])
    assert (
        theory.smallest_epsilon(train_loss, np.array([[4.0], [5.0], [6.0]]))[0] == 0.0
    )


def test_initial_probability_range_of_zero_init_is_uniform():
    task = bilinear_data.bilinear_task(m=16, n=4, d=32, n_reverse_heldout=1, seeds=[0])
    rng = theory.initial_probability_range(torch.zeros(1, 16, 16), task.coords)
    torch.testing.assert_close(rng, torch.ones(1, 2))


def test_reversal_curse_signature_small_run():
    run = bilinear.run(bilinear.Config(m=32, n=8, d=512, n_seeds=3, steps=400))
    log_m = math.log(32)
    assert np.all(run.train_loss[-1] < 0.1 * log_m)
    assert np.all(np.abs(run.reverse_loss[-1] - log_m) < 0.1 * log_m)
    # a model that did learn the reverse fact would fail this: the test can fail
    assert np.all(run.forward_logits[:, 0, 0] > 3) and np.all(
        np.abs(run.reverse_logits[:, 0, 0]) < 1
    )


def test_controls_give_the_answer_or_remove_the_training():
    """reverse_in_training: the held-out reverse fact is learnt (the curse's tests must
    fail); no_training: Theta keeps its start, so both losses stay at log m exactly."""
    kw = dict(m=32, n=8, d=512, n_seeds=2, steps=400)
    log_m = math.log(32)
    given = bilinear.run(bilinear.Config(reverse_in_training=True, **kw))
    assert given.task.n_train == 2 * 8
    assert np.all(given.reverse_loss[-1] < 0.1 * log_m)
    assert np.all(given.reverse_logits[:, 0, 0] > 3)
    frozen = bilinear.run(bilinear.Config(no_training=True, **kw))
    np.testing.assert_allclose(frozen.train_loss, log_m, rtol=1e-5)
    np.testing.assert_allclose(frozen.reverse_loss, log_m, rtol=1e-5)
    assert np.all(frozen.forward_logits == 0.0)
    sgd = bilinear.run(
        bilinear.Config(no_training=True, optimizer="sgd", batch_size=4, **kw)
    )
    np.testing.assert_allclose(sgd.train_loss, log_m, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"n": 40, "m": 64}, "n"),
        ({"m": 2}, "m"),
        ({"d": 0}, "d"),
        ({"n_reverse_heldout": 0}, "n_reverse_heldout"),
        ({"optimizer": "adam"}, "optimizer"),
        ({"init": "random"}, "init"),
        ({"lr": -1.0}, "lr"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"optimizer": "sgd"}, "batch_size"),
        ({"reverse_in_training": 1}, "reverse_in_training"),
        ({"no_training": "yes"}, "no_training"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        bilinear.Config(**kwargs)
