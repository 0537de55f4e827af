"""Noisy in-context recall (Chen, Bruna & Bietti 2025; built on Bietti et al. 2023).

Background text is a first-order Markov chain over ``V = 65`` symbols, one of the
:func:`chain` values:

* ``"shakespeare"``: the paper's. The character unigram and bigram counts of
  tiny-Shakespeare, as the original code ships them (``data/meta.pkl`` of
  leichen2018/ATTN_vs_MLP, MIT licence, vendored here as ``tiny_shakespeare_meta.pkl``
  with its licence; read without running pickled code, and checked against its
  SHA-256). The trigger is ``' '`` (the most frequent character, id 1) and the noise
  token ``'!'`` (id 2), as in the paper's script.
* ``"synthetic"``: the book's first stand-in. A Zipf-like unigram ``pi`` and bigram
  rows ``cond[i] ~ Dirichlet(concentration * pi)``, drawn once from a fixed stream;
  symbol 0 (the most frequent) is the trigger and the rare symbol 63 the noise token.
* ``"unigram"``: a control, the synthetic chain with its bigram removed: every row of
  ``cond`` is the unigram ``pi``, so the next symbol does not depend on the current one
  (the Bayes prediction of the background is the same everywhere), with the synthetic
  chain's unigram, trigger and noise token.

Symbol ``q`` is the trigger. Each sequence draws its own answer ``ybar ~ Unif([V])``;
after *every* occurrence of ``q`` the next token is the fixed noise token ``tau`` with
probability ``alpha`` (an independent coin per occurrence) and ``ybar`` otherwise.
``tau`` is an ordinary, rare symbol of the vocabulary, as ``'!'`` is in the original
code.

The training loss of the paper's script sits only at trigger positions from the second
occurrence on (``mask``): there the Bayes-optimal prediction is ``p(tau) = alpha``,
``p(ybar) = 1 - alpha``.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from revlib import _validate, repro

VOCAB_SIZE = 65
CHAINS = ("shakespeare", "synthetic", "unigram")
# the synthetic chain's trigger and noise token (Shakespeare's: ' ' and '!')
TRIGGER = 0  # q: the most frequent symbol
NOISE_TOKEN = 63  # tau: a rare symbol (unigram frequency about 0.004)
_STATS_SEED = 20_250_227  # the chain is part of the task, not of an experiment's seed
SHAKESPEARE_META = Path(__file__).with_name("tiny_shakespeare_meta.pkl")
SHAKESPEARE_SHA256 = "48d181746e7f7fd1b2b88dcb97d3eb4c0957e7a303749be99bdd709f382fe0d6"


@dataclass(frozen=True)
class Chain:
    """A background chain: unigram ``pi`` ``[V]``, bigram conditionals ``cond``
    ``[V, V]`` (read-only), the ``trigger`` and ``noise_token`` ids and each id's
    ``symbols`` (characters for the Shakespeare chain)."""

    name: str
    pi: np.ndarray
    cond: np.ndarray
    trigger: int
    noise_token: int
    symbols: tuple[str, ...]

    def entropy(self) -> float:
        """Entropy (nats) of the background next token, averaged over ``pi``."""
        c = self.cond
        logc = np.log(np.where(c > 0, c, 1.0))
        return float(-(self.pi[:, None] * c * logc).sum())


class _DataOnly(pickle.Unpickler):
    """An unpickler that builds only plain containers: any class or function reference
    in the file is refused, so reading it runs no code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"{SHAKESPEARE_META.name} may hold only plain data, found {module}.{name}"
        )


def shakespeare_meta() -> dict:
    """The vendored tiny-Shakespeare statistics as the original code pickled them:
    ``vocab_size``, ``itos``, ``stoi``, ``unigrams``, ``bigrams``, ``bigrams_cond``
    (counts over the whole text)."""
    raw = SHAKESPEARE_META.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHAKESPEARE_SHA256:
        raise ValueError(
            f"{SHAKESPEARE_META} has SHA-256 {digest}, not the original code's "
            f"{SHAKESPEARE_SHA256}: restore it from the repository"
        )
    return _DataOnly(io.BytesIO(raw)).load()


def chain(name: str) -> Chain:
    """The background chain ``name`` (one of :data:`CHAINS`), cached and read-only."""
    _validate.choice("chain", name, CHAINS)
    return _build_chain(name)


@lru_cache(maxsize=4)
def _build_chain(name: str) -> Chain:
    if name in ("synthetic", "unigram"):
        pi, cond = character_statistics()
        if name == "unigram":  # the bigram removed: every row is the unigram
            cond = np.tile(pi, (VOCAB_SIZE, 1))
            cond.flags.writeable = False
        symbols = tuple(str(i) for i in range(VOCAB_SIZE))
        return Chain(name, pi, cond, TRIGGER, NOISE_TOKEN, symbols)
    meta = shakespeare_meta()
    stoi, itos = meta["stoi"], meta["itos"]
    V = meta["vocab_size"]
    assert V == VOCAB_SIZE == len(stoi)
    pi = np.zeros(V)
    for ch, count in meta["unigrams"].items():
        pi[stoi[ch]] = count
    pi /= pi.sum()
    # the original code's conditionals: bigram counts over all adjacent pairs, each row
    # normalised (every character is followed by something in the text)
    cond = np.zeros((V, V))
    for (a, b), count in meta["bigrams"].items():
        cond[stoi[a], stoi[b]] += count
    assert (cond.sum(1) > 0).all()
    cond /= cond.sum(1, keepdims=True)
    pi.flags.writeable = False
    cond.flags.writeable = False
    symbols = tuple(itos[i] for i in range(V))
    # the script's trigger: the most frequent character (k = 1, fixed_special_toks);
    # its noise token: noise_token_id = 2
    trigger = int(np.argmax(pi))
    return Chain(name, pi, cond, trigger, stoi["!"], symbols)


@dataclass(frozen=True)
class NoisyRecall:
    """A batch of sequences for seeds ``S``; ``N`` sequences of length ``T`` per seed.

    ``x`` ``[S, N, T]`` inputs, ``y`` ``[S, N, T]`` next tokens
    (``y[..., t] = x[..., t+1]``). ``ybar`` ``[S, N]`` the sequence's answer.
    ``occurrence`` ``[S, N, T]``: at an input trigger, its occurrence index 1, 2, ...; 0
    elsewhere. ``noise`` ``[S, N, T]``: the label is ``tau`` because the noise coin said
    so. ``after_trigger`` ``[S, N, T]``: the input at this position followed a trigger
    (it is ``tau`` or ``ybar``).
    """

    x: torch.Tensor
    y: torch.Tensor
    ybar: torch.Tensor
    occurrence: torch.Tensor
    noise: torch.Tensor
    after_trigger: torch.Tensor
    alpha: float
    trigger: int = TRIGGER
    noise_token: int = NOISE_TOKEN
    chain: str = "synthetic"  # the name of the background chain (:func:`chain`)

    @property
    def mask(self) -> torch.Tensor:
        """Loss positions ``[S, N, T]``: trigger inputs from the 2nd occurrence on."""
        return self.occurrence >= 2

    @property
    def n_seeds(self) -> int:
        return self.x.shape[0]

    def select(self, idx: torch.Tensor) -> "NoisyRecall":
        """Per-seed subset of sequences; ``idx`` ``[S, B]``."""

        def take(t):
            index = idx.view(*idx.shape, *([1] * (t.dim() - 2))).expand(
                *idx.shape, *t.shape[2:]
            )
            return t.gather(1, index)

        return NoisyRecall(
            take(self.x),
            take(self.y),
            take(self.ybar),
            take(self.occurrence),
            take(self.noise),
            take(self.after_trigger),
            self.alpha,
            self.trigger,
            self.noise_token,
            self.chain,
        )


@lru_cache(maxsize=4)
def character_statistics(concentration: float = 8.0) -> tuple[np.ndarray, np.ndarray]:
    """The generated chain: unigram ``pi`` ``[V]`` and bigram conditionals ``cond``
    ``[V, V]``.

    ``pi_i`` is proportional to ``(i + 2) ** -1.1`` (so ``pi_q`` is close to the 0.15 of
    the space character in tiny-Shakespeare); each row of ``cond`` is Dirichlet around
    ``pi``, with ``concentration`` setting how peaked bigrams are (small: nearly
    deterministic). The arrays are cached and shared between callers, so they are
    read-only (copy to change one).
    """
    _validate.real("concentration", concentration, 0.0, 1e6, lo_open=True)
    rank = np.arange(VOCAB_SIZE)
    pi = (rank + 2.0) ** -1.1
    pi /= pi.sum()
    rng = np.random.default_rng(_STATS_SEED)
    cond = rng.dirichlet(concentration * VOCAB_SIZE * pi, size=VOCAB_SIZE)
    cond = np.maximum(cond, 1e-12)
    cond /= cond.sum(axis=1, keepdims=True)
    pi.flags.writeable = False
    cond.flags.writeable = False
    return pi, cond


def bigram_entropy(name: str = "synthetic") -> float:
    """Entropy (nats) of the background next token of chain ``name``, averaged over the
    chain's unigram."""
    return chain(name).entropy()


def sample(
    seeds: list[int],
    n: int,
    seq_len: int,
    alpha: float,
    stream: int = 0,
    chain: str = "synthetic",
) -> NoisyRecall:
    """``n`` sequences of length ``seq_len`` per seed over the background ``chain``
    (one of :data:`CHAINS`); seed ``s``'s data depends only on ``(s, stream)`` (use
    different ``stream`` values for training and test sets)."""
    _validate.integer("n", n, 1, 10**7)
    _validate.integer("seq_len", seq_len, 2, 10**5)
    _validate.real("alpha", alpha, 0.0, 1.0)
    _validate.integer("stream", stream, 0, 10**6)
    _validate.choice("chain", chain, CHAINS)
    seeds = _validate.seeds(seeds)
    c = _build_chain(chain)  # the argument shadows the function chain()
    cdf_pi = _stack(np.cumsum(c.pi))
    cdf = _stack(np.cumsum(c.cond, axis=1))
    parts = [
        _sample_one(
            repro.generator(s * 1_000_003 + stream * 7_919 + 17),
            n,
            seq_len,
            alpha,
            cdf_pi,
            cdf,
            c.trigger,
            c.noise_token,
        )
        for s in seeds
    ]
    fields = [torch.stack([p[i] for p in parts]) for i in range(6)]
    return NoisyRecall(
        *fields,
        alpha=float(alpha),
        trigger=c.trigger,
        noise_token=c.noise_token,
        chain=chain,
    )


def _inverse_cdf(
    stacked: torch.Tensor, rows: torch.Tensor, u: torch.Tensor
) -> torch.Tensor:
    """Categorical draws from row ``rows`` ``[n]`` of a CDF table at uniforms ``u``
    ``[n]``.

    ``stacked`` is the table flattened with row ``i`` shifted by ``i`` (see
    :func:`_stack`), so one ``searchsorted`` of ``rows + u`` serves every row without
    gathering ``[n, V]``.
    """
    V = VOCAB_SIZE
    pos = torch.searchsorted(
        stacked, (rows.double() + u.double()).contiguous(), right=True
    )
    return (pos - rows * V).clamp(0, V - 1)


def _stack(cdf: np.ndarray) -> torch.Tensor:
    cdf = np.atleast_2d(cdf).astype(np.float64)
    cdf[:, -1] = 1.0
    return torch.from_numpy((cdf + np.arange(cdf.shape[0])[:, None]).ravel())


def _sample_one(gen, n, seq_len, alpha, cdf_pi, cdf, trigger, noise_token):
    tokens = torch.empty(n, seq_len + 1, dtype=torch.long)
    noise = torch.zeros(n, seq_len + 1, dtype=torch.bool)
    ybar = torch.randint(0, VOCAB_SIZE, (n,), generator=gen)
    zeros = torch.zeros(n, dtype=torch.long)
    tokens[:, 0] = _inverse_cdf(cdf_pi, zeros, torch.rand(n, generator=gen))
    # one loop over positions, vectorised over sequences
    for t in range(1, seq_len + 1):
        last = tokens[:, t - 1]
        background = _inverse_cdf(cdf, last, torch.rand(n, generator=gen))
        coin = torch.rand(n, generator=gen) < alpha
        is_q = last == trigger
        tokens[:, t] = torch.where(
            is_q, torch.where(coin, noise_token, ybar), background
        )
        noise[:, t] = is_q & coin
    x, y = tokens[:, :-1], tokens[:, 1:]
    is_q = x == trigger
    occurrence = torch.cumsum(is_q.long(), dim=1) * is_q
    after = torch.zeros_like(is_q)
    after[:, 1:] = is_q[:, :-1]
    return x, y, ybar, occurrence, noise[:, 1:], after
