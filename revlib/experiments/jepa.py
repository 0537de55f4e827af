"""Chapter "JEPA breaks the curse": the JEPA model of :mod:`revlib.models.jepa` on
two-token names.

The runs that do not fit in the notebook are stored runs of ``python -m revlib sweep
jepa`` (``data/sweeps/jepa``, ``jepa_trends``, and ``jepa_640`` by
``scripts/jepa-sweep-640``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data.binding import SPLITS, BindingTask, binding_task, shuffle_atomic
from revlib.metrics import answer_rank, mean_reciprocal_rank
from revlib.models.jepa import (
    JEPA,
    JEPAConfig,
    check_sizes,
    resolve_concept_ln,
)
from revlib.train import History, train


NOTEBOOK = "binding/jepa"
CONTROLS = (
    no_training(
        "the live models keep their initial weights, and the stored runs are read at "
        "step 0"
    ),
    Control(
        "shuffled_labels",
        "science",
        "the answers of the live runs' atomic facts are permuted among themselves, so "
        "that no trained fact is the reverse of a held-out one",
        {"shuffle_atomic": True},
    ),
    Control(
        "swap_groups",
        "plumbing",
        "each comparison of two stored groups is made with the two groups exchanged",
        swaps=True,
    ),
    Control(
        "swap_norms",
        "science",
        "the concept norms are exchanged: JEPA 1/1 gets the memory script's LayerNorm "
        "(at its lr 3e-4), the memory layer the paper's JEPA default (RMS norm of the "
        "prediction only)",
        {
            "concept_ln": lambda cfg: "rms" if cfg.memory else "layernorm",
            "lr": lambda cfg: cfg.lr if cfg.memory else 3e-4,
        },
    ),
)
SIZE_KNOBS = ("N_A", "N_B", "STEPS")  # what check-claims --scale multiplies
QUICK: dict = {}  # CI's control runs: the default sizes


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Data as in :mod:`revlib.experiments.surface_names`; model: ``n_rec`` recognition
    and ``n_sem`` semantic blocks of width ``d_model``, or ``memory=True`` (top-1 memory
    layer as the recognition module). ``warmup_steps``: linear learning-rate warm-up,
    then constant (the paper's recipe: 2,000). ``concept_ln="auto"``: as the paper's
    scripts, parameter-free RMS norm of the prediction for JEPA, learnable LayerNorm on
    both sides with the memory layer. AdamW with ``lr``, ``weight_decay``,
    ``batch_size``, ``steps``. ``shuffle_atomic``: a control, the answers of the
    ``atomic`` facts are permuted among themselves (same entity type, same counts), so
    that no trained fact is the reverse of a held-out one (off: the data as stored).
    ``dedupe``: the same loss with each relation and ``<mask>`` concept computed once
    per batch (:meth:`revlib.models.jepa.JEPA.infonce`), 1.7-1.9 times faster at batch
    1024 and 1.2 at 128 on one core (``python -m revlib bench``); its round-off
    differs, so it is off by default, as the stored runs were made."""

    n_a: int = 400
    n_b: int = 240
    n_rel: int = 3
    multiplicity: int = 10
    n_rec: int = 1
    n_sem: int = 1
    d_model: int = 64
    n_head: int = 4
    memory: bool = False
    concept_ln: str = "auto"
    lr: float = 1e-3
    weight_decay: float = 0.1
    batch_size: int = 128
    steps: int = 2000
    warmup_steps: int = 0
    n_seeds: int = 3
    n_eval: int = 400
    eval_points: int = 6
    eval_spacing: str = "linear"
    shuffle_atomic: bool = False
    dedupe: bool = False

    OPTIMIZER = "adamw"

    def __post_init__(self):
        _validate.boolean("shuffle_atomic", self.shuffle_atomic)
        _validate.boolean("dedupe", self.dedupe)
        _validate.integer("n_a", self.n_a, 2, 10**6)
        _validate.integer("n_b", self.n_b, 2, 10**6)
        _validate.integer("n_rel", self.n_rel, 1, 100)
        # >= 1: two-token names, the patches of the JEPA chapter
        _validate.integer("multiplicity", self.multiplicity, 1, 1000)
        _validate.integer("n_eval", self.n_eval, 1, 10**6)
        check_sizes(self.n_rec, self.n_sem, self.d_model, self.n_head, self.memory)
        resolve_concept_ln(self.concept_ln, self.memory)
        super().__post_init__()  # seed, n_seeds; the optimiser's fields

    def model_config(self, vocab_size: int) -> JEPAConfig:
        ln = resolve_concept_ln(self.concept_ln, self.memory)
        return JEPAConfig(
            vocab_size=vocab_size,
            n_rec=self.n_rec,
            n_sem=self.n_sem,
            d_model=self.d_model,
            n_head=self.n_head,
            memory=self.memory,
            concept_ln=ln,
        )


@dataclass
class Result:
    """``history[f"{split}_acc"]`` and ``[f"{split}_mrr"]`` ``[E, S]``, ranked against
    the full table of entity concepts (not in-batch)."""

    config: Config
    task: BindingTask
    model: JEPA
    history: History

    def final(self, name: str) -> np.ndarray:
        return self.history.final(name)


def patches(
    task: BindingTask, split: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``([S, N, 4, 2] patches, [S, N, 4] last-token index, [S, N] target entity)``;
    ``<pad>`` is the id ``task.vocab_size``."""
    f = task.facts[split]
    S, N, _ = f.shape
    seeds = torch.arange(S)[:, None]
    pad = torch.full((S, N, 1), task.vocab_size)
    rel = torch.cat([(f[..., 1:2] + task.mask_token + 1), pad], -1)
    mask = torch.cat([torch.full((S, N, 1), task.mask_token), pad], -1)
    p = torch.stack(
        [task.names[seeds, f[..., 0]], rel, mask, task.names[seeds, f[..., 2]]], 2
    )
    last = torch.tensor([1, 0, 0, 1]).expand(S, N, 4)
    return p, last, f[..., 2]


def trainable_parameters(config: Config) -> int:
    """Trainable parameters of one seed's model of ``config`` (its vocabulary and
    memory keys built from its data): the count by which a wider model is matched to
    the memory layer (the paper's Figure 4: 61.1M against 61.4M)."""
    task = binding_task(
        config.n_a, config.n_b, config.n_rel, config.multiplicity, [config.seed]
    )
    model = JEPA(
        config.model_config(task.vocab_size + 1),
        1,
        memory_keys=task.memory_keys()[:1] if config.memory else None,
    )
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def run(config: Config) -> Result:
    """Train ``config.n_seeds`` JEPA models (one batched model) and evaluate them."""
    task = binding_task(
        config.n_a, config.n_b, config.n_rel, config.multiplicity, config.seeds
    )
    if config.shuffle_atomic:
        task = shuffle_atomic(task, config.seeds)
    S = config.n_seeds
    data = {k: patches(task, k) for k in SPLITS}
    tr = [torch.cat([data["train"][i], data["atomic"][i]], 1) for i in range(3)]
    mcfg = config.model_config(task.vocab_size + 1)
    model = JEPA(
        mcfg,
        S,
        seed=config.seed,
        memory_keys=task.memory_keys() if config.memory else None,
    )
    seeds_ix = torch.arange(S)[:, None]

    def loss(idx):
        return model.infonce(
            tr[0][seeds_ix, idx], tr[1][seeds_ix, idx], dedupe=config.dedupe
        )

    evaluated = {k: [t[:, : config.n_eval] for t in data[k]] for k in SPLITS}

    def evaluate():
        out = {}
        for k, (p, last, gold) in evaluated.items():
            rank = answer_rank(_scores(model, task, p, last), gold)  # ties: against
            out[f"{k}_acc"] = (rank == 1).float().mean(-1)
            out[f"{k}_mrr"] = mean_reciprocal_rank(rank)
        return out

    history = train(
        model,
        loss,
        config.train_config(),
        evaluate,
        n_train=tr[0].shape[1],
        n_seeds=S,
        batch_seeds=[s + 7_777 for s in config.seeds],
    )
    return Result(config=config, task=task, model=model, history=history)


def _scores(
    model: JEPA, task: BindingTask, p: torch.Tensor, last: torch.Tensor
) -> torch.Tensor:
    """``[S, N, E]``: each prediction scored against the concept vectors of all
    entities."""
    table = model.candidates(
        model.concepts(task.names, torch.ones(task.names.shape[:2], dtype=torch.long))
    )
    pred, _ = model(p, last)
    return pred @ table.transpose(1, 2)


def relation_blindness(
    result: Result, split: str = "train", n: int = 2000
) -> dict[str, np.ndarray]:
    """How a model gets the first ``n`` facts ``(h, r, t)`` of ``split`` wrong, per seed
    ``[S]``: ``correct``, the fraction whose top-1 answer is ``t``, and
    ``other_relation``, the fraction whose top-1 answer is a trained answer of the same
    head under another relation (a tail of ``h`` in ``train`` or ``atomic``). A model
    that knows each head's answers but ignores the relation picks among them at random:
    with ``k`` answers per head, ``other_relation`` is ``k - 1`` times ``correct`` (each
    entity of ``E_A`` is the head of one fact per relation pair, so ``k = n_rel`` on
    ``train``)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    _validate.integer("n", n, 1, None)
    task, model = result.task, result.model
    S, E = task.names.shape[:2]
    p, last, gold = (t[:, :n] for t in patches(task, split))
    with torch.no_grad():
        top = _scores(model, task, p, last).argmax(-1)  # [S, N]
    known = torch.zeros(S, E, E, dtype=torch.bool)  # [S, head, tail]
    seeds = torch.arange(S)[:, None]
    for k in ("train", "atomic"):
        f = task.facts[k]
        known[seeds, f[..., 0], f[..., 2]] = True
    heads = task.facts[split][:, :n, 0]
    other = known[seeds, heads, top] & (top != gold)
    return {
        "correct": (top == gold).float().mean(-1).numpy(),
        "other_relation": other.float().mean(-1).numpy(),
    }
