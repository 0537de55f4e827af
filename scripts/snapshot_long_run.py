"""Copy a long run's newest checkpoint into data/long_runs (issue 26), so that a
session that ends mid-run loses nothing: the next one resumes from the copy
(data/long_runs/README.md).

    python scripts/snapshot_long_run.py [NAME]      # default: jepa_paper_2500

Reads ``scratch/long/<NAME>/.checkpoints/*.pt`` (the one the running sweep writes),
and rewrites ``data/long_runs/<NAME>.seed0.pt`` and ``<NAME>.partial.json`` (the
evaluations so far, the step, the CPU time, and this machine for the stretch since the
last snapshot), each atomically. A checkpoint no newer than the stored one is left.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from revlib import claims, repro  # noqa: E402
from revlib.train import TrainConfig  # noqa: E402

# the run's TrainConfig, for the evaluation steps the records are taken at
RUNS = {
    "jepa_paper_2500": TrainConfig(
        optimizer="adamw",
        steps=200_000,
        eval_points=41,
        eval_spacing="log",
        lr=1e-4,
        batch_size=1024,
        warmup_steps=2000,
    ),
    "jepa_ln_2500": TrainConfig(
        optimizer="adamw",
        steps=200_000,
        eval_points=41,
        eval_spacing="log",
        lr=3e-4,
        batch_size=128,
    ),
}
# what a first snapshot writes into a run's partial file
ABOUT = {
    "jepa_ln_2500": {
        "about": (
            "JEPA 1/1 at |E_A| = 2,500, m = 10, d = 64, the book's recipe (learnable "
            "LayerNorm of both concepts, in-batch InfoNCE at batch 128, AdamW lr 3e-4, "
            "no warm-up): the evaluations so far of a run planned for 200,000 steps, "
            "stopped when the session ended; resume it with the command below after "
            "copying the checkpoint (see README.md)"
        ),
        "command": (
            "python -m revlib sweep jepa --set n_a=2500 --set multiplicity=10 "
            "--set concept_ln=layernorm --set lr=3e-4 --set steps=200000 "
            "--set eval_points=41 --set eval_spacing=log --seeds 1 "
            "--out scratch/long/jepa_ln_2500 --workers 1"
        ),
        "paper": {
            "test_acc": 0.72,
            "note": "about 72% held-out accuracy at m = 10 (unverified reading of "
            "Figure 3, |E_A| = 50K, d = 768, up to 3M steps)",
        },
    },
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", nargs="?", default="jepa_paper_2500", choices=sorted(RUNS))
    args = ap.parse_args()
    found = sorted(
        (ROOT / "scratch/long" / args.name / ".checkpoints").glob("*.pt"),
        key=lambda p: p.stat().st_mtime,
    )
    if not found:
        print(f"error: no checkpoint under scratch/long/{args.name}", file=sys.stderr)
        return 1
    src = found[-1]
    state = torch.load(src, weights_only=False)
    data = ROOT / "data/long_runs"
    part = data / f"{args.name}.partial.json"
    if part.exists():
        old = json.loads(part.read_text())
    else:  # the run's first snapshot
        old = ABOUT[args.name] | {
            "checkpoint": f"{args.name}.seed0.pt (to scratch/long/{args.name}/"
            f".checkpoints/{src.name})",
            "step": 0,
            "cpu_seconds": 0.0,
            "machines": {},
        }
    if state["step"] <= old["step"]:
        print(
            f"nothing to do: the checkpoint is at step {state['step']}, the stored one "
            f"at {old['step']}"
        )
        return 0
    steps = RUNS[args.name].eval_steps()[: state["next_eval"]]
    old["evaluations"] = {"steps": [int(s) for s in steps]} | {
        k: [float(x[0]) for x in v] for k, v in state["records"].items()
    }
    here, machines = repro.provenance(), old["machines"]
    last = list(machines)[-1] if machines else None
    if last and machines[last] == here:  # the same machine goes on: one stretch
        start = last.split()[1].split("-")[0]
        machines.pop(last)
        machines[f"steps {start}-{state['step']}"] = here
    else:
        machines[f"steps {old['step']}-{state['step']}"] = here
    old["step"], old["cpu_seconds"] = int(state["step"]), round(state["cpu_seconds"], 1)
    fd, tmp = tempfile.mkstemp(dir=data, suffix=".pt.tmp")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, data / f"{args.name}.seed0.pt")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    claims.write_json(part, old)
    acc, mrr = old["evaluations"]["test_acc"][-1], old["evaluations"]["test_mrr"][-1]
    print(
        f"{args.name}: step {old['step']}, {old['cpu_seconds'] / 3600:.2f} CPU-h, "
        f"last evaluation at step {steps[-1]}: held-out accuracy {acc:.3f}, "
        f"MRR {mrr:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
