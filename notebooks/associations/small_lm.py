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
# # Notebook: training dynamics of a small LM from scratch
#
# The executable side of {doc}`../../book/associations/small_lm`. A small causal transformer
# (pre-LN, rotary positions, learned tied embeddings) is trained from scratch with the loss on
# every token of a generated corpus that mixes generic sentences, where "to" is always
# followed by "the", with IOI sentences "when A and B went to the PLACE , B gave a OBJ to"
# whose next token is the indirect object A (or, with probability $\alpha$, the generic
# "the"). We follow, at the IOI answer position of *clean* test sentences ($\alpha=0$), the
# probability of the generic "the", of the IO name and of the subject name S over training,
# and then remove or truncate the feed-forward layers of the trained model.

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 2       # seeds trained at once
STEPS = 1000      # AdamW steps (batch 32, learning rate 3e-3)
N_LAYER = 2       # layers (2 heads each, width 64, MLP 4 x 64)
P_IOI = 0.8       # probability that a sentence is an IOI sentence
ALPHA = 0.25      # probability that an IOI sentence ends "to the NOUN" (generic)

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.data import small_corpus as sc
from revlib.experiments import small_lm as sl
from revlib.report import approx

plot.set_theme()
cfg = sl.Config(n_layer=N_LAYER, p_ioi=P_IOI, alpha=ALPHA, seed=SEED, n_seeds=N_SEEDS,
                steps=STEPS)
example = sc.sample([SEED], n=1, seq_len=cfg.seq_len, p_ioi=P_IOI, alpha=ALPHA, stream=1)
print(sc.decode(example.x[0, 0]))
print(f"vocabulary {sc.VOCAB_SIZE} tokens ({len(sc.NAMES)} names), sequences of {cfg.seq_len}")

# %% [markdown]
# ## 1. What is learned, and when
#
# Mean probabilities at the IOI answer positions of 256 clean test sequences (the next
# token is always the IO name there), over training. Uniform over the vocabulary would be
# $1/35\approx0.029$; a model that knows "a name comes next" but not which one puts about
# $1/12$ of its name mass on each of the 12 names.

# %%
res = sl.run(cfg)
h = res.history
print(f"trainable parameters per model: {res.n_params}; seeds {cfg.seeds}")
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
# p(the) at a given step swings by up to 0.5 between runs; p(IO) gets a wide one too, as on
# one AVX-512 machine seed 0 reached p(IO) - p(S) = 0.1.
# p(IO) gets 0.5: under the simulated other machine one seed learned the in-context answer
# within 1000 steps (p(IO) - p(S) = 0.36) where neither stored seed did.
TOL = {"p_the": 0.5, "p_io": 0.5, "p_s": 0.05, "loss": 0.5}
print("step: p(the) | p(IO) | p(S) | test loss (all tokens), per seed")
for i in range(0, len(h.steps), 2):
    print(f"{h.steps[i]}: " + " | ".join(approx(h[k][i], TOL[k]) for k in TOL))
early = h.steps <= STEPS // 4
# the generic continuation is learned within the first quarter of training, on every seed
assert np.all(h["p_the"][early].max(axis=0) > 0.1), h["p_the"][early]
gap = h.final("p_io") - h.final("p_s")
print(f"final p(IO) - p(S) per seed: {approx(gap, TOL['p_io'])}")

# %% [markdown]
# The generic token comes first. Whether the in-context answer follows within 1000 steps is
# on a knife edge at this scale: in the stored run neither seed learns it ($p(\mathrm{IO})$
# and $p(\mathrm{S})$ stay equal, at a context-free guess among the names), but with another
# CPU kernel path one seed does. What holds on every run is the order: while "the" is
# already learned (the first quarter of training), IO is not yet preferred over S.

# %%
early_gap = (h["p_io"] - h["p_s"])[early]
print(f"largest p(IO) - p(S) in the first quarter, per seed: "
      f"{approx(np.abs(early_gap).max(axis=0), TOL['p_io'])}")
assert np.all(np.abs(early_gap) < 0.2), early_gap
learnt = gap > 0.2  # seeds that picked up the in-context answer by the end
# %% mystnb={"figure": {"caption": "Probabilities at the IOI answer position of clean test sequences over training (2 layers, 2 heads, d = 64, T = 48, batch 32, AdamW lr 3e-3; 2 seeds, line: median, band: min-max). The generic 'the' is learned by the first evaluation (step 133); the IO name and the subject S stay at the same, context-free level, so the in-context answer is not learned within 1000 steps here (with another CPU kernel path one seed does learn it: at this scale it is on a knife edge). The paper follows Pythia checkpoints (up to billions of parameters and hundreds of billions of tokens); its values are not known to us.", "name": "fig-smalllm-dynamics"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, h.steps, h["p_the"], label="p(the)")
plot.seed_band(ax, h.steps, h["p_io"], label="p(IO name)")
plot.seed_band(ax, h.steps, h["p_s"], label="p(S name)", ls="--")
ax.set(xlabel="step", ylabel="probability at the answer position", ylim=(0, 1))
ax.legend(fontsize="small")
plot.savefig(fig, "fig-smalllm-dynamics")
plt.show()

# %% [markdown]
# ## 2. Removing and truncating the late feed-forward layers
#
# LASER {cite}`sharma2024laser` and {cite}`chen2025distributional` truncate late MLP layers
# of pretrained models and see probability move from the generic token to the in-context
# answer. Here: the FF of the last layer, then of every layer, removed (`ff_off`), and the
# last layer's MLP input matrix truncated to a rank with `probes.truncated`.

# %%
ab = res.ablation
L = N_LAYER
TOL_CUT = 0.5  # p(the) after a cut
print("FF removed: p(the) | p(IO) | p(S), per seed")
for first in range(L, -1, -1):
    what = "none" if first == L else f"layers {first}..{L - 1}"
    print(f"{what}: " + " | ".join(approx(ab[k][first], TOL_CUT if k == "p_the" else TOL[k])
                                   for k in ("p_the", "p_io", "p_s")))
print("\nrank of the last W_in: p(the) | p(IO) | p(S), per seed")
for i, r in enumerate(res.ranks):
    print(f"{r}: " + " | ".join(approx(res.sweep[k][i], TOL_CUT if k == "p_the" else TOL[k])
                                for k in ("p_the", "p_io", "p_s")))
# where nothing in-context was learned, removing the last FF cannot hand the answer to attention
assert np.all(ab["p_io"][L - 1][~learnt] < 0.3), ab["p_io"][L - 1]

# %% mystnb={"figure": {"caption": "The trained models with the last layer's MLP input matrix truncated to a rank (rank 0 removes that MLP), at the IOI answer position of clean test data (2 layers, d = 64, 2 seeds, line: median, band: min-max). No rank moves probability to the IO name, because the model has not learned it. The paper truncates late MLP layers of Pythia, GPT-2 small and Llama-3-8B; its ranks and values are not known to us.", "name": "fig-smalllm-truncation"}}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
x = np.array(res.ranks) + 0.5
plot.seed_band(ax, x, res.sweep["p_the"], label="p(the)", marker="o")
plot.seed_band(ax, x, res.sweep["p_io"], label="p(IO name)", marker="s")
plot.seed_band(ax, x, res.sweep["p_s"], label="p(S name)", marker="^", ls="--")
ax.set(xscale="log", xlabel="rank kept + 0.5", ylabel="probability at the answer", ylim=(0, 1))
ax.legend(fontsize="small")
plot.savefig(fig, "fig-smalllm-truncation")
plt.show()

# %% [markdown]
# ## Summary
#
# At this scale the first half of the picture appears (the generic "the" is learned at once,
# from the bigram "to the" of the generic sentences) and the second is on a knife edge: in the
# stored run no seed learns to pick the IO name within 1000 steps, so there is nothing for a
# truncation of the late FF layers to uncover, while with another CPU kernel path one seed
# does learn it. The order holds on every run: "the" first, the in-context answer later if at all. Removing the last FF does not move probability to the IO name; on
# some seeds it even raises p(the), so at this scale the last MLP is not where "the" is
# stored. Removing every FF destroys the prediction altogether.
