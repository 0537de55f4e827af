"""Chapter "Chain-of-thought and intransitivity": the chain task in the reparameterised
one-layer model and in a small causal transformer, and the correlated-token variant."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data import shuffle_last_tokens
from revlib.data.chains import DIRECT, INDIRECT, ChainTask, chain_task, related_task
from revlib.models.reparam import Reparam, nll
from revlib.models.transformer import Transformer, TransformerConfig, check_shape
from revlib.train import History, TrainConfig, train

NOTEBOOK = "reversal/chain_of_thought"
# The notebook's controls (its CONTROL), each with the Config change it makes.
CONTROLS = (
    no_training("every model keeps its initial weights"),
    Control(
        "transitive_in_training",
        "science",
        "the held-out A_i ~> C_i facts are trained too (the answer given)",
        {"heldout_in_training": True},
    ),
    Control(
        "shuffled_labels",
        "science",
        "every training sentence is answered with another sentence's answer (a "
        "derangement), so no measured one-hop fact is trained",
        {"shuffled_labels": True},
    ),
)
# what check-claims --scale multiplies
SIZE_KNOBS = (
    "VOCAB",
    "N_TRIPLES",
    "N_HELDOUT",
    "ALPHABET",
    "RELATED_TRAIN",
    "RELATED_HELDOUT",
)
QUICK = {"N_SEEDS": 1}  # CI's control runs


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Chain task: ``vocab_size`` (2 relation tokens + entities), ``n`` triples,
    ``n_heldout`` whose "A ~> C" is held out. Reparameterised model: ``steps`` GD steps
    of size ``lr`` from ``Y = Z = 0``. Transformer (``n_layer``, ``d_model``,
    ``n_head``; LayerNorm, MLP, absolute positions, learned embeddings as in the paper's
    GPT-2): AdamW at ``tf_lr`` with weight decay ``weight_decay`` and ``batch_size`` for
    ``epochs`` epochs. Correlated-token variant: ``alphabet`` index tokens,
    ``related_train`` / ``related_heldout`` triples, ``related_epochs`` epochs (``0``
    skips it). Controls: ``heldout_in_training`` trains the held-out "A_i ~> C_i" too
    (the answer given; the correlated-token variant likewise); ``shuffled_labels``
    gives every training sentence another sentence's answer
    (:func:`revlib.data.shuffle_answers`; the correlated-token variant likewise: its
    two answer tokens move together); ``no_training`` keeps
    every model at its initial weights (no optimiser step)."""

    vocab_size: int = 302
    n: int = 100
    n_heldout: int = 30
    n_seeds: int = 3
    lr: float = 100.0
    steps: int = 400
    n_layer: int = 2
    d_model: int = 64
    n_head: int = 4
    tf_lr: float = 0.01
    weight_decay: float = 0.01
    batch_size: int = 64
    epochs: int = 100
    alphabet: int = 200
    related_train: int = 100
    related_heldout: int = 50
    related_epochs: int = 80
    eval_points: int = 30
    heldout_in_training: bool = False
    shuffled_labels: bool = False

    OPTIMIZER = "gd"  # the reparameterised model's; the transformer's: tf_train_config

    def __post_init__(self):
        _validate.integer("vocab_size", self.vocab_size, 8, 100_000)
        _validate.integer("n", self.n, 2, (self.vocab_size - 2) // 3)
        _validate.integer("n_heldout", self.n_heldout, 1, self.n - 1)
        _validate.integer("epochs", self.epochs, 1, 100_000)
        _validate.integer("alphabet", self.alphabet, 2, 100_000)
        _validate.integer("related_train", self.related_train, 1, self.alphabet - 1)
        _validate.integer(
            "related_heldout",
            self.related_heldout,
            1,
            self.alphabet - self.related_train,
        )
        _validate.integer("related_epochs", self.related_epochs, 0, 100_000)
        _validate.boolean("heldout_in_training", self.heldout_in_training)
        _validate.boolean("shuffled_labels", self.shuffled_labels)
        check_shape(self.n_layer, self.n_head, self.d_model)
        _validate.real("tf_lr", self.tf_lr, 0.0, 1e4, lo_open=True)
        _validate.real("weight_decay", self.weight_decay, 0.0, 10.0)
        self.tf_train_config(2 * self.n + self.n - self.n_heldout, self.epochs)
        super().__post_init__()  # seed, n_seeds; steps, lr, eval_points

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            steps=self.steps,
            lr=self.lr,
            eval_points=self.eval_points,
            no_training=self.no_training,
        )

    def tf_train_config(self, n_train: int, epochs: int) -> TrainConfig:
        _validate.integer("batch_size", self.batch_size, 1, n_train)
        steps = max(1, epochs * (n_train // self.batch_size))
        return TrainConfig(
            steps=steps,
            lr=self.tf_lr,
            optimizer="adamw",
            batch_size=self.batch_size,
            weight_decay=self.weight_decay,
            eval_points=self.eval_points,
            no_training=self.no_training,
        )


@dataclass
class ModelResult:
    """One model on the chain task. ``history`` ``[E, S]``: ``p_AB``, ``p_BC``,
    ``p_AC_train``, ``p_AC_heldout`` (mean answer probabilities), ``nll_train`` (mean
    answer NLL over training sentences), ``nll_heldout`` (mean NLL of the held-out
    "A_i ~> C_i"). ``blocks[name]``: ``[S, n, n]`` answer logits after "A_i ->" over
    ``B_j`` (``"B|A"``), after "B_i ->" over ``C_j`` (``"C|B"``), after "A_i ~>" over
    ``C_j`` (``"C|A"``); rows ``i < n_heldout`` are the held-out triples.
    ``two_step_acc``, ``direct_acc``: ``[S]`` greedy accuracies on held-out triples of
    "A -> B^, B^ -> C^" and of "A ~> C^"."""

    history: History
    blocks: dict[str, np.ndarray]
    two_step_acc: np.ndarray
    direct_acc: np.ndarray


@dataclass
class Result:
    config: Config
    task: ChainTask
    reparam: ModelResult
    transformer: ModelResult
    reparam_Y_AC_heldout: (
        np.ndarray
    )  # [E, S]: largest Y[A_i, C_i] over held-out triples
    related: History | None  # two-token NLLs of the correlated-token variant
    related_task: ChainTask | None

    @property
    def log_V(self) -> float:
        return math.log(self.config.vocab_size)


def _gather(seq: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
    return (
        seq
        if idx is None
        else seq.gather(1, idx[..., None].expand(-1, -1, seq.shape[-1]))
    )


def _answer_logits_fn(model, kind: str):
    """``logits(entity [S, B], relation) -> [S, B, V]``: the next-token logits after
    "entity rel"."""
    if kind == "reparam":
        return lambda ent, rel: model(ent[..., None], torch.full_like(ent, rel))
    return lambda ent, rel: model(
        torch.stack([ent, torch.full_like(ent, rel)], dim=-1)
    )[:, :, 1]


def _evaluate(logits, task: ChainTask, history: History) -> ModelResult:
    a, b, c, k = task.a, task.b, task.c, task.n_heldout
    with torch.no_grad():
        lab, lbc, lac = logits(a, DIRECT), logits(b, DIRECT), logits(a, INDIRECT)
        blocks = {
            "B|A": torch.gather(lab, 2, b[:, None, :].expand(-1, a.shape[1], -1)),
            "C|B": torch.gather(lbc, 2, c[:, None, :].expand(-1, a.shape[1], -1)),
            "C|A": torch.gather(lac, 2, c[:, None, :].expand(-1, a.shape[1], -1)),
        }
        b_hat = logits(a[:, :k], DIRECT).argmax(-1)
        c_hat = logits(b_hat, DIRECT).argmax(-1)
        two = (c_hat == c[:, :k]).float().mean(1)
        direct = (logits(a[:, :k], INDIRECT).argmax(-1) == c[:, :k]).float().mean(1)
    return ModelResult(
        history=history,
        blocks={key: v.numpy() for key, v in blocks.items()},
        two_step_acc=two.numpy(),
        direct_acc=direct.numpy(),
    )


def _evaluator(logits, task: ChainTask, extra=None):
    """The one evaluation of a model: ``{name: [S]}`` (plus ``extra()``'s metrics)."""
    a, b, c, k = task.a, task.b, task.c, task.n_heldout

    def p(ent, rel, ans):
        return torch.exp(-nll(logits(ent, rel), ans))

    def nll_of(seq):
        return nll(_seq_logits(logits, seq), seq[..., 2]).mean(1)

    def evaluate():
        return {
            "p_AB": p(a, DIRECT, b).mean(1),
            "p_BC": p(b, DIRECT, c).mean(1),
            "p_AC_train": p(a[:, k:], INDIRECT, c[:, k:]).mean(1),
            "p_AC_heldout": p(a[:, :k], INDIRECT, c[:, :k]).mean(1),
            "nll_train": nll_of(task.train),
            "nll_heldout": nll_of(task.heldout),
            **(extra() if extra else {}),
        }

    return evaluate


def _seq_logits(logits, seq: torch.Tensor) -> torch.Tensor:
    """Answer logits ``[S, N, V]`` of three-token sentences ``[S, N, 3]`` (mixed
    relations)."""
    out = logits(seq[..., 0], DIRECT)
    ind = logits(seq[..., 0], INDIRECT)
    return torch.where((seq[..., 1] == INDIRECT)[..., None], ind, out)


def _related_nll(
    model: Transformer, seq: torch.Tensor, first_only: bool = False
) -> torch.Tensor:
    """Answer-word NLL ``[S, N]`` of five-token sentences:
    ``-log p(t3 | t0..t2) - log p(t4 | t0..t3)``."""
    logp = torch.log_softmax(model(seq[..., :4])[:, :, 2:4], dim=-1)
    tok = torch.gather(logp, 3, seq[..., 3:5, None]).squeeze(-1)  # [S, N, 2]
    return -(tok[..., 0] if first_only else tok.sum(-1))


def _controlled(task: ChainTask, config: Config, width: int) -> ChainTask:
    """With ``shuffled_labels``, every training sentence's answer (its last ``width``
    tokens) is another sentence's."""
    if not config.shuffled_labels:
        return task
    shuffled = shuffle_last_tokens(task.train, width, config.seeds)
    return dataclasses.replace(task, train=shuffled)


def run(config: Config) -> Result:
    """Train the reparameterised model, the transformer and (optionally) the
    correlated-token variant, ``config.n_seeds`` seeds at once."""
    task = chain_task(
        config.vocab_size,
        config.n,
        config.n_heldout,
        config.seeds,
        heldout_in_training=config.heldout_in_training,
    )
    task = _controlled(task, config, 1)
    S, V = task.n_seeds, config.vocab_size
    k = task.n_heldout
    s = torch.arange(S)[:, None]

    # the reparameterised model, full-batch GD from Y = Z = 0
    reparam = Reparam(S, V)
    rlog = _answer_logits_fn(reparam, "reparam")
    rhist = train(
        reparam,
        lambda idx: nll(_seq_logits(rlog, task.train), task.train[..., 2]).mean(1),
        config.train_config(),
        _evaluator(
            rlog,
            task,
            lambda: {
                "Y_AC_heldout": reparam.Y[s, task.a[:, :k], task.c[:, :k]].amax(1)
            },
        ),
        n_seeds=S,
    )
    reparam_res = _evaluate(rlog, task, rhist)

    # the small causal transformer, AdamW on minibatches (the paper's optimiser)
    tcfg = TransformerConfig(
        vocab_size=V,
        block_size=2,
        n_layer=config.n_layer,
        n_head=config.n_head,
        d_model=config.d_model,
    )
    tf = Transformer(tcfg, S, seed=config.seed)
    tlog = _answer_logits_fn(tf, "transformer")

    def tf_loss(idx):
        seq = _gather(task.train, idx)
        return nll(_seq_logits(tlog, seq), seq[..., 2]).mean(1)

    thist = train(
        tf,
        tf_loss,
        config.tf_train_config(task.n_train, config.epochs),
        _evaluator(tlog, task),
        n_train=task.n_train,
        n_seeds=S,
        batch_seeds=[x + 104_729 for x in config.seeds],
    )
    tf.eval()
    tf_res = _evaluate(tlog, task, thist)

    related, rtask = None, None
    if config.related_epochs:
        rtask = related_task(
            config.alphabet,
            config.related_train,
            config.related_heldout,
            config.seeds,
            heldout_in_training=config.heldout_in_training,
        )
        rtask = _controlled(rtask, config, 2)
        rcfg = TransformerConfig(
            vocab_size=rtask.vocab_size,
            block_size=4,
            n_layer=config.n_layer,
            n_head=config.n_head,
            d_model=config.d_model,
        )
        rel = Transformer(rcfg, S, seed=config.seed + 7_919)

        def rel_loss(idx):
            # mean per answer token
            return _related_nll(rel, _gather(rtask.train, idx)).mean(1) / 2

        related = train(
            rel,
            rel_loss,
            config.tf_train_config(rtask.n_train, config.related_epochs),
            lambda: {
                "word_nll_train": _related_nll(rel, rtask.train).mean(1),
                "word_nll_heldout": _related_nll(rel, rtask.heldout).mean(1),
                "first_nll_heldout": _related_nll(rel, rtask.heldout, True).mean(1),
                "word_nll_heldout_max": _related_nll(rel, rtask.heldout).amax(1),
            },
            n_train=rtask.n_train,
            n_seeds=S,
            batch_seeds=[x + 7 for x in config.seeds],
        )
    return Result(
        config=config,
        task=task,
        reparam=reparam_res,
        transformer=tf_res,
        reparam_Y_AC_heldout=rhist["Y_AC_heldout"],
        related=related,
        related_task=rtask,
    )
