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
_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def setup(seed: int, threads: int | None = None) -> torch.Generator:
    """Seed python, numpy and torch; fix thread counts; turn on deterministic
    algorithms.

    ``threads`` defaults to the environment variable ``REVLIB_THREADS``, else 1.
    ``REVLIB_DTYPE`` (``float32``, the default, or ``float64``) sets torch's default
    floating type, for measuring what float64 would cost and change. The
    test suite sets it to 2 (with another CPU kernel path) to simulate a machine that
    did not produce the stored outputs. Returns a ``torch.Generator`` seeded with
    ``seed``, for code that wants an explicit random stream rather than the global one.
    Call it once, at the top of a notebook.
    """
    _validate.integer("seed", seed, 0, 2**32 - 1)
    if threads is None:
        raw = os.environ.get("REVLIB_THREADS", "1")
        try:
            threads = int(raw)
        except ValueError:
            raise ValueError(
                f"REVLIB_THREADS must be an integer in [1, 256], got {raw!r}"
            ) from None
    _validate.integer("threads", threads, 1, 256)
    dtype = os.environ.get("REVLIB_DTYPE", "float32")
    if dtype not in _DTYPES:
        raise ValueError(
            f"REVLIB_DTYPE must be one of {sorted(_DTYPES)}, got {dtype!r}"
        )
    # float64 is a measurement setting (issue 22's cost study), not the stored one: the
    # stored outputs are float32
    torch.set_default_dtype(_DTYPES[dtype])
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


# The kernel path one level below each native one: ATen's vector width and MKL's code
# path.
_LOWER = {"AVX512": ("avx2", "AVX2")}
_LOWEST = ("default", "SSE4_2")


def other_machine() -> dict[str, str]:
    """Environment variables under which this machine computes as another one would.

    The stored notebook outputs must hold on machines that did not make them. Training
    amplifies the last-digit differences of other CPU kernels (vector width, MKL's
    blocking of large reductions), so the tests re-run every notebook one kernel level
    below this CPU's: on an AVX-512 machine ATen's AVX2 kernels and MKL's AVX2 path,
    elsewhere ATen's generic kernels and MKL's SSE4.2 path; and 2 threads
    (``REVLIB_THREADS``), which splits reductions differently from the default 1. One
    level down is a real other machine for either kind (most x86 machines are AVX2 or
    AVX-512) and costs less than the generic path: on AVX-512, MKL's SSE4.2 GEMM is
    about 4.7 times slower than native, its AVX2 GEMM 1.7.
    """
    aten, mkl = _LOWER.get(torch.backends.cpu.get_cpu_capability(), _LOWEST)
    return {
        "ATEN_CPU_CAPABILITY": aten,
        "MKL_ENABLE_INSTRUCTIONS": mkl,
        "REVLIB_THREADS": "2",
    }


def provenance() -> dict[str, str]:
    """The machine that executes a notebook, as its stored outputs record it (notebook
    metadata ``revlib.provenance``, written by ``scripts/refresh-notebooks``): the CPU's
    model name, the kernel level ATen uses (``ATEN_CPU_CAPABILITY`` may lower it), MKL's
    code path if one is forced, the thread count the notebooks run with, and torch."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (
                    line.split(":", 1)[1].strip()
                    for line in f
                    if line.startswith("model name")
                ),
                cpu,
            )
    except OSError:
        pass
    return {
        "cpu": cpu,
        "kernel level (ATen)": torch.backends.cpu.get_cpu_capability(),
        "MKL_ENABLE_INSTRUCTIONS": os.environ.get("MKL_ENABLE_INSTRUCTIONS", "native"),
        "threads": os.environ.get("REVLIB_THREADS", "1"),
        "torch": torch.__version__,
        # only where it is not the stored outputs' float32 (a measurement setting)
        **(
            {"dtype": os.environ["REVLIB_DTYPE"]}
            if os.environ.get("REVLIB_DTYPE", "float32") != "float32"
            else {}
        ),
    }


def seed_list(seed: int, n_seeds: int) -> list[int]:
    """The seeds ``seed, seed + 1, ..., seed + n_seeds - 1`` that train side by side."""
    return [seed + i for i in range(n_seeds)]


def generator(seed: int) -> torch.Generator:
    """A fresh CPU generator for ``seed`` (data generation uses its own streams)."""
    _validate.integer("seed", seed, 0, 2**63 - 1)
    return torch.Generator().manual_seed(seed)


def environment_report() -> dict[str, str]:
    """Versions and settings that the stored outputs depend on (for the provenance
    page)."""
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
