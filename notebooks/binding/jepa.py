# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook: JEPA breaks the curse
#
# The executable side of {doc}`../../book/binding/jepa`. The JEPA model of
# {cite}`wang2025binding` reads each two-token name with a recognition module into one
# concept vector, predicts the target's concept vector with a semantic module, and is
# trained with in-batch InfoNCE. We train it live on the surface-name data of
# {doc}`../../book/binding/surface_names` (where the standard transformer scores 0 on
# held-out reverse facts), with the memory-layer recognition module next to it, and show
# why JEPA 1/1 does not fit its training facts there (it ignores the relation). Then we
# load the stored 20,000-step runs on 1,800 entities (`data/sweeps/jepa`, made by
# `python -m revlib sweep`), where JEPA 1/1 with the memory script's LayerNorm fits and
# reverses and the memory layer does better, and the same recipe at other multiplicities
# and depth (`data/sweeps/jepa_trends`), re-run the first steps of one of them live, and
# load the older depth, multiplicity, width and memory sweeps at 640 entities (`python
# -m revlib.experiments.jepa --sweep data/binding_jepa_sweep.json`). Sections 8 and 9
# run JEPA long at the paper's smallest size, $|E_A|=2{,}500$: in the paper's recipe
# (`data/sweeps/jepa_paper_2500`) and in the book's (`data/sweeps/jepa_2500`).

# %% tags=["colab-setup", "remove-cell"]
# Colab only (it does nothing elsewhere): fetch the book's repository, install
# revlib, and work from this notebook's folder so that its data/ paths resolve.
# Written by scripts/colab-cell from _config.yml (repository.url and .branch).
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    REPO, BRANCH = "https://github.com/revlib-book/reversal-book", "main"
    CLONE = "/content/reversal-book"
    if not os.path.isdir(CLONE):
        git = ["git", "clone", "--depth", "1", "--branch", BRANCH, REPO, CLONE]
        subprocess.run(git, check=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    subprocess.run(pip + ["-e", CLONE], check=True)
    sys.path.insert(0, CLONE)  # this kernel started before revlib was installed
    os.chdir(os.path.join(CLONE, "notebooks/binding"))

# %% tags=["parameters"]
SEED = 0  # base seed; seeds SEED, SEED+1 train side by side
N_A, N_B = 400, 240  # entities teaching the rule / tested (paper: 50,000 / 30,000)
N_REL = 3  # relation pairs (paper: 6)
MULTIPLICITY = 10  # entities sharing each name token (paper: 10)
STEPS = 1000  # AdamW steps of the live runs (paper: up to 3,000,000)
LIVE_STEPS = 1000  # steps of the live re-run of a stored 20,000-step run
SWEEP640_DIR = "../../data/sweeps/jepa_640"  # scripts/jepa-sweep-640
STORED_DIR = "../../data/sweeps/jepa"
TRENDS_DIR = "../../data/sweeps/jepa_trends"
BIG_DIR = "../../data/sweeps/jepa_2500"  # the book's recipe at |E_A| = 2,500, run long
# a control run, one of the ledger's controls; see scripts/check-claims
CONTROL = "none"

# %%
from revlib import repro

repro.setup(SEED)

from revlib import claims
from revlib.experiments import jepa

ledger = claims.Ledger.of(
    jepa,
    CONTROL,
    scale=f"{N_A} + {N_B} entities, {N_REL} relation pairs, m = {MULTIPLICITY}, "
    f"d = 64, batch 128, {STEPS} steps, 2 seeds; stored: 1,600 + 200 entities, "
    "20,000 steps",
    paper_scale="50,000 + 30,000 entities, 6 relation pairs, m = 10, d = 768, "
    "batch 1024, up to 3M steps",
    size_knobs={"N_A": N_A, "N_B": N_B, "STEPS": STEPS},
)

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, probes, records
from revlib.report import approx, exact

plot.set_theme()
E = N_A + N_B
# A held-out answer is one of the N_B tested entities: chance is a uniform guess among
# them, not among all E concepts the prediction is ranked against.
chance_acc = 1 / N_B
chance_mrr = probes.chance_mrr(N_B)
# Tolerances: a per-seed value of these runs moves between machines as a fresh seed
# would, so each covers the spread over 5 fresh seeds (tests/seed_spread.json): one
# seed's held-out MRR ranges over 0.10-0.17, its atomic accuracy over 0.45-0.58. The
# reverse claims are therefore stated on the median seed, which moves about half as
# much.
TOL = {"train": 0.1, "atomic": 0.15, "test_acc": 0.04, "test_mrr": 0.1}
TOL_X = {"acc": 10.0, "mrr": 4.0}  # per-seed held-out values in units of chance
TOL_MEDIAN_X = {"jepa": 2.0, "memory": 1.0}  # the median seed's MRR, in units of chance
common = dict(
    n_a=N_A,
    n_b=N_B,
    n_rel=N_REL,
    multiplicity=MULTIPLICITY,
    steps=STEPS,
    seed=SEED,
    n_seeds=2,
    n_eval=400,
    eval_points=6,
)
# untrained, the stored runs are read before their first step, like the live models
AT = 0 if ledger.config(jepa.Config(**common)).no_training else -1


def tol(split, metric):
    return TOL.get(f"{split}_{metric}", TOL.get(split))


def report(label, r):
    print(f"{label}:")
    for split in ("train", "atomic", "test"):
        print(
            f"  {split}: accuracy "
            f"{approx(r.final(split + '_acc'), tol(split, 'acc'))}, "
            f"MRR {approx(r.final(split + '_mrr'), tol(split, 'mrr'))}"
        )


# %% [markdown]
# ## 1. JEPA #Rec 1 / #Sem 1 predicts held-out reverse facts above chance
#
# Every prediction is ranked against the concept vectors of **all** $E$ entities (the
# paper's `--eval_full_negatives`), not in-batch. Accuracy is rank 1. Chance is that of
# a uniform guess among the $n_B$ tested entities, the type every held-out answer has:
# $1/n_B$. Held-out values are stated in units of chance. The claim's control shuffles
# the answers of the atomic facts, so that no trained fact is the reverse of a held-out
# one: the same test must then fail.

# %%
base = jepa.run(ledger.config(jepa.Config(**common)))

# %% tags=["hide-input"]
report("JEPA 1/1", base)
print(
    f"chance among the {N_B} tested entities: accuracy {chance_acc:.4f}, "
    f"MRR {chance_mrr:.4f}"
)
ledger.glue("chance_acc", chance_acc, digits=4)
ledger.glue("chance_mrr", chance_mrr, digits=4)
for split in ("train", "atomic"):
    ledger.glue(f"jepa_{split}", base.final(f"{split}_acc"), print_tol=TOL[split])
ledger.glue("jepa_test_acc", base.final("test_acc"), print_tol=TOL["test_acc"])
ledger.glue("jepa_test_mrr", base.final("test_mrr"), print_tol=TOL["test_mrr"])
ledger.glue(
    "jepa_test_acc_x", base.final("test_acc") / chance_acc, print_tol=TOL_X["acc"]
)
ledger.glue(
    "jepa_test_mrr_x", base.final("test_mrr") / chance_mrr, print_tol=TOL_X["mrr"]
)
ledger.precondition(
    "jepa-atomic",
    "JEPA 1/1 learns the one-direction (atomic) facts: accuracy above 0.3",
    base.final("atomic_acc"),
    above=0.3,
    print_tol=TOL["atomic"],
)
# Reverse accuracy (about 10 hits among 240 tested entities) moves by more than 6
# units of chance between CPU kernel paths, more than its distance to any useful bound:
# it is shown (glued above), and the claim is carried by the MRR, which ranks every
# test entity.
ledger.check(
    "jepa-reverses",
    "JEPA 1/1's held-out reverse MRR is above 3 times chance "
    "(in units of chance), median seed",
    np.median(base.final("test_mrr") / chance_mrr),
    above=3.0,
    print_tol=TOL_MEDIAN_X["jepa"],
    kind="paper",
    source="Figure 3 (left)",
    paper="about 72% accuracy at m = 10 (unverified reading; no MRR)",
    broken_by=("shuffled_labels",),
    requires=("jepa-atomic",),
)

# %% [markdown]
# ## 2. The memory layer fits every training fact
#
# Top-1 memory with frozen keys (the mean of the name-token embeddings) and frozen
# embeddings: each entity gets its own free concept vector.

# %%
memory = jepa.run(ledger.config(jepa.Config(memory=True, **common)))

# %% tags=["hide-input"]
report("JEPA with memory layer", memory)
ledger.glue("mem_test_acc", memory.final("test_acc"), print_tol=TOL["test_acc"])
ledger.glue("mem_test_mrr", memory.final("test_mrr"), print_tol=TOL["test_mrr"])
ledger.glue(
    "mem_test_mrr_x", memory.final("test_mrr") / chance_mrr, print_tol=TOL_X["mrr"]
)
mem_fit = np.minimum(memory.final("train_acc"), memory.final("atomic_acc"))
ledger.check(
    "memory-fits",
    "the memory layer fits its training facts: train and atomic "
    "accuracy above 0.9, every seed",
    mem_fit,
    above=0.9,
    print_tol=0.05,
    kind="ours",
    broken_by=("no_training",),
)
ledger.check(
    "memory-reverses-mrr",
    "the memory layer's held-out reverse MRR is above 1.5 "
    "times chance (in units of chance), median seed",
    np.median(memory.final("test_mrr") / chance_mrr),
    above=1.5,
    print_tol=TOL_MEDIAN_X["memory"],
    kind="paper",
    source="Figure 4 (right)",
    paper="about 80% accuracy with the memory layer (unverified reading; no MRR)",
    broken_by=("shuffled_labels",),
    requires=("memory-fits",),
)

# %% mystnb={"figure": {"caption": "JEPA (#Rec 1 / #Sem 1, d = 64) and JEPA with a top-1 memory layer as recognition module on two-token names (multiplicity 10; 640 entities, 3 relation pairs, 1,000 AdamW steps at lr 1e-3, batch 128, 2 seeds: median and band). Left: accuracy on trained (train, atomic) facts. Right: held-out reverse accuracy, ranked against all 640 entity concepts; dotted: chance 1/240 (a guess among the 240 tested entities). The paper trains 80,000 entities at d = 768 for up to 3M steps.", "name": "fig-jepa-live"}, "tags": ["hide-input"]}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for tag, r in (("JEPA 1/1", base), ("memory", memory)):
    steps = r.history.steps
    c = ax1.plot([], [])[0].get_color()
    plot.seed_band(ax1, steps, r.history["train_acc"], label=f"{tag}: train", color=c)
    plot.seed_band(
        ax1, steps, r.history["atomic_acc"], label=f"{tag}: atomic", ls="--", color=c
    )
    plot.seed_band(ax2, steps, r.history["test_acc"], label=f"{tag}: test", color=c)
ax2.axhline(chance_acc, color="grey", ls=":", lw=1)
ax1.set(xlabel="step", ylabel="accuracy")
ax1.legend(fontsize="small")
ax2.set(xlabel="step", ylabel="held-out reverse accuracy")
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-jepa-live")
plt.show()

# %% [markdown]
# ## 3. Why JEPA 1/1 does not fit: it ignores the relation
#
# Each entity of $E_A$ is the head of one training fact per relation pair, so it has
# `N_REL` answers. A model that has learnt each head's answers but not which relation
# asks for which picks among them at random: its top-1 answer is *another relation's*
# answer `N_REL - 1` times as often as the right one. `jepa.relation_blindness` counts
# both on the training facts. The claims compare the two fractions: a relation-blind
# model has another relation's answer ahead by $(N_{rel}-2)/N_{rel}$, an untrained one
# by about 0, and one that has learnt the relations is behind. The control exchanges the
# two models' concept norms; under it both tests must fail.

# %% tags=["hide-input"]
print(
    "top-1 answer on training facts: correct | the head's answer under another relation"
)
blind = {}
for tag, r in (("JEPA 1/1", base), ("memory", memory)):
    blind[tag] = jepa.relation_blindness(r, "train")
    print(
        f"{tag:9s}: {approx(blind[tag]['correct'], TOL['train'])} | "
        f"{approx(blind[tag]['other_relation'], TOL['train'])}"
    )
for tag, key in (("JEPA 1/1", "jepa"), ("memory", "mem")):
    ledger.glue(f"blind_{key}_correct", blind[tag]["correct"], print_tol=TOL["train"])
    ledger.glue(
        f"blind_{key}_other", blind[tag]["other_relation"], print_tol=TOL["train"]
    )
b = blind["JEPA 1/1"]
ledger.check(
    "jepa-relation-blind",
    "JEPA 1/1 (the paper's default norm) is relation-blind: "
    "another relation's answer is top-1 more often than the right one, by more "
    "than 0.1, every seed",
    b["other_relation"] - b["correct"],
    above=0.1,
    print_tol=0.1,
    kind="paper",
    negative=True,
    source="Figure 3 (left)",
    paper="JEPA 1/1 with the default norm learns the task (about 72% held-out "
    "accuracy, unverified reading)",
    contradicts=True,
    broken_by=("no_training", "swap_norms"),
)
b = blind["memory"]
ledger.check(
    "memory-relation-aware",
    "the memory layer (LayerNorm on both sides) tells the "
    "relations apart: the right answer is top-1 more often than another "
    "relation's, by more than 0.8, every seed",
    b["correct"] - b["other_relation"],
    above=0.8,
    print_tol=0.05,
    kind="ours",
    broken_by=("no_training", "swap_norms"),
)

# %% [markdown]
# ## 4. 20,000 steps on 1,600 + 200 entities (stored runs)
#
# The data of the stored runs of {doc}`surface_names` (1,600 rule-teaching and 200
# tested entities, 3 relation pairs, names with $m=10$), trained for 20,000 steps, 3
# seeds per model, made by `python -m revlib sweep jepa` (the command is in the
# chapter). JEPA 1/1 uses the memory script's LayerNorm on prediction and candidates, at
# learning rate $3\cdot10^{-4}$: with the paper's default (RMS norm of the prediction
# only) it stays relation-blind (§3), and with LayerNorm at $10^{-3}$ it collapses (the
# chapter has the runs). The memory layer is stored at the same learning rate. Stored
# numbers do not move; their tolerance is the file's rounding.

# %%
# Under shuffled_labels each model's stored runs are replaced by its stored science
# control: the same recipe with the atomic answers shuffled (one seed each), so that no
# trained fact is the reverse of a held-out one.
stored = records.control_runs(
    records.load(STORED_DIR, curves=True),
    "shuffle_atomic",
    ledger.config(jepa.Config()).shuffle_atomic,
    by=("memory",),
)

# %% tags=["hide-input"]
TOL_S = 0.001
print(
    f"stored runs: {len(stored)}, git {sorted(set(stored['git'].str[:10]))}, "
    f"{stored['cpu_seconds'].sum() / 3600:.2f} CPU hours "
    f"({stored['cpu_seconds'].min():.0f} to {stored['cpu_seconds'].max():.0f} s each); "
    f"n_a = {sorted(set(stored['n_a']))}, n_b = {sorted(set(stored['n_b']))}, "
    f"steps = {sorted(set(stored['steps']))}"
)
ledger.glue("stored_cpu_h", stored["cpu_seconds"].sum() / 3600, digits=2)
ledger.glue("stored_cpu_s", stored["cpu_seconds"], digits=0)
n_b_stored = int(stored["n_b"].iloc[0])
s_chance_acc, s_chance_mrr = 1 / n_b_stored, probes.chance_mrr(n_b_stored)
ledger.glue("s_chance_acc", s_chance_acc, digits=3)
ledger.glue("s_chance_mrr", s_chance_mrr, digits=4)


def at(g, key):
    """Per seed: the final value of a stored group (step 0 under the no_training
    control)."""
    return np.array([c[AT] for c in g[f"curve.{key}"]])


def model_name(memory, lr):
    return f"{'memory' if memory else 'JEPA 1/1'}, lr {lr:g}"


groups = {
    model_name(m, lr): g.sort_values("seed")
    for (m, lr), g in stored.groupby(["memory", "lr"], sort=False)
}
for name, g in groups.items():
    norm = records.config_of(g.iloc[0]).model_config(2).concept_ln  # "auto" resolved
    print(f"{name} (concept norm {norm}), seeds {list(g.seed)}:")
    for split in ("train", "atomic", "test"):
        print(
            f"  {split}: accuracy {exact(g[split + '_acc'])}, "
            f"MRR {exact(g[split + '_mrr'])}"
        )
    peak = np.stack(g["curve.test_acc"]).max(-1)
    print(f"  best held-out accuracy over the recorded steps: {exact(peak)}")
print(
    f"held-out chance (a guess among the {n_b_stored} tested entities): accuracy "
    f"{s_chance_acc:.4f}, MRR {s_chance_mrr:.4f}"
)
jepa_ln = groups[model_name(False, 3e-4)]
mem_same = groups[model_name(True, 3e-4)]
for key, g in (("jln", jepa_ln), ("mem", mem_same)):
    for m in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
        ledger.glue(f"stored_{key}_{m}", g[m], digits=3)
    ledger.glue(f"stored_{key}_acc_x", g["test_acc"] / s_chance_acc, digits=0)
fit_s = np.concatenate(
    [np.minimum(at(g, "train_acc"), at(g, "atomic_acc")) for g in groups.values()]
)
ledger.check(
    "stored-fit",
    "every stored model fits its training facts: train and atomic "
    "accuracy above 0.9, every seed",
    fit_s,
    above=0.9,
    print_tol=TOL_S,
    kind="ours",
    broken_by=("no_training",),
)
acc_x = np.concatenate([at(g, "test_acc") / s_chance_acc for g in groups.values()])
mrr_x = np.concatenate([at(g, "test_mrr") / s_chance_mrr for g in groups.values()])
ledger.check(
    "stored-reverses",
    "every stored model reverses: held-out accuracy above 10 "
    "times chance (in units of chance), every seed",
    acc_x,
    above=10.0,
    print_tol=TOL_S,
    kind="ours",
    broken_by=("no_training", "shuffled_labels"),
)
ledger.check(
    "stored-reverses-mrr",
    "every stored model's held-out MRR is above 5 times "
    "chance (in units of chance), every seed",
    mrr_x,
    above=5.0,
    print_tol=TOL_S,
    kind="ours",
    broken_by=("no_training", "shuffled_labels"),
)
# The paper's headline numbers, in its units (held-out accuracy as a fraction): the
# verdict shows ours against them (in size only within a factor 2).
for cid, g, where, value in (
    ("stored-jepa-acc", jepa_ln, "Figure 3 (left)", 0.72),
    ("stored-memory-acc", mem_same, "Figure 4 (right)", 0.80),
):
    ledger.check(
        cid,
        f"{model_name(g is mem_same, 3e-4)}: held-out reverse accuracy (a fraction), "
        "every seed above 10 times chance",
        at(g, "test_acc"),
        above=10 * s_chance_acc,
        print_tol=TOL_S,
        kind="paper",
        source=where,
        paper=f"about {value:.0%} held-out accuracy at m = 10 (unverified reading)",
        paper_value=value,
        factor=2,
        broken_by=("no_training", "shuffled_labels"),
    )


def gap(hi, lo, keys=("test_acc", "test_mrr")):
    """Per metric: the lowest seed of ``hi`` minus the highest of ``lo`` (the two
    exchanged under the swap_groups control)."""
    hi, lo = ledger.swap(hi, lo)
    return [at(hi, k).min() - at(lo, k).max() for k in keys]


# The paper's Figure 4 claim, among models that fit: the memory layer generalises better
# than JEPA 1/1, here at the same learning rate, on every seed against every seed, by
# more than twice chance (with the answers shuffled both sit at chance and the memory
# layer still leads by 0.003 in accuracy: a gap above zero alone is not a finding).
print(
    f"held-out accuracy, memory against JEPA 1/1 (lr 3e-4): "
    f"{exact(mem_same['test_acc'])} against {exact(jepa_ln['test_acc'])}"
)
ledger.check(
    "memory-beats-jepa",
    "among fitted models the memory layer's held-out accuracy "
    "and MRR are above JEPA 1/1's by more than twice chance accuracy, every seed "
    "against every seed (lowest minus highest)",
    gap(mem_same, jepa_ln),
    above=2 * s_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 4",
    paper="about 80% against 72% (unverified readings)",
    broken_by=("swap_groups", "shuffled_labels"),
)

# %% mystnb={"figure": {"caption": "JEPA #Rec 1 / #Sem 1 (LayerNorm on prediction and candidates, lr 3e-4) and JEPA with a top-1 memory layer (lr 3e-4) on two-token names (m = 10): 1,600 rule-teaching and 200 tested entities, 3 relation pairs, d = 64, batch 128, 20,000 AdamW steps, 3 seeds each (median and band; stored runs). Left: accuracy on the training facts. Right: held-out reverse accuracy ranked against all 1,800 entities; dotted: chance 1/200. The paper trains 80,000 entities at d = 768 for up to 3M steps.", "name": "fig-jepa-stored"}, "tags": ["hide-input"]}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for name, g in groups.items():
    c = ax1.plot([], [])[0].get_color()
    x = g["curve.steps"].iloc[0]
    plot.seed_band(ax1, x, np.stack(g["curve.train_acc"]).T, label=name, color=c)
    plot.seed_band(ax2, x, np.stack(g["curve.test_acc"]).T, label=name, color=c)
ax2.axhline(s_chance_acc, color="grey", ls=":", lw=1)
ax1.set(xlabel="step", ylabel="train accuracy")
ax2.set(xlabel="step", ylabel="held-out reverse accuracy")
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-jepa-stored")
plt.show()

# %% [markdown]
# ## 5. Multiplicity and depth among models that fit (stored runs)
#
# The recipe of §4 (LayerNorm, learning rate $3\cdot10^{-4}$, 20,000 steps, same data)
# with one change at a time: multiplicity $m=2$ and $m=20$ instead of 10 (entities
# sharing each name token), #Rec 1 / #Sem 4 instead of #Sem 1, and width $d=128$
# instead of 64; 2 seeds each (`data/sweeps/jepa_trends`, the command is in the
# chapter), next to the 3 stored seeds of JEPA 1/1 at $m=10$ from §4. A trend in
# generalisation is read only among models that fit their training facts, at equal
# steps (all 20,000).

# %%
# Under shuffled_labels each trend setting is read from its stored science control: the
# same recipe with the atomic answers shuffled (one seed each), where every model fits
# and nothing is left to reverse, so no trend can be read from it.
trends = records.control_runs(
    records.load(TRENDS_DIR, curves=True),
    "shuffle_atomic",
    ledger.config(jepa.Config()).shuffle_atomic,
    by=("multiplicity", "n_sem", "d_model"),
)

# %% tags=["hide-input"]
print(
    f"stored runs: {len(trends)}, git {sorted(set(trends['git'].str[:10]))}, "
    f"{trends['cpu_seconds'].sum() / 3600:.2f} CPU hours; "
    f"steps {sorted(set(trends['steps']))}"
)
ledger.glue("trends_cpu_h", trends["cpu_seconds"].sum() / 3600, digits=2)
base_shape = (trends["n_sem"] == 1) & (trends["d_model"] == 64)
variants = {
    f"m = {m}": jepa_ln
    if m == 10
    else trends[base_shape & (trends["multiplicity"] == m)]
    for m in (2, 10, 20)
}
variants["#Rec 1 / #Sem 4, m = 10"] = trends[trends["n_sem"] == 4]
variants["d = 128, m = 10"] = trends[trends["d_model"] == 128]
variants = {name: g.sort_values("seed") for name, g in variants.items()}
KEYS = {
    "m = 2": "m2",
    "m = 10": "m10",
    "m = 20": "m20",
    "#Rec 1 / #Sem 4, m = 10": "sem4",
    "d = 128, m = 10": "d128",
}
SHOW = (10000, 12000, 16000)
for name, g in variants.items():
    print(
        f"{name}, seeds {list(g['seed'])}: train {exact(g['train_acc'])}, atomic "
        f"{exact(g['atomic_acc'])}, held-out accuracy {exact(g['test_acc'])}, MRR "
        f"{exact(g['test_mrr'])}"
    )
    steps = list(g["curve.steps"].iloc[0])
    print(
        "  held-out accuracy at steps "
        + ", ".join(
            f"{st}: {exact([c[steps.index(st)] for c in g['curve.test_acc']])}"
            for st in SHOW
        )
    )
    for m in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
        ledger.glue(f"{KEYS[name]}_{m}", g[m], digits=3)
    for st in SHOW:
        ledger.glue(
            f"{KEYS[name]}_acc_at_{st}",
            [c[steps.index(st)] for c in g["curve.test_acc"]],
            digits=3,
        )
print(f"held-out chance: accuracy {s_chance_acc:.4f}, MRR {s_chance_mrr:.4f}")
# The science controls of the comparisons below: each trend setting with the atomic
# answers shuffled (one seed each, beside the runs in the same folder).
every = records.load(TRENDS_DIR)
shuffled = every[every["shuffle_atomic"].fillna(False).astype(bool)]
print(
    f"stored controls, answers shuffled ({len(shuffled)} runs): train accuracy "
    f"{exact(shuffled['train_acc'])}, held-out accuracy {exact(shuffled['test_acc'])}"
)
ledger.glue("trend_controls_train_min", shuffled["train_acc"].min(), digits=3)
ledger.glue("trend_controls_acc_max", shuffled["test_acc"].max(), digits=3)
fit_t = np.concatenate(
    [np.minimum(at(g, "train_acc"), at(g, "atomic_acc")) for g in variants.values()]
)
ledger.glue("trends_fit_min", fit_t, digits=3)
ledger.check(
    "trends-fit",
    "every model of the trend comparisons fits its training facts: "
    "train and atomic accuracy above 0.9, every seed",
    fit_t,
    above=0.9,
    print_tol=TOL_S,
    kind="ours",
    broken_by=("no_training",),
)
# Figure 3 of the paper: higher multiplicity is worse. Here every seed at m = 2 beats
# every seed at m = 10, which beats every seed at m = 20 (accuracy and MRR), by more
# than twice chance accuracy: the comparisons below ask for that gap, because models at
# chance differ by a few thousandths (their shuffled controls).
by_m = [variants[f"m = {m}"] for m in (2, 10, 20)]
ledger.check(
    "multiplicity-worse",
    "higher multiplicity is worse: every seed at m = 2 above "
    "every seed at m = 10, and m = 10 above m = 20, in held-out accuracy and MRR "
    "(lowest minus highest), by more than twice chance accuracy",
    gap(by_m[0], by_m[1]) + gap(by_m[1], by_m[2]),
    above=2 * s_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (right)",
    paper="higher multiplicity is worse (no number)",
    broken_by=("swap_groups", "shuffled_labels"),
)
m20_x = at(by_m[-1], "test_acc") / s_chance_acc
ledger.glue("m20_acc_x", m20_x, digits=0)
ledger.check(
    "m20-reverses",
    "even at m = 20 the fitted model reverses: held-out accuracy "
    "above 5 times chance (in units of chance), every seed",
    m20_x,
    above=5.0,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (right)",
    paper="m = 20 severely hurts; deep models drop to near zero (no number for "
    "#Rec 1 / #Sem 1)",
    broken_by=("no_training", "shuffled_labels"),
)
deep = variants["#Rec 1 / #Sem 4, m = 10"]
wide = variants["d = 128, m = 10"]
print(
    f"depth: #Rec 1 / #Sem 4 {exact(deep['test_acc'])} against #Rec 1 / #Sem 1 "
    f"{exact(jepa_ln['test_acc'])} (held-out accuracy)"
)
print(
    f"width: d = 128 {exact(wide['test_acc'])} against d = 64 "
    f"{exact(jepa_ln['test_acc'])} (held-out accuracy; MRR {exact(wide['test_mrr'])} "
    f"against {exact(jepa_ln['test_mrr'])})"
)
# Width helps a little here (the paper: "marginal"); two seeds against three are barely
# separated, so this is printed, not claimed. Figure 4 of the paper: the memory layer
# (d = 64, same learning rate, §4) generalises far better than the wider model.
ledger.check(
    "memory-beats-wide",
    "the memory layer at d = 64 is above the JEPA 1/1 of width "
    "d = 128, every seed against every seed, in held-out accuracy and MRR, by more "
    "than twice chance accuracy",
    gap(mem_same, wide),
    above=2 * s_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 4",
    paper="memory beats the wide model at similar parameter counts (no number)",
    broken_by=("swap_groups", "shuffled_labels"),
)
# Figure 3 of the paper: deeper is worse. Here #Rec 1 / #Sem 4 is below #Rec 1 / #Sem 1
# on every seed against every seed, both fitted, at equal steps (accuracy and MRR).
ledger.check(
    "deeper-worse",
    "deeper is worse: #Rec 1 / #Sem 4 below #Rec 1 / #Sem 1, every "
    "seed against every seed, in held-out accuracy and MRR, by more than twice chance "
    "accuracy",
    gap(jepa_ln, deep),
    above=2 * s_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (left)",
    paper="about 72% for 1/1, 52% for 1/6, 40% for 6/6 (unverified readings)",
    broken_by=("swap_groups", "shuffled_labels"),
)

# %% mystnb={"figure": {"caption": "Stored runs, JEPA with LayerNorm on prediction and candidates (lr 3e-4), 1,600 + 200 entities, 3 relation pairs, batch 128, 20,000 AdamW steps; every model fits its training facts. Left: held-out reverse accuracy during training for multiplicity m = 2, 10, 20 (#Rec 1 / #Sem 1, d = 64), and for #Rec 1 / #Sem 4 and for width d = 128 at m = 10 (median and band; 3 seeds at m = 10, 2 otherwise). Right: final held-out accuracy against multiplicity (line: median; markers: seeds), and #Rec 1 / #Sem 4 and d = 128 at m = 10. Dotted: chance 1/200.", "name": "fig-jepa-trends"}, "tags": ["hide-input"]}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for i, (name, g) in enumerate(variants.items()):
    plot.seed_band(
        ax1,
        g["curve.steps"].iloc[0],
        np.stack(g["curve.test_acc"]).T,
        label=name,
        color=f"C{i}",
    )
ms = [2, 10, 20]
ax2.plot(
    ms, [np.median(g["test_acc"]) for g in by_m], color="C0", label="#Rec 1 / #Sem 1"
)
for m, g in zip(ms, by_m):
    ax2.plot(
        [m] * len(g), g["test_acc"], ls="none", marker="o", ms=4, color="C0", alpha=0.6
    )
ax2.plot(
    [10] * len(deep),
    deep["test_acc"],
    ls="none",
    marker="s",
    ms=5,
    color="C3",
    label="#Rec 1 / #Sem 4",
)
ax2.plot(
    [10] * len(wide),
    wide["test_acc"],
    ls="none",
    marker="^",
    ms=5,
    color="C4",
    label="d = 128",
)
for ax in (ax1, ax2):
    ax.axhline(s_chance_acc, color="grey", ls=":", lw=1)
ax1.set(xlabel="step", ylabel="held-out reverse accuracy", xticks=range(0, 20001, 5000))
ax2.set(
    xlabel="multiplicity m (entities per name token)",
    ylabel="final held-out accuracy",
    xscale="log",
    xticks=ms,
)
ax2.set_xticklabels([str(m) for m in ms])
ax2.minorticks_off()
ax1.legend(fontsize="small")
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-jepa-trends")
plt.show()

# %% [markdown]
# ## 6. The stored runs are what this code computes (live re-run)
#
# The first `LIVE_STEPS` steps of the stored memory-layer run (lr $3\cdot10^{-4}$) of
# seed `SEED` are trained again: same data and minibatches, so the metrics at step
# `LIVE_STEPS` must agree with the stored curve up to the CPU's kernels (within 0.09).
# If `SEED` is not stored, the stored run of seed 0 is re-run instead: three stored
# seeds do not span what a fresh seed does (one fresh seed reached train accuracy 0.56
# at step 1,000 against 0.42 for seed 0), and the check is of the stored file, not of
# the seed.

# %%
TOL_LIVE = 0.04  # another CPU moved them by 0.03 after 1,000 steps
live = ledger.recheck(
    "live-matches-stored",
    jepa,
    mem_same,
    metrics=("train_acc", "atomic_acc", "test_mrr"),
    steps=LIVE_STEPS,
    seed=SEED,
    below=0.09,
    print_tol=TOL_LIVE,
    # the re-run checks the stored file; the controls that do not break it skip it
    skip_under=("shuffled_labels", "swap_groups", "swap_norms"),
    what="the stored memory run",
)
for name, (got, ref) in live.items():
    ledger.glue(f"live_{name}", got, print_tol=TOL_LIVE)
    ledger.glue(f"live_ref_{name}", ref, digits=3)
if live:
    ledger.glue(
        "live_dev", max(abs(g - r) for g, r in live.values()), print_tol=TOL_LIVE
    )

# %% [markdown]
# ## 7. The sweeps at 640 entities
#
# Each configuration changes one thing of the base model (#Rec 1 / #Sem 1, $m=10$,
# $d=64$, no memory), trained for the sweep's step count with its seeds. The file
# records config, seeds, git hash and run time with each result; we print the final
# values per seed.

# %%
s640 = records.load(SWEEP640_DIR, curves=True)
BASE640 = dict(n_rec=1, n_sem=1, multiplicity=10, d_model=64, memory=False)
SWEEPS640 = {  # one change each from the base model
    "depth": [dict(n_rec=1, n_sem=1), dict(n_rec=1, n_sem=3), dict(n_rec=3, n_sem=3)],
    "multiplicity": [dict(multiplicity=m) for m in (2, 10, 20)],
    "width": [dict(d_model=32), dict(d_model=64), dict(d_model=128)],
    "memory": [dict(memory=False), dict(memory=True)],
}


def runs_of(change):
    """The stored runs (one row per seed) of the base model with ``change``."""
    want = {**BASE640, **change}
    pick = np.all([s640[k] == v for k, v in want.items()], axis=0)
    return s640[pick].sort_values("seed")


rows = []  # one per (sweep, configuration), metrics [seed, evaluation]
for name, changes in SWEEPS640.items():
    for change in changes:
        r = runs_of(change)
        rows.append(
            dict(
                sweep=name,
                variant=change,
                config={**BASE640, **change, "steps": int(r["steps"].iloc[0])},
                seeds=[int(x) for x in r["seed"]],
                steps_recorded=r["curve.steps"].iloc[0],
                seconds=float(r["seconds"].sum()),
                cpu_seconds=float(r["cpu_seconds"].sum()),
                git=sorted(set(r["git"])),
                **{
                    k: np.stack(r[f"curve.{k}"])
                    for k in ("train_acc", "atomic_acc", "test_acc", "test_mrr")
                },
            )
        )

# %% tags=["hide-input"]
sw = {}
for row in rows:
    sw.setdefault(row["sweep"], []).append(row)
first = rows[0]
wall = float(s640["seconds"].sum())
cpu = float(s640["cpu_seconds"].sum())
print(
    f"{len(s640)} stored runs (one per configuration and seed: {wall:.0f} s wall, "
    f"{cpu:.0f} s CPU by their records), {first['config']['steps']} steps, seeds "
    f"{first['seeds']}, code {sorted({g[:7] for row in rows for g in row['git']})}"
)
ledger.glue("sweep640_wall", wall, digits=0)
ledger.glue("sweep640_cpu", cpu, digits=0)
missing = [(row["sweep"], row["variant"]) for row in rows if not len(row["seeds"])]
print("configurations not stored:", missing)


def label(row):
    c = row["config"]
    return {
        "depth": f"#Rec {c['n_rec']} / #Sem {c['n_sem']}",
        "multiplicity": f"m = {c['multiplicity']}",
        "width": f"d = {c['d_model']}",
        "memory": "memory layer" if c["memory"] else "JEPA 1/1",
    }[row["sweep"]]


def final(row, key):
    return np.array(row[key])[:, -1]


print(
    f"{'sweep':13s}{'config':18s}{'train acc':>14s}{'atomic acc':>14s}{'test acc':>14s}"
    f"{'test MRR':>14s}{'peak test acc':>15s}"
)
for name, rs in sw.items():
    for row in rs:
        vals = [
            final(row, k) for k in ("train_acc", "atomic_acc", "test_acc", "test_mrr")
        ]
        vals.append(np.array(row["test_acc"]).max(-1))  # best of the recorded steps
        cells = "".join(
            f"{np.array2string(np.round(v, 3), separator=','):>14s}" for v in vals
        )
        print(f"{name:13s}{label(row):18s}{cells}")


def med(name, key):
    return {label(row): float(np.median(final(row, key))) for row in sw[name]}


for name in sw:
    print(
        f"{name}: median test acc",
        {k: round(v, 3) for k, v in med(name, "test_acc").items()},
        "| median test MRR",
        {k: round(v, 3) for k, v in med(name, "test_mrr").items()},
    )
    for key in ("test_acc", "test_mrr", "train_acc"):
        ledger.glue(f"sweep640_{name}_{key}", list(med(name, key).values()), digits=3)
        for i, v in enumerate(med(name, key).values()):
            ledger.glue(f"sweep640_{name}_{key}_{i}", v, digits=3)
ledger.glue(
    "sweep640_test_acc_max", max(final(r, "test_acc").max() for r in rows), digits=3
)
unfit = [med(name, "train_acc") for name in ("depth", "multiplicity", "width")]
ledger.glue("sweep640_unfit_train", [v for d in unfit for v in d.values()], digits=2)
jepa_row = next(r for r in sw["memory"] if not r["config"]["memory"])
ledger.glue("sweep640_jepa_peak", np.array(jepa_row["test_acc"]).max(-1), digits=3)

# %% [markdown]
# A trend in generalisation means something only among models that fit what they are
# trained on: a model that has not fitted its training facts generalises worse for that
# reason alone. So a paper's direction (deeper is worse, higher multiplicity is worse,
# wider helps a little) is claimed only where every configuration in the comparison fits
# its training facts (median train accuracy above 0.9). At 640 entities and 1,500 steps
# none of these sweeps does: the fit is recorded as a precondition that does not hold
# (not fitted at this budget), the order is printed, and the fitted comparisons are
# those of §5.

# %% tags=["hide-input"]
# the paper's direction along each sweep, in the order of jepa.SWEEP: +1 rising, -1
# falling
DIRECTION = {"depth": -1, "multiplicity": -1, "width": +1}
for name, sign in DIRECTION.items():
    mrr = med(name, "test_mrr")
    values = np.array(list(mrr.values()))
    in_order = bool(np.all(sign * np.diff(values) > 0))
    print(
        f"{name}: median test MRR "
        + ", ".join(f"{k} {v:.3f}" for k, v in mrr.items())
        + f"; in the paper's order: {in_order}"
    )
    ledger.precondition(
        f"sweep640-{name}-fits",
        f"every configuration of the {name} sweep "
        "at 640 entities fits (median train accuracy above 0.9; the lowest)",
        min(med(name, "train_acc").values()),
        above=0.9,
        print_tol=TOL_S,
    )
mem = med("memory", "test_mrr")
print(
    f"memory better than JEPA 1/1 in median test MRR: "
    f"{mem['memory layer'] > mem['JEPA 1/1']}"
)

# %% mystnb={"figure": {"caption": "Held-out reverse accuracy (ranked against all 640 entities) during training for each sweep: depth (#Rec/#Sem), multiplicity m, width d, and the memory-layer recognition module; each line is the median of the seeds with their band; dotted: chance. 640 entities, 3 relation pairs, AdamW lr 1e-3, batch 128. The paper uses 80,000 entities, d = 768 (1280 for the wide model) and up to 3M steps.", "name": "fig-jepa-sweeps"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, 4, figsize=(14, 3.6), sharey=True)
for ax, (name, rs) in zip(axes, sw.items()):
    for row in rs:
        plot.seed_band(
            ax,
            np.array(row["steps_recorded"]),
            np.array(row["test_acc"]).T,
            label=label(row),
        )
    ax.axhline(1 / 240, color="grey", ls=":", lw=1)
    ax.set(title=name, xlabel="step")
    ax.legend(fontsize="small")
axes[0].set_ylabel("held-out reverse accuracy")
plot.savefig(fig, "fig-jepa-sweeps")
plt.show()

# %% [markdown]
# ## 8. The paper's recipe, run long: what closing the gap would take
#
# JEPA 1/1 at $|E_A|=2{,}500$ (the paper's smallest Table-1 size), $m=10$, $d=64$, in the
# paper's recipe (RMS norm of the prediction, in-batch InfoNCE at batch 1024, AdamW lr
# $10^{-4}$ with 2,000 warm-up steps, then constant) for 200,000 steps: once on this
# CPU, checkpointed and resumed across sessions (`data/sweeps/jepa_paper_2500`), and once
# on a GPU, stopped by its budget (`data/gpu_runs/jepa_paper.json`). Held-out
# reverse accuracy and MRR are drawn against steps on a log scale with the paper's
# number. From step 5,000 on we fit
# $\mathrm{acc}(t)=a\,t^{b}$ by least squares in log-log, and extrapolate the fit to the
# paper's 0.72, drawn dashed and labelled as an extrapolation: a measurement of the
# trend, not a prediction of what longer training would give.

# %%
import json

LONG = records.load("../../data/sweeps/jepa_paper_2500", curves=True).iloc[0]
long_steps = int(LONG["steps"])
GPU_LONG = Path("../../data/gpu_runs/jepa_paper.json")
gpu_long = records.load(GPU_LONG, curves=True).iloc[0]
# a run the GPU budget stopped is a partial record: the step it reached is in the file
gpu_stopped = int(json.loads(GPU_LONG.read_text())["stopped_at_step"])
long_runs = {
    f"CPU, {long_steps:,} steps ({LONG['cpu_seconds'] / 3600:.1f} CPU-h)": (
        np.array(LONG["curve.steps"]),
        {k: np.asarray(LONG[f"curve.{k}"]) for k in ("test_acc", "test_mrr")},
    ),
    f"GPU, to step {gpu_stopped:,}": (
        np.array(gpu_long["curve.steps"]),
        {k: gpu_long[f"curve.{k}"] for k in ("test_acc", "test_mrr")},
    ),
}
# Under no_training the runs are read at their start. Under shuffled_labels the CPU run
# is replaced by its stored science control: the same recipe with the atomic answers
# shuffled, so that no trained fact is the reverse of a held-out one, trained for 5,000
# steps (where the default run had already reached its level: 0.061 at step 4,677).
long_cfg = ledger.config(jepa.Config())
start_only = long_cfg.no_training
if long_cfg.shuffle_atomic:
    ctl = records.load("../../data/sweeps/jepa_long_control", curves=True).iloc[0]
    long_runs = {
        "CPU, atomic answers shuffled (control, 5,000 steps)": (
            np.array(ctl["curve.steps"]),
            {k: ctl[f"curve.{k}"] for k in ("test_acc", "test_mrr")},
        )
    }
PAPER_ACC = 0.72


def power_fit(steps, acc, start):
    """Least squares of log acc on log step over ``steps >= start``: ``(b, log a)`` of
    acc(t) = a t^b."""
    late = steps >= start
    return tuple(
        np.polyfit(np.log(steps[late]), np.log(np.maximum(acc[late], 1e-4)), 1)
    )


def log_steps_to(target, b, log_a):
    """ln of the step at which the fit a t^b reaches ``target`` (inf if b <= 0)."""
    return (np.log(target) - log_a) / b if b > 0 else np.inf


fits = {}
for name, (steps, curves) in long_runs.items():
    if start_only:
        curves = {k: np.full_like(v, v[0]) for k, v in curves.items()}
        long_runs[name] = (steps, curves)
    b, log_a = power_fit(steps, curves["test_acc"], 5000)
    need = log_steps_to(PAPER_ACC, b, log_a)
    fits[name] = (b, log_a, need)
    print(
        f"{name}: last held-out accuracy {curves['test_acc'][-1]:.3f} (MRR "
        f"{curves['test_mrr'][-1]:.3f}) at step {steps[-1]:,}; fit from step 5,000: "
        f"exponent b = {b:.3f}; the fit reaches the paper's {PAPER_ACC} at "
        + (
            f"10^{need / np.log(10):.0f} steps"
            if np.isfinite(need)
            else "no step (b <= 0)"
        )
    )
cpu_name = next(iter(long_runs))
cpu_steps, cpu_curves = long_runs[cpu_name]
ledger.check(
    "long-jepa-acc",
    "JEPA 1/1 in the paper's recipe, run long (CPU): held-out reverse accuracy at the "
    "last evaluation above 10 times chance",
    cpu_curves["test_acc"][-1],
    above=10 / int(LONG["n_b"]),  # ten times chance among the tested entities
    print_tol=0.02,
    kind="paper",
    source="Figure 3 (left)",
    paper="about 72% held-out accuracy at m = 10 (unverified reading; |E_A| 50K, "
    "d = 768, up to 3M steps)",
    paper_value=PAPER_ACC,
    factor=2,
    broken_by=("no_training", "shuffled_labels"),
)
b_cpu = fits[cpu_name][0]
ledger.glue("long_step", long_steps, digits=0)
ledger.glue("long_cpu_h", LONG["cpu_seconds"] / 3600, digits=1)
ledger.glue("long_last_eval", cpu_steps[-1], digits=0)
ledger.glue("long_acc", cpu_curves["test_acc"][-1], digits=3)
ledger.glue("long_mrr", cpu_curves["test_mrr"][-1], digits=3)
ledger.glue("long_prev_eval", cpu_steps[-2], digits=0)
ledger.glue("long_prev_acc", cpu_curves["test_acc"][-2], digits=3)
# the band the accuracy stayed in from step 5,000 to step 100,000, and the
# evaluations after it
BAND = (5_000, 100_000)
band = (cpu_steps >= BAND[0]) & (cpu_steps < BAND[1])
band_acc = cpu_curves["test_acc"][band] if band.any() else cpu_curves["test_acc"][-1:]
ledger.glue("long_band", np.array([band_acc.min(), band_acc.max()]), digits=3)
late = cpu_steps >= BAND[1]
late_acc = cpu_curves["test_acc"][late] if late.any() else cpu_curves["test_acc"][-1:]
ledger.glue("long_late", np.array([late_acc.min(), late_acc.max()]), digits=3)
ledger.glue("long_late_n", int(late.sum()), digits=0)
ledger.glue("long_late_first", int(cpu_steps[late][0]) if late.any() else -1, digits=0)
# held-out MRR peaked early, before the band (steps below 5,000): the peak, and where
early = cpu_steps < BAND[0]
k_peak = int(np.argmax(np.where(early, cpu_curves["test_mrr"], -np.inf)))
ledger.glue("long_mrr_early_peak", cpu_curves["test_mrr"][k_peak], digits=3)
ledger.glue("long_mrr_early_peak_step", int(cpu_steps[k_peak]), digits=0)
ledger.glue("long_prev_mrr", cpu_curves["test_mrr"][-2], digits=3)
ledger.glue("long_exponent", b_cpu, digits=3)
ledger.glue("gpu_long_step", gpu_stopped, digits=0)
ledger.glue("gpu_long_acc", np.asarray(gpu_long["curve.test_acc"])[-1], digits=3)
ledger.glue(
    "long_need_log10",
    fits[cpu_name][2] / np.log(10) if np.isfinite(fits[cpu_name][2]) else 99,
    digits=0,
)

# %% mystnb={"figure": {"caption": "JEPA 1/1 in the paper's recipe at |E_A| = 2,500, m = 10, d = 64, batch 1024 (one seed): held-out reverse accuracy (left) and MRR (right) against steps, on the CPU (checkpointed across sessions) and on a GPU (stopped by its budget). Dotted: the paper's about 0.72 (|E_A| = 50K, d = 768, up to 3M steps). Dashed: the least-squares fit acc = a t^b over steps >= 5,000, extrapolated beyond the data (an extrapolation, not a measurement).", "name": "fig-jepa-long"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
for i, (name, (steps, curves)) in enumerate(long_runs.items()):
    for ax, key in zip(axes, ("test_acc", "test_mrr")):
        ax.plot(steps[1:], curves[key][1:], marker=".", color=f"C{i}", label=name)
    b, log_a, _ = fits[name]
    t = np.geomspace(5000, 1e8, 50)
    axes[0].plot(
        t,
        np.exp(log_a) * t**b,
        ls="--",
        color=f"C{i}",
        lw=1,
        label=f"fit t^{b:.3f} (extrapolated)",
    )
for ax, key in zip(axes, ("held-out accuracy", "held-out MRR")):
    ax.set(xscale="log", yscale="log", xlabel="step", ylabel=key)
axes[0].axhline(PAPER_ACC, color="k", ls=":", lw=1, label="the paper (about 0.72)")
axes[0].legend(fontsize="x-small")
plot.savefig(fig, "fig-jepa-long")
plt.show()

# %% [markdown]
# ## 9. The book's recipe at 2,500 entities, run long
#
# The data and model of §8 ($|E_A|=2{,}500$, 240 tested entities, 3 relation pairs,
# $m=10$, $d=64$) in the recipe that fits at 1,800 entities (§4: LayerNorm of both
# concepts, in-batch InfoNCE at batch 128, AdamW lr $3\cdot10^{-4}$, no warm-up)
# (`data/sweeps/jepa_2500`; the commands are in the chapter): JEPA 1/1 for 200,000 steps
# (the limit for this run), and for 50,000 a second seed of it, the memory layer,
# JEPA 1/4 (the depth of §5), JEPA 1/1 at multiplicities $m=2$ and $m=20$, JEPA 1/4 at
# $m=20$, JEPA 1/1 widened to $d=88$, which matches the memory model in trainable
# parameters (the paper's Figure 4 compares the two at 61.1M and 61.4M), and JEPA 3/3;
# two seeds of every model. Beside each model
# sits its science control, the same recipe with the atomic answers shuffled for 20,000
# steps (one seed), read under `shuffled_labels`. The
# comparisons are made at equal steps, every seed against every seed: JEPA 1/1's first
# seed is read at step 50,000 (interpolated in log steps between its evaluations). As in §8 we fit
# $\mathrm{acc}(t)=a\,t^{b}$ over the last decade of each run's steps and extrapolate it
# to the paper's number, drawn as an extrapolation.

# %%
all_big = records.load(BIG_DIR, curves=True)
BIG_BY = ("memory", "n_rec", "n_sem", "multiplicity", "d_model")
big_ctl = all_big[all_big["shuffle_atomic"].eq(True)]  # the stored science controls
big = records.control_runs(
    all_big,
    "shuffle_atomic",
    ledger.config(jepa.Config()).shuffle_atomic,
    by=BIG_BY,
).sort_values("seed")
BIG_NAMES = {  # (memory, n_rec, n_sem, m, d)
    (False, 1, 1, 10, 64): "JEPA 1/1",
    (False, 1, 4, 10, 64): "JEPA 1/4",
    (True, 1, 1, 10, 64): "memory layer",
    (False, 1, 1, 2, 64): "JEPA 1/1, m = 2",
    (False, 1, 1, 20, 64): "JEPA 1/1, m = 20",
    (False, 1, 4, 20, 64): "JEPA 1/4, m = 20",
    (False, 1, 1, 10, 88): "JEPA 1/1, d = 88",
    (False, 3, 3, 10, 64): "JEPA 3/3",
    (True, 1, 4, 10, 64): "memory layer, #Sem 4",
}


def big_key(r):
    return BIG_NAMES[tuple(int(r[k]) for k in BIG_BY)]


big_rows = {name: [] for name in BIG_NAMES.values()}  # each model's runs, by seed
for _, r in big.iterrows():
    big_rows[big_key(r)].append(r)
big_runs = {name: rows[0] for name, rows in big_rows.items()}  # the first seed's
n_b_big = int(big["n_b"].iloc[0])
b_chance_acc = 1 / n_b_big


def big_curve(name, key, i=0):
    """Seed ``i``'s evaluated steps and values (held at step 0 under no_training)."""
    r = big_rows[name][i]
    steps, v = np.asarray(r["curve.steps"]), np.asarray(r[f"curve.{key}"])
    return steps, (np.full_like(v, v[0]) if AT == 0 else v)


def big_at(name, key, step=None, i=0):
    """Seed ``i``'s value at its last evaluation, or at ``step`` (interpolated in log
    steps)."""
    steps, v = big_curve(name, key, i)
    if step is None:
        return float(v[-1])
    return float(np.interp(np.log(step), np.log(np.maximum(steps, 1)), v))


def big_seeds(name, key, step=None):
    """Every seed's value of a model, at its last evaluation or at ``step``."""
    return np.array([big_at(name, key, step, i) for i in range(len(big_rows[name]))])


big_fits = {}
for name, rows in big_rows.items():
    for i, r in enumerate(rows):
        steps, acc = big_curve(name, "test_acc", i)
        b, log_a = power_fit(steps, acc, steps[-1] / 10)  # the last decade
        if i == 0:
            big_fits[name] = (b, log_a)
        print(
            f"{name}, seed {int(r['seed'])} ("
            f"{'atomic answers shuffled, ' if r['shuffle_atomic'] else ''}"
            f"{int(r['steps']):,} steps, {r['cpu_seconds'] / 3600:.2f} CPU-h, git "
            f"{r['git'][:10]}): train {big_at(name, 'train_acc', i=i):.3f}, atomic "
            f"{big_at(name, 'atomic_acc', i=i):.3f}, held-out accuracy "
            f"{big_at(name, 'test_acc', i=i):.3f}, MRR "
            f"{big_at(name, 'test_mrr', i=i):.3f}; best held-out accuracy "
            f"{acc.max():.3f}; acc ~ t^{b:.3f} over the last decade"
        )
print(f"chance: accuracy {b_chance_acc:.4f} (a guess among {n_b_big} tested entities)")
BIG_KEYS = {
    "JEPA 1/1": "jepa",
    "JEPA 1/4": "deep",
    "memory layer": "mem",
    "JEPA 1/1, m = 2": "m2",
    "JEPA 1/1, m = 20": "m20",
    "JEPA 1/4, m = 20": "deep20",
    "JEPA 1/1, d = 88": "wide",
    "JEPA 3/3": "rec3",
    "memory layer, #Sem 4": "mem4",
}
for name, key in BIG_KEYS.items():
    for m in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
        ledger.glue(f"big_{key}_{m}", big_at(name, m), digits=3)  # the first seed's
        ledger.glue(f"big_{key}_{m}_seeds", big_seeds(name, m), digits=3)
        for i in range(len(big_rows[name])):  # each seed's, for the table
            ledger.glue(f"big_{key}_{m}_s{i}", big_at(name, m, i=i), digits=3)
    ledger.glue(f"big_{key}_exponent", big_fits[name][0], digits=3)
    ledger.glue(f"big_{key}_cpu_h", big_runs[name]["cpu_seconds"] / 3600, digits=2)
    for i, r in enumerate(big_rows[name]):
        ledger.glue(f"big_{key}_cpu_h_s{i}", r["cpu_seconds"] / 3600, digits=2)
ledger.glue("b_chance_acc", b_chance_acc, digits=4)
# the controls' fit at their last step (20,000); JEPA 1/4 at m = 20 fits slowest
ctl_fit = big_ctl[["train_acc", "atomic_acc"]].min(axis=1)
deep20_ctl = big_ctl.apply(big_key, axis=1).eq("JEPA 1/4, m = 20")
ledger.glue("big_ctl_fit_min", ctl_fit[~deep20_ctl].min(), digits=3)
ledger.glue("big_ctl_deep20_fit", ctl_fit[deep20_ctl].min(), digits=2)
ledger.glue(  # every seed's lower of train and atomic accuracy at step 20,000
    "big_deep20_fit_20k",
    np.minimum(
        *(big_seeds("JEPA 1/4, m = 20", k, 20_000) for k in ("train_acc", "atomic_acc"))
    ),
    digits=2,
)
ledger.glue("big_ctl_test_acc_max", big_ctl["test_acc"].max(), digits=3)
ledger.glue("big_ctl_cpu_h", big_ctl["cpu_seconds"].sum() / 3600, digits=2)
ledger.glue("big_cpu_h", all_big["cpu_seconds"].sum() / 3600, digits=2)
# the controls stop at step 20,000: JEPA 1/1's own fit at that step, for comparison
ledger.glue(
    "big_jepa_fit_20k",
    min(big_at("JEPA 1/1", k, 20_000) for k in ("train_acc", "atomic_acc")),
    digits=3,
)
# against the paper's recipe at the same size (section 8): how many times its last
# held-out accuracy, and the first evaluation of the book's recipe that passes it
paper_last = float(cpu_curves["test_acc"][-1])
ln_steps, ln_acc = big_curve("JEPA 1/1", "test_acc")
passed = ln_steps[ln_acc > paper_last]
ledger.glue(
    "big_jepa_x_paper_recipe",
    big_at("JEPA 1/1", "test_acc") / paper_last if paper_last > 0 else 0.0,
    digits=1,
)
ledger.glue("big_jepa_pass_step", int(passed[0]) if len(passed) else -1, digits=0)
MATCH = 50_000  # the memory layer's and JEPA 1/4's steps
# how far two seeds of one model lie apart in held-out accuracy at the step compared
# (JEPA 1/1 at step 50,000, where its second seed ends)
spreads = {
    name: np.ptp(big_seeds(name, "test_acc", MATCH if name == "JEPA 1/1" else None))
    for name, rows in big_rows.items()
    if len(rows) > 1
}
print(
    "seed-to-seed spread of held-out accuracy: "
    + ", ".join(f"{n} {v:.3f}" for n, v in spreads.items())
)
if spreads:  # the controls (read under shuffled_labels) have one seed each
    ledger.glue("big_seed_spreads", np.array(list(spreads.values())), digits=3)
ledger.glue("big_n_two_seeds", len(spreads), digits=0)
# JEPA 1/1's seeds at step 50,000 (seed 0 runs 200,000 steps, seed 1 50,000)
for m in ("test_acc", "test_mrr"):
    v = big_seeds("JEPA 1/1", m, MATCH)
    ledger.glue(f"big_jepa_{m}_50k_seeds", v, digits=3)
    ledger.glue(f"big_jepa_{m}_50k_seed_gap", v.max() - v.min(), digits=3)
# the wider model is matched to the memory layer in trainable parameters
big_cfg = dict(
    n_a=int(big["n_a"].iloc[0]), n_b=n_b_big, n_rel=int(big["n_rel"].iloc[0])
)
big_params = {
    key: jepa.trainable_parameters(
        jepa.Config(**big_cfg, multiplicity=10, concept_ln="layernorm", **kw)
    )
    for key, kw in (
        ("jepa", {}),
        ("wide", {"d_model": int(big_runs["JEPA 1/1, d = 88"]["d_model"])}),
        ("mem", {"memory": True}),
    )
}
print(
    "trainable parameters: "
    + ", ".join(f"{k} {v:,}" for k, v in big_params.items())
    + f"; the wide model has {big_params['wide'] / big_params['mem']:.2f} times the "
    "memory layer's"
)
for key, v in big_params.items():
    ledger.glue(f"big_params_{key}", v, digits=0)
ledger.glue("big_params_wide_x_mem", big_params["wide"] / big_params["mem"], digits=2)
ledger.glue(
    "big_deep20_x_chance",
    big_seeds("JEPA 1/4, m = 20", "test_acc") / b_chance_acc,
    digits=1,
)
M20 = ("JEPA 1/1, m = 20", "JEPA 1/4, m = 20")


def big_fits_of(names):
    """The lower of train and atomic accuracy at the last evaluation, every seed."""
    return [
        min(big_at(n, "train_acc", i=i), big_at(n, "atomic_acc", i=i))
        for n in names
        for i in range(len(big_rows[n]))
    ]


ledger.precondition(
    "big-fit",
    "every model at |E_A| = 2,500 but those at m = 20 fits its training and atomic "
    "facts at its last evaluation (lowest, every seed)",
    big_fits_of([n for n in big_rows if n not in M20]),
    above=0.9,
    print_tol=TOL_S,
)
# at m = 20 a seed may lose its fit late in the run (JEPA 1/1's seed 1): the two
# comparisons that read m = 20 at step 50,000 need it
ledger.precondition(
    "big-fit-m20",
    "both models at m = 20 (JEPA 1/1 and JEPA 1/4) fit their training and atomic facts "
    "at their last evaluation (lowest, every seed)",
    big_fits_of(M20),
    above=0.9,
    print_tol=TOL_S,
)
for i in range(len(big_rows["JEPA 1/1, m = 20"])):  # each seed's best fit, and where
    st, tr = big_curve("JEPA 1/1, m = 20", "train_acc", i)
    fit = np.minimum(tr, big_curve("JEPA 1/1, m = 20", "atomic_acc", i)[1])
    k = int(np.argmax(fit))
    print(
        f"JEPA 1/1, m = 20, seed {i}: best fit {fit[k]:.3f} at step {int(st[k]):,}, "
        f"{fit[-1]:.3f} at its last evaluation"
    )
    ledger.glue(f"big_m20_best_fit_s{i}", fit[k], digits=3)
    ledger.glue(f"big_m20_best_fit_step_s{i}", int(st[k]), digits=0)
    ledger.glue(f"big_m20_last_fit_s{i}", fit[-1], digits=3)
for cid, name, where, value, seeds in (
    ("big-jepa-acc", "JEPA 1/1", "Figure 3 (left)", 0.72, "the first seed"),
    ("big-memory-acc", "memory layer", "Figure 4 (right)", 0.80, "every seed"),
):
    ledger.check(
        cid,
        f"{name} at |E_A| = 2,500 in the book's recipe, "
        f"{int(big_runs[name]['steps']):,} steps: held-out reverse accuracy (a "
        f"fraction) above 10 times chance, {seeds}",
        big_at(name, "test_acc")
        if cid == "big-jepa-acc"
        else big_seeds(name, "test_acc"),
        above=10 * b_chance_acc,
        print_tol=TOL_S,
        kind="paper",
        source=where,
        paper=f"about {value:.0%} held-out accuracy at m = 10 (unverified reading; "
        "|E_A| 50K, d = 768, up to 3M steps)",
        paper_value=value,
        factor=2,
        broken_by=("no_training", "shuffled_labels"),
    )


def big_gap(hi, lo):
    """Held-out accuracy and MRR of ``hi`` minus ``lo`` at step 50,000, every seed
    against every seed (the two exchanged under swap_groups)."""
    hi, lo = ledger.swap(hi, lo)
    return [
        big_at(hi, k, MATCH, i) - big_at(lo, k, MATCH, j)
        for i in range(len(big_rows[hi]))
        for j in range(len(big_rows[lo]))
        for k in ("test_acc", "test_mrr")
    ]


# the comparisons at step 50,000, each a gap above twice chance accuracy (big_gap
# exchanges its groups under swap_groups)
AT_50K = "at |E_A| = 2,500 and step 50,000"
for cid, sentence, gaps, source, paper, needs in (
    (
        "big-memory-beats-jepa",
        f"{AT_50K} the memory layer's held-out accuracy and MRR are above JEPA "
        "1/1's by more than twice chance accuracy",
        big_gap("memory layer", "JEPA 1/1"),
        "Figure 4",
        "about 80% against 72% (unverified readings)",
        (),
    ),
    (
        "big-deeper-worse",
        f"{AT_50K} JEPA 1/4 is below JEPA 1/1 in held-out accuracy and MRR by more "
        "than twice chance accuracy",
        big_gap("JEPA 1/1", "JEPA 1/4"),
        "Figure 3 (left)",
        "about 72% for 1/1, 52% for 1/6, 40% for 6/6 (unverified readings)",
        (),
    ),
    (
        "big-multiplicity-worse",
        f"{AT_50K} higher multiplicity is worse: m = 2 above m = 10, and m = 10 above "
        "m = 20, in held-out accuracy and MRR, by more than twice chance accuracy",
        big_gap("JEPA 1/1, m = 2", "JEPA 1/1")
        + big_gap("JEPA 1/1", "JEPA 1/1, m = 20"),
        "Figure 3 (right)",
        "higher multiplicity is worse (no number)",
        ("big-fit-m20",),
    ),
    (
        "big-memory-beats-wide",
        f"{AT_50K} the memory layer's held-out accuracy and MRR are above those of "
        "JEPA 1/1 widened to d = 88 (matched in trainable parameters) by more than "
        "twice chance accuracy, every seed against every seed",
        big_gap("memory layer", "JEPA 1/1, d = 88"),
        "Figure 4",
        "the memory layer about 80%; widening 768 -> 1280 helps only incrementally, "
        "at nearly the memory layer's parameters (61.1M against 61.4M; unverified "
        "readings)",
        (),
    ),
    (
        "big-deep-m20-worse",
        "at |E_A| = 2,500, m = 20 and step 50,000 JEPA 1/4 is below JEPA 1/1 in "
        "held-out accuracy and MRR by more than twice chance accuracy",
        big_gap("JEPA 1/1, m = 20", "JEPA 1/4, m = 20"),
        "Figure 3 (right)",
        "at m = 20 deep models degrade to near zero (no number)",
        ("big-fit-m20",),
    ),
):
    ledger.check(
        cid,
        sentence,
        gaps,
        above=2 * b_chance_acc,
        print_tol=TOL_S,
        kind="paper",
        source=source,
        paper=paper,
        broken_by=("swap_groups", "shuffled_labels"),
        requires=needs,
    )
# deeper recognition: the paper has 6/6 below 1/1; here both seeds of 3/3 end above both
# seeds of 1/1
ledger.check(
    "big-deep-rec-not-worse",
    f"{AT_50K} JEPA 3/3 (three recognition and three semantic blocks) is above JEPA "
    "1/1 in held-out accuracy and MRR by more than twice chance accuracy",
    big_gap("JEPA 3/3", "JEPA 1/1"),
    above=2 * b_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (left)",
    paper="deeper models generalize worse: about 72% for 1/1 and 40% for 6/6 "
    "(unverified readings)",
    contradicts=True,
    broken_by=("swap_groups", "shuffled_labels"),
)
for m in ("test_acc", "test_mrr"):  # every 3/3 seed against every 1/1 seed
    ledger.glue(
        f"big_rec3_minus_jepa_{m}_50k",
        big_seeds("JEPA 3/3", m, MATCH)[:, None] - big_seeds("JEPA 1/1", m, MATCH),
        digits=3,
    )
# the memory layer with #Sem 4 runs 20,000 steps: both depths compared there. The paper
# sees a mild decline; here every #Sem 4 seed lies inside the #Sem 1 seeds' range (above
# their lowest and below their highest, by more than twice chance), so the decline, if
# there is one, is below the spread over seeds
SHORT = 20_000
mem4_in = []
for k in ("test_acc", "test_mrr"):
    hi, lo = ledger.swap("memory layer", "memory layer, #Sem 4")
    one, four = big_seeds(hi, k, SHORT), big_seeds(lo, k, SHORT)
    mem4_in += [*(four - one.min()), *(one.max() - four)]
    for name, v in (("mem", one), ("mem4", four)):  # each seed's
        for i, x in enumerate(v):
            ledger.glue(f"big_{name}_{k}_20k_{i}", x, digits=3)
    ledger.glue(f"big_mem4_minus_mem_{k}_20k_mean", four.mean() - one.mean(), digits=3)
ledger.check(
    "big-memory-sem4-within-seeds",
    "at |E_A| = 2,500 and step 20,000 every seed of the memory layer with #Sem 4 lies "
    "inside the range of the #Sem 1 seeds (above their lowest and below their highest) "
    "by more than twice chance accuracy, in held-out accuracy and MRR",
    mem4_in,
    above=2 * b_chance_acc,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 4 (right)",
    paper="with the memory layer, generalization still mildly declines with more "
    "semantic layers (no number)",
    contradicts=True,
    broken_by=("swap_groups", "shuffled_labels"),
)
print(
    f"width at step {MATCH:,}: d = 88 "
    f"{big_at('JEPA 1/1, d = 88', 'test_acc', MATCH):.3f} against d = 64 "
    f"{big_at('JEPA 1/1', 'test_acc', MATCH):.3f} (held-out accuracy)"
)
wide_train = big_curve("JEPA 1/1, d = 88", "train_acc")[1]
after = np.arange(len(wide_train)) >= int(np.argmax(wide_train > 0.9))
ledger.glue(
    "big_wide_train_dip",
    wide_train[after].min() if (wide_train > 0.9).any() else 0.0,
    digits=2,
)
ledger.glue(
    "big_wide_best_test_acc",
    big_curve("JEPA 1/1, d = 88", "test_acc")[1].max(),
    digits=3,
)
ledger.glue(  # every wide seed against every JEPA 1/1 seed
    "big_wide_minus_jepa_50k",
    big_seeds("JEPA 1/1, d = 88", "test_acc", MATCH)[:, None]
    - big_seeds("JEPA 1/1", "test_acc", MATCH),
    digits=3,
)
# what closing the gap would take: each fit extrapolated to the paper's number
need = {}
for name, paper_acc in (("JEPA 1/1", 0.72), ("memory layer", 0.80)):
    need[name] = log_steps_to(paper_acc, *big_fits[name]) / np.log(10)
    print(
        f"{name}: the fit reaches the paper's {paper_acc} at "
        + (f"10^{need[name]:.1f} steps" if np.isfinite(need[name]) else "no step")
    )
    ledger.glue(
        f"big_{BIG_KEYS[name]}_need_log10",
        need[name] if np.isfinite(need[name]) else 99,
        digits=1,
    )

# %% mystnb={"figure": {"caption": "The book's recipe (LayerNorm of both concepts, batch 128, AdamW lr 3e-4) at |E_A| = 2,500, m = 10, d = 64, two seeds of every model (JEPA 1/1's seed 1 to 50,000 steps): held-out reverse accuracy (left) and MRR (right) against steps, for JEPA 1/1 (200,000 steps), the memory layer, JEPA 1/4, JEPA 1/1 at m = 2 and m = 20, JEPA 1/4 at m = 20, JEPA 1/1 widened to d = 88 and JEPA 3/3 (50,000), and the memory layer with #Sem 4 (20,000, two seeds), each with its science control (dash-dotted, the atomic answers shuffled, 20,000 steps), and JEPA 1/1 in the paper's recipe from section 8 (grey); thin lines: second seeds. Dotted: the paper's about 0.72 (JEPA 1/1) and 0.80 (memory layer), at |E_A| = 50K, d = 768, up to 3M steps; grey dotted: chance. Dashed: the least-squares fit acc = a t^b over the last decade of steps of JEPA 1/1 and the memory layer, extrapolated beyond the data up to the paper's number (an extrapolation, not a measurement).", "name": "fig-jepa-2500"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
MARKS = {"JEPA 1/1, m = 2": "s", "JEPA 1/1, m = 20": "^", "JEPA 1/4, m = 20": "v"}
MARKS.update({"JEPA 1/1, d = 88": "D", "JEPA 3/3": "X", "memory layer, #Sem 4": "P"})
for i, name in enumerate(BIG_NAMES.values()):
    col = f"C{i + (i >= 7)}"  # C7 is grey, the paper-recipe run's
    for ax, key in zip(axes, ("test_acc", "test_mrr")):
        for j in range(len(big_rows[name])):  # a second seed: thin, no marker
            steps, v = big_curve(name, key, j)
            keep = steps >= 100
            ax.plot(
                steps[keep],
                v[keep],
                marker=MARKS.get(name, "o") if j == 0 else None,
                ms=3,
                lw=1.5 if j == 0 else 0.8,
                color=col,
                label=name if j == 0 else None,
            )
    for _, r in big_ctl.iterrows():
        if big_key(r) == name:
            st = np.asarray(r["curve.steps"])
            for ax, key in zip(axes, ("test_acc", "test_mrr")):
                v = np.asarray(r[f"curve.{key}"])
                ax.plot(st[st >= 100], v[st >= 100], lw=0.8, ls="-.", color=col)
    if name in need:  # the fit, drawn up to where it reaches the paper's number
        b, log_a = big_fits[name]
        end = min(10 ** need[name] * 1.1, 1e7) if np.isfinite(need[name]) else 1e7
        t = np.geomspace(big_curve(name, "test_acc")[0][-1] / 10, end, 40)
        axes[0].plot(t, np.exp(log_a) * t**b, ls="--", lw=1, color=col)
keep = cpu_steps >= 100
for ax, key in zip(axes, ("test_acc", "test_mrr")):
    ax.plot(
        cpu_steps[keep],
        cpu_curves[key][keep],
        color="grey",
        lw=1,
        label="JEPA 1/1, the paper's recipe (section 8)",
    )
axes[0].axhline(b_chance_acc, color="grey", ls=":", lw=1)
axes[1].axhline(probes.chance_mrr(n_b_big), color="grey", ls=":", lw=1)
axes[0].axhline(0.72, color="C0", ls=":", lw=1.2, label="paper, JEPA 1/1 (about 0.72)")
axes[0].axhline(0.80, color="C2", ls=":", lw=1.2, label="paper, memory (about 0.80)")
axes[0].plot([], [], ls="--", color="k", lw=1, label="fit a t^b (extrapolated)")
axes[0].plot([], [], ls="-.", color="k", lw=0.8, label="science control")
axes[0].plot([], [], color="k", lw=0.8, label="second seed")
for ax, lab in zip(axes, ("held-out accuracy", "held-out MRR")):
    ax.set(xscale="log", xlabel="step", ylabel=lab, ylim=(0, 1))
fig.legend(  # below the panels: nine models leave no free corner
    *axes[0].get_legend_handles_labels(),
    fontsize="x-small",
    loc="upper center",
    bbox_to_anchor=(0.5, 0.0),
    ncol=5,
)
plot.savefig(fig, "fig-jepa-2500")
plt.show()

# %% [markdown]
# ### With entities: 1,600 against 2,500
#
# How does the curve move with the number of entities? The same recipe (LayerNorm of
# both concepts, batch 128, AdamW lr $3\cdot10^{-4}$, $m=10$, $d=64$) was run at
# 1,600 + 200 entities (§4, three seeds, 20,000 steps) and at 2,500 + 240 (this
# section, two seeds). At equal steps, every seed against every seed, we read the
# exponent $k$ of $\mathrm{acc}\propto|E_A|^{k}$ that the two sizes imply,
# $k=\ln(\mathrm{acc}_{2500}/\mathrm{acc}_{1600})/\ln(2500/1600)$. The two sizes are
# 1.56 times apart, so $k$ is only as good as the seed spread allows; it is printed,
# not claimed, and not extrapolated to the paper's 50K entities unless it is
# determined.

# %% tags=["hide-input"]
ENT_STEPS = (5_000, 10_000, 20_000)  # the 1,600-entity runs end at 20,000
ENT_MODELS = {"JEPA 1/1": False, "memory layer": True}


def small_at(memory, step):
    """Every seed's held-out accuracy of a §4 run at ``step`` (step 0 under
    no_training), interpolated in log steps."""
    out = []
    for _, r in stored[stored["memory"].eq(memory)].iterrows():
        st, v = np.asarray(r["curve.steps"]), np.asarray(r["curve.test_acc"])
        out.append(
            v[0] if AT == 0 else np.interp(np.log(step), np.log(np.maximum(st, 1)), v)
        )
    return np.array(out)


n_a_small, n_a_big = int(stored["n_a"].iloc[0]), int(big["n_a"].iloc[0])
ent_k = {}
for name, memory in ENT_MODELS.items():
    for step in ENT_STEPS:
        lo, hi = small_at(memory, step), big_seeds(name, "test_acc", step)
        ks = np.array(
            [np.log(y / x) for x in lo for y in hi if x > 0 and y > 0]
        ) / np.log(n_a_big / n_a_small)
        ent_k[name, step] = ks
        print(
            f"{name}, step {step:,}: held-out accuracy at {n_a_small:,} entities "
            f"{np.round(lo, 3).tolist()}, at {n_a_big:,} {np.round(hi, 3).tolist()}; "
            + (
                f"k from {ks.min():.2f} to {ks.max():.2f} over the seed pairs"
                if len(ks)
                else "k undefined (an accuracy of 0)"
            )
        )
    key = BIG_KEYS[name]
    for step in ENT_STEPS:  # each step's range of k over the seed pairs
        ks = ent_k[name, step]
        ledger.glue(
            f"ent_k_{key}_{step // 1000}k",
            np.array([ks.min(), ks.max()]) if len(ks) else np.zeros(2),
            digits=2,
        )
ledger.glue("ent_ratio", n_a_big / n_a_small, digits=2)

# %% mystnb={"figure": {"caption": "The book's recipe at two sizes: held-out reverse accuracy against steps for JEPA 1/1 (left) and the memory layer (right), at 1,600 + 200 entities (section 4's stored runs, three seeds, 20,000 steps; thin) and 2,500 + 240 entities (this section, two seeds; thick), m = 10, d = 64, batch 128, AdamW lr 3e-4. Dotted: the steps compared (5,000, 10,000, 20,000). The larger size is above or level with the smaller at equal steps up to step 10,000, every seed against every seed, and JEPA 1/1's seeds overlap at 20,000: two sizes 1.56 times apart give the direction early on, not by how much accuracy grows with entities.", "name": "fig-jepa-entities"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
for ax, (name, memory) in zip(axes, ENT_MODELS.items()):
    for j, (_, r) in enumerate(stored[stored["memory"].eq(memory)].iterrows()):
        st, v = np.asarray(r["curve.steps"]), np.asarray(r["curve.test_acc"])
        v = np.full_like(v, v[0]) if AT == 0 else v
        ax.plot(
            st[st >= 100],
            v[st >= 100],
            color="C1",
            lw=0.9,
            label=f"{n_a_small:,} entities" if j == 0 else None,
        )
    for i in range(len(big_rows[name])):
        st, v = big_curve(name, "test_acc", i)
        keep = (st >= 100) & (st <= 50_000)
        ax.plot(
            st[keep],
            v[keep],
            color="C0",
            lw=2,
            label=f"{n_a_big:,} entities" if i == 0 else None,
        )
    for step in ENT_STEPS:
        ax.axvline(step, color="grey", lw=0.5, ls=":")
    ax.set(title=name, xscale="log", xlabel="step")
    ax.legend(fontsize="small")
axes[0].set_ylabel("held-out reverse accuracy")
plot.savefig(fig, "fig-jepa-entities")
plt.show()

# %% tags=["hide-input"]
ledger.summary()
