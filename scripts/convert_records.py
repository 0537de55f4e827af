"""Convert the stored files of the pre-record formats into records (revlib.records).

One-off (issue 17): ``data/allocation_sweep.json`` (the allocation sweep) and
``data/lm_laser_sweep.json`` (the LASER sweep of the pretrained LM) are rewritten in
place, every number copied as it is (curves ``[E, S]`` are transposed to the records'
``[S][E]``, nothing is recomputed or rounded). Provenance the old files did not keep
(revlib version, CPU kernel level) is ``null``; each record says ``"converted":
"scripts/convert-records"``. A file already in the record format is left alone (as
``data/allocation_sweep.json`` now is: it was made again natively on 2026-12-05).
``tests/test_records.py`` checks the numbers against the originals. Run:
``scripts/convert-records`` (from the repository root).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FILES = {
    "data/allocation_sweep.json": "allocation",
    "data/lm_laser_sweep.json": "pretrained_lm",
}
MARK = "scripts/convert-records"


def _record(
    experiment,
    config,
    seeds,
    *,
    metrics=None,
    histories=None,
    extras=None,
    git=None,
    git_dirty=None,
    seconds=None,
    cpu_seconds=None,
    torch_version=None,
    cpu_capability=None,
    **more,
) -> dict:
    """A record with the keys and order of :func:`revlib.records.make`."""
    return {
        "experiment": experiment,
        "config": config,
        "seeds": seeds,
        "device": "cpu",
        "metrics": metrics or {},
        "histories": histories or {},
        "extras": extras or {},
        "revlib_version": None,
        "torch_version": torch_version,
        "git": git,
        "git_dirty": git_dirty,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "cpu_capability": cpu_capability,
        **more,
        "converted": MARK,
    }


def _transpose(rows: list[list]) -> list[list]:
    return [list(col) for col in zip(*rows)]


def convert_allocation(raw: dict) -> dict:
    """One record; history ``i`` (allocation ``i``) at ``histories.<i>``, as
    :func:`revlib.records.from_result` names the histories of an allocation result."""
    cfg = raw["config"]
    seeds = list(range(cfg["seed"], cfg["seed"] + cfg["n_seeds"]))
    histories, metrics = {}, {}
    for i, h in enumerate(raw["values"]):
        curves = {k: _transpose(v) for k, v in h.items()}  # [E][S] -> [S][E]
        histories[f"histories.{i}"] = {
            "steps": raw["steps"],
            "lr": cfg["lr"],
            "curves": curves,
        }
        metrics.update({f"histories.{i}.{k}": v[-1] for k, v in h.items()})
    return _record(
        "allocation",
        cfg,
        seeds,
        metrics=metrics,
        histories=histories,
        extras={"n_params": raw["n_params"], "mlp_params": raw["mlp_params"]},
        git=raw["git"],
        seconds=raw.get("wall_seconds"),
        cpu_seconds=raw["cpu_seconds"],
    )


def convert_laser(raw: dict) -> dict:
    """One record; ranks, baseline and values are the extras (as ``run`` records
    them)."""
    cfg = raw["config"]
    return _record(
        "pretrained_lm",
        cfg,
        [cfg["seed"]],
        extras={
            "ranks": raw["ranks"],
            "baseline": raw["baseline"],
            "values": raw["values"],
        },
        git=raw["git"],
        git_dirty=raw.get("git_dirty"),
        seconds=raw["seconds"],
        torch_version=raw["versions"].get("torch"),
        cpu_capability=raw.get("cpu_capability"),
        model=raw["model"],
        versions=raw["versions"],
    )


CONVERT = {
    "allocation": convert_allocation,
    "pretrained_lm": convert_laser,
}


def is_record(raw) -> bool:
    first = raw[0] if isinstance(raw, list) and raw else raw
    return (
        isinstance(first, dict) and {"experiment", "config", "metrics"} <= first.keys()
    )


def convert(raw, experiment: str):
    """The record(s) of one old file's content (``raw``, parsed JSON)."""
    return CONVERT[experiment](raw)


def main(argv: list[str] | None = None) -> int:
    from revlib import records

    for rel, experiment in FILES.items():
        path = ROOT / rel
        raw = json.loads(path.read_text())
        if is_record(raw):
            print(f"{rel}: already records, left alone")
            continue
        records.write(path, convert(raw, experiment))
        print(f"{rel}: converted to the record format")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
