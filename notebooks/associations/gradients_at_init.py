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
# # Notebook: the gradients at initialisation
#
# The executable side of {doc}`../../book/associations/gradients_at_init`. On real batches of the
# noisy in-context recall task of {cite}`chen2025distributional` we compute the gradients of
# the simplified predictor $\xi=W_F e_q+W_V h_t$ at $W_F=W_V=0$ and check the chapter's
# version of Theorem 1: the feed-forward gradient writes the association $q\to\tau$ with a
# margin equal to $\alpha$, while the attention (value) gradient carries a copy signal of
# order $1/V$ that only large batches lift above the sampling noise. The gradients are
# autograd's, taken independently of the closed forms they are compared with; two
# controls (`CONTROL`) remove the noise or the attention, and the claims naming them must
# then fail.

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
SEED = 0  # seed of the data stream
ALPHA = 0.5  # noise probability of the batch study (the paper's script: 0.5)
N_SEQUENCES = 8192  # sequences per value of alpha (a multiple of 1024)
SEQ_LEN = 64  # T (the paper's code: 256)
CHAIN = "shakespeare"  # the paper's tiny-Shakespeare bigrams, or "synthetic"
CONTROL = "none"  # a control run, one of the ledger's controls; see check-claims

# %%
from revlib import claims, repro
from revlib.experiments import gradients_at_init as gi

repro.setup(SEED)
ledger = claims.Ledger.of(
    gi,
    CONTROL,
    scale=f"V = 65 ({CHAIN} chain), T = {SEQ_LEN}, {N_SEQUENCES} sequences per alpha",
    paper_scale="V = 65 (tiny-Shakespeare), T = 256, batch 512 (the code's script)",
    size_knobs={"N_SEQUENCES": N_SEQUENCES, "SEQ_LEN": SEQ_LEN},
)

import matplotlib.pyplot as plt
import numpy as np

from revlib import plot
from revlib.report import approx
from revlib.data import noisy_recall as nr
from revlib.theory import associations as theory

plot.set_theme()
V = nr.VOCAB_SIZE
chain = nr.chain(CHAIN)
q, tau = chain.trigger, chain.noise_token
print(
    f"{CHAIN} chain: V = {V}, trigger {chain.symbols[q]!r} (frequency pi_q = "
    f"{chain.pi[q]:.3f}), tau {chain.symbols[tau]!r} (frequency "
    f"{chain.pi[tau]:.4f}), background entropy = {chain.entropy():.2f} nats"
)
ledger.glue("pi_q", chain.pi[q], digits=3)

# %% [markdown]
# ## 1. The task
#
# One sequence of the chain, as characters: `_` marks the trigger (the space), `!` is the
# noise token $\tau$, and the answer $\bar y$ is shown in brackets. After each trigger the
# next token is $\tau$ with probability $\alpha$ and $\bar y$ otherwise, so the text reads
# as Shakespeare's character bigrams broken after every space.

# %% tags=["hide-input"]
demo = nr.sample([SEED], n=1, seq_len=40, alpha=ALPHA, stream=999, chain=CHAIN)
ybar = demo.ybar[0, 0].item()


def show(tok):
    text = repr(chain.symbols[tok])[1:-1]  # '\n' and the like stay visible
    return "_" if tok == q else f"[{text}]" if tok == ybar else text


sep = "" if CHAIN == "shakespeare" else " "  # the synthetic chain's symbols are ids
print(sep.join(show(t) for t in demo.x[0, 0].tolist()))
print(
    f"answer ybar = {ybar}, loss positions (trigger, 2nd occurrence on): "
    f"{int(demo.mask.sum())}"
)

# %% [markdown]
# ## 2. The two signals against the closed forms
#
# For each $\alpha$ we take autograd's gradients of the simplified predictor at
# initialisation over 8192 sequences. The FF margin is the $\tau$ entry of
# $-\nabla_{W_F}L\,e_q$ minus the mean of the other entries; the closed form is exactly
# $\alpha$, and we compare in units of its standard error. The attention copy signal is the
# mean diagonal minus the mean off-diagonal entry of $-\nabla_{W_V}L$. That it equals
# $(\mathbb E[h_t(y)]-1/V)/(V-1)$ is an identity (the proof's trace argument), shown and not
# counted; the claim is that it follows the leading order
# $((1-\alpha)^2+\alpha^2-1/V)\,\rho/(V-1)$ with $\rho=\mathbb E[(n-1)/t]$, which knows
# nothing of the labels but $\alpha$.

# %%
res = gi.run(
    ledger.config(
        gi.Config(
            alpha=ALPHA,
            seq_len=SEQ_LEN,
            chain=CHAIN,
            n_sequences=N_SEQUENCES,
            seed=SEED,
        )
    )
)
leading = theory.attention_signal_leading(res.alphas, res.rho)
exact = theory.attention_signal_exact(res.label_share)
# standard error of the FF margin over all loss positions, labels taken as independent:
# it runs low at small alpha (a sequence whose ybar is tau has only tau labels), hence 5
ff_se = theory.ff_noise(res.alphas, res.n_positions) * V / (V - 1)

# %% tags=["hide-input"]
print(" alpha  FF margin  copy signal  leading order   rho")
for a, f, c, l, r in zip(res.alphas, res.ff_margin, res.copy, leading, res.rho):
    print(f"{a:6.1f}  {f:9.3f}  {c:11.5f}  {l:13.5f}  {r:5.3f}")
print(f"1 / (V - 1) = {1 / (V - 1):.5f}")
# Stated as the relative error, not in standard errors: each z-score is itself noise
# (within 2.3 on 6 seeds), and it moves between seeds by up to 3.6, more than a bound of
# 5 leaves as margin.
ledger.check(
    "ff-margin-alpha",
    "autograd's FF margin for q -> tau equals alpha within 10% at every alpha "
    "(margin over alpha, minus 1)",
    res.ff_margin / res.alphas - 1,
    above=-0.1,
    below=0.1,
    print_tol=0.05,
    kind="paper",
    source="Theorem 1",
    paper="the FF gradient writes q -> tau with margin Theta(alpha) (no "
    "number; the exact alpha is the book's derivation)",
    broken_by=("no_noise",),
)
ledger.glue(
    "ff_z_max", np.abs((res.ff_margin - res.alphas) / ff_se).max(), print_tol=1.0
)
ledger.sanity(
    "copy-trace",
    "autograd's copy signal equals (E[h_t(y)] - 1/V) / (V - 1) "
    "(relative difference; the trace identity)",
    np.abs(res.copy - exact) / np.abs(exact),
    below=1e-6,
    print_tol=1e-7,
)
ledger.check(
    "copy-leading-order",
    "the copy signal over its leading order "
    "((1-a)^2 + a^2 - 1/V) rho / (V - 1), every alpha",
    res.copy / leading,
    above=0.8,
    below=1.2,
    print_tol=0.03,
    kind="derivation",
    source="the chapter's Theorem, part 2",
    broken_by=("no_noise", "no_attention"),
)
ledger.glue("copy_leading", res.copy / leading, print_tol=0.03)
ledger.sanity(
    "copy-below-bound",
    "copy signal below (1 - 1/V) / (V - 1), since h_t(y) <= 1 (share of it)",
    res.copy * (V - 1) / (1 - 1 / V),
    below=1.0,
    print_tol=0.01,
)
ledger.check(
    "signal-ratio",
    f"at alpha = {ALPHA} the FF margin is more than V times the copy signal",
    res.ff_signal / res.attn_signal,
    above=V,
    print_tol=100,
    kind="paper",
    source="Theorem 1",
    paper="FF signal Theta(alpha) against attention O(1/V) (no number)",
    broken_by=("no_noise", "no_attention"),
)
ledger.glue("signal_ratio", res.ff_signal / res.attn_signal, print_tol=100)

# %% mystnb={"figure": {"caption": "Gradients at initialisation on real batches (8192 sequences of length 64 per value of alpha; the tiny-Shakespeare character chain, V = 65). Left: the FF margin that one gradient step writes for $q\\to\\tau$ (autograd), against the closed form $\\alpha$. Right: the attention copy signal (autograd), against the exact identity and its leading order $((1-\\alpha)^2+\\alpha^2-1/V)\\rho/(V-1)$; note the scale, about 500 times smaller. The paper uses T = 256; its constants are not known to us.", "name": "fig-grad-init-signals"}} tags=["hide-input"]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.plot(res.alphas, res.ff_margin, "o", label="measured")
ax1.plot(res.alphas, res.alphas, "k--", lw=1, label=r"closed form $\alpha$")
ax1.set(xlabel=r"noise probability $\alpha$", ylabel="FF margin for $q\\to\\tau$")
ax1.legend()
ax2.plot(res.alphas, res.copy, "o", label="measured")
ax2.plot(res.alphas, exact, "k--", lw=1, label="exact identity")
ax2.plot(res.alphas, leading, "k:", lw=1.5, label="leading order")
ax2.set(xlabel=r"noise probability $\alpha$", ylabel="attention copy signal")
ax2.legend()
plot.savefig(fig, "fig-grad-init-signals")
plt.show()

# %% [markdown]
# ## 3. Signal against sampling noise
#
# A minibatch of $m$ sequences gives an empirical gradient. For each batch size we split the
# sequences into batches and measure the spread of the FF margin and of one copy entry of
# $-\nabla_{W_V}L$ over batches. The FF closed form treats the labels as independent:
# $\sqrt{p(1-p)/M}\cdot V/(V-1)$ with $p=\alpha+(1-\alpha)/V$ and $M$ loss positions. We check
# it where at least 512 batches estimate the spread (a spread estimated from fewer batches
# moves by more than the tolerance between seeds).

# %%
ff_closed = theory.ff_noise(ALPHA, res.positions) * V / (V - 1)
# the spreads shrink like m^(-1/2) whatever the signal (which the controls remove)
slope_ff = -np.polyfit(np.log(res.batch_sizes), np.log(res.ff_std), 1)[0]
slope_at = -np.polyfit(np.log(res.batch_sizes), np.log(res.attn_std), 1)[0]
snr = np.clip(res.attn_snr, 1e-12, None)
m_star = np.exp(
    np.interp(0.0, np.log(snr), np.log(res.batch_sizes), left=np.nan, right=np.nan)
)
many = res.batch_sizes <= N_SEQUENCES // 512

# %% tags=["hide-input"]
print(" batch  positions  FF std  (closed form)  FF SNR  copy-entry std  attention SNR")
for i, b in enumerate(res.batch_sizes):
    print(
        f"{b:6d}  {res.positions[i]:9.0f}  {res.ff_std[i]:6.4f}"
        f"  ({ff_closed[i]:6.4f})  {res.ff_snr[i]:7.1f}"
        f"  {res.attn_std[i]:14.5f}  {res.attn_snr[i]:13.2f}"
    )
print(
    f"batch size (sequences) at which the attention SNR reaches 1: {approx(m_star, 30)}"
)
ledger.glue("m_star", m_star, print_tol=30)
ledger.check(
    "ff-noise-closed-form",
    "FF spread over batches over its closed form sqrt(p(1-p)/M) V/(V-1), "
    "between 0.9 and 1.25, where >= 512 batches estimate it",
    res.ff_std[many] / ff_closed[many],
    above=0.9,
    below=1.25,
    print_tol=0.06,
    kind="derivation",
    source="the chapter's Theorem, part 3",
    broken_by=("no_noise",),
)
ledger.glue("ff_noise_ratio", res.ff_std[many] / ff_closed[many], print_tol=0.06)
# shown, not claimed: a mean of m independent sequences (heavy-tailed under no_noise)
print(
    f"spreads against batch size, minus log-log slopes: FF {approx(slope_ff, 0.05)}, "
    f"attention {approx(slope_at, 0.05)} (1/2 for a mean of m independent sequences)"
)
ledger.check(
    "ff-resolved-at-4",
    f"the FF margin is resolved with batches of {res.batch_sizes[0]} "
    "sequences (SNR above 3)",
    res.ff_snr[0],
    above=3,
    print_tol=0.5,
    kind="ours",
    broken_by=("no_noise",),
)
ledger.glue("ff_snr_4", res.ff_snr[0], print_tol=0.5)
ledger.check(
    "ff-over-attention-snr",
    "at every batch size the FF SNR is more than 10 times the attention SNR",
    res.ff_snr / res.attn_snr,
    above=10,
    print_tol=4,
    kind="paper",
    source="Theorem 1",
    paper="attention gradients at init are much noisier than the FF's "
    "(Section 3.1, rebuttal; no number)",
    broken_by=("no_noise", "no_attention"),
)
ledger.glue("snr_ratio", res.ff_snr / res.attn_snr, print_tol=4)

# %% mystnb={"figure": {"caption": "Signal-to-noise ratio of one gradient entry against the batch size (alpha = 0.5, T = 64, 8192 sequences split into batches). FF: the $q\\to\\tau$ margin over its spread, with the closed form (dashed). Attention: the copy signal over the spread of one copy entry; both grow like the square root of the batch size (dotted: slope 1/2), but the attention one starts about 20 times lower. The paper's batch is 512 sequences of length 256.", "name": "fig-grad-init-snr"}} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.5, 3.8))
b = res.batch_sizes
ax.loglog(b, np.abs(res.ff_snr), "o-", label="FF margin (measured)")
ax.loglog(
    b, np.abs(res.ff_signal) / ff_closed, "k--", lw=1, label="FF (closed-form noise)"
)
ax.loglog(b, np.abs(res.attn_snr), "s-", label="attention copy entry (measured)")
ax.loglog(
    b,
    np.abs(res.attn_snr[0]) * np.sqrt(b / b[0]),
    "k:",
    lw=1,
    label=r"$\propto\sqrt{m}$",
)
ax.axhline(1, color="grey", lw=1)
ax.set(xlabel="batch size $m$ (sequences)", ylabel="signal / noise")
ax.legend(fontsize="small")
plot.savefig(fig, "fig-grad-init-snr")
plt.show()

# %% [markdown]
# ## Summary
#
# At initialisation the feed-forward gradient writes $q\to\tau$ with margin $\alpha$, and a
# batch of a few sequences already resolves it. The attention gradient's copy signal is
# of order $1/V$, matches its leading-order formula, and needs batches of dozens of
# sequences before a single entry rises above its sampling noise. With the noise off
# (`CONTROL = "no_noise"`) the FF margin and the asymmetry vanish, and with the attention
# removed (`"no_attention"`) so does the copy signal: each claim fails under its control.
# This is the asymmetry the next chapter sees in training: the FF layer learns the noise
# association first.

# %% tags=["hide-input"]
ledger.summary()
