"""Chapter "The one-layer transformer": the reparameterised model trained in ``(Y, Z)``
and an actual one-layer transformer with frozen embeddings, on the same reversal
data."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data import shuffle_answers
from revlib.data.reversal import ReversalTask, reversal_task, typed_reversal_task
from revlib.models.reparam import EMBEDDINGS, OneLayer, Reparam, nll
from revlib.theory import one_layer as theory
from revlib.train import History, TrainConfig, train

NOTEBOOK = "reversal/one_layer"
# The notebook's controls (its CONTROL), each with the Config change it makes.
CONTROLS = (
    Control(
        "reverse_in_training",
        "science",
        "the held-out backward sentences are trained too",
        {"reverse_in_training": True},
    ),
    Control(
        "shuffled_labels",
        "science",
        "every training sentence is answered with another sentence's answer (a "
        "derangement), so no measured pair is trained",
        {"shuffled_labels": True},
    ),
    no_training("the models keep their start"),
)
SIZE_KNOBS = ("M", "N_PAIRS", "N_HELDOUT", "D")  # what check-claims --scale multiplies
QUICK = {"N_SEEDS": 2}  # CI's control runs


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """``M`` vocabulary (2 relation tokens + entities), ``n`` pairs, ``n_heldout`` pairs
    whose backward sentence is held out. The reparameterised model trains ``steps``
    full-batch GD steps of size ``lr`` from ``Y = Z = 0``; the transformer (``d``,
    ``embedding``, ``init_std`` of ``W_Q, W_K``; ``W_V`` starts at zero) trains
    ``tf_steps`` GD steps of size ``tf_lr``.

    Three controls (the notebook's ``CONTROL``), all off by default:
    ``reverse_in_training`` also trains the held-out backward sentences (still evaluated
    as held out: a "not learnt" claim must then fail); ``shuffled_labels`` gives every
    training sentence another sentence's answer (:func:`revlib.data.shuffle_answers`: a
    "learnt" claim must then fail); ``no_training``
    (:func:`revlib.config.no_training`) makes no optimiser step, so every model keeps
    its initial weights."""

    M: int = 200
    n: int = 60
    n_heldout: int = 20
    n_seeds: int = 3
    lr: float = 100.0
    steps: int = 300
    d: int = 128
    embedding: str = "gaussian"
    init_std: float = 0.1
    tf_lr: float = 8.0
    tf_steps: int = 600
    eval_points: int = 40
    reverse_in_training: bool = False
    shuffled_labels: bool = False

    OPTIMIZER = "gd"

    def __post_init__(self):
        _validate.integer("M", self.M, 6, 5_000)
        _validate.integer("n", self.n, 2, (self.M - 2) // 2)
        _validate.integer("n_heldout", self.n_heldout, 1, self.n - 1)
        _validate.integer("d", self.d, 1, 4096)
        _validate.choice("embedding", self.embedding, EMBEDDINGS)
        if self.embedding == "orthonormal" and self.d < self.M:
            raise ValueError(
                f"d must be >= M={self.M} for orthonormal embeddings, got {self.d}"
            )
        _validate.real("init_std", self.init_std, 0.0, 10.0)
        _validate.boolean("reverse_in_training", self.reverse_in_training)
        _validate.boolean("shuffled_labels", self.shuffled_labels)
        # the transformer's optimiser fields, under their own names
        _validate.real("tf_lr", self.tf_lr, 0.0, 1e4, lo_open=True)
        _validate.integer("tf_steps", self.tf_steps, 1, 10**7)
        super().__post_init__()  # seed, n_seeds; steps, lr, eval_points

    def tf_train_config(self) -> TrainConfig:
        return TrainConfig(
            steps=self.tf_steps,
            lr=self.tf_lr,
            eval_points=self.eval_points,
            no_training=self.no_training,
        )


@dataclass
class Result:
    """``history`` (reparameterised model) and ``tf_history`` (transformer) hold,
    ``[E, S]``: ``forward_p`` (mean p(B_i | A_i ->)), ``backward_p`` (trained backward
    sentences), ``heldout_p`` and ``heldout_p_max`` (p(A_i | B_i <-) over held-out
    pairs), ``Y_AB`` (mean Y[A_i, B_i]) and ``Y_BA_heldout`` (largest |Y[B_i, A_i]| over
    held-out pairs). ``Y``, ``tf_Y``: final (effective) ``Y`` ``[S, M, M]``."""

    config: Config
    task: ReversalTask
    history: History
    tf_history: History
    Y: np.ndarray
    tf_Y: np.ndarray
    tf_Z_change: np.ndarray

    @property
    def log_M(self) -> float:
        return math.log(self.config.M)

    def predicted(self, time: np.ndarray) -> dict[str, np.ndarray]:
        """Gradient-flow prediction of ``Y[A_i, B_i]`` and ``p(B_i | A_i ->)`` at
        ``time``."""
        return theory.forward_flow(
            time, self.config.M, self.config.n, self.task.n_train
        )

    def blocks(self, Y: np.ndarray, seed_index: int = 0) -> dict[str, np.ndarray]:
        """Effective-weight blocks of one seed: ``forward`` ``Y[A_i, B_j]`` and
        ``backward`` ``Y[B_i, A_j]`` ``[n, n]``; rows ``i < n_heldout`` are the held-out
        pairs."""
        a, b = self.task.a[seed_index].numpy(), self.task.b[seed_index].numpy()
        Ys = Y[seed_index]
        return {"forward": Ys[np.ix_(a, b)], "backward": Ys[np.ix_(b, a)]}


def _evaluate(model, task: ReversalTask, Y_of, extra=None):
    """The one evaluation of a model: ``{name: [S]}``, plus ``extra()``'s metrics."""
    n, k = task.a.shape[1], task.n_heldout
    s = torch.arange(task.n_seeds)[:, None]

    def p_of(ctx, query, target):
        return torch.exp(-nll(model(ctx, query), target))

    def evaluate():
        train_p = p_of(task.train_ctx, task.train_query, task.train_target)
        heldout_p = p_of(task.heldout_ctx, task.heldout_query, task.heldout_target)
        Y = Y_of()
        return {
            "forward_p": train_p[:, :n].mean(dim=1),
            "backward_p": train_p[:, n:].mean(dim=1),
            "heldout_p": heldout_p.mean(1),
            "heldout_p_max": heldout_p.amax(1),
            "Y_AB": Y[s, task.a, task.b].mean(dim=1),
            "Y_BA_heldout": Y[s, task.b[:, :k], task.a[:, :k]].abs().amax(dim=1),
            **(extra() if extra else {}),
        }

    return evaluate


def _controlled(task: ReversalTask, config: Config) -> ReversalTask:
    """The task as the control wants it: with ``reverse_in_training`` the held-out
    backward sentences are appended to the training sentences (and stay the held-out
    set); with ``shuffled_labels`` every training sentence gets another one's answer."""
    if config.reverse_in_training:
        task = dataclasses.replace(
            task,
            train_ctx=torch.cat([task.train_ctx, task.heldout_ctx], dim=1),
            train_query=torch.cat([task.train_query, task.heldout_query], dim=1),
            train_target=torch.cat([task.train_target, task.heldout_target], dim=1),
        )
    if config.shuffled_labels:
        task = dataclasses.replace(
            task, train_target=shuffle_answers(task.train_target, config.seeds)
        )
    return task


def _loss_of(model, task: ReversalTask, config: Config):
    return lambda idx: nll(
        model(task.train_ctx, task.train_query), task.train_target
    ).mean(dim=1)


def run(config: Config) -> Result:
    """Train both models on the reversal task, ``config.n_seeds`` seeds at once."""
    task = _controlled(
        reversal_task(config.M, config.n, config.n_heldout, config.seeds), config
    )
    S = task.n_seeds

    def loss_of(model):
        return _loss_of(model, task, config)

    reparam = Reparam(S, config.M)
    history = train(
        reparam,
        loss_of(reparam),
        config.train_config(),
        _evaluate(reparam, task, lambda: reparam.Y),
        n_seeds=S,
    )
    tf = OneLayer(
        S, config.M, config.d, config.embedding, config.init_std, seed=config.seed
    )
    Z0 = tf.effective_Z().detach().clone()
    tf_history = train(
        tf,
        loss_of(tf),
        config.tf_train_config(),
        _evaluate(tf, task, tf.effective_Y),
        n_seeds=S,
    )
    with torch.no_grad():
        Z_change = (tf.effective_Z() - Z0).abs().amax(dim=(1, 2))
        return Result(
            config=config,
            task=task,
            history=history,
            tf_history=tf_history,
            Y=reparam.Y.detach().numpy().copy(),
            tf_Y=tf.effective_Y().numpy(),
            tf_Z_change=Z_change.numpy(),
        )


@dataclass
class TypedResult:
    """The ``T = 3`` run (two-token entities "A_i a", "B_i b"; reparameterised model
    only). ``history`` holds, ``[E, S]``, the evals of :class:`Result` plus
    ``attention_unique`` (mean attention of the query on the unique entity token,
    training sentences), ``Z_BA_heldout`` (largest ``|Z[<-, B_i]|`` over held-out
    pairs)."""

    config: Config
    task: ReversalTask
    history: History


def run_typed(config: Config) -> TypedResult:
    """``T = 3``: the query attends over two context tokens, so ``Z`` moves. Log-spaced
    evals, since the attention concentrates within the first few steps."""
    task = _controlled(
        typed_reversal_task(config.M, config.n, config.n_heldout, config.seeds), config
    )
    S, k = task.n_seeds, task.n_heldout
    model = Reparam(S, config.M)
    s1, s2 = torch.arange(S)[:, None], torch.arange(S)[:, None, None]

    def attention_unique():
        scores = model.Z[s2, task.train_query[..., None], task.train_ctx]  # [S, N, 2]
        return torch.softmax(scores, dim=-1)[..., 0].mean(dim=1)

    def extra():
        return {
            "attention_unique": attention_unique(),
            "Z_BA_heldout": model.Z[s1, task.heldout_query, task.b[:, :k]]
            .abs()
            .amax(1),
        }

    cfg = dataclasses.replace(config.train_config(), eval_spacing="log")
    history = train(
        model,
        _loss_of(model, task, config),
        cfg,
        _evaluate(model, task, lambda: model.Y, extra),
        n_seeds=S,
    )
    return TypedResult(config=config, task=task, history=history)
