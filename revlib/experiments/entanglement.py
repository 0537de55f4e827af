"""Chapter "Gradient entanglement": check the one-step formula of
:mod:`revlib.theory.entanglement` against real optimiser steps on the last MLP layer of
a transformer, and measure how shared name tokens raise the overlap ``alpha^T beta`` of
MLP activations between entities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data.binding import binding_task
from revlib.experiments import surface_names
from revlib.models.transformer import (
    Transformer,
    TransformerConfig,
    answer_loss,
    check_shape,
)
from revlib.theory import entanglement as theory

NOTEBOOK = "binding/entanglement"
CONTROLS = (
    Control(
        "disjoint",
        "science",
        "the two facts reach the last layer through disjoint halves of its hidden "
        "units (alpha^T beta = 0)",
        {"disjoint": True},
    ),
    Control(
        "shuffled_groups",
        "science",
        "entity pairs are grouped by another entity's name",
        {"shuffled_groups": True},
    ),
    no_training("the names model keeps its initial weights"),
)
SIZE_KNOBS = ("N_A", "N_B", "STEPS")  # what check-claims --scale multiplies
QUICK = {"N_SEEDS": 2}  # CI's control runs

CHECKS = (
    "sgd",
    "momentum",
    "adam_first",
    "adam_first_sgd_form",
    "adam_later",
    "sgd_all_layers",
)
EXACT = ("sgd", "momentum", "adam_first")  # the derivation says: exact
INEXACT = ("adam_first_sgd_form", "adam_later", "sgd_all_layers")
ASSUMPTIONS = ("as_named", "removed", "met")


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """A fresh ``n_layer`` transformer (``d_model``, ``n_head``) on two one-token facts;
    ``eta`` the step size, ``mu`` the momentum, ``adam_steps`` Adam steps before the
    "later" check.

    Controls (defaults: each case as its name says). ``assumptions="removed"``: the
    cases the derivation calls exact step every layer, so ``alpha`` and ``beta`` move
    too; ``"met"``: the inexact cases are given the formula's assumptions (only ``V``
    moves; Adam with ``beta1 = 0`` and ``eps = 1e3``, a scalar step with no first-moment
    history). ``disjoint``: the two facts use disjoint halves of the last MLP's hidden
    units (a mask before ``fc2``), so ``alpha^T beta = 0``."""

    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    eta: float = 1e-2
    mu: float = 0.9
    adam_steps: int = 20
    n_seeds: int = 4
    assumptions: str = "as_named"
    disjoint: bool = False

    MAX_SEEDS = 256

    def __post_init__(self):
        _validate.choice("assumptions", self.assumptions, ASSUMPTIONS)
        _validate.boolean("disjoint", self.disjoint)
        _validate.real("eta", self.eta, 0.0, 10.0, lo_open=True)
        _validate.real("mu", self.mu, 0.0, 1.0, hi_open=True)
        _validate.integer("adam_steps", self.adam_steps, 1, 10**5)
        check_shape(self.n_layer, self.n_head, self.d_model)
        super().__post_init__()  # seed, n_seeds


@dataclass
class StepCheck:
    """``rel_error[check]``: ``[S]`` relative error
    ``|measured - predicted| / |measured|`` of ``(Delta a, Delta b)``, the measured
    change read from a forward pass after a real optimiser step. ``cross_to_self``:
    ``[S]`` the interference term's size relative to the own term (by the formula).
    ``overlap``: ``[S]`` cosine of ``alpha`` and ``beta``. ``drag``: ``[S]`` measured
    ``|Delta a| / |Delta b|`` when one SGD step on ``V`` trains fact ``b`` alone;
    ``drag_predicted``: the formula's ``|alpha^T beta| / |beta|^2``."""

    config: Config
    rel_error: dict[str, np.ndarray]
    cross_to_self: np.ndarray
    overlap: np.ndarray
    drag: np.ndarray
    drag_predicted: np.ndarray


class _Probe:
    """Runs the model on two facts and exposes ``alpha, beta`` (inputs of the last
    ``fc2`` at the target position, ``[S, 4d]``), ``a, b`` (its outputs, ``[S, d]``) and
    their gradients."""

    def __init__(
        self, model: Transformer, seqs: torch.Tensor, facts: tuple[int, ...] = (0, 1)
    ):
        self.model, self.seqs = model, seqs  # seqs [S, 2, 4]: h r <mask> t
        self.facts = facts  # the facts whose loss is trained
        self.fc2 = model.blocks[-1].ff.fc2

    def __call__(self, grad: bool = True):
        store = {}

        def hook(mod, inp, out):
            out.retain_grad()
            store["h"], store["y"] = inp[0], out

        handle = self.fc2.register_forward_hook(hook)
        x = self.seqs
        mask = torch.zeros(x.shape[:-1] + (3,), dtype=torch.bool)
        mask[:, list(self.facts), 2] = True  # <mask> predicts t
        loss = answer_loss(self.model(x[..., :-1]), x[..., 1:], mask)
        handle.remove()
        if grad:
            self.model.zero_grad(set_to_none=True)
            loss.sum().backward()
        h, y = store["h"].detach()[:, :, 2], store["y"]
        g = y.grad[:, :, 2] if grad else None
        return (
            h[:, 0],
            h[:, 1],
            y.detach()[:, 0, 2],
            y.detach()[:, 1, 2],
            (None if g is None else g[:, 0]),
            (None if g is None else g[:, 1]),
        )

    def V(self) -> torch.Tensor:
        """``[S, out, in]``: the layer in the math convention (``SeedLinear`` stores
        ``V^T``)."""
        return self.fc2.weight.detach().transpose(1, 2).clone()


def _rel(measured: tuple, predicted: tuple) -> np.ndarray:
    m, p = torch.cat(measured, -1), torch.cat(predicted, -1)
    return ((m - p).norm(dim=-1) / m.norm(dim=-1)).numpy()


def _fresh(config: Config, facts: tuple[int, ...] = (0, 1)):
    """A fresh model in float64 (the measured change ``a1 - a0`` is a difference of two
    forward passes: float32 round-off would be 1e-4 of it) and its probe."""
    task = binding_task(40, 24, 1, 0, config.seeds)
    seqs = task.sequences("train")[:, :2]
    model = Transformer(
        TransformerConfig(
            vocab_size=task.vocab_size,
            block_size=4,
            n_layer=config.n_layer,
            n_head=config.n_head,
            d_model=config.d_model,
            positional="none",
            tied=True,
        ),
        n_seeds=config.n_seeds,
        seed=config.seed,
    ).double()
    probe = _Probe(model, seqs, facts)
    if config.disjoint:
        # fact 0 reaches fc2 through the first half of the hidden units, fact 1 the
        # second
        width = probe.fc2.weight.shape[1]
        keep = torch.zeros(2, 1, width, dtype=torch.float64)
        keep[0, :, : width // 2] = 1.0
        keep[1, :, width // 2 :] = 1.0
        probe.fc2.register_forward_pre_hook(lambda mod, inp: (inp[0] * keep,))
    return model, probe


def step_check(config: Config) -> StepCheck:
    """Each optimiser takes a real step; the formula predicts ``(Delta a, Delta b)``,
    which is measured by a forward pass after the step."""
    eta, err = config.eta, {}
    exact_params = lambda model, probe: (
        list(model.parameters())
        if config.assumptions == "removed"
        else [probe.fc2.weight]
    )
    met = config.assumptions == "met"
    adam_kw = dict(betas=(0.0, 0.999), eps=1e3) if met else {}

    def measured(probe, a0, b0):
        _, _, a1, b1, _, _ = probe(grad=False)
        return a1 - a0, b1 - b0

    # SGD on V alone: alpha and beta are upstream of V, so they stay fixed and the
    # formula is exact.
    model, probe = _fresh(config)
    alpha, beta, a0, b0, ga, gb = probe()
    torch.optim.SGD(exact_params(model, probe), lr=eta).step()
    err["sgd"] = _rel(
        measured(probe, a0, b0), theory.sgd_delta(alpha, beta, ga, gb, eta)
    )
    cross = theory.cross_to_self(alpha, beta, ga, gb).numpy()
    cos = torch.nn.functional.cosine_similarity(alpha, beta, dim=-1).numpy()

    # Momentum: the second step also carries the first step's gradient (the buffer).
    model, probe = _fresh(config)
    weight = probe.fc2.weight
    opt = torch.optim.SGD(exact_params(model, probe), lr=eta, momentum=config.mu)
    probe()
    opt.step()
    buffer = opt.state[weight]["momentum_buffer"].transpose(1, 2).clone()
    alpha, beta, a0, b0, ga, gb = probe()
    opt.step()
    err["momentum"] = _rel(
        measured(probe, a0, b0),
        theory.momentum_delta(alpha, beta, ga, gb, eta, config.mu, buffer),
    )

    # Adam's first step is sign-like: Delta V = -eta G / (|G| + eps), an element-wise
    # preconditioner.
    model, probe = _fresh(config)
    weight = probe.fc2.weight
    opt = torch.optim.Adam(exact_params(model, probe), lr=eta, **adam_kw)
    alpha, beta, a0, b0, ga, gb = probe()
    G = weight.grad.transpose(1, 2)
    opt.step()
    step1 = measured(probe, a0, b0)
    P = 1.0 / (G.abs() + opt.defaults["eps"])
    err["adam_first"] = _rel(
        step1, theory.preconditioned_delta(alpha, beta, ga, gb, eta, P)
    )
    # The plain SGD form with the best single effective rate (least squares, per seed).
    sa, sb = theory.sgd_delta(alpha, beta, ga, gb, 1.0)
    m_, s_ = torch.cat(step1, -1), torch.cat((sa, sb), -1)
    rate = (m_ * s_).sum(-1, keepdim=True) / (s_ * s_).sum(-1, keepdim=True)
    err["adam_first_sgd_form"] = _rel(step1, (rate * sa, rate * sb))

    # Later Adam steps: the preconditioner from the second moments, but the current
    # gradient in place of Adam's first-moment average; the error is what the momentum
    # history adds.
    for _ in range(config.adam_steps):
        probe()
        opt.step()
    alpha, beta, a0, b0, ga, gb = probe()
    opt.step()
    st = opt.state[weight]
    t = int(st["step"])
    b1, b2 = opt.defaults["betas"]
    vhat = st["exp_avg_sq"].transpose(1, 2) / (1 - b2**t)
    P = 1.0 / ((vhat.sqrt() + opt.defaults["eps"]) * (1 - b1**t)) * (1 - b1)
    err["adam_later"] = _rel(
        measured(probe, a0, b0),
        theory.preconditioned_delta(alpha, beta, ga, gb, eta, P),
    )

    # SGD on every layer: alpha and beta move too, so the formula is only the V-part of
    # Delta a.
    model, probe = _fresh(config)
    alpha, beta, a0, b0, ga, gb = probe()
    torch.optim.SGD([probe.fc2.weight] if met else model.parameters(), lr=eta).step()
    err["sgd_all_layers"] = _rel(
        measured(probe, a0, b0), theory.sgd_delta(alpha, beta, ga, gb, eta)
    )

    # Entanglement measured: one SGD step on V that trains fact b alone moves a as well.
    model, probe = _fresh(config, facts=(1,))
    alpha, beta, a0, b0, _, _ = probe()
    torch.optim.SGD([probe.fc2.weight], lr=eta).step()
    da, db = measured(probe, a0, b0)
    drag = (da.norm(dim=-1) / db.norm(dim=-1)).numpy()
    drag_pred = ((alpha * beta).sum(-1).abs() / (beta * beta).sum(-1)).numpy()
    return StepCheck(
        config=config,
        rel_error=err,
        cross_to_self=cross,
        overlap=cos,
        drag=drag,
        drag_predicted=drag_pred,
    )


def mlp_hidden(model: Transformer, idx: torch.Tensor, layer: int = -1) -> torch.Tensor:
    """Activations ``relu(W1 LN(x))`` of the MLP of block ``layer``:
    ``idx [S, B, T]`` -> ``[S, B, T, ff_mult d]`` (the ``alpha`` of the chapter)."""
    S = idx.shape[0]
    x = model.wte[torch.arange(S)[:, None, None], idx]
    blocks = list(model.blocks)
    layer = layer % len(blocks)
    for blk in blocks[:layer]:
        x = blk(x)
    blk = blocks[layer]
    x = x + blk.attn(blk.ln1(x))
    return torch.relu(blk.ff.fc1(blk.ln2(x)))


@dataclass
class NameOverlap:
    """Mean cosine of the subject activations ``alpha_e`` (last MLP, after reading the
    name) between entity pairs that share the first name, the last name, or nothing;
    ``[S]`` each."""

    shared_first: np.ndarray
    shared_last: np.ndarray
    unrelated: np.ndarray


def name_overlap(
    model: Transformer, names: torch.Tensor, groups: torch.Tensor | None = None
) -> NameOverlap:
    """``names [S, E, 2]``: every entity's name is read alone; pairs are grouped by
    shared tokens of ``groups [S, E, 2]`` (default: ``names``; a control passes shuffled
    names)."""
    groups = names if groups is None else groups
    with torch.no_grad():
        h = mlp_hidden(model, names)[:, :, -1]  # [S, E, 4d]
        u = h / h.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        cos = u @ u.transpose(1, 2)  # [S, E, E]
    same_f = groups[:, :, None, 0] == groups[:, None, :, 0]
    same_l = groups[:, :, None, 1] == groups[:, None, :, 1]
    off = ~torch.eye(names.shape[1], dtype=torch.bool)

    def mean(mask):
        m = (mask & off).float()
        return ((cos * m).sum((1, 2)) / m.sum((1, 2))).numpy()

    return NameOverlap(
        shared_first=mean(same_f),
        shared_last=mean(same_l),
        unrelated=mean(~same_f & ~same_l),
    )


def shuffled_names(names: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """``names [S, E, 2]`` with the entities permuted per seed: the grouping of a
    control in which "shares a token" no longer says anything about the entity read."""
    gen = torch.Generator().manual_seed(seed + 31_337)
    perm = torch.stack([torch.randperm(names.shape[1], generator=gen) for _ in names])
    return names[torch.arange(names.shape[0])[:, None], perm]


@dataclass(frozen=True)
class OverlapConfig(surface_names.Config):
    """The names model of :mod:`revlib.experiments.surface_names` whose overlaps
    :func:`trained_overlap` reads; ``shuffled_groups`` (a control): pairs are grouped
    by another entity's name."""

    shuffled_groups: bool = False

    def __post_init__(self):
        _validate.boolean("shuffled_groups", self.shuffled_groups)
        super().__post_init__()


def trained_overlap(
    config: OverlapConfig,
) -> tuple[surface_names.Result, NameOverlap, NameOverlap]:
    """Train the standard model on surface names; the overlaps at initialisation and
    after."""
    init = Transformer(
        TransformerConfig(
            vocab_size=binding_task(
                config.n_a,
                config.n_b,
                config.n_rel,
                config.multiplicity,
                config.seeds[:1],
            ).vocab_size,
            block_size=6,
            n_layer=config.n_layer,
            n_head=config.n_head,
            d_model=config.d_model,
            positional="none",
            tied=True,
        ),
        n_seeds=config.n_seeds,
        seed=config.seed,
    )
    res = surface_names.run(config)
    names = res.task.names
    groups = shuffled_names(names, config.seed) if config.shuffled_groups else names
    return (
        res,
        name_overlap(init, names, groups),
        name_overlap(res.model, names, groups),
    )
