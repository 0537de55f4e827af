"""Chapter "Training dynamics and truncation": the two-layer toy model of Chen, Bruna &
Bietti (2025) on noisy in-context recall, with the feed-forward ablations and
truncations.

The model follows the original code (frozen N(0, 1) token and positional embeddings, a
frozen untied unembedding, no LayerNorm, one head per layer with ``W_Q = I``, trainable
``W_K``, ``W_V``, ``W_O`` and feed-forward layers) at a CPU scale (``d = 64``,
``T = 64``, batch 32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from revlib import _validate, probes
from revlib.config import Control, ExperimentConfig
from revlib.data import noisy_recall as nr
from revlib.metrics import masked_mean
from revlib.models.transformer import (
    Internals,
    Transformer,
    TransformerConfig,
    answer_loss,
)
from revlib.train import History, train

NOTEBOOK = "associations/ff_vs_attention"
# The notebook's controls (its CONTROL), each with the Config change it makes; they
# change the training only (every claim keeps the nominal alpha).
CONTROLS = (
    Control(
        "no_noise",
        "science",
        "trained with noise_prob = 0: no noise token to store",
        {"alpha": 0.0},
    ),
    Control(
        "ff2_frozen",
        "science",
        "FF2 keeps its initial weights (it cannot store q -> tau)",
        {"frozen": ("ff2",)},
    ),
    Control(
        "attention_frozen",
        "science",
        "every attention layer keeps its initial weights (no induction head can form)",
        {"frozen": ("attention",)},
    ),
)
SIZE_KNOBS = ("D", "SEQ_LEN")  # what check-claims --scale multiplies
# CI's control runs. At 400 steps attention has not learnt the recall yet, so these
# claims do not hold in CI's quick run and its controls prove nothing about them: full
# size only.
QUICK = {
    "N_SEEDS": 1,
    "STEPS": 400,
    "full_size_only": [
        "attention-recalls",
        "removal-raises-p-ybar",
        "attention-on-ybar",
        "partial-rank-raises-tau",
        "variants-recall",
    ],
}

METRICS = (
    "p_tau",
    "p_ybar",
    "acc",
    "p_tau_noff2",
    "p_ybar_noff2",
    "acc_noff2",
    "att_ybar",
    "att_tau",
    "ff2_margin",
    "train_p_tau",
)
FROZEN = ("ff2", "attention")


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """``d`` width, ``seq_len`` T, ``alpha`` noise probability, ``ff`` the feed-forward
    kind of layers 1 and 2 (``"mlp"``, ``"linear"``, ``"none"``), ``ff_mult`` MLP width
    factor. SGD with momentum as in the original script; ``n_test`` clean test
    sequences. ``rank_fractions``: fractions ``rho`` of FF2's rank kept in the final
    truncation sweep. ``frozen``: parts that keep their initial weights during training
    (controls): ``"ff2"`` (FF2 never learns, so it cannot store ``q -> tau``),
    ``"attention"`` (every attention layer, so no induction head can form).
    ``chain``: the background chain (:data:`revlib.data.noisy_recall.CHAINS`): the
    paper's tiny-Shakespeare bigrams with trigger ``' '`` and noise token ``'!'``, or
    the book's synthetic stand-in. ``max_grad_norm``: a seed's gradient is scaled
    down to this norm when above it (the original code does not clip; at batch 32 the
    noisy runs stay below 5, but without noise a seed's loss can spike and its weights
    overflow to NaN within tens of steps)."""

    d: int = 64
    seq_len: int = 64
    alpha: float = 0.5
    ff: tuple[str, str] = ("mlp", "mlp")
    ff_mult: int = 4
    n_seeds: int = 2
    steps: int = 1000
    batch_size: int = 32
    lr: float = 0.03
    momentum: float = 0.9
    weight_decay: float = 1e-4
    n_test: int = 128
    eval_points: int = 11
    rank_fractions: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
    frozen: tuple[str, ...] = ()
    chain: str = "shakespeare"
    max_grad_norm: float = 10.0

    OPTIMIZER = "sgd"

    def __post_init__(self):
        _validate.integer("d", self.d, 4, 4096)
        _validate.integer("seq_len", self.seq_len, 8, 4096)
        _validate.real("alpha", self.alpha, 0.0, 1.0, hi_open=True)
        _validate.sequence("ff", self.ff, 2, 2)  # the kind of both layers
        if self.ff[1] == "none":
            raise ValueError(
                "ff[1] (FF2) must be 'mlp' or 'linear': the chapter ablates it"
            )
        _validate.integer("ff_mult", self.ff_mult, 1, 64)
        _validate.integer("n_test", self.n_test, 8, 100_000)
        _validate.sequence("rank_fractions", self.rank_fractions)
        for i, r in enumerate(self.rank_fractions):
            _validate.real(f"rank_fractions[{i}]", r, 0.0, 1.0)
        _validate.sequence("frozen", self.frozen)
        for i, part in enumerate(self.frozen):
            _validate.choice(f"frozen[{i}]", part, FROZEN)
        _validate.choice("chain", self.chain, nr.CHAINS)
        self.model_config()
        super().__post_init__()  # seed, n_seeds; steps, lr, batch_size, momentum, ...

    def model_config(self) -> TransformerConfig:
        # nn.Linear's default init has std 1/sqrt(3 d); the original code keeps it for
        # every trainable matrix and for the frozen unembedding, and N(0, 1) embeddings.
        std = 1.0 / math.sqrt(3 * self.d)
        return TransformerConfig(
            vocab_size=nr.VOCAB_SIZE,
            block_size=self.seq_len,
            n_layer=2,
            n_head=1,
            d_model=self.d,
            ff=tuple(self.ff),
            ff_mult=self.ff_mult,
            positional="absolute",
            layernorm=False,
            tied=False,
            freeze_embeddings=True,
            freeze_unembedding=True,
            query_identity=True,
            init_std=std,
            embed_std=1.0,
            head_std=std,
        )


@dataclass
class Result:
    """``history[name]`` ``[E, S]`` for each name in :data:`METRICS`. ``ranks``: the
    ranks kept in the final FF2 sweep; ``sweep[name]`` ``[R, S]`` for p_tau, p_ybar,
    acc."""

    config: Config
    history: History
    model: Transformer
    ranks: list[int]
    sweep: dict[str, np.ndarray] = field(default_factory=dict)
    sweep_w1: dict[str, np.ndarray] = field(default_factory=dict)
    tau_logit: dict[str, np.ndarray] = field(default_factory=dict)
    captured: dict[str, np.ndarray] = field(default_factory=dict)
    n_params: int = 0

    def final(self, name: str) -> np.ndarray:
        return self.history.final(name)


def ff2_weight(model: Transformer) -> torch.nn.Parameter:
    """The FF2 matrix that the truncation acts on: ``W2`` (hidden -> d) of an MLP, or
    the single matrix of a linear FF."""
    ff = model.blocks[1].ff
    return ff.fc2.weight if ff.kind == "mlp" else ff.fc.weight


def recall_metrics(
    model: Transformer, data: nr.NoisyRecall, ff_off=frozenset()
) -> dict:
    """Mean p(tau), p(ybar) and argmax accuracy (= ybar) per seed ``[S]`` at the loss
    positions of sequences whose answer is neither ``tau`` nor the trigger."""
    probs = F.softmax(model(data.x, ff_off=ff_off).double(), dim=-1)
    q = _query(data)
    ybar = data.ybar[:, :, None].expand_as(data.x)
    p_ybar = probs.gather(-1, ybar[..., None])[..., 0]
    acc = (probs.argmax(-1) == ybar).double()
    return {
        "p_tau": masked_mean(probs[..., data.noise_token], q),
        "p_ybar": masked_mean(p_ybar, q),
        "acc": masked_mean(acc, q),
    }


def attention_split(model: Transformer, data: nr.NoisyRecall) -> dict:
    """Layer-2 attention mass from loss positions onto earlier positions that followed a
    trigger and hold ``ybar`` (``att_ybar``) or ``tau`` (``att_tau``), per seed
    ``[S]``."""
    internals = Internals()
    model(data.x, internals)
    att = internals.attention[1]
    holds_ybar = data.after_trigger & (data.x == data.ybar[:, :, None])
    holds_tau = data.after_trigger & (data.x == data.noise_token)
    q = _query(data)
    return {
        "att_ybar": probes.attention_mass(att, q, holds_ybar),
        "att_tau": probes.attention_mass(att, q, holds_tau),
    }


def ff2_trigger_margin(model: Transformer, data: nr.NoisyRecall) -> torch.Tensor:
    """``tau`` logit minus the largest other logit of ``W_U FF2(w_E(q))`` per seed
    ``[S]``: the trigger's raw embedding through FF2 alone (the original code's mlp2
    margin), for the trigger and noise token of ``data``'s chain."""
    e_q = model.wte[:, data.trigger][:, None, None, :]  # [S, 1, 1, d]
    out = model.blocks[1].ff(e_q)[:, 0, 0]  # [S, d]
    logits = torch.einsum("sd,svd->sv", out, model.head)
    return probes.margin(logits, data.noise_token)


def run(config: Config) -> Result:
    """Train ``n_seeds`` models at once on fresh noisy batches; evaluate on clean
    data."""
    S, B = config.n_seeds, config.batch_size
    chain = config.chain
    pool = nr.sample(
        config.seeds, config.steps * B, config.seq_len, config.alpha, 0, chain
    )
    clean = nr.sample(config.seeds, config.n_test, config.seq_len, 0.0, 1, chain)
    noisy = nr.sample(
        config.seeds, config.n_test, config.seq_len, config.alpha, 2, chain
    )
    model = Transformer(config.model_config(), n_seeds=S, seed=config.seed)
    frozen = {"ff2": [model.blocks[1].ff], "attention": [b.attn for b in model.blocks]}
    for part in config.frozen:
        for module in frozen[part]:
            module.requires_grad_(False)

    def loss(idx):
        batch = pool.select(idx)
        return answer_loss(model(batch.x), batch.y, batch.mask)

    def evaluate():
        out = dict(recall_metrics(model, clean))
        out.update(
            {
                f"{k}_noff2": v
                for k, v in recall_metrics(model, clean, ff_off={1}).items()
            }
        )
        out.update(attention_split(model, noisy))
        out["ff2_margin"] = ff2_trigger_margin(model, clean)
        out["train_p_tau"] = recall_metrics(model, noisy)["p_tau"]
        return {name: out[name] for name in METRICS}

    history = train(
        model,
        loss,
        config.train_config(),
        evaluate,
        n_train=pool.x.shape[1],
        n_seeds=S,
        batch_seeds=[s + 104_729 for s in config.seeds],
    )
    return Result(
        config=config,
        history=history,
        model=model,
        n_params=model.n_params(),
        **truncation(model, config, clean),
    )


def truncation(model: Transformer, config: Config, clean: nr.NoisyRecall) -> dict:
    """The rank sweeps of a trained model on ``clean`` data, as :class:`Result`'s
    fields ``ranks``, ``sweep``, ``sweep_w1``, ``tau_logit`` and ``captured``."""
    weight = ff2_weight(model)
    ranks = sorted({probes.rank_of_fraction(weight, r) for r in config.rank_fractions})
    ff2 = model.blocks[1].ff
    mats = {"W2": weight, **({"W1": ff2.fc1.weight} if ff2.kind == "mlp" else {})}
    return dict(
        ranks=ranks,
        sweep=_truncation_sweep(model, clean, weight, ranks),
        sweep_w1=(
            _truncation_sweep(model, clean, mats["W1"], ranks) if "W1" in mats else {}
        ),
        tau_logit={
            name: _tau_logit_sweep(model, clean, w, ranks) for name, w in mats.items()
        },
        captured=_captured(model, clean, mats, ranks),
    )


def ff2_input(model: Transformer, x: torch.Tensor) -> torch.Tensor:
    """The residual stream entering FF2 (layer 1's block, then layer 2's attention):
    tokens ``[S, B, T]`` -> ``[S, B, T, d]``."""
    S, B, T = x.shape
    h = model.wte[torch.arange(S)[:, None, None], x] + model.wpe[:, None, :T]
    h = model.blocks[0](h)
    blk = model.blocks[1]
    return h + blk.attn(blk.ln1(h))


def ff2_tau_logit(model: Transformer, data: nr.NoisyRecall) -> torch.Tensor:
    """FF2's direct push towards ``tau`` at the loss positions of ``data``: its output
    read through the unembedding, the ``tau`` logit minus the mean of the other logits,
    averaged over the positions, per seed ``[S]`` (a logit lens on FF2 alone)."""
    h = ff2_input(model, data.x)
    logits = model.blocks[1].ff(h) @ model.head.transpose(1, 2)[:, None]  # [S,B,T,V]
    tau = data.noise_token
    others = (logits.sum(-1) - logits[..., tau]) / (logits.shape[-1] - 1)
    return masked_mean(logits[..., tau] - others, _query(data))


def _truncation_sweep(model, clean, weight, ranks) -> dict[str, np.ndarray]:
    """p_tau, p_ybar and acc ``[R, S]`` on ``clean`` with ``weight`` truncated to each
    of ``ranks``."""
    sweep: dict[str, list] = {"p_tau": [], "p_ybar": [], "acc": []}
    with torch.no_grad():
        for r in ranks:
            with probes.truncated(weight, r):
                m = recall_metrics(model, clean)
            for k in sweep:
                sweep[k].append(m[k].numpy())
    return {k: np.stack(v) for k, v in sweep.items()}


def _tau_logit_sweep(model, clean, weight, ranks) -> np.ndarray:
    """:func:`ff2_tau_logit` ``[R, S]`` with ``weight`` truncated to each rank."""
    out = []
    with torch.no_grad():
        for r in ranks:
            with probes.truncated(weight, r):
                out.append(ff2_tau_logit(model, clean).numpy())
    return np.stack(out)


def _captured(model, clean, mats, ranks) -> dict[str, np.ndarray]:
    """Where the two matrices keep what FF2 needs, ``[R, S]`` per rank: ``W2``, the
    share of the ``tau`` direction of the unembedding (``tau`` minus the mean of the
    other rows) that lies in the span of ``W2``'s top output directions; ``W1``, the
    share of the mean FF2 input at the loss positions that lies in the span of
    ``W1``'s top input directions (squared norms)."""
    tau = clean.noise_token
    head = model.head  # [S, V, d]
    u = head[:, tau] - (head.sum(1) - head[:, tau]) / (head.shape[1] - 1)  # [S, d]
    out = {}
    with torch.no_grad():
        _, _, vh = torch.linalg.svd(mats["W2"], full_matrices=False)  # [S, k, d]
        share = (torch.einsum("skd,sd->sk", vh, u) ** 2).cumsum(-1) / (u**2).sum(-1)[
            :, None
        ]
        out["W2"] = np.stack([_at(share, r) for r in ranks])
        if "W1" in mats:
            h = ff2_input(model, clean.x)
            q = _query(clean)[..., None].to(h.dtype)
            hm = (h * q).sum((1, 2)) / q.sum((1, 2)).clamp_min(1)  # [S, d]
            u1, _, _ = torch.linalg.svd(mats["W1"], full_matrices=False)  # [S, d, k]
            share1 = (torch.einsum("sdk,sd->sk", u1, hm) ** 2).cumsum(-1) / (hm**2).sum(
                -1
            )[:, None]
            out["W1"] = np.stack([_at(share1, r) for r in ranks])
    return out


def _at(share: torch.Tensor, rank: int) -> np.ndarray:
    """``share[:, rank - 1]`` per seed, 0 at rank 0."""
    if rank == 0:
        return np.zeros(share.shape[0])
    return share[:, rank - 1].double().numpy()


def load_weights(path, n_test: int = 128) -> tuple[Config, Transformer, nr.NoisyRecall]:
    """A stored trained model (the weights file of a GPU run, ``data/gpu_runs``):
    ``(config, model, clean)`` with ``clean`` a fresh clean test set of ``n_test``
    sequences of its seeds (stream 1, as :func:`run` draws them)."""
    _validate.integer("n_test", n_test, 8, 100_000)
    stored = torch.load(path, weights_only=True)
    fields = {
        k: tuple(v) if isinstance(v, list) else v for k, v in stored["config"].items()
    }
    config = Config(**fields)
    model = Transformer(config.model_config(), n_seeds=config.n_seeds, seed=config.seed)
    model.load_state_dict(stored["state"])
    clean = nr.sample(config.seeds, n_test, config.seq_len, 0.0, 1, config.chain)
    return config, model, clean


def reset_frozen(model: Transformer, config: Config) -> None:
    """Give the parts ``config.frozen`` names their initial weights (those a run with
    them frozen keeps): the controls ``ff2_frozen`` and ``attention_frozen`` applied to
    a stored, trained model."""
    fresh = Transformer(config.model_config(), n_seeds=config.n_seeds, seed=config.seed)
    parts = {
        "ff2": lambda m: [m.blocks[1].ff],
        "attention": lambda m: [b.attn for b in m.blocks],
    }
    with torch.no_grad():
        for part in config.frozen:
            for mine, init in zip(parts[part](model), parts[part](fresh), strict=True):
                for p, q in zip(mine.parameters(), init.parameters(), strict=True):
                    p.copy_(q)


def _query(data: nr.NoisyRecall) -> torch.Tensor:
    valid = (data.ybar != data.noise_token) & (data.ybar != data.trigger)
    return data.mask & valid[:, :, None]
