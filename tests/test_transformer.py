import pytest
import torch

from revlib.models.transformer import (
    Internals,
    Transformer,
    TransformerConfig,
    answer_loss,
)


def _cfg(**kw):
    base = dict(vocab_size=30, block_size=6, n_layer=2, n_head=2, d_model=16)
    base.update(kw)
    return TransformerConfig(**base)


@pytest.mark.parametrize("positional", ["none", "absolute", "rotary"])
def test_causal_and_seed_independent(positional):
    cfg = _cfg(positional=positional, ff=("mlp", "linear"))
    idx = torch.randint(0, 30, (3, 4, 6), generator=torch.Generator().manual_seed(0))
    model = Transformer(cfg, n_seeds=3, seed=10)
    out = model(idx)
    assert out.shape == (3, 4, 6, 30)
    changed = idx.clone()
    changed[:, :, -1] = (changed[:, :, -1] + 1) % 30
    torch.testing.assert_close(
        model(changed)[:, :, :-1], out[:, :, :-1]
    )  # no peeking ahead
    alone = Transformer(cfg, n_seeds=1, seed=11)
    torch.testing.assert_close(
        alone(idx[1:2])[0], out[1]
    )  # seed 11 is the same model either way


def test_attention_rows_are_distributions_and_ff_can_be_switched_off():
    model = Transformer(_cfg(), n_seeds=2)
    idx = torch.randint(0, 30, (2, 3, 6), generator=torch.Generator().manual_seed(1))
    internals = Internals()
    out = model(idx, internals)
    assert len(internals.attention) == 2 and internals.attention[0].shape == (
        2,
        3,
        2,
        6,
        6,
    )
    torch.testing.assert_close(internals.attention[0].sum(-1), torch.ones(2, 3, 2, 6))
    assert torch.all(internals.attention[0].triu(1) == 0)
    assert not torch.allclose(model(idx, ff_off={1}), out)


def test_frozen_embeddings_stay_fixed_and_untied_head_is_separate():
    model = Transformer(
        _cfg(
            tied=False, freeze_embeddings=True, freeze_unembedding=True, layernorm=False
        ),
        n_seeds=1,
    )
    before = model.wte.detach().clone()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    idx = torch.randint(0, 30, (1, 4, 6))
    mask = torch.ones(1, 4, 6, dtype=torch.bool)
    answer_loss(model(idx), idx, mask).sum().backward()
    opt.step()
    assert torch.equal(model.wte, before) and not model.head.requires_grad


def test_answer_loss_uses_only_masked_positions():
    logits = torch.zeros(1, 1, 3, 4)
    logits[0, 0, 2, 1] = 100.0
    targets = torch.tensor([[[0, 0, 1]]])
    mask = torch.tensor([[[False, False, True]]])
    assert answer_loss(logits, targets, mask).item() == pytest.approx(0.0, abs=1e-6)
    assert answer_loss(logits, targets, ~mask).item() == pytest.approx(
        torch.log(torch.tensor(4.0)).item()
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"d_model": 15}, "d_model"),
        ({"ff": "gelu"}, "ff"),
        ({"ff": ("mlp",)}, "ff"),
        ({"positional": "alibi"}, "positional"),
        ({"n_layer": 0}, "n_layer"),
        ({"query_identity": True}, "n_head"),
        ({"tied": True, "freeze_unembedding": True}, "freeze_unembedding"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        _cfg(**kwargs)


def test_building_a_model_leaves_the_global_random_stream_alone():
    from revlib.models.jepa import JEPA, JEPAConfig

    torch.manual_seed(123)
    before = torch.get_rng_state()
    Transformer(
        TransformerConfig(vocab_size=11, block_size=4, n_layer=2, n_head=2, d_model=8),
        n_seeds=2,
        seed=5,
    )
    JEPA(JEPAConfig(vocab_size=7, n_rec=1, n_sem=1, d_model=8, n_head=2), 2, seed=5)
    assert torch.equal(torch.get_rng_state(), before)


def test_jepa_memory_keys_are_a_buffer():
    from revlib.models.jepa import JEPA, JEPAConfig

    keys = torch.arange(6).view(1, 6, 1).expand(2, -1, -1)
    cfg = JEPAConfig(
        vocab_size=7,
        patch_len=1,
        d_model=8,
        n_head=2,
        memory=True,
        concept_ln="layernorm",
    )
    model = JEPA(cfg, 2, seed=0, memory_keys=keys)
    assert "keys" in dict(model.named_buffers()) and "keys" in model.state_dict()
    assert model.keys.shape == (2, 6, 8)
    assert model.to(torch.float64).keys.dtype == torch.float64  # moves with the model
