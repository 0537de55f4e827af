"""Measure how far each claim's printed numbers move with fresh seeds, and store the
report.

Used by ``scripts/seed-spread``. Each notebook runs its default configuration (full
size, no control) once per fresh seed, in record mode (``REVLIB_CLAIMS=record``: nothing
raises), and the ledgers the runs write are compared with the stored one. For each claim
the report holds the stored values, each fresh run's values and the *spread*: the
largest move of one printed value from the stored one over the fresh runs, position by
position (:func:`spread_of`). A per-seed value of a chaotic run moves between machines
as a fresh seed would, so its tolerance must cover this spread; a median over seeds or a
number from a stored file moves less, and its spread shows it.

Re-run it for a notebook whenever the notebook is re-executed: its spreads are moves
from the stored values.

The report goes to ``tests/seed_spread.json`` (atomically), with the seeds, the machine
and the commit; ``tests/test_claims.py`` checks every stored tolerance against it.

    scripts/seed-spread --seeds 11,23,37,51,73 notebooks/reversal/multi_layer.py ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from check_claims import _job, _run  # noqa: E402  (one way to run a notebook copy)

from revlib import claims, repro  # noqa: E402

REPORT = ROOT / "tests" / "seed_spread.json"


def spread_of(stored: list[float], fresh: list[list[float]]) -> float:
    """How far a printed value moves from the stored one when the run is another draw.

    Position by position (seed ``i`` of a fresh run against seed ``i`` of the stored
    run, as nbval compares them), the largest ``|fresh - stored|`` over the fresh runs.
    A position that is a seed gets a fresh draw, one that is a variant or a group gets
    another draw of the same quantity, so this is the move a machine that behaves like a
    fresh seed makes, for either kind. Where the runs differ in length it falls back to
    the range of all values (stored and fresh together), which is never smaller."""
    if fresh and all(len(run) == len(stored) for run in fresh):
        moves = [
            abs(a - b)
            for run in fresh
            for a, b in zip(stored, run)
            if a == a and b == b
        ]
        return max(moves) if moves else float("nan")
    values = [v for v in stored if v == v] + [v for run in fresh for v in run if v == v]
    return max(values) - min(values) if values else float("nan")


def build(stored_ledger: dict, runs: dict[int, dict | None]) -> dict:
    """The report's entry for one notebook: per record, its tolerance, margin, the
    stored
    and fresh values and their spread, and its outcome in each fresh run; per seed,
    whether the run wrote a ledger."""
    out = {"records": {}, "runs": {str(s): led is not None for s, led in runs.items()}}
    by_seed = {
        str(s): {r["id"]: r for r in (led or {}).get("records", [])}
        for s, led in runs.items()
    }
    for rec in stored_ledger["records"]:
        found = {s: recs.get(rec["id"]) for s, recs in by_seed.items()}
        fresh = {
            s: r["values"]
            for s, r in found.items()
            if r is not None and r["outcome"] != "untested"
        }
        out["records"][rec["id"]] = {
            "kind": rec["kind"],
            "tol": rec["tol"],
            "margin": rec["margin"],
            "stored": rec["values"],
            "fresh": fresh,
            "spread": spread_of(rec["values"], list(fresh.values())),
            "held": {s: (r or {}).get("outcome") for s, r in found.items()},
        }
    return out


def retolerance(paths: list[Path]) -> int:
    """Copy the stored ledgers' ``tol`` and ``margin`` into the report; refuse where a
    stored value moved (then the spread must be measured again)."""
    report = json.loads(REPORT.read_text())
    changed = 0
    for path in paths:
        led = claims.ledger_of(path)
        entry = report["notebooks"][led["notebook"]]
        recs = {r["id"]: r for r in led["records"]}
        for rid, r in entry["records"].items():
            rec = recs[rid]
            if not np.allclose(
                np.asarray(r["stored"], float),
                np.asarray(rec["values"], float),
                equal_nan=True,
            ):
                raise SystemExit(
                    f"{led['notebook']}/{rid}: stored values changed since the spread "
                    "was measured: run scripts/seed-spread on it"
                )
            if r["tol"] != rec["tol"] or not np.isclose(
                float(r["margin"]), float(rec["margin"]), equal_nan=True
            ):
                print(f"{led['notebook']}/{rid}: tol {r['tol']} -> {rec['tol']}")
                r["tol"], r["margin"] = rec["tol"], rec["margin"]
                changed += 1
    claims.write_json(REPORT, report)
    print(f"==> {REPORT.relative_to(ROOT)}: {changed} tolerances re-read")
    return 0


def restored(paths: list[Path]) -> int:
    """After a notebook was re-executed with no change to what its default run
    computes (its outputs re-made on another machine, a claim's flag added), measure
    each spread again from the report's fresh values against the new stored ones,
    without re-running the fresh seeds: a fresh seed's values do not depend on which
    machine made the stored outputs. A record the report has no fresh values for must
    be measured by a real run."""
    report = json.loads(REPORT.read_text())
    for path in paths:
        led = claims.ledger_of(path)
        entry = report["notebooks"][led["notebook"]]
        recs = {r["id"]: r for r in led["records"]}
        missing = sorted(set(recs) - set(entry["records"]))
        if missing:
            raise SystemExit(
                f"{led['notebook']}: no fresh values for {missing}: run "
                "scripts/seed-spread on it"
            )
        for rid, r in entry["records"].items():
            rec = recs[rid]
            r["stored"], r["tol"], r["margin"] = (
                rec["values"],
                rec["tol"],
                rec["margin"],
            )
            r["spread"] = spread_of(rec["values"], list(r["fresh"].values()))
        entry["stored_remade"] = {
            "machine": json.loads(path.read_text())["metadata"]
            .get("revlib", {})
            .get("provenance"),
            "about": "stored outputs re-made after the fresh seeds ran; spreads "
            "measured again from the same fresh values (seed-spread --restored)",
        }
        print(f"==> {led['notebook']}: {len(entry['records'])} spreads from stored")
    claims.write_json(REPORT, report)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+", help="notebooks (.ipynb or .py)")
    ap.add_argument(
        "--seeds",
        default="11,23,37,51,73",
        help="comma-separated fresh seeds (at least 5 for a tolerance)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="notebooks executed at once")
    ap.add_argument(
        "--out", default="_build/seed-spread", help="folder for the ledgers"
    )
    ap.add_argument(
        "--tolerances-only",
        action="store_true",
        help="re-read each claim's tolerance and margin from the stored ledgers and "
        "run nothing (after a tolerance changed and the stored values did not: the "
        "spreads still hold, tests/test_claims.py checks the values are the same)",
    )
    ap.add_argument(
        "--restored",
        action="store_true",
        help="the notebooks were re-executed and what their default run computes did "
        "not change: measure each spread again from the report's fresh values against "
        "the new stored ones, running nothing",
    )
    args = ap.parse_args()
    if args.restored:
        return restored([Path(p).with_suffix(".ipynb") for p in args.notebooks])
    if args.tolerances_only:
        return retolerance([Path(p).with_suffix(".ipynb") for p in args.notebooks])
    seeds = [int(s) for s in args.seeds.split(",")]
    paths = [Path(p).with_suffix(".ipynb").resolve() for p in args.notebooks]
    out = ROOT / args.out
    (out / "cells").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(
        "REVLIB_FIGURES_DIR", tempfile.mkdtemp(prefix="seed-spread-figs-")
    )
    jobs, stored = [], {}
    for path in paths:
        stored[path] = claims.ledger_of(path)
        for seed in seeds:
            ns = argparse.Namespace(seed=seed, quick=False, scale=1.0, set=[])
            jobs.append(
                {
                    **_job(path, stored[path], "none", ns, out / f"seed{seed}"),
                    "seed": seed,
                }
            )
    runs: dict[Path, dict[int, dict | None]] = {p: {} for p in paths}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for job, res in zip(jobs, pool.map(_run, jobs)):
            path = Path(job["notebook"])
            runs[path][job["seed"]] = res["ledger"]
            # every printed number too, in scripts/check_seeds.py's format: its --spread
            # reads these and says how far each stored line moved with a fresh seed
            cells = {k: res[k] for k in ("notebook", "env", "seconds", "cells")}
            claims.write_json(
                out / "cells" / f"{path.stem}-seed{job['seed']}.json",
                {**cells, "env": {}, "seed": job["seed"]},
            )
            print(
                f"{path.stem:22s} seed {job['seed']:6d} {res['seconds']:7.1f} s "
                + ("ledger" if res["ledger"] else f"NO LEDGER: {res['errors'][:1]}"),
                flush=True,
            )
    report = json.loads(REPORT.read_text()) if REPORT.exists() else {"notebooks": {}}
    git = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    for path in paths:
        name = stored[path]["notebook"]
        report["notebooks"][name] = {
            **build(stored[path], runs[path]),
            "seeds": seeds,
            "git": git,
            "machine": repro.provenance(),
        }
    report["about"] = (
        "per claim: the stored and fresh-seed values and their spread (the "
        "largest move of a value from the stored one, position by "
        "position), written by scripts/seed-spread"
    )
    claims.write_json(REPORT, report)
    print(f"==> {REPORT.relative_to(ROOT)}: {len(paths)} notebooks, seeds {seeds}")
    for path in paths:
        entry = report["notebooks"][stored[path]["notebook"]]
        for rid, r in entry["records"].items():
            if not r["fresh"]:  # untested in every fresh run: nothing to compare
                flag = "no fresh values (untested in every fresh run)"
            elif r["tol"] >= r["spread"]:
                flag = "covered"
            else:
                flag = "TOL BELOW SPREAD"
            print(
                f"  {path.stem}/{rid}: tol {r['tol']:g}, spread {r['spread']:.3g}, "
                f"margin {float(r['margin']):.3g}: {flag}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
