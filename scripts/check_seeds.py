"""Re-run notebooks with fresh random seeds (and, optionally, another CPU kernel path)
and report which asserting cells held, and how far each printed number moved.

Used by ``scripts/check-seeds``; see its header for the command line. Each run executes
a copy of the notebook (parameters injected the papermill way) with errors allowed, so a
cell whose assert fails is recorded and the cells after it still run. Results go to a
JSON file per run under ``--out`` and to two tables on stdout: asserts held per cell and
seed, and the largest deviation of each printed number from the stored output (a guide
for the tolerance each notebook declares next to its claims).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from revlib import claims  # noqa: E402  (after the path: run as a script)


def _run_one(job: dict) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    path = Path(job["notebook"])
    nb = load_notebook_node(
        str(path)
    )  # papermill's reader adds the metadata it relies on
    params = job.get("params") or (
        {"SEED": job["seed"]} if job.get("seed") is not None else {}
    )
    nb = parameterize_notebook(nb, params) if params else nb
    old = dict(os.environ)
    os.environ.update(job["env"])  # the kernel inherits the environment of this process
    start = time.time()
    try:
        NotebookClient(
            nb,
            timeout=1800,
            allow_errors=True,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    except (
        Exception
    ) as exc:  # a dead kernel or a timeout: record it, keep the other runs
        nb.cells.append(
            nbformat.v4.new_code_cell(
                "assert 'the run finished'",
                outputs=[
                    nbformat.v4.new_output(
                        "error",
                        ename=type(exc).__name__,
                        evalue=str(exc)[:200],
                        traceback=[],
                    )
                ],
            )
        )
    finally:
        os.environ.clear()
        os.environ.update(old)
    cells = []
    code = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and "injected-parameters" not in c.metadata.get("tags", [])
    ]
    for i, cell in enumerate(code):  # i: ordinal among the stored notebook's code cells
        text, error = [], None
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and out.name == "stdout":
                text.append(out.text)
            elif out.output_type in ("execute_result", "display_data"):
                text.append(out.get("data", {}).get("text/plain", ""))
            elif out.output_type == "error":
                error = f"{out.ename}: {out.evalue}"[:300]
        cells.append(
            {
                "index": i,
                "asserts": "assert" in cell.source,
                "error": error,
                "text": "".join(text),
                "first_line": cell.source.splitlines()[0][:60] if cell.source else "",
            }
        )
    return {
        "notebook": str(path.relative_to(ROOT)),
        "seed": job.get("seed"),
        "env": job["env"],
        "seconds": round(time.time() - start, 1),
        "cells": cells,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "notebooks", nargs="*", help="notebooks (.ipynb or .py); default: all"
    )
    ap.add_argument(
        "--seeds", type=int, default=5, help="fresh random seeds per notebook"
    )
    ap.add_argument(
        "--seed-list", default="", help="explicit comma-separated seeds instead"
    )
    ap.add_argument(
        "--other-machine",
        action="store_true",
        help="also run the stored seed under the simulated other machine",
    )
    ap.add_argument(
        "--machine",
        action="append",
        default=[],
        metavar="K=V,K=V",
        help="also run the stored seed under these environment variables "
        "(e.g. ATEN_CPU_CAPABILITY=default,MKL_ENABLE_INSTRUCTIONS=SSE4_2,"
        "REVLIB_THREADS=2; REVLIB_THREADS=1 alone: this machine as it is, "
        "against outputs another machine stored); repeatable",
    )
    ap.add_argument("--jobs", type=int, default=2, help="notebooks executed at once")
    ap.add_argument(
        "--out", default="_build/check-seeds", help="folder for per-run JSON"
    )
    ap.add_argument(
        "--report",
        action="store_true",
        help="run nothing; print the tables for the runs already in --out",
    )
    ap.add_argument(
        "--spread",
        action="store_true",
        help="run nothing; print how far each stored number moved in --out's runs",
    )
    args = ap.parse_args()
    if args.spread:
        spread(args.out)
        return 0
    if args.report:
        results = [
            json.loads(p.read_text()) for p in sorted((ROOT / args.out).glob("*.json"))
        ]
        names = sorted({r["notebook"] for r in results})
        print(report(results, [ROOT / n for n in names]))
        return 0
    if args.seeds < 0:
        ap.error("--seeds must be >= 0")
    paths = [Path(p).with_suffix(".ipynb").resolve() for p in args.notebooks] or sorted(
        (ROOT / "notebooks").glob("*/*.ipynb")
    )
    if args.seed_list:
        seeds = [int(s) for s in args.seed_list.split(",")]
    else:
        rng = random.SystemRandom()
        seeds = [rng.randrange(1, 2**20) for _ in range(args.seeds)]
    print(f"seeds: {seeds}", flush=True)
    jobs = [{"notebook": str(p), "seed": s, "env": {}} for p in paths for s in seeds]
    if args.other_machine:
        from revlib import (
            repro,
        )  # another machine, simulated: one kernel level lower, 2 threads

        jobs += [
            {"notebook": str(p), "seed": None, "env": repro.other_machine()}
            for p in paths
        ]
    for spec in args.machine:
        env = dict(item.split("=", 1) for item in spec.split(",") if item)
        if not env:
            ap.error("--machine needs at least one K=V")
        jobs += [{"notebook": str(p), "seed": None, "env": env} for p in paths]
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    # other seeds' figures must not overwrite the book's
    os.environ.setdefault(
        "REVLIB_FIGURES_DIR", tempfile.mkdtemp(prefix="check-seeds-figs-")
    )
    results = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for res in pool.map(_run_one, jobs):
            tag = (
                "other-" + "-".join(f"{v}" for v in res["env"].values())
                if res["env"]
                else f"seed{res['seed']}"
            )
            name = f"{Path(res['notebook']).stem}-{tag}.json"
            claims.write_json(out / name, res)  # the project's one atomic writer
            failed = [c for c in res["cells"] if c["error"]]
            print(
                f"{res['notebook']:45s} {tag:14s} {res['seconds']:7.1f} s  "
                f"{'ok' if not failed else f'{len(failed)} failing cell(s)'}",
                flush=True,
            )
            results.append(res)
    print()
    print(report(results, paths))
    return 0


def report(results: list[dict], paths: list[Path]) -> str:
    """Markdown tables: which asserting cells held per run; worst number drift per
    cell."""
    from revlib import report as nbreport

    lines = []
    runs = sorted({("other" if r["env"] else f"seed {r['seed']}") for r in results})
    lines.append("| notebook | code cell (first line) | " + " | ".join(runs) + " |")
    lines.append("|---|---|" + "---|" * len(runs))
    by = {
        (r["notebook"], "other" if r["env"] else f"seed {r['seed']}"): r
        for r in results
    }
    for p in paths:
        nbname = str(p.relative_to(ROOT))
        first = next((r for (n, _), r in by.items() if n == nbname), None)
        if first is None:
            continue
        for cell in first["cells"]:
            if not cell["asserts"]:
                continue
            row = []
            for run in runs:
                r = by.get((nbname, run))
                c = (
                    next((c for c in r["cells"] if c["index"] == cell["index"]), None)
                    if r
                    else None
                )
                row.append(
                    "-" if c is None else ("held" if not c["error"] else "FAILED")
                )
            first_line = cell["first_line"].replace("|", "\\|")
            lines.append(
                f"| {Path(nbname).stem} | {cell['index']} (`{first_line}`) | "
                + " | ".join(row)
                + " |"
            )
    lines.append("")
    lines.append("How far the printed numbers moved from the stored output, per cell:")
    import nbformat

    for p in paths:
        stored = [
            c for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"
        ]
        nbname = str(p.relative_to(ROOT))
        for r in results:
            if r["notebook"] != nbname:
                continue
            tag = "other" if r["env"] else f"seed {r['seed']}"
            for c in r["cells"]:
                if c["index"] >= len(
                    stored
                ):  # the marker cell of a run that did not finish
                    lines.append(
                        f"  {Path(nbname).stem} ({tag}): did not finish: {c['error']}"
                    )
                    continue
                ref = stored[c["index"]]
                ref_text = "".join(
                    o.get("text", "")
                    if o.output_type == "stream"
                    else o.get("data", {}).get("text/plain", "")
                    for o in ref.get("outputs", [])
                    if o.output_type != "error"
                )
                d = nbreport.drift(ref_text, c["text"])
                if d:
                    lines.append(
                        f"  {Path(nbname).stem} cell {c['index']} ({tag}): {d}"
                    )
    return "\n".join(lines)


def nice_ceil(x: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is >= x."""
    import math

    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10.0**e >= x * (1 - 1e-9):
            return m * 10.0**e
    return 10.0 ** (e + 1)


def spread(out_dir: str) -> None:
    """Per printed line of the stored notebooks: how far each number moved in the runs
    under
    ``out_dir`` (other seeds, other machine). The raw material for declared
    tolerances."""
    import nbformat

    from revlib import report as nbreport

    results = [
        json.loads(p.read_text()) for p in sorted((ROOT / out_dir).glob("*.json"))
    ]
    for nbname in sorted({r["notebook"] for r in results}):
        stored = [
            c
            for c in nbformat.read(ROOT / nbname, as_version=4).cells
            if c.cell_type == "code"
        ]
        print(f"## {nbname}")
        for idx, cell in enumerate(stored):
            ref = "".join(
                o.get("text", "")
                for o in cell.get("outputs", [])
                if o.output_type == "stream"
            )
            for j, line in enumerate(ref.splitlines()):
                _, nums = nbreport._parse(line)
                if not nums:
                    continue
                devs = {"seed": [[] for _ in nums], "other": [[] for _ in nums]}
                tags = []
                for r in results:
                    if r["notebook"] != nbname:
                        continue
                    c = next(c for c in r["cells"] if c["index"] == idx)
                    lines = c["text"].splitlines()
                    if j >= len(lines):
                        continue
                    _, new = nbreport._parse(lines[j])
                    if len(new) != len(nums):
                        tags.append("shape")
                        continue
                    kind = "other" if r["env"] else "seed"
                    for k, (a, b) in enumerate(zip(nums, new)):
                        devs[kind][k].append(abs(float(a[0]) - float(b[0])))
                    tags.append(kind)
                worst = {k: [max(d) if d else 0.0 for d in v] for k, v in devs.items()}
                if any(w > 0 for v in worst.values() for w in v) or "shape" in tags:
                    print(f"  c{idx}.{j}: {line[:110]}")
                    for kind, w in worst.items():
                        print(
                            f"      {kind:5s} moves: {' '.join(f'{x:.3g}' for x in w)}"
                        )
                    top = max(max(w) for w in worst.values())
                    print(f"      suggested tolerance: {nice_ceil(top):g}")
                    if "shape" in tags:
                        print("      (the line's shape differs in some runs)")


if __name__ == "__main__":
    sys.exit(main())
