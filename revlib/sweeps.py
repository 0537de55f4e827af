"""Experiments by name, and resumable sweeps of them on Dask.

:func:`experiment` finds ``revlib.experiments.<name>`` (a dataclass ``Config`` and
``run(config)``); :func:`record` runs one config and returns its record
(:mod:`revlib.records`, the one stored format). :func:`plan` and :func:`run_sweep` run a
grid of configs times seeds, one record file per run, skipping those already there; a
folder of records is read by :func:`revlib.records.load`, which needs no Dask. The
command line (``python -m revlib run|sweep``) is :mod:`revlib.cli`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from revlib import _validate, records

# The experiment registry lives with the experiments (revlib.experiments); its functions
# are re-exported here for the command line and older callers.
from revlib.experiments import (  # noqa: E402
    available,
    config_fields,
    experiment,
    make_config,
)


# --------------------------------------------------------------------------- one run


def record(
    name: str,
    fields: Mapping[str, object],
    device: str = "cpu",
    git: tuple[str | None, bool | None] | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1000,
) -> dict:
    """Run experiment ``name`` with ``Config(**fields)`` on ``device`` and return its
    record (:mod:`revlib.records`). Seeds, threads and deterministic algorithms are
    fixed first by :func:`revlib.repro.setup` with the config's ``seed``, as a notebook
    does.

    ``checkpoint``: a file prefix; every training loop of the run saves there every
    ``checkpoint_every`` steps (:func:`revlib.train.checkpointing`) and a killed run
    called again resumes where it stopped, bit for bit. Its ``cpu_seconds`` then count
    every stretch of the run, and the record names the machine (``machine``); a run that
    resumed also says where (``resumed_at_step``, each loop's step), and its ``seconds``
    are the wall time of its last stretch only."""
    from revlib import devices, repro, train

    mod, config = experiment(name), make_config(name, fields)
    dev = devices.resolve(device)
    git = records.git_state() if git is None else git  # the code version at the start
    repro.setup(getattr(config, "seed", 0))
    start, cpu_start = time.perf_counter(), time.process_time()
    more = {}
    with devices.use(dev), contextlib.ExitStack() as stack:
        ck = (
            None
            if checkpoint is None
            else stack.enter_context(train.checkpointing(checkpoint, checkpoint_every))
        )
        result = mod.run(config)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if ck is not None and ck.calls:
        # the training loops' CPU time, resumed stretches included, plus what ran around
        # them
        cpu_seconds = max(cpu_seconds, ck.cpu_seconds)
        more["machine"] = repro.provenance()
        if ck.resumed_at:
            more["resumed_at_step"] = list(ck.resumed_at)
    # an experiment may add provenance of its own (the pretrained LM: model, versions)
    more.update(getattr(mod, "provenance", dict)())
    return records.from_result(
        name,
        config,
        result,
        device=str(dev),
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        git=git,
        **more,
    )


# --------------------------------------------------------------------------- sweeps


@dataclasses.dataclass(frozen=True)
class Task:
    """One run of a sweep: the grid ``point`` (grid fields only), its ``seed``, every
    Config field set (``fields``) and the record's ``file`` name."""

    point: dict
    seed: int
    fields: dict
    file: str


def plan(
    name: str,
    grid: Mapping[str, Sequence],
    fixed: Mapping[str, object],
    n_seeds: int,
    first_seed: int = 0,
) -> list[Task]:
    """Every grid point (Cartesian product, in ``grid`` order) times seeds
    ``first_seed .. first_seed + n_seeds - 1``, each Config built once here, so a bad
    value fails before anything runs."""
    from revlib import _validate

    _validate.integer("n_seeds", n_seeds, 1, 10**6)
    _validate.integer("first_seed", first_seed, 0, 2**31 - 1)
    known = config_fields(name)
    for key in list(grid) + list(fixed):
        if key not in known:
            raise ValueError(
                f"unknown field {key!r} for experiment {name!r}; fields: "
                f"{', '.join(known)}"
            )
        if key in ("seed", "n_seeds"):
            raise ValueError(
                f"{key} is set by --seeds (seed i, one seed per run); "
                f"do not --set or --grid it"
            )
    both = set(grid) & set(fixed)
    if both:
        raise ValueError(f"field {sorted(both)[0]!r} is both in --grid and --set")
    if "seed" not in known:
        raise ValueError(f"experiment {name!r} has no seed field to sweep seeds over")
    # One run per (point, seed), with seed=i and n_seeds=1: the data and initial weights
    # of a seed depend on that seed alone (revlib.data, revlib.models), so this is seed
    # i of a batched n_seeds=N run (up to float rounding in batched kernels), and bit
    # for bit what `revlib run --set seed=i --set n_seeds=1` writes. One file per seed
    # also means a cut-off sweep loses only the runs in flight, and adding seeds later
    # reruns nothing.
    per_seed = {"n_seeds": 1} if "n_seeds" in known else {}
    tasks = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        for seed in range(first_seed, first_seed + n_seeds):
            fields = {**fixed, **point, "seed": seed, **per_seed}
            make_config(name, fields)
            tasks.append(
                Task(
                    point=point,
                    seed=seed,
                    fields=fields,
                    file=_file_name(name, point, fixed, seed),
                )
            )
    return tasks


def _file_name(name: str, point: Mapping, fixed: Mapping, seed: int) -> str:
    """``<experiment>__<field>=<value>__...__seed=<i>__<hash>.json``. The readable part
    may clash after slugging or truncation; the hash of everything set (not of the
    defaults, so that a field added to the Config later does not orphan a sweep) keeps
    names apart."""

    def slug(v):
        return (
            re.sub(r"[^A-Za-z0-9.+-]+", "-", json.dumps(records.plain(v))).strip("-")
            or "-"
        )

    readable = "__".join(
        [name] + [f"{k}={slug(v)}" for k, v in point.items()] + [f"seed={seed}"]
    )
    key = json.dumps(
        {
            "experiment": name,
            "set": records.plain(dict(fixed)),
            "point": records.plain(dict(point)),
            "seed": seed,
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{readable[:160]}__{digest}.json"


def run_sweep(
    name: str,
    tasks: Sequence[Task],
    out: str | os.PathLike,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    device: str = "cpu",
    progress: bool = True,
    checkpoint_every: int = 1000,
) -> list[str]:
    """Run the ``tasks`` whose file is not in ``out`` yet, on a ``LocalCluster`` of
    ``workers`` single-threaded processes or on the Dask scheduler at ``scheduler``.

    Each run checkpoints every ``checkpoint_every`` steps under ``out/.checkpoints/``
    (on the workers' machines), so a sweep cut off and started again resumes its
    half-finished runs where they stopped; a run's checkpoints are deleted once its
    record is written.

    Records are written by this process as the runs finish (so workers need no shared
    filesystem), each atomically. Returns one line per failed run (no file is written
    for it). Raises ``ValueError`` before running anything if the scheduler cannot be
    reached.
    """
    from revlib import _validate, devices

    out = Path(out)
    todo = [t for t in tasks if not (out / t.file).exists()]
    if scheduler is None:
        _validate.integer("workers", workers, 1, 1024)
        devices.resolve(device)  # the workers run on this machine
    else:
        devices.resolve(device, here=False)  # the workers' machines check availability
    print(
        f"{name}: {len(tasks)} runs, {len(tasks) - len(todo)} already in {out}, "
        f"{len(todo)} to run",
        file=sys.stderr,
    )
    if not todo:
        return []
    import logging

    from distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    git = (
        records.git_state()
    )  # the code version at the start of the sweep, recorded in every file
    ckpt = out.resolve() / ".checkpoints"  # one folder of the runs' checkpoints
    failures = []
    cluster = (
        None
        if scheduler is not None
        else LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
    )
    try:
        try:
            client = Client(scheduler if cluster is None else cluster)
        except (
            OSError
        ) as err:  # includes timeouts: a wrong address is a mistake in the ask
            raise ValueError(
                f"cannot reach the Dask scheduler at {scheduler}: {err}"
            ) from None
        out.mkdir(parents=True, exist_ok=True)
        with client:
            ckpt.mkdir(exist_ok=True)
            futures = {
                client.submit(
                    record,
                    name,
                    t.fields,
                    device,
                    git,
                    ckpt / Path(t.file).stem,
                    checkpoint_every,
                    pure=False,
                ): t
                for t in todo
            }
            with tqdm(
                total=len(todo),
                desc=name,
                unit="run",
                file=sys.stderr,
                disable=not progress,
            ) as bar:
                for fut in as_completed(futures):
                    task = futures.pop(fut)
                    if fut.status == "finished":
                        records.write(out / task.file, fut.result())
                        for done in ckpt.glob(f"{Path(task.file).stem}.*.pt"):
                            done.unlink()
                    else:
                        try:
                            err = fut.exception()
                        except (KeyboardInterrupt, SystemExit):
                            raise
                        except BaseException as exc:  # cancelled: the exception is why
                            err = exc
                        first = (str(err).splitlines() or [""])[0]
                        failures.append(
                            f"{_describe({**task.point, 'seed': task.seed})}: "
                            f"{type(err).__name__}: {first}"
                        )
                    fut.release()
                    bar.update()
    finally:
        if cluster is not None:
            cluster.close()
        if ckpt.is_dir() and not any(ckpt.iterdir()):
            ckpt.rmdir()  # nothing left to resume
    return failures


def _describe(fields: Mapping) -> str:
    return ", ".join(f"{k}={records.plain(v)}" for k, v in fields.items()) or "defaults"
