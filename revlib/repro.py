"""Reproducibility: one call fixes seeds, thread counts and deterministic algorithms.

Stored notebook outputs are compared with a re-run on another machine (nbval), so the
numerics must not depend on how many cores that machine has: float32 reductions in torch
change in the 6th-7th digit with the thread count. We therefore fix the thread count
(one by default) and print only rounded numbers.
"""

from __future__ import annotations

import os
import platform
import random
import sys

import numpy as np
import torch

from revlib import _validate

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def setup(seed: int, threads: int | None = None) -> torch.Generator:
    """Seed python, numpy and torch; fix thread counts; turn on deterministic algorithms.

    ``threads`` defaults to the environment variable ``REVLIB_THREADS``, else 1. The test
    suite sets it to 2 (with another CPU kernel path) to simulate a machine that did not
    produce the stored outputs. Returns a ``torch.Generator`` seeded with ``seed``, for code
    that wants an explicit random stream rather than the global one. Call it once, at the
    top of a notebook.
    """
    _validate.integer("seed", seed, 0, 2**32 - 1)
    if threads is None:
        raw = os.environ.get("REVLIB_THREADS", "1")
        try:
            threads = int(raw)
        except ValueError:
            raise ValueError(f"REVLIB_THREADS must be an integer in [1, 256], got {raw!r}") from None
    _validate.integer("threads", threads, 1, 256)
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    torch.set_num_threads(threads)
    try:  # may only be set once per process, before any inter-op work
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def seed_list(seed: int, n_seeds: int) -> list[int]:
    """The seeds ``seed, seed + 1, ..., seed + n_seeds - 1`` that train side by side."""
    return [seed + i for i in range(n_seeds)]


def generator(seed: int) -> torch.Generator:
    """A fresh CPU generator for ``seed`` (data generation uses its own streams)."""
    _validate.integer("seed", seed, 0, 2**63 - 1)
    return torch.Generator().manual_seed(seed)


def environment_report() -> dict[str, str]:
    """Versions and settings that the stored outputs depend on (for the provenance page)."""
    import matplotlib
    import seaborn

    import revlib

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "seaborn": seaborn.__version__,
        "revlib": revlib.__version__,
        "torch threads": str(torch.get_num_threads()),
        "deterministic algorithms": str(torch.are_deterministic_algorithms_enabled()),
    }
