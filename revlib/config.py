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
    "no_training",
    "max_grad_norm",
)


@dataclass(frozen=True)
class ExperimentConfig:
    """``seed``: the first seed; ``n_seeds`` models, seeds ``seed, seed + 1, ...``
    (:func:`revlib.repro.seed_list`), train at once as one batched model.
    ``no_training``: the one "no training" control (:func:`no_training`), passed to
    :class:`revlib.train.TrainConfig`: no optimiser step is made.

    Class attributes (not fields): ``OPTIMIZER``, the experiment's optimiser (a
    :data:`revlib.train.OPTIMIZERS` name; ``None`` where the experiment does not train
    with :func:`revlib.train.train` or has an ``optimizer`` field), ``MAX_SEEDS``.
    """

    seed: int = 0
    n_seeds: int = 1
    no_training: bool = False  # the control no_training(): no optimiser step

    OPTIMIZER: ClassVar[str | None] = None
    MAX_SEEDS: ClassVar[int] = 64

    def __post_init__(self):
        _validate.integer("seed", self.seed, 0, 2**31 - 1)
        _validate.integer("n_seeds", self.n_seeds, 1, self.MAX_SEEDS)
        _validate.boolean("no_training", self.no_training)
        if self.no_training and not self.trains:
            raise ValueError(
                f"no_training must be False: {type(self).__qualname__} does not train "
                "with revlib.train"
            )
        if self.OPTIMIZER is not None or hasattr(self, "optimizer"):
            self.train_config()  # steps, lr, batch_size, ... checked under their names

    @property
    def trains(self) -> bool:
        """Whether this experiment trains with :func:`revlib.train.train` (and so
        takes ``no_training``)."""
        return self.OPTIMIZER is not None or hasattr(self, "optimizer")

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


CONTROL_KINDS = ("science", "plumbing")


@dataclass(frozen=True)
class Control:
    """A control run of an experiment, declared once in its module (``CONTROLS``):
    ``name`` (lower_snake_case, the notebook's ``CONTROL``), ``kind`` (``"science"``:
    the mechanism is removed or the answer is given; ``"plumbing"``: what is read,
    swapped or compared, or no training), ``sentence`` (what it removes, gives away or
    swaps, for the ledger) and ``change``, the ``Config`` fields it sets
    (:meth:`revlib.claims.Ledger.config` applies them; a callable value is called with
    the Config and gives that Config's value; empty where the control acts elsewhere,
    e.g. on what the notebook reads). ``swaps``: a plumbing control that
    reads two things each as the other (:meth:`revlib.claims.Ledger.swap` swaps the
    pair the notebook names)."""

    name: str
    kind: str
    sentence: str
    change: tuple[tuple[str, object], ...] = ()
    swaps: bool = False

    def __post_init__(self):
        import re

        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name) or self.name == "none":
            raise ValueError(
                f"Control.name must be lower_snake_case and not 'none', got "
                f"{self.name!r}"
            )
        if self.kind not in CONTROL_KINDS:
            raise ValueError(
                f"Control.kind must be one of {CONTROL_KINDS}, got {self.kind!r}"
            )
        if not self.sentence:
            raise ValueError(f"Control {self.name!r} needs a sentence")
        if isinstance(self.change, dict):  # a dict is the natural way to write it
            object.__setattr__(self, "change", tuple(self.change.items()))
        if self.swaps and self.kind != "plumbing":
            raise ValueError(f"Control {self.name!r} swaps: its kind must be plumbing")


def no_training(what: str = "the model keeps its start") -> Control:
    """The one "no training" control, under one name in every experiment: the
    ``Config`` field ``no_training`` (from :class:`ExperimentConfig`) reaches
    :class:`revlib.train.TrainConfig`, and :func:`revlib.train.train` makes no
    optimiser step."""
    return Control(
        "no_training",
        "plumbing",
        f"every optimiser step is a no-op: {what}",
        {"no_training": True},
    )
