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
# # Notebook: feed-forward against attention, in training and under truncation
#
# The executable side of {doc}`../../book/associations/ff_vs_attention`. We train the
# two-layer toy model of {cite}`chen2025distributional` on noisy in-context recall (frozen
# random embeddings and unembedding, no LayerNorm, one head per layer with $W_Q=I$) and test
# it on *clean* sequences. Every claim is checked on each seed: the full model puts about
# $\alpha$ on $\tau$; without its second feed-forward layer (FF2) it recalls $\bar y$; layer-2
# attention attends to $\bar y$ and not to $\tau$; FF2 alone maps the trigger to $\tau$.

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 2       # seeds of the main run (the variants use the first one)
STEPS = 1000      # SGD steps (the paper's script: 5000)
D = 64            # width d (the paper's script: 256)
SEQ_LEN = 64      # T (the paper's script: 256)
BATCH = 32        # sequences per step (the paper's script: 512)
ALPHA = 0.5       # noise probability (the paper's script: 0.5)
LR = 0.03         # SGD with momentum 0.9 and weight decay 1e-4, as in the script

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.experiments import ff_vs_attention as fa
from revlib.report import approx

plot.set_theme()
base = dict(d=D, seq_len=SEQ_LEN, alpha=ALPHA, seed=SEED, steps=STEPS, batch_size=BATCH, lr=LR)
main = fa.run(fa.Config(n_seeds=N_SEEDS, **base))
print(f"seeds {main.config.seeds}, trainable parameters per model: {main.n_params}")


# Printed numbers carry the tolerance within which they reproduce (revlib.report): the
# largest move seen across seeds and another CPU kernel path (scripts/check-seeds).
TOL_P = 0.2        # probabilities and accuracies on clean test data
TOL_RANK = 0.3     # the same under partial-rank truncation, which spreads them further
TOL_ATT = 0.1      # attention mass (a variant moved 0.06 on the simulated other machine)
TOL_MARGIN = 2.0   # FF2 logit margin


def show(name, values, tol=TOL_P):
    print(f"{name:34s} {approx(values, tol)}")


# %% [markdown]
# ## 1. Full model against FF2 removed, on clean test sequences
#
# At trigger positions from the second occurrence on, sequences with
# $\bar y\notin\{q,\tau\}$: the mean probability of $\tau$ and of $\bar y$, and the argmax
# accuracy (prediction $=\bar y$). One value per seed.

# %%
f = main.final
show("full model       p(tau)", f("p_tau"))
show("full model       p(ybar)", f("p_ybar"))
show("full model       accuracy", f("acc"))
show("FF2 removed      p(tau)", f("p_tau_noff2"))
show("FF2 removed      p(ybar)", f("p_ybar_noff2"))
show("FF2 removed      accuracy", f("acc_noff2"))
show("noisy data, full p(tau)", f("train_p_tau"))
# "about alpha": within alpha / 2 for every seed
assert np.all(np.abs(f("p_tau") - ALPHA) < ALPHA / 2), f("p_tau")
# FF2 carries the noise: without it, p(tau) keeps less than a fifth of the full model's
assert np.all(f("p_tau_noff2") < 0.2 * f("p_tau")), f("p_tau_noff2")
assert np.all(f("acc_noff2") > 0.9), f("acc_noff2")
# and removing it helps the clean prediction on every seed (a fresh seed's full model already
# had accuracy 0.80, against 0.99 without FF2, so no fixed margin is asserted)
assert np.all(f("acc_noff2") > f("acc")) and np.all(f("p_ybar_noff2") > f("p_ybar"))

# %% [markdown]
# ## 2. The mechanism: who attends where, and what FF2 stores
#
# Layer-2 attention, from the loss positions of *noisy* test sequences, onto earlier
# positions that followed a trigger: those holding $\bar y$ and those holding $\tau$. And
# the FF2 margin: the trigger's raw embedding through FF2 and the unembedding, $\tau$ logit
# minus the largest other logit (the original code's `mlp2_trigger_margin`).

# %%
show("layer-2 attention on ybar positions", f("att_ybar"), TOL_ATT)
show("layer-2 attention on tau positions", f("att_tau"), TOL_ATT)
show("FF2 margin of tau for the trigger", f("ff2_margin"), TOL_MARGIN)
assert np.all(f("att_ybar") > 0.6) and np.all(f("att_ybar") > 3 * f("att_tau"))
assert np.all(f("ff2_margin") > 0), f("ff2_margin")

# %% mystnb={"figure": {"caption": "Training curves on clean test data (d = 64, T = 64, batch 32, alpha = 0.5, SGD lr 0.03 with momentum; 2 seeds, line: median, band: min-max). Left: p(tau) of the full model and with FF2 removed, and the recall accuracy with FF2 removed. Middle: layer-2 attention mass on earlier ybar and tau positions (noisy test data). Right: the FF2 margin of tau for the trigger embedding. The paper trains d = 256, T = 256, batch 512 for 5000 steps; its curve values are not known to us.", "name": "fig-ffattn-curves"}}
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
s = main.history.steps
h = main.history
plot.seed_band(axes[0], s, h["p_tau"], label="p(tau), full")
plot.seed_band(axes[0], s, h["p_tau_noff2"], label="p(tau), FF2 removed")
plot.seed_band(axes[0], s, h["acc_noff2"], label="accuracy, FF2 removed")
plot.seed_band(axes[0], s, h["acc"], label="accuracy, full", ls="--")
axes[0].axhline(ALPHA, color="k", ls=":", lw=1)
axes[0].set(xlabel="step", ylabel="clean test", ylim=(0, 1))
axes[0].legend(fontsize="small")
plot.seed_band(axes[1], s, h["att_ybar"], label="on ybar positions")
plot.seed_band(axes[1], s, h["att_tau"], label="on tau positions")
axes[1].set(xlabel="step", ylabel="layer-2 attention mass", ylim=(0, 1))
axes[1].legend(fontsize="small")
plot.seed_band(axes[2], s, h["ff2_margin"], label="FF2(trigger): tau margin")
axes[2].axhline(0, color="k", lw=1)
axes[2].set(xlabel="step", ylabel="logit margin")
axes[2].legend(fontsize="small")
plot.savefig(fig, "fig-ffattn-curves")
plt.show()

# %% [markdown]
# ## 3. Truncating FF2 to a rank
#
# LASER-style truncation {cite}`sharma2024laser` keeps the top singular values of FF2's
# second matrix $W_2$ ($4d\times d$, rank at most $d$). Rank 0 removes the layer; full rank is
# the trained model. We report every rank as measured.

# %%
print("rank: p(tau) per seed | p(ybar) per seed | accuracy per seed")
for i, r in enumerate(main.ranks):
    print(f"{r:4d}: " + " | ".join(approx(main.sweep[k][i], TOL_RANK) for k in ("p_tau", "p_ybar", "acc")))
sw = main.sweep
assert np.all(sw["p_tau"][0] < 0.2 * sw["p_tau"][-1])     # rank 0: the layer removed
# partial ranks do not clean the prediction in this toy: each keeps at least the full
# model's p(tau) (up to 0.02)
assert np.all(sw["p_tau"][1:-1] > sw["p_tau"][-1] - 0.02), sw["p_tau"]

# %% mystnb={"figure": {"caption": "Rank sweep of FF2's second matrix (d = 64: full rank 64; 2 seeds, line: median, band: min-max), clean test data. Only rank 0 (removing FF2) removes the noise; keeping a few top singular directions raises p(tau) above the full model's. The paper truncates at rank fractions 0, 0.1 and 0.2 of d = 256; its values are not known to us.", "name": "fig-ffattn-rank"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
x = np.array(main.ranks) + 0.5
plot.seed_band(ax, x, sw["p_tau"], label="p(tau)", marker="o")
plot.seed_band(ax, x, sw["p_ybar"], label="p(ybar)", marker="s")
plot.seed_band(ax, x, sw["acc"], label="accuracy", marker="^")
ax.axhline(ALPHA, color="k", ls=":", lw=1)
ax.set(xscale="log", xlabel="rank kept + 0.5", ylabel="clean test", ylim=(0, 1))
ax.legend(fontsize="small")
plot.savefig(fig, "fig-ffattn-rank")
plt.show()

# %% [markdown]
# ## 4. Variants: no FF1, and a linear FF2
#
# The same training without a first-layer FF (FF2 is then the only FF), and with FF2 a single
# linear map $W_F$ (the associative memory of the theory). One seed each. Both learn the
# recall more slowly than the model with two MLPs, so at 1000 steps we require less of them:
# FF2-removed accuracy above 0.6 (the notebook prints what they reach; `scripts/check-seeds`
# re-runs it with other seeds).

# %%
variants = {"no FF1": ("none", "mlp"), "linear FF2": ("mlp", "linear")}
var = {name: fa.run(fa.Config(n_seeds=1, ff=ff, **base)) for name, ff in variants.items()}
for name, r in [("full, first seed", None)] + list(var.items()):
    g = (lambda k: main.final(k)[0]) if r is None else (lambda k, r=r: r.final(k)[0])
    print(f"{name}: p(tau) {approx(g('p_tau'), TOL_P)}, without FF2 {approx(g('p_tau_noff2'), TOL_P)} "
          f"(accuracy {approx(g('acc_noff2'), TOL_P)}); layer-2 attention on ybar "
          f"{approx(g('att_ybar'), TOL_ATT)}, on tau {approx(g('att_tau'), TOL_ATT)}; "
          f"FF2 margin {approx(g('ff2_margin'), TOL_MARGIN)}")
for name, r in var.items():
    assert abs(r.final("p_tau")[0] - ALPHA) < ALPHA / 2, name
    # less than half of p(tau) is left without FF2 (with a linear FF2, one fresh seed kept a
    # quarter, 0.08 of 0.32; an FF2 that stored no tau would keep about all of it)
    assert r.final("p_tau_noff2")[0] < 0.5 * r.final("p_tau")[0] and r.final("acc_noff2")[0] > 0.6, name
    assert r.final("att_ybar")[0] > 3 * r.final("att_tau")[0], name

# %% mystnb={"figure": {"caption": "The variants over training (d = 64, T = 64, batch 32, alpha = 0.5, one seed each): p(tau) of the full model (solid) and with FF2 removed (dashed), and the accuracy with FF2 removed (dotted). The paper's code has both switches (first_ffn, linear_final_ffn); its curves for them are not known to us.", "name": "fig-ffattn-variants"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
runs = {"both MLPs": main, **var}
for i, (name, r) in enumerate(runs.items()):
    s = r.history.steps
    ax.plot(s, r.history["p_tau"][:, 0], color=f"C{i}", label=f"{name}: p(tau)")
    ax.plot(s, r.history["p_tau_noff2"][:, 0], color=f"C{i}", ls="--")
    ax.plot(s, r.history["acc_noff2"][:, 0], color=f"C{i}", ls=":")
ax.set(xlabel="step", ylabel="clean test", ylim=(0, 1))
ax.legend(fontsize="small", title="dashed: p(tau), FF2 removed; dotted: accuracy, FF2 removed",
          title_fontsize="x-small")
plot.savefig(fig, "fig-ffattn-variants")
plt.show()

# %% [markdown]
# ## Summary
#
# At this CPU scale the separation of the paper holds on every seed: the full model predicts
# $\tau$ with probability within $\alpha/2$ of $\alpha$, removing FF2 cuts it by at least five times and lets the
# attention's recall of $\bar y$ through, layer-2 attention attends to $\bar y$ and avoids
# $\tau$, and FF2 alone maps the trigger to $\tau$. Keeping a few top singular directions of
# FF2 does the opposite of cleaning: the noise association lives in those directions.
