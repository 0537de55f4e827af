import numpy as np
import pytest
import torch

from revlib.train import TrainConfig, train


def _quadratic(n_seeds, targets):
    """S independent least-squares problems: loss_s = mean_i (w_s - t_{s,i})^2."""
    w = torch.nn.Parameter(torch.zeros(n_seeds))

    def loss(idx):
        t = targets if idx is None else targets.gather(1, idx)
        return ((w[:, None] - t) ** 2).mean(dim=1)

    return w, loss


def test_gd_matches_closed_form():
    # w_{k+1} = w_k - lr * 2 (w_k - mean t)  =>  w_k = mean t * (1 - (1 - 2 lr)^k)
    targets = torch.tensor([[1.0, 3.0], [-2.0, 0.0]])
    w, loss = _quadratic(2, targets)
    cfg = TrainConfig(steps=10, lr=0.1, eval_points=11)
    hist = train([w], loss, cfg, evaluate=lambda: {"w": w.clone()}, n_seeds=2)
    mean = targets.mean(dim=1).numpy()
    expected = mean[None, :] * (1 - 0.8 ** np.arange(11))[:, None]
    np.testing.assert_allclose(hist["w"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hist.time, 0.1 * np.arange(11))


def test_seeds_in_a_batch_do_not_interact():
    targets = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(steps=20, lr=0.05, optimizer="adam", batch_size=2, eval_points=5)
    w, loss = _quadratic(3, targets)
    together = train(
        [w],
        loss,
        cfg,
        lambda: {"w": w.clone()},
        n_train=8,
        n_seeds=3,
        batch_seeds=[10, 11, 12],
    )
    w1, loss1 = _quadratic(1, targets[1:2])
    alone = train(
        [w1],
        loss1,
        cfg,
        lambda: {"w": w1.clone()},
        n_train=8,
        n_seeds=1,
        batch_seeds=[11],
    )
    np.testing.assert_allclose(together["w"][:, 1], alone["w"][:, 0], rtol=1e-6)


def test_minibatches_cover_each_epoch_without_replacement():
    seen = []
    w = torch.nn.Parameter(torch.zeros(1))

    def loss(idx):
        seen.append(idx[0].tolist())
        return (w**2).sum()[None]

    train(
        [w],
        loss,
        TrainConfig(steps=3, lr=0.1, optimizer="sgd", batch_size=2),
        n_train=6,
        n_seeds=1,
    )
    assert sorted(sum(seen, [])) == list(range(6))


def test_evaluate_runs_once_per_evaluation_point():
    w = torch.nn.Parameter(torch.zeros(1))
    calls = []

    def evaluate():
        calls.append(w.item())
        return {"b": w.clone(), "a": 2 * w.clone()}

    cfg = TrainConfig(steps=4, lr=0.1, eval_points=3)
    hist = train([w], lambda idx: (w - 1) ** 2, cfg, evaluate, n_seeds=1)
    assert len(calls) == len(cfg.eval_steps()) == 3
    assert list(hist.values) == ["b", "a"]  # the order evaluate returns them in
    np.testing.assert_allclose(hist["a"], 2 * hist["b"])


def test_evaluate_must_return_the_same_names_each_time():
    w = torch.nn.Parameter(torch.zeros(1))
    names = iter([{"a": w.clone()}, {"b": w.clone()}])
    with pytest.raises(ValueError, match="same names"):
        train(
            [w],
            lambda idx: w**2,
            TrainConfig(steps=2, lr=0.1, eval_points=2),
            lambda: next(names),
            n_seeds=1,
        )


def test_log_spaced_eval_steps_include_both_ends():
    steps = TrainConfig(
        steps=1000, lr=1.0, eval_points=20, eval_spacing="log"
    ).eval_steps()
    assert steps[0] == 0 and steps[-1] == 1000 and np.all(np.diff(steps) > 0)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"steps": 0, "lr": 1.0}, "steps"),
        ({"steps": 1, "lr": 0.0}, "lr"),
        ({"steps": 1, "lr": 1.0, "optimizer": "lbfgs"}, "optimizer"),
        ({"steps": 1, "lr": 1.0, "optimizer": "gd", "batch_size": 4}, "batch_size"),
        ({"steps": 1, "lr": 1.0, "optimizer": "sgd"}, "batch_size"),
        ({"steps": 1, "lr": 1.0, "momentum": 1.0}, "momentum"),
        ({"steps": 1, "lr": 1.0, "eval_points": 1}, "eval_points"),
        ({"steps": 1, "lr": 1.0, "eval_spacing": "cubic"}, "eval_spacing"),
        ({"steps": 10, "lr": 1.0, "warmup_steps": 11}, "warmup_steps"),
        ({"steps": 10, "lr": 1.0, "warmup_steps": -1}, "warmup_steps"),
    ],
)
def test_train_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**kwargs)


def test_warmup_rises_linearly_then_stays_constant():
    cfg = TrainConfig(steps=10, lr=0.4, warmup_steps=4)
    assert [cfg.lr_at(s) for s in range(6)] == pytest.approx(
        [0.1, 0.2, 0.3, 0.4, 0.4, 0.4]
    )
    assert TrainConfig(steps=10, lr=0.4).lr_at(0) == 0.4


def test_warmup_sets_each_steps_learning_rate():
    # plain gradient descent on w -> w - lr_t: the sum of the schedule's rates
    w = torch.nn.Parameter(torch.zeros(1))
    cfg = TrainConfig(steps=6, lr=0.4, warmup_steps=4)
    train([w], lambda idx: w.sum().reshape(1), cfg)
    assert w.item() == pytest.approx(-sum(cfg.lr_at(s) for s in range(6)))


def test_loss_of_wrong_shape_is_reported():
    w = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match="one loss per seed"):
        train([w], lambda idx: w.sum(), TrainConfig(steps=1, lr=0.1), n_seeds=2)


# ------------------------------------------------------------------ checkpoints


def _mlp_run(path, kill_at=None, steps=53, every=10, warmup=0):
    """A small two-seed MLP on random data (Adam, minibatches, dropout from torch's
    global stream); ``kill_at`` raises inside the loss at that step, as a killed process
    stops."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(2, 40, 5, generator=gen), torch.randn(2, 40, generator=gen)
    w1 = torch.nn.Parameter(torch.randn(2, 5, 16, generator=gen) * 0.3)
    w2 = torch.nn.Parameter(torch.randn(2, 16, generator=gen) * 0.3)
    calls = {"n": 0}

    def loss(idx):
        if kill_at is not None and calls["n"] == kill_at:
            raise KeyboardInterrupt("killed")
        calls["n"] += 1
        xb = torch.stack([x[s, idx[s]] for s in range(2)])
        h = torch.nn.functional.dropout(
            torch.relu(torch.einsum("sbi,sih->sbh", xb, w1)), 0.1
        )
        out = torch.einsum("sbh,sh->sb", h, w2)
        yb = torch.stack([y[s, idx[s]] for s in range(2)])
        return ((out - yb) ** 2).mean(dim=1)

    cfg = TrainConfig(
        steps=steps,
        lr=0.01,
        optimizer="adam",
        batch_size=8,
        eval_points=7,
        warmup_steps=warmup,
    )
    hist = train(
        [w1, w2],
        loss,
        cfg,
        lambda: {"w2": w2.sum(dim=1)},
        n_train=40,
        n_seeds=2,
        batch_seeds=[3, 4],
        checkpoint=path,
        checkpoint_every=every,
    )
    return hist, (w1.detach().clone(), w2.detach().clone())


@pytest.mark.parametrize("kill_at", [1, 17, 30, 52])
def test_a_killed_run_resumes_bit_identically(tmp_path, kill_at):
    ref, (r1, r2) = _mlp_run(None)
    path = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        _mlp_run(path, kill_at=kill_at)
    assert path.exists() == (kill_at > 10)
    assert [p.name for p in tmp_path.iterdir()] == (["run.pt"] if kill_at > 10 else [])
    hist, (w1, w2) = _mlp_run(path)
    assert torch.equal(w1, r1) and torch.equal(w2, r2)
    assert np.array_equal(hist.steps, ref.steps) and np.array_equal(
        hist["w2"], ref["w2"]
    )
    again, (v1, _) = _mlp_run(path)  # a finished checkpoint: the same result again
    assert torch.equal(v1, r1) and np.array_equal(again["w2"], ref["w2"])


def test_a_run_killed_during_its_warmup_resumes_bit_identically(tmp_path):
    ref, (r1, r2) = _mlp_run(None, warmup=25)
    with pytest.raises(KeyboardInterrupt):
        _mlp_run(tmp_path / "run.pt", kill_at=17, warmup=25)
    _, (w1, w2) = _mlp_run(tmp_path / "run.pt", warmup=25)
    assert torch.equal(w1, r1) and torch.equal(w2, r2)
    _, (n1, _) = _mlp_run(None)  # and the warm-up changed the run
    assert not torch.equal(n1, r1)


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    _mlp_run(path, steps=20)
    with pytest.raises(ValueError, match="another run"):
        _mlp_run(path, steps=30)
    with pytest.raises(ValueError, match="checkpoint_every"):
        _mlp_run(tmp_path / "other.pt", every=0)


@pytest.mark.parametrize("optimizer", ["gd", "adamw"])
def test_no_training_makes_no_step_and_records_the_start(optimizer):
    # the one "no training" control (revlib.config.no_training): weights unchanged, and
    # every evaluation point holds the start's values
    targets = torch.tensor([[1.0, 3.0, 2.0, 0.0], [-2.0, 0.0, 1.0, 5.0]])
    w, loss = _quadratic(2, targets)
    with torch.no_grad():
        w.add_(torch.tensor([0.5, -0.25]))
    start = w.detach().clone()
    batch = 0 if optimizer == "gd" else 2
    cfg = TrainConfig(steps=30, lr=0.1, optimizer=optimizer, batch_size=batch,
                      weight_decay=0.1, eval_points=4, no_training=True)  # fmt: skip
    hist = train([w], loss, cfg, evaluate=lambda: {"w": w.clone()}, n_train=4,
                 n_seeds=2)  # fmt: skip
    assert torch.equal(w.detach(), start)
    np.testing.assert_array_equal(hist["w"], np.tile(start.numpy(), (4, 1)))
    assert list(hist.steps) == list(cfg.eval_steps())
    assert TrainConfig(steps=1, lr=0.1).no_training is False


def test_an_experiment_that_does_not_train_refuses_no_training():
    from revlib.experiments import entanglement

    with pytest.raises(ValueError, match="no_training"):
        entanglement.Config(no_training=True)


def test_clip_per_seed_scales_only_the_seeds_over_the_bound():
    from revlib.train import clip_per_seed

    a = torch.nn.Parameter(torch.zeros(3, 4))
    b = torch.nn.Parameter(torch.zeros(3, 2, 2))
    a.grad = torch.tensor([[3.0, 0, 0, 0], [30.0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4]])
    b.grad = torch.tensor([[[4.0, 0], [0, 0]], [[40.0, 0], [0, 0]], [[0.5, 0], [0, 0]]])
    before = (a.grad.clone(), b.grad.clone())
    norms = clip_per_seed([a, b], max_norm=10.0)
    assert norms.tolist() == pytest.approx([5.0, 50.0, (0.3 + 0.25) ** 0.5])
    # seeds 0 and 2 are within the bound: bit for bit untouched
    for g, g0 in zip((a.grad, b.grad), before):
        assert torch.equal(g[[0, 2]], g0[[0, 2]])
    # seed 1 is scaled to norm 10, keeping its direction
    new = torch.cat([a.grad[1].flatten(), b.grad[1].flatten()]).norm()
    assert new.item() == pytest.approx(10.0)
    assert a.grad[1, 0].item() == pytest.approx(6.0)


def test_max_grad_norm_is_validated_and_keeps_old_checkpoints_loadable():
    from revlib.train import TrainConfig, _fingerprint

    with pytest.raises(ValueError, match="max_grad_norm"):
        TrainConfig(steps=1, lr=0.1, max_grad_norm=-1.0)
    cfg = TrainConfig(steps=1, lr=0.1)
    assert "max_grad_norm" not in _fingerprint(cfg, 0, 1, [0], [])["config"]
    clipped = TrainConfig(steps=1, lr=0.1, max_grad_norm=5.0)
    assert "max_grad_norm=5.0" in _fingerprint(clipped, 0, 1, [0], [])["config"]


def test_the_graphed_clip_is_the_eager_clip_bit_for_bit():
    """The clipping a CUDA graph can capture (no host read of the norms) gives the
    same gradients as clip_per_seed, bit for bit: a seed within the bound is multiplied
    by exactly 1, a seed above it by the same factor."""
    from revlib.train import _clip_per_seed_graphed, clip_per_seed

    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(3, 4, 5, generator=g), torch.randn(3, 7, generator=g)]
    grads[0][1] *= 100.0  # seed 1 far above the bound
    a = [torch.nn.Parameter(torch.zeros_like(x)) for x in grads]
    b = [torch.nn.Parameter(torch.zeros_like(x)) for x in grads]
    for p, q, x in zip(a, b, grads):
        p.grad, q.grad = x.clone(), x.clone()
    clip_per_seed(a, 10.0)
    _clip_per_seed_graphed(b, 10.0)
    for p, q in zip(a, b):
        assert torch.equal(p.grad, q.grad)
    assert torch.equal(a[1].grad[0], grads[1][0])  # seed 0 untouched


def test_cuda_graphs_are_asked_for_on_a_gpu_only(monkeypatch):
    from revlib.train import GRAPHS_ENV, graphs_wanted

    monkeypatch.setenv(GRAPHS_ENV, "1")
    assert not graphs_wanted(torch.device("cpu"))
    assert graphs_wanted(torch.device("cuda"))
    monkeypatch.setenv(GRAPHS_ENV, "0")
    assert not graphs_wanted(torch.device("cuda"))
