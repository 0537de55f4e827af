"""``python -m revlib bench``: the cost of one JEPA training step, against the machine's
peak.

A step's time is measured as the difference of two runs of
:func:`revlib.experiments.jepa.run` that differ only in their number of steps (same
setup, same two evaluations), divided by the difference in steps, so set-up and
evaluation cancel. Its floating-point work is counted by
``torch.utils.flop_counter.FlopCounterMode`` over one step the same way (matrix
products, forward and backward). The reference rate is a square float32 matrix product
of the same threads. Profile before you optimise: at these sizes a CPU step is bound by
its matrix products, so the ratio of the step's GFLOP/s to the matmul's says how much a
rewrite could gain; ``top`` lists the operators that take the step's time
(``torch.profiler``).
"""

from __future__ import annotations

import dataclasses
import time

import torch


def _run_seconds(config) -> float:
    from revlib.experiments import jepa

    start = time.perf_counter()
    jepa.run(config)
    return time.perf_counter() - start


def matmul_gflops(n: int = 2048, repeats: int = 10) -> float:
    """GFLOP/s of an ``n x n`` float32 matrix product on the current threads."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def step_flops(config) -> float:
    """Floating-point operations of one training step (forward and backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    from revlib.experiments import jepa

    counts = []
    for steps in (1, 2):
        mode = FlopCounterMode(display=False)
        with mode:
            jepa.run(dataclasses.replace(config, steps=steps))
        counts.append(mode.get_total_flops())
    return float(counts[1] - counts[0])


def _step_ms(base, steps: int) -> float:
    """ms per training step of ``base``: the fastest of three runs of each length (a
    busy machine only ever adds time), never negative."""
    t_short = min(_run_seconds(dataclasses.replace(base, steps=2)) for _ in range(3))
    t_long = min(
        _run_seconds(dataclasses.replace(base, steps=2 + steps)) for _ in range(3)
    )
    return max(t_long - t_short, 0.0) / steps * 1e3


def jepa_step(
    n_a: int = 2500,
    batch_size: int = 1024,
    steps: int = 20,
    multiplicity: int = 10,
    concept_ln: str = "layernorm",
    top: int = 8,
) -> dict:
    """Measure one JEPA 1/1 training step at the Part II long runs' size, with the
    plain InfoNCE loss (the previous implementation, which the stored runs used) and
    with ``dedupe`` (each relation and ``<mask>`` concept once per batch,
    :meth:`revlib.models.jepa.JEPA.infonce`), timed side by side in this one call.
    Returns ``ms_per_step``, ``gflop_per_step``, ``gflops`` (the step's rate),
    ``matmul_gflops`` and ``fraction_of_matmul`` of the plain step; the same of the
    deduplicated one under ``dedupe`` (a dict); ``speedup`` (plain ms over deduplicated
    ms); and ``top``: the operators with the most self CPU time of the deduplicated
    step."""
    from revlib.experiments import jepa

    if steps < 2:
        raise ValueError(f"steps must be at least 2, got {steps!r}")
    base = jepa.Config(
        n_a=n_a,
        multiplicity=multiplicity,
        concept_ln=concept_ln,
        batch_size=batch_size,
        n_seeds=1,
        eval_points=2,
        n_eval=1,
        steps=1,
    )
    fast = dataclasses.replace(base, dedupe=True)
    for cfg in (base, fast):  # warm the kernels and caches
        _run_seconds(dataclasses.replace(cfg, steps=2))
    peak = matmul_gflops()

    def measure(cfg, ms):
        flops = step_flops(cfg)
        rate = flops / (ms / 1e3) / 1e9 if ms > 0 else float("nan")
        return {
            "ms_per_step": ms,
            "gflop_per_step": flops / 1e9,
            "gflops": rate,
            "fraction_of_matmul": rate / peak if ms > 0 else float("nan"),
        }

    # interleaved, so that a change in the machine's load falls on both alike
    ms_plain, ms_fast = [], []
    for _ in range(2):
        ms_plain.append(_step_ms(base, steps))
        ms_fast.append(_step_ms(fast, steps))
    out = measure(base, min(ms_plain))
    out |= {"matmul_gflops": peak, "threads": torch.get_num_threads()}
    out["dedupe"] = measure(fast, min(ms_fast))
    out["speedup"] = (
        out["ms_per_step"] / out["dedupe"]["ms_per_step"]
        if out["dedupe"]["ms_per_step"] > 0
        else float("nan")
    )
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        jepa.run(dataclasses.replace(fast, steps=1 + min(steps, 5)))
    rows = sorted(
        prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True
    )
    total = sum(e.self_cpu_time_total for e in rows) or 1.0
    out["top"] = [(e.key, e.self_cpu_time_total / total) for e in rows[:top]]
    return out


def report(result: dict) -> str:
    def line(name, r):
        return (
            f"  {name}: {r['ms_per_step']:.1f} ms/step, "
            f"{r['gflop_per_step']:.2f} GFLOP/step, {r['gflops']:.1f} GFLOP/s = "
            f"{r['fraction_of_matmul']:.0%} of the matmul's"
        )

    lines = [
        f"JEPA 1/1 training step ({result['threads']} thread(s)); a 2048^2 matmul runs "
        f"at {result['matmul_gflops']:.1f} GFLOP/s",
        line("plain InfoNCE (previous, the stored runs')", result),
        line("dedupe (relation and <mask> concepts once per batch)", result["dedupe"]),
        f"  speed-up: {result['speedup']:.2f}x (measured side by side in this run)",
        "self CPU time by operator (share of the profiled run, dedupe):",
    ]
    lines += [f"  {share:6.1%}  {name}" for name, share in result["top"]]
    return "\n".join(lines)
