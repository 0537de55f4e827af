"""The standard transformer with the memory layer (revlib.models.memory_lm)."""

from __future__ import annotations

import pytest
import torch

from revlib.data.binding import binding_task
from revlib.experiments import surface_names as sn
from revlib.models.memory_lm import MemoryLM
from revlib.models.transformer import TransformerConfig


def _model(task, n_layer=2, S=1, d=16):
    L = task.name_length
    cfg = TransformerConfig(
        vocab_size=task.vocab_size,
        block_size=2 * L + 2,
        n_layer=n_layer,
        n_head=2,
        d_model=d,
        positional="none",
        tied=False,
    )
    start = torch.tensor([0] * L + [L, L + 1] + [L + 2] * L)
    return MemoryLM(cfg, S, start, task.memory_keys(), seed=3)


def test_memory_keys_one_per_entity_and_non_entity_token():
    task = binding_task(60, 40, 2, 10, [0, 1])
    keys = task.memory_keys()
    assert keys.shape == (2, 100 + 1 + 4, 2)
    assert torch.equal(keys[:, :100], task.names)
    assert torch.equal(keys[0, 100:, 0], torch.arange(task.mask_token, task.vocab_size))
    assert bool((keys[:, 100:, 1] == task.vocab_size).all())  # padded
    one = binding_task(60, 40, 2, 0, [0]).memory_keys()  # one token per entity
    assert one.shape == (1, 105, 1)


def test_a_name_reads_its_own_entity_at_its_last_token():
    task = binding_task(100, 100, 1, 10, [0])
    model = _model(task, d=64)
    seqs = task.sequences("train")[:, :50]
    top = model.lookup(seqs[..., :-1])  # [S, N, T]
    L = task.name_length
    heads = task.facts["train"][:, :50, 0]
    # the mean of both name tokens is the entity's own key (top-1 up to rare ties)
    assert (top[..., L - 1] == heads).float().mean() > 0.9
    # the relation and <mask> positions read their own token's key
    E = task.n_entities
    assert torch.equal(top[..., L], E + 1 + task.facts["train"][:, :50, 1])
    assert bool((top[..., L + 1] == E).all())


def test_only_values_blocks_and_head_train_and_the_shape_is_right():
    task = binding_task(60, 40, 2, 10, [0, 1])
    model = _model(task, n_layer=3, S=2)
    assert not model.wte.requires_grad and "keys" in dict(model.named_buffers())
    assert len(model.blocks) == 2  # the memory layer replaces the first block
    x = task.sequences("train")[:, :7, :-1]
    logits = model(x)
    assert logits.shape == (2, 7, x.shape[-1], task.vocab_size)
    logits.sum().backward()
    assert model.values.grad is not None and model.head.grad is not None


def test_memory_lm_rejects_bad_shapes():
    task = binding_task(60, 40, 2, 10, [0])
    with pytest.raises(ValueError, match="n_layer"):
        _model(task, n_layer=1)
    cfg = TransformerConfig(vocab_size=task.vocab_size, block_size=6, positional="none")
    with pytest.raises(ValueError, match="span_start"):
        MemoryLM(cfg, 1, torch.tensor([0, 2, 2]), task.memory_keys())
    with pytest.raises(ValueError, match="key_tokens"):
        MemoryLM(cfg, 2, torch.tensor([0, 0, 2]), task.memory_keys())
    with pytest.raises(ValueError, match="n_layer"):
        sn.Config(memory=True, n_layer=1)


def test_standard_model_with_memory_fits_but_reverses_only_when_trained_on_it():
    """The paper's claim at toy size, and its control: with the held-out reverse facts
    in training the same test reads them as learnt."""
    kw = dict(n_a=200, n_b=100, n_rel=2, multiplicity=10, memory=True, n_seeds=1)
    kw.update(steps=400, eval_points=2, n_eval=200)
    plain = sn.run(sn.Config(**kw))
    assert plain.final("train_acc")[0] > 0.9 and plain.final("atomic_acc")[0] > 0.9
    assert plain.final("test_acc")[0] < 0.1
    given = sn.run(sn.Config(**kw, reverse_in_training=True))
    assert given.final("test_acc")[0] > 0.9


def test_jepa_trainable_parameters_count_the_memory_values_not_the_embeddings():
    from revlib.experiments import jepa

    kw = dict(n_a=60, n_b=40, n_rel=2, multiplicity=10, d_model=16, n_head=2)
    plain = jepa.trainable_parameters(jepa.Config(**kw))
    mem = jepa.trainable_parameters(jepa.Config(**kw, memory=True))
    block = 12 * 16 * 16 + 4 * 16  # attention, 4x MLP, two LayerNorms
    vocab = 2 * 100 // 10 + 1 + 4 + 1  # name tokens, <mask>, relations, <pad>
    assert plain == vocab * 16 + 2 * block  # embeddings, #Rec 1, #Sem 1; RMS norm
    assert mem == (100 + 1 + 4) * 16 + block + 2 * 16  # values, #Sem 1, LayerNorm
