"""Chapter "Training dynamics of a small LM from scratch": a small causal transformer
trained on the generated corpus of :mod:`revlib.data.small_corpus` with the loss on
every token.

We follow, at the IOI answer positions of clean test sequences (``alpha = 0``: the
answer is always the IO name), the probability of the generic token ``the``, of the IO
name and of the subject name over training; then we remove or truncate the feed-forward
layers of the last layers (``ff_off``, :func:`revlib.probes.truncated`) and measure
where the probability goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from revlib import _validate, probes
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data import small_corpus as sc
from revlib.metrics import masked_mean
from revlib.models.transformer import Transformer, TransformerConfig
from revlib.train import History, train

METRICS = ("p_the", "p_io", "p_s", "loss")


NOTEBOOK = "associations/small_lm"
CONTROLS = (
    no_training("the model keeps its initial weights"),
    Control(
        "swap_io_s",
        "plumbing",
        "the IO and subject labels are swapped where p(IO) and p(S) are measured (live "
        "and stored runs)",
        swaps=True,
    ),
    Control(
        "no_to_the",
        "science",
        "the corpus never puts 'the' after 'to' (generic sentences read 'went to "
        "PLACE', the generic IOI ending 'to NOUN'), so the distributional association "
        "to -> the is gone while 'the' still opens sentences (live and stored runs)",
        {"no_to_the": True},
    ),
    Control(
        "no_last_ff",
        "science",
        "the last layer's FF block is left out in training and in every evaluation, "
        "so removing it afterwards takes nothing away (live and stored runs)",
        {"no_last_ff": True},
    ),
)
SIZE_KNOBS = ("STEPS", "N_LAYER")  # what check-claims --scale multiplies
QUICK = {"STEPS": 300, "N_SEEDS": 1}  # CI's control runs


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """A ``n_layer``-layer, ``n_head``-head pre-LN transformer of width ``d`` with
    learned embeddings and positions, AdamW on the next-token loss of every position of
    fresh sequences. ``p_ioi``/``alpha``: see :func:`revlib.data.small_corpus.sample`.
    ``rank_fractions``: fractions of the last FF's ``W_in`` rank kept in the final
    sweep. Two science controls (the notebook's ``CONTROL``), off by default:
    ``no_to_the`` trains and evaluates on the corpus without ``to the``
    (:func:`revlib.data.small_corpus.sample` with ``to_the=False``); ``no_last_ff``
    leaves the last layer's FF block out of the model everywhere (its
    weights exist but take no part)."""

    n_layer: int = 2
    n_head: int = 2
    d: int = 64
    seq_len: int = 48
    p_ioi: float = 0.3
    alpha: float = 0.25
    n_seeds: int = 2
    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3
    layernorm: bool = True
    positional: str = "rotary"
    weight_decay: float = 0.01
    n_test: int = 256
    eval_points: int = 16
    rank_fractions: tuple[float, ...] = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0)
    no_to_the: bool = False
    no_last_ff: bool = False

    OPTIMIZER = "adamw"

    def __post_init__(self):
        _validate.integer("n_layer", self.n_layer, 1, 24)
        _validate.integer("n_head", self.n_head, 1, 16)
        _validate.integer("d", self.d, 4, 4096)
        _validate.integer("seq_len", self.seq_len, 17, 4096)
        _validate.real("p_ioi", self.p_ioi, 0.0, 1.0, lo_open=True)
        _validate.real("alpha", self.alpha, 0.0, 1.0, hi_open=True)
        _validate.integer("n_test", self.n_test, 8, 100_000)
        _validate.sequence("rank_fractions", self.rank_fractions)
        for i, r in enumerate(self.rank_fractions):
            _validate.real(f"rank_fractions[{i}]", r, 0.0, 1.0)
        _validate.boolean("no_to_the", self.no_to_the)
        _validate.boolean("no_last_ff", self.no_last_ff)
        self.model_config()  # n_layer, n_head, d, positional, layernorm
        super().__post_init__()  # seed, n_seeds; the optimiser's fields

    def model_config(self) -> TransformerConfig:
        return TransformerConfig(
            vocab_size=sc.VOCAB_SIZE,
            block_size=self.seq_len,
            n_layer=self.n_layer,
            n_head=self.n_head,
            d_model=self.d,
            ff="mlp",
            ff_mult=4,
            positional=self.positional,
            layernorm=self.layernorm,
            tied=True,
        )


@dataclass
class Result:
    """``history[name]`` ``[E, S]`` for :data:`METRICS` (clean test, answer positions;
    loss on noisy test data, every position). ``ablation[name][layer]`` ``[S]``: the
    metrics with the FF of layers ``layer..n_layer-1`` removed. ``ranks`` and
    ``sweep[name]`` ``[R, S]``: the last layer's FF input matrix truncated to each
    rank."""

    config: Config
    history: History
    model: Transformer
    ablation: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)
    sweep: dict[str, np.ndarray] = field(default_factory=dict)
    n_params: int = 0

    def final(self, name: str) -> np.ndarray:
        return self.history.final(name)


def answer_probs(model: Transformer, data: sc.Corpus, ff_off=frozenset()) -> dict:
    """Mean p(the), p(IO), p(S) per seed ``[S]`` at the IOI answer positions."""
    probs = F.softmax(model(data.x, ff_off=ff_off).double(), dim=-1)
    m = data.answer
    io, s = data.io.clamp_min(0), data.s.clamp_min(0)
    return {
        "p_the": masked_mean(probs[..., sc.THE], m),
        "p_io": masked_mean(probs.gather(-1, io[..., None])[..., 0], m),
        "p_s": masked_mean(probs.gather(-1, s[..., None])[..., 0], m),
    }


def run(config: Config) -> Result:
    """Train ``n_seeds`` models at once; evaluate on clean IOI answers
    (``alpha = 0``)."""
    S, B = config.n_seeds, config.batch_size
    pool = sc.sample(
        config.seeds,
        config.steps * B,
        config.seq_len,
        config.p_ioi,
        config.alpha,
        stream=0,
        to_the=not config.no_to_the,
    )
    clean = sc.sample(
        config.seeds,
        config.n_test,
        config.seq_len,
        config.p_ioi,
        0.0,
        stream=1,
        to_the=not config.no_to_the,
    )
    noisy = sc.sample(
        config.seeds,
        config.n_test,
        config.seq_len,
        config.p_ioi,
        config.alpha,
        stream=2,
        to_the=not config.no_to_the,
    )
    model = Transformer(config.model_config(), n_seeds=S, seed=config.seed)
    L = config.n_layer
    # the FF blocks the model goes without everywhere (the control no_last_ff)
    left_out = frozenset({L - 1}) if config.no_last_ff else frozenset()

    def token_loss(data):
        logits = model(data.x, ff_off=left_out)
        return (
            F.cross_entropy(logits.flatten(0, 2), data.y.flatten(), reduction="none")
            .view(data.y.shape)
            .mean(dim=(1, 2))
        )

    def loss(idx):
        return token_loss(pool.select(idx))

    def evaluate():
        return {**answer_probs(model, clean, left_out), "loss": token_loss(noisy)}

    history = train(
        model,
        loss,
        config.train_config(),
        evaluate,
        n_train=pool.x.shape[1],
        n_seeds=S,
        batch_seeds=[s + 104_729 for s in config.seeds],
    )
    ablation: dict[str, dict[int, np.ndarray]] = {
        k: {} for k in ("p_the", "p_io", "p_s")
    }
    sweep: dict[str, list] = {k: [] for k in ablation}
    weight = model.blocks[
        L - 1
    ].ff.fc1.weight  # [S, d, 4d]: LASER's favourite, the MLP input
    ranks = sorted({probes.rank_of_fraction(weight, r) for r in config.rank_fractions})
    with torch.no_grad():
        for first in range(L + 1):  # first == L: nothing removed
            m = answer_probs(model, clean, left_out | frozenset(range(first, L)))
            for k in ablation:
                ablation[k][first] = m[k].numpy()
        for r in ranks:
            with probes.truncated(weight, r):
                m = answer_probs(model, clean, left_out)
            for k in sweep:
                sweep[k].append(m[k].numpy())
    return Result(
        config=config,
        history=history,
        model=model,
        ablation=ablation,
        ranks=ranks,
        sweep={k: np.stack(v) for k, v in sweep.items()},
        n_params=model.n_params(),
    )
