"""Chapter "The task and the gradients at initialisation": empirical gradients of the
simplified predictor (:mod:`revlib.theory.associations`) on real batches of noisy
recall, against the closed forms, and their signal-to-noise ratio against the batch
size.

The signal sweep measures the gradients with ``torch.autograd`` (independently of the
closed forms' formulas); the batch study uses per-sequence sums (a unit test checks them
against autograd), from which any batch's gradient follows without re-running the
model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.config import Control
from revlib.data import noisy_recall as nr
from revlib.theory import associations as theory

NOTEBOOK = "associations/gradients_at_init"
# The notebook's controls (its CONTROL), each with the Config change it makes.
CONTROLS = (
    Control(
        "no_noise",
        "science",
        "every sequence sampled with noise_prob = 0; the closed forms keep alpha (no "
        "noise token to learn)",
        {"noise": False},
    ),
    Control(
        "no_attention",
        "science",
        "the attention removed: the value path reads the current token instead of the "
        "context average h_t",
        {"attention": False},
    ),
)
SIZE_KNOBS = ("N_SEQUENCES", "SEQ_LEN")  # what check-claims --scale multiplies
QUICK = {"N_SEQUENCES": 2048}  # CI's control runs

_CHUNK = 1024  # sequences per generated chunk: bounds the [N, T, V] context histograms


@dataclass(frozen=True)
class Config:
    """``alpha`` of the batch-size study, ``alphas`` of the signal sweep,
    ``n_sequences`` per ``alpha`` (a multiple of 1024), ``batch_sizes`` in sequences
    (each divides ``n_sequences``). Controls: ``noise=False`` samples every sequence
    with ``noise_prob = 0`` while the closed forms keep ``alpha`` (no noise token to
    learn); ``attention=False`` removes the attention: the value path reads the current
    token instead of the context average ``h_t``. ``chain``: the background chain
    (:data:`revlib.data.noisy_recall.CHAINS`), the paper's tiny-Shakespeare bigrams by
    default."""

    alpha: float = 0.5
    alphas: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    seq_len: int = 64
    n_sequences: int = 8192
    batch_sizes: tuple[int, ...] = (4, 16, 64, 256)
    seed: int = 0
    noise: bool = True
    attention: bool = True
    chain: str = "shakespeare"

    def __post_init__(self):
        _validate.real("alpha", self.alpha, 0.0, 1.0, lo_open=True, hi_open=True)
        _validate.sequence("alphas", self.alphas, 1)
        for i, a in enumerate(self.alphas):
            _validate.real(f"alphas[{i}]", a, 0.0, 1.0, lo_open=True, hi_open=True)
        _validate.integer("seq_len", self.seq_len, 8, 4096)
        _validate.integer("n_sequences", self.n_sequences, _CHUNK, 10**6)
        if self.n_sequences % _CHUNK:
            raise ValueError(
                f"n_sequences must be a multiple of {_CHUNK}, got {self.n_sequences}"
            )
        _validate.sequence("batch_sizes", self.batch_sizes, 1)
        for i, b in enumerate(self.batch_sizes):
            _validate.integer(f"batch_sizes[{i}]", b, 1, self.n_sequences // 8)
        _validate.integer("seed", self.seed, 0, 2**31 - 1)
        for name in ("noise", "attention"):
            _validate.boolean(name, getattr(self, name))
        _validate.choice("chain", self.chain, nr.CHAINS)


@dataclass
class Result:
    """Signal sweep over ``alphas`` ``[A]``: FF margin ``ff_margin`` and copy signal
    ``copy`` of autograd's gradients, with ``rho`` and the mean label share
    ``label_share`` (``E[h_t(y)]``) that the closed forms use and ``n_positions`` the
    loss positions. Batch study at ``alpha`` over ``batch_sizes`` ``[K]``: ``ff_std`` /
    ``attn_std`` the spread over batches of the FF ``tau`` margin and of one copy entry
    (RMS over entries), ``positions`` mean loss positions per batch, ``ff_signal`` /
    ``attn_signal`` the full-pool means."""

    config: Config
    alphas: np.ndarray
    ff_margin: np.ndarray
    copy: np.ndarray
    rho: np.ndarray
    label_share: np.ndarray
    n_positions: np.ndarray
    batch_sizes: np.ndarray
    positions: np.ndarray
    ff_std: np.ndarray
    attn_std: np.ndarray
    ff_signal: float
    attn_signal: float

    @property
    def ff_snr(self) -> np.ndarray:
        return self.ff_signal / self.ff_std

    @property
    def attn_snr(self) -> np.ndarray:
        return self.attn_signal / self.attn_std


def _chunks(config: Config, alpha: float, stream: int):
    a = alpha if config.noise else 0.0
    for k in range(config.n_sequences // _CHUNK):
        yield nr.sample(
            [config.seed], _CHUNK, config.seq_len, a, stream + k, config.chain
        )


def _statistics(config: Config, alpha: float, stream: int) -> dict[str, torch.Tensor]:
    parts = [
        theory.sequence_statistics(data, config.attention)
        for data in _chunks(config, alpha, stream)
    ]
    return {key: torch.cat([p[key] for p in parts], dim=1) for key in parts[0]}


def run(config: Config) -> Result:
    """Measure the gradients at initialisation on ``n_sequences`` sequences per
    ``alpha``."""
    margin, copy, rho, share, npos = [], [], [], [], []
    for i, a in enumerate(config.alphas):
        g_f, g_v, n, r, hy = 0.0, 0.0, 0.0, 0.0, 0.0
        for data in _chunks(config, a, stream=100 * (i + 1)):
            h = theory.context_histograms(data, config.attention)
            f, v, count = theory.autograd_init_gradients(data, config.attention, h=h)
            g_f, g_v, n = g_f + f[0] * count[0], g_v + v[0] * count[0], n + count[0]
            st = theory.sequence_statistics(data, config.attention, h=h)
            r, hy = r + st["rho"].sum(), hy + st["sum_hy"].sum()
        tau = nr.chain(config.chain).noise_token
        margin.append(theory.ff_margin(g_f / n, tau).item())
        copy.append(theory.copy_signal(g_v / n).item())
        rho.append((r / n).item())
        share.append((hy / n).item())
        npos.append(n.item())
    st = _statistics(config, config.alpha, stream=50)
    full = theory.batch_estimates(st, config.n_sequences)
    ff_signal, attn_signal = full["ff_margin"][0, 0].item(), full["copy"][0, 0].item()
    positions, ff_std, attn_std = [], [], []
    for b in config.batch_sizes:
        est = theory.batch_estimates(st, b)
        positions.append(est["n_pos"][0].mean().item())
        ff_std.append(est["ff_margin"][0].std().item())
        # spread of each diagonal (copy) entry over batches, RMS over the entries
        attn_std.append(est["diag"][0].std(dim=0).pow(2).mean().sqrt().item())
    return Result(
        config=config,
        alphas=np.array(config.alphas),
        ff_margin=np.array(margin),
        copy=np.array(copy),
        rho=np.array(rho),
        label_share=np.array(share),
        n_positions=np.array(npos),
        batch_sizes=np.array(config.batch_sizes),
        positions=np.array(positions),
        ff_std=np.array(ff_std),
        attn_std=np.array(attn_std),
        ff_signal=ff_signal,
        attn_signal=attn_signal,
    )
