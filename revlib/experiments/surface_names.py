"""Chapter "Abstract concepts against surface names": the standard transformer on the
reversal data of Wang & Sun (2025), with one token per entity or with two-token names.

The model is :mod:`revlib.models.transformer` as in the paper's code: no positional
embeddings (order comes only from the causal mask), tied input/output embeddings, loss
on the target tokens only, AdamW at a constant learning rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data.binding import SPLITS, BindingTask, binding_task, shuffle_atomic
from revlib.metrics import name_metrics
from revlib.models.memory_lm import MemoryLM
from revlib.models.transformer import (
    Transformer,
    TransformerConfig,
    answer_loss,
    check_shape,
)
from revlib.train import History, train


NOTEBOOK = "binding/surface_names"
CONTROLS = (
    Control(
        "reverse_in_training",
        "science",
        "the live names run also trains its held-out reverse facts",
        {"reverse_in_training": True},
    ),
    Control(
        "swap_stored",
        "plumbing",
        "the stored one-token runs are read as the names runs and the other way round",
        swaps=True,
    ),
    Control(
        "shuffled_labels",
        "science",
        "the answers of the atomic facts are permuted among themselves, so that no "
        "trained fact is the reverse of a held-out one; the stored one-token runs are "
        "read from their stored run made so",
        {"shuffle_atomic": True},
    ),
    no_training("the live runs keep their initial weights"),
)
SIZE_KNOBS = ("N_A", "N_B", "STEPS")  # what check-claims --scale multiplies
# CI's control runs: the claims that swap_stored and no_training must break read the
# stored runs and the live re-run (LIVE_STEPS), not the live run of STEPS steps
QUICK = {
    "swap_stored": {"STEPS": 20},
    "no_training": {"STEPS": 20},
    "shuffled_labels": {"STEPS": 20},
}


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Data: ``n_a``, ``n_b`` entities, ``n_rel`` relation pairs, ``multiplicity`` (0:
    one token per entity). Model: ``n_layer``, ``d_model``, ``n_head``. Optimiser: AdamW
    with ``lr``, ``weight_decay``, ``batch_size``, ``steps``. ``n_eval`` facts per split
    are evaluated. ``reverse_in_training`` (a control): the held-out reverse facts
    (split ``test``) are trained too, so a test that reads "not learnt" must fail.
    ``shuffle_atomic`` (the control ``shuffled_labels``): the atomic facts' answers are
    permuted (:func:`revlib.data.binding.shuffle_atomic`), so a test that reads
    "reversal is learnt" must fail. ``memory``: the first block is replaced by the
    paper's top-1 memory layer over frozen keys (:mod:`revlib.models.memory_lm`; one
    free vector per entity, read at its name's last token)."""

    n_a: int = 1000
    n_b: int = 600
    n_rel: int = 3
    multiplicity: int = 0
    n_layer: int = 2
    d_model: int = 64
    n_head: int = 4
    memory: bool = False
    lr: float = 3e-3
    weight_decay: float = 0.1
    batch_size: int = 256
    steps: int = 2000
    n_seeds: int = 2
    n_eval: int = 1000
    eval_points: int = 11
    reverse_in_training: bool = False
    shuffle_atomic: bool = False

    OPTIMIZER = "adamw"

    def __post_init__(self):
        _validate.boolean("reverse_in_training", self.reverse_in_training)
        _validate.boolean("shuffle_atomic", self.shuffle_atomic)
        _validate.boolean("memory", self.memory)
        if self.memory and self.n_layer < 2:
            raise ValueError(
                "n_layer must be at least 2 with memory=True (the memory layer "
                f"replaces the first block), got {self.n_layer}"
            )
        _validate.integer("n_a", self.n_a, 2, 10**6)
        _validate.integer("n_b", self.n_b, 2, 10**6)
        _validate.integer("n_rel", self.n_rel, 1, 100)
        _validate.integer("multiplicity", self.multiplicity, 0, 1000)
        _validate.integer("n_eval", self.n_eval, 1, 10**6)
        check_shape(self.n_layer, self.n_head, self.d_model, "none")
        super().__post_init__()  # seed, n_seeds; the optimiser's fields


@dataclass
class Result:
    """``history[f"{split}_acc"]``, ``history[f"{split}_mrr"]``: ``[E, S]``. ``final``:
    the same at the end, ``[S]`` each. ``model`` and ``task`` are kept for probing."""

    config: Config
    task: BindingTask
    model: Transformer | MemoryLM
    history: History

    def final(self, name: str) -> np.ndarray:
        return self.history.final(name)


def _target_mask(S: int, N: int, L: int) -> torch.Tensor:
    """``[S, N, 2L+1]``: the positions (from ``<mask>`` on) whose next token is a target
    token."""
    m = torch.zeros(2 * L + 1, dtype=torch.bool)
    m[L + 1 :] = True
    return m.expand(S, N, -1)


def run(config: Config) -> Result:
    """Train ``config.n_seeds`` standard transformers (one batched model) and evaluate
    them."""
    task = binding_task(
        config.n_a, config.n_b, config.n_rel, config.multiplicity, config.seeds
    )
    if config.shuffle_atomic:
        task = shuffle_atomic(task, config.seeds)
    S, L = config.n_seeds, task.name_length
    seqs = {k: task.sequences(k) for k in SPLITS}
    trained = (
        ("train", "atomic", "test")
        if config.reverse_in_training
        else ("train", "atomic")
    )
    train_seqs = torch.cat([seqs[k] for k in trained], 1)  # [S, N, T]
    tcfg = TransformerConfig(
        vocab_size=task.vocab_size,
        block_size=2 * L + 2,
        n_layer=config.n_layer,
        n_head=config.n_head,
        d_model=config.d_model,
        positional="none",
        tied=not config.memory,
    )
    if config.memory:
        # spans: the head's name, the relation, <mask>, the answer's name
        start = [0] * L + [L, L + 1] + [L + 2] * L
        model = MemoryLM(tcfg, S, torch.tensor(start), task.memory_keys(), config.seed)
    else:
        model = Transformer(tcfg, n_seeds=S, seed=config.seed)
    seeds_ix = torch.arange(S)[:, None]

    def loss(idx):
        x = train_seqs[seeds_ix, idx]
        return answer_loss(
            model(x[..., :-1]), x[..., 1:], _target_mask(S, x.shape[1], L)
        )

    def evaluate():
        out = {}
        for k in SPLITS:
            acc, mrr = name_metrics(
                model, seqs[k][:, : config.n_eval], L, task.n_name_tokens
            )
            out[f"{k}_acc"], out[f"{k}_mrr"] = acc, mrr
        return out

    history = train(
        model,
        loss,
        config.train_config(),
        evaluate,
        n_train=train_seqs.shape[1],
        n_seeds=S,
        batch_seeds=[s + 7_777 for s in config.seeds],
    )
    return Result(config=config, task=task, model=model, history=history)
