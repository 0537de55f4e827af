"""Chapter "Parameter allocation": at a fixed parameter budget, trade feed-forward width
against attention layers, with the loss on every token so that the bigrams count.

Each allocation is ``(n_layer, ff_mult)``: ``n_layer`` attention layers (``4 d^2``
weights each: query, key, value, output) and, when ``ff_mult > 0``, an MLP of width
``ff_mult * d`` in every layer (``2 ff_mult d^2`` weights). The default allocations all
hold exactly ``24 d^2`` weights, from 16 d^2 of MLP and 8 d^2 of attention to attention
only. Embeddings and unembedding are frozen random matrices, as in the toy model, so
that they do not enter the budget.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from revlib import _validate, records, repro
from revlib.config import Control, ExperimentConfig, no_training
from revlib.data import noisy_recall as nr
from revlib.metrics import masked_mean
from revlib.models.transformer import Transformer, TransformerConfig
from revlib.train import History, train

ALLOCATIONS = ((2, 4), (3, 2), (4, 1), (6, 0))

NOTEBOOK = "associations/allocation"
CONTROLS = (
    no_training(
        "the live models keep their initial weights, and the stored runs are read at "
        "step 0"
    ),
    Control(
        "swap_groups",
        "plumbing",
        "the stored groups are relabelled: the budget sweep's allocations in reverse "
        "order, and MLP widths 0, d, 2d, 4d as 4d, 2d, d, 0 at each depth",
        swaps=True,
    ),
    Control(
        "no_bigrams",
        "science",
        "the background chain loses its bigram (the next symbol is drawn from the "
        "unigram whatever the current one), so there is no bigram for MLP weights to "
        "store; the stored budget sweep is read from its run made so",
        {"chain": "unigram"},
    ),
)
SIZE_KNOBS = ("D", "SEQ_LEN", "LIVE_STEPS")  # what check-claims --scale multiplies
QUICK: dict = {}  # CI's control runs: the default sizes (300 live steps)


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """``allocations``: ``(n_layer, ff_mult)`` pairs (``ff_mult = 0``: no MLP). Adam on
    the cross-entropy of every next token of fresh noisy sequences. ``layernorm``:
    pre-LN blocks (their gains and biases then add ``(4 n_layer + 2) d`` weights outside
    the budget); off by default: with it, the 2-layer allocation had barely started the
    recall after 1500 steps (excess 1.7 nats, one seed), against 0.4 without.
    ``chain``: the background Markov chain (:data:`revlib.data.noisy_recall.CHAINS`;
    ``"unigram"`` is the control ``no_bigrams``: no bigram to learn)."""

    allocations: tuple[tuple[int, int], ...] = ALLOCATIONS
    d: int = 64
    seq_len: int = 64
    alpha: float = 0.5
    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3
    layernorm: bool = False
    n_test: int = 128
    eval_points: int = 7
    chain: str = "synthetic"

    OPTIMIZER = "adam"

    def __post_init__(self):
        _validate.sequence("allocations", self.allocations, 1)  # (n_layer, ff_mult)
        for i, pair in enumerate(self.allocations):
            _validate.sequence(f"allocations[{i}]", pair, 2, 2)
            layers, mult = pair
            _validate.integer(f"allocations[{i}].n_layer", layers, 1, 24)
            _validate.integer(f"allocations[{i}].ff_mult", mult, 0, 64)
        _validate.integer("d", self.d, 4, 4096)
        _validate.integer("seq_len", self.seq_len, 8, 4096)
        _validate.real("alpha", self.alpha, 0.0, 1.0, hi_open=True)
        _validate.boolean("layernorm", self.layernorm)
        _validate.choice("chain", self.chain, nr.CHAINS)
        _validate.integer("n_test", self.n_test, 8, 100_000)
        super().__post_init__()  # seed, n_seeds; steps, lr, batch_size, eval_points

    def model_config(self, n_layer: int, ff_mult: int) -> TransformerConfig:
        std = 1.0 / math.sqrt(3 * self.d)
        return TransformerConfig(
            vocab_size=nr.VOCAB_SIZE,
            block_size=self.seq_len,
            n_layer=n_layer,
            n_head=1,
            d_model=self.d,
            ff="mlp" if ff_mult else "none",
            ff_mult=max(ff_mult, 1),
            positional="absolute",
            layernorm=self.layernorm,
            tied=False,
            freeze_embeddings=True,
            freeze_unembedding=True,
            init_std=std,
            embed_std=1.0,
            head_std=std,
        )


@dataclass
class Result:
    """Per allocation ``[A]``: ``n_params`` trainable weights, ``mlp_params``; histories
    with ``bigram_excess`` and ``recall_excess`` ``[E, S]``: test loss minus the Bayes
    loss on background positions (the chain's bigram) and on trigger positions from the
    2nd occurrence on (in-context recall, Bayes loss the entropy of
    ``(alpha, 1 - alpha)``)."""

    config: Config
    n_params: np.ndarray
    mlp_params: np.ndarray
    histories: list[History]

    def final(self, name: str) -> np.ndarray:
        """``[A, S]`` final values."""
        return np.stack([h.final(name) for h in self.histories])


def bayes_losses(
    data: nr.NoisyRecall,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per position ``[S, N, T]``: the Bayes cross-entropy, and masks of background
    positions (input not a trigger) and of recall positions (``data.mask``)."""
    cond = nr.chain(data.chain).cond
    # a transition the chain never makes has probability 0 (the Shakespeare chain has
    # many); it is never a background label, but its -inf would turn the masked means
    # into NaN, so it is floored as the synthetic chain already is (1e-12)
    logc = torch.from_numpy(np.log(np.maximum(cond, 1e-12)))
    bayes = -logc[data.x, data.y]
    a = data.alpha
    tau = data.noise_token
    # at a recall position the label is tau w.p. alpha + (1-alpha)[ybar = tau], else
    # ybar
    p_tau = torch.where(data.ybar == tau, 1.0, a + 0.0)[:, :, None].expand_as(bayes)
    p_lab = torch.where(data.y == tau, p_tau, 1 - p_tau).double()
    recall = data.mask
    bayes = torch.where(recall, -torch.log(p_lab.clamp_min(1e-12)), bayes)
    background = data.x != data.trigger
    return bayes, background, recall


def run(config: Config) -> Result:
    """Train each allocation (seeds batched) and evaluate its excess losses."""
    S, B = config.n_seeds, config.batch_size
    pool = nr.sample(
        config.seeds,
        config.steps * B,
        config.seq_len,
        config.alpha,
        stream=0,
        chain=config.chain,
    )
    test = nr.sample(
        config.seeds,
        config.n_test,
        config.seq_len,
        config.alpha,
        stream=3,
        chain=config.chain,
    )
    bayes, background, recall = bayes_losses(test)
    histories, n_params, mlp_params = [], [], []
    for layers, mult in config.allocations:
        # the init seed names the allocation, not its index, so a sweep split over
        # processes trains the same models as one run
        model = Transformer(
            config.model_config(layers, mult),
            n_seeds=S,
            seed=config.seed + 101 * (100 * layers + mult),
        )
        n_params.append(model.n_params())
        mlp_params.append(
            sum(
                p[0].numel()
                for n, p in model.named_parameters()
                if ".ff." in n and p.requires_grad
            )
        )

        def loss(idx, model=model):
            batch = pool.select(idx)
            logits = model(batch.x)
            return (
                F.cross_entropy(
                    logits.flatten(0, 2), batch.y.flatten(), reduction="none"
                )
                .view(batch.y.shape)
                .mean(dim=(1, 2))
            )

        def evaluate(model=model):
            logits = model(test.x).flatten(0, 2).double()
            nll = F.cross_entropy(logits, test.y.flatten(), reduction="none").view(
                test.y.shape
            )
            excess = nll - bayes
            return {
                "bigram_excess": masked_mean(excess, background),
                "recall_excess": masked_mean(excess, recall),
            }

        histories.append(
            train(
                model,
                loss,
                config.train_config(),
                evaluate,
                n_train=pool.x.shape[1],
                n_seeds=S,
                batch_seeds=[s + 104_729 for s in config.seeds],
            )
        )
    return Result(
        config=config,
        n_params=np.array(n_params),
        mlp_params=np.array(mlp_params),
        histories=histories,
    )


def to_record(
    result: Result,
    cpu_seconds: float,
    seconds: float | None = None,
    git: tuple[str | None, bool | None] | None = None,
) -> dict:
    """The sweep as a record (:mod:`revlib.records`): history ``i`` (allocation ``i``)
    at ``histories.<i>``, curves rounded to 5 decimals, the weight counts as extras."""
    histories, metrics = {}, {}
    for i, h in enumerate(result.histories):
        curves = {k: np.round(v, 5).T.tolist() for k, v in h.values.items()}  # [S][E]
        histories[f"histories.{i}"] = {
            "steps": h.steps.tolist(),
            "lr": float(h.lr),
            "curves": curves,
        }
        metrics.update(
            {
                f"histories.{i}.{k}": [c[-1] for c in per_seed]
                for k, per_seed in curves.items()
            }
        )
    return records.make(
        "allocation",
        result.config,
        seeds=result.config.seeds,
        metrics=metrics,
        histories=histories,
        extras={
            "n_params": result.n_params.tolist(),
            "mlp_params": result.mlp_params.tolist(),
        },
        seconds=None if seconds is None else round(seconds, 1),
        cpu_seconds=round(cpu_seconds, 1),
        git=git,
    )


def from_record(rec: dict) -> Result:
    """The :class:`Result` of a record of :func:`to_record` (no models; histories
    only)."""
    cfg = dict(rec["config"])
    cfg["allocations"] = tuple(tuple(a) for a in cfg["allocations"])
    config = Config(**cfg)
    paths = sorted(rec["histories"], key=lambda p: int(p.rsplit(".", 1)[1]))
    histories = [
        History(
            steps=np.array(h["steps"]),
            lr=config.lr,
            values={k: np.array(v).T for k, v in h["curves"].items()},
        )
        for h in (rec["histories"][p] for p in paths)
    ]
    return Result(
        config=config,
        n_params=np.array(rec["extras"]["n_params"]),
        mlp_params=np.array(rec["extras"]["mlp_params"]),
        histories=histories,
    )


def load(path) -> Result:
    """The sweep in the record file ``path`` written by :func:`main`."""
    (rec,) = records.read(path)
    return from_record(rec)


def main(argv=None) -> None:
    """``python -m revlib.experiments.allocation OUT.json [--n-seeds 3]
    [--steps 1500] [--chain synthetic]``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out")
    parser.add_argument("--n-seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--eval-points", type=int, default=16)
    parser.add_argument("--chain", choices=nr.CHAINS, default="synthetic")
    args = parser.parse_args(argv)
    wall, git = time.time(), records.git_state()  # the code version at the start
    config = Config(
        n_seeds=args.n_seeds,
        steps=args.steps,
        eval_points=args.eval_points,
        chain=args.chain,
    )
    # one process per allocation (each single-threaded, as repro.setup makes it)
    with multiprocessing.get_context("spawn").Pool(len(config.allocations)) as pool:
        parts = pool.map(
            _run_one, [replace(config, allocations=(a,)) for a in config.allocations]
        )
    result = Result(
        config=config,
        n_params=np.concatenate([p[0].n_params for p in parts]),
        mlp_params=np.concatenate([p[0].mlp_params for p in parts]),
        histories=[p[0].histories[0] for p in parts],
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records.write(
        out, to_record(result, sum(p[1] for p in parts), time.time() - wall, git=git)
    )


def _run_one(config: Config) -> tuple[Result, float]:
    repro.setup(0)
    start = time.process_time()
    result = run(config)
    return result, time.process_time() - start


if __name__ == "__main__":
    main()
