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
# # Notebook: chain-of-thought and intransitivity
#
# The executable side of {doc}`../../book/reversal/chain_of_thought`. Triples
# $(A_i,B_i,C_i)$; training has "$A_i\to B_i$" and "$B_i\to C_i$" for every triple and
# "$A_i\leadsto C_i$" for the training triples only; the test asks "$A_i\leadsto$" for the
# held-out triples {cite}`zhu2024reversal`. We train the reparameterised one-layer model (where
# Theorem 4 is exact) and a small causal transformer with the paper's optimiser, then check
# that answering in two steps works where the direct answer fails, and finish with the
# correlated-token variant of the authors' code, where entities share structure.

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 3       # seeds
VOCAB = 302       # 2 relation tokens (0 direct, 1 indirect) + 300 entities
N_TRIPLES = 100   # triples (A_i, B_i, C_i)
N_HELDOUT = 30    # triples whose "A_i ~> C_i" is held out
STEPS = 400       # GD steps of the reparameterised model (step size LR)
LR = 100.0
EPOCHS = 100      # transformer epochs (AdamW, lr 0.01, batch 64)
N_LAYER = 2       # transformer layers
D_MODEL = 64      # transformer width
ALPHABET = 200    # index tokens of the correlated-token variant
RELATED_TRAIN = 100
RELATED_HELDOUT = 50
RELATED_EPOCHS = 80

# %%
from revlib import repro

repro.setup(SEED)

import math

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, probes
from revlib.experiments import chain_of_thought as cot
from revlib.report import approx

plot.set_theme()
cfg = cot.Config(vocab_size=VOCAB, n=N_TRIPLES, n_heldout=N_HELDOUT, seed=SEED, n_seeds=N_SEEDS,
                 lr=LR, steps=STEPS, epochs=EPOCHS, n_layer=N_LAYER, d_model=D_MODEL,
                 alphabet=ALPHABET, related_train=RELATED_TRAIN, related_heldout=RELATED_HELDOUT,
                 related_epochs=RELATED_EPOCHS)
res = cot.run(cfg)
log_V = res.log_V
print(f"|V| = {VOCAB}, {N_TRIPLES} triples, {N_HELDOUT} held out: {res.task.n_train} training "
      f"and {N_HELDOUT} held-out sentences; log|V| = {log_V:.3f}, 1/|V| = {1 / VOCAB:.4f}")

# %% [markdown]
# ## 1. The reparameterised model: one-hop facts learned, $Y[A_i,C_i]$ never rises
#
# The logits of "$A_i\leadsto$" are $Y[A_i,\cdot]+Y[\leadsto,\cdot]$. For a held-out triple the
# entry $Y[A_i,C_i]$ receives gradient only from "$A_i\to B_i$", where $C_i$ is a wrong answer,
# so it can only fall; and $Y[\leadsto,C_i]$ falls too, since $C_i$ is never an answer to
# "$\leadsto$". Raising $A\to B$ and $B\to C$ does not raise $A\to C$.

# %%
rp = res.reparam
h = rp.history
print(f"final train probabilities (worst seed): p(B|A->) {h['p_AB'][-1].min():.3f}, "
      f"p(C|B->) {h['p_BC'][-1].min():.3f}, p(C|A~>) {h['p_AC_train'][-1].min():.3f}")
print(f"largest Y[A_i, C_i] over held-out triples, all steps and seeds: {res.reparam_Y_AC_heldout.max():.3f}")
print(f"held-out p(C_i | A_i ~>): final {h['p_AC_heldout'][-1].max():.2e}; "
      f"NLL {h['nll_heldout'][-1].mean():.2f} = log|V| + {h['nll_heldout'][-1].mean() - log_V:.2f}")
print(f"greedy two-step answer A -> B^ -> C^ correct on held-out triples: {rp.two_step_acc.min():.3f}; "
      f"direct A ~> C^: {rp.direct_acc.max():.3f}")
assert np.all(h["p_AB"][-1] > 0.9) and np.all(h["p_BC"][-1] > 0.9) and np.all(h["p_AC_train"][-1] > 0.9)
assert res.reparam_Y_AC_heldout.max() <= 0.0          # exactly: it can only decrease
assert np.all(h["p_AC_heldout"] <= 1 / VOCAB + 1e-9)
assert np.all(rp.two_step_acc == 1.0) and np.all(rp.direct_acc == 0.0)

# %% mystnb={"figure": {"caption": "Reparameterised one-layer model on the chain task by full-batch GD (|V| = 302, 100 triples, 30 held out, step 100, 3 seeds, median and band). Answer probabilities of the three training relations and of the held-out $A_i\\leadsto C_i$, against $1/|V|$ (dotted). The paper proves Theorem 4 for this model without a simulation we know of; the scale is ours.", "name": "fig-cot-reparam"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
t = h.time
for key, label in [("p_AB", r"train $p(B_i\mid A_i\to)$"), ("p_BC", r"train $p(C_i\mid B_i\to)$"),
                   ("p_AC_train", r"train $p(C_i\mid A_i\leadsto)$"),
                   ("p_AC_heldout", r"held-out $p(C_i\mid A_i\leadsto)$")]:
    plot.seed_band(ax, t[1:], h[key][1:], label=label)
ax.axhline(1 / VOCAB, color="k", ls=":", lw=1, label="$1/|V|$")
ax.set(xscale="log", yscale="log", xlabel="time $t$", ylabel="probability")
ax.legend(fontsize="small")
plot.savefig(fig, "fig-cot-reparam")
plt.show()

# %% [markdown]
# ## 2. A small causal transformer: the same failure, and chain-of-thought fixes it
#
# A 2-layer causal transformer ($d=64$, 4 heads, LayerNorm, MLP, absolute positions, learned
# tied embeddings; no dropout) trained with AdamW at learning rate 0.01, weight decay 0.01
# (what the paper's code effectively uses) and batch 64 on the answer token only, the layout of
# the paper's `ChainDataset`: sentences `[A, 0, B]`, `[B, 0, C]`, `[A, 1, C]`.

# %%
tf = res.transformer
th = tf.history
nll_held = th["nll_heldout"][-1]
k, n = N_HELDOUT, N_TRIPLES
train_rows, held_rows = list(range(k, n)), list(range(k))
# Rank of the right answer C_i among the answers of the same type: the n entities C_j.
mrr = {split: np.array([probes.diagonal_reciprocal_rank(tf.blocks["C|A"][s], rows).mean()
                        for s in range(N_SEEDS)])
       for split, rows in (("train", train_rows), ("held", held_rows))}
chance = probes.chance_mrr(n)
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
# (the held-out p(C_i | A_i ~>) of one seed moved from 0.019 to 0.002 on the simulated machine)
TOL_NLL_TRAIN, TOL_NLL_HELD, TOL_P, TOL_MRR = 0.05, 10.0, 0.05, 0.1
print(f"final training NLL (worst seed): {approx(th['nll_train'][-1].max(), TOL_NLL_TRAIN)}")
print(f"held-out A ~> C NLL per seed: {approx(nll_held, TOL_NLL_HELD)}; log|V| = {log_V:.2f}")
print(f"held-out p(C_i | A_i ~>), mean over triples: {approx(th['p_AC_heldout'][-1], TOL_P)}")
print(f"MRR of C_i among the {n} entities C_j after A_i ~>: training triples "
      f"{approx(mrr['train'], TOL_MRR)}, held-out {approx(mrr['held'], TOL_MRR)}; "
      f"chance {chance:.3f}")
print(f"greedy two-step answer correct on held-out triples: {approx(tf.two_step_acc, 0.1)}; "
      f"direct answer: {approx(tf.direct_acc, 0.1)}")
assert np.all(th["nll_train"][-1] < 0.1) and np.all(mrr["train"] > 0.9)
# the held-out answer ranks near chance among its own type (a learnt fact would rank first)
assert np.all(mrr["held"] < 4 * chance), mrr["held"]
assert np.all(tf.two_step_acc >= 0.9) and np.all(tf.direct_acc <= 0.2)

# %% mystnb={"figure": {"caption": "Answer NLL of a 2-layer causal transformer on the chain task (d = 64, 4 heads, |V| = 302, 100 triples with 30 held out, AdamW lr 0.01, batch 64, 100 epochs, 3 seeds). Dotted: $\\log|V|$. The paper: 24 layers, d = 768, vocabulary 800, 200 triples, 3000 epochs, 10 seeds; its numbers were not available to us.", "name": "fig-cot-transformer"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
epochs = th.steps / (res.task.n_train // cfg.batch_size)
plot.seed_band(ax, epochs, th["nll_train"], label="training sentences")
plot.seed_band(ax, epochs, th["nll_heldout"], label=r"held-out $A_i\leadsto C_i$")
ax.axhline(log_V, color="k", ls=":", lw=1, label=r"$\log|V|$")
ax.set(xlabel="epoch", ylabel="answer NLL (nats)")
ax.legend()
plot.savefig(fig, "fig-cot-transformer")
plt.show()

# %% [markdown]
# ## 3. Effective weights: B|A, C|B and C|A
#
# Answer logits over the candidate entities, training triples (top rows of each block) and
# held-out triples (below the white line). We read them after the relation token ("$A_i\to$",
# "$B_i\to$", "$A_i\leadsto$"); the paper's heatmap script reads them after the entity alone.

# %%
def contrast(block, rows):
    sub = block[rows]
    diag = np.array([sub[i, r] for i, r in enumerate(rows)])
    return diag.mean() - (sub.sum() - diag.sum()) / (sub.size - len(rows))


def top_among_candidates(block, rows):
    """Fraction of the rows whose own entity has the largest logit among the n candidates."""
    return np.mean([block[r].argmax() == r for r in rows])


print("diagonal minus off-diagonal logit (median over seeds); in brackets the fraction of rows")
print("whose own entity tops the n candidates (mean over seeds)")
TOL_CONTRAST, TOL_TOP = 5.0, 0.1
print("model, block: training triples | held-out triples")
contrasts = {}
for name, mres in [("reparam", rp), ("transformer", tf)]:
    for key in ("B|A", "C|B", "C|A"):
        blocks = mres.blocks[key]
        tr = np.median([contrast(blocks[s], train_rows) for s in range(N_SEEDS)])
        he = np.median([contrast(blocks[s], held_rows) for s in range(N_SEEDS)])
        tr_top = np.mean([top_among_candidates(blocks[s], train_rows) for s in range(N_SEEDS)])
        he_top = np.mean([top_among_candidates(blocks[s], held_rows) for s in range(N_SEEDS)])
        contrasts[name, key] = (tr, he)
        print(f"{name} {key}: {approx(tr, TOL_CONTRAST)} ({approx(tr_top, TOL_TOP)}) | "
              f"{approx(he, TOL_CONTRAST)} ({approx(he_top, TOL_TOP)})")
        assert tr > 2 and (he > 2 if key != "C|A" else he < 0.5 * tr)
assert contrasts["reparam", "C|A"][1] < 0

# %% mystnb={"figure": {"caption": "Answer logits over candidate entities (seed SEED; rows: triples, held-out triples below the white line). Top: reparameterised model; bottom: 2-layer transformer (d = 64, |V| = 302). B|A and C|B have a diagonal for every triple; C|A has one only for the training triples: intransitivity. The paper's Figure 4 shows the same three panels for a 24-layer GPT-2 at vocabulary 800.", "name": "fig-cot-heatmaps"}}
fig, axes = plt.subplots(2, 3, figsize=(12, 8))
order = np.r_[train_rows, held_rows]
for row, (name, mres) in enumerate([("reparam", rp), ("transformer", tf)]):
    for col, key in enumerate(("B|A", "C|B", "C|A")):
        block = mres.blocks[key][0][order][:, order]
        lo, hi = np.percentile(block, [1, 99.5])
        plot.heatmap(axes[row, col], block, f"{name}: logits {key}", key[0], key[-1],
                     vmin=lo, vmax=hi, cbar=False)
        axes[row, col].axhline(n - k, color="white", lw=2)
plot.savefig(fig, "fig-cot-heatmaps")
plt.show()

# %% [markdown]
# ## 4. Entities that share structure: the correlated-token variant
#
# Entities of two tokens, a type token $x$, $y$ or $z$ and an index $i$:
# `[x,i,->,y,i]`, `[y,i,->,z,i]`, `[x,i,~>,z,i]`, the last held out for 50 indices. Here
# "$\leadsto$" can be answered by a rule that applies to every index (emit $z$, copy $i$), which
# the training triples teach. We report the two-token answer NLL
# $-\log p(z\mid x,i,\leadsto)-\log p(i\mid x,i,\leadsto,z)$; its uniform level is
# $2\log|V'|$ with $|V'| = $ 5 + the alphabet. The first token alone ($z$) is trivial.

# %%
rel = res.related
V2 = res.related_task.vocab_size
print(f"|V'| = {V2}, uniform two-token NLL 2 log|V'| = {2 * math.log(V2):.2f}")
# Small NLLs with a heavy tail: on the simulated other machine one seed's held-out NLL was
# 0.13 where the stored run then had 0.007.
TOL_REL = 0.05
TOL_REL_HELD = 0.2
print(f"training two-token NLL, final per seed: {approx(rel['word_nll_train'][-1], TOL_REL)}")
print(f"held-out two-token NLL, final per seed: {approx(rel['word_nll_heldout'][-1], TOL_REL_HELD)}; "
      f"worst held-out triple: {approx(rel['word_nll_heldout_max'][-1], 1.0)}")
print(f"held-out first-token (z) NLL: {approx(rel['first_nll_heldout'][-1], 0.01)}")
tr_nll, he_nll = rel["word_nll_train"][-1], rel["word_nll_heldout"][-1]
fitted = tr_nll < 0.1
# The median seed fits the training triples in 80 epochs (some seeds need longer), and the
# rule "emit z, copy i" generalises: where the training triples are fitted, the held-out
# two-token NLL is below a tenth of the uniform 2 log|V'| (a fresh seed that fitted its
# training triples had 0.59: a few held-out triples wrong, worst 8.3), and the median seed's
# held-out answers are fitted as its training ones are.
assert np.median(tr_nll) < 0.1, tr_nll
assert np.all(he_nll[fitted] < 0.1 * 2 * math.log(V2)), he_nll
assert np.median(he_nll) < 0.1, he_nll

# %% mystnb={"figure": {"caption": "Correlated-token variant (2-layer transformer, d = 64, alphabet 200, 100 training and 50 held-out triples, AdamW lr 0.01, batch 64, 80 epochs, 3 seeds): two-token answer NLL of training sentences and of the held-out $x\\,i\\leadsto z\\,i$, and the first-token NLL of the held-out answer. Dotted: $2\\log|V'|$. The authors' script uses d = 768, alphabet 600 and 200 training triples; where this experiment sits in the paper is not known to us.", "name": "fig-cot-related"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
epochs = rel.steps / (res.related_task.n_train // cfg.batch_size)
plot.seed_band(ax, epochs, rel["word_nll_train"], label="training, two-token answer")
plot.seed_band(ax, epochs, rel["word_nll_heldout"], label=r"held-out $x\,i\leadsto z\,i$, two-token")
plot.seed_band(ax, epochs, rel["first_nll_heldout"], label="held-out, first token $z$ only", ls="--")
ax.axhline(2 * math.log(V2), color="k", ls=":", lw=1, label=r"$2\log|V'|$")
ax.set(xlabel="epoch", ylabel="answer NLL (nats)")
ax.legend(fontsize="small")
plot.savefig(fig, "fig-cot-related")
plt.show()
