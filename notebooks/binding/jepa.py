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
# -m revlib.experiments.jepa --sweep data/binding_jepa_sweep.json`).

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
SWEEP_FILE = "../../data/binding_jepa_sweep.json"
STORED_DIR = "../../data/sweeps/jepa"
TRENDS_DIR = "../../data/sweeps/jepa_trends"
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
stored = records.load(STORED_DIR, curves=True)

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
    broken_by=("no_training",),
)
ledger.check(
    "stored-reverses-mrr",
    "every stored model's held-out MRR is above 5 times "
    "chance (in units of chance), every seed",
    mrr_x,
    above=5.0,
    print_tol=TOL_S,
    kind="ours",
    broken_by=("no_training",),
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
        broken_by=("no_training",),
    )


def gap(hi, lo, keys=("test_acc", "test_mrr")):
    """Per metric: the lowest seed of ``hi`` minus the highest of ``lo`` (the two
    exchanged under the swap_groups control)."""
    hi, lo = ledger.swap(hi, lo)
    return [at(hi, k).min() - at(lo, k).max() for k in keys]


# The paper's Figure 4 claim, among models that fit: the memory layer generalises better
# than JEPA 1/1, here at the same learning rate, on every seed against every seed.
print(
    f"held-out accuracy, memory against JEPA 1/1 (lr 3e-4): "
    f"{exact(mem_same['test_acc'])} against {exact(jepa_ln['test_acc'])}"
)
ledger.check(
    "memory-beats-jepa",
    "among fitted models the memory layer's held-out accuracy "
    "and MRR are above JEPA 1/1's, every seed against every seed (lowest minus "
    "highest)",
    gap(mem_same, jepa_ln),
    above=0.0,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 4",
    paper="about 80% against 72% (unverified readings)",
    broken_by=("swap_groups",),
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
trends = records.load(TRENDS_DIR, curves=True)

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
# every seed at m = 10, which beats every seed at m = 20 (accuracy and MRR).
by_m = [variants[f"m = {m}"] for m in (2, 10, 20)]
ledger.check(
    "multiplicity-worse",
    "higher multiplicity is worse: every seed at m = 2 above "
    "every seed at m = 10, and m = 10 above m = 20, in held-out accuracy and MRR "
    "(lowest minus highest)",
    gap(by_m[0], by_m[1]) + gap(by_m[1], by_m[2]),
    above=0.0,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (right)",
    paper="higher multiplicity is worse (no number)",
    broken_by=("swap_groups",),
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
    broken_by=("no_training",),
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
    "d = 128, every seed against every seed, in held-out accuracy and MRR",
    gap(mem_same, wide),
    above=0.0,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 4",
    paper="memory beats the wide model at similar parameter counts (no number)",
    broken_by=("swap_groups",),
)
# Figure 3 of the paper: deeper is worse. Here #Rec 1 / #Sem 4 is below #Rec 1 / #Sem 1
# on every seed against every seed, both fitted, at equal steps (accuracy and MRR).
ledger.check(
    "deeper-worse",
    "deeper is worse: #Rec 1 / #Sem 4 below #Rec 1 / #Sem 1, every "
    "seed against every seed, in held-out accuracy and MRR",
    gap(jepa_ln, deep),
    above=0.0,
    print_tol=TOL_S,
    kind="paper",
    source="Figure 3 (left)",
    paper="about 72% for 1/1, 52% for 1/6, 40% for 6/6 (unverified readings)",
    broken_by=("swap_groups",),
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
live_seed = SEED if SEED in set(mem_same["seed"]) else int(mem_same["seed"].min())
# the re-run checks the stored file; a control that does not name its claim skips it
RERUN = not ledger.skips(("shuffled_labels", "swap_groups", "swap_norms"))
if RERUN:
    live = jepa.run(
        ledger.config(
            records.config_of(
                mem_same.iloc[0],
                eval_points=2,
                seed=live_seed,
                n_seeds=1,
                steps=LIVE_STEPS,
            )
        )
    )

# %% tags=["hide-input"]
if not RERUN:
    print(f"live re-run skipped under control {CONTROL} (its claim names no_training)")
else:
    dev = []
    for name, got, ref, allowed in records.live_against_stored(
        mem_same,
        live,
        ("train_acc", "atomic_acc", "test_mrr"),
        LIVE_STEPS,
        live_seed,
        0.0,
    ):
        print(
            f"step {LIVE_STEPS}, {name}: live {approx(got, TOL_LIVE)}, stored {ref:.3f}"
        )
        ledger.glue(f"live_{name}", got, print_tol=TOL_LIVE)
        ledger.glue(f"live_ref_{name}", ref, digits=3)
        dev.append(abs(got - ref))
    ledger.glue("live_dev", max(dev), print_tol=TOL_LIVE)
    ledger.check(
        "live-matches-stored",
        f"re-trained live, the stored memory run of seed "
        f"{live_seed} agrees with its stored curve at step {LIVE_STEPS} within 0.09 "
        "(largest difference of train accuracy, atomic accuracy and held-out MRR)",
        max(dev),
        below=0.09,
        print_tol=TOL_LIVE,
        kind="check",
        broken_by=("no_training",),
    )

# %% [markdown]
# ## 7. The sweeps at 640 entities
#
# Each configuration changes one thing of the base model (#Rec 1 / #Sem 1, $m=10$,
# $d=64$, no memory), trained for the sweep's step count with its seeds. The file
# records config, seeds, git hash and run time with each result; we print the final
# values per seed.

# %%
rows = jepa.load_sweep(SWEEP_FILE)

# %% tags=["hide-input"]
sw = {}
for row in rows:
    sw.setdefault(row["sweep"], []).append(row)
first = rows[0]
distinct = {
    json_key: row for row in rows for json_key in [repr(sorted(row["config"].items()))]
}
wall = sum(r["run_time_s"] for r in distinct.values())
cpu = sum(r["cpu_time_s"] for r in distinct.values())
print(
    f"{len(rows)} rows ({len(distinct)} distinct runs: {wall:.0f} s wall, "
    f"{cpu:.0f} s CPU "
    f"by their records), {first['config']['steps']} steps, seeds {first['seeds']}, "
    f"code {sorted({row['git'][:7] for row in rows})}"
)
ledger.glue("sweep640_wall", wall, digits=0)
ledger.glue("sweep640_cpu", cpu, digits=0)
missing = [
    (name, v)
    for name, vs in jepa.SWEEP.items()
    for v in vs
    if not any(row["sweep"] == name and row["variant"] == v for row in rows)
]
print("configurations not in the file:", missing)


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

# %% tags=["hide-input"]
ledger.summary()
