"""Chapter "The task and the gradients at initialisation": empirical gradients of the
simplified predictor (:mod:`revlib.theory.associations`) on real batches of noisy recall,
against the closed forms, and their signal-to-noise ratio against the batch size."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate
from revlib.data import noisy_recall as nr
from revlib.theory import associations as theory

_CHUNK = 1024  # sequences per generated chunk: bounds the [N, T, V] context histograms


@dataclass(frozen=True)
class Config:
    """``alpha`` of the batch-size study, ``alphas`` of the signal sweep, ``n_sequences``
    per ``alpha`` (a multiple of 1024), ``batch_sizes`` in sequences (each divides
    ``n_sequences``)."""

    alpha: float = 0.5
    alphas: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    seq_len: int = 64
    n_sequences: int = 8192
    batch_sizes: tuple[int, ...] = (4, 16, 64, 256)
    seed: int = 0

    def __post_init__(self):
        _validate.real("alpha", self.alpha, 0.0, 1.0, lo_open=True, hi_open=True)
        for i, a in enumerate(self.alphas):
            _validate.real(f"alphas[{i}]", a, 0.0, 1.0, lo_open=True, hi_open=True)
        _validate.integer("seq_len", self.seq_len, 8, 4096)
        _validate.integer("n_sequences", self.n_sequences, _CHUNK, 10**6)
        if self.n_sequences % _CHUNK:
            raise ValueError(f"n_sequences must be a multiple of {_CHUNK}, got {self.n_sequences}")
        for i, b in enumerate(self.batch_sizes):
            _validate.integer(f"batch_sizes[{i}]", b, 1, self.n_sequences // 8)
        _validate.integer("seed", self.seed, 0, 2**31 - 1)


@dataclass
class Result:
    """Signal sweep over ``alphas`` ``[A]``: measured FF margin ``ff_margin`` and copy signal
    ``copy``, with ``rho`` and the mean label share ``label_share`` that the closed forms use.
    Batch study at ``alpha`` over ``batch_sizes`` ``[K]``: ``ff_std`` / ``attn_std`` the
    spread over batches of the FF ``tau`` margin and of one copy entry (RMS over entries),
    ``positions`` mean loss positions per batch, ``ff_signal`` / ``attn_signal`` the
    full-pool means."""

    config: Config
    alphas: np.ndarray
    ff_margin: np.ndarray
    copy: np.ndarray
    rho: np.ndarray
    label_share: np.ndarray
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


def _statistics(config: Config, alpha: float, stream: int) -> dict[str, torch.Tensor]:
    parts = [theory.sequence_statistics(nr.sample([config.seed], _CHUNK, config.seq_len, alpha,
                                                  stream=stream + k))
             for k in range(config.n_sequences // _CHUNK)]
    return {key: torch.cat([p[key] for p in parts], dim=1) for key in parts[0]}


def run(config: Config) -> Result:
    """Measure the gradients at initialisation on ``n_sequences`` sequences per ``alpha``."""
    margin, copy, rho, share = [], [], [], []
    for i, a in enumerate(config.alphas):
        st = _statistics(config, a, stream=100 * (i + 1))
        full = theory.batch_estimates(st, config.n_sequences)
        margin.append(full["ff_margin"][0, 0].item())
        copy.append(full["copy"][0, 0].item())
        n = st["n_pos"].sum().item()
        rho.append(st["rho"].sum().item() / n)
        share.append(st["sum_hy"].sum().item() / n)
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
    return Result(config=config, alphas=np.array(config.alphas), ff_margin=np.array(margin),
                  copy=np.array(copy), rho=np.array(rho), label_share=np.array(share),
                  batch_sizes=np.array(config.batch_sizes), positions=np.array(positions),
                  ff_std=np.array(ff_std), attn_std=np.array(attn_std),
                  ff_signal=ff_signal, attn_signal=attn_signal)
