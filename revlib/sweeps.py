"""Experiments from the command line: one run to a JSON file, or a resumable sweep on Dask.

``python -m revlib run bilinear --set m=16 --out r.json`` runs
``revlib.experiments.bilinear.run(Config(m=16))`` and writes one record (see :func:`record`).
``python -m revlib sweep bilinear --grid lr=0.5,1 --seeds 3 --out runs/`` writes one record per
grid point and seed into ``runs/``, skipping those already there; :func:`load` reads such a
folder into a DataFrame. The command line is :mod:`revlib.cli`.

A record is plain JSON::

    experiment, config (every field), seeds [S], device, metrics {name: [S] final values},
    histories {path: {steps [E], lr, curves {name: [S][E]}}}, extras {field: plain data},
    revlib_version, torch_version,
    git, git_dirty, seconds (wall), cpu_seconds (this process's CPU time), cpu_capability

``histories`` holds every :class:`revlib.train.History` in the result: ``history`` itself,
and others by their attribute path (``tf_history``, ``transformer.history``, ``histories.0``).
Metric names are the history's keys, prefixed by the path for all but ``history``
(``train_loss``, ``tf_history.forward_p``, ``transformer.p_AB``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import itertools
import json
import math
import os
import pkgutil
import re
import subprocess
import sys
import time
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from revlib import _validate

_PACKAGE = "revlib.experiments"


# --------------------------------------------------------------------------- experiments

def available() -> list[str]:
    """Names of the modules in :mod:`revlib.experiments` that define ``Config`` and ``run``."""
    import revlib.experiments as pkg

    names = []
    for info in pkgutil.iter_modules(pkg.__path__):
        src = Path(pkg.__path__[0], f"{info.name}.py")
        # Read, not import: importing every chapter costs seconds and this runs on errors.
        text = src.read_text() if src.exists() else ""
        if re.search(r"^class Config\b", text, re.M) and re.search(r"^def run\(", text, re.M):
            names.append(info.name)
    return sorted(names)


def experiment(name: str) -> types.ModuleType:
    """The module of experiment ``name``: ``revlib.experiments.<name>``, or any importable
    dotted module path (``mypkg.myexp``) that has a dataclass ``Config`` and ``run(config)``."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        raise ValueError(f"experiment must be a module name, got {name!r}")
    modname = name if "." in name else f"{_PACKAGE}.{name}"
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as err:
        if err.name is None or not (modname == err.name or modname.startswith(err.name + ".")):
            raise  # the experiment exists but one of its own imports is missing
        raise ValueError(f"unknown experiment {name!r}; available: "
                         f"{', '.join(available())}") from None
    cfg = getattr(mod, "Config", None)
    if not (isinstance(cfg, type) and dataclasses.is_dataclass(cfg) and callable(getattr(mod, "run", None))):
        raise ValueError(f"experiment {name!r} has no dataclass Config and run(config); "
                         f"available: {', '.join(available())}")
    return mod


def config_fields(name: str) -> dict[str, object]:
    """``{field: type}`` of experiment ``name``'s ``Config`` (annotations resolved)."""
    cfg = experiment(name).Config
    hints = typing.get_type_hints(cfg)
    return {f.name: hints.get(f.name, str) for f in dataclasses.fields(cfg) if f.init}


def make_config(name: str, fields: Mapping[str, object]):
    """``Config(**fields)`` of experiment ``name``; ``ValueError`` naming an unknown field or
    repeating the Config's own message, prefixed with the experiment and the fields."""
    known = config_fields(name)
    for key in fields:
        if key not in known:
            raise ValueError(f"unknown field {key!r} for experiment {name!r}; fields: "
                             f"{', '.join(known)}")
    try:
        return experiment(name).Config(**fields)
    except (ValueError, TypeError) as err:
        raise ValueError(f"invalid {name} config ({_describe(fields)}): {err}") from None


# --------------------------------------------------------------------------- values on the command line

def parse_assignment(name: str, text: str, grid: bool = False) -> tuple[str, list]:
    """``"field=value"`` (or, with ``grid``, ``"field=v1,v2,..."``) -> ``(field, [values])``,
    each value parsed by the type of experiment ``name``'s Config field.

    Tuples are written ``a,b`` or ``(a,b)``; in a grid each tuple value needs its brackets:
    ``ff=(mlp,mlp),(mlp,linear)``. Bools: ``true``/``false``; ``None``: ``none``.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"expected field=value, got {text!r}")
    known = config_fields(name)
    if key not in known:
        raise ValueError(f"unknown field {key!r} for experiment {name!r}; fields: "
                         f"{', '.join(known)}")
    try:
        parts = _split(raw) if grid else [raw]
        if grid and not parts:
            raise ValueError("--grid needs at least one value")
        values = [_parse(p.strip(), known[key]) for p in parts]
    except ValueError as err:
        raise ValueError(f"bad value for field {key!r} of experiment {name!r}: {err}") from None
    if len({json.dumps(_plain(v)) for v in values}) != len(values):
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
            raise ValueError(f"expected {len(args)} comma-separated values, got {text!r}")
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


# --------------------------------------------------------------------------- one run

def record(name: str, fields: Mapping[str, object], device: str = "cpu",
           git: tuple[str | None, bool | None] | None = None) -> dict:
    """Run experiment ``name`` with ``Config(**fields)`` on ``device`` and return its record
    (module docstring). Seeds, threads and deterministic algorithms are fixed first by
    :func:`revlib.repro.setup` with the config's ``seed``, as a notebook does."""
    import torch

    from revlib import __version__, devices, repro

    mod, config = experiment(name), make_config(name, fields)
    dev = devices.resolve(device)
    git_hash, dirty = _git() if git is None else git
    repro.setup(getattr(config, "seed", 0))
    start, cpu_start = time.perf_counter(), time.process_time()
    with devices.use(dev):
        result = mod.run(config)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    histories = _histories(result)
    extras = _extras(result)
    metrics, curves = {}, {}
    for path, hist in histories.items():
        prefix = _prefix(path)
        for key, values in hist.values.items():
            metrics[prefix + key] = _floats(np.asarray(values)[-1])
        curves[path] = {"steps": np.asarray(hist.steps).tolist(), "lr": float(hist.lr),
                        "curves": {k: _floats(np.asarray(v).T) for k, v in hist.values.items()}}
    seeds = getattr(config, "seeds", None)
    if seeds is None and hasattr(config, "seed"):
        seeds = [config.seed]
    return {"experiment": name, "config": _plain(dataclasses.asdict(config)),
            "seeds": None if seeds is None else [int(s) for s in seeds], "device": str(dev),
            "metrics": metrics, "histories": curves, "extras": extras,
            "revlib_version": __version__,
            "torch_version": torch.__version__, "git": git_hash, "git_dirty": dirty,
            "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3),
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def _prefix(path: str) -> str:
    """Metric-name prefix of the history at ``path``: none for the main one, else the path."""
    return "" if path in ("", "history") else re.sub(r"\.history$", "", path) + "."


def _histories(result, path: str = "", depth: int = 0) -> dict:
    """Every ``History`` reachable from ``result`` through dataclass fields, lists and dicts."""
    from revlib.train import History

    if isinstance(result, History):
        return {path: result}
    out = {}
    if depth >= 3:
        return out
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        items = [(f.name, getattr(result, f.name)) for f in dataclasses.fields(result)]
    elif isinstance(result, (list, tuple)):
        items = list(enumerate(result))
    elif isinstance(result, dict):
        items = [(k, v) for k, v in result.items() if isinstance(k, (str, int))]
    else:
        return out
    for key, value in items:
        out.update(_histories(value, f"{path}.{key}" if path else str(key), depth + 1))
    return out


MAX_EXTRA = 10_000   # numbers per extra field; larger arrays (weights, data) are not recorded


def _extras(result) -> dict:
    """The result's other plain-data fields (numbers, numeric arrays up to :data:`MAX_EXTRA`
    values, and lists and dicts of them), by field name: what a chapter computes after
    training, e.g. ``small_lm``'s ablation and truncation sweep. Models, data, configs and
    histories are left out; NaN and infinities become ``null`` as in the metrics."""
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        return {}
    out = {}
    for f in dataclasses.fields(result):
        value = _data(getattr(result, f.name))
        if value is not _SKIP and value != {} and value != []:
            out[f.name] = value
    return out


_SKIP = object()   # "not plain data" (None is taken: it is how NaN is written)


def _data(value, depth: int = 0):
    """Plain JSON for numbers, numeric arrays and nested lists/dicts of them; else ``_SKIP``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _floats(value)
    if isinstance(value, np.ndarray):
        ok = value.dtype.kind in "biuf" and value.size <= MAX_EXTRA
        return (value.tolist() if value.dtype.kind in "biu" else _floats(value)) if ok else _SKIP
    if depth >= 3 or not isinstance(value, (Mapping, list, tuple)) or len(value) > MAX_EXTRA:
        return _SKIP
    if isinstance(value, Mapping):
        items = {str(k): _data(v, depth + 1) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in items.values()) else items
    items = [_data(v, depth + 1) for v in value]
    return _SKIP if any(v is _SKIP for v in items) else items


def _floats(a: np.ndarray):
    """Nested lists of floats; NaN and infinities as JSON ``null`` (strict JSON for jq & co)."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        return float(a) if math.isfinite(a) else None
    return [_floats(x) for x in a]


def _plain(value):
    """Tuples as lists, numpy scalars as Python numbers: what ``json`` writes."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _git() -> tuple[str | None, bool | None]:
    """(commit, uncommitted changes?) of the checkout revlib is imported from, else (None, None)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    try:
        # An installed (non-editable) revlib may sit inside some other repository.
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None, None
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None, None


def write_json(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` to ``path`` atomically: a temporary file in the same folder, then
    ``os.replace``. Readers see the old file or the whole new one; a failure leaves neither a
    partial ``path`` nor the temporary file."""
    path = Path(path)
    text = json.dumps(obj, indent=1, allow_nan=False)  # fails before any file exists
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    # os.open rather than mkstemp: the record gets the umask's permissions, not 0600.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# --------------------------------------------------------------------------- sweeps

@dataclasses.dataclass(frozen=True)
class Task:
    """One run of a sweep: the grid ``point`` (grid fields only), its ``seed``, every Config
    field set (``fields``) and the record's ``file`` name."""

    point: dict
    seed: int
    fields: dict
    file: str


def plan(name: str, grid: Mapping[str, Sequence], fixed: Mapping[str, object],
         n_seeds: int) -> list[Task]:
    """Every grid point (Cartesian product, in ``grid`` order) times seeds ``0 .. n_seeds-1``,
    each Config built once here, so a bad value fails before anything runs."""
    from revlib import _validate

    _validate.integer("n_seeds", n_seeds, 1, 10**6)
    known = config_fields(name)
    for key in list(grid) + list(fixed):
        if key not in known:
            raise ValueError(f"unknown field {key!r} for experiment {name!r}; fields: "
                             f"{', '.join(known)}")
        if key in ("seed", "n_seeds"):
            raise ValueError(f"{key} is set by --seeds (seed i, one seed per run); "
                             f"do not --set or --grid it")
    both = set(grid) & set(fixed)
    if both:
        raise ValueError(f"field {sorted(both)[0]!r} is both in --grid and --set")
    if "seed" not in known:
        raise ValueError(f"experiment {name!r} has no seed field to sweep seeds over")
    # One run per (point, seed), with seed=i and n_seeds=1: the data and initial weights of a
    # seed depend on that seed alone (revlib.data, revlib.models), so this is seed i of a
    # batched n_seeds=N run (up to float rounding in batched kernels), and bit for bit what
    # `revlib run --set seed=i --set n_seeds=1` writes. One file per seed also means a cut-off
    # sweep loses only the runs in flight, and adding seeds later reruns nothing.
    per_seed = {"n_seeds": 1} if "n_seeds" in known else {}
    tasks = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        for seed in range(n_seeds):
            fields = {**fixed, **point, "seed": seed, **per_seed}
            make_config(name, fields)
            tasks.append(Task(point=point, seed=seed, fields=fields,
                              file=_file_name(name, point, fixed, seed)))
    return tasks


def _file_name(name: str, point: Mapping, fixed: Mapping, seed: int) -> str:
    """``<experiment>__<field>=<value>__...__seed=<i>__<hash>.json``. The readable part may
    clash after slugging or truncation; the hash of everything set (not of the defaults, so
    that a field added to the Config later does not orphan a sweep) keeps names apart."""
    def slug(v):
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", json.dumps(_plain(v))).strip("-") or "-"

    readable = "__".join([name] + [f"{k}={slug(v)}" for k, v in point.items()] + [f"seed={seed}"])
    key = json.dumps({"experiment": name, "set": _plain(dict(fixed)), "point": _plain(dict(point)),
                      "seed": seed}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{readable[:160]}__{digest}.json"


def run_sweep(name: str, tasks: Sequence[Task], out: str | os.PathLike, *, workers: int = 1,
              scheduler: str | None = None, device: str = "cpu", progress: bool = True) -> list[str]:
    """Run the ``tasks`` whose file is not in ``out`` yet, on a ``LocalCluster`` of
    ``workers`` single-threaded processes or on the Dask scheduler at ``scheduler``.

    Records are written by this process as the runs finish (so workers need no shared
    filesystem), each atomically. Returns one line per failed run (no file is written for it).
    Raises ``ValueError`` before running anything if the scheduler cannot be reached.
    """
    from revlib import _validate, devices

    out = Path(out)
    todo = [t for t in tasks if not (out / t.file).exists()]
    if scheduler is None:
        _validate.integer("workers", workers, 1, 1024)
        devices.resolve(device)         # the workers run on this machine
    else:
        devices.resolve(device, here=False)   # the workers' machines check availability
    print(f"{name}: {len(tasks)} runs, {len(tasks) - len(todo)} already in {out}, "
          f"{len(todo)} to run", file=sys.stderr)
    if not todo:
        return []
    import logging

    from distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    git = _git()   # the code version at the start of the sweep, recorded in every file
    failures = []
    cluster = None if scheduler is not None else LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
        silence_logs=logging.ERROR)
    try:
        try:
            client = Client(scheduler if cluster is None else cluster)
        except OSError as err:   # includes timeouts: a wrong address is a mistake in the ask
            raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
        out.mkdir(parents=True, exist_ok=True)
        with client:
            futures = {client.submit(record, name, t.fields, device, git, pure=False): t
                       for t in todo}
            with tqdm(total=len(todo), desc=name, unit="run", file=sys.stderr,
                      disable=not progress) as bar:
                for fut in as_completed(futures):
                    task = futures.pop(fut)
                    if fut.status == "finished":
                        write_json(out / task.file, fut.result())
                    else:
                        try:
                            err = fut.exception()
                        except (KeyboardInterrupt, SystemExit):
                            raise
                        except BaseException as exc:   # cancelled: the exception is why
                            err = exc
                        first = (str(err).splitlines() or [""])[0]
                        failures.append(f"{_describe({**task.point, 'seed': task.seed})}: "
                                        f"{type(err).__name__}: {first}")
                    fut.release()
                    bar.update()
    finally:
        if cluster is not None:
            cluster.close()
    return failures


def _describe(fields: Mapping) -> str:
    return ", ".join(f"{k}={_plain(v)}" for k, v in fields.items()) or "defaults"


# --------------------------------------------------------------------------- reading a sweep

def load(directory: str | os.PathLike, curves: bool = False):
    """One row per record file in ``directory`` (and per seed, for records of several seeds):
    ``experiment``, every config field, ``seed``, every final metric (``metric.<name>`` where
    the name is taken by a column before it), ``version``, ``git``, ``seconds``, ``cpu_seconds``
    (NaN for records written before it was recorded), ``device``, ``file`` and ``extras`` (the
    record's extras, as written: for a record of several seeds, every seed's). List-valued config fields become tuples (hashable, so they can be grouped
    by); ``null`` metrics (NaN or infinite when run) become NaN.

    With ``curves``, each row also holds the seed's training curves: ``curve.<metric>`` (``[E]``
    float arrays, NaN for ``null``) for every metric named as in ``metrics``, and the steps of
    each history: ``curve.steps`` for the main one, ``curve.<path>.steps`` for the others
    (``curve.histories.0.steps``). ``np.stack(df["curve.test_mrr"])`` gives ``[rows, E]``."""
    import pandas as pd

    rows = []
    for path in sorted(Path(directory).glob("*.json")):
        rec = json.loads(path.read_text())
        if not isinstance(rec, dict) or not {"experiment", "config", "metrics"} <= rec.keys():
            raise ValueError(f"{path} is not a revlib record (no experiment, config, metrics)")
        n = max((len(v) for v in rec["metrics"].values()), default=1)
        seeds = rec.get("seeds") or [None] * n
        for i, seed in enumerate(seeds):
            row = {"experiment": rec["experiment"]}
            row.update({k: _tuples(v) for k, v in rec["config"].items()})
            row["seed"] = seed
            meta = dict(version=rec.get("revlib_version"), git=rec.get("git"),
                        seconds=rec.get("seconds"), cpu_seconds=rec.get("cpu_seconds", np.nan),
                        device=rec.get("device"), file=path.name)
            for key, values in rec["metrics"].items():
                # a metric named like a config field or a meta column keeps both apart
                col = f"metric.{key}" if key in row or key in meta else key
                row[col] = np.nan if values[i] is None else values[i]
            row.update(meta)
            row["extras"] = rec.get("extras", {})
            if curves:
                for hpath, hist in rec.get("histories", {}).items():
                    prefix = _prefix(hpath)
                    row[f"curve.{prefix}steps"] = np.asarray(hist["steps"])
                    for key, per_seed in hist["curves"].items():
                        row[f"curve.{prefix}{key}"] = np.array(
                            [np.nan if v is None else v for v in per_seed[i]], dtype=float)
            rows.append(row)
    return pd.DataFrame(rows)


def config_of(row, **changes):
    """The ``Config`` of a stored record's row of :func:`load`, with ``changes`` applied: the
    configuration to re-run live (``config_of(row, steps=1000)`` trains its first 1000 steps).
    A field the record does not hold (added to the ``Config`` after the record was made, with a
    default that keeps the old behaviour) takes its default."""
    name = row["experiment"]
    fields = {f: row[f].item() if isinstance(row[f], np.generic) else row[f]
              for f in config_fields(name) if f in row.index}
    return make_config(name, {**fields, **changes})


def stored_at(rows, metric: str, step: int, seed: int) -> tuple[float, float]:
    """The stored value of ``metric`` at ``step`` that a live run of ``seed`` must match, and
    the seed spread to allow on top of the kernel tolerance: ``(that seed's value, 0)`` when
    ``seed`` is stored, else ``(median over the stored seeds, their range)``. ``rows``: the
    rows of one configuration in a :func:`load` frame with ``curves=True``."""
    steps = list(rows["curve.steps"].iloc[0])
    if step not in steps:
        raise ValueError(f"step must be one of the stored evaluation steps {steps}, got {step}")
    values = np.array([c[steps.index(step)] for c in rows[f"curve.{metric}"]])
    same = values[rows["seed"].to_numpy() == seed]
    return (float(same[0]), 0.0) if len(same) else (float(np.median(values)), float(np.ptp(values)))


def live_against_stored(rows, result, metrics, step: int, seed: int, tol: float):
    """Compare a live re-run with stored records: for each of ``metrics``, ``(metric, live,
    stored, allowed)``, where ``live`` is the final value in ``result.history`` (the history
    the stored curves come from) of a one-seed run of ``seed`` trained for ``step`` steps,
    ``stored`` the value :func:`stored_at` gives, and ``allowed = tol`` plus the stored seeds' spread when ``seed`` is not stored. A notebook
    prints them and asserts ``abs(live - stored) < allowed``."""
    _validate.real("tol", tol, 0.0, None)
    out = []
    for name in metrics:
        ref, spread = stored_at(rows, name, step, seed)
        out.append((name, float(np.asarray(result.history.final(name)).reshape(-1)[0]), ref, tol + spread))
    return out


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
