import numpy as np
import pytest
import torch

from revlib.data.reversal_sequences import (
    in_context_sequences,
    n_pairs,
    reversal_sequences,
)
from revlib.experiments import multi_layer as ml


def _sentences(t):
    return {tuple(row) for row in t.tolist()}


def test_reversal_split_invariants():
    data = reversal_sequences(vocab=200, word_size=1, seeds=[3, 4])
    assert data.vocab_size == 202 and data.n_pairs == 50
    assert data.train.shape == (2, 85, 3) and data.val.shape == (
        2,
        15,
        3,
    )  # 35 both ways + 15
    for s in range(2):
        a, b = data.a[s, :, 0].tolist(), data.b[s, :, 0].tolist()
        assert len(set(a)) == len(set(b)) == 50 and not set(a) & set(b)
        assert min(a + b) >= 2 and max(a + b) <= 201  # 0 and 1 are the relation tokens
        train, val = _sentences(data.train[s]), _sentences(data.val[s])
        assert len(train) == 85 and len(val) == 15 and not train & val
        for i in range(50):
            fwd, bwd = (a[i], 0, b[i]), (b[i], 1, a[i])
            if data.both[s, i]:
                assert fwd in train and bwd in train
            else:  # exactly one direction trained, the other held out
                held, seen = (fwd, bwd) if data.heldout_forward[s, i] else (bwd, fwd)
                assert held in val and seen in train and held not in train
        assert (
            data.val_pairs[s].tolist()
            == torch.nonzero(~data.both[s]).flatten().tolist()
        )
    assert not torch.any(data.heldout_forward & data.both)


def test_held_out_direction_is_a_fair_coin():
    data = reversal_sequences(vocab=400, word_size=1, seeds=list(range(20)))
    frac = data.heldout_forward[~data.both].float().mean().item()
    assert 0.4 < frac < 0.6, frac  # 600 coin flips


def test_two_token_entities():
    data = reversal_sequences(vocab=200, word_size=2, seeds=[0])
    assert n_pairs(200, 2) == 100 and n_pairs(800, 1) == 200
    assert data.train.shape == (1, 170, 5) and data.seq_len == 5
    for ent in (data.a[0], data.b[0]):
        assert len(_sentences(ent)) == 100  # distinct tuples
    assert set(data.a[0].flatten().tolist()).isdisjoint(data.b[0].flatten().tolist())
    assert torch.all(
        data.train[0, :, 2] <= 1
    )  # the relation token sits between the entities
    mask = data.answer_mask(4)
    assert mask.shape == (1, 4, 4) and mask[0, 0].tolist() == [False, False, True, True]


def test_seed_data_does_not_depend_on_batch_companions():
    a = reversal_sequences(vocab=100, word_size=1, seeds=[5])
    b = reversal_sequences(vocab=100, word_size=1, seeds=[4, 5])
    assert torch.equal(a.train[0], b.train[1]) and torch.equal(a.val[0], b.val[1])
    assert not torch.equal(b.train[0], b.train[1])


def test_in_context_sequences():
    data = in_context_sequences(vocab=200, n_x=50, n_y=10, n_y_train=7, seeds=[0, 1])
    assert data.vocab_size == 203
    assert data.train.shape == (2, 350, 7) and data.val.shape == (2, 150, 7)
    for s in range(2):
        for t in (data.train[s], data.val[s]):
            assert torch.equal(t[:, 0], t[:, 6]) and torch.equal(
                t[:, 2], t[:, 4]
            )  # [A->B<->B<-A]
            assert t[:, [1, 3, 5]].tolist() == [[0, 2, 1]] * len(t)
            assert torch.all(t[:, [0, 2]] >= 3)
        pairs = lambda t: {(x, y) for x, y in t[:, [0, 2]].tolist()}  # noqa: E731
        assert not pairs(data.train[s]) & pairs(data.val[s])
        assert len(pairs(data.train[s]) | pairs(data.val[s])) == 500
        assert len(set(data.train[s, :, 0].tolist())) == 50
    assert data.answer_mask(2)[0, 0].tolist() == [False] * 5 + [True]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"task": "copy"}, "task"),
        ({"word_size": 0}, "word_size"),
        ({"split_ratio": 1.0}, "split_ratio"),
        ({"task": "in_context", "n_y_train": 10}, "n_y_train"),
        ({"positional": "alibi"}, "positional"),
        ({"d_model": 20, "positional": "rotary"}, "rotary"),
        ({"batch_size": 86}, "batch_size"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"lr": 0.0}, "lr"),
    ],
)
def test_config_errors_name_the_field(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ml.Config(**kwargs)


def test_diagonal_and_cosine_statistics_by_hand():
    logits = np.array([[[3.0, 1.0], [0.0, 1.0]]])
    contrast, hit = ml.diagonal_stats(logits)
    assert contrast[0] == pytest.approx(2.0 - 0.5) and hit[0] == 1.0
    contrast, hit = ml.diagonal_stats(np.array([[[0.0, 2.0], [3.0, 1.0]]]))
    assert contrast[0] == pytest.approx(0.5 - 2.5) and hit[0] == 0.0
    cos = np.array([[[1.0, -0.5, 0.1], [-0.5, 1.0, 0.3], [0.1, 0.3, 1.0]]])
    mean, mx = ml.off_diagonal_abs(cos)
    assert mean[0] == pytest.approx(0.3) and mx[0] == pytest.approx(0.5)
    g = ml.gaussian_cosine(1, 3, 4, seed=0)
    assert g.shape == (1, 3, 3) and np.allclose(np.diagonal(g[0]), 1.0)


def test_run_is_deterministic_and_each_seed_is_its_own_model():
    tiny = dict(
        vocab=40, n_layer=1, n_head=2, d_model=8, steps=6, batch_size=8, eval_points=3
    )
    pair = ml.run(ml.Config(seed=2, n_seeds=2, **tiny))
    again = ml.run(ml.Config(seed=2, n_seeds=2, **tiny))
    alone = ml.run(ml.Config(seed=3, n_seeds=1, **tiny))
    np.testing.assert_array_equal(pair.val_nll, again.val_nll)
    np.testing.assert_allclose(alone.val_nll[:, 0], pair.val_nll[:, 1], rtol=1e-5)
    assert pair.train_nll[0] == pytest.approx(
        np.log(42), abs=0.2
    )  # near uniform at the start
    assert pair.heatmaps["relation"]["val_unseen"].shape == (
        2,
        3,
        3,
    )  # 10 pairs, 3 one-way
    assert pair.embedding_cos.shape == (2, 20, 20)
    icl = ml.run(
        ml.Config(
            task="in_context",
            vocab=40,
            n_x=5,
            n_y=4,
            n_y_train=2,
            seed=0,
            n_seeds=1,
            **{k: v for k, v in tiny.items() if k != "vocab"},
        )
    )
    assert icl.val_nll.shape == (3, 1) and icl.heatmaps == {}


def test_short_training_fits_the_training_sentences():
    res = ml.run(
        ml.Config(
            vocab=40,
            n_layer=1,
            d_model=16,
            steps=60,
            batch_size=16,
            lr=0.03,
            n_seeds=1,
            eval_points=2,
        )
    )
    assert res.train_nll[-1, 0] < 0.5 < res.train_nll[0, 0]


def test_reverse_in_training_trains_every_pair_both_ways():
    base = reversal_sequences(vocab=200, word_size=1, seeds=[3])
    given = reversal_sequences(
        vocab=200, word_size=1, seeds=[3], heldout_in_training=True
    )
    assert torch.equal(given.val, base.val) and torch.equal(given.a, base.a)
    assert torch.equal(given.train, torch.cat([base.train, base.val], dim=1))
    assert ml.Config(reverse_in_training=True).n_train == 100 == given.n_train
    with pytest.raises(ValueError, match="reverse_in_training"):
        ml.Config(task="in_context", reverse_in_training=True)


def test_step_budget_follows_the_data():
    cfg = ml.Config()
    assert ml.steps_for(cfg, 226) == 300  # 85 sentences, batch 64
    assert ml.steps_for(ml.Config(vocab=400), 226) == 600  # twice the pairs
    assert ml.steps_for(ml.Config(task="in_context", n_x=100, vocab=400), 36.6) == 400
    with pytest.raises(ValueError, match="epochs"):
        ml.steps_for(cfg, 0)


def test_no_training_keeps_the_initial_model():
    tiny = dict(
        vocab=40, n_layer=1, n_head=2, d_model=8, steps=30, batch_size=8, n_seeds=1
    )
    frozen = ml.run(ml.Config(no_training=True, **tiny))
    np.testing.assert_allclose(frozen.train_nll[0], frozen.train_nll[-1], rtol=1e-6)
    trained = ml.run(ml.Config(lr=0.03, **tiny))
    assert trained.train_nll[-1, 0] < frozen.train_nll[-1, 0] - 0.1
