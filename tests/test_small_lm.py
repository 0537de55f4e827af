"""The generated small corpus, the small-LM experiment and the allocation sweep file."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from revlib.data import small_corpus as sc
from revlib.experiments import allocation as al
from revlib.experiments import small_lm as sl


def test_corpus_shapes_shift_and_determinism():
    c = sc.sample([3, 4], n=20, seq_len=40, p_ioi=0.5, alpha=0.3)
    assert c.x.shape == c.y.shape == c.answer.shape == (2, 20, 40)
    assert c.x.min() >= 0 and c.x.max() < sc.VOCAB_SIZE
    # y is x shifted by one inside each sequence
    assert torch.equal(c.x[:, :, 1:], c.y[:, :, :-1])
    again = sc.sample([4], n=20, seq_len=40, p_ioi=0.5, alpha=0.3)
    assert torch.equal(again.x[0], c.x[1])  # seed 4's data does not depend on seed 3
    other = sc.sample([4], n=20, seq_len=40, p_ioi=0.5, alpha=0.3, stream=1)
    assert not torch.equal(other.x[0], c.x[1])


def test_ioi_answer_positions_follow_the_template():
    c = sc.sample([0], n=400, seq_len=48, p_ioi=0.4, alpha=0.3)
    x, y, m = c.x[0], c.y[0], c.answer[0]
    assert m.sum() > 100
    assert torch.all(x[m] == sc.TOKEN["to"])
    io, s = c.io[0][m], c.s[0][m]
    assert torch.all(io != s) and torch.all(io >= 0)
    assert torch.all((y[m] == io) | (y[m] == sc.THE))
    # the words before the answer: "..., S gave a OBJ to"; IO and S both appear in the
    # clause
    rows, cols = torch.nonzero(m, as_tuple=True)
    ok = cols >= 13
    assert torch.all(x[rows[ok], cols[ok] - 4] == s[ok])
    first_clause = torch.stack(
        [x[rows[ok], cols[ok] - 12], x[rows[ok], cols[ok] - 10]], 1
    )
    assert torch.all((first_clause == io[ok, None]).sum(1) == 1)
    assert torch.all((first_clause == s[ok, None]).sum(1) == 1)
    # the generic ending has frequency alpha (binomial: 5 standard deviations)
    frac = (y[m] == sc.THE).double().mean().item()
    assert abs(frac - 0.3) < 5 * np.sqrt(0.3 * 0.7 / m.sum().item())
    # outside IOI answers, "to" is always followed by "the"
    to = (x == sc.TOKEN["to"]) & ~m
    assert torch.all(y[to] == sc.THE)
    clean = sc.sample([0], n=50, seq_len=48, p_ioi=0.4, alpha=0.0)
    assert torch.equal(clean.y[clean.answer], clean.io[clean.answer])


def test_corpus_without_to_the():
    """The control no_to_the: 'the' never follows 'to', still opens sentences, the
    answers and their positions are those of the same draws, and the data are complete
    (no pads)."""
    kw = dict(n=300, seq_len=48, p_ioi=0.4, alpha=0.3)
    c = sc.sample([2], to_the=False, **kw)
    x, y, m = c.x[0], c.y[0], c.answer[0]
    assert x.min() >= 0 and torch.equal(x[:, 1:], y[:, :-1])
    assert not torch.any(y[x == sc.TOKEN["to"]] == sc.THE)
    assert torch.any(x == sc.THE)  # "the NOUN went to PLACE ."
    assert torch.all(x[m] == sc.TOKEN["to"])
    assert torch.all((y[m] == c.io[0][m]) | torch.isin(y[m], sc._NOUN_IDS))
    frac = torch.isin(y[m], sc._NOUN_IDS).double().mean().item()
    assert abs(frac - 0.3) < 5 * np.sqrt(0.3 * 0.7 / m.sum().item())
    with pytest.raises(ValueError, match="to_the"):
        sc.sample([2], to_the="no", **kw)


def test_small_lm_science_controls():
    """no_last_ff: removing the last FF afterwards changes nothing; no_to_the: p(the)
    at the answer is not learnt."""
    tiny = dict(d=16, seq_len=24, steps=40, batch_size=8, n_test=16, eval_points=2)
    r = sl.run(sl.Config(no_last_ff=True, **tiny))
    for k in ("p_the", "p_io", "p_s"):
        np.testing.assert_array_equal(r.ablation[k][2], r.ablation[k][1])
    assert r.model.blocks[1].ff.fc1.weight.grad is None  # it took no part
    r = sl.run(sl.Config(no_to_the=True, **tiny))
    assert np.all(r.final("p_the") < 1 / sc.VOCAB_SIZE)
    with pytest.raises(ValueError, match="no_last_ff"):
        sl.Config(no_last_ff=1)


def test_small_lm_config_errors_and_tiny_run():
    with pytest.raises(ValueError, match="alpha"):
        sl.Config(alpha=1.0)
    with pytest.raises(ValueError, match="seq_len"):
        sl.Config(seq_len=8)
    with pytest.raises(ValueError, match="rank_fractions"):
        sl.Config(rank_fractions=(1.5,))
    r = sl.run(
        sl.Config(
            d=16,
            n_head=2,
            seq_len=24,
            steps=3,
            batch_size=4,
            n_seeds=2,
            n_test=16,
            eval_points=2,
        )
    )
    assert r.history["p_the"].shape == (2, 2)
    # removing no FF leaves the model unchanged, and full rank leaves it unchanged too
    np.testing.assert_allclose(r.ablation["p_io"][2], r.final("p_io"), atol=1e-6)
    np.testing.assert_allclose(r.sweep["p_the"][-1], r.final("p_the"), atol=1e-6)
    assert r.ranks[0] == 0 and r.ranks[-1] == 16


def test_allocation_sweep_file_round_trip(tmp_path):
    cfg = al.Config(
        allocations=((2, 1), (3, 0)),
        d=8,
        seq_len=16,
        steps=2,
        batch_size=4,
        n_seeds=2,
        n_test=8,
        eval_points=2,
    )
    result = al.run(cfg)
    path = tmp_path / "sweep.json"
    from revlib import records

    records.write(path, al.to_record(result, 1.0))
    back = al.load(path)
    assert back.config == cfg
    np.testing.assert_allclose(
        back.final("bigram_excess"), result.final("bigram_excess"), atol=1e-5
    )
    assert list(back.n_params) == [2 * 4 * 64 + 2 * 2 * 64, 3 * 4 * 64]
