"""``python -m revlib run|sweep|figure``: the command line of :mod:`revlib.sweeps` and
:mod:`revlib.figures` (``figure <label>`` regenerates one figure of the book alone).

A mistake in what was asked (unknown experiment or field, a value the Config rejects, a
missing GPU) ends the command with exit status 2 and one line on stderr naming it, before
anything runs. A run that fails after it started is a bug worth a traceback (status 1); a
sweep reports each failed run on one line and exits 1 once the others are done.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from revlib import devices, sweeps


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m revlib", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one experiment config and write its record as JSON")
    run.add_argument("experiment", help="a module of revlib.experiments (or a dotted module path)")
    run.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                     help="a Config field (repeatable); tuples as a,b")
    run.add_argument("--out", default="-", help="JSON file to write (default: stdout)")
    run.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")

    sw = sub.add_parser("sweep", help="run a grid of configs x seeds on Dask, one JSON per run")
    sw.add_argument("experiment", help="a module of revlib.experiments (or a dotted module path)")
    sw.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2",
                    help="values of a Config field (repeatable; the product is swept); "
                         "tuple values in brackets: ff=(mlp,mlp),(mlp,linear)")
    sw.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a Config field fixed for every run (repeatable)")
    sw.add_argument("--seeds", type=int, default=1, metavar="N",
                    help="run every point with seeds 0..N-1 (default: 1)")
    sw.add_argument("--out", required=True, metavar="DIR",
                    help="folder of records; runs whose record is there are skipped")
    where = sw.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=1, metavar="K",
                       help="single-threaded worker processes of a local Dask cluster (default: 1)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of a running Dask scheduler (e.g. tcp://host:8786)")
    sw.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")

    fg = sub.add_parser("figure", help="regenerate one figure of the book (figures/<label>.*)")
    fg.add_argument("label", nargs="?", help="the figure's label, e.g. fig-bilinear-losses")
    fg.add_argument("--list", action="store_true", help="list the known labels and exit")
    fg.add_argument("--out", metavar="DIR", help="folder to write to (default: figures/)")
    fg.add_argument("--timeout", type=int, default=3600, metavar="S",
                    help="seconds one cell may run (default: 3600)")
    return ap


def _figure(args) -> int:
    from revlib import figures  # noqa: PLC0415

    try:
        if args.list:
            for label, src in figures.known_figures().items():
                print(f"{label}\t{src.notebook.relative_to(figures.book_root())}")
            return 0
        if not args.label:
            raise figures.UnknownFigure("give a figure label; known figures: "
                                        + ", ".join(figures.known_figures()))
        figures.find(args.label)
    except ValueError as err:
        print(f"revlib figure: error: {err}", file=sys.stderr)
        return 2
    figures.regenerate(args.label, out=args.out, timeout=args.timeout)
    return 0


def _assignments(name: str, texts: list[str], grid: bool) -> dict:
    out = {}
    for text in texts:
        key, values = sweeps.parse_assignment(name, text, grid=grid)
        if key in out:
            raise ValueError(f"field {key!r} is given twice")
        out[key] = values if grid else values[0]
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "figure":
        return _figure(args)
    prog = f"revlib {args.command}"
    try:
        if args.command == "run":
            fields = _assignments(args.experiment, args.set, grid=False)
            sweeps.make_config(args.experiment, fields)
            devices.resolve(args.device)
            if args.out != "-" and not Path(args.out).resolve().parent.is_dir():
                raise ValueError(f"--out {args.out}: its folder does not exist")
        else:
            if args.seeds < 1:
                raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
            if Path(args.out).exists() and not Path(args.out).is_dir():
                raise ValueError(f"--out {args.out} is a file, not a folder")
            fixed = _assignments(args.experiment, args.set, grid=False)
            grid = _assignments(args.experiment, args.grid, grid=True)
            tasks = sweeps.plan(args.experiment, grid, fixed, args.seeds)
            if args.scheduler is None and args.workers < 1:
                raise ValueError(f"--workers must be >= 1, got {args.workers}")
            devices.resolve(args.device, here=args.scheduler is None)
    except ValueError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2

    if args.command == "run":
        rec = sweeps.record(args.experiment, fields, device=args.device)
        if args.out == "-":
            print(json.dumps(rec, indent=1))
        else:
            sweeps.write_json(args.out, rec)
        return 0

    try:
        failures = sweeps.run_sweep(args.experiment, tasks, args.out, workers=args.workers,
                                    scheduler=args.scheduler, device=args.device,
                                    progress=not args.no_progress)
    except ValueError as err:   # raised before any run starts (an unreachable scheduler)
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    for line in failures:
        print(f"{prog}: failed: {line}", file=sys.stderr)
    return 1 if failures else 0
