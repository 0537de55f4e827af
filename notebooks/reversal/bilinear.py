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
# # Notebook: the bilinear model
#
# The executable side of {doc}`../../book/reversal/bilinear`. We train the bilinear model
# $\ell_\Theta(y\mid x)=x^\top\Theta y$ of {cite}`zhu2024reversal` on the reversal data and
# check each claim of the chapter: the training loss falls while the loss of the held-out
# reverse fact stays at $\log m$ (Theorem 1 and 2), the same from a near-uniform
# "pretrained" start (Theorem 5), and what changes when the embedding dimension $d$ is small.
#
# Everything below is computed here; every number the chapter quotes is glued from a cell of
# this notebook. Several seeds train at once as one batched model, and the bands in the plots
# span the seeds (line: median; band: min to max).
#
# Each claim is checked through a ledger (`revlib.claims`): one line with the value per
# seed, its test and the margin by which it clears it. Three controls re-run this notebook
# with the answer given, the answers shuffled or the training removed, and each claim names
# the control under which its test must fail: `reverse_in_training` trains the held-out
# reverse facts too (the "reverse not learnt" claims must fail), `shuffled_labels` answers
# every training fact with another fact's answer (the "trained facts are learnt" claim must
# fail), `no_training` makes every optimiser step a no-op (the "training works" claims must
# fail). `scripts/check-claims` runs them.

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
    os.chdir(os.path.join(CLONE, "notebooks/reversal"))

# %% tags=["parameters"]
SEED = 0  # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 5  # seeds per configuration
M = 64  # vocabulary size m
N_PAIRS = 16  # pairs (x_i, y_i)
D = 1024  # embedding dimension of the main run ("large d")
STEPS = 1000  # full-batch gradient-descent steps
LR = 2.0  # step size; time t = LR * step
SWEEP_SEEDS = 16  # seeds per dimension in the epsilon sweep (its worst seed matters)
CONTROL = "none"  # a control run: one of the ledger's controls (scripts/check-claims)
# STEPS * LR = 2000 is about 6 times the gradient-flow time that the orthogonal limit
# needs to bring the training loss below 5% of log m at these sizes; that time grows
# like |D| log m, so m and n can grow about 4-fold before "fit" reads "not fitted".

# %%
from revlib import claims, repro
from revlib.experiments import bilinear

repro.setup(SEED)
ledger = claims.Ledger.of(
    bilinear,
    CONTROL,
    scale=f"m = {M}, n = {N_PAIRS}, d = {D} (sweeps 8-4096), {N_SEEDS} seeds "
    f"({SWEEP_SEEDS} in the epsilon sweep), {STEPS} GD steps of size {LR}",
    size_knobs={"M": M, "N_PAIRS": N_PAIRS},
)

import dataclasses
import math

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.theory import bilinear as theory

plot.set_theme()
log_m = math.log(M)
base = ledger.config(
    bilinear.Config(m=M, n=N_PAIRS, d=D, seed=SEED, n_seeds=N_SEEDS, lr=LR, steps=STEPS)
)
print(
    f"m = {M}, n = {N_PAIRS}, |D_train| = {2 * N_PAIRS - 1}, d = {D}, "
    f"log m = {log_m:.3f}, seeds {base.seeds}"
)

# %% [markdown]
# ## 1. The training loss falls; the reverse loss stays at $\log m$
#
# Training set $\{(x_i,y_i)\}_{i=1}^n\cup\{(y_i,x_i)\}_{i\ge 2}$, $\Theta_0=0$, full-batch
# gradient descent. The dashed line is the training loss that gradient flow would give if the
# embeddings were exactly orthonormal (the $d\to\infty$ limit, derived in the chapter): each
# pair's margin $s$ solves $e^s+(m-1)s-1=mt/N$.

# %%
main = bilinear.run(base)

# %% tags=["hide-input"]
final_train, final_rev = main.train_loss[-1], main.reverse_loss[-1]
predicted = main.predicted_train_loss()
gap = np.abs(np.median(main.train_loss, axis=1) - predicted)[1:] / predicted[1:]
fit = ledger.precondition(
    "fit",
    "final training loss / log m (the facts are fitted)",
    final_train / log_m,
    below=0.05,
    print_tol=0.005,
)
ledger.check(
    "train-follows-limit",
    "largest relative gap along training between the median training loss and "
    "the orthogonal-limit prediction",
    gap.max(),
    below=0.10,
    print_tol=0.02,
    kind="derivation",
    source="the chapter's orthogonal limit",
    broken_by=("no_training",),
)
ledger.check(
    "reverse-at-log-m",
    "final held-out reverse loss / log m",
    final_rev / log_m,
    above=0.9,
    below=1.1,
    print_tol=0.03,
    kind="paper",
    negative=True,
    source="Theorems 1, 2",
    paper="stays near log m, no better than a uniform guess (no number)",
    paper_value=1.0,
    factor=2,
    broken_by=("reverse_in_training",),
    requires=("fit",),
)
ledger.glue("train_gap", gap.max(), print_tol=0.02)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Training loss $L$ and reverse loss $L^{rev}$ of the bilinear model over gradient-descent time $t=\\eta\\,\\mathrm{step}$ (m = 64, n = 16, d = 1024, step 2, 5 seeds: median and min-max band). Dashed: the orthogonal-limit prediction for $L$; dotted: $\\log m$. The scale of any bilinear simulation in the paper is not known to us; this one is ours.", "name": "fig-bilinear-losses"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
t = main.time
plot.seed_band(ax, t[1:], main.train_loss[1:], label="training loss $L$")
plot.seed_band(ax, t[1:], main.reverse_loss[1:], label="reverse loss $L^{rev}$")
ax.plot(t[1:], predicted[1:], "k--", lw=1, label="$L$ predicted (orthogonal limit)")
ax.axhline(log_m, color="k", ls=":", lw=1, label=r"$\log m$")
ax.set(xscale="log", xlabel="time $t$", ylabel="loss (nats)")
ax.legend(loc="center left")
plot.savefig(fig, "fig-bilinear-losses")
plt.show()

# %% [markdown]
# ## 2. Theorem 1's ratio bound, and how its $\epsilon$ shrinks with $d$
#
# Theorem 1 says that for large $d$, with high probability,
# $L^{rev}(\Theta_t)/L^{rev}(\Theta_0)\ge (L(\Theta_t)/L(\Theta_0))^{\epsilon}$ for all $t$.
# For each run we compute the smallest $\epsilon$ for which the inequality holds along the
# whole measured trajectory, $\epsilon^\star=\max_t \log(L^{rev}_t/L^{rev}_0)/\log(L_t/L_0)$
# (zero when the reverse loss never falls). The theorem needs the bound with high probability
# over the embeddings, so the worst seed is the quantity to watch.

# %%
sweep_dims = [32, 64, 128, 256, 512, 1024, 2048, 4096]
ratio_runs = {
    d: bilinear.run(dataclasses.replace(base, d=d, n_seeds=SWEEP_SEEDS))
    for d in sweep_dims
}
eps = {d: r.epsilon for d, r in ratio_runs.items()}

# %% tags=["hide-input"]
worst = np.array([eps[d].max() for d in sweep_dims])
mean = np.array([eps[d].mean() for d in sweep_dims])
pos = worst > 0  # no_training: the losses never move and epsilon* is 0
slope = (
    np.polyfit(np.log(np.array(sweep_dims)[pos]), np.log(worst[pos]), 1)[0]
    if pos.sum() >= 2
    else math.nan
)
for d, w, avg in zip(sweep_dims, worst, mean):
    print(f"d = {d:5d}: worst-seed epsilon* = {w:.3f}, mean over seeds = {avg:.3f}")
ledger.check(
    "epsilon-large-d",
    f"worst-seed epsilon* at d = {sweep_dims[-1]} (the bound holds with a "
    "tiny epsilon)",
    worst[-1],
    below=0.02,
    print_tol=0.005,
    kind="paper",
    negative=True,
    source="Theorem 1",
    paper="the bound holds for any epsilon once d is large enough (no number)",
    broken_by=("reverse_in_training",),
)
ledger.check(
    "epsilon-decays",
    "log-log slope of the worst-seed epsilon* against d",
    slope,
    below=-0.3,
    print_tol=0.2,
    kind="ours",
    broken_by=("reverse_in_training",),
)
ledger.glue("eps_small_d", worst[0], print_tol=0.05)
ledger.glue("eps_large_d", worst[-1], print_tol=0.005)
ledger.glue("eps_slope", slope, print_tol=0.2)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Theorem 1 measured. Left: $L^{rev}_t/L^{rev}_0$ against $L_t/L_0$ along training for d = 64 and d = 4096 (16 seeds each, one line per seed), with $(L_t/L_0)^{\\epsilon}$ for the worst seed's $\\epsilon^\\star$. Right: the smallest $\\epsilon$ that holds, worst seed and mean over seeds, against $d$ (m = 64, n = 16). The paper proves the bound for $d$ polynomially large without a numerical constant; the decay rate shown is our measurement.", "name": "fig-bilinear-epsilon"}}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
grid = np.geomspace(1e-3, 1, 100)
for d, colour in [(64, "C0"), (4096, "C1")]:
    r = ratio_runs[d]
    x = r.train_loss / r.train_loss[:1]
    y = r.reverse_loss / r.reverse_loss[:1]
    ax1.plot(x, y, color=colour, alpha=0.35, lw=0.8)
    label = (
        f"d = {d}: $(L/L_0)^{{\\epsilon^\\star}}$, "
        f"$\\epsilon^\\star$ = {eps[d].max():.3f}"
    )
    ax1.plot(grid, grid ** eps[d].max(), color=colour, ls="--", label=label)
ax1.set(xscale="log", xlabel="$L_t / L_0$", ylabel="$L^{rev}_t / L^{rev}_0$")
ax1.legend(fontsize="small")
ax2.loglog(sweep_dims, worst, "o-", label="worst seed")
ax2.loglog(sweep_dims, mean, "s--", label="mean over seeds")
ax2.set(xlabel="embedding dimension $d$", ylabel=r"smallest $\epsilon$ that holds")
ax2.legend()
plot.savefig(fig, "fig-bilinear-epsilon")
plt.show()

# %% [markdown]
# ## 3. The asymmetry: forward logits against reverse logits
#
# To see trained and held-out reverse facts side by side we hold out the first half of the
# reverse facts ($k=n/2$ instead of the theorem's $k=1$; the argument is the same for each
# held-out pair). Forward logits $x_i^\top\Theta y_j$ have a bright diagonal. Reverse logits
# $y_i^\top\Theta x_j$ have one only for the reverse facts that were trained.

# %%
k = N_PAIRS // 2
half = bilinear.run(dataclasses.replace(base, n_reverse_heldout=k))


# %% tags=["hide-input"]
def diagonal_contrast(logits, rows):
    """Mean diagonal minus mean off-diagonal logit over the given rows, per seed."""
    sub = logits[:, rows, :]
    diag = np.stack([sub[:, i, r] for i, r in enumerate(rows)], axis=1).mean(axis=1)
    n_off = sub.shape[1] * sub.shape[2] - len(rows)
    off = (sub.sum(axis=(1, 2)) - diag * len(rows)) / n_off
    return diag - off


forward = diagonal_contrast(half.forward_logits, list(range(N_PAIRS)))
rev_trained = diagonal_contrast(half.reverse_logits, list(range(k, N_PAIRS)))
rev_heldout = diagonal_contrast(half.reverse_logits, list(range(k)))
print("diagonal minus off-diagonal logit, median over seeds:")
print(f"  forward (all pairs):      {np.median(forward):.2f}")
print(f"  reverse, trained pairs:   {np.median(rev_trained):.2f}")
print(f"  reverse, held-out pairs:  {np.median(rev_heldout):.2f}")
ledger.precondition(
    "fit-half",
    "final training loss / log m, half the reverse facts held out",
    half.train_loss[-1] / log_m,
    below=0.05,
    print_tol=0.005,
)
ledger.check(
    "trained-diagonals",
    "diagonal minus off-diagonal logit: forward (all pairs), then trained reverse",
    np.concatenate([forward, rev_trained]),
    above=5.0,
    print_tol=0.5,
    kind="paper",
    source="Section 3",
    paper="trained weights from A to B grow (no number)",
    broken_by=("no_training", "shuffled_labels"),
)
ledger.check(
    "heldout-no-diagonal",
    "|diagonal minus off-diagonal| of the reverse logits of held-out pairs",
    np.abs(rev_heldout),
    below=0.5,
    print_tol=0.1,
    kind="paper",
    negative=True,
    source="Section 3",
    paper="the weight from B to A does not grow: asymmetry (no number)",
    broken_by=("reverse_in_training",),
    requires=("fit-half",),
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Effective weights after training (seed SEED, m = 64, n = 16, d = 1024, the first 8 reverse facts held out). Left: forward logits $x_i^\\top\\Theta y_j$. Right: reverse logits $y_i^\\top\\Theta x_j$; rows above the white line are the held-out reverse facts, and their diagonal is missing.", "name": "fig-bilinear-heatmaps"}}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
vmax = float(np.abs(half.forward_logits[0]).max())
plot.heatmap(
    ax1,
    half.forward_logits[0],
    "forward logits $x_i^\\top\\Theta y_j$",
    "$y_j$",
    "$x_i$",
    vmin=-vmax,
    vmax=vmax,
    cmap="vlag",
    cbar=False,
)
plot.heatmap(
    ax2,
    half.reverse_logits[0],
    "reverse logits $y_i^\\top\\Theta x_j$",
    "$x_j$",
    "$y_i$",
    vmin=-vmax,
    vmax=vmax,
    cmap="vlag",
)
ax2.axhline(k, color="white", lw=2)
plot.savefig(fig, "fig-bilinear-heatmaps")
plt.show()

# %% [markdown]
# ## 4. The role of the dimension
#
# The proofs use that distinct Gaussian embeddings are nearly orthogonal. The largest
# $|\cos|$ among $m$ of them scales like $\sqrt{2\log m/d}$, so $d=\Omega(\log m)$ suffices for
# a fixed tolerance; $d\ge m$ is not needed. When $d$ is small compared with $m$ the embeddings
# overlap strongly and the reverse loss no longer sits at $\log m$: the model becomes
# *confidently wrong* (loss well above $\log m$), and at the smallest $d$ it cannot fit the
# training facts either. We hold out half of the reverse facts to average over 8 of them.

# %%
dims = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
by_dim = {
    d: bilinear.run(dataclasses.replace(base, d=d, n_reverse_heldout=k)) for d in dims
}

# %% tags=["hide-input"]
train_end = np.array([by_dim[d].train_loss[-1] for d in dims])  # [D, S]
rev_end = np.array([by_dim[d].reverse_loss[-1] for d in dims])
cos = np.array([by_dim[d].task.max_abs_cos.numpy() for d in dims])
scale = theory.near_orthogonality_scale(M, np.array(dims))
print(" d     train/log m  reverse/log m  max|cos|  sqrt(2 log m/d)")
for i, d in enumerate(dims):
    print(
        f"{d:5d}  {train_end[i].mean() / log_m:10.3f}  "
        f"{rev_end[i].mean() / log_m:12.2f}"
        f"  {cos[i].mean():8.2f}  {min(scale[i], 1):14.2f}"
    )
ratio = cos / scale[:, None]
i32 = dims.index(32)
ledger.sanity(
    "cos-scale",
    "max |cos| / sqrt(2 log m / d), mean over seeds, for d >= 32 (a "
    "property of Gaussian embeddings, not of training)",
    ratio[i32:].mean(axis=1),
    above=0.5,
    below=2.0,
    print_tol=0.1,
)
# "confidently wrong": a d < m fits the training facts (mean loss below 10% of log m)
# yet puts its held-out reverse loss well above log m; we look at the worst such d
small = [i for i, d in enumerate(dims) if d < M]
fits = train_end.mean(axis=1) < 0.10 * log_m
ledger.precondition(
    "small-d-fits",
    "smallest mean final training loss / log m among d < m",
    min(train_end[i].mean() for i in small) / log_m,
    below=0.10,
    print_tol=0.005,
)
cands = [i for i in small if fits[i]] or small
iw = max(cands, key=lambda i: rev_end[i].mean())
worst_d = dims[iw]
ledger.check(
    "confidently-wrong",
    f"held-out reverse loss / log m at d = {worst_d}, the fitted d < m where "
    "it is highest (1 would be a uniform guess)",
    rev_end[iw] / log_m,
    above=1.25,
    print_tol=0.1,
    kind="ours",
    broken_by=("reverse_in_training",),
    requires=("small-d-fits",),
)
i1024 = dims.index(1024)
ledger.precondition(
    "fit-large-d",
    "final training loss / log m for d >= 1024",
    train_end[i1024:] / log_m,
    below=0.05,
    print_tol=0.005,
)
ledger.check(
    "reverse-at-log-m-large-d",
    "held-out reverse loss / log m for d >= 1024",
    rev_end[i1024:] / log_m,
    above=0.9,
    below=1.1,
    print_tol=0.03,
    kind="paper",
    negative=True,
    source="Theorems 1, 2",
    paper="stays near log m for large d (no number)",
    paper_value=1.0,
    factor=2,
    broken_by=("reverse_in_training",),
    requires=("fit-large-d",),
)
ledger.glue("worst_d", worst_d, digits=0)
ledger.glue("wrong_rev", rev_end[iw].mean() / log_m, print_tol=0.1)
ledger.glue("wrong_cos", cos[iw].mean(), print_tol=0.05)
ledger.glue("d8_train", train_end[0].mean() / log_m, print_tol=0.05)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Sweep of the embedding dimension (m = 64, n = 16, 8 held-out reverse facts, 5 seeds). Left: final training and reverse loss over $\\log m$; below $d \\approx m$ the reverse loss rises far above $\\log m$. Right: largest $|\\cos|$ between two embeddings against $\\sqrt{2\\log m/d}$.", "name": "fig-bilinear-dimension"}}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
plot.seed_band(ax1, dims, train_end / log_m, label="training loss / log m", marker="o")
plot.seed_band(ax1, dims, (rev_end / log_m), label="reverse loss / log m", marker="s")
ax1.axhline(1, color="k", ls=":", lw=1)
ax1.axvline(M, color="grey", ls="--", lw=1, label="$d = m$")
ax1.set(xscale="log", xlabel="embedding dimension $d$", ylabel="loss / log m")
ax1.legend(fontsize="small")
plot.seed_band(ax2, dims, cos, label="measured max $|\\cos|$", marker="o")
ax2.plot(dims, np.minimum(scale, 1), "k--", label=r"$\sqrt{2\log m / d}$")
ax2.set(
    xscale="log", yscale="log", xlabel="embedding dimension $d$", ylabel="max $|\\cos|$"
)
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-bilinear-dimension")
plt.show()

# %% [markdown]
# ## 5. Starting from a "pretrained" model
#
# Theorem 5 allows any initialisation whose next-token probabilities are near uniform,
# $1/(2m)<p_{\Theta_0}(y\mid x)<2/m$. We take $\Theta_0=0.1\,G$ with $G$ standard Gaussian,
# check the condition over all $m^2$ pairs of tokens, and train as before.

# %%
pre = bilinear.run(dataclasses.replace(base, init="pretrained", init_scale=0.1))

# %% tags=["hide-input"]
lo, hi = pre.init_probability_range[:, 0], pre.init_probability_range[:, 1]
print("initial reverse loss / log m:", np.round(pre.reverse_loss[0] / log_m, 3))
ledger.precondition(
    "init-near-uniform",
    "min and max over seeds of m * p_Theta0 over all token pairs "
    "(Theorem 5 needs (0.5, 2))",
    [lo.min(), hi.max()],
    above=0.5,
    below=2.0,
    print_tol=0.05,
)
ledger.precondition(
    "fit-pretrained",
    "final training loss / log m from the pretrained start",
    pre.train_loss[-1] / log_m,
    below=0.05,
    print_tol=0.005,
)
ledger.check(
    "pretrained-reverse-at-log-m",
    "final held-out reverse loss / log m from the pretrained start",
    pre.reverse_loss[-1] / log_m,
    above=0.9,
    below=1.1,
    print_tol=0.03,
    kind="paper",
    negative=True,
    source="Theorem 5",
    paper="Theorems 1-2 hold from any "
    "start with 1/(2m) < p < 2/m: reverse loss near log m (no number)",
    paper_value=1.0,
    factor=2,
    broken_by=("reverse_in_training",),
    requires=("init-near-uniform", "fit-pretrained"),
)
ledger.check(
    "pretrained-reverse-stays",
    "|final - initial held-out reverse loss| / log m, pretrained start",
    np.abs(pre.reverse_loss[-1] - pre.reverse_loss[0]) / log_m,
    below=0.10,
    print_tol=0.02,
    kind="paper",
    negative=True,
    source="Theorem 5",
    paper="the reverse loss barely moves from its start (no number)",
    broken_by=("reverse_in_training",),
    requires=("init-near-uniform", "fit-pretrained"),
)

# %% [markdown]
# ## 6. Gradient flow, gradient descent and SGD
#
# The theorems are about gradient flow. We approximate it by gradient descent with a small
# step (Euler's method; halving the step changes nothing visible, which we check) and compare
# it, at equal time $t=\eta\cdot\mathrm{step}$, with the large-step gradient descent used above
# and with SGD on minibatches of 4 pairs.

# %%
T = 500.0
variants = {
    "gradient flow (Euler, step 0.1)": dict(lr=0.1, steps=int(T / 0.1)),
    "gradient flow (Euler, step 0.2)": dict(lr=0.2, steps=int(T / 0.2)),
    "GD, step 2": dict(lr=2.0, steps=int(T / 2.0)),
    "SGD, step 2, batch 4": dict(
        lr=2.0, steps=int(T / 2.0), optimizer="sgd", batch_size=4
    ),
}
dyn = {
    name: bilinear.run(dataclasses.replace(base, **kw)) for name, kw in variants.items()
}

# %% tags=["hide-input"]
flow = dyn["gradient flow (Euler, step 0.1)"]
flow2 = dyn["gradient flow (Euler, step 0.2)"]
at_T = flow.predicted_train_loss()[-1]
for name, r in dyn.items():
    print(
        f"{name:32s} t = {r.time[-1]:.0f}: "
        f"training loss {np.median(r.train_loss[-1]):.3f}, "
        f"reverse loss / log m {np.median(r.reverse_loss[-1]) / log_m:.3f}"
    )
print(f"orthogonal-limit prediction at t = {T:.0f}: {at_T:.3f}")
ledger.precondition(
    "euler-converged",
    "relative change of the training loss at t = T when the Euler step "
    "halves (0.2 -> 0.1)",
    np.abs(flow2.train_loss[-1] / flow.train_loss[-1] - 1),
    below=0.02,
    print_tol=0.002,
)
# one bound for every variant: the gap is the finite-d effect, shared by all of them
rel = np.concatenate([np.abs(r.train_loss[-1] / at_T - 1) for r in dyn.values()])
ledger.check(
    "optimizers-follow-limit",
    "|training loss at t = T / orthogonal-limit prediction - 1|, every "
    "variant (flow 0.1, flow 0.2, GD, SGD) and seed",
    rel,
    below=0.15,
    print_tol=0.03,
    kind="derivation",
    source="the chapter's orthogonal limit",
    broken_by=("no_training",),
)
ledger.check(
    "optimizers-reverse-at-log-m",
    "held-out reverse loss / log m at t = T, every variant and seed",
    np.concatenate([r.reverse_loss[-1] for r in dyn.values()]) / log_m,
    above=0.9,
    below=1.1,
    print_tol=0.03,
    kind="paper",
    negative=True,
    source="Theorems 1, 2",
    paper="reversal curse under (stochastic) gradient descent (no number)",
    paper_value=1.0,
    factor=2,
    broken_by=("reverse_in_training",),
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Gradient flow (Euler steps 0.1 and 0.2), full-batch gradient descent (step 2) and SGD (step 2, batches of 4 pairs) at equal time $t$ (m = 64, n = 16, d = 1024, 5 seeds). Solid: training loss; dashed: reverse loss; black dashed: orthogonal-limit prediction.", "name": "fig-bilinear-optimizers"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for i, (name, r) in enumerate(dyn.items()):
    plot.seed_band(ax, r.time[1:], r.train_loss[1:], label=name, color=f"C{i}")
    plot.seed_band(ax, r.time[1:], r.reverse_loss[1:], color=f"C{i}", ls="--")
ax.plot(flow.time[1:], flow.predicted_train_loss()[1:], "k--", lw=1, label="prediction")
ax.axhline(log_m, color="k", ls=":", lw=1)
ax.set(xscale="log", xlabel="time $t$", ylabel="loss (nats)")
ax.legend(fontsize="small", loc="center left")
plot.savefig(fig, "fig-bilinear-optimizers")
plt.show()

# %% [markdown]
# ## Summary
#
# At this scale every signature of the chapter holds for every seed: the training loss falls
# below 5% of $\log m$ while the held-out reverse loss stays within 10% of $\log m$, from zero
# and from a near-uniform initialisation, under gradient flow, gradient descent and SGD. The
# smallest $\epsilon$ of Theorem 1 falls as $d$ grows. With $d$ well below $m$ the theory's
# near-orthogonality fails, and the held-out reverse facts become confidently wrong rather
# than uniform.

# %% tags=["hide-input"]
ledger.summary()
