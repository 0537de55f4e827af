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

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1 train side by side
MODULUS = 23      # values <0>..<P-1>, addition mod P (paper: 10,007)
PER_VALUE = 4     # core entities per value (paper: 10)
N_CHAINS = 60     # problems, each a chain (paper: 20 trees with branching 10-40)
CHAIN_LEN = 3     # sums from a known value to the deepest variable (paper: 3 levels)
STEPS = 800       # AdamW steps (paper: up to 3,000,000)

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.experiments import arithmetic
from revlib.report import approx

plot.set_theme()
chance = 1 / MODULUS
common = dict(modulus=MODULUS, per_value=PER_VALUE, n_chains=N_CHAINS, chain_len=CHAIN_LEN,
              steps=STEPS, seed=SEED, n_seeds=2)
runs = {"standard": arithmetic.run(arithmetic.Config(model="standard", lr=3e-3, **common)),
        "JEPA": arithmetic.run(arithmetic.Config(model="jepa", lr=1e-3, **common))}
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
# answer ranked among all value and entity tokens. The standard model fits them on every seed;
# JEPA fits them on most seeds within 800 steps but not on all, so for JEPA we assert only that
# it has learnt most of them.

# %%
for name, r in runs.items():
    print(f"{name} train accuracy {approx(r.final('train_acc'), TOL_TRAIN)}")
assert np.all(runs["standard"].final("train_acc") > 0.9)
assert np.all(runs["JEPA"].final("train_acc") > 0.5)

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

# %% mystnb={"figure": {"caption": "Accuracy on the values of never-trained chain variables against chain size, for the standard transformer (2 layers) and JEPA (#Rec 1 / #Sem 1), d = 64, 800 AdamW steps, 2 seeds (mean; markers per seed). Solid: variables reached by forward steps only; dashed: variables needing a reverse step. Dotted: chance 1/P. Our scale: P = 23, 4 core entities per value, 60 chains of 3 sums; the paper uses P = 10,007, 10 entities per value and trees with branching 10-40.", "name": "fig-arithmetic-depth"}}
fig, ax = plt.subplots(figsize=(6, 3.8))
k = np.arange(1, CHAIN_LEN + 1)
for name, r in runs.items():
    line = None
    for rev, ls in ((False, "-"), (True, "--")):
        acc = r.by_depth(rev)
        lbl = f"{name}, {'needs reverse' if rev else 'forward only'}"
        line = ax.plot(k, np.nanmean(acc, 0), ls=ls, label=lbl,
                       color=None if line is None else line[0].get_color())
        for s in range(acc.shape[0]):
            ax.plot(k, acc[s], ls="none", marker="o", ms=3, color=line[0].get_color(), alpha=0.5)
ax.axhline(chance, color="grey", ls=":", lw=1)
ax.set(xlabel="chain size (sums from a known value)", ylabel="value accuracy", xticks=k)
ax.legend(fontsize="small")
plot.savefig(fig, "fig-arithmetic-depth")
plt.show()
