"""Chapter "Parametric forward-chaining for arithmetic": the standard transformer of
:mod:`revlib.experiments.surface_names` and the JEPA of :mod:`revlib.experiments.jepa`,
trained on the facts of :mod:`revlib.data.arithmetic` and probed on the values of
never-trained chain variables (``shape="chain"``) or problem-tree nodes
(``shape="tree"``, the paper's Section 4 problems).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data.arithmetic import (
    ArithmeticTask,
    arithmetic_task,
    arithmetic_tree_task,
)
from revlib.metrics import masked_mean, name_metrics
from revlib.models.jepa import (
    JEPA,
    JEPAConfig,
    check_sizes,
    infonce_loss,
    resolve_concept_ln,
)
from revlib.models.transformer import (
    Transformer,
    TransformerConfig,
    answer_loss,
    check_shape,
)
from revlib.train import History, train

MODELS = ("standard", "jepa", "jepa_memory")
SHAPES = ("chain", "tree")


NOTEBOOK = "binding/arithmetic"
CONTROLS = (
    Control(
        "probes_in_training",
        "science",
        "the live models also train the probed facts (the values of the chain "
        "variables)",
        {"probes_in_training": True},
    ),
    Control(
        "swap_stored",
        "plumbing",
        "the stored runs are read swapped: JEPA + memory as the standard model and 16 "
        "core entities per value as 4",
        swaps=True,
    ),
    no_training("the live runs keep their initial weights"),
)
SIZE_KNOBS = ("PER_VALUE", "N_CHAINS", "STEPS")  # what check-claims --scale multiplies
# CI's control runs: the claims that swap_stored and no_training must break read the
# stored runs and the live re-run (LIVE_STEPS), not the live run of STEPS steps
QUICK = {"swap_stored": {"STEPS": 20}, "no_training": {"STEPS": 20}}


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Data: values mod ``modulus``, ``per_value`` core entities per value, ``n_chains``
    chains of ``chain_len`` variables, ``core_frac`` of the core sums trained.
    ``shape="tree"``: instead, ``n_chains`` problem trees
    (:func:`revlib.data.arithmetic.arithmetic_tree_task`) of branching factor
    ``branching``, distractor rate ``drop_prob`` and ``core_links`` core links per
    bridge-2 node (``chain_len`` is unused). Model:
    ``"standard"`` (``n_layer`` blocks), ``"jepa"`` (#Rec ``n_rec`` / #Sem ``n_sem``) or
    ``"jepa_memory"`` (the paper's JEPA with memory: the top-1 memory layer of
    :mod:`revlib.models.jepa` as the recognition module, one key per token, then
    ``n_sem`` semantic blocks), width ``d_model``. ``concept_ln="auto"``: as
    :class:`revlib.experiments.jepa.Config` (RMS norm of the prediction for JEPA,
    learnable LayerNorm on both sides with the memory layer). AdamW with ``lr``,
    ``weight_decay``, ``batch_size``, ``steps``. ``probes_in_training`` (a control): the
    probes (the attribute facts of the chain variables or tree nodes) are trained too,
    so a test that reads "not solved" must fail."""

    model: str = "standard"
    modulus: int = 23
    per_value: int = 4
    n_chains: int = 60
    chain_len: int = 3
    core_frac: float = 0.3
    shape: str = "chain"
    branching: int = 10
    drop_prob: float = 0.6
    core_links: int = 6
    n_layer: int = 2
    n_rec: int = 1
    n_sem: int = 1
    d_model: int = 64
    n_head: int = 4
    concept_ln: str = "auto"
    lr: float = 3e-3
    weight_decay: float = 0.1
    batch_size: int = 128
    steps: int = 1000
    n_seeds: int = 2
    n_eval: int = 1000
    eval_points: int = 6
    probes_in_training: bool = False

    OPTIMIZER = "adamw"

    def __post_init__(self):
        _validate.boolean("probes_in_training", self.probes_in_training)
        _validate.choice("model", self.model, MODELS)
        _validate.integer("modulus", self.modulus, 3, 10**5)
        _validate.integer("per_value", self.per_value, 1, 1000)
        _validate.integer("n_chains", self.n_chains, 1, 10**5)
        _validate.integer("chain_len", self.chain_len, 1, 100)
        _validate.real("core_frac", self.core_frac, 0.0, 1.0)
        _validate.choice("shape", self.shape, SHAPES)
        _validate.integer("branching", self.branching, 1, 100)
        _validate.real("drop_prob", self.drop_prob, 0.0, 1.0, hi_open=True)
        _validate.integer("core_links", self.core_links, 1, 100)
        _validate.integer("n_layer", self.n_layer, 1, 32)
        _validate.integer("n_eval", self.n_eval, 1, 10**6)
        check_shape(self.n_layer, self.n_head, self.d_model, "none")
        memory = self.model == "jepa_memory"
        check_sizes(self.n_rec, self.n_sem, self.d_model, self.n_head, memory)
        resolve_concept_ln(self.concept_ln, memory)
        super().__post_init__()  # seed, n_seeds; the optimiser's fields

    def jepa_config(self, vocab_size: int) -> JEPAConfig:
        memory = self.model == "jepa_memory"
        return JEPAConfig(
            vocab_size=vocab_size,
            patch_len=1,
            n_rec=self.n_rec,
            n_sem=self.n_sem,
            d_model=self.d_model,
            n_head=self.n_head,
            memory=memory,
            concept_ln=resolve_concept_ln(self.concept_ln, memory),
        )


@dataclass
class Result:
    """``history``: ``train_acc`` (trained facts), ``probe_acc`` (all chain variables),
    ``forward_acc`` / ``reverse_acc`` (variables reached by forward steps only / needing
    a reverse step), each ``[E, S]``. ``probe_correct``: ``[S, n_probes]`` final
    per-probe correctness (every probe, derivable or not).

    Trees: ``probe_acc``, ``forward_acc``, ``reverse_acc`` and :meth:`by_depth` count
    only the derivable probes (``task.derivable``: a value that no complete path from
    the core values reaches cannot be composed, so it would only dilute them);
    ``x_acc`` is the accuracy on the targets ``X`` alone (depth 3, all derivable) and
    ``underivable_acc`` on the probes that are not derivable (a chance-level
    reference, 0 where a seed has none, as every group of
    :func:`revlib.metrics.masked_mean`)."""

    config: Config
    task: ArithmeticTask
    model: torch.nn.Module
    history: History
    probe_correct: np.ndarray

    def final(self, name: str) -> np.ndarray:
        return self.history.final(name)

    def by_depth(self, reverse: bool) -> np.ndarray:
        """``[S, K]`` final accuracy on derivable probes at depth ``k = 1..K`` (chain
        size; tree level, ``K = 3``, 3 for ``X``) that need (``reverse=True``) or do not
        need a reverse step; NaN where a seed has none."""
        K = self.task.chain_len
        out = np.full((self.config.n_seeds, K), np.nan)
        d, r = self.task.depth.numpy(), self.task.reverse.numpy()
        ok = self.task.derivable.numpy()
        for s in range(self.config.n_seeds):
            for k in range(1, K + 1):
                sel = (d[s] == k) & (r[s] == reverse) & ok[s]
                if sel.any():
                    out[s, k - 1] = self.probe_correct[s, sel].mean()
        return out


def _group_means(
    correct: torch.Tensor, reverse: torch.Tensor
) -> dict[str, torch.Tensor]:
    """``correct``, ``reverse`` ``[S, N]`` -> accuracy overall, forward-only, with a
    reverse step."""
    c = correct.float()
    return {
        "probe_acc": c.mean(-1),
        "forward_acc": masked_mean(c, ~reverse, dim=-1),
        "reverse_acc": masked_mean(c, reverse, dim=-1),
    }


def _tree_means(correct: torch.Tensor, task: ArithmeticTask) -> dict[str, torch.Tensor]:
    """``correct`` ``[S, N]`` -> the groups of :func:`_group_means` over the derivable
    probes, ``x_acc`` (the targets ``X``) and ``underivable_acc``."""
    c, ok, rev = correct.float(), task.derivable, task.reverse
    return {
        "probe_acc": masked_mean(c, ok, dim=-1),
        "forward_acc": masked_mean(c, ok & ~rev, dim=-1),
        "reverse_acc": masked_mean(c, ok & rev, dim=-1),
        "x_acc": masked_mean(c, task.depth == 3, dim=-1),
        "underivable_acc": masked_mean(c, ~ok, dim=-1),
    }


def task(config: Config) -> ArithmeticTask:
    """The facts and probes a run of ``config`` trains and tests (chains or the paper's
    problem trees, after ``config.shape``), one set per seed of ``config.seeds``: what a
    notebook reads a stored run's task from (``task(records.config_of(row))``)."""
    if config.shape == "tree":
        return arithmetic_tree_task(
            config.modulus,
            config.per_value,
            config.n_chains,
            config.branching,
            config.core_frac,
            config.drop_prob,
            config.core_links,
            config.seeds,
        )
    return arithmetic_task(
        config.modulus,
        config.per_value,
        config.n_chains,
        config.chain_len,
        config.core_frac,
        config.seeds,
    )


def run(config: Config) -> Result:
    """Train ``config.n_seeds`` models of kind ``config.model`` (one batched model),
    evaluate."""
    facts = task(config)
    S, P = config.n_seeds, facts.modulus
    seeds_ix = torch.arange(S)[:, None]
    train_seqs = facts.sequences(facts.train)  # [S, N, 4]
    eval_train, probes = train_seqs[:, : config.n_eval], facts.sequences(facts.probes)
    if config.probes_in_training:
        train_seqs = torch.cat([train_seqs, probes], 1)
    n_out = facts.eq_token  # answers are values or entities, never <=> or <mask>

    if config.model == "standard":
        model = Transformer(
            TransformerConfig(
                vocab_size=facts.vocab_size,
                block_size=4,
                n_layer=config.n_layer,
                n_head=config.n_head,
                d_model=config.d_model,
                positional="none",
                tied=True,
            ),
            n_seeds=S,
            seed=config.seed,
        )
        target = torch.tensor([False, False, True])  # only <mask> predicts (the answer)

        def loss(idx):
            x = train_seqs[seeds_ix, idx]
            return answer_loss(
                model(x[..., :-1]), x[..., 1:], target.expand(*x.shape[:2], 3)
            )

        def train_acc():
            return name_metrics(model, eval_train, 1, n_out)[0]

        def probe_correct():
            logits = model(probes[..., :-1])[..., 2, :P]  # ranked among values
            return logits.argmax(-1) == probes[..., 3]
    else:
        # one memory key per token (values, entities, <=>, <mask>): every patch is one
        # token
        keys = torch.arange(facts.vocab_size).expand(S, -1)[..., None]
        model = JEPA(
            config.jepa_config(facts.vocab_size + 1),
            S,
            seed=config.seed,
            memory_keys=keys if config.model == "jepa_memory" else None,
        )
        last = torch.zeros(train_seqs.shape, dtype=torch.long)

        def loss(idx):
            pred, c = model(train_seqs[seeds_ix, idx][..., None], last[seeds_ix, idx])
            return infonce_loss(pred, c)

        def predict_rank(seqs, n_tokens):
            """Rank the predicted concept against the concepts of tokens
            ``[0, n_tokens)``."""
            toks = torch.arange(n_tokens).expand(S, -1)
            table = model.candidates(
                model.concepts(toks[..., None], torch.zeros_like(toks))
            )
            pred, _ = model(seqs[..., None], torch.zeros_like(seqs))
            return (pred @ table.transpose(1, 2)).argmax(-1) == seqs[..., 3]

        def train_acc():
            return predict_rank(eval_train, n_out).float().mean(-1)

        def probe_correct():
            return predict_rank(probes, P)

    def evaluate():
        if config.shape == "tree":
            return {"train_acc": train_acc(), **_tree_means(probe_correct(), facts)}
        return {
            "train_acc": train_acc(),
            **_group_means(probe_correct(), facts.reverse),
        }

    history = train(
        model,
        loss,
        config.train_config(),
        evaluate,
        n_train=train_seqs.shape[1],
        n_seeds=S,
        batch_seeds=[s + 7_777 for s in config.seeds],
    )
    with torch.no_grad():
        final = probe_correct().numpy()
    return Result(
        config=config, task=facts, model=model, history=history, probe_correct=final
    )
