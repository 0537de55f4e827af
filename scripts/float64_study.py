"""What float64 would cost and change (issue 22): execute notebooks in float64 on this
machine's kernels and again as another machine would, and report per notebook the run
time against a float32 run's on the same kernels, and the largest move of a printed
number between the two float64 runs next to the same move in float32 (stored outputs
against the other machine's run).

Usage: ``python scripts/float64_study.py OUT notebooks/part/name.ipynb ...``. Writes
``OUT/<name>-<setting>.ipynb`` and ``OUT/float64.json``; the notebooks and the tree are
left as they were (each run executes a copy in the notebook's own folder, so that its
relative data paths resolve, and moves it to OUT).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from revlib import claims, repro  # noqa: E402

NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?|(?<![\w.])-?\d+e[-+]?\d+")


def _numbers(path: Path) -> list[list[float]]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(
            o.get("text", "")
            if o.get("output_type") == "stream"
            else o.get("data", {}).get("text/plain", "")
            for o in cell.get("outputs", [])
        )
        # drop the printed tolerances: they are settings, not results
        text = re.sub(r"±\s*\S+", " ", text)
        out.append([float(x) for x in NUMBER.findall(text)])
    return out


def _moves(a: list[list[float]], b: list[list[float]]) -> dict:
    """The largest move of a printed number between two runs, and how many of the
    numbers moved at their printed precision (cells whose count of numbers differs are
    skipped)."""
    moves = [
        abs(x - y) for ca, cb in zip(a, b) if len(ca) == len(cb) for x, y in zip(ca, cb)
    ]
    return {
        "largest": max(moves) if moves else None,
        "moved": sum(m > 0 for m in moves),
        "of": len(moves),
    }


def _execute(nb: Path, env: dict[str, str], dest: Path) -> float:
    tmp = nb.with_name(f".float64-{os.getpid()}-{nb.name}")
    shutil.copy(nb, tmp)
    start = time.perf_counter()
    try:
        subprocess.run(
            ["jupyter", "execute", "--inplace", tmp.name],
            cwd=nb.parent,
            env={**os.environ, **env},
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - start
        shutil.move(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("notebooks", nargs="+", type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    other = {**repro.other_machine(), "OMP_WAIT_POLICY": "PASSIVE"}
    # the figures the runs draw go to OUT, never to the committed figures/
    os.environ["REVLIB_FIGURES_DIR"] = str((args.out / "figures").resolve())
    settings = {
        "float32-native": {},
        "float64-native": {"REVLIB_DTYPE": "float64"},
        "float64-other": {"REVLIB_DTYPE": "float64", **other},
        "float32-other": other,
    }
    report = {"machine": repro.provenance(), "other machine": other, "notebooks": {}}
    for nb in args.notebooks:
        nb = nb.resolve()
        row, runs = {}, {}
        for name, env in settings.items():
            dest = args.out / f"{nb.stem}-{name}.ipynb"
            row[f"seconds {name}"] = round(_execute(nb, env, dest), 1)
            runs[name] = _numbers(dest)
        stored = _numbers(nb)
        row["float64 cost (native seconds ratio)"] = round(
            row["seconds float64-native"] / row["seconds float32-native"], 2
        )
        row["float64: native vs other"] = _moves(
            runs["float64-native"], runs["float64-other"]
        )
        row["float32: stored vs other"] = _moves(stored, runs["float32-other"])
        report["notebooks"][nb.stem] = row
        print(nb.stem, row, flush=True)
    claims.write_json(args.out / "float64.json", report)


if __name__ == "__main__":
    main()
