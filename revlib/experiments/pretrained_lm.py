"""Chapter "The same probes on a real pretrained LM": factual-recall and IOI probes of
SmolLM2-135M-Instruct against the generic token " the", and LASER (rank truncation of
one MLP matrix) swept over layers and ranks.

Part III (Chen, Bruna & Bietti 2025, Section 4). The model is loaded offline by
:mod:`revlib.models.smollm`, the prompt sets come from :mod:`revlib.data.probe_prompts`.
:func:`run` loads the model and runs one LASER sweep (:class:`Sweep`), so that
``python -m revlib run pretrained_lm --set n_ioi=40 --out data/lm_laser_sweep.json``
writes the stored sweep of the chapter as a record (:mod:`revlib.records`; about 70
CPU seconds on an AVX-512 core) and ``python -m revlib sweep pretrained_lm ...`` works
as for any chapter.

:class:`PrefixCache` records every decoder layer's input once, so that a change to layer
L re-runs only layers L..end. Shapes: a probe set of ``N`` prompts is one left-padded
batch ``[N, T]``; only the last position's logits ``[N, V]`` are used. Threads are fixed
by :func:`revlib.repro.setup`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate, probes, records
from revlib.config import Control
from revlib.data.probe_prompts import PROMPT_CONTROLS, ProbeSet, probe_sets
from revlib.models import smollm
from revlib.models.smollm import MLP_MATRICES, mlp_weight


NOTEBOOK = "associations/pretrained_lm"
CONTROLS = (
    Control(
        "fact_in_context",
        "science",
        "each factual prompt is preceded by its answer ('Madrid is located in Spain. "
        "Madrid is located in'): it can be copied",
        {"prompts": "fact_in_context"},
    ),
    Control(
        "io_removed",
        "science",
        "the IOI sentences no longer mention the indirect object (a third name stands "
        "in its place); the target is still the IO",
        {"prompts": "io_removed"},
    ),
    Control(
        "mid_layers",
        "science",
        "every truncation is applied to layer 23 (the live sweep and section 4), where "
        "the stored sweep shows it barely matters",
        {"layers": (23,), "first_layer": 23},
    ),
)
SIZE_KNOBS = ("N_IOI",)  # what check-claims --scale multiplies
QUICK = {"N_IOI": 20}  # CI's control runs


@dataclass(frozen=True)
class Config:
    """A LASER sweep: every (matrix, layer, rank fraction) is one truncated model.

    ``layers``: decoder layers to truncate (0-based, SmolLM2 has 30). ``matrices``:
    which MLP matrices (``gate_proj`` and ``up_proj`` are ``[1536, 576]``, ``down_proj``
    ``[576, 1536]``). ``rank_fractions``: fractions ``rho`` of ``min(m, n) = 576`` kept
    (LASER's convention, :func:`revlib.probes.rank_of_fraction`); ``rho = 0`` zeroes the
    matrix, which removes the layer's MLP output entirely. ``n_ioi``: IOI sentences;
    ``seed``: their sampling seed. ``prompts``: the probe sets' control
    (:data:`revlib.data.probe_prompts.PROMPT_CONTROLS`; ``"none"``: the probes
    themselves). ``first_layer``: the layer whose truncation is shown to hurt (the
    chapter's section 4).
    """

    layers: tuple[int, ...] = tuple(range(15, 30))
    matrices: tuple[str, ...] = ("up_proj", "down_proj")
    rank_fractions: tuple[float, ...] = (0.5, 0.1, 0.01, 0.0)
    n_ioi: int = 100
    seed: int = 0
    prompts: str = "none"
    first_layer: int = 0

    def __post_init__(self):
        _validate.sequence("layers", self.layers)
        _validate.sequence("matrices", self.matrices)
        _validate.sequence("rank_fractions", self.rank_fractions)
        if not self.layers:
            raise ValueError("layers must name at least one layer in [0, 29]")
        for layer in self.layers:
            _validate.integer("layers", layer, 0, 29)
        if not self.matrices:
            raise ValueError(f"matrices must name at least one of {MLP_MATRICES}")
        for m in self.matrices:
            _validate.choice("matrices", m, MLP_MATRICES)
        if not self.rank_fractions:
            raise ValueError("rank_fractions must hold at least one number in [0, 1]")
        for r in self.rank_fractions:
            _validate.real("rank_fractions", r, 0.0, 1.0)
        _validate.integer("n_ioi", self.n_ioi, 2, 10_000)
        _validate.integer("seed", self.seed, 0, 2**32 - 1)
        _validate.choice("prompts", self.prompts, PROMPT_CONTROLS)
        _validate.integer("first_layer", self.first_layer, 0, 29)


def parse_layers(spec: str) -> tuple[int, ...]:
    """``"15-29"`` (inclusive), ``"20,25,28"`` or a mix ``"0,3,15-29"`` -> sorted
    layers."""
    out = set()
    for part in str(spec).split(","):
        a, _, b = part.strip().partition("-")
        try:
            out.update(range(int(a), int(b) + 1) if b else [int(a)])
        except ValueError:
            raise ValueError(
                f"layers must look like '15-29' or '0,3,28', got {spec!r}"
            ) from None
    return tuple(sorted(out))


def layers_text(layers) -> str:
    """The inverse of :func:`parse_layers`: ``(15, ..., 29)`` -> ``"15-29"``, runs of
    consecutive layers as ranges, ``(0, 3, 28, 29)`` -> ``"0,3,28-29"``."""
    parts, run = [], []
    for layer in sorted(layers):
        if run and layer != run[-1] + 1:
            parts.append(run)
            run = []
        run.append(layer)
    if run:
        parts.append(run)
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in parts)


SUMMARY = ("p_correct", "p_the", "logodds", "acc", "p_subject", "logit_diff")


def summarise(ps: ProbeSet, logits: torch.Tensor) -> dict[str, float]:
    """Means over the prompts of one set, from last-position logits ``[N, V]``.

    ``logodds``: mean ``log p(correct) - log p(" the")``; ``acc``: argmax is the correct
    token; IOI only: ``p_subject`` and ``logit_diff`` = mean ``log p(IO) - log p(S)``.
    """
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(logp.shape[0])
    lc, lt = logp[rows, ps.targets["correct"]], logp[rows, ps.targets["the"]]
    out = {
        "p_correct": lc.exp().mean().item(),
        "p_the": lt.exp().mean().item(),
        "logodds": (lc - lt).mean().item(),
        "acc": (logp.argmax(-1) == ps.targets["correct"]).double().mean().item(),
    }
    if "subject" in ps.targets:
        ls = logp[rows, ps.targets["subject"]]
        out["p_subject"] = ls.exp().mean().item()
        out["logit_diff"] = (lc - ls).mean().item()
    return out


@torch.inference_mode()
def last_logits(model, ps: ProbeSet) -> torch.Tensor:
    """Last-position logits ``[N, V]`` of one probe set (one batched forward)."""
    return model(
        input_ids=ps.input_ids,
        attention_mask=ps.attention_mask,
        position_ids=ps.position_ids,
        use_cache=False,
        logits_to_keep=1,
    ).logits[:, -1]


@torch.inference_mode()
def single_logits(model, tok, prompt: str) -> torch.Tensor:
    """Next-token logits ``[V]`` of one prompt run alone (no padding)."""
    x = tok(prompt, return_tensors="pt")
    return model(**x, use_cache=False, logits_to_keep=1).logits[0, -1]


def top_tokens(tok, logits: torch.Tensor, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` most likely next tokens of logits ``[V]`` with their probabilities."""
    p, i = logits.double().softmax(-1).topk(k)
    return [(tok.decode(int(j)), float(q)) for q, j in zip(p, i)]


class PrefixCache:
    """One recorded forward per probe set, for fast interventions on a single layer.

    Pre-hooks record every decoder layer's input hidden state ``[N, T, d]`` and the
    keyword arguments the model passed to it (mask, rotary cos/sin, positions). Changing
    layer L's MLP leaves layers < L untouched, so :meth:`logits_from` ``(L)`` re-runs
    only layers L..end, the final norm and the head, at the last position;
    ``logits_from(0)`` equals the full forward exactly. This halves the cost of a sweep
    over the late layers.
    """

    def __init__(self, model, sets):
        self.model = model
        self.layers = model.model.layers
        self.sets = tuple(sets)
        self._hidden, self._kwargs = [], []
        for ps in self.sets:
            h, kw = self._record(ps)
            self._hidden.append(h)
            self._kwargs.append(kw)

    def _record(self, ps: ProbeSet):
        n = len(self.layers)
        hidden, kwargs, hooks = [None] * n, [None] * n, []
        for i, layer in enumerate(self.layers):

            def hook(module, args, kw, i=i):
                hidden[i] = args[0] if args else kw["hidden_states"]
                kwargs[i] = {k: v for k, v in kw.items() if k != "hidden_states"}

            hooks.append(layer.register_forward_pre_hook(hook, with_kwargs=True))
        try:
            last_logits(self.model, ps)
        finally:
            for h in hooks:
                h.remove()
        return hidden, kwargs

    @torch.inference_mode()
    def logits_from(self, start: int, set_index: int) -> torch.Tensor:
        """Last-position logits ``[N, V]`` of probe set ``set_index``, recomputed from
        layer ``start`` on with the model's current weights."""
        h = self._hidden[set_index][start]
        for i in range(start, len(self.layers)):
            out = self.layers[i](h, **self._kwargs[set_index][i])
            h = out[0] if isinstance(out, tuple) else out
        return self.model.lm_head(self.model.model.norm(h[:, -1:]))[:, -1]

    def evaluate(self, start: int = 0) -> dict[str, dict[str, float]]:
        """:func:`summarise` of every probe set, recomputed from layer ``start``."""
        return {
            ps.name: summarise(ps, self.logits_from(start, j))
            for j, ps in enumerate(self.sets)
        }


# --------------------------------------------------------------------------------------
# LASER
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def truncated(model, layer: int, matrix: str, rank: int, svd=None):
    """Replace one MLP matrix by its best rank-``rank`` approximation (the book's one
    truncation routine, :func:`revlib.probes.truncated`); restored exactly on exit.
    ``svd``: optional :func:`revlib.probes.thin_svd` of that weight, reused across
    ranks."""
    with probes.truncated(mlp_weight(model, layer, matrix), rank, svd) as w:
        yield w


@dataclass(frozen=True)
class Sweep:
    """A LASER sweep. ``values[f"{set}/{metric}"]``: ``[matrix, layer, rank_fraction]``
    (sets ``factual``, ``ioi``; metrics of :func:`summarise`); ``ranks``
    ``[rank_fraction]`` (kept singular values, the same for all three matrices);
    ``baseline[set][metric]``."""

    config: Config
    ranks: np.ndarray
    baseline: dict
    values: dict

    def delta(self, set_name: str, metric: str = "logodds") -> np.ndarray:
        """Change from the unmodified model, ``[matrix, layer, rank_fraction]``."""
        return self.values[f"{set_name}/{metric}"] - self.baseline[set_name][metric]

    def best(
        self, set_name: str, metric: str = "logodds"
    ) -> tuple[str, int, float, float]:
        """``(matrix, layer, rank_fraction, change)`` of the largest increase of
        ``metric``."""
        d = self.delta(set_name, metric)
        i, j, k = np.unravel_index(np.argmax(d), d.shape)
        c = self.config
        return c.matrices[i], c.layers[j], c.rank_fractions[k], float(d[i, j, k])

    def at(self, set_name: str, matrix: str, layer: int, rank_fraction: float) -> dict:
        """All metrics of one setting."""
        c = self.config
        idx = (
            c.matrices.index(matrix),
            c.layers.index(layer),
            c.rank_fractions.index(rank_fraction),
        )
        metrics = [k.split("/")[1] for k in self.values if k.startswith(set_name + "/")]
        return {m: float(self.values[f"{set_name}/{m}"][idx]) for m in metrics}


def sweep(model, sets, config: Config, cache: PrefixCache | None = None) -> Sweep:
    """Truncate one MLP matrix at a time (each of ``config.matrices`` x
    ``config.layers`` x ``config.rank_fractions``) and re-measure every probe set
    through the prefix cache.

    The SVD of each matrix is computed once and reused for all its ranks.
    """
    cache = cache or PrefixCache(model, sets)
    base = cache.evaluate(0)
    shape = (len(config.matrices), len(config.layers), len(config.rank_fractions))
    values = {f"{s}/{m}": np.full(shape, np.nan) for s in base for m in base[s]}
    ranks = np.zeros(len(config.rank_fractions), dtype=int)
    for li, layer in enumerate(config.layers):
        # rank 0 of any MLP matrix zeroes the MLP's output: evaluate it once
        removed = None
        for mi, matrix in enumerate(config.matrices):
            w = mlp_weight(model, layer, matrix)
            svd = probes.thin_svd(w.detach())
            for ri, rho in enumerate(config.rank_fractions):
                ranks[ri] = probes.rank_of_fraction(w, rho)
                if ranks[ri] >= min(w.shape):
                    res = base  # full rank: the unmodified model
                elif ranks[ri] == 0 and removed is not None:
                    res = removed
                else:
                    with truncated(model, layer, matrix, int(ranks[ri]), svd):
                        res = cache.evaluate(layer)
                    if ranks[ri] == 0:
                        removed = res
                for s in res:
                    for m, v in res[s].items():
                        values[f"{s}/{m}"][mi, li, ri] = v
            del svd
    return Sweep(config, ranks, base, values)


def run(config: Config) -> Sweep:
    """Load the model offline (:func:`revlib.models.smollm.load`), build the factual and
    IOI probe sets (``config.n_ioi`` sentences, names drawn with ``config.seed``) and
    run the LASER :func:`sweep`. Raises :class:`revlib.models.smollm.ModelUnavailable`
    where the model is not installed."""
    if not isinstance(config, Config):
        raise ValueError(f"config must be a pretrained_lm.Config, got {type(config)}")
    model, tok, _ = smollm.load()
    sets = probe_sets(tok, config.n_ioi, config.seed, control=config.prompts)
    return sweep(model, sets, config)


def provenance() -> dict:
    """What a record of this experiment holds besides the usual provenance
    (:func:`revlib.sweeps.record` adds it): the model and the package versions."""
    return {"model": smollm.MODEL_NAME, "versions": smollm.versions()}


def save_sweep(path: str | os.PathLike, sw: Sweep, seconds: float) -> None:
    """Write a sweep as a record (:mod:`revlib.records`, atomically) with its
    provenance: the model, package versions, the git commit, this CPU's kernel level and
    the run time. :func:`load_sweep` reads it."""
    records.write(
        path,
        records.make(
            "pretrained_lm",
            sw.config,
            seeds=[sw.config.seed],
            extras=records.extras(sw),
            seconds=seconds,
            **provenance(),
        ),
    )


def load_sweep(path: str | os.PathLike) -> tuple[Sweep, dict]:
    """``(sweep, provenance)`` from a record of :func:`save_sweep` or of
    ``python -m revlib run pretrained_lm``."""
    try:
        (raw,) = records.read(path)
        ex = raw["extras"]
        cfg = Config(
            **{
                k: tuple(v) if isinstance(v, list) else v
                for k, v in raw["config"].items()
            }
        )
        sw = Sweep(
            cfg,
            np.asarray(ex["ranks"]),
            ex["baseline"],
            {k: np.asarray(v, dtype=float) for k, v in ex["values"].items()},
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path} is not a LASER sweep record of revlib.experiments."
            f"pretrained_lm ({err})"
        ) from None
    meta = {
        k: raw.get(k)
        for k in ("model", "versions", "git", "git_dirty", "cpu_capability", "seconds")
    }
    return sw, meta


@torch.inference_mode()
def _mlp_outputs(model, ps: ProbeSet, layer: int) -> torch.Tensor:
    out = {}
    hook = model.model.layers[layer].mlp.register_forward_hook(
        lambda module, args, o: out.__setitem__("o", o[:, -1].detach().clone())
    )
    try:
        last_logits(model, ps)
    finally:
        hook.remove()
    return out["o"]


def mlp_output_change(model, ps: ProbeSet, layer: int, matrix: str, rank: int) -> float:
    """Mean over prompts of ``|MLP_trunc(h) - MLP(h)| / |MLP(h)|`` at the last position,
    for layer ``layer``'s MLP with ``matrix`` truncated to ``rank``: 1 means the
    truncation removes the MLP's output as thoroughly as deleting it; a small value,
    that it only denoises it."""
    full = _mlp_outputs(model, ps, layer)  # [N, d]
    with truncated(model, layer, matrix, rank):
        cut = _mlp_outputs(model, ps, layer)
    return ((cut - full).norm(dim=-1) / full.norm(dim=-1)).mean().item()
