"""One training loop for every chapter.

Several seeds train as one batched model: every parameter carries a leading seed axis
``[S, ...]``, the loss function returns one loss per seed ``[S]``, and the loop
back-propagates their sum. Parameters of different seeds never interact, so each seed
receives exactly the gradient it would get alone, and the optimisers used here (SGD, Adam,
AdamW) act element-wise, so each seed follows exactly its own trajectory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from revlib import _validate

OPTIMIZERS = ("gd", "sgd", "adam", "adamw")


@dataclass(frozen=True)
class TrainConfig:
    """How to optimise.

    ``optimizer``: ``"gd"`` (full batch, the theorems' setting; with a small ``lr`` it is the
    Euler discretisation of gradient flow), ``"sgd"`` (minibatches of ``batch_size`` drawn
    without replacement within each epoch), ``"adam"`` or ``"adamw"`` (minibatches too).
    ``eval_points`` evaluations are spaced ``"linear"``-ly or ``"log"``-arithmically in steps.
    """

    steps: int
    lr: float
    optimizer: str = "gd"
    batch_size: int = 0  # 0: full batch (required for "gd")
    momentum: float = 0.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eval_points: int = 50
    eval_spacing: str = "linear"

    def __post_init__(self):
        _validate.integer("steps", self.steps, 1, 10**7)
        _validate.real("lr", self.lr, 0.0, 1e4, lo_open=True)
        _validate.choice("optimizer", self.optimizer, OPTIMIZERS)
        _validate.integer("batch_size", self.batch_size, 0, 10**7)
        if self.optimizer == "gd" and self.batch_size != 0:
            raise ValueError("batch_size must be 0 (full batch) when optimizer is 'gd', "
                             f"got {self.batch_size!r}")
        if self.optimizer != "gd" and self.batch_size == 0:
            raise ValueError(f"batch_size must be >= 1 when optimizer is {self.optimizer!r}, got 0")
        _validate.real("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        _validate.real("weight_decay", self.weight_decay, 0.0, 10.0)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair in [0, 1), got {self.betas!r}")
        for i, b in enumerate(self.betas):
            _validate.real(f"betas[{i}]", b, 0.0, 1.0, hi_open=True)
        _validate.integer("eval_points", self.eval_points, 2, 10**5)
        _validate.choice("eval_spacing", self.eval_spacing, ("linear", "log"))

    def eval_steps(self) -> np.ndarray:
        """The steps (0 = before training, ``steps`` = the end) at which evals run."""
        if self.eval_spacing == "linear":
            pts = np.linspace(0, self.steps, self.eval_points)
        else:
            pts = np.concatenate([[0], np.geomspace(1, self.steps, self.eval_points - 1)])
        return np.unique(np.round(pts).astype(int))


@dataclass
class History:
    """Evaluations over training: ``values[name]`` is ``[E, S]`` at ``steps`` ``[E]``."""

    steps: np.ndarray
    lr: float
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def time(self) -> np.ndarray:
        """Continuous time ``t = lr * step`` of gradient flow (for GD and SGD)."""
        return self.steps * self.lr

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]

    def final(self, name: str) -> np.ndarray:
        """Last evaluation of ``name``, one value per seed ``[S]``."""
        return self.values[name][-1]


def _optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer in ("gd", "sgd"):
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay, foreach=True)
    cls = torch.optim.Adam if cfg.optimizer == "adam" else torch.optim.AdamW
    return cls(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay, foreach=True)


def _batches(n_train: int, batch_size: int, gens: list[torch.Generator]):
    """Endless stream of per-seed minibatch indices ``[S, B]``, without replacement per epoch.

    Each seed draws its order from its own generator, so a seed's run does not depend on
    which other seeds share the batch (one permutation per seed and epoch, not per step).
    """
    while True:
        perm = torch.stack([torch.randperm(n_train, generator=g) for g in gens])
        for start in range(0, n_train - batch_size + 1, batch_size):
            yield perm[:, start:start + batch_size]


def train(params: list[torch.nn.Parameter] | torch.nn.Module,
          loss_fn: Callable[[torch.Tensor | None], torch.Tensor],
          cfg: TrainConfig,
          evaluate: Callable[[], Mapping[str, torch.Tensor]] | None = None,
          n_train: int = 0,
          n_seeds: int = 1,
          batch_seeds: list[int] | None = None) -> History:
    """Optimise ``params`` for ``cfg.steps`` steps and record ``evaluate()`` on the way.

    ``loss_fn(idx)`` returns the per-seed training loss ``[S]``; ``idx`` is ``None`` for a
    full batch, else the per-seed example indices ``[S, batch_size]``, on the device of
    ``params`` (drawn on the CPU, so a seed sees the same minibatches on every device).
    ``evaluate()`` runs once per evaluation point, under ``torch.no_grad()``, and
    returns every metric at once, ``{name: Tensor[S]}``, the same names each time
    (their order is that of ``History.values``); ``None``: nothing is recorded.
    """
    if isinstance(params, torch.nn.Module):
        params = [p for p in params.parameters() if p.requires_grad]
    if cfg.optimizer != "gd":
        _validate.integer("n_train", n_train, cfg.batch_size, None)
    _validate.integer("n_seeds", n_seeds, 1, None)
    device = params[0].device if params else torch.device("cpu")
    opt = _optimizer(params, cfg)
    batch_seeds = list(range(n_seeds)) if batch_seeds is None else list(batch_seeds)
    if len(batch_seeds) != n_seeds:
        raise ValueError(f"batch_seeds must have one entry per seed ({n_seeds}), got {len(batch_seeds)}")
    batches = None if cfg.optimizer == "gd" else _batches(
        n_train, cfg.batch_size, [torch.Generator().manual_seed(s) for s in batch_seeds])
    eval_steps = cfg.eval_steps()
    records: dict[str, list[np.ndarray]] | None = None

    def record():
        nonlocal records
        with torch.no_grad():
            values = {} if evaluate is None else dict(evaluate())
        if records is None:
            records = {name: [] for name in values}
        elif list(values) != list(records):
            raise ValueError("evaluate must return the same names at every "
                             f"evaluation, got {list(values)} after {list(records)}")
        for name, v in values.items():
            records[name].append(v.detach().double().cpu().numpy().reshape(n_seeds))

    next_eval = 0
    for step in range(cfg.steps + 1):
        if step == eval_steps[next_eval]:
            record()
            next_eval += 1
        if step == cfg.steps:
            break
        idx = None if batches is None else next(batches).to(device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(idx)
        if loss.shape != (n_seeds,):
            raise ValueError(f"loss_fn must return one loss per seed, shape ({n_seeds},), "
                             f"got {tuple(loss.shape)}")
        loss.sum().backward()
        opt.step()
    return History(steps=eval_steps, lr=cfg.lr,
                   values={k: np.stack(v) for k, v in (records or {}).items()})
