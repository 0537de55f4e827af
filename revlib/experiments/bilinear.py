"""Chapter "The bilinear model": train ``x^T Theta y`` on the reversal data, several
seeds at once."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate, repro
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data import shuffle_answers
from revlib.data.bilinear import BilinearTask, bilinear_task
from revlib.models.bilinear import Bilinear
from revlib.theory import bilinear as theory
from revlib.train import History, train

NOTEBOOK = "reversal/bilinear"
# The notebook's controls (its CONTROL), each with the Config change it makes.
CONTROLS = (
    Control(
        "reverse_in_training",
        "science",
        "the held-out reverse facts are trained too",
        {"reverse_in_training": True},
    ),
    Control(
        "shuffled_labels",
        "science",
        "every training fact is answered with another fact's answer (a derangement), "
        "so no measured pair is trained",
        {"shuffled_labels": True},
    ),
    no_training("Theta keeps its start"),
)
SIZE_KNOBS = ("M", "N_PAIRS")  # what check-claims --scale multiplies
QUICK = {"N_SEEDS": 2, "SWEEP_SEEDS": 4}  # CI's control runs


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """``m`` vocabulary size, ``n`` pairs, ``d`` embedding dimension,
    ``n_reverse_heldout`` held-out reverse facts (the paper: 1). ``init="pretrained"``
    starts from ``Theta_0 = init_scale * G`` with ``G`` standard Gaussian (checked
    against the theorem's condition ``1/(2m) < p < 2/m`` in the result). ``optimizer``:
    ``"gd"`` (full batch; small ``lr`` approximates gradient flow) or ``"sgd"``
    (``batch_size`` pairs a step).

    Three controls (the notebook's ``CONTROL``), all off by default:
    ``reverse_in_training`` also trains the held-out reverse facts (they are still
    evaluated as ``reverse_loss``: a "not learnt" claim must then fail);
    ``shuffled_labels`` gives every training fact another fact's answer
    (:func:`revlib.data.shuffle_answers`), so the pairs the logits are read on are never
    trained (a "learnt" claim must then fail); ``no_training``
    (:func:`revlib.config.no_training`) makes no optimiser step, so ``Theta`` keeps its
    initial value while the evaluations run as usual.
    """

    m: int = 64
    n: int = 16
    d: int = 1024
    n_reverse_heldout: int = 1
    n_seeds: int = 5
    optimizer: str = "gd"
    lr: float = 2.0
    steps: int = 1000
    batch_size: int = 0
    init: str = "zero"
    init_scale: float = 0.1
    eval_points: int = 60
    eval_spacing: str = "log"
    reverse_in_training: bool = False
    shuffled_labels: bool = False

    MAX_SEEDS = 256

    def __post_init__(self):
        _validate.integer("m", self.m, 4, 20_000)
        _validate.integer("n", self.n, 1, self.m // 2)
        _validate.integer("d", self.d, 1, 100_000)
        _validate.integer("n_reverse_heldout", self.n_reverse_heldout, 1, self.n)
        _validate.choice("optimizer", self.optimizer, ("gd", "sgd"))
        _validate.choice("init", self.init, ("zero", "pretrained"))
        _validate.real("init_scale", self.init_scale, 0.0, 10.0)
        _validate.boolean("reverse_in_training", self.reverse_in_training)
        _validate.boolean("shuffled_labels", self.shuffled_labels)
        super().__post_init__()  # seed, n_seeds; lr, steps, batch_size, eval_*


@dataclass
class Result:
    """``history`` holds ``train_loss`` and ``reverse_loss`` ``[E, S]``. Final logits
    ``forward_logits[s, i, j] = x_i^T Theta y_j`` and
    ``reverse_logits[s, i, j] = y_i^T Theta x_j`` ``[S, n, n]``; reverse rows
    ``i < n_reverse_heldout`` are the held-out facts."""

    config: Config
    task: BilinearTask
    history: History
    forward_logits: np.ndarray
    reverse_logits: np.ndarray
    init_probability_range: np.ndarray

    @property
    def log_m(self) -> float:
        return math.log(self.config.m)

    @property
    def time(self) -> np.ndarray:
        return self.history.time

    @property
    def train_loss(self) -> np.ndarray:
        return self.history["train_loss"]

    @property
    def reverse_loss(self) -> np.ndarray:
        return self.history["reverse_loss"]

    @property
    def epsilon(self) -> np.ndarray:
        """Per seed, the smallest epsilon for which Theorem 1's ratio bound holds."""
        return theory.smallest_epsilon(self.train_loss, self.reverse_loss)

    def predicted_train_loss(self) -> np.ndarray:
        """The orthogonal-limit gradient-flow curve at ``self.time`` (zero init
        only)."""
        return theory.orthogonal_limit_train_loss(
            self.time, self.config.m, self.task.n_train
        )


def run(config: Config) -> Result:
    """Train ``config.n_seeds`` bilinear models at once and evaluate them."""
    task = bilinear_task(
        config.m, config.n, config.d, config.n_reverse_heldout, config.seeds
    )
    if (
        config.reverse_in_training
    ):  # control: the held-out reverse facts join the training set
        task = dataclasses.replace(
            task,
            train_in=torch.cat([task.train_in, task.heldout_in], dim=1),
            train_out=torch.cat([task.train_out, task.heldout_out], dim=1),
        )
    if config.shuffled_labels:  # control: every fact answered with another's answer
        task = dataclasses.replace(
            task, train_out=shuffle_answers(task.train_out, config.seeds)
        )
    S, r = task.n_seeds, task.coords.shape[-1]
    theta0 = None
    if config.init == "pretrained":
        # Q^T G Q has i.i.d. N(0, 1) entries for orthonormal Q: sampling directly in
        # span coordinates gives exactly the law of a Gaussian d x d initialisation.
        theta0 = config.init_scale * torch.stack(
            [
                torch.randn(r, r, generator=repro.generator(s + 7_919))
                for s in config.seeds
            ]
        )
    model = Bilinear(S, r, theta0)
    vocab = task.coords

    def loss(idx):
        if idx is None:
            return model.loss(vocab, task.train_in, task.train_out)
        return model.loss(
            vocab, task.train_in.gather(1, idx), task.train_out.gather(1, idx)
        )

    history = train(
        model,
        loss,
        config.train_config(),
        lambda: {
            "train_loss": model.loss(vocab, task.train_in, task.train_out),
            "reverse_loss": model.loss(vocab, task.heldout_in, task.heldout_out),
        },
        n_train=task.n_train,
        n_seeds=S,
        batch_seeds=[s + 104_729 for s in config.seeds],
    )
    with torch.no_grad():
        theta = model.theta
        xs = torch.gather(vocab, 1, task.x[..., None].expand(-1, -1, r))
        ys = torch.gather(vocab, 1, task.y[..., None].expand(-1, -1, r))
        forward = xs @ theta @ ys.transpose(-1, -2)
        reverse = ys @ theta @ xs.transpose(-1, -2)
        init = theory.initial_probability_range(
            theta0 if theta0 is not None else torch.zeros(S, r, r), vocab
        )
    return Result(
        config=config,
        task=task,
        history=history,
        forward_logits=forward.numpy(),
        reverse_logits=reverse.numpy(),
        init_probability_range=init.numpy(),
    )
