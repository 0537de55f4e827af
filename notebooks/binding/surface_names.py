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
    os.chdir(os.path.join(CLONE, "notebooks/binding"))

# %% tags=["parameters"]
SEED = 0  # base seed; seeds SEED, SEED+1 train side by side
N_A, N_B = 400, 240  # live run: entities teaching / tested (paper: 50,000 / 30,000)
N_REL = 3  # relation pairs (paper: 6)
MULTIPLICITY = 10  # entities sharing each name token (paper: 10)
STEPS = 1000  # AdamW steps of the live names run (paper: up to 3,000,000)
LIVE_STEPS = 1000  # steps of the live re-run of a stored one-token run
SWEEP_DIR = "../../data/sweeps/surface_names"
BIG_DIR = "../../data/sweeps/surface_names_2500"  # one token, the paper's |E_A| = 2.5K
PAPER_MRR_2500 = 0.823  # Table 1, one layer at |E_A| = 2.5K (unverified reading)
MEM_DIR = "../../data/sweeps/std_memory_2500"  # the standard model with a memory layer
JEPA_2500_DIR = "../../data/sweeps/jepa_2500"  # JEPA with the same memory layer
CONTROL = "none"  # a control run, one of the ledger's controls (scripts/check-claims)

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter
import numpy as np

from revlib import claims, plot, probes, records
from revlib.data.binding import binding_task
from revlib.experiments import surface_names
from revlib.report import approx, exact

ledger = claims.Ledger.of(
    surface_names,
    CONTROL,
    scale=f"live: {N_A} + {N_B} entities, m = {MULTIPLICITY}, {STEPS} steps; stored: "
    "1,600 + 200 entities, 20,000 steps; d = 64, 2 layers",
    paper_scale="50,000 + 30,000 entities, m = 10, up to 3M steps, d = 768",
    size_knobs={"N_A": N_A, "N_B": N_B, "STEPS": STEPS},
)

plot.set_theme()
# Tolerances: the largest move across seeds and CPU kernel paths (scripts/check-seeds;
# the simulated other machine moved a live seed's held-out MRR by 0.26 units of chance).
TOL = {"train": 0.05, "atomic": 0.1, "test": 0.05}
# The accuracy over chance counts a handful of hits (one hit is about one unit of
# chance): a seed moved 1.6 -> 0.0 on an AVX-512 machine, hence 2, not 1.
TOL_FIT, TOL_ACC_RATIO, TOL_MRR_RATIO = 0.02, 2.0, 0.35


# Section 3.3: "transformers fail entirely (0.0% accuracy) to learn reversal from
# surface-level predictions"; at chance is read as within 2 times chance on every seed
NAMES_SOURCE = "Section 3.3"
NAMES_PAPER = "fail entirely: 0.0% accuracy (no MRR); at chance"


def chance_of(task):
    """Type-aware chance per seed: exact match 1/n_B; MRR of a uniform rank among the
    distinct first tokens of the tested entities' names."""
    return 1 / task.n_b, np.array(
        [probes.chance_mrr(int(n)) for n in task.test_first_tokens()]
    )


# %% [markdown]
# ## 1. Names fit every training fact and fail completely on reversal (live)
#
# MRR ranks the first target token among all name tokens; accuracy asks for the whole target
# name, teacher-forced. Chance is counted over the answers of the right type: a held-out
# answer is one of the $n_B$ tested entities, so exact-match chance is $1/n_B$, and chance MRR
# is the mean of $1/\mathrm{rank}$ for a uniform rank among the distinct first tokens of
# their names (about $(n_A+n_B)/m$ first names). The claims are stated as multiples of
# chance. Under the control `reverse_in_training` the held-out reverse facts are trained
# too, and the same tests must fail: they would see a learnt reversal.

# %%
names = surface_names.run(
    ledger.config(
        surface_names.Config(
            n_a=N_A,
            n_b=N_B,
            n_rel=N_REL,
            multiplicity=MULTIPLICITY,
            steps=STEPS,
            batch_size=128,
            seed=SEED,
            n_seeds=2,
            n_eval=300,
            eval_points=7,
        )
    )
)

# %% tags=["hide-input"]
chance_acc, chance_mrr = chance_of(names.task)
print(f"two-token names, m = {MULTIPLICITY}, {N_A} + {N_B} entities, {STEPS} steps:")
for split in ("train", "atomic", "test"):
    print(
        f"  {split}: accuracy {approx(names.final(split + '_acc'), TOL[split])}, "
        f"MRR {approx(names.final(split + '_mrr'), TOL[split])}"
    )
print(
    f"  held-out chance: accuracy 1/{N_B} = {chance_acc:.4f}, "
    f"MRR {np.round(chance_mrr, 4)}"
)
ledger.precondition(
    "fit-live",
    "the live names run fits its training and atomic facts (lowest)",
    np.minimum(names.final("train_acc"), names.final("atomic_acc")),
    above=0.95,
    print_tol=TOL_FIT,
)
ledger.check(
    "names-live-acc",
    "names: held-out reverse accuracy stays below 5 times chance (multiple of chance)",
    names.final("test_acc") / chance_acc,
    below=5,
    print_tol=TOL_ACC_RATIO,
    kind="paper",
    negative=True,
    source=NAMES_SOURCE,
    # no factor: at ±2 chance, "within 2 times chance" cannot be decided stably
    paper=NAMES_PAPER,
    paper_value=1.0,
    broken_by=("reverse_in_training",),
    requires=("fit-live",),
)
ledger.check(
    "names-live-mrr",
    "names: held-out reverse MRR stays below 2 times "
    "chance (multiple of chance; an answer ranked first: 1 / chance)",
    names.final("test_mrr") / chance_mrr,
    below=2,
    print_tol=TOL_MRR_RATIO,
    kind="paper",
    negative=True,
    source=NAMES_SOURCE,
    paper=NAMES_PAPER,
    paper_value=1.0,
    factor=2,
    broken_by=("reverse_in_training",),
    requires=("fit-live",),
)
ledger.glue(
    "live_fit",
    np.minimum(names.final("train_acc"), names.final("atomic_acc")),
    print_tol=TOL_FIT,
)
ledger.glue("live_test_acc", names.final("test_acc"), print_tol=TOL["test"] / 10)
ledger.glue("live_test_mrr", names.final("test_mrr"), print_tol=TOL["test"])
ledger.glue("live_chance_acc", chance_acc, digits=4)
ledger.glue("live_chance_mrr", chance_mrr.mean(), digits=4)

# %% [markdown]
# ## 2. One token per entity against names, 20,000 steps (stored runs)
#
# 1,600 entities teach the rule and 200 are tested (the paper: 50,000 and 30,000), 3 relation
# pairs, AdamW at $3\cdot10^{-3}$, batch 256, 3 seeds per setting; both settings see exactly
# the same facts. The control `swap_stored` reads each stored group as the other: the
# "names stay at chance" tests must then see the one-token runs' reversal, and the "one
# token reverses" tests the names' failure. Under `reverse_in_training` the names group
# is read from a stored run of the same setting that also trains the held-out reverse
# facts (seed 0, 20,000 steps): the same "at chance" tests must then see its reversal,
# so they are seen to detect learning when it happens. Under `shuffled_labels` the
# one-token group is read from its stored science control: the same recipe with the
# atomic facts' answers permuted (seed 0), so that no trained fact is the reverse of a
# held-out one; the "one token reverses" tests must then fail.

# %%
raw = records.load(SWEEP_DIR, curves=True)
shuffled = raw[raw["shuffle_atomic"].eq(True)]  # the stored science control run
every = records.control_runs(
    raw,
    "shuffle_atomic",
    names.config.shuffle_atomic,
    by=("multiplicity",),
)
leak = every[every["reverse_in_training"].eq(True)]  # the stored control run
df = records.control_runs(
    every, "reverse_in_training", names.config.reverse_in_training, by=("multiplicity",)
)
stored = {}
for m, g in df.sort_values("seed").groupby("multiplicity"):
    r0 = g.iloc[0]
    task = binding_task(
        int(r0.n_a), int(r0.n_b), int(r0.n_rel), int(m), [int(s) for s in g.seed]
    )
    stored[m] = dict(
        rows=g,
        chance=chance_of(task),
        steps=r0["curve.steps"],
        curve={
            k: np.stack(g[f"curve.{k}"])
            for k in [
                f"{s}_{x}" for s in ("train", "atomic", "test") for x in ("acc", "mrr")
            ]
        },
    )

# %% tags=["hide-input"]
print(
    f"stored runs: {len(df)}, git {sorted(set(df['git'].str[:10]))}, "
    f"{df['seconds'].sum() / 3600:.1f} hours of run time; "
    f"n_a = {sorted(set(df['n_a']))}, n_b = {sorted(set(df['n_b']))}, "
    f"steps = {sorted(set(df['steps']))}"
)
for m, st in stored.items():
    g, (c_acc, c_mrr) = st["rows"], st["chance"]
    print(
        ("one token per entity" if m == 0 else f"two-token names, m = {m}")
        + f", seeds {list(g.seed)}:"
    )
    for split in ("train", "atomic", "test"):
        print(
            f"  {split}: accuracy {exact(g[split + '_acc'])}, "
            f"MRR {exact(g[split + '_mrr'])}"
        )
    print(
        f"  held-out chance: accuracy 1/{int(g.iloc[0].n_b)} = {c_acc:.4f}, "
        f"MRR {np.round(c_mrr, 4)}"
    )
one, two = ledger.swap(0, MULTIPLICITY)  # swap_stored reads each as the other
abstract, named = stored[one]["rows"], stored[two]["rows"]
a_chance, n_chance = stored[one]["chance"], stored[two]["chance"]
ledger.precondition(
    "fit-stored",
    "both stored settings fit their training and atomic facts (lowest)",
    [g[k].min() for g in (abstract, named) for k in ("train_acc", "atomic_acc")],
    above=0.95,
    print_tol=0.01,
)
ledger.check(
    "names-stored-acc",
    "names, 20,000 steps: held-out reverse accuracy below "
    "5 times chance (multiple of chance)",
    named["test_acc"] / n_chance[0],
    below=5,
    print_tol=0.01,
    kind="paper",
    negative=True,
    source=NAMES_SOURCE,
    paper=NAMES_PAPER,
    paper_value=1.0,
    factor=2,
    broken_by=("swap_stored", "reverse_in_training"),
    requires=("fit-stored",),
)
ledger.check(
    "names-stored-mrr",
    "names, 20,000 steps: held-out reverse MRR below 1.5 "
    "times chance (multiple of chance)",
    named["test_mrr"] / n_chance[1],
    below=1.5,
    print_tol=0.01,
    kind="paper",
    negative=True,
    source=NAMES_SOURCE,
    paper=NAMES_PAPER,
    paper_value=1.0,
    factor=2,
    broken_by=("swap_stored", "reverse_in_training"),
    requires=("fit-stored",),
)
ledger.check(
    "one-token-mrr",
    "one token per entity: held-out reverse MRR above 10 "
    "times chance (multiple of chance)",
    abstract["test_mrr"] / a_chance[1],
    above=10,
    print_tol=0.01,
    kind="paper",
    source="Table 1",
    paper="held-out MRR about 0.8 to 0.97 (unverified reading); ours is in "
    "units of chance",
    broken_by=("swap_stored", "shuffled_labels"),
    requires=("fit-stored",),
)
ledger.check(
    "one-token-acc",
    "one token per entity: held-out reverse accuracy "
    "above 20 times chance (multiple of chance)",
    abstract["test_acc"] / a_chance[0],
    above=20,
    print_tol=0.01,
    kind="paper",
    source="Section 2",
    paper="the abstract level learns reversal (Table 1 gives MRR, no accuracy)",
    broken_by=("swap_stored", "shuffled_labels"),
    requires=("fit-stored",),
)
at_1000 = list(stored[0]["steps"]).index(1000)
ledger.glue(
    "stored_fit",
    min(g[k].min() for g in (abstract, named) for k in ("train_acc", "atomic_acc")),
    digits=3,
)
for key, m in (("one", 0), ("names", MULTIPLICITY)):
    g = stored[m]["rows"]
    ledger.glue(f"{key}_test_acc", g["test_acc"], digits=3)
    ledger.glue(f"{key}_test_mrr", g["test_mrr"], digits=3)
    ledger.glue(f"{key}_chance_mrr", stored[m]["chance"][1].mean(), digits=4)
    ledger.glue(f"{key}_chance_acc", stored[m]["chance"][0], digits=4)
    ledger.glue(f"{key}_acc_ratio", g["test_acc"] / stored[m]["chance"][0], digits=0)
    ledger.glue(
        f"{key}_mrr_at_1000", stored[m]["curve"]["test_mrr"][:, at_1000], digits=3
    )
leak_task = binding_task(
    *(int(leak.iloc[0][k]) for k in ("n_a", "n_b", "n_rel", "multiplicity")), [0]
)
leak_chance = chance_of(leak_task)
print(
    f"stored control run (held-out reverse facts trained too), seeds "
    f"{list(leak.seed)}: train accuracy {exact(leak['train_acc'])}, held-out reverse "
    f"accuracy {exact(leak['test_acc'])} ({exact(leak['test_acc'] / leak_chance[0])} "
    f"times chance), MRR {exact(leak['test_mrr'])}"
)
ledger.glue("leak_test_acc", leak["test_acc"], digits=3)
ledger.glue("leak_test_mrr", leak["test_mrr"], digits=3)
print(
    f"stored control run (one token per entity, atomic answers shuffled), seeds "
    f"{list(shuffled.seed)}: train accuracy {exact(shuffled['train_acc'])}, atomic "
    f"accuracy {exact(shuffled['atomic_acc'])}, held-out reverse accuracy "
    f"{exact(shuffled['test_acc'])}, MRR {exact(shuffled['test_mrr'])} (chance "
    f"{stored[0]['chance'][1].mean():.4f})"
)
for k in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
    ledger.glue(f"shuffled_{k}", shuffled[k], digits=3)
print(
    "test MRR at step 1,000 (one token per entity): "
    f"{exact(stored[0]['curve']['test_mrr'][:, at_1000])}"
)

# %% [markdown]
# ## 3. The stored runs are what this code computes (live re-run)
#
# The first `LIVE_STEPS` steps of the stored names run of seed `SEED` are trained again:
# same data and minibatches. On the machine that made the files the metrics at step
# `LIVE_STEPS` agree exactly; another CPU's kernels move the trajectory as another seed
# would, so the re-run is compared with the stored seeds' median, within their range plus
# a kernel tolerance. (The one-token run is not re-run: its trajectory at step 1,000 is
# sensitive to the kernels, and on an AVX2 machine its train accuracy there was below every
# stored seed's.) The claim's value is each metric's distance from the median beyond the
# seeds' range; under the control `no_training` the re-run is untrained and must disagree.

# %%
# Tolerance: kernel paths move these early metrics little beyond the seeds' range.
TOL_LIVE = 0.05
_ = ledger.recheck(
    "live-matches-stored",
    surface_names,
    stored[MULTIPLICITY]["rows"],
    metrics=("train_acc", "atomic_acc", "test_mrr"),
    steps=LIVE_STEPS,
    seed=SEED,
    against="median",
    below=TOL_LIVE,
    print_tol=0.04,
    # the re-run checks the stored file; the controls that do not break it skip it
    skip_under=("reverse_in_training", "swap_stored", "shuffled_labels"),
    what="the stored names run",
)

# %% mystnb={"figure": {"caption": "Standard transformer (2 layers, d = 64, no positions, tied embeddings) with one token per entity and with two-token names (multiplicity 10) on the same facts: 1,600 rule-teaching and 200 tested entities, 3 relation pairs, AdamW lr 3e-3, batch 256, 20,000 steps, 3 seeds (median and band; stored runs). Left: accuracy on the atomic facts and on the held-out reverse (test) facts. Right: test MRR against the type-aware chance (dotted). The paper trains 80,000 entities for up to 3M steps.", "name": "fig-surface-names"}, "tags": ["hide-input"]}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for m, st in stored.items():
    tag = "one token" if m == 0 else f"names m={m}"
    plot.seed_band(
        ax1, st["steps"], st["curve"]["atomic_acc"].T, label=f"{tag}: atomic"
    )
    plot.seed_band(
        ax1, st["steps"], st["curve"]["test_acc"].T, label=f"{tag}: test", ls="--"
    )
    line = ax2.plot([], [])[0]
    plot.seed_band(
        ax2,
        st["steps"],
        st["curve"]["test_mrr"].T,
        label=f"{tag}: test MRR",
        color=line.get_color(),
    )
    ax2.axhline(st["chance"][1].mean(), color=line.get_color(), ls=":", lw=1)
ax1.set(xlabel="step", ylabel="accuracy")
ax1.legend(fontsize="small")
ax2.set(xlabel="step", ylabel="MRR (dotted: chance)")
ax2.legend(fontsize="small")
plot.savefig(fig, "fig-surface-names")
plt.show()

# %% [markdown]
# ## 4. One token per entity at the paper's smallest size (stored runs)
#
# Table 1 of the paper gives a held-out reverse MRR of 0.823 for one layer at
# $|E_A| = 2{,}500$, its smallest size (an unverified reading). Runs at that size in the
# book's recipe: $|E_A|=2{,}500$, $|E_B|=1{,}500$ (the code's $0.6\,|E_A|$), the code's 6
# relation pairs, one layer, $d=64$, AdamW lr $3\cdot10^{-3}$ and batch 256 (the paper: lr
# $10^{-4}$, batch 1024, $d=768$), 50,000 steps, each seed printed below; and its science
# control, seed 0 with the atomic facts' answers permuted (read under `shuffled_labels`).
# The verdict sets our MRR beside the paper's: *in size* if every seed lies within a factor
# 1.25 of 0.823.

# %%
big_all = records.load(BIG_DIR, curves=True)
big_ctl = big_all[big_all["shuffle_atomic"].eq(True)]
big = records.control_runs(
    big_all, "shuffle_atomic", names.config.shuffle_atomic, by=("multiplicity",)
)
b0 = big.iloc[0]
big_task = binding_task(
    *(int(b0[k]) for k in ("n_a", "n_b", "n_rel", "multiplicity")), [int(b0.seed)]
)
big_chance = chance_of(big_task)
big_curves = {
    name: (np.asarray(r["curve.steps"]), np.asarray(r["curve.test_mrr"]))
    for name, r in [(f"one token, seed {int(r.seed)}", r) for _, r in big.iterrows()]
    + [("answers shuffled", big_ctl.iloc[0])]
}

# %% tags=["hide-input"]
shown = [("one token", r) for _, r in big.iterrows()]
for name, r in shown + [("atomic answers shuffled", big_ctl.iloc[0])]:
    print(
        f"{name}: n_a {int(r.n_a)}, n_b {int(r.n_b)}, n_rel {int(r.n_rel)}, "
        f"{int(r.n_layer)} layer, {int(r.steps)} steps, seed {int(r.seed)}, "
        f"{r.cpu_seconds / 3600:.2f} CPU-h; train accuracy {r.train_acc:.3f}, atomic "
        f"{r.atomic_acc:.3f}; held-out reverse accuracy {r.test_acc:.3f}, MRR "
        f"{r.test_mrr:.3f} (chance: accuracy {big_chance[0]:.4f}, MRR "
        f"{big_chance[1].mean():.4f})"
    )
ledger.precondition(
    "fit-2500",
    "the run at |E_A| = 2,500 fits its training and atomic facts (lowest)",
    [big["train_acc"].min(), big["atomic_acc"].min()],
    above=0.95,
    print_tol=0.001,
)
ledger.check(
    "abstract-2500-mrr",
    "one token per entity at |E_A| = 2,500, one layer, 50,000 steps: held-out "
    "reverse MRR above 10 times chance",
    big["test_mrr"],
    above=10 * big_chance[1].mean(),
    print_tol=0.001,
    kind="paper",
    source="Table 1",
    paper="held-out MRR 0.823 at |E_A| = 2.5K with one layer (unverified reading; "
    "d = 768, batch 1024, up to 3M steps)",
    paper_value=PAPER_MRR_2500,
    factor=1.25,
    broken_by=("shuffled_labels",),
    requires=("fit-2500",),
)
for key, rows in (("big", big), ("big_ctl", big_ctl)):
    for k in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
        ledger.glue(f"{key}_{k}", rows[k].to_numpy(), digits=3)
    ledger.glue(f"{key}_cpu_h", rows["cpu_seconds"].sum() / 3600, digits=2)
ledger.glue("big_n_seeds", len(big), digits=0)
at_40k = [
    np.asarray(r["curve.test_mrr"])[list(r["curve.steps"]).index(40000)]
    for _, r in big.iterrows()
]
ledger.glue("big_mrr_40k", np.asarray(at_40k), digits=3)
ledger.glue("big_fit_min", big[["train_acc", "atomic_acc"]].to_numpy().min(), digits=3)
ledger.glue("big_ratio", PAPER_MRR_2500 / big["test_mrr"].to_numpy(), digits=2)
ledger.glue("big_chance_mrr", big_chance[1].mean(), digits=4)

# What closing the gap would take, in steps: the MRR rises in an S-shape (near chance
# for 10,000 steps, then fast, then slower), so a power law in the MRR itself, fitted
# over its rise, overshoots. Per seed we fit the remaining error instead,
# 1 - MRR(t) = c t^-beta, by least squares in log-log over the second half of training
# (steps 25,000 to 50,000, after the rise began), and extrapolate it to the paper's
# 0.823 (an extrapolation of the trend, not a prediction). In entities: the 1,600-entity
# runs of section 2 at their last step (20,000) against these at the same step; they
# also differ in relation pairs (3 against 6) and tested entities (200 against 1,500),
# so two sizes give a comparison, not a fit.
big_fit = {}
for _, r in big.iterrows():
    st, mrr = np.asarray(r["curve.steps"]), np.asarray(r["curve.test_mrr"])
    late = st >= st[-1] / 2
    b, log_c = np.polyfit(np.log(st[late]), np.log(np.maximum(1 - mrr[late], 1e-4)), 1)
    need = np.exp((np.log(1 - PAPER_MRR_2500) - log_c) / b) if b < 0 else np.inf
    big_fit[int(r.seed)] = (-b, log_c, need)
    print(
        f"seed {int(r.seed)}: 1 - MRR ~ t^-{-b:.2f} over steps {int(st[late][0]):,}-"
        f"{int(st[-1]):,}; extrapolated, it reaches the paper's {PAPER_MRR_2500} at "
        f"about {need:,.0f} steps ({need / st[-1]:.1f} times this run)"
    )
fit_b = np.array([v[0] for v in big_fit.values()])
fit_need = np.array([v[2] for v in big_fit.values()])
ledger.glue("big_fit_exponent", fit_b, digits=2)
ledger.glue("big_fit_need_k", fit_need / 1000, digits=0)
ledger.glue("big_fit_need_x", fit_need / 50000, digits=1)
one_tok = stored[0]
small_last = one_tok["curve"]["test_mrr"][:, -1]
small_step = int(one_tok["steps"][-1])
big_same = np.array(
    [
        np.interp(
            small_step, np.asarray(r["curve.steps"]), np.asarray(r["curve.test_mrr"])
        )
        for _, r in big.iterrows()
    ]
)
print(
    f"held-out MRR at step {small_step:,}: {exact(small_last)} at |E_A| = "
    f"{int(one_tok['rows'].n_a.iloc[0]):,} (3 relation pairs, section 2) against "
    f"{exact(big_same)} at |E_A| = 2,500 (6 relation pairs)"
)
ledger.glue("small_mrr_20k", small_last, digits=3)
ledger.glue("big_mrr_20k", big_same, digits=3)

# %% mystnb={"figure": {"caption": "One token per entity at the paper's smallest Table-1 size (|E_A| = 2,500, |E_B| = 1,500, 6 relation pairs, one layer, d = 64, AdamW lr 3e-3, batch 256, each seed; stored runs): held-out reverse MRR against steps (log scale), with its science control (seed 0, the atomic answers permuted) and the paper's 0.823 at this size with one layer (unverified reading; d = 768, batch 1024, up to 3M steps). Dashed: per seed, the least-squares fit 1 - MRR = c t^-beta over the second half of training, extrapolated beyond the data to the paper's number (an extrapolation, not a measurement). Dotted: chance.", "name": "fig-surface-names-2500"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.6))
for name, (st, mrr) in big_curves.items():
    keep = st > 0
    ax.plot(st[keep], mrr[keep], marker="o", ms=3, label=name)
ax.axhline(
    PAPER_MRR_2500, color="k", ls="--", lw=1, label=f"paper, 1 layer ({PAPER_MRR_2500})"
)
ax.axhline(big_chance[1].mean(), color="grey", ls=":", lw=1, label="chance")
for i, (seed, (beta, log_c, need)) in enumerate(big_fit.items()):
    t = np.geomspace(25000, max(need, 50000) * 1.5, 60)
    ax.plot(
        t,
        1 - np.exp(log_c) * t**-beta,
        ls="--",
        lw=1,
        color=f"C{i}",
        label=f"fit 1 - c t^-{beta:.2f}, seed {seed} (extrapolated)",
    )
ax.set(xscale="log", xlabel="step", ylabel="held-out reverse MRR", ylim=(0, 1))
ax.xaxis.set_minor_formatter(NullFormatter())  # no crowded labels
ax.legend(fontsize="small")
plot.savefig(fig, "fig-surface-names-2500")
plt.show()

# %% [markdown]
# ## 5. The standard transformer with a memory layer (stored runs)
#
# The paper (Section 3.3, after Figure 4): "standard transformers equipped with memory
# layers also fail to generalize", so the memory layer helps only once the prediction is
# made at the level of concepts (JEPA), not of surface tokens. No number is given. Here
# the standard model's first block is replaced by the JEPA chapter's memory layer (top-1
# over frozen keys, one free vector per entity, read at the last token of its name;
# `revlib.models.memory_lm`), with one block above it, on the data of the JEPA chapter's
# runs at $|E_A|=2{,}500$ (240 tested entities, 3 relation pairs, $m=10$, $d=64$), in
# the standard model's recipe (AdamW lr $3\cdot10^{-3}$, batch 256) for 20,000 steps;
# beside it its science control, the same run with the held-out reverse facts trained
# too (read under `reverse_in_training`), which shows that the test detects reversal
# when it is learnt.

# %%
mem_all = records.load(MEM_DIR, curves=True)
mem_ctl = mem_all[mem_all["reverse_in_training"].eq(True)]
mem = records.control_runs(
    mem_all, "reverse_in_training", names.config.reverse_in_training, by=("memory",)
)
m0 = mem.iloc[0]
mem_task = binding_task(
    *(int(m0[k]) for k in ("n_a", "n_b", "n_rel", "multiplicity")), [int(m0.seed)]
)
mem_chance = chance_of(mem_task)
jepa_all = records.load(JEPA_2500_DIR, curves=True)
jepa_mem = jepa_all[  # the memory layer with one semantic block, as here
    jepa_all["memory"].eq(True)
    & jepa_all["n_sem"].eq(1)
    & ~jepa_all["shuffle_atomic"].eq(True)
].sort_values("seed")

# %% tags=["hide-input"]
for name, r in [("standard model + memory layer", r) for _, r in mem.iterrows()] + [
    ("the same, held-out reverse facts trained", r) for _, r in mem_ctl.iterrows()
]:
    print(
        f"{name}: {int(r.steps):,} steps, seed {int(r.seed)}, "
        f"{r.cpu_seconds / 3600:.2f} CPU-h; train accuracy {r.train_acc:.3f}, atomic "
        f"{r.atomic_acc:.3f}; held-out reverse accuracy {r.test_acc:.3f}, MRR "
        f"{r.test_mrr:.3f}; best held-out accuracy over training "
        f"{np.max(r['curve.test_acc']):.3f}"
    )
print(
    f"chance: accuracy {mem_chance[0]:.4f}, MRR {mem_chance[1].mean():.4f}; JEPA with "
    "the same memory layer on the same data (the JEPA chapter, 50,000 steps): held-out "
    f"accuracy {exact(jepa_mem['test_acc'])}"
)
ledger.precondition(
    "fit-memory",
    "the standard model with the memory layer fits its training and atomic facts "
    "(lowest)",
    [mem["train_acc"].min(), mem["atomic_acc"].min()],
    above=0.95,
    print_tol=0.001,
)
for cid, key, below, what in (
    ("memory-names-acc", "test_acc", 5, "accuracy below 5 times chance"),
    ("memory-names-mrr", "test_mrr", 2, "MRR below 2 times chance"),
):
    ledger.check(
        cid,
        "the standard transformer with the memory layer at |E_A| = 2,500, 20,000 "
        f"steps: held-out reverse {what} (multiple of chance)",
        mem[key].to_numpy() / (mem_chance[0] if key == "test_acc" else mem_chance[1]),
        below=below,
        print_tol=0.01,
        kind="paper",
        negative=True,
        source="Section 3.3 (on Figure 4)",
        paper="standard transformers equipped with memory layers also fail to "
        "generalize (no number)",
        broken_by=("reverse_in_training",),
        requires=("fit-memory",),
    )
for key, rows in (("mem", mem), ("mem_ctl", mem_ctl)):
    for k in ("train_acc", "atomic_acc", "test_acc", "test_mrr"):
        ledger.glue(f"{key}_{k}", rows[k].to_numpy(), digits=3)
    ledger.glue(f"{key}_cpu_h", rows["cpu_seconds"].sum() / 3600, digits=2)
ledger.glue(
    "mem_best_test_acc", max(np.max(c) for c in mem["curve.test_acc"]), digits=3
)
ledger.glue("mem_chance_acc", mem_chance[0], digits=4)
ledger.glue("mem_chance_mrr", mem_chance[1].mean(), digits=4)
ledger.glue("jepa_mem_test_acc", jepa_mem["test_acc"].to_numpy(), digits=3)

# %% mystnb={"figure": {"caption": "The standard transformer with the memory layer of the JEPA chapter in place of its first block (|E_A| = 2,500, 240 tested entities, 3 relation pairs, m = 10, d = 64, AdamW lr 3e-3, batch 256; stored runs): train, atomic and held-out reverse accuracy against steps (solid), and its science control with the held-out reverse facts trained (dashed). Grey: JEPA with the same memory layer on the same data (the JEPA chapter, its recipe), held-out reverse accuracy. Dotted: chance.", "name": "fig-surface-names-memory"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.6))
for rows, ls, tag in ((mem, "-", ""), (mem_ctl, "--", ", reverse facts trained")):
    for _, r in rows.iterrows():
        st = np.asarray(r["curve.steps"])
        for i, (k, lab) in enumerate(
            (("train_acc", "train"), ("atomic_acc", "atomic"), ("test_acc", "held-out"))
        ):
            ax.plot(
                st[st > 0],
                np.asarray(r[f"curve.{k}"])[st > 0],
                ls=ls,
                marker="o",
                ms=2,
                color=f"C{i}",
                label=f"{lab}{tag}",
            )
for _, r in jepa_mem.iterrows():
    st = np.asarray(r["curve.steps"])
    ax.plot(
        st[st >= 100],
        np.asarray(r["curve.test_acc"])[st >= 100],
        color="grey",
        lw=1,
        label=f"JEPA + memory, held-out (seed {int(r.seed)})",
    )
ax.axhline(mem_chance[0], color="grey", ls=":", lw=1, label="chance")
ax.set(xscale="log", xlabel="step", ylabel="accuracy", ylim=(0, 1.02))
ax.xaxis.set_minor_formatter(NullFormatter())
ax.legend(fontsize="x-small", ncol=2)
plot.savefig(fig, "fig-surface-names-memory")
plt.show()

# %% tags=["hide-input"]
ledger.summary()
