"""The command line (`python -m revlib run|sweep`), sweep records, resumption, devices.

Runs are tiny bilinear models (a few milliseconds each). Most sweeps use one in-process
Dask worker thread (no torch import per worker); one test starts the real local cluster
of worker processes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import revlib
from revlib import cli, devices, records, sweeps
from revlib.experiments import bilinear
from revlib.cli import main
from revlib.train import TrainConfig, train

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--set",
    "m=8",
    "--set",
    "n=2",
    "--set",
    "d=8",
    "--set",
    "steps=6",
    "--set",
    "eval_points=3",
]
TINY_FIELDS = dict(m=8, n=2, d=8, steps=6, eval_points=3)


@pytest.fixture(scope="module")
def scheduler():
    """One Dask worker thread in this process, shared by the sweeps of this module."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        dashboard_address=":0",
        silence_logs=logging.ERROR,
    ) as cluster:
        yield cluster.scheduler_address


def _sweep(out, *extra, scheduler=None):
    where = ["--scheduler", scheduler] if scheduler else ["--workers", "1"]
    return main(
        ["sweep", "bilinear", *TINY, "--out", str(out), "--no-progress", *where, *extra]
    )


# ---------------------------------------------------------------- run


def test_run_writes_the_record(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "run",
                "bilinear",
                *TINY,
                "--set",
                "n_seeds=2",
                "--set",
                "lr=0.5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rec = json.loads(out.read_text())
    assert rec["experiment"] == "bilinear"
    assert (
        rec["config"]["m"] == 8
        and rec["config"]["lr"] == 0.5
        and rec["config"]["n_seeds"] == 2
    )
    assert rec["config"]["init"] == "zero"  # defaults are recorded too
    assert rec["seeds"] == [0, 1]
    assert rec["revlib_version"] == revlib.__version__
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert rec["git"] == (head or None)
    assert rec["seconds"] > 0 and rec["device"] == "cpu"
    assert 0 < rec["cpu_seconds"] and isinstance(rec["cpu_capability"], str)
    hist = rec["histories"]["history"]
    assert hist["steps"] == [0, 1, 6]  # log spacing, 3 points
    assert set(rec["metrics"]) == {"train_loss", "reverse_loss"}
    for key, final in rec["metrics"].items():
        curves = np.array(hist["curves"][key])  # [S, E]
        assert curves.shape == (2, 3)
        np.testing.assert_array_equal(curves[:, -1], final)
    # it trained: the loss fell from log m
    assert all(
        c[0] == pytest.approx(np.log(8), rel=1e-6) for c in hist["curves"]["train_loss"]
    )
    assert max(rec["metrics"]["train_loss"]) < np.log(8) - 0.1


def test_a_mistake_is_one_line_without_traceback():
    bad = subprocess.run(
        [sys.executable, "-m", "revlib", "run", "bilinear", "--set", "m=lots"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    assert "'m'" in bad.stderr and "'lots'" in bad.stderr


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "nosuch"], ["unknown experiment 'nosuch'", "bilinear"]),
        (["run", "entanglement"], ["'entanglement' has no", "run(config)"]),
        (["run", "bilinear", "--set", "mm=3"], ["unknown field 'mm'", "n_seeds"]),
        (
            ["run", "bilinear", "--set", "m=3.5"],
            ["field 'm'", "expected an int", "'3.5'"],
        ),
        (
            ["run", "bilinear", "--set", "m=2"],
            ["invalid bilinear config", "m must be an integer in [4, 20000]"],
        ),
        (["run", "bilinear", "--set", "optimizer=adam"], ["optimizer must be one of"]),
        (["run", "bilinear", "--set", "m=8", "--set", "m=16"], ["'m' is given twice"]),
        (
            ["run", "bilinear", "--device", "tpu"],
            ["device must be 'cpu', 'cuda' or 'cuda:N'", "'tpu'"],
        ),
        (
            ["sweep", "bilinear", "--grid", "lr=1,x"],
            ["field 'lr'", "expected a number", "'x'"],
        ),
        (["sweep", "bilinear", "--grid", "nope=1,2"], ["unknown field 'nope'"]),
        (
            ["sweep", "bilinear", "--grid", "m=64,6"],
            ["invalid bilinear config", "m=6", "n must be an integer"],
        ),
        (["sweep", "bilinear", "--grid", "seed=1,2"], ["seed is set by --seeds"]),
        (["sweep", "bilinear", "--set", "n_seeds=3"], ["n_seeds is set by --seeds"]),
        (
            ["sweep", "bilinear", "--grid", "lr=1,2", "--set", "lr=3"],
            ["'lr' is both in --grid and --set"],
        ),
        (["sweep", "bilinear", "--seeds", "0"], ["--seeds must be >= 1"]),
        (["sweep", "bilinear", "--first-seed", "-1"], ["--first-seed must be >= 0"]),
    ],
)
def test_mistakes_exit_2_with_one_line_naming_them(argv, words, tmp_path, capsys):
    if argv[0] == "sweep":
        argv = argv + ["--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"revlib {argv[0]}: error: ")
    for w in words:
        assert w in err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_values_are_parsed_by_field_type():
    assert cli.parse_assignment("bilinear", "lr=1e-2") == ("lr", [0.01])
    assert cli.parse_assignment("bilinear", "init=pretrained") == (
        "init",
        ["pretrained"],
    )
    assert cli.parse_assignment("bilinear", "m=8,16", grid=True) == ("m", [8, 16])
    assert cli.parse_assignment("jepa", "memory=true") == ("memory", [True])
    assert cli.parse_assignment("jepa", "memory=False,TRUE", grid=True) == (
        "memory",
        [False, True],
    )
    assert cli.parse_assignment("ff_vs_attention", "ff=mlp,linear") == (
        "ff",
        [("mlp", "linear")],
    )
    assert cli.parse_assignment(
        "ff_vs_attention", "ff=(mlp,mlp),(mlp,linear)", grid=True
    ) == ("ff", [("mlp", "mlp"), ("mlp", "linear")])
    assert cli.parse_assignment("ff_vs_attention", "rank_fractions=0,0.5,1") == (
        "rank_fractions",
        [(0.0, 0.5, 1.0)],
    )
    assert cli.parse_assignment("allocation", "allocations=((1,4),(2,0))") == (
        "allocations",
        [((1, 4), (2, 0))],
    )
    for exp, text, what in [
        ("jepa", "memory=maybe", "'memory'.*bool"),
        ("ff_vs_attention", "ff=mlp", "'ff'.*2 comma-separated"),
        ("bilinear", "m=(8,16", "'m'.*unbalanced"),
        ("bilinear", "m=", "'m'.*at least one value"),
    ]:
        with pytest.raises(ValueError, match=what):
            cli.parse_assignment(exp, text, grid=True)


# ---------------------------------------------------------------- sweeps


def test_sweep_runs_the_grid_resumes_and_loads(tmp_path, scheduler, capsys):
    out = tmp_path / "sweep"
    # the real local cluster: one single-threaded worker process
    assert _sweep(out, "--grid", "lr=0.5,1") == 0
    files = sorted(out.glob("*.json"))
    assert [f.name.split("__")[:3] for f in files] == [
        ["bilinear", "lr=0.5", "seed=0"],
        ["bilinear", "lr=1.0", "seed=0"],
    ]
    assert not list(out.glob(".*"))  # no temporary files left
    first = {f.name: json.loads(f.read_text()) for f in files}
    assert {r["config"]["lr"] for r in first.values()} == {0.5, 1.0}
    assert all(
        r["seeds"] == [0] and r["config"]["n_seeds"] == 1 for r in first.values()
    )

    # Pretend the records are old, so that a rewrite shows in the mtime whatever its
    # resolution.
    for f in files:
        os.utime(f, (1_000_000_000, 1_000_000_000))
    files[0].unlink()
    capsys.readouterr()
    assert _sweep(out, "--grid", "lr=0.5,1", scheduler=scheduler) == 0
    assert "2 runs, 1 already in" in capsys.readouterr().err
    assert files[0].exists() and files[0].stat().st_mtime > 1_000_000_000
    assert files[1].stat().st_mtime == 1_000_000_000  # untouched
    # the re-run (a thread worker) reproduces the first run (a process worker) exactly
    assert (
        json.loads(files[0].read_text())["metrics"] == first[files[0].name]["metrics"]
    )

    df = records.load(out)
    assert df.shape[0] == 2
    fields = list(sweeps.config_fields("bilinear"))
    assert set(
        fields + ["seed", "train_loss", "reverse_loss", "git", "version", "seconds"]
    ) <= set(df.columns)
    assert sorted(df["lr"]) == [0.5, 1.0] and list(df["seed"]) == [0, 0]
    assert (df["version"] == revlib.__version__).all() and (df["m"] == 8).all()
    row = df[df["lr"] == 1.0].iloc[0]
    assert row["train_loss"] == first[files[1].name]["metrics"]["train_loss"][0]
    # with curves: each row carries its seed's history, whose last point is the final
    # metric
    hist = first[files[1].name]["histories"]["history"]
    full = records.load(out, curves=True)
    assert "curve.train_loss" not in df.columns and full.shape[0] == 2
    row = full[full["lr"] == 1.0].iloc[0]
    np.testing.assert_array_equal(row["curve.steps"], hist["steps"])
    np.testing.assert_array_equal(
        row["curve.train_loss"], hist["curves"]["train_loss"][0]
    )
    assert row["curve.reverse_loss"][-1] == row["reverse_loss"]


def test_one_run_per_seed_matches_the_batched_run():
    both = sweeps.record(
        "bilinear", {**TINY_FIELDS, "optimizer": "sgd", "batch_size": 1, "n_seeds": 2}
    )
    alone = sweeps.record(
        "bilinear",
        {**TINY_FIELDS, "optimizer": "sgd", "batch_size": 1, "seed": 1, "n_seeds": 1},
    )
    for key, curves in both["histories"]["history"]["curves"].items():
        np.testing.assert_allclose(
            alone["histories"]["history"]["curves"][key][0], curves[1], rtol=1e-6
        )


def test_seeds_and_file_names(tmp_path, scheduler):
    out = tmp_path / "s"
    assert _sweep(out, "--seeds", "2", scheduler=scheduler) == 0  # no grid: seeds only
    names = sorted(f.name for f in out.glob("*.json"))
    assert [n.split("__")[:2] for n in names] == [
        ["bilinear", "seed=0"],
        ["bilinear", "seed=1"],
    ]
    # another --set is another point, never mistaken for a finished one
    assert _sweep(out, "--seeds", "1", "--set", "lr=0.25", scheduler=scheduler) == 0
    assert len(list(out.glob("*.json"))) == 3
    df = records.load(out)
    assert sorted(df["seed"]) == [0, 0, 1] and sorted(df["lr"]) == [0.25, 2.0, 2.0]


def test_first_seed_runs_later_seeds_under_the_same_names(tmp_path):
    """--first-seed 1 --seeds 1 runs seed 1 alone, into the file --seeds 2 would write
    for it: a second seed added later is the same run, and --seeds 2 skips it."""
    alone, both = tmp_path / "alone", tmp_path / "both"
    assert _sweep(alone, "--first-seed", "1", "--seeds", "1") == 0
    assert _sweep(both, "--seeds", "2") == 0
    (one,) = [f.name for f in alone.glob("*.json")]
    assert one.split("__")[1] == "seed=1"
    assert one in {f.name for f in both.glob("*.json")}
    assert records.load(alone)["seed"].tolist() == [1]
    tasks = sweeps.plan("bilinear", {}, {}, 2, first_seed=3)
    assert [t.seed for t in tasks] == [3, 4]
    with pytest.raises(ValueError, match="first_seed"):
        sweeps.plan("bilinear", {}, {}, 1, first_seed=-1)


FAILING = """
from dataclasses import dataclass
import torch
from revlib.train import History


@dataclass(frozen=True)
class Config:
    x: int = 1
    seed: int = 0
    n_seeds: int = 1


def run(config):
    if config.x == 2:
        raise RuntimeError("x=2 is broken\\non purpose")
    return History(steps=torch.arange(2).numpy(), lr=1.0,
                   values={"x": torch.full((2, 1), float(config.x)).numpy()})
"""


def test_a_failing_run_leaves_no_file(tmp_path, scheduler, capsys, monkeypatch):
    pkg = tmp_path / "sweepfail"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "exp.py").write_text(FAILING)
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker is a thread of this process
    out = tmp_path / "out"
    rc = main(
        [
            "sweep",
            "sweepfail.exp",
            "--grid",
            "x=1,2,3",
            "--out",
            str(out),
            "--scheduler",
            scheduler,
            "--no-progress",
        ]
    )
    assert rc == 1
    err = capsys.readouterr().err
    assert (
        "failed: x=2, seed=0: RuntimeError: x=2 is broken" in err
        and "on purpose" not in err
    )
    assert sorted(f.name.split("__")[1] for f in out.iterdir()) == [
        "x=1",
        "x=3",
    ]  # no x=2, no temp
    df = records.load(out)  # the metric "x" does not hide the field x
    assert list(df["x"]) == [1, 3] and list(df["metric.x"]) == [1.0, 3.0]


def test_write_json_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    with pytest.raises(TypeError):
        records.write(path, {"a": 1, "b": object()})
    assert list(tmp_path.iterdir()) == []
    records.write(path, {"a": 1})

    def broken(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        records.write(path, {"a": 2})
    assert list(tmp_path.iterdir()) == [path] and json.loads(path.read_text()) == {
        "a": 1
    }


def test_load_rejects_foreign_json(tmp_path):
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="other.json is not a revlib record"):
        records.load(tmp_path)


# ---------------------------------------------------------------- devices


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the message on a machine without CUDA"
)
def test_cuda_without_cuda_is_a_clear_error(tmp_path, capsys):
    for dev in ("cuda", "cuda:1"):
        with pytest.raises(
            ValueError, match=rf"^device must be 'cpu' on this machine .*'{dev}'"
        ):
            devices.resolve(dev)
    assert devices.resolve("cuda:3", here=False) == torch.device("cuda", 3)
    assert main(["run", "bilinear", "--device", "cuda"]) == 2
    assert "device must be 'cpu' on this machine" in capsys.readouterr().err
    assert (
        main(["sweep", "bilinear", "--device", "cuda", "--out", str(tmp_path / "o")])
        == 2
    )
    with pytest.raises(ValueError, match="device must be"):
        devices.resolve("cuda:x")


def test_device_mode_places_tensors_and_keeps_random_streams():
    # "meta" stands in for a GPU: a second device that, like CUDA, refuses to mix with
    # the CPU.
    g, ref = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    table = torch.from_numpy(
        np.arange(6.0)
    )  # a CPU tensor made outside the constructors
    with devices._OnDevice(torch.device("meta")):
        x = torch.randn(4, generator=g)  # drawn on the CPU, then moved
        perm = torch.randperm(5, generator=g)
        z = torch.zeros(3)
        y = table[torch.arange(3)] + z  # the CPU table follows the meta tensors
        host = torch.ones(2, device="cpu").numpy()
    assert x.device.type == perm.device.type == z.device.type == y.device.type == "meta"
    torch.randn(4, generator=ref), torch.randperm(5, generator=ref)
    assert torch.equal(g.get_state(), ref.get_state())  # same draws as on the CPU
    assert (
        isinstance(host, np.ndarray) and torch.zeros(1).device.type == "cpu"
    )  # mode is gone


def test_train_puts_minibatch_indices_on_the_parameters_device():
    p = torch.nn.Parameter(torch.zeros(2, 3, device="meta"))
    seen = []

    def loss(idx):
        seen.append(idx.device.type)
        return (p * p).sum(-1)

    train(
        [p],
        loss,
        TrainConfig(steps=2, lr=0.1, optimizer="sgd", batch_size=2, eval_points=2),
        n_train=4,
        n_seeds=2,
    )
    assert seen == ["meta", "meta"]


def test_config_of_and_stored_at_rerun_a_stored_record(tmp_path):
    fields = dict(TINY_FIELDS)
    for seed in (0, 1):
        rec = sweeps.record("bilinear", {**fields, "seed": seed, "n_seeds": 1})
        records.write(tmp_path / f"seed{seed}.json", rec)
    df = records.load(tmp_path, curves=True)
    cfg = records.config_of(df.iloc[0], n_seeds=1, seed=int(df.iloc[0]["seed"]))
    assert cfg == sweeps.make_config("bilinear", {**fields, "seed": 0, "n_seeds": 1})
    step = int(df.iloc[0]["curve.steps"][1])
    # a stored seed gets its own value and no spread; another seed the median and the
    # range
    value, spread = records.stored_at(df, "train_loss", step, seed=1)
    assert spread == 0 and value == df[df.seed == 1]["curve.train_loss"].iloc[0][1]
    both = np.array([c[1] for c in df["curve.train_loss"]])
    assert records.stored_at(df, "train_loss", step, seed=99) == (
        np.median(both),
        np.ptp(both),
    )
    with pytest.raises(
        ValueError, match="step must be one of the stored evaluation steps"
    ):
        records.stored_at(df, "train_loss", step + 1, seed=1)
    # a live re-run of seed 0's first `step` steps is what the record holds, to the last
    # digit
    live = bilinear.run(
        records.config_of(df.iloc[0], steps=step, eval_points=2, seed=0, n_seeds=1)
    )
    ((name, got, ref, allowed),) = records.live_against_stored(
        df, live, ["train_loss"], step, 0, 0.01
    )
    assert (
        name == "train_loss" and allowed == 0.01 and got == pytest.approx(ref, abs=1e-6)
    )
    ((_, _, ref99, allowed99),) = records.live_against_stored(
        df, live, ["train_loss"], step, 99, 0.01
    )
    assert (ref99, allowed99) == (np.median(both), 0.01 + np.ptp(both))
    with pytest.raises(ValueError, match="tol"):
        records.live_against_stored(df, live, ["train_loss"], step, 0, -1.0)


# ---------------------------------------------------------------- extras


def test_extras_keep_plain_data_and_leave_out_models_and_big_arrays():
    from dataclasses import dataclass

    @dataclass
    class Result:
        ablation: dict
        ranks: list
        n_params: int
        weights: np.ndarray
        model: object
        loss: float

    ex = records.extras(
        Result(
            {"p": {0: np.array([0.5, np.nan])}},
            [1, 4],
            12,
            np.zeros(records.MAX_EXTRA + 1),
            object(),
            float("inf"),
        )
    )
    assert ex == {
        "ablation": {"p": {"0": [0.5, None]}},
        "ranks": [1, 4],
        "n_params": 12,
        "loss": None,
    }


def test_record_keeps_what_a_chapter_computes_after_training():
    rec = sweeps.record(
        "small_lm",
        {
            "n_layer": 1,
            "n_head": 2,
            "d": 8,
            "seq_len": 24,
            "steps": 2,
            "batch_size": 4,
            "n_test": 8,
            "n_seeds": 1,
            "eval_points": 2,
            "rank_fractions": (0.0, 1.0),
        },
    )
    ex = rec["extras"]
    assert set(ex) == {"ablation", "ranks", "sweep", "n_params"}
    assert set(ex["ablation"]) == {"p_the", "p_io", "p_s"} and set(
        ex["ablation"]["p_io"]
    ) == {"0", "1"}
    assert len(ex["sweep"]["p_io"]) == len(ex["ranks"]) == 2
    json.dumps(rec, allow_nan=False)  # strict JSON


def test_load_gives_the_steps_of_every_history(tmp_path):
    rec = {
        "experiment": "allocation",
        "config": {"d": 8},
        "seeds": [0],
        "metrics": {"histories.0.bigram_excess": [0.5]},
        "histories": {
            "histories.0": {
                "steps": [0, 10],
                "lr": 0.1,
                "curves": {"bigram_excess": [[1.0, 0.5]]},
            }
        },
        "extras": {"n_params": [64]},
    }
    (tmp_path / "r.json").write_text(json.dumps(rec))
    row = records.load(tmp_path, curves=True).iloc[0]
    np.testing.assert_array_equal(row["curve.histories.0.steps"], [0, 10])
    np.testing.assert_array_equal(row["curve.histories.0.bigram_excess"], [1.0, 0.5])
    assert "curve.steps" not in row.index and row["extras"] == {"n_params": [64]}
    assert np.isnan(row["cpu_seconds"])  # an older record without CPU time


def test_a_killed_record_resumes_from_its_checkpoint(tmp_path, monkeypatch):
    fields = {**TINY_FIELDS, "optimizer": "sgd", "batch_size": 1, "steps": 40}
    whole = sweeps.record("bilinear", fields)
    import revlib.train as tr

    real = tr.train

    def killed(
        *args, **kwargs
    ):  # the loss raises at step 25, as a killed process stops
        loss_fn = args[1]
        calls = {"n": 0}

        def dying(idx):
            calls["n"] += 1
            if calls["n"] > 25:
                raise KeyboardInterrupt("killed")
            return loss_fn(idx)

        return real(args[0], dying, *args[2:], **kwargs)

    prefix = tmp_path / "run"
    monkeypatch.setattr(bilinear, "train", killed)
    with pytest.raises(KeyboardInterrupt):
        sweeps.record("bilinear", fields, checkpoint=prefix, checkpoint_every=10)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["run.1.pt"]
    assert torch.load(tmp_path / "run.1.pt", weights_only=False)["step"] == 20
    resumed = sweeps.record("bilinear", fields, checkpoint=prefix, checkpoint_every=10)
    assert resumed["histories"] == whole["histories"]
    assert (
        resumed["machine"]["torch"] == torch.__version__ and resumed["cpu_seconds"] > 0
    )
    # where it resumed: its wall seconds are that last stretch's
    assert resumed["resumed_at_step"] == [20]
    fresh = sweeps.record(
        "bilinear", fields, checkpoint=tmp_path / "fresh", checkpoint_every=10
    )
    assert "resumed_at_step" not in fresh and fresh["histories"] == whole["histories"]


def test_bench_times_a_small_jepa_step_and_refuses_bad_sizes():
    from revlib import bench

    # structure and the FLOP count only: a timing is a benchmark's job, not a test's
    out = bench.jepa_step(n_a=40, batch_size=16, steps=2, multiplicity=2, top=3)
    assert out["ms_per_step"] >= 0 and out["gflop_per_step"] > 0
    assert out["matmul_gflops"] > 0 and len(out["top"]) == 3
    # the plain step and the deduplicated one, side by side: fewer FLOPs for the latter
    assert 0 < out["dedupe"]["gflop_per_step"] < out["gflop_per_step"]
    assert out["dedupe"]["ms_per_step"] >= 0 and "speedup" in out
    assert "ms/step" in bench.report(out) and "speed-up" in bench.report(out)
    with pytest.raises(ValueError, match="steps"):
        bench.jepa_step(steps=1)
