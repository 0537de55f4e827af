"""Stored runs: the one record format of every file in ``data/``, written and read here.

A record is plain JSON::

    experiment, config (every field), seeds [S], device,
    metrics {name: [S] final values},
    histories {path: {steps [E], lr, curves {name: [S][E]}}},
    extras {field: plain data}, revlib_version, torch_version,
    git, git_dirty, seconds (wall), cpu_seconds (this process's CPU time),
    cpu_capability

and may hold more provenance (``versions`` of other packages, ``model``; a checkpointed
run, ``machine``; one resumed from its checkpoint, ``resumed_at_step``, where its last
stretch resumed: its ``cpu_seconds`` then count every stretch, its ``seconds`` the last
one). A stored file
holds one record, or a list of records (a runner that trains several configurations in
one process); a folder holds one record per file (``python -m revlib sweep``).

``histories`` holds every :class:`revlib.train.History` in the result: ``history``
itself, and others by their attribute path (``tf_history``, ``transformer.history``,
``histories.0``). Metric names are the history's keys, prefixed by the path for all but
``history`` (``train_loss``, ``tf_history.forward_p``, ``transformer.p_AB``).

:func:`make` builds a record with its provenance, :func:`from_result` one from an
experiment's result, :func:`write` writes it atomically, :func:`read` reads one file and
:func:`load` a file or folder into a DataFrame; :func:`config_of`, :func:`stored_at` and
:func:`live_against_stored` re-run a stored record live and compare. Reading needs no
Dask.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from revlib import _validate

# --------------------------------------------------------------------------- plain JSON


def plain(value):
    """Tuples as lists, numpy scalars as Python numbers: what ``json`` writes."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def floats(a):
    """Nested lists of floats; NaN and infinities as JSON ``null`` (strict JSON for jq &
    co)."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        return float(a) if math.isfinite(a) else None
    return [floats(x) for x in a]


# --------------------------------------------------------------------------- provenance


def git_state() -> tuple[str | None, bool | None]:
    """(commit, uncommitted changes?) of the checkout revlib is imported from, else
    (None, None)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    try:
        # An installed (non-editable) revlib may sit inside some other repository.
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None, None
        return git("rev-parse", "HEAD"), bool(
            git("status", "--porcelain", "--untracked-files=no")
        )
    except (OSError, subprocess.SubprocessError):
        return None, None


def make(
    experiment: str,
    config,
    *,
    seeds=None,
    metrics=None,
    histories=None,
    extras=None,
    device: str = "cpu",
    seconds: float | None = None,
    cpu_seconds: float | None = None,
    git: tuple[str | None, bool | None] | None = None,
    **more,
) -> dict:
    """A record (module docstring) of experiment ``experiment`` run with ``config`` (a
    dataclass or its fields), with the provenance of this process: revlib and torch
    versions, ``git`` (default :func:`git_state`), the CPU's kernel level. ``more``:
    further provenance (``versions``, ``model``), stored as given."""
    import torch

    from revlib import __version__

    if not isinstance(experiment, str) or not experiment:
        raise ValueError(f"experiment must be a non-empty name, got {experiment!r}")
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dataclass or a mapping, got {type(config)}")
    git_hash, dirty = git_state() if git is None else git
    rec = {
        "experiment": experiment,
        "config": plain(dict(config)),
        "seeds": None if seeds is None else [int(s) for s in seeds],
        "device": str(device),
        "metrics": dict(metrics or {}),
        "histories": dict(histories or {}),
        "extras": dict(extras or {}),
        "revlib_version": __version__,
        "torch_version": torch.__version__,
        "git": git_hash,
        "git_dirty": dirty,
        "seconds": None if seconds is None else round(seconds, 3),
        "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 3),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    rec.update(plain(more))
    return rec


def seeds_of(config) -> list[int] | None:
    """The seeds a config runs: its ``seeds`` property, else ``[seed]``, else None."""
    seeds = getattr(config, "seeds", None)
    if seeds is None and hasattr(config, "seed"):
        seeds = [config.seed]
    return None if seeds is None else [int(s) for s in seeds]


def from_result(experiment: str, config, result, **provenance) -> dict:
    """The record of ``result = run(config)``: final metrics and curves of every
    :class:`revlib.train.History` in it, and its other plain-data fields as extras.
    ``provenance``: as for :func:`make` (``device``, ``seconds``, ``cpu_seconds``,
    ``git``)."""
    metrics, curves = {}, {}
    for path, hist in _histories(result).items():
        prefix = _prefix(path)
        for key, values in hist.values.items():
            metrics[prefix + key] = floats(np.asarray(values)[-1])
        curves[path] = {
            "steps": np.asarray(hist.steps).tolist(),
            "lr": float(hist.lr),
            "curves": {k: floats(np.asarray(v).T) for k, v in hist.values.items()},
        }
    return make(
        experiment,
        config,
        seeds=seeds_of(config),
        metrics=metrics,
        histories=curves,
        extras=extras(result),
        **provenance,
    )


def _prefix(path: str) -> str:
    """Metric-name prefix of the history at ``path``: none for the main one, else the
    path."""
    return "" if path in ("", "history") else re.sub(r"\.history$", "", path) + "."


def _histories(result, path: str = "", depth: int = 0) -> dict:
    """Every ``History`` reachable from ``result`` through dataclass fields, lists and
    dicts."""
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


# numbers per extra field; larger arrays (weights, data) are not recorded
MAX_EXTRA = 10_000


def extras(result) -> dict:
    """The result's other plain-data fields (numbers, numeric arrays up to
    :data:`MAX_EXTRA` values, and lists and dicts of them), by field name: what a
    chapter computes after training, e.g. ``small_lm``'s ablation and truncation sweep.
    Models, data, configs and histories are left out, and so are the fields a result
    class names in ``NOT_RECORDED`` (arrays it keeps a summary of instead); NaN and
    infinities become ``null`` as in the metrics."""
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        return {}
    out = {}
    skip = set(getattr(result, "NOT_RECORDED", ()))
    for f in dataclasses.fields(result):
        if f.name in skip:
            continue
        value = _data(getattr(result, f.name))
        if value is not _SKIP and value != {} and value != []:
            out[f.name] = value
    return out


_SKIP = object()  # "not plain data" (None is taken: it is how NaN is written)


def _data(value, depth: int = 0):
    """Plain JSON for numbers, numeric arrays and nested lists/dicts of them; else
    ``_SKIP``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return floats(value)
    if isinstance(value, np.ndarray):
        ok = value.dtype.kind in "biuf" and value.size <= MAX_EXTRA
        if not ok:
            return _SKIP
        return value.tolist() if value.dtype.kind in "biu" else floats(value)
    if (
        depth >= 3
        or not isinstance(value, (Mapping, list, tuple))
        or len(value) > MAX_EXTRA
    ):
        return _SKIP
    if isinstance(value, Mapping):
        items = {str(k): _data(v, depth + 1) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in items.values()) else items
    items = [_data(v, depth + 1) for v in value]
    return _SKIP if any(v is _SKIP for v in items) else items


# --------------------------------------------------------------------------- files


def write(path: str | os.PathLike, obj, *, allow_nan: bool = False) -> None:
    """Write ``obj`` (a record or a list of records, or any JSON data) to ``path``
    atomically: a temporary file in the same folder, then ``os.replace``. Readers see
    the old file or the whole new one; a failure leaves neither a partial ``path`` nor
    the temporary file. The project's one JSON writer. NaN policy: a record holds no
    NaN (:func:`make` writes ``null``), so by default a NaN raises before any file
    exists; ``allow_nan=True`` writes it as ``NaN`` (Python's reader takes it back),
    for the claims ledgers, whose untested margins are NaN."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=1, allow_nan=allow_nan)  # fails before any file
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


_REQUIRED = {"experiment", "config", "metrics"}


def read(path: str | os.PathLike) -> list[dict]:
    """The records of one file (a record or a list of records), checked for the keys
    every record has; ``ValueError`` naming the file otherwise."""
    raw = json.loads(Path(path).read_text())
    recs = raw if isinstance(raw, list) else [raw]
    for rec in recs:
        if not isinstance(rec, dict) or not _REQUIRED <= rec.keys():
            raise ValueError(
                f"{path} is not a revlib record (no experiment, config, metrics)"
            )
    return recs


def load(where: str | os.PathLike, curves: bool = False):
    """One row per record in ``where`` (a record file, or a folder of them; and per
    seed, for records of several seeds): ``experiment``, every config field, ``seed``,
    every final metric (``metric.<name>`` where the name is taken by a column before
    it), ``seed_index`` (the seed's place in its record), ``version``, ``git``,
    ``seconds``, ``cpu_seconds`` (NaN for records written
    before it was recorded), ``device``, ``file`` and ``extras`` (the record's extras,
    as written: for a record of several seeds, every seed's). List-valued config fields
    become tuples (hashable, so they can be grouped by); ``null`` metrics (NaN or
    infinite when run) become NaN.

    With ``curves``, each row also holds the seed's training curves: ``curve.<metric>``
    (``[E]`` float arrays, NaN for ``null``) for every metric named as in ``metrics``,
    and the steps of each history: ``curve.steps`` for the main one,
    ``curve.<path>.steps`` for the others (``curve.histories.0.steps``).
    ``np.stack(df["curve.test_mrr"])`` gives ``[rows, E]``."""
    import pandas as pd

    where = Path(where)
    paths = [where] if where.is_file() else sorted(where.glob("*.json"))
    rows = []
    for path in paths:
        for rec in read(path):
            rows.extend(_rows(rec, path.name, curves))
    return pd.DataFrame(rows)


def extra_of(df, *path: str) -> np.ndarray:
    """Each row's own value of the extras field at ``path`` (its keys in turn:
    ``extra_of(df, "summary", "relation.val_unseen.diag_hit")``) in a :func:`load`
    frame. A record of several seeds stores one entry per seed there, and a
    row takes the entry of its seed (``seed_index``); a record of one seed, its only
    entry. ``[rows]``, floats."""
    out = []
    for extras, i in zip(df["extras"], df["seed_index"]):
        value = extras
        for key in path:
            value = value[key]
        value = np.asarray(value, dtype=float).reshape(-1)
        out.append(value[int(i)] if value.size > 1 else value[0])
    return np.array(out)


def control_runs(df, field: str, given: bool, by: tuple[str, ...]):
    """The rows of stored runs ``df`` (:func:`load`) that a notebook reads, where
    science-control runs are stored beside the default ones: a control run is a row
    whose Config field ``field`` is true (the answer given away, e.g.
    ``reverse_in_training``), made for the settings ``by`` names (e.g.
    ``("multiplicity",)``). ``given=False`` (the default run): the rows without it.
    ``given=True`` (the notebook runs under that control): every setting that has
    control rows reads them in place of its own, and the other settings are unchanged.
    So a claim about the stored runs can be broken by a stored run in which the answer
    is learnable, not only by swapping files."""
    import pandas as pd

    _validate.choice("given", given, (True, False))
    if not by or any(c not in df for c in by):
        raise ValueError(f"by must name columns of the stored runs, got {by!r}")
    flag = (
        df[field].fillna(False).astype(bool)
        if field in df
        else pd.Series(False, index=df.index)
    )
    base, control = df[~flag], df[flag]
    if not given:
        return base
    if control.empty:
        raise ValueError(
            f"no stored run has {field}=True: the control has no stored run to read"
        )
    keys = set(control[list(by)].itertuples(index=False, name=None))
    own = base[list(by)].apply(tuple, axis=1).isin(keys)
    return pd.concat([base[~own], control])


def _rows(rec: dict, file: str, curves: bool) -> list[dict]:
    n = max((len(v) for v in rec["metrics"].values()), default=1)
    seeds = rec.get("seeds") or [None] * n
    rows = []
    for i, seed in enumerate(seeds):
        row = {"experiment": rec["experiment"]}
        row.update({k: _tuples(v) for k, v in rec["config"].items()})
        row["seed"] = seed
        meta = dict(
            seed_index=i,
            version=rec.get("revlib_version"),
            git=rec.get("git"),
            seconds=rec.get("seconds"),
            cpu_seconds=rec.get("cpu_seconds", np.nan),
            device=rec.get("device"),
            file=file,
        )
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
                        [np.nan if v is None else v for v in per_seed[i]], dtype=float
                    )
        rows.append(row)
    return rows


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


# --------------------------------------------------------------------------- re-running


def config_of(row, **changes):
    """The ``Config`` of a stored record's row of :func:`load`, with ``changes``
    applied: the configuration to re-run live (``config_of(row, steps=1000)`` trains its
    first 1000 steps). A field the record does not hold (added to the ``Config`` after
    the record was made, with a default that keeps the old behaviour) takes its
    default; so does one that is NaN in the row, where a frame mixes records with and
    without it."""
    from revlib import experiments  # the experiment registry

    def held(value) -> bool:
        return not (isinstance(value, float) and math.isnan(value))

    name = row["experiment"]
    fields = {
        f: row[f].item() if isinstance(row[f], np.generic) else row[f]
        for f in experiments.config_fields(name)
        if f in row.index and held(row[f])
    }
    # A column that is NaN for some records of a frame is float for all of them: an
    # integer field comes back as 0.0, and goes back to int where its default is one.
    config_class = experiments.experiment(name).Config
    defaults = {f.name: f.default for f in dataclasses.fields(config_class)}
    for f, value in fields.items():
        default = defaults.get(f)
        integral = isinstance(value, float) and value.is_integer()
        if integral and isinstance(default, int) and not isinstance(default, bool):
            fields[f] = int(value)
    return experiments.make_config(name, {**fields, **changes})


def stored_at(rows, metric: str, step: int, seed: int) -> tuple[float, float]:
    """The stored value of ``metric`` at ``step`` that a live run of ``seed`` must
    match, and the seed spread to allow on top of the kernel tolerance: ``(that seed's
    value, 0)`` when ``seed`` is stored, else ``(median over the stored seeds, their
    range)``. ``rows``: the rows of one configuration in a :func:`load` frame with
    ``curves=True``."""
    steps = list(rows["curve.steps"].iloc[0])
    if step not in steps:
        raise ValueError(
            f"step must be one of the stored evaluation steps {steps}, got {step}"
        )
    values = np.array([c[steps.index(step)] for c in rows[f"curve.{metric}"]])
    same = values[rows["seed"].to_numpy() == seed]
    if len(same):
        return float(same[0]), 0.0
    return float(np.median(values)), float(np.ptp(values))


def live_against_stored(rows, result, metrics, step: int, seed: int, tol: float):
    """Compare a live re-run with stored records: for each of ``metrics``, ``(metric,
    live, stored, allowed)``, where ``live`` is the final value in ``result.history``
    (the history the stored curves come from) of a one-seed run of ``seed`` trained for
    ``step`` steps, ``stored`` the value :func:`stored_at` gives, and ``allowed = tol``
    plus the stored seeds' spread when ``seed`` is not stored. A notebook prints them
    and asserts ``abs(live - stored) < allowed``."""
    _validate.real("tol", tol, 0.0, None)
    out = []
    for name in metrics:
        ref, spread = stored_at(rows, name, step, seed)
        live = float(np.asarray(result.history.final(name)).reshape(-1)[0])
        out.append((name, live, ref, tol + spread))
    return out
