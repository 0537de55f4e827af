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
# # Notebook: parametric forward-chaining for arithmetic
#
# The executable side of {doc}`../../book/binding/arithmetic`. Variables are bound to values by
# stored facts; chains of sums with small-valued core entities define new variables whose
# values are never trained. About half the chain steps are stored reversed, so that the unknown
# variable is an addend. We train the standard transformer of
# {doc}`../../book/binding/surface_names` and the JEPA of {doc}`../../book/binding/jepa` on the
# facts only, then ask each for the value of every chain variable {cite}`wang2025binding`.
# Next to them, the model the paper uses for this section: JEPA with the top-1 memory layer as
# its recognition module. Then we load stored runs with up to 4 times the core entities and 5
# times the steps (`data/sweeps/arithmetic`, made by `python -m revlib sweep`), then stored
# runs on the paper's own problem shape, trees with distractors
# (`data/sweeps/arithmetic_trees`), and re-run the first steps of one stored run live.

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
MODULUS = 23  # values <0>..<P-1>, addition mod P (paper: 10,007)
PER_VALUE = 4  # core entities per value (paper: 10)
N_CHAINS = 60  # problems, each a chain (paper: 20 trees with branching 10-40)
CHAIN_LEN = 3  # sums from a known value to the deepest variable (paper: 3 levels)
STEPS = 800  # AdamW steps (paper: up to 3,000,000)
LIVE_STEPS = 800  # steps of the live re-run of a stored 4,000-step run
STORED_DIR = "../../data/sweeps/arithmetic"
TREE_DIR = "../../data/sweeps/arithmetic_trees"  # the paper's problem trees, stored
TREE20_DIR = "../../data/sweeps/arithmetic_trees_b20"  # the same at b = 20
# JEPA + memory at b = 20, wider or at another learning rate
TREE20_MORE_DIR = "../../data/sweeps/arithmetic_trees_b20_memory"
CONTROL = "none"  # a control run, one of the ledger's controls (scripts/check-claims)

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import claims, plot, records
from revlib.data.arithmetic import arithmetic_task
from revlib.experiments import arithmetic
from revlib.report import approx, exact

ledger = claims.Ledger.of(
    arithmetic,
    CONTROL,
    scale=f"P = {MODULUS}, {PER_VALUE} core entities per value, {N_CHAINS} chains "
    f"of {CHAIN_LEN} sums, {STEPS} steps; stored: 4-16 per value, 4,000 steps; "
    "d = 64",
    paper_scale="P = 10,007, 10 per value, trees with branching 10-40, up to 3M steps",
    size_knobs={"PER_VALUE": PER_VALUE, "N_CHAINS": N_CHAINS, "STEPS": STEPS},
)

plot.set_theme()
chance = 1 / MODULUS
common = dict(
    modulus=MODULUS,
    per_value=PER_VALUE,
    n_chains=N_CHAINS,
    chain_len=CHAIN_LEN,
    steps=STEPS,
    seed=SEED,
    n_seeds=2,
)
runs = {
    name: arithmetic.run(ledger.config(arithmetic.Config(model=model, lr=lr, **common)))
    for name, model, lr in (
        ("standard", "standard", 3e-3),
        ("JEPA", "jepa", 1e-3),
        ("JEPA + memory", "jepa_memory", 1e-3),
    )
}
task = runs["standard"].task

# %% tags=["hide-input"]
print(
    f"trained facts per seed: {task.train.shape[1]}, probed variables: "
    f"{task.probes.shape[1]}, needing a reverse step: "
    f"{task.reverse.float().mean(-1).numpy().round(3)}"
)
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
# JEPA's fit moves most: 0.67 or 0.98 at seed 0 on two machines (AVX2, AVX-512 kernels),
# and 0.41 at fresh seed 37 (tests/seed_spread.json, seeds 11-73: a move of 0.57)
TOL_TRAIN, TOL_TRAIN_JEPA, TOL_PROBE, TOL_DEPTH = 0.06, 0.6, 0.1, 0.5
print(f"chance: {chance:.3f}")

# %% [markdown]
# ## 1. The trained facts
#
# Teacher-forced accuracy on the trained facts (attribute facts, core sums, chain facts),
# answer ranked among all value and entity tokens. The standard model and JEPA + memory fit
# them on every seed; JEPA fits them more slowly, and how far it gets within 800 steps
# depends on the CPU's kernels (at seed 0 two thirds on one machine, nearly all on
# another), so for JEPA the precondition is "a good part of them" (above 0.3).

# %% tags=["hide-input"]
for name, r in runs.items():
    tol = TOL_TRAIN_JEPA if name == "JEPA" else TOL_TRAIN
    print(f"{name} train accuracy {approx(r.final('train_acc'), tol)}")
ledger.precondition(
    "fit-standard",
    "the standard model fits its trained facts",
    runs["standard"].final("train_acc"),
    above=0.9,
    print_tol=TOL_TRAIN,
)
ledger.precondition(
    "fit-jepa",
    "JEPA has learnt a good part of its trained facts",
    runs["JEPA"].final("train_acc"),
    above=0.3,
    print_tol=TOL_TRAIN_JEPA,
)
ledger.precondition(
    "fit-memory",
    "JEPA + memory fits its trained facts",
    runs["JEPA + memory"].final("train_acc"),
    above=0.9,
    print_tol=TOL_TRAIN,
)
for key, name in (
    ("standard", "standard"),
    ("jepa", "JEPA"),
    ("memory", "JEPA + memory"),
):
    tol = TOL_TRAIN_JEPA if key == "jepa" else TOL_TRAIN
    ledger.glue(f"train_{key}", runs[name].final("train_acc"), print_tol=tol)

# %% [markdown]
# ## 2. Values of never-trained variables
#
# Accuracy on the value of each chain variable (ranked among the $P$ values; chance $1/P$),
# for variables reached by forward steps only and for variables that need a reverse step.
# The claim is that no model solves them: accuracy on all chain variables below 0.35 for
# each model's median seed. A model that learnt nothing passes that, so its control trains the probed
# facts (`probes_in_training`), and the same test must fail.

# %% tags=["hide-input"]
for name, r in runs.items():
    print(
        f"{name} all {approx(r.final('probe_acc'), TOL_PROBE)}, forward only "
        f"{approx(r.final('forward_acc'), TOL_PROBE)}, needs reverse "
        f"{approx(r.final('reverse_acc'), TOL_PROBE)}"
    )
    for rev in (False, True):
        print(
            f"  {'needs reverse' if rev else 'forward only'} by chain size "
            f"1..{CHAIN_LEN}: {approx(r.by_depth(rev), TOL_DEPTH, digits=2)}"
        )
SOLVED_BELOW = 0.35  # "not solved": accuracy below this, on chains and on trees
for key, name, fit in (
    ("standard", "standard", "fit-standard"),
    ("jepa", "JEPA", "fit-jepa"),
    ("memory", "JEPA + memory", "fit-memory"),
):
    r = runs[name]
    # the paper's design (JEPA, with memory) solves the task (Section 4); it does not
    # say how the standard transformer does there: that claim is ours
    about = (
        dict(kind="ours")
        if key == "standard"
        else dict(
            kind="paper",
            source="Section 4",
            contradicts=True,
            paper="JEPA with memory maintains high performance up to b = 40 "
            "(no number)",
        )
    )
    # median seed: one JEPA seed's accuracy moved by 0.16 over 5 fresh seeds, more than
    # its margin, where the median moved by 0.07 (tests/seed_spread.json)
    ledger.check(
        f"not-solved-{key}",
        f"{name}: the never-trained variables are not "
        f"solved (accuracy on all chain variables below {SOLVED_BELOW}, median seed)",
        np.median(r.final("probe_acc")),
        below=SOLVED_BELOW,
        print_tol=TOL_PROBE,
        **about,
        negative=True,
        broken_by=("probes_in_training",),
        requires=(fit,),
    )
    ledger.glue(f"forward_{key}", r.final("forward_acc"), print_tol=TOL_PROBE)
    ledger.glue(f"reverse_{key}", r.final("reverse_acc"), print_tol=TOL_PROBE)
ledger.glue("chance", chance, digits=3)
ledger.glue(
    "std_reverse_k1_seed0", runs["standard"].by_depth(True)[0, 0], print_tol=TOL_DEPTH
)

# %% mystnb={"figure": {"caption": "Accuracy on the values of never-trained chain variables against chain size, for the standard transformer (2 layers), JEPA (#Rec 1 / #Sem 1) and JEPA with the top-1 memory layer, d = 64, 800 AdamW steps, 2 seeds (mean; markers per seed). Solid: variables reached by forward steps only; dashed: variables needing a reverse step. Dotted: chance 1/P. Our scale: P = 23, 4 core entities per value, 60 chains of 3 sums; the paper uses P = 10,007, 10 entities per value and trees with branching 10-40.", "name": "fig-arithmetic-depth"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, len(runs), figsize=(11, 3.6), sharey=True)
k = np.arange(1, CHAIN_LEN + 1)
for ax, (name, r) in zip(axes, runs.items()):
    for rev, ls, color in ((False, "-", "C0"), (True, "--", "C3")):
        acc = r.by_depth(rev)
        ax.plot(
            k,
            np.nanmean(acc, 0),
            ls=ls,
            color=color,
            label="needs reverse" if rev else "forward only",
        )
        for s in range(acc.shape[0]):
            ax.plot(k, acc[s], ls="none", marker="o", ms=3, color=color, alpha=0.5)
    ax.axhline(chance, color="grey", ls=":", lw=1)
    ax.set(title=name, xlabel="chain size (sums from a known value)", xticks=k)
axes[0].set_ylabel("value accuracy")
axes[0].legend(fontsize="small")
plot.savefig(fig, "fig-arithmetic-depth")
plt.show()

# %% [markdown]
# ## 3. More core entities, five times the steps (stored runs)
#
# The paper's model for this section is JEPA with the memory layer; at the notebook's scale it
# learns addition from few examples: with 4 core entities per value about 220 core sums are
# trained. The stored runs (`data/sweeps/arithmetic`, made by `python -m revlib sweep
# arithmetic`, the command is in the chapter) train the three models with 4, 8 and 16 core
# entities per value (the number of core sums grows with its square) for 4,000 steps, 2 seeds
# each; the chains are the notebook's. JEPA and JEPA + memory use the recipe under which JEPA
# fits in {doc}`jepa`: LayerNorm on prediction and candidates, learning rate $3\cdot10^{-4}$.
# The control `swap_stored` reads the stored groups swapped (JEPA + memory as the standard
# model, 16 per value as 4): every comparison below must then fail. Under
# `probes_in_training` JEPA + memory is read from stored runs of the same settings and
# seeds that also train the probed facts: "memory below standard" must then fail, so the
# test is seen to detect a solved task when it happens.

# %%
NAMES = {"standard": "standard", "jepa": "JEPA", "jepa_memory": "JEPA + memory"}
# under probes_in_training, JEPA + memory is read from stored runs that also train the
# probed facts (same settings and seeds): the comparison must then see it solve them
every = records.load(STORED_DIR, curves=True)
# the stored control runs
leak = every[every["probes_in_training"].eq(True)].sort_values(["per_value", "seed"])
stored = records.control_runs(
    every,
    "probes_in_training",
    runs["standard"].config.probes_in_training,
    by=("model", "per_value"),
)
P_stored = int(stored["modulus"].iloc[0])
s_chance = 1 / P_stored
groups = {
    (NAMES[m], int(pv)): g.sort_values("seed")
    for (m, pv), g in sorted(
        stored.groupby(["model", "per_value"]),
        key=lambda kv: (list(NAMES).index(kv[0][0]), kv[0][1]),
    )
}


def first_step_above(g, metric, level):
    """Per seed, the first recorded step with ``metric`` above ``level`` (-1: never)."""
    steps, curves = np.asarray(g["curve.steps"].iloc[0]), np.stack(g[f"curve.{metric}"])
    return [int(steps[c > level][0]) if np.any(c > level) else -1 for c in curves]


# %% tags=["hide-input"]
print(
    f"stored runs: {len(stored)}, git {sorted(set(stored['git'].str[:10]))}, "
    f"{stored['cpu_seconds'].sum() / 3600:.2f} CPU hours; modulus "
    f"{sorted(set(stored['modulus']))}, chains {sorted(set(stored['n_chains']))} of "
    f"{sorted(set(stored['chain_len']))} sums, steps {sorted(set(stored['steps']))}"
)
for (name, pv), g in groups.items():
    peak = np.stack(g["curve.probe_acc"]).max(-1)
    print(
        f"{name}, {pv} per value, lr {g['lr'].iloc[0]:g}, seeds {list(g['seed'])}: "
        f"train {exact(g['train_acc'])}, all {exact(g['probe_acc'])}, "
        f"forward only {exact(g['forward_acc'])}, needs reverse "
        f"{exact(g['reverse_acc'])}, best all over the recorded steps {exact(peak)}, "
        f"train accuracy above 0.9 from step {first_step_above(g, 'train_acc', 0.9)}"
    )
for pv in sorted(set(stored["per_value"])):
    t = records.config_of(stored[stored["per_value"] == pv].iloc[0])
    facts = arithmetic_task(
        t.modulus, int(pv), t.n_chains, t.chain_len, t.core_frac, [0]
    )
    n_core = facts.train.shape[1] - t.modulus * pv - t.n_chains * t.chain_len
    print(
        f"{pv} per value: {t.modulus * pv} core entities, {facts.train.shape[1]} "
        f"trained facts (seed 0), of which {n_core} core sums"
    )
print(f"chance: {s_chance:.3f}")
by = {
    name: {pv: g for (n, pv), g in groups.items() if n == name}
    for name in NAMES.values()
}
sizes = sorted(by["standard"])
# swap_stored reads JEPA + memory as the standard model and the other way round, and
# each size as the size at the other end of the list
first, second = ledger.swap("standard", "JEPA + memory")
order = ledger.swap(sizes, sizes[::-1])[0]
source = {**{n: n for n in by}, "standard": first, "JEPA + memory": second}
read = {name: {pv: by[source[name]][q] for pv, q in zip(sizes, order)} for name in by}
# the median of the last three evaluations: Adam's loss spikes drop one evaluation's
# train accuracy by up to 0.25 (seed 0 at 16 per value, trained on the probes too)
ledger.precondition(
    "fit-stored",
    "every stored model fits its trained facts "
    "(lowest seed's median over the last three evaluations; the "
    "ceiling is about 0.98)",
    [
        np.median(np.stack(g["curve.train_acc"])[:, -3:], axis=1).min()
        for g in groups.values()
    ],
    above=0.85,
    print_tol=0.01,
)
# The paper: JEPA with memory "maintains high performance" on forward-chaining.
for pv in sizes:
    print(
        f"{pv} per value: JEPA + memory "
        f"{exact(read['JEPA + memory'][pv]['probe_acc'])} against standard "
        f"{exact(read['standard'][pv]['probe_acc'])}"
    )
ledger.check(
    "memory-below-standard",
    "JEPA + memory is below the standard "
    "transformer at every size, every seed against every seed (standard's "
    "lowest minus "
    "memory's highest, per size)",
    [
        read["standard"][pv]["probe_acc"].min()
        - read["JEPA + memory"][pv]["probe_acc"].max()
        for pv in sizes
    ],
    above=0,
    print_tol=0.005,
    kind="paper",
    source="Section 4",
    paper="JEPA with memory maintains high performance (no number)",
    contradicts=True,
    negative=True,
    broken_by=("swap_stored", "probes_in_training"),
    requires=("fit-stored",),
)
small, large = sizes[0], sizes[-1]
ledger.check(
    "more-core-entities",
    "every model is better with 16 than with 4 core "
    "entities per value (lowest seed at 16 minus highest at 4; standard, "
    "JEPA, memory)",
    [
        read[n][large]["probe_acc"].min() - read[n][small]["probe_acc"].max()
        for n in NAMES.values()
    ],
    above=0,
    print_tol=0.005,
    kind="ours",
    broken_by=("swap_stored",),
    requires=("fit-stored",),
)
ledger.check(
    "standard-reverse-above-chance",
    "the standard transformer is above twice "
    "chance on variables needing a reverse step at every size (multiple of "
    "chance)",
    [read["standard"][pv]["reverse_acc"].min() / s_chance for pv in sizes],
    above=2,
    print_tol=0.05,
    kind="ours",
    broken_by=("swap_stored",),
    requires=("fit-stored",),
)
mem_all = np.concatenate([by["JEPA + memory"][pv]["probe_acc"] for pv in sizes])
print(
    "JEPA + memory, highest value accuracy over sizes and seeds: "
    f"{mem_all.max():.3f} (printed, not a claim: no control breaks a bound that "
    "no stored model reaches)"
)
ledger.glue("mem_range", mem_all, digits=2)
print(
    "stored control runs (JEPA + memory, the probed facts trained too): accuracy on "
    f"all chain variables {exact(leak['probe_acc'])} at "
    f"{list(zip(leak.per_value, leak.seed))} (per value, seed)"
)
ledger.glue("leak_probe_acc", leak["probe_acc"], digits=3)
ledger.glue("s_chance", s_chance, digits=3)
for n, key in (("standard", "std"), ("JEPA", "jepa"), ("JEPA + memory", "mem")):
    for pv in sizes:
        ledger.glue(f"{key}_{pv}", by[n][pv]["probe_acc"], digits=3)
    ledger.glue(f"{key}_small", by[n][small]["probe_acc"], digits=2)
    ledger.glue(f"{key}_large", by[n][large]["probe_acc"], digits=2)
ledger.glue(
    "std_reverse",
    np.concatenate([by["standard"][pv]["reverse_acc"] for pv in sizes]),
    digits=2,
)
ledger.glue("train_min", min(g["train_acc"].min() for g in groups.values()), digits=2)
ledger.glue("train_max", max(g["train_acc"].max() for g in groups.values()), digits=2)
ledger.glue("jepa_peak", np.stack(by["JEPA"][large]["curve.probe_acc"]).max(), digits=2)
ledger.glue("cpu_hours", stored["cpu_seconds"].sum() / 3600, digits=2)

# %% mystnb={"figure": {"caption": "Stored runs: value accuracy on never-trained chain variables for the standard transformer (2 layers, lr 3e-3), JEPA (#Rec 1 / #Sem 1) and JEPA with the top-1 memory layer (both LayerNorm, lr 3e-4), d = 64, batch 128, P = 23, 60 chains of 3 sums, 2 seeds each. Left: during training at 16 core entities per value (median and band). Right: final accuracy (line: mean; markers: seeds) against the number of core entities (4, 8, 16 per value). Dotted: chance 1/P. The paper: P = 10,007, 10 entities per value, trees with branching 10-40, up to 3M steps.", "name": "fig-arithmetic-stored"}, "tags": ["hide-input"]}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for i, (name, per) in enumerate(by.items()):
    color = f"C{i}"
    g = per[max(per)]
    plot.seed_band(
        ax1,
        g["curve.steps"].iloc[0],
        np.stack(g["curve.probe_acc"]).T,
        label=f"{name}",
        color=color,
    )
    pvs = sorted(per)
    ents = [P_stored * pv for pv in pvs]
    ax2.plot(ents, [per[pv]["probe_acc"].mean() for pv in pvs], color=color, label=name)
    for e, pv in zip(ents, pvs):
        ax2.plot(
            [e] * len(per[pv]),
            per[pv]["probe_acc"],
            ls="none",
            marker="o",
            ms=3,
            color=color,
            alpha=0.6,
        )
for ax in (ax1, ax2):
    ax.axhline(s_chance, color="grey", ls=":", lw=1)
ax1.set(
    xlabel="step",
    ylabel="value accuracy (all chain variables)",
    title=f"{max(by['standard'])} core entities per value",
)
ax2.set(
    xlabel="core entities", ylabel="final value accuracy", xscale="log", xticks=ents
)
ax2.set_xticklabels([str(e) for e in ents])
ax2.minorticks_off()
ax1.legend(fontsize="small")
plot.savefig(fig, "fig-arithmetic-stored")
plt.show()

# %% [markdown]
# ## 4. The paper's problem trees (stored runs)
#
# The paper's problems are trees, not chains (its `data_gen_arithmetic.ipynb`, followed by
# `revlib.data.arithmetic.arithmetic_tree_task`): problem $X$ has $b$ bridge-1 nodes, each
# with $b$ bridge-2 children, each linked to 6 core entities, every link one sum with a
# small-valued core entity stored forward or reversed. Distractors: 60% of the bridge-1
# nodes are doomed and 60% of the other bridge-2 nodes nullified (each loses its core links
# or its link up), so only about 16% of the bridge-2 nodes lie on a complete path from the
# known values to $X$. The stored runs (`data/sweeps/arithmetic_trees`, the command is in
# the chapter) train the standard model and JEPA + memory, the paper's model for this
# section, on 20 problems at $b=10$, the paper's smallest
# branching and its number of problems, with the paper's 10 core entities per value but
# $P=23$, for 16,000 steps, 2 seeds each, in the recipes of §3. The probes are the values
# of $X$ (the paper's target), of the derivable bridge nodes (reached by a complete path
# from the core values) and, as a chance-level reference, of the nodes no complete path
# reaches.
#
# The generator's facts are not all learnable: a node with more children than there are
# small-valued core entities is the addend of several facts with the same two inputs and
# different answers (in the paper's generator too), so no model can fit them all. The fit
# is read against that ceiling (`ArithmeticTask.fit_ceiling`). Under `probes_in_training`
# JEPA + memory is read from stored runs that train the probed facts too.


# %%
def tree_task(r):
    """The stored run ``r``'s problem trees (its seed's)."""
    return arithmetic.task(records.config_of(r))


def tree_read(path):
    """The stored tree runs under ``path``: every run, the control runs (JEPA + memory
    trained on the probed facts too), the runs read per model (by seed; under
    ``probes_in_training`` JEPA + memory's are the control runs) and, per model and
    seed, the highest training accuracy possible."""
    every_run = records.load(path, curves=True)
    leaked = every_run[every_run["probes_in_training"].eq(True)]
    read_runs = records.control_runs(
        every_run,
        "probes_in_training",
        runs["standard"].config.probes_in_training,
        by=("model",),
    )
    groups = {  # the standard model and JEPA + memory (JEPA alone is not stored)
        NAMES[m]: read_runs[read_runs["model"] == m].sort_values("seed")
        for m in NAMES
        if (read_runs["model"] == m).any()
    }
    ceiling = {
        name: np.array([float(tree_task(r).fit_ceiling()[0]) for _, r in g.iterrows()])
        for name, g in groups.items()
    }
    return every_run, leaked, groups, ceiling


def tree_passes(r, t):
    """How many times the run ``r`` goes over its trained facts ``t.train``."""
    return int(r["steps"]) * int(r["batch_size"]) / t.train.shape[1]


def tree_report(every_run, groups, ceiling):
    """Print the stored tree runs' problems and final accuracies; the first standard
    run's trees."""
    r = groups["standard"].iloc[0]
    t = tree_task(r)
    n_sums = t.train.shape[1] - int(r["modulus"]) * int(r["per_value"])
    print(
        f"trees: {int(r['n_chains'])} problems, b = {int(r['branching'])}, P = "
        f"{int(r['modulus'])}, {int(r['per_value'])} core entities per value; seed "
        f"{int(r['seed'])}: {t.train.shape[1]:,} trained facts ({n_sums:,} sums), "
        f"{int(t.derivable.sum()):,} of {t.probes.shape[1]:,} probed nodes derivable; "
        f"{len(every_run)} stored runs, "
        f"{every_run['cpu_seconds'].sum() / 3600:.2f} CPU hours, git "
        f"{sorted(set(every_run['git'].str[:10]))}"
    )
    for name, g in groups.items():
        print(
            f"{name}, lr {g['lr'].iloc[0]:g}, seeds {list(g['seed'])}, "
            f"{int(g['steps'].iloc[0]):,} steps of {int(g['batch_size'].iloc[0])} "
            f"({tree_passes(g.iloc[0], t):.0f} passes over the trained facts): train "
            f"{exact(g['train_acc'])} (ceiling {exact(ceiling[name])}), X "
            f"{exact(g['x_acc'])}, derivable nodes {exact(g['probe_acc'])}, not "
            f"derivable {exact(g['underivable_acc'])}"
        )
    return t


def run_fits(train_curves, ceiling):
    """Per run, its median training accuracy over its last three evaluations, as a
    fraction of ``ceiling``."""
    return np.median(np.stack(train_curves)[:, -3:], axis=1) / ceiling


def tree_fit(groups, ceiling):
    """Per model, the lowest seed's fit (:func:`run_fits`) against the highest
    ceiling."""
    return np.array(
        [
            run_fits(g["curve.train_acc"], ceiling[name].max()).min()
            for name, g in groups.items()
        ]
    )


TREE_FIT_BAR = 0.85  # the fraction of the ceiling a fitted tree model reaches


def tree_verdicts(suffix, where, groups, fit):
    """The fit precondition and the paper's claim on one set of stored trees (ids
    ending in ``suffix``, texts starting with ``where``)."""
    ledger.precondition(
        f"fit-trees{suffix}",
        f"{where}every stored tree model fits its trained facts up to the generator's "
        "ceiling (lowest seed's median over the last three evaluations, as a fraction "
        "of the ceiling)",
        fit,
        above=TREE_FIT_BAR,
        print_tol=0.01,
    )
    ledger.check(
        f"tree-not-solved-memory{suffix}",
        f"{where}JEPA + memory does not solve the problems: accuracy on the targets X "
        f"below {SOLVED_BELOW}, every seed",
        groups["JEPA + memory"]["x_acc"].to_numpy(),
        below=SOLVED_BELOW,
        print_tol=0.005,
        kind="paper",
        source="Section 4",
        paper="JEPA with memory maintains high performance up to b = 40 (no number)",
        contradicts=True,
        negative=True,
        broken_by=("probes_in_training",),
        requires=(f"fit-trees{suffix}",),
    )


def tree_glues(prefix, every_run, leaked, groups, ceiling, t):
    """The chapter's numbers for one set of stored trees, named ``{prefix}_...``."""
    for name, key in (("standard", "std"), ("JEPA + memory", "mem")):
        g = groups[name]
        for m in ("x_acc", "probe_acc", "underivable_acc", "train_acc"):
            ledger.glue(f"{prefix}_{key}_{m}", np.asarray(g[m], dtype=float), digits=3)
        ledger.glue(f"{prefix}_{key}_ceiling", np.asarray(ceiling[name]), digits=3)
        ledger.glue(
            f"{prefix}_{key}_best_x", np.stack(g["curve.x_acc"]).max(), digits=2
        )
        ledger.glue(f"{prefix}_{key}_steps", int(g["steps"].iloc[0]), digits=0)
        # training accuracy at the evaluation nearest half the run (median over seeds)
        steps = np.asarray(g["curve.steps"].iloc[0])
        mid = int(np.argmin(np.abs(steps - steps[-1] / 2)))
        ledger.glue(
            f"{prefix}_{key}_train_mid",
            np.median(np.stack(g["curve.train_acc"])[:, mid]),
            digits=3,
        )
        ledger.glue(f"{prefix}_{key}_mid_step", int(steps[mid]), digits=0)
        ledger.glue(f"{prefix}_{key}_passes", tree_passes(g.iloc[0], t), digits=0)
    ledger.glue(f"{prefix}_leak_x_acc", leaked["x_acc"], digits=3)
    ledger.glue(f"{prefix}_leak_probe_acc", leaked["probe_acc"], digits=3)
    ledger.glue(f"{prefix}_facts", t.train.shape[1], digits=0)
    ledger.glue(f"{prefix}_cpu_hours", every_run["cpu_seconds"].sum() / 3600, digits=2)
    print(
        "stored control runs (JEPA + memory, the probed facts trained too, "
        f"{int(leaked['steps'].iloc[0]):,} steps): X {exact(leaked['x_acc'])}, "
        f"derivable nodes {exact(leaked['probe_acc'])}"
    )


tree_all, tree_leak, tree_groups, tree_ceiling = tree_read(TREE_DIR)
t0 = tree_report(tree_all, tree_groups, tree_ceiling)
P_tree = int(tree_groups["standard"]["modulus"].iloc[0])
print(f"chance: {1 / P_tree:.3f}")
tree_verdicts("", "", tree_groups, tree_fit(tree_groups, tree_ceiling))
tree_glues("tree", tree_all, tree_leak, tree_groups, tree_ceiling, t0)

# %% [markdown]
# At $b=20$, the paper's next branching, a problem stores about four times as many sums.
# The stored runs (`data/sweeps/arithmetic_trees_b20`) train the same two models in the
# same recipes, one seed each, for 56,000 steps: about as many passes over the training
# facts as the runs at $b=10$ make (printed). The control, JEPA + memory trained on the
# probed facts too, runs 16,000 steps: fewer steps can only make the answer harder to
# learn. The fit precondition is that of $b=10$; where it fails, the claim is untested.

# %%
tree20_all, tree20_leak, tree20_groups, tree20_ceiling = tree_read(TREE20_DIR)
t20 = tree_report(tree20_all, tree20_groups, tree20_ceiling)
tree20_fit = tree_fit(tree20_groups, tree20_ceiling)
tree_verdicts("-b20", "at b = 20 ", tree20_groups, tree20_fit)
tree_glues("tree20", tree20_all, tree20_leak, tree20_groups, tree20_ceiling, t20)
ledger.glue("tree20_fit", tree20_fit, digits=2)  # as a fraction of the ceiling
# the training accuracy the precondition asks of JEPA + memory
mem20_ceiling = tree20_ceiling["JEPA + memory"].max()
ledger.glue("tree20_mem_fit_bar", TREE_FIT_BAR * mem20_ceiling, digits=3)

# %% mystnb={"figure": {"caption": "The paper's problem trees (stored runs): value accuracy on the targets X (solid) and on the derivable bridge nodes (dashed) during training, for the standard transformer (2 layers, lr 3e-3) and JEPA with the top-1 memory layer (LayerNorm, lr 3e-4), d = 64, batch 128; dash-dotted: JEPA + memory trained on the probed facts too (the control). Left: b = 10, 2 seeds each (median and band), 16,000 steps; right: b = 20, one seed each, 56,000 steps (the control 16,000). Dotted: chance 1/P. Our scale: P = 23, 10 core entities per value, 20 problems, 60% distractors; the paper: P = 10,007, b = 10-40, up to 3M steps.", "name": "fig-arithmetic-trees"}, "tags": ["hide-input"]}
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, b, groups, leaked in (
    (axes[0], 10, tree_groups, tree_leak),
    (axes[1], 20, tree20_groups, tree20_leak),
):
    for name, g in groups.items():
        i = list(NAMES.values()).index(name)  # the colours of fig-arithmetic-stored
        steps = g["curve.steps"].iloc[0]
        plot.seed_band(
            ax, steps, np.stack(g["curve.x_acc"]).T, label=f"{name}, X", color=f"C{i}"
        )
        ax.plot(
            steps, np.median(np.stack(g["curve.probe_acc"]), 0), ls="--", color=f"C{i}"
        )
    if len(leaked):
        ax.plot(
            leaked["curve.steps"].iloc[0],
            np.median(np.stack(leaked["curve.x_acc"]), 0),
            ls="-.",
            color="C2",
            lw=1,
            label="JEPA + memory, probes trained (control), X",
        )
    ax.plot([], [], ls="--", color="k", label="derivable bridge nodes")
    ax.axhline(1 / P_tree, color="grey", ls=":", lw=1)
    ax.set(xlabel="step", title=f"b = {b}", ylim=(0, 1.03))
axes[0].set_ylabel("value accuracy")
fig.legend(
    *axes[0].get_legend_handles_labels(),
    loc="upper center",
    bbox_to_anchor=(0.5, 0.0),
    ncol=2,
    fontsize="small",
)
plot.savefig(fig, "fig-arithmetic-trees")
plt.show()

# %% [markdown]
# Is JEPA + memory's shortfall at $b=20$ one of size or of learning rate? Two more
# stored runs of it (`data/sweeps/arithmetic_trees_b20_memory`) keep the seed, the data,
# the minibatches and the 56,000 steps and change one thing each: twice the width
# ($d=128$), or the learning rate ($10^{-3}$ instead of $3\times10^{-4}$). Each is read
# against the same precondition (0.85 of the ceiling, median of the last three
# evaluations). Printed, not claimed: the claim at $b=20$ is about the recipe of $b=10$.


# %%
def tree_variant_key(r):
    """The glue name of a stored variant run: what it changes from the recipe."""
    return "wide" if int(r["d_model"]) != 64 else "lr"


def lr_text(lr):
    """A learning rate as the commands write it: 0.0003 as 3e-4."""
    return f"{lr:.0e}".replace("e-0", "e-")


tree20_more = records.load(TREE20_MORE_DIR, curves=True)
tree20_more = tree20_more.sort_values(["d_model", "lr"], ascending=[False, True])
tree20_more_fit, tree20_more_ceiling = {}, {}
for _, r in tree20_more.iterrows():
    key, t = tree_variant_key(r), tree_task(r)
    ceiling = tree20_more_ceiling[key] = float(t.fit_ceiling()[0])
    curve = np.asarray(r["curve.train_acc"], dtype=float)
    fit = tree20_more_fit[key] = float(run_fits([curve], ceiling)[0])
    print(
        f"JEPA + memory, d = {int(r['d_model'])}, lr {lr_text(r['lr'])}, seed "
        f"{int(r['seed'])}, "
        f"{int(r['steps']):,} steps ({tree_passes(r, t):.0f} passes): train "
        f"{r['train_acc']:.3f} (ceiling {ceiling:.3f}; {fit:.2f} of it, the bar "
        f"{TREE_FIT_BAR}), X {r['x_acc']:.3f} (best "
        f"{np.max(r['curve.x_acc']):.2f}), derivable nodes {r['probe_acc']:.3f}, not "
        f"derivable {r['underivable_acc']:.3f}; {r['cpu_seconds'] / 3600:.2f} CPU hours"
    )
    for m in ("train_acc", "x_acc", "probe_acc", "underivable_acc"):
        ledger.glue(f"tree20_{key}_{m}", float(r[m]), digits=3)
    ledger.glue(f"tree20_{key}_fit", fit, digits=2)
    ledger.glue(f"tree20_{key}_best_x", np.max(r["curve.x_acc"]), digits=2)
    # its highest training accuracy at any one evaluation, as a fraction of the ceiling
    ledger.glue(f"tree20_{key}_best_fit", curve.max() / ceiling, digits=2)
ledger.glue("tree20_more_cpu_hours", tree20_more["cpu_seconds"].sum() / 3600, digits=2)
# at b = 10 the same model is above the bar from this step on (median over seeds),
# and its two seeds' fits differ by this much (a measure of one draw's move)
g10 = tree_groups["JEPA + memory"]
mem10_ceiling = tree_ceiling["JEPA + memory"].max()
frac10 = np.median(np.stack(g10["curve.train_acc"]), 0) / mem10_ceiling
below10 = np.flatnonzero(frac10 < TREE_FIT_BAR)
steps10 = np.asarray(g10["curve.steps"].iloc[0])
bar_step10 = int(steps10[below10[-1] + 1]) if below10[-1] + 1 < len(steps10) else -1
fits10 = run_fits(g10["curve.train_acc"], mem10_ceiling)
print(
    f"b = 10, JEPA + memory: above {TREE_FIT_BAR} of the ceiling from step "
    f"{bar_step10:,} on; its seeds' fits {exact(fits10, 2)}"
)
ledger.glue("tree_mem_bar_step", bar_step10, digits=0)
ledger.glue("tree_mem_fit_seed_gap", np.ptp(fits10), digits=3)
# the recipe's own run at b = 20, beside them, and the wide model's lead over it
mem20_fit = tree20_fit[list(tree20_groups).index("JEPA + memory")]
ledger.glue("tree20_mem_fit", mem20_fit, digits=2)
wide_lead = tree20_more_fit["wide"] - mem20_fit
print(
    f"b = 20: the wide model's fit leads the recipe's by {wide_lead:.3f} of the "
    f"ceiling; the two seeds at b = 10 differ by {np.ptp(fits10):.3f}"
)
ledger.glue("tree20_wide_lead", wide_lead, digits=3)

# %% mystnb={"figure": {"caption": "Does JEPA with memory fit the problem trees at b = 20? Its training accuracy as a fraction of the generator's ceiling during training (stored runs, seed 0, the same data and minibatches): the recipe of b = 10 (d = 64, lr 3e-4), twice the width (d = 128), and lr 1e-3; grey, the recipe at b = 10 (2 seeds, median). Dashed: the fit precondition, 0.85 of the ceiling, read on the median of the last three evaluations. Our scale: P = 23, 10 core entities per value, 20 problems, 60% distractors, batch 128; the paper: P = 10,007, b = 10-40, up to 3M steps.", "name": "fig-arithmetic-trees-fit"}, "tags": ["hide-input"]}
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.plot(
    steps10,
    frac10,
    color="grey",
    label="b = 10, d = 64, lr 3e-4",
)
g20 = tree20_groups["JEPA + memory"].iloc[0]
ax.plot(
    g20["curve.steps"],
    np.asarray(g20["curve.train_acc"]) / mem20_ceiling,
    color="C1",
    label="b = 20, d = 64, lr 3e-4",
)
for _, r in tree20_more.iterrows():
    ax.plot(
        r["curve.steps"],
        np.asarray(r["curve.train_acc"]) / tree20_more_ceiling[tree_variant_key(r)],
        color={"wide": "C0", "lr": "C4"}[tree_variant_key(r)],
        label=f"b = 20, d = {int(r['d_model'])}, lr {lr_text(r['lr'])}",
    )
ax.axhline(TREE_FIT_BAR, color="k", ls="--", lw=1, label="fit precondition")
ax.set(xlabel="step", ylabel="train accuracy / ceiling", ylim=(0, 1.03))
ax.legend(fontsize="small", loc="lower right")
plot.savefig(fig, "fig-arithmetic-trees-fit")
plt.show()

# %% [markdown]
# ## 5. The stored runs are what this code computes (live re-run)
#
# The first `LIVE_STEPS` steps of the stored JEPA + memory run with `PER_VALUE` core entities
# per value and seed `SEED` are trained again: same data and minibatches, so the metrics at
# step `LIVE_STEPS` must agree with the stored curve up to the CPU's kernels. If that run is
# not stored (another seed or size), the stored run of seed 0 at 4 per value is re-run: the
# check is of the stored file, not of the seed. Under the control `no_training` the re-run
# is untrained and must disagree.

# %%
TOL_LIVE = 0.05  # kernel paths move these early-training metrics little
mem = stored[stored["model"] == "jepa_memory"]
size = PER_VALUE if PER_VALUE in set(mem["per_value"]) else 4
print(f"re-run: JEPA + memory, {size} per value")
live = ledger.recheck(
    "live-matches-stored",
    arithmetic,
    mem[mem["per_value"] == size],
    metrics=("train_acc", "probe_acc"),
    steps=LIVE_STEPS,
    seed=SEED,
    below=TOL_LIVE,
    print_tol=0.02,
    # the re-run checks the stored file; the controls that do not break it skip it
    skip_under=("probes_in_training", "swap_stored"),
    what="the stored JEPA + memory run",
)
for name, (got, _) in live.items():
    ledger.glue(f"live_{name}", got, print_tol=TOL_LIVE)

# %% tags=["hide-input"]
ledger.summary()
