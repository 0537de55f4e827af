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
# # Notebook: multi-layer transformers
#
# The executable side of {doc}`../../book/reversal/multi_layer`. We train small causal
# transformers from scratch on the reversal sentences of {cite}`zhu2024reversal` ("A → B",
# "B ← A"; 70% of the pairs in both directions, the rest in one direction only) and check
# that the held-out direction is not learned, under the rebuttal's variations of the model.
# A control puts the reverse fact in the context, where the model only has to copy.
#
# Everything runs at a reduced scale (the paper: 24 layers, d = 768, vocabulary 800,
# 3000 epochs, 10 seeds). Several seeds train as one batched model; bands span the seeds
# (line: median; band: min to max).

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
N_SEEDS = 5  # seeds of the main configuration ("at chance" needs at least 5)
VARIANT_SEEDS = 3  # seeds of each variant (fewer, to fit the time budget)
VOCAB = 200  # entity ids; model vocabulary VOCAB + 2 (the paper: 800)
# Step budgets follow the data: AdamW steps of batch 64 (lr 0.01, as in the paper's
# code)
# for EPOCHS passes over the training sentences (300 steps at VOCAB = 200; two-token
# entities have twice the pairs, so twice the steps).
EPOCHS = 226
# in-context control: VOCAB // 4 A's (the paper: 100 at vocabulary 400) times 10 B's
ICL_EPOCHS = 36.6  # 200 steps at VOCAB = 200
# a control run: one of the ledger's controls (see scripts/check-claims)
CONTROL = "none"

# %%
from revlib import claims, repro
from revlib.experiments import multi_layer as ml

repro.setup(SEED)
ledger = claims.Ledger.of(
    ml,
    CONTROL,
    scale=f"2 layers, d = 64, vocabulary {VOCAB} + 2, {EPOCHS} epochs, {N_SEEDS} seeds "
    f"({VARIANT_SEEDS} per variant)",
    paper_scale="24 layers, d = 768, vocabulary 800 + 2, 3000 epochs, 10 seeds",
    size_knobs={"VOCAB": VOCAB},
)

import math
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.report import approx

# Tolerances of the printed numbers: each covers the largest move of its number over 5
# fresh seeds (tests/seed_spread.json: a trained transformer's per-seed value moves
# between machines as a fresh seed's would) and stays below the margin of its claim.
TOL_TRAIN, TOL_MRR_RATIO, TOL_NLL_RATIO, TOL_STAT = 0.01, 1.5, 1.0, 2.0
# The median seed's held-out MRR over chance moved by 0.4 over 5 fresh seeds, where a
# single seed moved by up to 1.4 (one reached 2.35 times chance): the claim is stated
# on the median, and the per-seed range is printed.
TOL_MRR_MEDIAN = 0.4
# The held-out MRR over chance moves like a fresh seed: with AVX-512 kernels one seed
# went 0.99 -> 1.69 (stored: 0.93-1.19 over the four seeds), hence 1.0, not 0.6.
# The fraction of rows whose maximum is on the diagonal, a median over seeds, moved
# 0.87 -> 0.73 (tied model, entity-only readout) on an AVX-512 machine.
TOL_HIT = 0.2
# The variants (3 seeds each) move more: on the simulated other machine the two-token
# variant's largest held-out MRR went 0.173 -> 0.110 and the untied variant's held-out
# NLL 3.41 -> 2.88 log|V|; over fresh seeds one variant's largest MRR moved by 1.35
# units of chance.
TOL_VAR_MRR_RATIO, TOL_VAR_NLL_RATIO = 1.5, 0.6
# The two-token variant fits last: its median training NLL reached 0.143 on a fresh
# seed (seed 11) and 0.086 under generic kernels, against 0.007 stored, so the variants'
# fit bound is 0.2 and its print tolerance covers that move.
TOL_VAR_TRAIN, VAR_FIT_BELOW = 0.15, 0.2

plot.set_theme()
base = ledger.config(ml.Config(vocab=VOCAB, seed=SEED, n_seeds=N_SEEDS, tied=False))
base = replace(base, steps=ml.steps_for(base, EPOCHS))
print(
    f"vocabulary {base.model_vocab} (log |V| = {math.log(base.model_vocab):.3f}), "
    f"{base.n_train} training sentences, {base.steps} steps, seeds {base.seeds}"
)

# %% [markdown]
# ## 1. Training NLL falls to zero; the held-out answer ranks at chance
#
# Main configuration: 2 layers, 4 heads, $d=64$, learned absolute positions, an output layer
# untied from the input embeddings, AdamW with lr 0.01, weight decay 0.01 (the value the
# paper's code actually applies) and batches of 64. The loss is on the answer token only. An
# "epoch" below is the number of training sentences seen divided by the training-set size.
#
# Why untied: GPT-2 ties its output layer to its input embeddings, but the paper's released
# code replaces the transformer after the weights are tied, so its head stays tied to an
# embedding the model no longer uses: in effect untied (our reading of the code). The untied
# model is also the one that shows the paper's Figure 2 (no unseen diagonal). The tied model is
# trained beside it in section 2 and reported with its numbers: it leaks a little of the
# reverse direction.
#
# The paper reads the curse off the held-out NLL, which stays above $\log|V|$. A mean NLL can
# sit above $\log|V|$ while the right answer still ranks first, so we also rank the held-out
# answer among the entities of its own type (all A's for "$B\leftarrow$", all B's for
# "$A\to$"): chance is a uniform guess among them, and a learnt fact would rank first.
#
# Each claim names the control that must break it. An untrained model also "fails to learn
# the reverse", so every claim that the held-out direction is not learnt must fail when that
# direction is put into training (`reverse_in_training`); the claims that need learning
# must fail for models left at their initial weights (`no_training`), and those that the
# trained facts, or the answer in the context, are learnt must fail when every training
# sentence is answered with another sentence's answer (`shuffled_labels`).

# %%
main = ml.run(base)

# %% tags=["hide-input"]
log_v = main.log_vocab
train_end, val_end = main.train_nll[-1], main.val_nll[-1]
print(f"parameters per model: {main.n_params}")
ledger.precondition(
    "fit",
    "the training sentences are fitted (final answer NLL, per seed)",
    train_end,
    below=0.1,
    print_tol=TOL_TRAIN,
)
ledger.check(
    "heldout-rank-chance",
    "the held-out answer ranks at chance among the "
    "entities of its type: every seed's MRR is below 2 times chance (MRR over chance, "
    "per seed)",
    main.heldout_mrr / main.chance_mrr,
    below=2.0,
    print_tol=TOL_MRR_RATIO,
    kind="paper",
    negative=True,
    source="Figure 1",
    paper="held-out answer no better than a random guess (no number)",
    paper_value=1.0,
    # no factor: seeds move by about chance across machines, so "within 2 times
    # chance" cannot be decided stably; the ratio is shown, the verdict is in direction
    broken_by=("reverse_in_training",),
    requires=("fit",),
)
ledger.check(
    "heldout-nll-above-uniform",
    "the held-out NLL ends above log|V|, no better "
    "than a uniform guess (median seed, over log|V|)",
    np.median(val_end) / log_v,
    above=1.0,
    print_tol=TOL_NLL_RATIO,
    kind="paper",
    negative=True,
    source="Figure 1",
    paper="held-out NLL at or above log|V|, a uniform guess (no number)",
    paper_value=1.0,
    # no factor: a seed lies within its tolerance of 2 times uniform, so "in size"
    # cannot be decided stably; the ratio is shown, the verdict is in direction
    broken_by=("reverse_in_training",),
    requires=("fit",),
)
print(f"chance MRR among the entities of a type: {main.chance_mrr.mean():.3f}")
ledger.glue("train_nll_min", train_end.min(), print_tol=TOL_TRAIN)
ledger.glue("train_nll_max", train_end.max(), print_tol=TOL_TRAIN)
ledger.glue("val_nll_median", np.median(val_end), print_tol=TOL_NLL_RATIO * log_v)
ledger.glue("mrr_min", main.heldout_mrr.min(), print_tol=TOL_MRR_RATIO * 0.09)
ledger.glue("mrr_max", main.heldout_mrr.max(), print_tol=TOL_MRR_RATIO * 0.09)
ledger.glue("chance", main.chance_mrr.mean(), digits=3)
ledger.glue("log_v", log_v, digits=2)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Training and held-out NLL of the answer token against epochs (2 layers, 4 heads, d = 64, vocabulary 200 + 2, 50 pairs, untied output, 300 AdamW steps, 5 seeds: median and min-max band). Dotted: $\\log|V|$, a uniform guess. The paper's Figure 1 uses 24 layers, d = 768, vocabulary 800 + 2, 3000 epochs and 10 seeds.", "name": "fig-multilayer-nll"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, main.epochs, main.train_nll, label="training sentences")
plot.seed_band(ax, main.epochs, main.val_nll, label="held-out direction")
ax.axhline(log_v, color="k", ls=":", lw=1, label=r"$\log|V|$ (uniform guess)")
ax.set(xlabel="epoch", ylabel="NLL of the answer (nats)")
ax.legend()
plot.savefig(fig, "fig-multilayer-nll")
plt.show()

# %% [markdown]
# ## 2. The effective weights: seen and unseen logit heatmaps
#
# As in the paper's Figure 2: entry $(i,j)$ is the logit of the answer of sentence $j$ after
# the input of sentence $i$. Panels: training pairs forward ($A_i\to$, columns $B_j$) and
# backward ($B_i\leftarrow$, columns $A_j$); for the one-direction pairs, the direction that was
# trained ("seen") and the held-out one ("unseen"). We read the logits after the relation token
# (input "$A_i\to$", the position the loss trains). The paper's code reads them with the
# relation token removed (input $A_i$ alone); we print that readout too.
#
# Two numbers per panel: the mean diagonal logit minus the mean off-diagonal logit, and the
# fraction of rows whose largest entry is on the diagonal (chance: one over the panel size).
# The same model with its output layer tied to the input embeddings (as GPT-2) trains beside
# the main one.

# %%
tied = ml.run(replace(base, tied=True))

# %% tags=["hide-input"]
PANELS = ["train_forward", "train_backward", "val_seen", "val_unseen"]
stats = {}
for label, res, readout in [
    ("untied, after relation", main, "relation"),
    ("untied, entity only (paper)", main, "entity"),
    ("tied, after relation", tied, "relation"),
]:
    print(label)
    for p in PANELS:
        contrast, hit = ml.diagonal_stats(res.heatmaps[readout][p])
        stats[label, p] = contrast, hit
        print(
            f"  {p}: diagonal - off-diagonal {approx(np.median(contrast), TOL_STAT)}, "
            f"diagonal is row max {approx(np.median(hit), TOL_HIT)} (median over seeds)"
        )
        tag = f"{label.split(',')[0]}_{readout}_{p}"
        ledger.glue(f"contrast_{tag}", np.median(contrast), print_tol=TOL_STAT)
        ledger.glue(f"hit_{tag}", np.median(hit), print_tol=TOL_HIT)
n_val = main.heatmaps["relation"]["val_unseen"].shape[1]
print(
    f"panel size {n_val}: a row maximum on the diagonal by chance in {1 / n_val:.2f} "
    "of rows"
)
ledger.glue("hit_chance", 1 / n_val, digits=2)
seen_hits = np.concatenate(
    [
        stats[lab, p][1]
        for lab in ("untied, after relation", "tied, after relation")
        for p in PANELS[:3]
    ]
)
ledger.check(
    "seen-diagonals",
    "in the trained and seen panels the diagonal is the row "
    "maximum (smallest fraction of rows over panels, untied and tied, and seeds)",
    seen_hits.min(),
    above=0.9,
    print_tol=0.05,
    kind="paper",
    source="Figure 2",
    paper="bright diagonals in the trained and seen panels (no number)",
    broken_by=("no_training", "shuffled_labels"),
)
ratio = {
    lab: stats[lab, "val_unseen"][0] / stats[lab, "val_seen"][0]
    for lab in ("untied, after relation", "tied, after relation")
}
ledger.precondition(
    "tied-fit",
    "the tied model fits its training sentences (final answer NLL, per seed)",
    tied.train_nll[-1],
    below=0.1,
    print_tol=TOL_TRAIN,
)
ledger.check(
    "unseen-weaker",
    "the unseen diagonal contrast is below 0.7 of the seen one "
    "(untied and tied, per seed)",
    np.concatenate(list(ratio.values())),
    below=0.7,
    print_tol=0.25,  # a tied seed moved by 0.221 over 5 fresh seeds
    kind="paper",
    negative=True,
    source="Figure 2",
    paper="no diagonal in the unseen panel (no number)",
    broken_by=("reverse_in_training",),
    requires=("fit", "tied-fit"),
)
# A row's maximum falls on the diagonal by chance in one row of n_val: with flat rows
# the count over a seed's 15 rows is binomial (a single seed reaches three rows, three
# times chance, about once in 14), so the claim is on the rows of all seeds together,
# and its bound is three times chance: at 2 times, a fresh set of 5 seeds would fail
# about once in 40 and CI's 2 seeds about once in 7 by chance alone. The stored runs
# below, 10 seeds of 60 rows, test twice chance.
unseen_hit = stats["untied, after relation", "val_unseen"][1]
ledger.check(
    "unseen-top1-chance",
    "the unseen diagonal is the row maximum near chance: in "
    "less than three times the chance share of rows, over the rows of all seeds (in "
    "units of chance)",
    unseen_hit.mean() * n_val,
    below=3.0,
    print_tol=1.0,
    kind="paper",
    negative=True,
    source="Figure 2",
    paper="no diagonal in the unseen panel (no number)",
    paper_value=1.0,
    broken_by=("reverse_in_training",),
    requires=("fit",),
)
ledger.glue("unseen_hit_seed_max", unseen_hit.max() * n_val, digits=0)
ledger.check(
    "tied-unseen-leak",
    "with the output tied to the input embeddings the "
    "unseen diagonal is the row maximum in more than twice the chance share of rows "
    "(median seed, in units of chance): the tie leaks the reverse direction",
    np.median(stats["tied, after relation", "val_unseen"][1]) * n_val,
    above=2.0,
    print_tol=5.0,  # the median tied seed's share moved by 4 units over fresh seeds
    kind="ours",
    # a leak needs no fit to be measured: an untrained tied model must show none
    broken_by=("no_training",),
)
# Spread of the logits within a row: the untied unseen rows are flat, because their
# answers never occur as answers in training and their output rows share the same
# updates.
spread = {
    (name, p): res.heatmaps["relation"][p].std(axis=2).mean(axis=1)
    for name, res in [("untied", main), ("tied", tied)]
    for p in ["val_seen", "val_unseen"]
}
for (name, p), v in spread.items():
    print(f"{name} {p}: mean within-row std of the logits {approx(np.median(v), 1.0)}")
    ledger.glue(f"spread_{name}_{p}", np.median(v), print_tol=1.0)
ledger.check(
    "unseen-flat",
    "the unseen rows are flat: within-row spread of the "
    "logits below 0.1 of the seen rows' (untied output, per seed)",
    spread["untied", "val_unseen"] / spread["untied", "val_seen"],
    below=0.1,
    print_tol=0.03,
    kind="ours",
    broken_by=("reverse_in_training",),
    requires=("fit",),
)
ledger.check(
    "tied-heldout-not-learnt",
    "with the output tied to the input embeddings the "
    "held-out answer is still not learnt: the median seed's MRR is below 2 times "
    "chance (MRR over chance)",
    np.median(tied.heldout_mrr / tied.chance_mrr),
    below=2.0,
    print_tol=TOL_MRR_MEDIAN,
    kind="ours",
    negative=True,
    broken_by=("reverse_in_training",),
    requires=("tied-fit",),
)
ledger.glue("tied_mrr_min", tied.heldout_mrr.min(), print_tol=TOL_MRR_RATIO * 0.09)
ledger.glue("tied_mrr_max", tied.heldout_mrr.max(), print_tol=TOL_MRR_RATIO * 0.09)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Logits of answer $j$ after the input of sentence $i$ (seed SEED, read after the relation token), for the main model with an untied output layer (top) and for the same model with its output tied to the input embeddings (bottom, as GPT-2). Training pairs forward and backward, then the one-direction pairs in their seen and unseen (held-out) direction. Scale as in the NLL figure; the paper's Figure 2 uses the default 24-layer model and reads the logits with the relation token removed.", "name": "fig-multilayer-heatmaps"}}
titles = ["train forward", "train backward", "validation, seen", "validation, unseen"]
fig, axes = plt.subplots(2, 4, figsize=(13, 6.4))
for row, (name, res) in enumerate([("untied", main), ("tied", tied)]):
    maps = [res.heatmaps["relation"][p][0] for p in PANELS]
    vmax = max(float(np.abs(m).max()) for m in maps)
    for ax, m, title in zip(axes[row], maps, titles):
        plot.heatmap(
            ax,
            m,
            f"{name}: {title}",
            "answer $j$",
            "input $i$",
            vmin=-vmax,
            vmax=vmax,
            cmap="vlag",
            cbar=ax is axes[row, -1],
        )
plot.savefig(fig, "fig-multilayer-heatmaps")
plt.show()

# %% [markdown]
# ## 3. The rebuttal variants
#
# Each variant changes one thing in the main configuration and gets the same signature check:
# training sentences fitted (median seed below 0.2) and the held-out answer not learnt (MRR
# below four times chance among its type, for every seed; three seeds a variant are too few
# to call a variant "at chance", which needs five). Entities of two tokens double
# the pairs (100, the paper's `min(alphabet^2, 2 alphabet)`), so that run gets twice the
# steps (the budget is in epochs); NLL is per answer token, so $\log|V|$ stays the uniform
# level.

# %%
variant_base = replace(base, n_seeds=VARIANT_SEEDS)
variants = {"main (2 layers, d = 64)": main}
for name, change in ml.VARIANTS.items():
    if change:
        cfg = replace(variant_base, **change)
        variants[name] = ml.run(replace(cfg, steps=ml.steps_for(cfg, EPOCHS)))
variants["tied output"] = tied

# %% tags=["hide-input"]
fit_med = np.array([np.median(r.train_nll[-1]) for r in variants.values()])
worst = np.array([np.max(r.heldout_mrr / r.chance_mrr) for r in variants.values()])
VARIANT_KEYS = [
    "main",
    "one_layer",
    "small_width",
    "four_layers",
    "two_token",
    "pos_none",
    "pos_rotary",
    "tied",
]
for (name, res), key in zip(variants.items(), VARIANT_KEYS):
    tr, va = res.train_nll[-1], res.val_nll[-1]
    print(
        f"{name}: {res.n_params} parameters, {res.config.steps} steps; training NLL "
        f"median {approx(np.median(tr), TOL_VAR_TRAIN)}; "
        "held-out NLL median over log|V| "
        f"{approx(np.median(va) / res.log_vocab, TOL_VAR_NLL_RATIO)}; held-out MRR max "
        f"{approx(res.heldout_mrr.max(), TOL_VAR_MRR_RATIO * 0.09)} "
        f"(chance {res.chance_mrr.mean():.3f})"
    )
    ledger.glue(
        f"variant_{key}_mrr_max",
        res.heldout_mrr.max(),
        print_tol=TOL_VAR_MRR_RATIO * 0.09,
    )
    ledger.glue(f"variant_{key}_chance", res.chance_mrr.mean(), digits=3)
    ledger.glue(
        f"variant_{key}_nll_ratio",
        np.median(va) / res.log_vocab,
        print_tol=TOL_VAR_NLL_RATIO,
    )
ledger.precondition(
    "variants-fit",
    "every variant fits its training sentences (median "
    "seed's final answer NLL, per variant)",
    fit_med,
    below=VAR_FIT_BELOW,
    print_tol=TOL_VAR_TRAIN,
)
ledger.check(
    "variants-rank-chance",
    "under every variant the held-out answer is not "
    "learnt: largest MRR over chance among seeds below 4, per variant (an answer "
    "ranked first: 1 / chance)",
    worst,
    below=4.0,
    print_tol=TOL_VAR_MRR_RATIO,
    kind="paper",
    negative=True,
    source="rebuttal",
    paper="the curse persists in every variant: no better than chance (no number)",
    paper_value=1.0,
    # no factor: seeds move by about chance across machines, so "within 2 times
    # chance" cannot be decided stably; the ratio is shown, the verdict is in direction
    broken_by=("reverse_in_training",),
    requires=("variants-fit",),
)
ledger.glue("variants_train_median_max", fit_med.max(), print_tol=TOL_VAR_TRAIN)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The signature under each variant: training (blue) and held-out (orange) NLL against epochs, median and min-max band over seeds (3 seeds per variant, 5 for the main run and the tied one), with $\\log|V|$ dotted. Main run: 2 layers, 4 heads, d = 64, vocabulary 200 + 2. The paper's rebuttal runs use 1 layer with d = 20 or 768 and 24 layers with d = 20, vocabulary 800 + 2.", "name": "fig-multilayer-variants"}}
fig, axes = plt.subplots(2, 4, figsize=(13, 5.6), sharey=True)
for ax, (name, res) in zip(axes.flat, variants.items()):
    plot.seed_band(ax, res.epochs, res.train_nll, color="C0")
    plot.seed_band(ax, res.epochs, res.val_nll, color="C1")
    ax.axhline(log_v, color="k", ls=":", lw=1)
    ax.set_title(name, fontsize="small")
    ax.set_xlabel("epoch")
for ax in axes[:, 0]:
    ax.set_ylabel("NLL (nats)")
plot.savefig(fig, "fig-multilayer-variants")
plt.show()

# %% [markdown]
# ## 4. Are the learned embeddings nearly orthogonal?
#
# The theory assumes nearly orthogonal embeddings; the rebuttal shows cosine-similarity
# heatmaps of trained embeddings. We take the learned embeddings of the 100 entity tokens the
# data uses (A's, then B's) and compare the off-diagonal $|\cos|$ with that of i.i.d. Gaussian
# vectors of the same number and dimension, whose mean $|\cos|$ is close to $\sqrt{2/(\pi d)}$.
# The initial embeddings are such Gaussian vectors, so an untrained model sits at the
# Gaussian level.

# %% tags=["hide-input"]
small = variants["small width (d = 20, 4 heads of 5)"]
cos_rows, cos_ratio = {}, {}
for name, res, d in [
    ("learned, d = 64", main, base.d_model),
    ("learned, d = 20", small, 20),
]:
    k = res.embedding_cos.shape[-1]
    gauss = ml.gaussian_cosine(res.config.n_seeds, k, d, SEED)
    cos_rows[name] = res.embedding_cos, gauss
    m, mx = ml.off_diagonal_abs(res.embedding_cos)
    gm, gmx = ml.off_diagonal_abs(gauss)
    cos_ratio[d] = m / gm
    print(
        f"{name}: mean |cos| {approx(m.mean(), 0.03)}, "
        f"max |cos| {approx(mx.mean(), 0.1)}; "
        f"Gaussian: mean {gm.mean():.3f} (sqrt(2/(pi d)) = "
        f"{math.sqrt(2 / (math.pi * d)):.3f}), max {gmx.mean():.2f}"
    )
    for key, v, tol in [("mean", m.mean(), 0.03), ("max", mx.mean(), 0.1)]:
        ledger.glue(f"cos_{key}_d{d}", v, print_tol=tol)
    ledger.glue(f"gauss_mean_d{d}", gm.mean(), digits=3)
    ledger.glue(f"gauss_max_d{d}", gmx.mean(), digits=2)
g64, _ = ml.off_diagonal_abs(cos_rows["learned, d = 64"][1])
ledger.sanity(
    "gaussian-baseline",
    "the Gaussian baseline's mean |cos| is sqrt(2/(pi d)) (d = 64; distance, per seed)",
    np.abs(g64 - math.sqrt(2 / (math.pi * 64))),
    below=0.01,
    print_tol=0.003,  # a sampling error: fresh seeds move it by 0.002
)
ledger.check(
    "embeddings-less-orthogonal",
    "at d = 64 the learned entity embeddings are "
    "less orthogonal than Gaussian ones: mean off-diagonal |cos| over the "
    "Gaussian's above 1.5 (per seed)",
    cos_ratio[64],
    above=1.5,
    print_tol=0.3,  # untied: fresh seeds moved it by 0.22
    kind="paper",
    source="rebuttal",
    paper="learned embeddings stay nearly orthogonal (cosine heatmaps, d = 768; "
    "no number)",
    contradicts=True,
    broken_by=("no_training", "frozen_embeddings"),
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Cosine similarity between the embeddings of the 100 entity tokens (A's, then B's; seed SEED). Left: learned, d = 64 (main run). Middle: learned, d = 20. Right: i.i.d. Gaussian vectors, d = 64. The paper's heatmaps use 1 layer with d = 768 and d = 20 and 24 layers with d = 20, vocabulary 800 + 2.", "name": "fig-multilayer-embeddings"}}
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
for ax, (title, mat) in zip(
    axes,
    [
        ("learned, d = 64", main.embedding_cos[0]),
        ("learned, d = 20", small.embedding_cos[0]),
        ("Gaussian, d = 64", cos_rows["learned, d = 64"][1][0]),
    ],
):
    plot.heatmap(
        ax,
        mat,
        title,
        "token",
        "token",
        vmin=-1,
        vmax=1,
        cmap="vlag",
        cbar=ax is axes[-1],
    )
plot.savefig(fig, "fig-multilayer-embeddings")
plt.show()

# %% [markdown]
# ## 5. Control: the reverse fact in the context
#
# Sentences $[A, \to, B, \leftrightarrow, B, \leftarrow, A]$ with the loss on the last token
# (the paper's Appendix E.2.3). `VOCAB // 4` A's (50 here; the paper: 100 at vocabulary 400)
# and 10 B's; for each A, 7 of its 10 B's are in training and 3 are held out, so 350 training
# and 150 held-out sentences here; vocabulary 200 + 3. A held-out pair never occurs in
# training, but its answer is the first token of the context. The budget is in epochs, so it
# grows with the number of A's.

# %%
icl_cfg = replace(base, task="in_context", n_x=VOCAB // 4, reverse_in_training=False)
icl = ml.run(replace(icl_cfg, steps=ml.steps_for(icl_cfg, ICL_EPOCHS)))

# %% tags=["hide-input"]
print(
    f"log |V| = {icl.log_vocab:.2f}; {icl.config.n_train} training sentences, "
    f"{icl.config.steps} steps"
)
ledger.check(
    "in-context-learnt",
    "with the reverse fact in the context the held-out "
    "answer is learnt: held-out NLL below 0.1 (per seed)",
    icl.val_nll[-1],
    below=0.1,
    print_tol=TOL_TRAIN,
    kind="paper",
    source="Appendix E.2.3",
    paper="with the reverse fact in context, validation NLL falls to 0 (no number)",
    broken_by=("no_training", "shuffled_labels"),
)
ledger.glue("icl_val_min", icl.val_nll[-1].min(), print_tol=TOL_TRAIN)
ledger.glue("icl_val_max", icl.val_nll[-1].max(), print_tol=TOL_TRAIN)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "In-context control: training and held-out NLL of the final token of $[A, \\to, B, \\leftrightarrow, B, \\leftarrow, A]$ (2 layers, 4 heads, d = 64, 50 A's and 10 B's, vocabulary 200 + 3, 200 AdamW steps, 5 seeds). The paper's run uses 100 A's, 10 B's, vocabulary 400 + 3 and the 24-layer model.", "name": "fig-multilayer-in-context"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, icl.epochs, icl.train_nll, label="training sentences")
plot.seed_band(ax, icl.epochs, icl.val_nll, label="held-out pairs (answer in context)")
ax.axhline(icl.log_vocab, color="k", ls=":", lw=1, label=r"$\log|V|$")
ax.set(xlabel="epoch", ylabel="NLL of the last token (nats)")
ax.legend()
plot.savefig(fig, "fig-multilayer-in-context")
plt.show()

# %% [markdown]
# ## 6. At the paper's vocabulary, length and widths: stored runs
#
# Runs too long for this notebook, made by commands and stored in `data/`:
#
# - the paper's variants (its Table 3 and rebuttal figures) on the book's model with its
#   output tied to the input embeddings (the main configuration before the untied head
#   replaced it; the untied head is one of the settings), at the
#   paper's vocabulary of 800 + 2 with 10 seeds each, for 300 epochs
#   (`scripts/part1-variants`, on a CPU; `data/sweeps/multi_layer`): vocabulary 200, 400,
#   800 and 1,600; 1, 2, 4 and 8 heads; frozen embeddings; an untied output; entities of
#   three tokens; 24 layers at $d=20$; and the main model for the paper's 3,000 epochs
#   (its Figure 1 length);
# - the paper's own widths, on a GPU (`data/gpu_runs`, `scripts/gpu_runs.py`): one layer at
#   $d=768$ with 12 heads for 3,000 epochs (10 seeds, untied output as in the paper's code;
#   the tied one stopped at 97% of its steps), and the paper's 24-layer, $d=768$ model
#   (3 seeds), stopped by the GPU budget at 1,250 of its 3,000 epochs.
#
# The held-out signature is read as above: the held-out answer's MRR over chance among its
# type, and how often the held-out (unseen) direction's logit is the row maximum. Under the
# control `reverse_in_training` the stored sweep reads its stored leak run (vocabulary 800,
# the held-out direction trained too); the GPU runs, which cannot be retrained here, read
# the direction of the same pairs that was trained. Under `no_training` the orthogonality
# of the $d=768$ embeddings is read at their initial weights.

# %%
from pathlib import Path

from revlib import records

log_v_800 = math.log(802)
STORED_DIR = Path("../../data/sweeps/multi_layer")
GPU_DIR = Path("../../data/gpu_runs")
# the stored runs' configuration as a control changes it
stored_cfg = ledger.config(ml.Config(vocab=800, seed=SEED, n_seeds=10))
SETTING = (
    "vocab",
    "n_head",
    "n_layer",
    "d_model",
    "word_size",
    "tied",
    "freeze_embeddings",
    "steps",
)
sweep = records.control_runs(
    records.load(STORED_DIR, curves=True),
    "reverse_in_training",
    stored_cfg.reverse_in_training,
    by=SETTING,
)
MAIN800 = dict(
    vocab=800,
    n_head=4,
    n_layer=2,
    d_model=64,
    word_size=1,
    tied=True,
    freeze_embeddings=False,
    steps=1594,
)


def setting_name(row) -> str:
    """The one thing a stored setting changes in the 800-token main model."""
    diff = [k for k in SETTING if row[k] != MAIN800[k]]
    names = {
        "vocab": f"vocabulary {row['vocab']}",
        "n_head": f"{row['n_head']} head" + "s" * (row["n_head"] > 1),
        "word_size": f"{row['word_size']}-token entities",
        "tied": "untied output",
        "freeze_embeddings": "frozen embeddings",
        # the steps follow the data (300 epochs); only the long run differs in epochs
        "steps": "3,000 epochs" if row["steps"] == 15938 else None,
        "n_layer": "24 layers, d = 20",
        "d_model": None,
    }
    return ", ".join(n for n in (names[k] for k in diff) if n) or "main, vocabulary 800"


sweep["setting"] = sweep.apply(setting_name, axis=1)
panel = ml.heldout_panel(stored_cfg)
groups = {}
# each row's own entry of its record's extras (a batched record holds every seed's)
sweep["mrr_x"] = records.extra_of(sweep, "heldout_mrr") / records.extra_of(
    sweep, "chance_mrr"
)
sweep["hit"] = records.extra_of(sweep, "summary", f"relation.{panel}.diag_hit")
for name, rows in sweep.groupby("setting", sort=False):
    groups[name] = dict(
        n=len(rows),
        train=np.median(rows["train_nll"]),
        val=np.median(rows["val_nll"]) / math.log(rows["vocab"].iloc[0] + 2),
        mrr=np.median(rows["mrr_x"]),
        mrr_max=np.max(rows["mrr_x"]),
        hit=np.median(rows["hit"]),
        steps=int(rows["steps"].iloc[0]),
    )
for name, g in groups.items():
    print(
        f"{name:32s} {g['n']:2d} seeds, {g['steps']:5d} steps: training NLL "
        f"{approx(g['train'], TOL_VAR_TRAIN)}, held-out NLL / log|V| "
        f"{approx(g['val'], TOL_VAR_NLL_RATIO)}, held-out MRR / chance "
        f"{approx(g['mrr'], 1.0)} (largest seed {approx(g['mrr_max'], 3.0)}), "
        f"unseen logit the row maximum {approx(g['hit'], 0.1)} (median seeds)"
    )
ledger.precondition(
    "stored-variants-fit",
    "every stored variant fits its training sentences (median seed's "
    "final answer NLL, per setting)",
    [g["train"] for g in groups.values()],
    below=VAR_FIT_BELOW,
    print_tol=TOL_VAR_TRAIN,
)
# One claim per variant of the paper (its rows on "What reproduced"), each over the
# settings it varies; each setting's stored control (the held-out direction trained
# too) replaces it under reverse_in_training.
VARIANT_CLAIMS = {
    "stored-vocab-rank-chance": (
        ["vocabulary 200", "vocabulary 400", "main, vocabulary 800", "vocabulary 1600"],
        "the vocabulary sizes 200, 400, 800 and 1,600",
        "Table 3 (vocabulary size), appendix p. 29",
    ),
    "stored-heads-rank-chance": (
        ["1 head", "2 heads", "main, vocabulary 800", "8 heads"],
        "1, 2, 4 and 8 heads",
        "Table 3 (number of heads)",
    ),
    "stored-frozen-rank-chance": (
        ["untied output, frozen embeddings"],
        "frozen token and position embeddings",
        "Table 3 (frozen embeddings)",
    ),
    "stored-word3-rank-chance": (
        ["3-token entities"],
        "entities of three tokens",
        "Table 3 (entity length), appendix p. 30",
    ),
    "stored-24l20-rank-chance": (
        ["24 layers, d = 20"],
        "24 layers at d = 20",
        "rebuttal; appendix p. 31 (c)",
    ),
    "stored-length-rank-chance": (
        ["main, vocabulary 800", "3,000 epochs"],
        "300 and 3,000 epochs (the paper's Figure 1 length)",
        "Figure 1",
    ),
}
for cid, (names, what, where) in VARIANT_CLAIMS.items():
    ledger.check(
        cid,
        f"with {what} (vocabulary 800 + 2, 10 seeds each), the held-out answer is "
        "not learnt: the median seed's MRR over chance is below 5, per setting (with "
        "the held-out direction trained it is about 34)",
        [groups[n]["mrr"] for n in names],
        below=5.0,
        print_tol=1.0,
        kind="paper",
        negative=True,
        source=where,
        paper="the curse persists (no number)",
        broken_by=("reverse_in_training",),
        requires=("stored-variants-fit",),
    )
ledger.check(
    "stored-untied-rank-chance",
    "with an untied output (the paper's code's, in effect; 10 seeds each, vocabulary "
    "800 and 1,600), the held-out answer ranks at chance or below among its type: "
    "every seed's MRR over chance below 2",
    sweep.loc[
        sweep["setting"].isin(["untied output", "vocabulary 1600, untied output"]),
        "mrr_x",
    ],
    below=2.0,
    print_tol=1.0,
    kind="ours",
    negative=True,
    broken_by=("reverse_in_training",),
    requires=("stored-variants-fit",),
)
tied_settings = [n for n in groups if "untied" not in n]
ledger.glue(
    "stored_worst_mrr", max(groups[n]["mrr"] for n in tied_settings), print_tol=1.0
)
ledger.glue(
    "stored_max_seed_mrr",
    max(groups[n]["mrr_max"] for n in tied_settings),
    print_tol=3.0,
)
ledger.glue("stored_1600_mrr", groups["vocabulary 1600"]["mrr"], print_tol=1.0)
ledger.glue("stored_1600_max", groups["vocabulary 1600"]["mrr_max"], print_tol=3.0)
ledger.glue("stored_800_max", groups["main, vocabulary 800"]["mrr_max"], print_tol=3.0)
# the unseen panel's diagonal (Figure 2): the share of rows whose maximum is on it
ledger.glue("stored_3000_hit", groups["3,000 epochs"]["hit"], print_tol=0.1)
ledger.glue("stored_800_hit", groups["main, vocabulary 800"]["hit"], print_tol=0.1)
ledger.glue("stored_untied_hit", groups["untied output"]["hit"], print_tol=0.1)
untied_800 = sweep.loc[sweep["setting"] == "untied output", "hit"]
# the one-direction pairs: the unseen panel's rows (chance: one over their number)
pairs_800 = ml.n_pairs(800, 1)
panel_rows = pairs_800 - int(round(stored_cfg.split_ratio * pairs_800))
print(f"vocabulary 800: {panel_rows} unseen rows a seed, chance {1 / panel_rows:.3f}")
ledger.check(
    "stored-untied-top1-chance",
    "with an untied output (vocabulary 800 + 2, 10 seeds, 60 "
    "unseen rows each), the unseen diagonal is the row maximum at chance: in at most "
    "twice the chance share of rows, over the rows of all seeds (in units of chance)",
    untied_800.mean() * panel_rows,
    below=2.0,
    print_tol=0.5,
    kind="paper",
    negative=True,
    source="Figure 2",
    paper="no diagonal in the unseen panel (no number)",
    paper_value=1.0,
    broken_by=("reverse_in_training",),
    requires=("stored-variants-fit",),
)
ledger.glue(
    "stored_untied_max",
    max(groups[n]["mrr_max"] for n in groups if n not in tied_settings),
    print_tol=0.3,
)

# %% tags=["hide-input"]
big = records.load(GPU_DIR / "rev_1l768_untied.json", curves=True)
big_cfg = ledger.config(records.config_of(big.iloc[0], n_seeds=10))
summ = big["extras"].iloc[0]["summary"]
big_hit = np.array(summ[f"relation.{ml.heldout_panel(big_cfg)}.diag_hit"])
n_pairs_val = 60
big_ratio = ml.orthogonality_ratio(summ, big_cfg)
big_mrr = np.array(big["extras"].iloc[0]["heldout_mrr"]) / np.array(
    big["extras"].iloc[0]["chance_mrr"]
)
print(
    f"one layer, d = 768 (untied, 10 seeds, {big_cfg.steps} steps, "
    f"{big['seconds'].iloc[0]:.0f} s on a GPU): training NLL median "
    f"{approx(np.median(big['train_nll']), TOL_VAR_TRAIN)}; held-out NLL / log|V| "
    f"{approx(np.median(big['val_nll']) / log_v_800, TOL_VAR_NLL_RATIO)}; held-out "
    f"MRR / chance {approx(np.median(big_mrr), 1.0)}"
)
print(
    f"  unseen logit the row maximum: median {approx(np.median(big_hit), 0.05)} "
    f"(chance 1/{n_pairs_val} = {1 / n_pairs_val:.3f}); embeddings' mean |cos| over "
    f"Gaussian {approx(big_ratio, 1.5)}"
)
ledger.precondition(
    "d768-fit",
    "the one-layer d = 768 model fits its training sentences (median seed)",
    np.median(big["train_nll"]),
    below=VAR_FIT_BELOW,
    print_tol=TOL_VAR_TRAIN,
)
ledger.check(
    "d768-unseen-at-chance",
    "one layer at d = 768: the held-out direction's logit is its row's "
    "maximum in at most twice the chance share of rows, on every seed (in units of "
    "chance)",
    big_hit * n_pairs_val,
    below=2.0,
    print_tol=0.5,
    kind="paper",
    negative=True,
    source="rebuttal; appendix p. 31 (b)",
    paper="1 layer, d = 768: the curse persists (no number)",
    broken_by=("reverse_in_training",),
    requires=("d768-fit",),
)
ledger.check(
    "d768-embeddings-less-orthogonal",
    "at the paper's d = 768 the learned entity embeddings are less "
    "orthogonal than Gaussian ones: mean off-diagonal |cos| over the "
    "Gaussian's above 3 (per seed)",
    big_ratio,
    above=3.0,
    print_tol=1.5,
    kind="paper",
    source="rebuttal; appendix p. 31 (d)",
    paper="learned embeddings stay nearly orthogonal (cosine heatmaps, "
    "d = 768; no number)",
    contradicts=True,
    broken_by=("no_training", "frozen_embeddings"),
)
ledger.glue("d768_ratio", big_ratio, print_tol=1.5)
# this GPU record names the two means embedding_ and gaussian_offdiag_abs_mean
ledger.glue("d768_cos", np.array(summ["embedding_offdiag_abs_mean"]), print_tol=0.03)
ledger.glue("d768_gauss", np.mean(summ["gaussian_offdiag_abs_mean"]), digits=3)
ledger.glue("d768_hit", np.median(big_hit), print_tol=0.05)
ledger.glue(
    "d768_val_ratio", np.median(big["val_nll"]) / log_v_800, print_tol=TOL_VAR_NLL_RATIO
)
ledger.glue("d768_mrr", np.median(big_mrr), print_tol=1.0)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Stored runs at the paper's vocabulary (800 + 2): training (blue) and held-out (orange) NLL against epochs, median and min-max band over seeds, $\\log|V|$ dotted. Top left: the book's model for the paper's 3,000 epochs (10 seeds, CPU; the paper's Figure 1 length). Top right: one layer at d = 768, untied (10 seeds, GPU). Bottom left: the same, tied (10 seeds, GPU, stopped at 97% of its steps). Bottom right: the paper's own 24-layer, d = 768 model (3 seeds, GPU, stopped at 1,250 of 3,000 epochs).", "name": "fig-multilayer-paper-scale"}}
fig, axes = plt.subplots(2, 2, figsize=(12, 6.4), sharey=True)
long_rows = sweep[sweep["setting"] == "3,000 epochs"]
panels = [("2 layers, d = 64, 3,000 epochs (CPU)", long_rows)]
for file, title in (
    ("rev_1l768_untied", "1 layer, d = 768, untied (GPU)"),
    ("rev_1l768_tied", "1 layer, d = 768, tied (GPU, stopped)"),
    ("rev_24l768", "24 layers, d = 768 (GPU, stopped)"),
):
    panels.append((title, records.load(GPU_DIR / f"{file}.json", curves=True)))
for ax, (title, rows) in zip(axes.flat, panels):
    steps = rows["curve.steps"].iloc[0]
    epochs = steps * 64 / 340
    plot.seed_band(ax, epochs, np.stack(rows["curve.train_nll"]).T, color="C0")
    plot.seed_band(ax, epochs, np.stack(rows["curve.val_nll"]).T, color="C1")
    ax.axhline(log_v_800, color="k", ls=":", lw=1)
    ax.set_title(title, fontsize="small")
    ax.set(xlabel="epoch", xlim=(0, 3000))
for ax in axes[:, 0]:
    ax.set_ylabel("NLL (nats)")
plot.savefig(fig, "fig-multilayer-paper-scale")
plt.show()

# %%
ledger.summary()
