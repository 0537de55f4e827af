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
# # Notebook: abstract concepts against surface names
#
# The executable side of {doc}`../../book/binding/surface_names`. The same standard
# transformer (no positional embeddings, tied embeddings, loss on target tokens only) is
# trained on the reversal data of {cite}`wang2025binding` with one token per entity (the
# abstract level) and with two-token names shared by `MULTIPLICITY` entities each. We report
# held-out reverse accuracy and MRR next to the fit of the training facts.
#
# The abstract level needs many more rule-teaching entities per tested one, and many more
# steps, than a notebook can afford: those runs (1,600 + 200 entities, 20,000 steps, 3 seeds,
# both settings) were made by `python -m revlib sweep` and are stored in `data/sweeps/`. The
# notebook loads them, re-runs the first `LIVE_STEPS` steps of one of them live and asserts
# that the two agree, and trains the names model live at a smaller scale.

# %% tags=["parameters"]
SEED = 0         # base seed; seeds SEED, SEED+1 train side by side
N_A, N_B = 400, 240   # live names run: entities teaching the rule / tested (paper: 50,000 / 30,000)
N_REL = 3        # relation pairs (paper: 6)
MULTIPLICITY = 10     # entities sharing each name token (paper: 10)
STEPS = 1000     # AdamW steps of the live names run (paper: up to 3,000,000)
LIVE_STEPS = 1000     # steps of the live re-run of a stored one-token run
SWEEP_DIR = "../../data/sweeps/surface_names"

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, probes, sweeps
from revlib.data.binding import binding_task
from revlib.experiments import surface_names
from revlib.report import approx, exact

plot.set_theme()
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
TOL = {"train": 0.05, "atomic": 0.1, "test": 0.05}


def chance_of(task):
    """Type-aware chance per seed: exact match 1/n_B; MRR of a uniform rank among the
    distinct first tokens of the tested entities' names."""
    return 1 / task.n_b, np.array([probes.chance_mrr(int(n)) for n in task.test_first_tokens()])


# %% [markdown]
# ## 1. Names fit every training fact and fail completely on reversal (live)
#
# MRR ranks the first target token among all name tokens; accuracy asks for the whole target
# name, teacher-forced. Chance is counted over the answers of the right type: a held-out
# answer is one of the $n_B$ tested entities, so exact-match chance is $1/n_B$, and chance MRR
# is the mean of $1/\mathrm{rank}$ for a uniform rank among the distinct first tokens of
# their names (about $(n_A+n_B)/m$ first names).

# %%
names = surface_names.run(surface_names.Config(
    n_a=N_A, n_b=N_B, n_rel=N_REL, multiplicity=MULTIPLICITY, steps=STEPS, batch_size=128,
    seed=SEED, n_seeds=2, n_eval=300, eval_points=7))
chance_acc, chance_mrr = chance_of(names.task)
print(f"two-token names, m = {MULTIPLICITY}, {N_A} + {N_B} entities, {STEPS} steps:")
for split in ("train", "atomic", "test"):
    print(f"  {split}: accuracy {approx(names.final(split + '_acc'), TOL[split])}, "
          f"MRR {approx(names.final(split + '_mrr'), TOL[split])}")
print(f"  held-out chance: accuracy 1/{N_B} = {chance_acc:.4f}, MRR {np.round(chance_mrr, 4)}")
assert np.all(names.final("train_acc") > 0.95) and np.all(names.final("atomic_acc") > 0.95)
# the held-out reverse facts stay at chance (a learnt reversal would be near 1)
assert np.all(names.final("test_acc") < 5 * chance_acc), names.final("test_acc")
assert np.all(names.final("test_mrr") < 2 * chance_mrr), names.final("test_mrr")

# %% [markdown]
# ## 2. One token per entity against names, 20,000 steps (stored runs)
#
# 1,600 entities teach the rule and 200 are tested (the paper: 50,000 and 30,000), 3 relation
# pairs, AdamW at $3\cdot10^{-3}$, batch 256, 3 seeds per setting; both settings see exactly
# the same facts.

# %%
df = sweeps.load(SWEEP_DIR, curves=True)
print(f"stored runs: {len(df)}, git {sorted(set(df['git'].str[:10]))}, "
      f"{df['seconds'].sum() / 3600:.1f} hours of run time; "
      f"n_a = {sorted(set(df['n_a']))}, n_b = {sorted(set(df['n_b']))}, steps = {sorted(set(df['steps']))}")
stored = {}
for m, g in df.sort_values("seed").groupby("multiplicity"):
    r0 = g.iloc[0]
    task = binding_task(int(r0.n_a), int(r0.n_b), int(r0.n_rel), int(m), [int(s) for s in g.seed])
    stored[m] = dict(rows=g, chance=chance_of(task), steps=r0["curve.steps"],
                     curve={k: np.stack(g[f"curve.{k}"]) for k in
                            [f"{s}_{x}" for s in ("train", "atomic", "test") for x in ("acc", "mrr")]})
for m, st in stored.items():
    g, (c_acc, c_mrr) = st["rows"], st["chance"]
    print(("one token per entity" if m == 0 else f"two-token names, m = {m}") + f", seeds {list(g.seed)}:")
    for split in ("train", "atomic", "test"):
        print(f"  {split}: accuracy {exact(g[split + '_acc'])}, MRR {exact(g[split + '_mrr'])}")
    print(f"  held-out chance: accuracy 1/{int(g.iloc[0].n_b)} = {c_acc:.4f}, MRR {np.round(c_mrr, 4)}")
abstract, named = stored[0]["rows"], stored[MULTIPLICITY]["rows"]
a_chance, n_chance = stored[0]["chance"], stored[MULTIPLICITY]["chance"]
# both fit what they are trained on
assert np.all(abstract["atomic_acc"] > 0.95) and np.all(named["atomic_acc"] > 0.95)
assert np.all(abstract["train_acc"] > 0.95) and np.all(named["train_acc"] > 0.95)
# names: at chance on the held-out reverse facts, on every seed
assert np.all(named["test_acc"] < 5 * n_chance[0]) and np.all(named["test_mrr"] < 2 * n_chance[1])
# one token per entity: far above chance on every seed -- the abstract level reverses
assert np.all(abstract["test_mrr"] > 10 * a_chance[1]), abstract["test_mrr"]
assert np.all(abstract["test_acc"] > 20 * a_chance[0]), abstract["test_acc"]

# %% [markdown]
# ## 3. The stored runs are what this code computes (live re-run)
#
# The first `LIVE_STEPS` steps of the stored one-token run of seed `SEED` are trained again;
# with the same seed, data and minibatches are the same, so the metrics at step `LIVE_STEPS`
# must agree with the stored curve up to the CPU's kernels. For a seed that is not stored they
# are compared with the stored seeds' median, within the spread across seeds.

# %%
# Tolerance: kernel paths move these early-training metrics little; for a seed that is not
# stored, the stored seeds' range is allowed on top.
TOL_LIVE = 0.05
live = surface_names.run(sweeps.config_of(abstract.iloc[0], steps=LIVE_STEPS, eval_points=2,
                                          seed=SEED, n_seeds=1))
stored_seed = SEED in set(abstract["seed"])
for name, got, ref, allowed in sweeps.live_against_stored(
        abstract, live, ("train_acc", "atomic_acc", "test_mrr"), LIVE_STEPS, SEED, TOL_LIVE):
    print(f"step {LIVE_STEPS}, {name}: live {approx(got, TOL_LIVE)}, stored "
          f"{'seed ' + str(SEED) if stored_seed else 'median'} {ref:.3f}")
    assert abs(got - ref) < allowed, (name, got, ref)

# %% mystnb={"figure": {"caption": "Standard transformer (2 layers, d = 64, no positions, tied embeddings) with one token per entity and with two-token names (multiplicity 10) on the same facts: 1,600 rule-teaching and 200 tested entities, 3 relation pairs, AdamW lr 3e-3, batch 256, 20,000 steps, 3 seeds (median and band; stored runs). Left: accuracy on the atomic facts and on the held-out reverse (test) facts. Right: test MRR against the type-aware chance (dotted). The paper trains 80,000 entities for up to 3M steps.", "name": "fig-surface-names"}}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for m, st in stored.items():
    tag = "one token" if m == 0 else f"names m={m}"
    plot.seed_band(ax1, st["steps"], st["curve"]["atomic_acc"].T, label=f"{tag}: atomic")
    plot.seed_band(ax1, st["steps"], st["curve"]["test_acc"].T, label=f"{tag}: test", ls="--")
    line = ax2.plot([], [])[0]
    plot.seed_band(ax2, st["steps"], st["curve"]["test_mrr"].T, label=f"{tag}: test MRR",
                   color=line.get_color())
    ax2.axhline(st["chance"][1].mean(), color=line.get_color(), ls=":", lw=1)
ax1.set(xlabel="step", ylabel="accuracy")
ax1.legend(fontsize="small")
ax2.set(xlabel="step", ylabel="MRR (dotted: chance)")
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-surface-names")
plt.show()
