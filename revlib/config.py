"""The fields every experiment's ``Config`` shares: the seeds and the optimiser.

An experiment's ``Config`` derives from :class:`ExperimentConfig`, lists only its own
fields and validates them in its ``__post_init__``, which ends with
``super().__post_init__()`` (the seeds, then the training fields through
:meth:`ExperimentConfig.train_config`). So a bad field fails when the Config is made,
before anything trains, with a message naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from revlib import _validate, repro
from revlib.train import TrainConfig

# The Config fields that :class:`revlib.train.TrainConfig` takes under the same names.
TRAIN_FIELDS = (
    "steps",
    "lr",
    "optimizer",
    "batch_size",
    "momentum",
    "weight_decay",
    "betas",
    "eval_points",
    "eval_spacing",
    "warmup_steps",
)


@dataclass(frozen=True)
class ExperimentConfig:
    """``seed``: the first seed; ``n_seeds`` models, seeds ``seed, seed + 1, ...``
    (:func:`revlib.repro.seed_list`), train at once as one batched model.

    Class attributes (not fields): ``OPTIMIZER``, the experiment's optimiser (a
    :data:`revlib.train.OPTIMIZERS` name; ``None`` where the experiment does not train
    with :func:`revlib.train.train` or has an ``optimizer`` field), ``MAX_SEEDS``.
    """

    seed: int = 0
    n_seeds: int = 1

    OPTIMIZER: ClassVar[str | None] = None
    MAX_SEEDS: ClassVar[int] = 64

    def __post_init__(self):
        _validate.integer("seed", self.seed, 0, 2**31 - 1)
        _validate.integer("n_seeds", self.n_seeds, 1, self.MAX_SEEDS)
        if self.OPTIMIZER is not None or hasattr(self, "optimizer"):
            self.train_config()  # steps, lr, batch_size, ... checked under their names

    @property
    def seeds(self) -> list[int]:
        """The ``n_seeds`` seeds, ``[seed, seed + 1, ...]``."""
        return repro.seed_list(self.seed, self.n_seeds)

    def train_config(self) -> TrainConfig:
        """:class:`revlib.train.TrainConfig` of ``OPTIMIZER`` (or the ``optimizer``
        field) with those of :data:`TRAIN_FIELDS` that this Config has; TrainConfig's
        defaults for the others."""
        kw = {name: getattr(self, name) for name in TRAIN_FIELDS if hasattr(self, name)}
        if "optimizer" not in kw:
            if self.OPTIMIZER is None:
                raise ValueError(
                    f"{type(self).__qualname__} has no optimiser: it "
                    "does not train with revlib.train"
                )
            kw["optimizer"] = self.OPTIMIZER
        return TrainConfig(**kw)
