"""One training loop for every chapter.

Several seeds train as one batched model: every parameter carries a leading seed axis
``[S, ...]``, the loss function returns one loss per seed ``[S]``, and the loop
back-propagates their sum. Parameters of different seeds never interact, so each seed
receives exactly the gradient it would get alone, and the optimisers used here (SGD,
Adam, AdamW) act element-wise, so each seed follows exactly its own trajectory.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from revlib import _validate

OPTIMIZERS = ("gd", "sgd", "adam", "adamw")


@dataclass(frozen=True)
class TrainConfig:
    """How to optimise.

    ``optimizer``: ``"gd"`` (full batch, the theorems' setting; with a small ``lr`` it
    is the Euler discretisation of gradient flow), ``"sgd"`` (minibatches of
    ``batch_size`` drawn without replacement within each epoch), ``"adam"`` or
    ``"adamw"`` (minibatches too). ``eval_points`` evaluations are spaced
    ``"linear"``-ly or ``"log"``-arithmically in steps. ``warmup_steps``: the learning
    rate rises linearly to ``lr`` over these first steps, then stays constant (0:
    constant from the start), as in the binding paper's recipe. ``no_training``: the
    control of every experiment that keeps the model at its start: :func:`train` makes
    no optimiser step (it still checks one loss and records the evaluations, which are
    those of the start at every evaluation point). ``max_grad_norm``: a seed whose
    gradient norm (over all its parameters) exceeds it has its gradient scaled down to
    that norm before the step; other seeds' gradients are left exactly as they are
    (0: no clipping).
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
    warmup_steps: int = 0
    no_training: bool = False
    max_grad_norm: float = 0.0

    def __post_init__(self):
        _validate.integer("steps", self.steps, 1, 10**7)
        _validate.real("lr", self.lr, 0.0, 1e4, lo_open=True)
        _validate.choice("optimizer", self.optimizer, OPTIMIZERS)
        _validate.integer("batch_size", self.batch_size, 0, 10**7)
        if self.optimizer == "gd" and self.batch_size != 0:
            raise ValueError(
                "batch_size must be 0 (full batch) when optimizer is 'gd', "
                f"got {self.batch_size!r}"
            )
        if self.optimizer != "gd" and self.batch_size == 0:
            raise ValueError(
                f"batch_size must be >= 1 when optimizer is {self.optimizer!r}, got 0"
            )
        _validate.real("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        _validate.real("weight_decay", self.weight_decay, 0.0, 10.0)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair in [0, 1), got {self.betas!r}")
        for i, b in enumerate(self.betas):
            _validate.real(f"betas[{i}]", b, 0.0, 1.0, hi_open=True)
        _validate.integer("eval_points", self.eval_points, 2, 10**5)
        _validate.choice("eval_spacing", self.eval_spacing, ("linear", "log"))
        _validate.integer("warmup_steps", self.warmup_steps, 0, self.steps)
        _validate.boolean("no_training", self.no_training)
        _validate.real("max_grad_norm", self.max_grad_norm, 0.0, 1e6)

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` (0-based): ``lr`` after a linear warm-up
        over the first ``warmup_steps`` steps (``lr * (step + 1) / warmup_steps``), then
        constant."""
        if step >= self.warmup_steps:
            return self.lr
        return self.lr * (step + 1) / self.warmup_steps

    def eval_steps(self) -> np.ndarray:
        """The steps (0 = before training, ``steps`` = the end) at which evals run."""
        if self.eval_spacing == "linear":
            pts = np.linspace(0, self.steps, self.eval_points)
        else:
            pts = np.concatenate(
                [[0], np.geomspace(1, self.steps, self.eval_points - 1)]
            )
        return np.unique(np.round(pts).astype(int))


@dataclass
class History:
    """Evaluations over training: ``values[name]`` is ``[E, S]`` at ``steps``
    ``[E]``."""

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


def _optimizer(
    params, cfg: TrainConfig, capturable: bool = False
) -> torch.optim.Optimizer:
    if cfg.optimizer in ("gd", "sgd"):
        return torch.optim.SGD(
            params,
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
            foreach=True,
        )
    cls = torch.optim.Adam if cfg.optimizer == "adam" else torch.optim.AdamW
    extra = {"capturable": True} if capturable else {}
    return cls(
        params,
        lr=cfg.lr,
        betas=cfg.betas,
        weight_decay=cfg.weight_decay,
        foreach=True,
        **extra,
    )


# ``REVLIB_CUDA_GRAPHS=1``: on a GPU, train() replays each step as one CUDA graph.
GRAPHS_ENV = "REVLIB_CUDA_GRAPHS"
# Eager steps before the capture (on a side stream, as CUDA graphs need): the
# optimiser's state and autograd's lazy buffers exist by then.
_GRAPH_WARMUP = 3


def graphs_wanted(device: torch.device) -> bool:
    """Whether :func:`train` captures its step as a CUDA graph: on a CUDA device, when
    the environment variable ``REVLIB_CUDA_GRAPHS`` is ``1``. The book's models are so
    small that an eager GPU step is bound by launching its hundreds of kernels from
    Python (measured: a 24-layer, d = 20 model takes as long per step on a GPU as on a
    CPU core); a replayed graph launches them all at once. The replayed step runs the
    same kernels as the eager one, so it is the same computation (not bit for bit the
    CPU run's: GPU kernels round differently)."""
    return device.type == "cuda" and os.environ.get(GRAPHS_ENV, "") == "1"


def _clip_per_seed_graphed(params: list[torch.nn.Parameter], max_norm: float) -> None:
    """:func:`clip_per_seed` without reading the norms on the host (a CUDA graph
    cannot): every seed's gradient is multiplied by ``min(1, max_norm / norm)``; a seed
    within the bound is multiplied by exactly 1, which leaves it bit for bit as it
    was."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = sum(g.double().pow(2).flatten(1).sum(1) for g in grads).sqrt()
    scale = torch.where(norms > max_norm, max_norm / norms, torch.ones_like(norms))
    for g in grads:
        g.mul_(scale.to(g.dtype).view((-1,) + (1,) * (g.dim() - 1)))


class _Batches:
    """Endless stream of per-seed minibatch indices ``[S, B]``, without replacement per
    epoch.

    Each seed draws its order from its own generator, so a seed's run does not depend on
    which other seeds share the batch (one permutation per seed and epoch, not per
    step). Its whole position (generators, this epoch's permutation, the place in it) is
    :meth:`state`, so a checkpointed run resumes on the very next minibatch.
    """

    def __init__(self, n_train: int, batch_size: int, gens: list[torch.Generator]):
        self.n_train, self.batch_size, self.gens = n_train, batch_size, gens
        self.perm: torch.Tensor | None = None
        self.start = 0

    def __next__(self) -> torch.Tensor:
        if self.perm is None or self.start + self.batch_size > self.n_train:
            self.perm = torch.stack(
                [torch.randperm(self.n_train, generator=g) for g in self.gens]
            )
            self.start = 0
        out = self.perm[:, self.start : self.start + self.batch_size]
        self.start += self.batch_size
        return out

    def state(self) -> dict:
        return {
            "gens": [g.get_state() for g in self.gens],
            "perm": self.perm,
            "start": self.start,
        }

    def load(self, state: dict) -> None:
        for g, st in zip(self.gens, state["gens"], strict=True):
            g.set_state(st)
        self.perm, self.start = state["perm"], state["start"]


def _save_atomic(obj, path: Path) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename it into place: a
    run killed while writing leaves the previous checkpoint whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def clip_per_seed(params: list[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale the gradients of each seed (the leading axis of every trainable parameter)
    whose norm exceeds ``max_norm`` down to ``max_norm``; a seed within it is not
    touched, so its step is bit for bit the unclipped one. Returns the norms ``[S]``
    before clipping."""
    grads = [p.grad for p in params if p.grad is not None]
    sq = sum(g.double().pow(2).flatten(1).sum(1) for g in grads)
    norms = sq.sqrt()
    over = norms > max_norm
    if over.any():
        scale = torch.where(over, max_norm / norms, torch.ones_like(norms))
        for g in grads:
            idx = over.nonzero()[:, 0]
            shape = (-1,) + (1,) * (g.dim() - 1)
            g[idx] = g[idx] * scale[idx].to(g.dtype).view(shape)
    return norms


def _capture(eager_step, idx, opt, side):
    """One training step captured as a CUDA graph, reading its minibatch from a static
    copy of ``idx``: ``(graph, static_idx)``, or ``(None, None)`` when the step cannot
    be captured (an operation that reads a value on the host), reported on stderr."""
    static_idx = None if idx is None else idx.clone()
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    opt.zero_grad(set_to_none=True)
    try:
        with torch.cuda.graph(graph, stream=side):
            eager_step(static_idx)
    except Exception as err:  # noqa: BLE001  (any failure: run eagerly instead)
        torch.cuda.synchronize()
        opt.zero_grad(set_to_none=True)
        print(
            f"revlib.train: the step could not be captured as a CUDA graph "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
            "training eagerly",
            file=sys.stderr,
        )
        return None, None
    return graph, static_idx


def _fingerprint(
    cfg: TrainConfig, n_train: int, n_seeds: int, batch_seeds, params
) -> dict:
    """What a checkpoint must agree on to be resumed by this call."""
    return {
        # the defaults no_training=False and max_grad_norm=0.0 left out: checkpoints
        # written before the fields existed load
        "config": repr(cfg)
        .replace(", no_training=False", "")
        .replace(", max_grad_norm=0.0", ""),
        "n_train": n_train,
        "n_seeds": n_seeds,
        "batch_seeds": list(batch_seeds),
        "shapes": [tuple(p.shape) for p in params],
    }


@dataclass
class _Checkpointing:
    prefix: Path
    every: int
    progress: bool
    calls: int = 0
    cpu_seconds: float = 0.0  # summed over every train() call, across resumes
    resumed_at: list[int] = field(default_factory=list)  # the step each call resumed at


_ACTIVE: list[_Checkpointing] = []


@contextlib.contextmanager
def checkpointing(prefix: str | os.PathLike, every: int = 1000, progress: bool = True):
    """Checkpoint every :func:`train` call inside the block that names no file itself:
    the ``k``-th call saves to ``<prefix>.<k>.pt`` (an experiment's calls come in a
    fixed order, so a re-run finds its own files). With ``progress`` each save prints
    steps/s and the time left to stderr. Yields the state, whose ``cpu_seconds`` is the
    CPU time the calls have cost so far, resumed stretches included (each checkpoint
    carries it)."""
    _validate.integer("every", every, 1, None)
    state = _Checkpointing(Path(prefix), every, progress)
    _ACTIVE.append(state)
    try:
        yield state
    finally:
        _ACTIVE.remove(state)


def train(
    params: list[torch.nn.Parameter] | torch.nn.Module,
    loss_fn: Callable[[torch.Tensor | None], torch.Tensor],
    cfg: TrainConfig,
    evaluate: Callable[[], Mapping[str, torch.Tensor]] | None = None,
    n_train: int = 0,
    n_seeds: int = 1,
    batch_seeds: list[int] | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1000,
) -> History:
    """Optimise ``params`` for ``cfg.steps`` steps and record ``evaluate()`` on the way.

    ``loss_fn(idx)`` returns the per-seed training loss ``[S]``; ``idx`` is ``None`` for
    a full batch, else the per-seed example indices ``[S, batch_size]``, on the device
    of ``params`` (drawn on the CPU, so a seed sees the same minibatches on every
    device). ``evaluate()`` runs once per evaluation point, under ``torch.no_grad()``,
    and returns every metric at once, ``{name: Tensor[S]}``, the same names each time
    (their order is that of ``History.values``); ``None``: nothing is recorded.

    ``checkpoint``: a file. Every ``checkpoint_every`` steps the run saves there,
    atomically, the parameters, the optimiser's state, the minibatch order (generators,
    permutation, position), torch's global random state and the evaluations so far; a
    call that finds the file resumes from it, and the result is bit for bit the
    uninterrupted run's (same machine and kernels). The file is kept at the end (the
    finished run's last state). A checkpoint of another configuration, size or seed list
    is a ``ValueError``.
    """
    if isinstance(params, torch.nn.Module):
        params = [p for p in params.parameters() if p.requires_grad]
    if cfg.optimizer != "gd":
        _validate.integer("n_train", n_train, cfg.batch_size, None)
    _validate.integer("n_seeds", n_seeds, 1, None)
    device = params[0].device if params else torch.device("cpu")
    graphed = graphs_wanted(device) and not cfg.no_training
    opt = _optimizer(params, cfg, capturable=graphed)
    batch_seeds = list(range(n_seeds)) if batch_seeds is None else list(batch_seeds)
    if len(batch_seeds) != n_seeds:
        raise ValueError(
            f"batch_seeds must have one entry per seed ({n_seeds}), "
            f"got {len(batch_seeds)}"
        )
    batches = (
        None
        if cfg.optimizer == "gd"
        else _Batches(
            n_train,
            cfg.batch_size,
            [torch.Generator().manual_seed(s) for s in batch_seeds],
        )
    )
    _validate.integer("checkpoint_every", checkpoint_every, 1, None)
    eval_steps = cfg.eval_steps()
    records: dict[str, list[np.ndarray]] | None = None

    def record():
        nonlocal records
        with torch.no_grad():
            values = {} if evaluate is None else dict(evaluate())
        if records is None:
            records = {name: [] for name in values}
        elif list(values) != list(records):
            raise ValueError(
                "evaluate must return the same names at every "
                f"evaluation, got {list(values)} after {list(records)}"
            )
        for name, v in values.items():
            records[name].append(v.detach().double().cpu().numpy().reshape(n_seeds))

    if cfg.no_training:  # the control: no step, so every evaluation is the start's
        idx = None if batches is None else next(batches).to(device)
        loss = loss_fn(idx)
        if loss.shape != (n_seeds,):
            raise ValueError(
                f"loss_fn must return one loss per seed, shape ({n_seeds},), "
                f"got {tuple(loss.shape)}"
            )
        record()
        return History(
            steps=eval_steps,
            lr=cfg.lr,
            values={
                k: np.repeat(np.stack(v), len(eval_steps), axis=0)
                for k, v in (records or {}).items()
            },
        )

    next_eval, first = 0, 0
    ctx = _ACTIVE[-1] if _ACTIVE and checkpoint is None else None
    if ctx is not None:
        ctx.calls += 1
        checkpoint, checkpoint_every = f"{ctx.prefix}.{ctx.calls}.pt", ctx.every
    path = None if checkpoint is None else Path(checkpoint)
    stamp = _fingerprint(cfg, n_train, n_seeds, batch_seeds, params)
    cpu_before, cpu_start, wall_start = 0.0, time.process_time(), time.perf_counter()

    def save(step: int) -> None:
        cpu = cpu_before + time.process_time() - cpu_start
        _save_atomic(
            {
                "fingerprint": stamp,
                "step": step,
                "next_eval": next_eval,
                "params": [p.detach().clone() for p in params],
                "optimizer": opt.state_dict(),
                "batches": None if batches is None else batches.state(),
                "torch_rng": torch.get_rng_state(),
                "records": records,
                "cpu_seconds": cpu,
            },
            path,
        )
        if ctx is not None and ctx.progress:
            rate = (step - first) / max(time.perf_counter() - wall_start, 1e-9)
            left = (cfg.steps - step) / max(rate, 1e-9)
            print(
                f"{path.name}: step {step}/{cfg.steps}, {rate:.1f} steps/s, "
                f"{left / 60:.1f} min left",
                file=sys.stderr,
                flush=True,
            )

    if path is not None and path.exists():
        state = torch.load(path, weights_only=False)
        if state["fingerprint"] != stamp:
            raise ValueError(
                f"checkpoint {path} is of another run: it has "
                f"{state['fingerprint']}, this call {stamp}"
            )
        with torch.no_grad():
            for p, saved in zip(params, state["params"], strict=True):
                p.copy_(saved)
        opt.load_state_dict(state["optimizer"])
        if batches is not None:
            batches.load(state["batches"])
        torch.set_rng_state(state["torch_rng"])
        records, next_eval, first = state["records"], state["next_eval"], state["step"]
        cpu_before = state["cpu_seconds"]
        if ctx is not None:
            ctx.resumed_at.append(int(first))

    def eager_step(idx) -> None:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(idx)
        if loss.shape != (n_seeds,):
            raise ValueError(
                f"loss_fn must return one loss per seed, shape ({n_seeds},), "
                f"got {tuple(loss.shape)}"
            )
        loss.sum().backward()
        if cfg.max_grad_norm:
            if graphed:
                _clip_per_seed_graphed(params, cfg.max_grad_norm)
            else:
                clip_per_seed(params, cfg.max_grad_norm)
        opt.step()

    graph = static_idx = None
    # the learning rate is baked into the captured step: capture after the warm-up
    capture_at = max(first, cfg.warmup_steps) + _GRAPH_WARMUP if graphed else None
    side = torch.cuda.Stream(device) if graphed else None
    for step in range(first, cfg.steps + 1):
        if (
            path is not None
            and step > first
            and (step % checkpoint_every == 0 or step == cfg.steps)
        ):
            save(step)
        if step == eval_steps[next_eval]:
            record()
            next_eval += 1
        if step == cfg.steps:
            break
        idx = None if batches is None else next(batches)
        if graph is not None:
            if static_idx is not None:
                static_idx.copy_(idx, non_blocking=False)
            graph.replay()
            continue
        idx = None if idx is None else idx.to(device)
        if cfg.warmup_steps:
            for group in opt.param_groups:
                group["lr"] = cfg.lr_at(step)
        if step == capture_at:
            graph, static_idx = _capture(eager_step, idx, opt, side)
            if graph is not None:
                graph.replay()
                continue
            graphed = False  # the capture failed: eager from here on
        if graphed:
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                eager_step(idx)
            torch.cuda.current_stream(device).wait_stream(side)
        else:
            eager_step(idx)
    if ctx is not None:
        ctx.cpu_seconds += cpu_before + time.process_time() - cpu_start
    return History(
        steps=eval_steps,
        lr=cfg.lr,
        values={k: np.stack(v) for k, v in (records or {}).items()},
    )
