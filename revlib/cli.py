"""``python -m revlib run|sweep|bench|figure``: the command line of :mod:`revlib.sweeps`
and :mod:`revlib.figures` (``figure <label>`` regenerates one figure of the book alone).

``python -m revlib run bilinear --set m=16 --out r.json`` runs
``revlib.experiments.bilinear.run(Config(m=16))`` and writes one record
(:mod:`revlib.records`).
``python -m revlib sweep bilinear --grid lr=0.5,1 --seeds 3 --out runs/`` writes one
record per grid point and seed into ``runs/``, skipping those already there;
:func:`revlib.records.load` reads such a folder into a DataFrame. Values are parsed by
the type of the Config field (:func:`parse_assignment`).

A mistake in what was asked (unknown experiment or field, a value the Config rejects, a
missing GPU) ends the command with exit status 2 and one line on stderr naming it,
before anything runs. A run that fails after it started is a bug worth a traceback
(status 1); a sweep reports each failed run on one line and exits 1 once the others are
done.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import types
import typing
from pathlib import Path

from revlib import devices, records, sweeps


def parse_assignment(name: str, text: str, grid: bool = False) -> tuple[str, list]:
    """``"field=value"`` (or, with ``grid``, ``"field=v1,v2,..."``) -> ``(field,
    [values])``, each value parsed by the type of experiment ``name``'s Config field.

    Tuples are written ``a,b`` or ``(a,b)``; in a grid each tuple value needs its
    brackets: ``ff=(mlp,mlp),(mlp,linear)``. Bools: ``true``/``false``; ``None``:
    ``none``.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"expected field=value, got {text!r}")
    known = sweeps.config_fields(name)
    if key not in known:
        raise ValueError(
            f"unknown field {key!r} for experiment {name!r}; fields: {', '.join(known)}"
        )
    try:
        parts = _split(raw) if grid else [raw]
        if grid and not parts:
            raise ValueError("--grid needs at least one value")
        values = [_parse(p.strip(), known[key]) for p in parts]
    except ValueError as err:
        raise ValueError(
            f"bad value for field {key!r} of experiment {name!r}: {err}"
        ) from None
    if len({json.dumps(records.plain(v)) for v in values}) != len(values):
        raise ValueError(f"--grid {key} repeats a value: {raw!r}")
    return key, values


def _parse(text: str, tp):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and text.lower() in ("none", "null"):
            return None
        errors = []
        for arg in args:
            if arg is not type(None):
                try:
                    return _parse(text, arg)
                except ValueError as err:
                    errors.append(str(err))
        raise ValueError(" or ".join(errors))
    if tp is bool:
        low = text.lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise ValueError(f"expected a bool (true/false), got {text!r}")
    if tp is int:
        if not re.fullmatch(r"[+-]?\d[\d_]*", text):
            raise ValueError(f"expected an int, got {text!r}")
        return int(text)
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
    if tp is str:
        return text
    if origin is typing.Literal:
        for a in args:
            if str(a) == text:
                return a
        raise ValueError(f"expected one of {args}, got {text!r}")
    if origin in (tuple, list):
        inner = text
        if len(inner) >= 2 and inner[0] + inner[-1] in ("()", "[]"):
            inner = inner[1:-1]
        items = [p.strip() for p in _split(inner)]
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            elem = args[0] if args else str
            return origin(_parse(p, elem) for p in items)
        if len(items) != len(args):
            raise ValueError(
                f"expected {len(args)} comma-separated values, got {text!r}"
            )
        return tuple(_parse(p, a) for p, a in zip(items, args))
    raise ValueError(f"fields of type {tp} cannot be set from the command line")


def _split(text: str) -> list[str]:
    """Split at commas outside brackets; ``""`` -> ``[]``."""
    if not text.strip():
        return []
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced brackets in {text!r}")
    return parts + [text[start:]]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m revlib",
        description="Run the book's experiments one config at a time (run), as grids "
        "of configs and seeds that resume when cut off (sweep), time a training "
        "step (bench), or regenerate one figure (figure).",
    )
    sub = ap.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run", help="run one experiment config and write its record as JSON"
    )
    run.add_argument(
        "experiment", help="a module of revlib.experiments (or a dotted module path)"
    )
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a Config field (repeatable); tuples as a,b",
    )
    run.add_argument("--out", default="-", help="JSON file to write (default: stdout)")
    run.add_argument(
        "--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)"
    )

    sw = sub.add_parser(
        "sweep", help="run a grid of configs x seeds on Dask, one JSON per run"
    )
    sw.add_argument(
        "experiment", help="a module of revlib.experiments (or a dotted module path)"
    )
    sw.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="values of a Config field (repeatable; the product is swept); "
        "tuple values in brackets: ff=(mlp,mlp),(mlp,linear)",
    )
    sw.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a Config field fixed for every run (repeatable)",
    )
    sw.add_argument(
        "--seeds",
        type=int,
        default=1,
        metavar="N",
        help="run every point with N seeds, 0..N-1 (default: 1)",
    )
    sw.add_argument(
        "--first-seed",
        type=int,
        default=0,
        metavar="K",
        help="start the seeds at K: seeds K..K+N-1 (default: 0)",
    )
    sw.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder of records; runs whose record is there are skipped",
    )
    where = sw.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="K",
        help="single-threaded worker processes of a local Dask cluster (default: 1)",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running Dask scheduler (e.g. tcp://host:8786)",
    )
    sw.add_argument(
        "--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)"
    )
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")

    bn = sub.add_parser(
        "bench", help="time one JEPA training step and compare it with a matmul's rate"
    )
    bn.add_argument(
        "--n-a", type=int, default=2500, help="entities |E_A| (default 2500)"
    )
    bn.add_argument("--batch-size", type=int, default=1024, help="batch (default 1024)")
    bn.add_argument("--steps", type=int, default=20, help="steps timed (default 20)")
    bn.add_argument("--threads", type=int, default=None, help="torch threads")

    fg = sub.add_parser(
        "figure", help="regenerate one figure of the book (figures/<label>.*)"
    )
    fg.add_argument(
        "label", nargs="?", help="the figure's label, e.g. fig-bilinear-losses"
    )
    fg.add_argument(
        "--list", action="store_true", help="list the known labels and exit"
    )
    fg.add_argument(
        "--out", metavar="DIR", help="folder to write to (default: figures/)"
    )
    fg.add_argument(
        "--timeout",
        type=int,
        default=3600,
        metavar="S",
        help="seconds one cell may run (default: 3600)",
    )
    return ap


def _figure(args) -> int:
    from revlib import figures  # noqa: PLC0415

    try:
        if args.list:
            for label, src in figures.known_figures().items():
                print(f"{label}\t{src.notebook.relative_to(figures.book_root())}")
            return 0
        if not args.label:
            raise figures.UnknownFigure(
                "give a figure label; known figures: "
                + ", ".join(figures.known_figures())
            )
        figures.find(args.label)
    except ValueError as err:
        print(f"revlib figure: error: {err}", file=sys.stderr)
        return 2
    figures.regenerate(args.label, out=args.out, timeout=args.timeout)
    return 0


def _assignments(name: str, texts: list[str], grid: bool) -> dict:
    out = {}
    for text in texts:
        key, values = parse_assignment(name, text, grid=grid)
        if key in out:
            raise ValueError(f"field {key!r} is given twice")
        out[key] = values if grid else values[0]
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "figure":
        return _figure(args)
    if args.command == "bench":
        from revlib import bench, repro  # noqa: PLC0415

        try:
            repro.setup(0, threads=args.threads)  # deterministic, 1 thread by default
            result = bench.jepa_step(
                n_a=args.n_a, batch_size=args.batch_size, steps=args.steps
            )
        except ValueError as err:
            print(f"revlib bench: error: {err}", file=sys.stderr)
            return 2
        print(bench.report(result))
        return 0
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
            if args.first_seed < 0:
                raise ValueError(f"--first-seed must be >= 0, got {args.first_seed}")
            tasks = sweeps.plan(
                args.experiment, grid, fixed, args.seeds, first_seed=args.first_seed
            )
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
            records.write(args.out, rec)
        return 0

    try:
        failures = sweeps.run_sweep(
            args.experiment,
            tasks,
            args.out,
            workers=args.workers,
            scheduler=args.scheduler,
            device=args.device,
            progress=not args.no_progress,
        )
    except ValueError as err:  # raised before any run starts (an unreachable scheduler)
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    for line in failures:
        print(f"{prog}: failed: {line}", file=sys.stderr)
    return 1 if failures else 0
