import numpy as np
import pytest
import torch
import torch.nn.functional as F

from revlib import probes
from revlib.data import noisy_recall as nr
from revlib.experiments import ff_vs_attention as fa
from revlib.theory import associations as theory


def test_trigger_is_followed_by_tau_or_ybar_and_nothing_else():
    data = nr.sample([3, 4], n=200, seq_len=40, alpha=0.3)
    after = data.x == nr.TRIGGER
    expected = torch.where(
        data.noise, nr.NOISE_TOKEN, data.ybar[:, :, None].expand_as(data.y)
    )
    assert torch.equal(data.y[after], expected[after])
    assert not data.noise[~after].any()
    # inputs are the labels shifted by one
    assert torch.equal(data.x[..., 1:], data.y[..., :-1])
    # occurrence counts the triggers seen so far, at trigger positions only
    occ = torch.cumsum(after.long(), dim=2) * after
    assert torch.equal(data.occurrence, occ)
    assert torch.equal(data.after_trigger[..., 1:], after[..., :-1])


def test_noise_rate_and_clean_test_data():
    data = nr.sample([0], n=2000, seq_len=64, alpha=0.4)
    rate = data.noise[data.x == nr.TRIGGER].double().mean().item()
    assert abs(rate - 0.4) < 0.02
    clean = nr.sample([0], n=200, seq_len=64, alpha=0.0)
    assert not clean.noise.any()


def test_background_follows_the_generated_bigrams():
    pi, cond = nr.character_statistics()
    np.testing.assert_allclose(cond.sum(1), 1.0)
    assert pi.argmax() == nr.TRIGGER and pi[nr.NOISE_TOKEN] < 0.01
    data = nr.sample([1], n=3000, seq_len=64, alpha=0.5)
    x, y = data.x[0].flatten(), data.y[0].flatten()
    sel = x == 5
    freq = np.bincount(y[sel].numpy(), minlength=nr.VOCAB_SIZE) / sel.sum().item()
    assert np.abs(freq - cond[5]).max() < 0.02


def test_seed_data_is_independent_of_companions_and_streams_differ():
    a = nr.sample([7], n=50, seq_len=32, alpha=0.5)
    b = nr.sample([6, 7], n=50, seq_len=32, alpha=0.5)
    assert torch.equal(a.x[0], b.x[1]) and torch.equal(a.ybar[0], b.ybar[1])
    c = nr.sample([7], n=50, seq_len=32, alpha=0.5, stream=1)
    assert not torch.equal(a.x, c.x)


def test_select_takes_per_seed_rows():
    data = nr.sample([0, 1], n=10, seq_len=16, alpha=0.5)
    idx = torch.tensor([[3, 1], [0, 9]])
    sub = data.select(idx)
    assert torch.equal(sub.x[0, 0], data.x[0, 3]) and torch.equal(
        sub.x[1, 1], data.x[1, 9]
    )
    assert torch.equal(sub.ybar[1], data.ybar[1, [0, 9]])


def test_init_gradients_match_autograd():
    data = nr.sample([2], n=30, seq_len=48, alpha=0.5)
    V = nr.VOCAB_SIZE
    w_f = torch.zeros(V, V, dtype=torch.float64, requires_grad=True)
    w_v = torch.zeros(V, V, dtype=torch.float64, requires_grad=True)
    h = theory.context_histograms(data)[0]
    logits = w_f[:, nr.TRIGGER] + h @ w_v.T  # [N, T, V]
    m = data.mask[0]
    loss = F.cross_entropy(logits[m], data.y[0][m])
    loss.backward()
    g_f, g_v = theory.init_gradients(data)
    torch.testing.assert_close(-w_f.grad[:, nr.TRIGGER], g_f[0])
    torch.testing.assert_close(-w_v.grad, g_v[0])
    # the copy signal identity: mean diagonal minus mean off-diagonal =
    # (E h(y) - 1/V)/(V-1)
    hy = h.gather(-1, data.y[0][..., None])[..., 0][m].mean().item()
    assert theory.copy_signal(g_v)[0].item() == pytest.approx(
        float(theory.attention_signal_exact(hy)), rel=1e-9
    )
    # batch estimates from per-sequence sums agree with the direct computation
    est = theory.batch_estimates(theory.sequence_statistics(data), batch=30)
    assert est["ff_tau"][0, 0].item() == pytest.approx(g_f[0, nr.NOISE_TOKEN].item())
    torch.testing.assert_close(est["diag"][0, 0], torch.diagonal(g_v[0]))


def test_autograd_gradients_match_the_closed_form_and_the_controls_remove_them():
    data = nr.sample([2, 5], n=20, seq_len=48, alpha=0.5)
    g_f, g_v = theory.init_gradients(data)
    a_f, a_v, count = theory.autograd_init_gradients(data)
    torch.testing.assert_close(a_f, g_f)
    torch.testing.assert_close(a_v, g_v)
    assert torch.equal(count, data.mask.sum(dim=(1, 2)).double())
    V = nr.VOCAB_SIZE
    margin = theory.ff_margin(a_f, data.noise_token)
    by_hand = a_f[:, nr.NOISE_TOKEN] - (a_f.sum(-1) - a_f[:, nr.NOISE_TOKEN]) / (V - 1)
    torch.testing.assert_close(margin, by_hand)
    # without attention the value path sees the trigger only: no copy signal, and the
    # copy entries sit in the trigger's column alone
    _, n_v, _ = theory.autograd_init_gradients(data, attention=False)
    assert torch.count_nonzero(n_v[..., [k for k in range(V) if k != nr.TRIGGER]]) == 0
    # its copy signal is then (P(y = q) - 1/V) / (V - 1), with no context in it
    share_q = torch.stack(
        [(data.y[i][data.mask[i]] == nr.TRIGGER).double().mean() for i in range(2)]
    )
    torch.testing.assert_close(theory.copy_signal(n_v), (share_q - 1 / V) / (V - 1))
    # without noise no tau label follows the trigger, except where ybar is tau
    clean = nr.sample([2], n=20, seq_len=48, alpha=0.0)
    c_f, _, _ = theory.autograd_init_gradients(clean)
    expected = (clean.y[clean.mask] == nr.NOISE_TOKEN).double().mean() - 1 / V
    assert c_f[0, nr.NOISE_TOKEN].item() == pytest.approx(expected.item())


def test_gradients_at_init_controls_are_validated_fields():
    from revlib.experiments import gradients_at_init as gi

    with pytest.raises(ValueError, match="noise"):
        gi.Config(noise=0)
    with pytest.raises(ValueError, match="attention"):
        gi.Config(attention="no")
    assert gi.Config().noise and gi.Config().attention


def test_frozen_parts_keep_their_initial_weights():
    with pytest.raises(ValueError, match="frozen"):
        fa.Config(frozen=("ff1",))
    cfg = fa.Config(
        d=8,
        seq_len=16,
        n_seeds=1,
        steps=3,
        batch_size=4,
        n_test=8,
        eval_points=2,
        rank_fractions=(0.0, 1.0),
        frozen=("ff2", "attention"),
    )
    res = fa.run(cfg)
    ref = fa.Transformer(cfg.model_config(), n_seeds=1, seed=cfg.seed)
    for name, p in res.model.named_parameters():
        if name.startswith("blocks.1.ff") or ".attn." in name:
            torch.testing.assert_close(p, dict(ref.named_parameters())[name])
    moved = [
        n
        for n, p in res.model.named_parameters()
        if not torch.equal(p, dict(ref.named_parameters())[n])
    ]
    assert moved and all(n.startswith("blocks.0.ff") for n in moved)


def test_ff_signal_closed_form_by_hand():
    tau, other = theory.ff_signal(0.5, V=65)
    assert tau == pytest.approx(0.5 * 64 / 65) and other == pytest.approx(-0.5 / 65)
    assert tau - other == pytest.approx(0.5)
    assert theory.ff_noise(0.0, 100, V=4) == pytest.approx(np.sqrt(0.25 * 0.75 / 100))


def test_truncate_keeps_the_top_singular_values():
    g = torch.Generator().manual_seed(0)
    u, _ = torch.linalg.qr(torch.randn(2, 6, 6, generator=g, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(2, 4, 4, generator=g, dtype=torch.float64))
    s = torch.tensor([4.0, 3.0, 2.0, 1.0], dtype=torch.float64)
    w = (u[..., :4] * s) @ v.transpose(-1, -2)
    r2 = probes.truncate(w, 2)
    torch.testing.assert_close(
        r2, (u[..., :2] * s[:2]) @ v[..., :, :2].transpose(-1, -2)
    )
    assert torch.equal(probes.truncate(w, 0), torch.zeros_like(w))
    torch.testing.assert_close(probes.truncate(w, 9), w)
    assert probes.rank_of_fraction(w, 0.5) == 2 and probes.rank_of_fraction(w, 0.1) == 0
    with pytest.raises(ValueError, match="rank"):
        probes.truncate(w, -1)
    p = torch.nn.Parameter(w.clone())
    with probes.truncated(p, 1):
        assert torch.linalg.matrix_rank(p[0].detach()).item() == 1
    torch.testing.assert_close(p.detach(), w)


def test_attention_mass_and_margin_by_hand():
    att = torch.zeros(1, 1, 1, 3, 3)
    att[0, 0, 0] = torch.tensor([[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]])
    query = torch.tensor([[[False, True, True]]])
    key = torch.tensor([[[True, False, True]]])
    assert probes.attention_mass(att, query, key).item() == pytest.approx(
        (0.5 + 0.7) / 2
    )
    logits = torch.tensor([[1.0, 3.0, 2.5]])
    assert probes.margin(logits, 1).item() == pytest.approx(0.5)
    assert probes.margin(logits, 0).item() == pytest.approx(-2.0)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="alpha"):
        fa.Config(alpha=1.0)
    with pytest.raises(ValueError, match="ff"):
        fa.Config(ff=("mlp", "none"))
    with pytest.raises(ValueError, match="rank_fractions"):
        fa.Config(rank_fractions=(0.0, 2.0))
    with pytest.raises(ValueError, match="alpha"):
        nr.sample([0], n=2, seq_len=8, alpha=-0.1)


def test_allocation_budgets_are_equal_and_bayes_losses_by_hand():
    from revlib.experiments import allocation as al

    cfg = al.Config()
    d = cfg.d
    for layers, mult in cfg.allocations:
        attention, mlp = layers * 4 * d * d, layers * 2 * mult * d * d
        assert attention + mlp == 24 * d * d
    with pytest.raises(ValueError, match="allocations"):
        al.Config(allocations=((0, 4),))
    data = nr.sample([0], n=50, seq_len=32, alpha=0.5)
    bayes, background, recall = al.bayes_losses(data)
    ok = recall & (data.ybar != nr.NOISE_TOKEN)[:, :, None]
    torch.testing.assert_close(bayes[ok], torch.full_like(bayes[ok], np.log(2)))
    _, cond = nr.character_statistics()
    i = torch.nonzero(background[0])[0]
    x, y = data.x[0][tuple(i)].item(), data.y[0][tuple(i)].item()
    assert bayes[0][tuple(i)].item() == pytest.approx(-np.log(cond[x, y]))


def test_the_cached_statistics_are_read_only():
    pi, cond = nr.character_statistics()
    with pytest.raises(ValueError):
        cond[0, 0] = 0.0
    with pytest.raises(ValueError):
        pi[0] = 0.0
    assert nr.character_statistics()[1][0, 0] == cond[0, 0]


# The tiny-Shakespeare chain (the paper's data, vendored from the original code)


def test_shakespeare_chain_is_the_original_codes():
    meta = nr.shakespeare_meta()
    assert meta["vocab_size"] == nr.VOCAB_SIZE
    assert sum(meta["unigrams"].values()) == 1_115_394  # characters of the text
    assert sum(meta["bigrams"].values()) == 1_115_393  # its adjacent pairs
    c = nr.chain("shakespeare")
    # ids are the sorted characters, as in the code: 0 '\n', 1 ' ', 2 '!'
    assert c.symbols[:3] == ("\n", " ", "!")
    assert (c.trigger, c.noise_token) == (1, 2)
    assert c.pi[c.trigger] == pytest.approx(169_892 / 1_115_394)
    np.testing.assert_allclose(c.cond.sum(1), 1.0)
    np.testing.assert_allclose(c.pi.sum(), 1.0)
    assert not c.pi.flags.writeable and not c.cond.flags.writeable
    # the bigram 'th' is the most likely continuation of 't'
    t, h = c.symbols.index("t"), c.symbols.index("h")
    assert c.cond[t].argmax() == h


def test_shakespeare_sequences_follow_its_bigrams_and_noise():
    c = nr.chain("shakespeare")
    data = nr.sample([0, 1], n=1500, seq_len=64, alpha=0.4, chain="shakespeare")
    assert (data.trigger, data.noise_token, data.chain) == (
        c.trigger,
        c.noise_token,
        "shakespeare",
    )
    after = data.x == c.trigger
    expected = torch.where(
        data.noise, c.noise_token, data.ybar[:, :, None].expand_as(data.y)
    )
    assert torch.equal(data.y[after], expected[after])
    rate = data.noise[after].double().mean().item()
    assert abs(rate - 0.4) < 0.02
    # background transitions from 'e' follow the bigram row of 'e'
    e = c.symbols.index("e")
    nxt = data.y[data.x == e]
    freq = torch.bincount(nxt, minlength=nr.VOCAB_SIZE).double() / len(nxt)
    assert (freq.numpy() - c.cond[e]).__abs__().max() < 0.03
    # a subset keeps the chain, its trigger and its noise token
    sub = data.select(torch.zeros(2, 3, dtype=torch.long))
    assert (sub.trigger, sub.noise_token, sub.chain) == (
        c.trigger,
        c.noise_token,
        "shakespeare",
    )


def test_synthetic_chain_is_unchanged():
    # the book's stand-in keeps its statistics, so its stored results stay valid
    c = nr.chain("synthetic")
    pi, cond = nr.character_statistics()
    assert c.pi is pi and c.cond is cond
    assert (c.trigger, c.noise_token) == (nr.TRIGGER, nr.NOISE_TOKEN)
    assert nr.bigram_entropy() == pytest.approx(c.entropy())
    d = nr.sample([0], 4, 16, 0.5)
    assert (d.trigger, d.noise_token) == (nr.TRIGGER, nr.NOISE_TOKEN)


def test_chain_names_are_validated():
    with pytest.raises(ValueError, match="chain"):
        nr.chain("tinystories")
    with pytest.raises(ValueError, match="chain"):
        nr.sample([0], 4, 16, 0.5, chain="Shakespeare")
    with pytest.raises(ValueError, match="chain"):
        fa.Config(chain="real")
    from revlib.experiments import gradients_at_init as gi

    with pytest.raises(ValueError, match="chain"):
        gi.Config(chain="")


def test_shakespeare_file_is_checked_and_runs_no_code(tmp_path, monkeypatch):
    import pickle

    # a changed file is refused with a clear message
    bad = tmp_path / "meta.pkl"
    raw = bytearray(nr.SHAKESPEARE_META.read_bytes())
    raw[1000] ^= 1
    bad.write_bytes(bytes(raw))
    monkeypatch.setattr(nr, "SHAKESPEARE_META", bad)
    with pytest.raises(ValueError, match="SHA-256"):
        nr.shakespeare_meta()
    # and the unpickler builds no object of any class, even with a matching digest
    import io

    evil = pickle.dumps({"x": torch.nn.Identity})
    with pytest.raises(pickle.UnpicklingError, match="plain data"):
        nr._DataOnly(io.BytesIO(evil)).load()


def test_stored_weights_load_reset_and_sweep_both_matrices(tmp_path):
    """A trained model saved as scripts/gpu_runs.py saves it loads back to the same
    numbers; resetting a frozen part gives it its initial weights; the truncation
    analysis sweeps W2 and W1, and rank 0 of either is FF2 removed."""
    cfg = fa.Config(
        d=8,
        seq_len=16,
        n_seeds=1,
        steps=5,
        batch_size=4,
        n_test=8,
        eval_points=2,
        rank_fractions=(0.0, 0.5, 1.0),
    )
    res = fa.run(cfg)
    assert set(res.tau_logit) == {"W1", "W2"} and set(res.captured) == {"W1", "W2"}
    assert res.sweep_w1["p_tau"].shape == res.sweep["p_tau"].shape == (3, 1)
    np.testing.assert_allclose(res.sweep_w1["p_tau"][0], res.final("p_tau_noff2"))
    np.testing.assert_allclose(res.captured["W2"][-1], 1.0, rtol=1e-5)
    path = tmp_path / "w.pt"
    import dataclasses

    from revlib import records

    torch.save(
        {
            "config": records.plain(dataclasses.asdict(cfg)),
            "state": res.model.state_dict(),
        },
        path,
    )
    cfg2, model, clean = fa.load_weights(path, n_test=8)
    assert cfg2 == cfg
    with torch.no_grad():
        a = fa.recall_metrics(model, clean)["p_tau"]
        b = fa.recall_metrics(res.model, clean)["p_tau"]
    torch.testing.assert_close(a, b)
    fa.reset_frozen(model, dataclasses.replace(cfg2, frozen=("ff2",)))
    ref = fa.Transformer(cfg.model_config(), n_seeds=1, seed=cfg.seed)
    torch.testing.assert_close(
        model.blocks[1].ff.fc1.weight, ref.blocks[1].ff.fc1.weight
    )
    torch.testing.assert_close(
        model.blocks[0].ff.fc1.weight, res.model.blocks[0].ff.fc1.weight
    )


def test_unigram_chain_has_no_bigram_to_learn():
    # the allocation chapter's control no_bigrams: every row of the chain is the
    # synthetic unigram, with the synthetic chain's trigger and noise token
    c, syn = nr.chain("unigram"), nr.chain("synthetic")
    assert np.allclose(c.cond, syn.pi[None, :]) and c.pi is syn.pi
    assert not c.cond.flags.writeable and syn.cond is nr.character_statistics()[1]
    unigram_entropy = float(-(syn.pi * np.log(syn.pi)).sum())
    assert c.entropy() == pytest.approx(unigram_entropy)
    d = nr.sample([0, 1], 200, 64, 0.5, chain="unigram")
    assert (d.trigger, d.noise_token, d.chain) == (
        nr.TRIGGER,
        nr.NOISE_TOKEN,
        "unigram",
    )
    # the trigger keeps its frequency, so the recall task keeps its positions
    assert (d.x == nr.TRIGGER).float().mean() == pytest.approx(syn.pi[0], rel=0.2)


def test_allocation_reads_its_chain():
    from revlib.experiments import allocation

    assert allocation.Config().chain == "synthetic"
    with pytest.raises(ValueError, match="chain"):
        allocation.Config(chain="markov")
    kinds = {c.name: c.kind for c in allocation.CONTROLS}
    assert kinds["no_bigrams"] == "science"


@pytest.mark.parametrize("chain", nr.CHAINS)
def test_allocation_bayes_losses_are_finite_on_every_chain(chain):
    from revlib.experiments import allocation

    data = nr.sample([0], 64, 64, 0.5, stream=3, chain=chain)
    bayes, background, recall = allocation.bayes_losses(data)
    assert torch.isfinite(bayes).all()
    assert background.any() and recall.any()
