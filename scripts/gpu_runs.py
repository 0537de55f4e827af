"""The stored runs made on a GPU (issues 25 and 26): one command, run once on a lent GPU
machine, that trains the paper-scale runs a 2-core CPU cannot, and writes one record
per run (:mod:`revlib.records`) with what it cost.

    python scripts/gpu_runs.py --out DIR [--budget SECONDS] [--git HASH]
    python scripts/gpu_runs.py --tiny --out DIR   # the same code, tiny sizes, on CPU

Jobs run as child processes (``--job NAME``), in three lanes at once; a lane runs its
jobs in order of priority. Each job captures its training step as a CUDA graph
(``REVLIB_CUDA_GRAPHS=1``, :func:`revlib.train.graphs_wanted`): the book's models are so
small that an eager GPU step is bound by Python launching its kernels. Every evaluation
is also written at once to ``<job>.partial<k>.json`` (``k``: the job's training loop),
so a job stopped at the budget still leaves its curve so far. At the end everything is
packed into ``gpu_runs.tar.gz``, and the paper-size noisy-recall model's weights are
saved beside it (``ff_paper.weights.pt``).

Records land in ``data/gpu_runs/`` (unpacked by hand, see ``data/gpu_runs/README.md``)
and are read with :func:`revlib.records.load` like any stored run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EPOCHS = 3000  # the reversal paper's training length (its code's --num_epochs)


def _ml_steps(fields: dict) -> int:
    from revlib.experiments import multi_layer as ml

    cfg = ml.Config(**{**fields, "steps": 1})
    return ml.steps_for(cfg, EPOCHS)


def jobs(tiny: bool) -> dict[str, dict]:
    """name -> {experiment, fields, tf32, weights}. ``tiny``: the same jobs at sizes a
    CPU runs in seconds (a check of this script, not a result)."""
    ml_main = dict(vocab=800, n_seeds=10, eval_points=61)
    out: dict[str, dict] = {
        # Part III at the paper's toy size (Chen, Bruna & Bietti, script_k1_noise05.sh):
        # d = T = 256, batch 512, 5,000 SGD steps, no clipping; 512 clean test sequences
        "ff_paper": dict(
            experiment="ff_vs_attention",
            fields=dict(
                d=256,
                seq_len=256,
                batch_size=512,
                steps=5000,
                n_seeds=2,
                n_test=512,
                eval_points=51,
                max_grad_norm=0.0,
                rank_fractions=(0.0, 0.05, 0.1, 0.2, 0.5, 1.0),
            ),
            tf32=True,
            weights=True,
        ),
        # its science control: no noise to store (clipped at 10 as the CPU runs, since
        # without noise the recall loss can fall fast enough to diverge)
        "ff_paper_no_noise": dict(
            experiment="ff_vs_attention",
            fields=dict(
                d=256,
                seq_len=256,
                batch_size=512,
                steps=5000,
                n_seeds=1,
                n_test=512,
                eval_points=51,
                alpha=0.0,
                max_grad_norm=10.0,
                rank_fractions=(0.0, 0.1, 0.2, 1.0),
            ),
            tf32=True,
        ),
        # Part I (Zhu et al.): the paper's models and variants at its 3,000 epochs, 10
        # seeds. The paper's code leaves the output matrix untied (see the chapter).
        "rev_1l768_tied": dict(
            experiment="multi_layer",
            fields=dict(ml_main, n_layer=1, d_model=768, n_head=12, tied=True),
        ),
        "rev_1l768_untied": dict(
            experiment="multi_layer",
            fields=dict(ml_main, n_layer=1, d_model=768, n_head=12, tied=False),
        ),
        "rev_24l20": dict(
            experiment="multi_layer",
            fields=dict(ml_main, n_layer=24, d_model=20, n_head=4),
        ),
        "rev_24l768": dict(
            experiment="multi_layer",
            fields=dict(
                ml_main, n_layer=24, d_model=768, n_head=12, tied=False, n_seeds=3
            ),
            tf32=True,
        ),
        "rev_main": dict(experiment="multi_layer", fields=dict(ml_main)),
        "rev_main_untied": dict(
            experiment="multi_layer", fields=dict(ml_main, tied=False)
        ),
        "rev_frozen": dict(
            experiment="multi_layer",
            fields=dict(ml_main, tied=False, freeze_embeddings=True),
        ),
        "rev_heads1": dict(experiment="multi_layer", fields=dict(ml_main, n_head=1)),
        "rev_heads2": dict(experiment="multi_layer", fields=dict(ml_main, n_head=2)),
        "rev_heads8": dict(experiment="multi_layer", fields=dict(ml_main, n_head=8)),
        "rev_word3": dict(experiment="multi_layer", fields=dict(ml_main, word_size=3)),
        "rev_vocab200": dict(experiment="multi_layer", fields=dict(ml_main, vocab=200)),
        "rev_vocab400": dict(experiment="multi_layer", fields=dict(ml_main, vocab=400)),
        "rev_vocab1600": dict(
            experiment="multi_layer", fields=dict(ml_main, vocab=1600)
        ),
        # Part II (Wang & Sun), issue 26 (a): JEPA 1/1 at |E_A| = 2,500, m = 10, batch
        # 1024 for 200,000 steps, in the paper's recipe (the CPU long run's config) and
        # in the book's LayerNorm recipe.
        "jepa_paper": dict(
            experiment="jepa",
            fields=dict(
                n_a=2500,
                multiplicity=10,
                concept_ln="auto",
                lr=1e-4,
                warmup_steps=2000,
                batch_size=1024,
                steps=200_000,
                eval_points=41,
                eval_spacing="log",
                n_seeds=1,
            ),
        ),
        "jepa_layernorm": dict(
            experiment="jepa",
            fields=dict(
                n_a=2500,
                multiplicity=10,
                concept_ln="layernorm",
                lr=3e-4,
                batch_size=1024,
                steps=200_000,
                eval_points=41,
                eval_spacing="log",
                n_seeds=1,
            ),
        ),
    }
    # the first call's run stopped at step 4,800 of 5,000 with three lanes sharing the
    # GPU; the second call ran one seed alone
    out["ff_paper_s1"] = dict(out["ff_paper"], fields=dict(out["ff_paper"]["fields"]))
    out["ff_paper_s1"]["fields"]["n_seeds"] = 1
    for job in out.values():
        f = job["fields"]
        if job["experiment"] == "multi_layer" and "steps" not in f:
            f["steps"] = _ml_steps(f) if not tiny else 30
        if tiny:
            _shrink(job)
    return out


def _shrink(job: dict) -> None:
    f = job["fields"]
    if job["experiment"] == "ff_vs_attention":
        f.update(d=16, seq_len=32, batch_size=8, steps=20, n_test=16, eval_points=3)
    elif job["experiment"] == "multi_layer":
        f.update(
            vocab=min(f["vocab"], 80),
            n_seeds=2,
            steps=30,
            eval_points=3,
            n_layer=min(f.get("n_layer", 2), 3),
            d_model=min(f.get("d_model", 64), 24),
        )
        f["n_head"] = 4 if f["d_model"] % 4 == 0 and f.get("n_head", 4) > 2 else 2
        f["batch_size"] = 16
    else:
        f.update(n_a=60, n_b=40, batch_size=32, steps=40, eval_points=4, n_eval=20)
        f["warmup_steps"] = min(f.get("warmup_steps", 0), 10)


# Lanes run at once; each runs its jobs in order (most wanted first).
LANES = {
    "A": [
        "ff_paper",
        "rev_1l768_tied",
        "rev_1l768_untied",
        "rev_24l20",
        "ff_paper_no_noise",
    ],
    "B": ["jepa_paper", "jepa_layernorm"],
    "C": [
        "rev_24l768",
        "rev_main",
        "rev_main_untied",
        "rev_frozen",
        "rev_heads1",
        "rev_heads8",
        "rev_word3",
        "rev_vocab200",
        "rev_vocab400",
        "rev_heads2",
        "rev_vocab1600",
    ],
}


# ------------------------------------------------------------------------ one job


def summary_of(experiment: str, result) -> dict:
    """What a record cannot hold whole, beyond what the result summarises itself
    (multi_layer's ``Result.summary``): seed 0's cosines of the first 40 entity
    embeddings, for a heat map."""
    import numpy as np

    if experiment != "multi_layer" or result.embedding_cos is None:
        return {}
    return {
        "embedding_cos_seed0_first40": np.asarray(
            result.embedding_cos[0, :40, :40]
        ).tolist()
    }


def run_job(name: str, spec: dict, out: Path, device: str, git: str | None) -> None:
    import torch

    from revlib import devices, records, repro, sweeps

    mod = sweeps.experiment(spec["experiment"])
    config = sweeps.make_config(spec["experiment"], spec["fields"])
    repro.setup(config.seed)
    cuda = device.startswith("cuda")
    if cuda:
        # The deterministic versions of some CUDA kernels (an embedding's backward)
        # read values on the host, which a CUDA graph cannot: GPU runs are not bit for
        # bit repeatable (the record says so), and no claim needs them to be.
        torch.use_deterministic_algorithms(False)
        os.environ["REVLIB_CUDA_GRAPHS"] = "1"
        torch.backends.cuda.matmul.allow_tf32 = bool(spec.get("tf32"))
        torch.backends.cudnn.allow_tf32 = bool(spec.get("tf32"))
    orig, calls = mod.train, [0]

    def traced(params, loss_fn, cfg, evaluate=None, **kw):
        calls[0] += 1
        steps, seen, t0 = cfg.eval_steps(), {}, time.perf_counter()
        partial = out / f"{name}.partial{calls[0]}.json"

        def ev():
            values = evaluate()
            k = len(next(iter(seen.values()), []))
            for key, v in values.items():
                seen.setdefault(key, []).append(
                    v.detach().double().cpu().numpy().reshape(-1).tolist()
                )
            elapsed = time.perf_counter() - t0
            records.write(
                partial,
                {
                    "job": name,
                    "steps": [int(s) for s in steps[: k + 1]],
                    "of_steps": int(cfg.steps),
                    "seconds": round(elapsed, 1),
                    "values": seen,
                    # the machine that ran it: a record unpacked elsewhere keeps it
                    "torch_version": torch.__version__,
                    "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                    "machine": repro.provenance(),
                },
                allow_nan=True,
            )
            print(
                f"{name}: step {int(steps[k])}/{cfg.steps} at {elapsed:.0f} s",
                flush=True,
            )
            return values

        return orig(params, loss_fn, cfg, ev if evaluate else None, **kw)

    mod.train = traced
    start, cpu0 = time.perf_counter(), time.process_time()
    with devices.use(device):
        result = mod.run(config)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    gpu = torch.cuda.get_device_name(0) if cuda else None
    rec = records.from_result(
        spec["experiment"],
        config,
        result,
        device=device,
        seconds=seconds,
        cpu_seconds=time.process_time() - cpu0,
        git=(git, False) if git else (None, None),
        job=name,
        gpu=gpu,
        cuda_graphs=cuda,
        deterministic=not cuda,
        tf32=bool(spec.get("tf32")) and cuda,
        machine=repro.provenance(),
        torch_cuda=torch.version.cuda if cuda else None,
    )
    rec["extras"].setdefault("summary", {}).update(
        summary_of(spec["experiment"], result)
    )
    records.write(out / f"{name}.json", rec)
    if spec.get("weights"):
        model = result.model
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        tmp = out / f".{name}.weights.pt.tmp"
        torch.save({"config": rec["config"], "state": state}, tmp)
        os.replace(tmp, out / f"{name}.weights.pt")
    print(f"{name}: done in {seconds:.0f} s", flush=True)


# ---------------------------------------------------------------------- the driver


def drive(args) -> int:
    out = Path(args.out)
    res = out / "results"
    res.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    deadline = start + args.budget
    specs = jobs(args.tiny)
    log = open(out / "driver.log", "a")

    def say(msg):
        line = f"[{time.perf_counter() - start:6.0f} s] {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    say(f"device {args.device}, budget {args.budget} s")
    status: dict[str, str] = {}

    def lane(names):
        for name in names:
            left = deadline - time.perf_counter()
            if left < 20:
                status[name] = "not started (budget)"
                continue
            cmd = (
                [
                    sys.executable,
                    __file__,
                    "--job",
                    name,
                    "--out",
                    str(res),
                    "--device",
                    args.device,
                ]
                + (["--tiny"] if args.tiny else [])
                + (["--git", args.git] if args.git else [])
            )
            with open(res / f"{name}.log", "w") as fh:
                t0 = time.perf_counter()
                proc = subprocess.Popen(
                    cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
                )
                try:
                    rc = proc.wait(timeout=left)
                    status[name] = f"rc {rc} in {time.perf_counter() - t0:.0f} s"
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    status[name] = f"stopped at the budget after {left:.0f} s"
            say(f"{name}: {status[name]}")

    lanes = (
        [names.split(",") for names in args.lanes.split(";")]
        if args.lanes
        else list(LANES.values())
    )
    threads = [threading.Thread(target=lane, args=(names,)) for names in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (res / "status.json").write_text(json.dumps(status, indent=1))
    weights = list(res.glob("*.weights.pt"))
    for w in weights:
        os.replace(w, out / w.name)
    with tarfile.open(out / "gpu_runs.tar.gz", "w:gz") as tar:
        tar.add(res, arcname="gpu_runs")
    if not args.keep:
        shutil.rmtree(res)  # what comes back from a lent machine is a few files
    say(f"packed; {json.dumps(status)}")
    return 0


NO_PROVENANCE = (
    "the job's partial file did not record the versions of the machine that ran it"
)


def unpack(archives: list[str], into: Path, git: str | None) -> list[str]:
    """Write the runs of ``gpu_runs.tar.gz`` archives into ``into`` as records: a
    finished job's record as it is (and its weights file, found beside its archive);
    a job stopped at the budget as a record of its evaluations so far, marked
    ``partial`` with the step it reached (its ``metrics`` are its last evaluation). A
    later archive's run of a job replaces an earlier one only if it went further."""
    import tarfile as tf

    from revlib import records, sweeps

    into.mkdir(parents=True, exist_ok=True)
    written = []
    for arc in archives:
        with tf.open(arc) as tar:
            members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
            status = json.load(tar.extractfile(members["status.json"]))
            for name in status:
                final, part = (
                    members.get(f"{name}.json"),
                    members.get(f"{name}.partial1.json"),
                )
                if final is not None:
                    rec = json.load(tar.extractfile(final))
                elif part is not None:
                    p = json.load(tar.extractfile(part))
                    spec = jobs(False)[name]
                    # the versions of the machine that ran it, never this one's (an
                    # older partial file did not record them: None, and said so)
                    ran_on = {
                        k: p.get(k)
                        for k in ("torch_version", "cpu_capability", "machine")
                    }
                    if ran_on["torch_version"] is None:
                        ran_on["provenance"] = NO_PROVENANCE
                    config = sweeps.make_config(spec["experiment"], spec["fields"])
                    rec = records.make(
                        spec["experiment"],
                        config,
                        seeds=records.seeds_of(config),
                        metrics={k: v[-1] for k, v in p["values"].items()},
                        histories={
                            "history": {
                                "steps": p["steps"],
                                "lr": float(config.lr),
                                "curves": {
                                    k: [list(c) for c in zip(*v)]
                                    for k, v in p["values"].items()
                                },
                            }
                        },
                        device="cuda",
                        seconds=p["seconds"],
                        git=(git, False) if git else (None, None),
                        job=name,
                        partial=True,
                        stopped_at_step=p["steps"][-1],
                        planned_steps=p["of_steps"],
                        status=status[name],
                        cuda_graphs=True,
                        tf32=bool(spec.get("tf32")),
                        **ran_on,
                    )
                else:
                    continue
                dest = into / f"{name}.json"
                if dest.exists():
                    old = json.loads(dest.read_text())
                    reached = old.get("stopped_at_step", float("inf"))
                    if not old.get("partial") or reached >= rec.get(
                        "stopped_at_step", float("inf")
                    ):
                        continue
                records.write(dest, rec)
                written.append(dest.name)
                weights = Path(arc).with_name(f"{name}.weights.pt")
                if final is not None and weights.exists():
                    shutil.copyfile(weights, into / weights.name)
                    written.append(weights.name)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder the run writes to")
    ap.add_argument(
        "--unpack",
        nargs="+",
        metavar="TAR",
        help="write the runs of these archives into --into as records",
    )
    ap.add_argument("--into", default=str(ROOT / "data" / "gpu_runs"))
    ap.add_argument("--job")
    ap.add_argument("--device", default=None)
    ap.add_argument("--budget", type=float, default=500.0)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--git", default=None)
    ap.add_argument(
        "--lanes", default=None, help="jobs to run: lanes split by ';', jobs by ','"
    )
    ap.add_argument("--keep", action="store_true", help="keep results/ beside the tar")
    args = ap.parse_args()
    if args.device is None and not args.unpack:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.unpack:
        for name in unpack(args.unpack, Path(args.into), args.git):
            print(name)
        return 0
    if not args.out:
        ap.error("--out is required")
    if args.job:
        run_job(
            args.job, jobs(args.tiny)[args.job], Path(args.out), args.device, args.git
        )
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
