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
    os.chdir(os.path.join(CLONE, "notebooks/associations"))

# %% tags=["parameters"]
SEED = 0  # base seed; seeds SEED, SEED+1, ... train side by side
N_SEEDS = 2  # seeds trained at once
STEPS = 1000  # AdamW steps (batch 32, learning rate 3e-3)
N_LAYER = 2  # layers (2 heads each, width 64, MLP 4 x 64)
P_IOI = 0.8  # probability that a sentence is an IOI sentence
ALPHA = 0.25  # probability that an IOI sentence ends "to the NOUN" (generic)
STORED_DIR = "../../data/sweeps/small_lm"  # 4000-step runs of the same model (3 seeds)
CONTROL = "none"  # a control run, one of the ledger's controls (scripts/check-claims)

# %%
from revlib import claims, repro

repro.setup(SEED)
from revlib.experiments import small_lm as sl

ledger = claims.Ledger.of(
    sl,
    CONTROL,
    scale=f"{N_LAYER} layers, d = 64, {STEPS} steps x batch 32, {N_SEEDS} seeds live; "
    "stored: 2 layers, 4,000 steps, 3 seeds",
    paper_scale="Pythia checkpoints (up to billions of parameters; sizes unknown)",
    size_knobs={"STEPS": STEPS, "N_LAYER": N_LAYER},
)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, records
from revlib.data import small_corpus as sc
from revlib.report import approx, exact

plot.set_theme()
cfg = ledger.config(
    sl.Config(
        n_layer=N_LAYER,
        p_ioi=P_IOI,
        alpha=ALPHA,
        seed=SEED,
        n_seeds=N_SEEDS,
        steps=STEPS,
        lr=3e-3,
    )
)
example = sc.sample(
    [SEED],
    n=1,
    seq_len=cfg.seq_len,
    p_ioi=P_IOI,
    alpha=ALPHA,
    stream=1,
    to_the=not cfg.no_to_the,
)
print(sc.decode(example.x[0, 0]))
print(
    f"vocabulary {sc.VOCAB_SIZE} tokens ({len(sc.NAMES)} names), "
    f"sequences of {cfg.seq_len}"
)


def names(rec):
    """p(IO), p(S) of a run's metrics, swapped under the swap_io_s control."""
    return ledger.swap(rec["p_io"], rec["p_s"])


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

# %% tags=["hide-input"]
print(f"trainable parameters per model: {res.n_params}; seeds {cfg.seeds}")
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds).
# A number at one step swings by up to 0.5 between runs (an Adam spike, as the loss of
# 1.23 at step 933 on seed 0 here, or a seed that picks out IO early), so no per-step
# table is printed (the figure shows the curves); the claims use the first quarter's
# largest p(the) and the median loss over the second half, which move less.
# One seed's median loss over the second half moved by up to 0.15 over 5 fresh
# seeds (tests/seed_spread.json), so it is printed with TOL_LOSS_HALF and the check
# against the stored runs takes the median seed.
TOL_P, TOL_LOSS, TOL_LOSS_HALF = 0.1, 0.1, 0.2
h_io, h_s = names(h)
early = h.steps <= STEPS // 4
the_early = h["p_the"][early].max(axis=0)
late_the = h["p_the"][~early]
gap = h_io[-1] - h_s[-1]
print(
    f"largest p(the) in the first quarter (steps <= {STEPS // 4}), per seed: "
    f"{approx(the_early, 0.2)}"
)
print(
    f"largest |p(IO) - p(S)| there: "
    f"{approx(np.abs(h_io - h_s)[early].max(axis=0), TOL_P)}; final p(IO) - p(S): "
    f"{approx(gap, 0.5)} (on a knife edge at this scale, see below)"
)
loss_half = np.median(h["loss"][h.steps >= STEPS // 2], axis=0)
print(
    f"test loss (all tokens): {approx(h['loss'][0], TOL_LOSS)} at initialisation, "
    f"median {approx(loss_half, TOL_LOSS_HALF)} over steps {STEPS // 2}-{STEPS}"
)
ledger.glue("the_early", the_early, print_tol=0.2)
ledger.glue("final_gap", gap, print_tol=0.5)
ledger.glue("loss_init", h["loss"][0].mean(), print_tol=TOL_LOSS)
ledger.glue("loss_half", loss_half, print_tol=TOL_LOSS_HALF)

# %% tags=["hide-input"]
# the generic continuation is learnt within the first quarter of training (median
# seed: one seed's largest early p(the) moved by 0.16 over 5 fresh seeds, more than its
# margin)
ledger.check(
    "the-first-quarter",
    "p(the) at the IOI answer exceeds 0.1 (3.5 x uniform) within the "
    "first quarter of training (median seed)",
    np.median(the_early),
    above=0.1,
    print_tol=0.15,
    kind="paper",
    source="Figure 5",
    paper="' the' is learnt early, before the answer, along Pythia "
    "checkpoints (no number)",
    broken_by=("no_training", "no_to_the"),
)

# %% [markdown]
# The generic token comes first. Whether the in-context answer follows within 1000 steps is
# on a knife edge at this scale: in the stored outputs no seed picks it out by the margin
# used in section 3 (final $p(\mathrm{IO})-p(\mathrm{S})$ above 0.2; printed above), while
# on other CPU kernel paths one seed does. So the live run claims only the first half of the order;
# the order itself is claimed on the stored 4,000-step runs of section 3, where both happen.
# (A claim "IO is not yet preferred in the first quarter" would hold for an untrained model
# too, and no cheap control makes IO appear that early, so it is printed, not claimed.)

# %% mystnb={"figure": {"caption": "Probabilities at the IOI answer position of clean test sequences over training (2 layers, 2 heads, d = 64, T = 48, batch 32, AdamW lr 3e-3; 2 seeds, line: median, band: min-max). The generic 'the' is learned within the first evaluations; the IO name and the subject S stay close together, so the in-context answer is not picked out within 1000 steps here (with another CPU kernel path one seed does: at this scale it is on a knife edge). The paper follows Pythia checkpoints (up to billions of parameters and hundreds of billions of tokens); its values are not known to us.", "name": "fig-smalllm-dynamics"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, h.steps, h["p_the"], label="p(the)")
plot.seed_band(ax, h.steps, h_io, label="p(IO name)")
plot.seed_band(ax, h.steps, h_s, label="p(S name)", ls="--")
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
# last layer's MLP input matrix truncated to a rank with `probes.truncated` (the figure).
# Where the live models have learnt no in-context answer there is none to hand over, so
# the LASER question is asked on the stored runs, which learnt it (section 3). What the
# live run shows: what is left of the prediction with every FF removed (a number that
# moves with the machine, not a claim).

# %% tags=["hide-input"]
ab = res.ablation
L = N_LAYER
s_io, s_s = names(res.sweep)
print(f"ranks of the last W_in swept: {res.ranks}")
no_ff = ab["p_the"][0] + ab["p_io"][0] + ab["p_s"][0]
uniform = 3 / sc.VOCAB_SIZE
# Shown, not claimed: this sum moves between machines as a fresh seed would. Over five
# fresh seeds it moved by up to 0.22 (2.6 times the uniform level), and under generic
# kernels with 2 threads by 0.3 (3.5 times), so its tolerances span that range, and no
# test of the mechanism rests on it.
TOL_NO_FF, TOL_NO_FF_X = 0.4, 5
print(
    f"every FF removed: p(the) + p(IO) + p(S) per seed {approx(no_ff, TOL_NO_FF)} "
    f"(uniform: {uniform:.3f}); over the uniform level "
    f"{approx(no_ff / uniform, TOL_NO_FF_X)}"
)
ledger.glue("no_ff", no_ff, print_tol=TOL_NO_FF)
ledger.glue("no_ff_x", no_ff / uniform, print_tol=TOL_NO_FF_X)

# %% mystnb={"figure": {"caption": "The trained models with the last layer's MLP input matrix truncated to a rank (rank 0 removes that MLP), at the IOI answer position of clean test data (2 layers, d = 64, 2 seeds, line: median, band: min-max). No rank moves probability to the IO name, because the model has not learned it. The paper truncates late MLP layers of Pythia, GPT-2 small and Llama-3-8B; its ranks and values are not known to us.", "name": "fig-smalllm-truncation"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.8))
x = np.array(res.ranks) + 0.5
plot.seed_band(ax, x, res.sweep["p_the"], label="p(the)", marker="o")
plot.seed_band(ax, x, s_io, label="p(IO name)", marker="s")
plot.seed_band(ax, x, s_s, label="p(S name)", marker="^", ls="--")
ax.set(
    xscale="log",
    xlabel="rank kept + 0.5",
    ylabel="probability at the answer",
    ylim=(0, 1),
)
ax.legend(fontsize="small")
plot.savefig(fig, "fig-smalllm-truncation")
plt.show()

# %% [markdown]
# ## 3. Four times longer: the in-context answer comes after the generic token (stored runs)
#
# The same model, data and optimiser trained for 4,000 steps, 3 seeds, made by
# `python -m revlib sweep small_lm` (the command is in the chapter). For each seed: the first
# evaluation at which $p(\mathrm{the})>0.1$ (the generic token is learnt) and the first at
# which $p(\mathrm{IO})-p(\mathrm{S})>0.2$ (the in-context answer is picked out).

# %%
# Under a science control the stored runs made under it are read in place of the
# default ones (records.control_runs): the same recipe on the corpus without "to the"
# (no_to_the), or without the last layer's FF block (no_last_ff), 3 seeds each.
raw = records.load(STORED_DIR, curves=True)
slm = raw
for field in ("no_to_the", "no_last_ff"):
    slm = records.control_runs(slm, field, getattr(cfg, field), by=("n_layer",))
slm = slm.sort_values("seed")
s_steps = slm["curve.steps"].iloc[0]
curves = {
    k: np.stack(slm[f"curve.{k}"])  # [seeds, E]
    for k in ("p_the", "p_io", "p_s", "loss")
}
c_io, c_s = names(curves)
st_io, st_s = names({k: np.asarray(slm[k]) for k in ("p_io", "p_s")})

# %% tags=["hide-input"]
print(
    f"stored runs: {len(slm)}, git {sorted(set(slm['git'].str[:10]))}, "
    f"{slm['cpu_seconds'].sum():.0f} CPU seconds; steps {sorted(set(slm['steps']))}, "
    f"p_ioi {sorted(set(slm['p_ioi']))}, alpha {sorted(set(slm['alpha']))}"
)
ledger.glue("stored_cpu", slm["cpu_seconds"].sum(), digits=0)


def first_step(above):
    """The first evaluation step at which ``above`` holds, per seed (nan: never)."""
    return np.array(
        [float(s_steps[row.argmax()]) if row.any() else np.nan for row in above]
    )


step_the = first_step(curves["p_the"] > 0.1)
step_io = first_step(c_io - c_s > 0.2)
print(
    f"seeds {list(slm.seed)}: 'the' learnt at steps {exact(step_the, 0)}; IO picked "
    f"out at steps {exact(step_io, 0)}"
)
print(f"final p(the) {exact(slm['p_the'])}, p(IO) {exact(st_io)}, p(S) {exact(st_s)}")
for key, v in (("stored_step_the", step_the), ("stored_step_io", step_io)):
    for i, x in enumerate(v):
        ledger.glue(f"{key}_{i}", x, digits=0)
for key, v in (("stored_the", slm["p_the"]), ("stored_io", st_io), ("stored_s", st_s)):
    for i, x in enumerate(v):
        ledger.glue(f"{key}_{i}", x, digits=3)

# %% tags=["hide-input"]
# stored numbers do not move between runs: a tolerance of one printed unit
ledger.check(
    "io-picked-out-stored",
    "given 4,000 steps every stored seed picks out the IO: final p(IO) - p(S) > 0.2",
    st_io - st_s,
    above=0.2,
    print_tol=0.001,
    kind="ours",
    broken_by=("swap_io_s",),
)
ledger.check(
    "the-before-io-stored",
    "on every stored seed the IO is picked out only after 'the' is "
    "learnt: (first step of p(IO) - p(S) > 0.2) - (first step of "
    "p(the) > 0.1) > 0",
    step_io - step_the,
    above=0.0,
    print_tol=1.0,
    kind="paper",
    source="Figure 5",
    paper="' the' first, then the answer, along Pythia checkpoints (no number)",
    broken_by=("swap_io_s", "no_to_the"),
)

# %% mystnb={"figure": {"caption": "The same model trained four times longer (4,000 steps, 3 seeds, line: median, band: min-max; stored runs): probabilities at the IOI answer position of clean test sequences. The generic 'the' is learned by the first evaluation (step 250); the IO name separates from the subject S only later, between steps 1,500 and 2,750 depending on the seed. The paper follows Pythia checkpoints; its values are not known to us.", "name": "fig-smalllm-stored"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot.seed_band(ax, s_steps, curves["p_the"].T, label="p(the)")
plot.seed_band(ax, s_steps, c_io.T, label="p(IO name)")
plot.seed_band(ax, s_steps, c_s.T, label="p(S name)", ls="--")
ax.set(xlabel="step", ylabel="probability at the answer position", ylim=(0, 1))
ax.legend(fontsize="small")
plot.savefig(fig, "fig-smalllm-stored")
plt.show()

# %% [markdown]
# With the in-context answer learnt, the question of §2 can be asked: does removing or
# truncating the last feed-forward layer move probability from "the" to the IO name, as
# LASER does in pretrained models?

# %% tags=["hide-input"]
L_s = int(slm["n_layer"].iloc[0])
ex = list(slm["extras"])


def stored(part, key, at):
    """A stored ablation or sweep value per seed (IO, S swapped under swap_io_s)."""
    key = dict(zip(("p_io", "p_s"), ledger.swap("p_io", "p_s"))).get(key, key)
    return np.array([e[part][key][at][0] for e in ex])


full = {k: stored("ablation", k, str(L_s)) for k in ("p_the", "p_io", "p_s")}
cut = {k: stored("ablation", k, str(L_s - 1)) for k in ("p_the", "p_io", "p_s")}
print(f"full model:      p(the) {exact(full['p_the'])}, p(IO) {exact(full['p_io'])}")
print(f"last FF removed: p(the) {exact(cut['p_the'])}, p(IO) {exact(cut['p_io'])}")
ranks = ex[0]["ranks"]
rank_gain = []
for i, r in enumerate(ranks):
    io, the = stored("sweep", "p_io", i), stored("sweep", "p_the", i)
    print(f"last W_in at rank {r:2d}: p(the) {exact(the)}, p(IO) {exact(io)}")
    if r < max(ranks):
        rank_gain.append(io - full["p_io"])
rank_gain = np.array(rank_gain)  # [ranks below full, seeds]
print(
    f"largest rise of p(IO) over the truncation ranks, per seed: "
    f"{exact(rank_gain.max(axis=0))}"
)
for i in range(len(ex)):
    ledger.glue(f"cut_io_{i}", cut["p_io"][i], digits=3)
    ledger.glue(f"cut_the_{i}", cut["p_the"][i], digits=3)
ledger.glue("rank_gain_max", rank_gain.max(), digits=3)

# %% tags=["hide-input"]
# not the paper's LASER effect: the last FF helps the answer, removing it lowers p(IO)
ledger.check(
    "last-ff-helps-io-stored",
    "removing the last layer's FF lowers p(IO) by more than 0.03 on every "
    "stored seed (the paper: late-MLP truncation raises the answer)",
    full["p_io"] - cut["p_io"],
    above=0.03,
    print_tol=0.001,
    kind="paper",
    source="Section 4",
    paper="truncating late MLPs moves probability from ' the' to the answer "
    "(pretrained LMs; no number)",
    contradicts=True,
    broken_by=("swap_io_s", "no_last_ff"),
)

# %% [markdown]
# The stored runs are checked against the live run of §1: both train the same model on data of
# the same distribution (the pool of training sequences grows with the number of steps, so
# the two do not see the same sequences). The test loss over the second half of the live
# run (its median over the evaluations there: a single evaluation can catch an Adam spike, as
# one fresh seed did with 1.05 at step 1000) must lie within the stored seeds' range over the
# same steps, widened by 0.1 nats.

# %% tags=["hide-input"]
half = (s_steps >= STEPS // 2) & (s_steps <= STEPS)
live_half = loss_half
ref = np.median(curves["loss"][:, half], axis=1) if half.any() else np.full(1, np.nan)
same = ledger.precondition(
    "stored-model",
    "the live run trains the stored runs' model (layers, p_ioi, alpha) "
    "and has stored evaluations in its second half",
    float(
        half.any()
        and N_LAYER == L_s
        and P_IOI == float(slm["p_ioi"].iloc[0])
        and ALPHA == float(slm["alpha"].iloc[0])
    ),
    above=0.5,
    print_tol=0.1,
)
print(
    f"median test loss, steps {STEPS // 2}-{STEPS}: live "
    f"{approx(live_half, TOL_LOSS_HALF)}, stored seeds {exact(ref)}"
)
ledger.check(
    "live-loss-matches-stored",
    "the live run's median test loss over its second half lies within the "
    "stored seeds' range widened by 0.1 nats (distance, nats; median live "
    "seed)",
    np.median(np.abs(live_half - np.median(ref)) - np.ptp(ref)),
    below=0.1,
    print_tol=0.08,
    kind="check",
    broken_by=("no_training",),
    requires=("stored-model",),
)

# %% [markdown]
# ## 4. The science controls (stored runs)
#
# Each of the three paper claims above has a stored run in which its mechanism is removed,
# made by the same command as the default runs with one more `--set` (3 seeds each, stored
# beside them; under the control the notebook reads them in place of the default runs, and
# the claims must fail):
#
# * `no_to_the`: the corpus never puts "the" after "to" ("NAME went to PLACE .", the generic
#   IOI ending "to NOUN ."), so the distributional association is gone, while "the" still
#   opens sentences. Under it "the" should never be the answer's guess, so neither "the is
#   learnt early" nor "the before IO" can hold; the IO should still be learnt, since the
#   in-context part of the data is unchanged.
# * `no_last_ff`: the last layer's FF block is left out in training and evaluation. Then
#   removing it takes nothing away, and "removing the last FF lowers p(IO)" must fail; whether
#   the model still picks out the IO without it is shown.

# %% tags=["hide-input"]
for field, what in (("no_to_the", "without 'to the'"), ("no_last_ff", "no last FF")):
    runs = raw[raw[field].eq(True)].sort_values("seed") if field in raw else raw[:0]
    if runs.empty:
        print(f"{field}: no stored run")
        continue
    steps_c = runs["curve.steps"].iloc[0]
    the_c = np.stack(runs["curve.p_the"])
    io_c, s_c = np.stack(runs["curve.p_io"]), np.stack(runs["curve.p_s"])
    picked = [
        float(steps_c[row.argmax()]) if row.any() else np.nan
        for row in (io_c - s_c > 0.2)
    ]
    ab = [e["ablation"] for e in runs["extras"]]
    L_c = int(runs["n_layer"].iloc[0])
    drop = np.array([a["p_io"][str(L_c)][0] - a["p_io"][str(L_c - 1)][0] for a in ab])
    print(
        f"{field} ({what}), seeds {list(runs.seed)}, "
        f"{runs['cpu_seconds'].sum():.0f} CPU s: largest p(the) over training "
        f"{exact(the_c.max(axis=1))}; IO picked out at steps {exact(picked, 0)}; "
        f"final p(IO) - p(S) {exact(io_c[:, -1] - s_c[:, -1])}; p(IO) lost when the "
        f"last FF is removed {exact(drop)}"
    )
    for i in range(len(runs)):
        ledger.glue(f"{field}_the_max_{i}", the_c[i].max(), digits=3)
        ledger.glue(f"{field}_step_io_{i}", picked[i], digits=0)
        ledger.glue(f"{field}_gap_{i}", io_c[i, -1] - s_c[i, -1], digits=3)
        ledger.glue(f"{field}_drop_{i}", drop[i], digits=3)

# %% [markdown]
# ## Summary
#
# At this scale the first half of the picture appears: the generic "the" is learned at once,
# from the bigram "to the" of the generic sentences, and the in-context answer only later.
# Within the notebook's 1000 steps the answer is on a knife edge (in the stored outputs no
# seed picks out the IO name; with another CPU kernel path one seed does); in the stored
# 4000-step runs every seed does, between steps 1500 and 2750. The second half does not
# appear: on the models that learned the answer, removing the last FF lowers p(IO), and no
# truncation rank moves more than a few hundredths of probability from "the" to the IO
# name. At this scale the last MLP is not where "the" is stored. The science controls
# (section 4) break each claim as they must: without "to the" no "the" is learnt, and a model
# trained without its last FF loses nothing when it is removed, yet still picks out the IO.

# %% tags=["hide-input"]
ledger.summary()
