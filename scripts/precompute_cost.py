"""What the stored runs in ``data/sweeps/`` cost on one unshared CPU, measured here.

The CPU time a record holds is its process's, and it depends on what else ran: this
project's 2 vCPUs are two hyperthreads of one core, so two runs side by side each take
about twice the CPU time they take alone. To state the precompute budget in CPU time
that does not depend on how the sweeps were scheduled, this script re-times a short
piece of every stored configuration alone (one process, one thread, as a sweep worker):
the CPU time of ``K1`` and of ``K2`` training steps gives the cost per step and the
fixed cost (data, model, two evaluations), and the estimate for a record is
``fixed + per_step * steps``. Evaluations beyond two are not counted (each is a small
fraction of a run here).

    python scripts/precompute_cost.py [--k1 200 --k2 800] [data/sweeps/jepa ...]

Prints a markdown table per folder and in all: records, CPU hours recorded, CPU hours
estimated alone. Run it on a quiet machine: anything else running inflates the timings.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu(name: str, config) -> float:
    """CPU seconds of one run, timed as a stored record times it
    (:func:`revlib.sweeps.record`)."""
    from revlib import sweeps

    return sweeps.record(name, dataclasses.asdict(config), git=(None, None))[
        "cpu_seconds"
    ]


def main(argv: list[str] | None = None) -> int:
    from revlib import records, sweeps

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--k1", type=int, default=200)
    parser.add_argument("--k2", type=int, default=800)
    args = parser.parse_args(argv)
    if not 0 < args.k1 < args.k2:
        parser.error(f"need 0 < --k1 < --k2, got {args.k1}, {args.k2}")
    folders = args.folders or sorted(
        p for p in (ROOT / "data" / "sweeps").iterdir() if p.is_dir()
    )
    total_rec = total_est = 0.0
    print(
        "| folder | configuration | records | steps | ms/step | CPU h recorded "
        "| CPU h alone (est.) |"
    )
    print("|---|---|---|---|---|---|---|")
    for folder in folders:
        df = records.load(folder)
        name = df["experiment"].iloc[0]
        fields = [f for f in sweeps.config_fields(name) if f != "seed"]
        varying = [f for f in fields if df[f].astype(str).nunique() > 1]
        for _, g in df.groupby([df[f].astype(str) for f in fields], sort=False):
            row = g.iloc[0]
            steps = int(row["steps"])
            c1, c2 = (
                _cpu(name, records.config_of(row, steps=k, eval_points=2, n_seeds=1))
                for k in (args.k1, args.k2)
            )
            per_step = max(c2 - c1, 0.0) / (args.k2 - args.k1)
            fixed = max(c1 - per_step * args.k1, 0.0)
            est = len(g) * (fixed + per_step * steps) / 3600
            rec = (
                float(g["cpu_seconds"].sum()) / 3600
                if g["cpu_seconds"].notna().all()
                else float("nan")
            )
            label = ", ".join(f"{f}={row[f]}" for f in varying) or "-"
            print(
                f"| {folder.name} | {label} | {len(g)} | {steps} "
                f"| {1000 * per_step:.1f} | {rec:.3f} | {est:.3f} |",
                flush=True,
            )
            total_est += est
            total_rec += 0.0 if math.isnan(rec) else rec
    print(
        f"\nin all: {total_rec:.2f} CPU h recorded "
        "(records without CPU time not counted), "
        f"{total_est:.2f} CPU h estimated alone"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
