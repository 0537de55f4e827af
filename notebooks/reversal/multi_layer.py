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

# %% tags=["parameters"]
SEED = 0            # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 4         # seeds of the main configuration
VARIANT_SEEDS = 3   # seeds of each variant (fewer, to fit the time budget)
VOCAB = 200         # entity ids; model vocabulary VOCAB + 2 (the paper: 800)
STEPS = 300         # AdamW steps of batch 64 (lr 0.01, as in the paper's code)
TWO_TOKEN_STEPS = 600  # two-token entities: twice the pairs, so twice the steps
ICL_STEPS = 200     # in-context control

# %%
from revlib import repro

repro.setup(SEED)

import math
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.experiments import multi_layer as ml
from revlib.report import approx

# Tolerances of the printed numbers: the largest move across seeds and CPU kernel paths
# (scripts/check-seeds). Held-out NLLs move by several nats between seeds.
TOL_TRAIN, TOL_HELD, TOL_MRR, TOL_STAT = 0.01, 10.0, 0.1, 2.0

plot.set_theme()
base = ml.Config(vocab=VOCAB, seed=SEED, n_seeds=N_SEEDS, steps=STEPS)
print(f"vocabulary {base.model_vocab} (log |V| = {math.log(base.model_vocab):.3f}), "
      f"{base.n_train} training sentences, seeds {base.seeds}")

# %% [markdown]
# ## 1. Training NLL falls to zero; the held-out answer ranks at chance
#
# Main configuration: 2 layers, 4 heads, $d=64$, learned absolute positions, tied input and
# output embeddings (as GPT-2), AdamW with lr 0.01, weight decay 0.01 (the value the paper's
# code actually applies) and batches of 64. The loss is on the answer token only. An "epoch"
# below is the number of training sentences seen divided by the training-set size.
#
# The paper reads the curse off the held-out NLL, which stays above $\log|V|$. A mean NLL can
# sit above $\log|V|$ while the right answer still ranks first, so we also rank the held-out
# answer among the entities of its own type (all A's for "$B\leftarrow$", all B's for
# "$A\to$"): chance is a uniform guess among them, and a learnt fact would rank first.

# %%
main = ml.run(base)
log_v = main.log_vocab
train_end, val_end = main.train_nll[-1], main.val_nll[-1]
print(f"parameters per model: {main.n_params}")
print(f"final training NLL: {approx(train_end, TOL_TRAIN)}")
print(f"final held-out NLL: {approx(val_end, TOL_HELD)} (log |V| = {log_v:.2f})")
print(f"MRR of the held-out answer among the entities of its type: "
      f"{approx(main.heldout_mrr, TOL_MRR)} (chance {main.chance_mrr.mean():.3f})")
assert np.all(train_end < 0.1), train_end
# the held-out answer ranks at chance among the entities of its type (a learnt one ranks first)
assert np.all(main.heldout_mrr < 3 * main.chance_mrr), main.heldout_mrr

# %% mystnb={"figure": {"caption": "Training and held-out NLL of the answer token against epochs (2 layers, 4 heads, d = 64, vocabulary 200 + 2, 50 pairs, 300 AdamW steps, 4 seeds: median and min-max band). Dotted: $\\log|V|$, a uniform guess. The paper's Figure 1 uses 24 layers, d = 768, vocabulary 800 + 2, 3000 epochs and 10 seeds.", "name": "fig-multilayer-nll"}}
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
# Because the paper's GPT-2 ties its input and output embeddings, so does our main model; we
# also train the same model with an untied output layer.

# %%
untied = ml.run(replace(base, tied=False))
PANELS = ["train_forward", "train_backward", "val_seen", "val_unseen"]
stats = {}
for label, res, readout in [("tied, after relation", main, "relation"),
                            ("tied, entity only (paper)", main, "entity"),
                            ("untied, after relation", untied, "relation")]:
    print(label)
    for p in PANELS:
        contrast, hit = ml.diagonal_stats(res.heatmaps[readout][p])
        stats[label, p] = contrast, hit
        print(f"  {p}: diagonal - off-diagonal {approx(np.median(contrast), TOL_STAT)}, "
              f"diagonal is row max {approx(np.median(hit), 0.2)} (median over seeds)")
n_val = main.heatmaps["relation"]["val_unseen"].shape[1]
print(f"untied: final training NLL max {approx(untied.train_nll[-1].max(), TOL_TRAIN)}, "
      f"held-out NLL min {approx(untied.val_nll[-1].min(), TOL_HELD)}, held-out MRR among its type "
      f"{approx(untied.heldout_mrr, TOL_MRR)}; panel size {n_val}: a row maximum on the diagonal by chance in {1 / n_val:.2f} of rows")
for label in ["tied, after relation", "untied, after relation"]:
    for p in PANELS[:3]:
        assert np.all(stats[label, p][1] >= 0.9), (label, p)
    # the unseen diagonal is weaker than the seen one for every seed
    assert np.all(stats[label, "val_unseen"][0] < 0.6 * stats[label, "val_seen"][0]), label
assert np.all(np.abs(stats["untied, after relation", "val_unseen"][0]) < 1.0)
assert np.all(stats["untied, after relation", "val_unseen"][1] < 0.3)
assert np.all(untied.train_nll[-1] < 0.1) and np.all(untied.heldout_mrr < 3 * untied.chance_mrr)
# Spread of the logits within a row: the untied unseen rows are flat, because their answers
# never occur as answers in training and their output rows share the same updates.
spread = {(name, p): res.heatmaps["relation"][p].std(axis=2).mean(axis=1)
          for name, res in [("tied", main), ("untied", untied)] for p in ["val_seen", "val_unseen"]}
for (name, p), v in spread.items():
    print(f"{name} {p}: mean within-row std of the logits {approx(np.median(v), 1.0)}")
assert np.all(spread["untied", "val_unseen"] < 0.1 * spread["untied", "val_seen"])

# %% mystnb={"figure": {"caption": "Logits of answer $j$ after the input of sentence $i$ (seed SEED, read after the relation token), for the model with tied embeddings (top, as GPT-2) and with an untied output layer (bottom). Training pairs forward and backward, then the one-direction pairs in their seen and unseen (held-out) direction. Scale as in the NLL figure; the paper's Figure 2 uses the default 24-layer model and reads the logits with the relation token removed.", "name": "fig-multilayer-heatmaps"}}
titles = ["train forward", "train backward", "validation, seen", "validation, unseen"]
fig, axes = plt.subplots(2, 4, figsize=(13, 6.4))
for row, (name, res) in enumerate([("tied", main), ("untied", untied)]):
    maps = [res.heatmaps["relation"][p][0] for p in PANELS]
    vmax = max(float(np.abs(m).max()) for m in maps)
    for ax, m, title in zip(axes[row], maps, titles):
        plot.heatmap(ax, m, f"{name}: {title}", "answer $j$", "input $i$",
                     vmin=-vmax, vmax=vmax, cmap="vlag", cbar=ax is axes[row, -1])
plot.savefig(fig, "fig-multilayer-heatmaps")
plt.show()

# %% [markdown]
# ## 3. The rebuttal variants
#
# Each variant changes one thing in the main configuration and gets the same signature check:
# training sentences fitted (median seed below 0.1, every seed below 1) and the held-out answer
# ranked at chance among its type (MRR below three times chance) for every seed. Entities of two
# tokens double the pairs (100, the paper's `min(alphabet^2, 2 alphabet)`), so that run gets
# twice the steps; NLL is per answer token, so $\log|V|$ stays the uniform level.

# %%
variant_base = replace(base, n_seeds=VARIANT_SEEDS)
variants = {"main (2 layers, d = 64)": main}
for name, change in ml.VARIANTS.items():
    if change:
        steps = TWO_TOKEN_STEPS if change.get("word_size", 1) > 1 else STEPS
        variants[name] = ml.run(replace(variant_base, steps=steps, **change))
variants["untied output"] = untied
held = {}
for name, res in variants.items():
    tr, va = res.train_nll[-1], res.val_nll[-1]
    held[name] = bool(np.median(tr) < 0.1 and np.all(res.heldout_mrr < 3 * res.chance_mrr))
    # the worst seed's training NLL gets the tolerance of the assert below (< 1): on the
    # simulated other machine one seed of a variant ended at 0.24 where the stored run has 0.00
    print(f"{name}: {res.n_params} parameters; training NLL median {approx(np.median(tr), 0.1)}, "
          f"max {approx(tr.max(), 1.0)}; held-out "
          f"NLL min {approx(va.min(), TOL_HELD)}, median {approx(np.median(va), TOL_HELD)}; held-out "
          f"MRR max {approx(res.heldout_mrr.max(), TOL_MRR)} (chance {res.chance_mrr.mean():.3f}); "
          f"{'held' if held[name] else 'NOT held'}")
for name, res in variants.items():
    # fitted: the median seed below 0.1, every seed well below the uniform log|V| (a deeper
    # model can need more than 300 steps on some seeds)
    assert np.median(res.train_nll[-1]) < 0.1 and np.all(res.train_nll[-1] < 1.0), name
    assert np.all(res.heldout_mrr < 3 * res.chance_mrr), (name, res.heldout_mrr)

# %% mystnb={"figure": {"caption": "The signature under each variant: training (blue) and held-out (orange) NLL against epochs, median and min-max band over seeds (3 seeds per variant, 4 for the main run and the untied one), with $\\log|V|$ dotted. Main run: 2 layers, 4 heads, d = 64, vocabulary 200 + 2. The paper's rebuttal runs use 1 layer with d = 20 or 768 and 24 layers with d = 20, vocabulary 800 + 2.", "name": "fig-multilayer-variants"}}
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

# %%
small = variants["small width (d = 20, 4 heads of 5)"]
cos_rows = {}
for name, res, d in [("learned, d = 64", main, base.d_model), ("learned, d = 20", small, 20)]:
    k = res.embedding_cos.shape[-1]
    gauss = ml.gaussian_cosine(res.config.n_seeds, k, d, SEED)
    cos_rows[name] = res.embedding_cos, gauss
    m, mx = ml.off_diagonal_abs(res.embedding_cos)
    gm, gmx = ml.off_diagonal_abs(gauss)
    print(f"{name}: mean |cos| {approx(m.mean(), 0.05)}, max |cos| {approx(mx.mean(), 0.1)}; "
          f"Gaussian: mean {gm.mean():.3f} (sqrt(2/(pi d)) = {math.sqrt(2 / (math.pi * d)):.3f}), "
          f"max {gmx.mean():.2f}")
m64, _ = ml.off_diagonal_abs(main.embedding_cos)
g64, _ = ml.off_diagonal_abs(cos_rows["learned, d = 64"][1])
assert np.all(np.abs(g64 - math.sqrt(2 / (math.pi * 64))) < 0.01)
assert np.all(m64 > g64)  # at our scale, training makes the embeddings less orthogonal

# %% mystnb={"figure": {"caption": "Cosine similarity between the embeddings of the 100 entity tokens (A's, then B's; seed SEED). Left: learned, d = 64 (main run). Middle: learned, d = 20. Right: i.i.d. Gaussian vectors, d = 64. The paper's heatmaps use 1 layer with d = 768 and d = 20 and 24 layers with d = 20, vocabulary 800 + 2.", "name": "fig-multilayer-embeddings"}}
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
for ax, (title, mat) in zip(axes, [("learned, d = 64", main.embedding_cos[0]),
                                   ("learned, d = 20", small.embedding_cos[0]),
                                   ("Gaussian, d = 64", cos_rows["learned, d = 64"][1][0])]):
    plot.heatmap(ax, mat, title, "token", "token", vmin=-1, vmax=1, cmap="vlag",
                 cbar=ax is axes[-1])
plot.savefig(fig, "fig-multilayer-embeddings")
plt.show()

# %% [markdown]
# ## 5. Control: the reverse fact in the context
#
# Sentences $[A, \to, B, \leftrightarrow, B, \leftarrow, A]$ with the loss on the last token
# (the paper's Appendix E.2.3). 50 A's and 10 B's; for each A, 7 of its 10 B's are in training
# and 3 are held out, so 350 training and 150 held-out sentences; vocabulary 200 + 3. A held-out
# pair never occurs in training, but its answer is the first token of the context.

# %%
icl = ml.run(replace(base, task="in_context", steps=ICL_STEPS))
print(f"log |V| = {icl.log_vocab:.2f}")
print(f"final training NLL: {approx(icl.train_nll[-1], TOL_TRAIN)}")
print(f"final held-out NLL: {approx(icl.val_nll[-1], TOL_TRAIN)}")
assert np.all(icl.val_nll[-1] < 0.1) and np.all(icl.train_nll[-1] < 0.1)

# %% mystnb={"figure": {"caption": "In-context control: training and held-out NLL of the final token of $[A, \\to, B, \\leftrightarrow, B, \\leftarrow, A]$ (2 layers, 4 heads, d = 64, 50 A's and 10 B's, vocabulary 200 + 3, 200 AdamW steps, 4 seeds). The paper's run uses 100 A's, 10 B's, vocabulary 400 + 3 and the 24-layer model.", "name": "fig-multilayer-in-context"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, icl.epochs, icl.train_nll, label="training sentences")
plot.seed_band(ax, icl.epochs, icl.val_nll, label="held-out pairs (answer in context)")
ax.axhline(icl.log_vocab, color="k", ls=":", lw=1, label=r"$\log|V|$")
ax.set(xlabel="epoch", ylabel="NLL of the last token (nats)")
ax.legend()
plot.savefig(fig, "fig-multilayer-in-context")
plt.show()
