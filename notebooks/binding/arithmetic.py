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
# times the steps (`data/sweeps/arithmetic`, made by `python -m revlib sweep`) and re-run the
# first steps of one of them live.

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1 train side by side
MODULUS = 23      # values <0>..<P-1>, addition mod P (paper: 10,007)
PER_VALUE = 4     # core entities per value (paper: 10)
N_CHAINS = 60     # problems, each a chain (paper: 20 trees with branching 10-40)
CHAIN_LEN = 3     # sums from a known value to the deepest variable (paper: 3 levels)
STEPS = 800       # AdamW steps (paper: up to 3,000,000)
LIVE_STEPS = 800  # steps of the live re-run of a stored 4,000-step run
STORED_DIR = "../../data/sweeps/arithmetic"

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, sweeps
from revlib.data.arithmetic import arithmetic_task
from revlib.experiments import arithmetic
from revlib.report import approx, exact

plot.set_theme()
chance = 1 / MODULUS
common = dict(modulus=MODULUS, per_value=PER_VALUE, n_chains=N_CHAINS, chain_len=CHAIN_LEN,
              steps=STEPS, seed=SEED, n_seeds=2)
runs = {"standard": arithmetic.run(arithmetic.Config(model="standard", lr=3e-3, **common)),
        "JEPA": arithmetic.run(arithmetic.Config(model="jepa", lr=1e-3, **common)),
        "JEPA + memory": arithmetic.run(arithmetic.Config(model="jepa_memory", lr=1e-3, **common))}
task = runs["standard"].task
print(f"trained facts per seed: {task.train.shape[1]}, probed variables: {task.probes.shape[1]}, "
      f"needing a reverse step: {task.reverse.float().mean(-1).numpy().round(3)}")
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
TOL_TRAIN, TOL_PROBE, TOL_DEPTH = 0.5, 0.2, 0.5
print(f"chance: {chance:.3f}")

# %% [markdown]
# ## 1. The trained facts
#
# Teacher-forced accuracy on the trained facts (attribute facts, core sums, chain facts),
# answer ranked among all value and entity tokens. The standard model and JEPA + memory fit
# them on every seed; JEPA fits them on most seeds within 800 steps but not on all, so for
# JEPA we assert only that it has learnt most of them.

# %%
for name, r in runs.items():
    print(f"{name} train accuracy {approx(r.final('train_acc'), TOL_TRAIN)}")
assert np.all(runs["standard"].final("train_acc") > 0.9)
assert np.all(runs["JEPA"].final("train_acc") > 0.5)
assert np.all(runs["JEPA + memory"].final("train_acc") > 0.9)   # a free vector per token

# %% [markdown]
# ## 2. Values of never-trained variables
#
# Accuracy on the value of each chain variable (ranked among the $P$ values; chance $1/P$),
# for variables reached by forward steps only and for variables that need a reverse step.

# %%
for name, r in runs.items():
    print(f"{name} all {approx(r.final('probe_acc'), TOL_PROBE)}, forward only "
          f"{approx(r.final('forward_acc'), TOL_PROBE)}, needs reverse "
          f"{approx(r.final('reverse_acc'), TOL_PROBE)}")
    for rev in (False, True):
        print(f"  {'needs reverse' if rev else 'forward only'} by chain size 1..{CHAIN_LEN}: "
              f"{approx(r.by_depth(rev), TOL_DEPTH, digits=2)}")
# the standard model is far from solving the variables that need a reverse step (it is not at
# chance either: 0.1-0.2 on the seeds we tried, so the threshold is loose)
assert np.all(runs["standard"].final("reverse_acc") < 0.4)

# %% mystnb={"figure": {"caption": "Accuracy on the values of never-trained chain variables against chain size, for the standard transformer (2 layers), JEPA (#Rec 1 / #Sem 1) and JEPA with the top-1 memory layer, d = 64, 800 AdamW steps, 2 seeds (mean; markers per seed). Solid: variables reached by forward steps only; dashed: variables needing a reverse step. Dotted: chance 1/P. Our scale: P = 23, 4 core entities per value, 60 chains of 3 sums; the paper uses P = 10,007, 10 entities per value and trees with branching 10-40.", "name": "fig-arithmetic-depth"}}
fig, axes = plt.subplots(1, len(runs), figsize=(11, 3.6), sharey=True)
k = np.arange(1, CHAIN_LEN + 1)
for ax, (name, r) in zip(axes, runs.items()):
    for rev, ls, color in ((False, "-", "C0"), (True, "--", "C3")):
        acc = r.by_depth(rev)
        ax.plot(k, np.nanmean(acc, 0), ls=ls, color=color,
                label="needs reverse" if rev else "forward only")
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
# each; the chains are the notebook's. JEPA and JEPA + memory use the recipe under which JEPA fits in
# {doc}`jepa`: LayerNorm on prediction and candidates, learning rate $3\cdot10^{-4}$.

# %%
NAMES = {"standard": "standard", "jepa": "JEPA", "jepa_memory": "JEPA + memory"}
stored = sweeps.load(STORED_DIR, curves=True)
print(f"stored runs: {len(stored)}, git {sorted(set(stored['git'].str[:10]))}, "
      f"{stored['cpu_seconds'].sum() / 3600:.2f} CPU hours; modulus {sorted(set(stored['modulus']))}, "
      f"chains {sorted(set(stored['n_chains']))} of {sorted(set(stored['chain_len']))} sums, "
      f"steps {sorted(set(stored['steps']))}")
P_stored = int(stored["modulus"].iloc[0])
s_chance = 1 / P_stored
groups = {(NAMES[m], int(pv)): g.sort_values("seed")
          for (m, pv), g in sorted(stored.groupby(["model", "per_value"]),
                                   key=lambda kv: (list(NAMES).index(kv[0][0]), kv[0][1]))}
def first_step_above(g, metric, level):
    """Per seed, the first recorded step at which ``metric`` exceeds ``level`` (-1: never)."""
    steps, curves = np.asarray(g["curve.steps"].iloc[0]), np.stack(g[f"curve.{metric}"])
    return [int(steps[c > level][0]) if np.any(c > level) else -1 for c in curves]


for (name, pv), g in groups.items():
    peak = np.stack(g["curve.probe_acc"]).max(-1)
    print(f"{name}, {pv} per value, lr {g['lr'].iloc[0]:g}, seeds {list(g['seed'])}: "
          f"train {exact(g['train_acc'])}, all {exact(g['probe_acc'])}, "
          f"forward only {exact(g['forward_acc'])}, needs reverse {exact(g['reverse_acc'])}, "
          f"best all over the recorded steps {exact(peak)}, train accuracy above 0.9 from step "
          f"{first_step_above(g, 'train_acc', 0.9)}")
for pv in sorted(set(stored["per_value"])):
    t = sweeps.config_of(stored[stored["per_value"] == pv].iloc[0])
    facts = arithmetic_task(t.modulus, int(pv), t.n_chains, t.chain_len, t.core_frac, [0])
    print(f"{pv} per value: {t.modulus * pv} core entities, {facts.train.shape[1]} trained facts "
          f"(seed 0), of which {facts.train.shape[1] - t.modulus * pv - t.n_chains * t.chain_len} core sums")
print(f"chance: {s_chance:.3f}")
by = {name: {pv: g for (n, pv), g in groups.items() if n == name} for name in NAMES.values()}
for (name, pv), g in groups.items():
    # every stored model fits its training facts (the ceiling is below 1, about 0.98: a few
    # trained sums share both inputs with another trained sum that has another answer)
    assert np.all(g["train_acc"] > 0.85), (name, pv, g["train_acc"])
# The paper: JEPA with memory "maintains high performance" on parametric forward-chaining.
# Here it does not: far from solving the task at every size, and below the standard
# transformer at every size, every seed against every seed.
for pv, g in by["JEPA + memory"].items():
    std = by["standard"][pv]
    print(f"{pv} per value: JEPA + memory {exact(g['probe_acc'])} against standard "
          f"{exact(std['probe_acc'])}")
    assert g["probe_acc"].max() < 0.5, g["probe_acc"]
    assert g["probe_acc"].max() < std["probe_acc"].min(), (pv, g["probe_acc"], std["probe_acc"])
# The standard transformer gets better with more core entities (more sums to learn addition
# from), and is above chance at every size, with and without a reverse step.
small, large = min(by["standard"]), max(by["standard"])
assert by["standard"][large]["probe_acc"].min() > by["standard"][small]["probe_acc"].max()
for pv, g in by["standard"].items():
    assert np.all(g["probe_acc"] > 2 * s_chance) and np.all(g["reverse_acc"] > 2 * s_chance), (pv, g)

# %% mystnb={"figure": {"caption": "Stored runs: value accuracy on never-trained chain variables for the standard transformer (2 layers, lr 3e-3), JEPA (#Rec 1 / #Sem 1) and JEPA with the top-1 memory layer (both LayerNorm, lr 3e-4), d = 64, batch 128, P = 23, 60 chains of 3 sums, 2 seeds each. Left: during training at 16 core entities per value (median and band). Right: final accuracy (line: mean; markers: seeds) against the number of core entities (4, 8, 16 per value). Dotted: chance 1/P. The paper: P = 10,007, 10 entities per value, trees with branching 10-40, up to 3M steps.", "name": "fig-arithmetic-stored"}}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for i, (name, per) in enumerate(by.items()):
    color = f"C{i}"
    g = per[max(per)]
    plot.seed_band(ax1, g["curve.steps"].iloc[0], np.stack(g["curve.probe_acc"]).T,
                   label=f"{name}", color=color)
    pvs = sorted(per)
    ents = [P_stored * pv for pv in pvs]
    ax2.plot(ents, [per[pv]["probe_acc"].mean() for pv in pvs], color=color, label=name)
    for e, pv in zip(ents, pvs):
        ax2.plot([e] * len(per[pv]), per[pv]["probe_acc"], ls="none", marker="o", ms=3,
                 color=color, alpha=0.6)
for ax in (ax1, ax2):
    ax.axhline(s_chance, color="grey", ls=":", lw=1)
ax1.set(xlabel="step", ylabel="value accuracy (all chain variables)",
        title=f"{max(by['standard'])} core entities per value")
ax2.set(xlabel="core entities", ylabel="final value accuracy", xscale="log", xticks=ents)
ax2.set_xticklabels([str(e) for e in ents])
ax2.minorticks_off()
ax1.legend(fontsize="small")
plot.savefig(fig, "fig-arithmetic-stored")
plt.show()

# %% [markdown]
# ## 4. The stored runs are what this code computes (live re-run)
#
# The first `LIVE_STEPS` steps of the stored JEPA + memory run with `PER_VALUE` core entities
# per value and seed `SEED` are trained again: same data and minibatches, so the metrics at
# step `LIVE_STEPS` must agree with the stored curve up to the CPU's kernels. If that run is
# not stored (another seed or size), the stored run of seed 0 at 4 per value is re-run: the
# check is of the stored file, not of the seed.

# %%
TOL_LIVE = 0.05   # kernel paths move these early-training metrics little
mem = stored[stored["model"] == "jepa_memory"]
pick = mem[(mem["per_value"] == PER_VALUE) & (mem["seed"] == SEED)]
if pick.empty:
    pick = mem[(mem["per_value"] == 4) & (mem["seed"] == 0)]
row = pick.iloc[0]
live = arithmetic.run(sweeps.config_of(row, steps=LIVE_STEPS, eval_points=2, n_seeds=1))
same = mem[mem["per_value"] == row["per_value"]]
print(f"re-run: JEPA + memory, {row['per_value']} per value, seed {row['seed']}")
for name, got, ref, allowed in sweeps.live_against_stored(
        same, live, ("train_acc", "probe_acc"), LIVE_STEPS, int(row["seed"]), TOL_LIVE):
    print(f"step {LIVE_STEPS}, {name}: live {approx(got, TOL_LIVE)}, stored {ref:.3f}")
    assert abs(got - ref) < allowed, (name, got, ref)
