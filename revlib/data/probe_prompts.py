"""Prompt sets that probe a pretrained LM: factual recall and indirect-object
identification (IOI), each scored against the generic token " the".

Chapter "The same probes on a real pretrained LM" (Part III). Shapes: a probe set of
``N`` prompts is one left-padded batch ``[N, T]`` (:class:`ProbeSet`); only the last
position's logits are read (:mod:`revlib.experiments.pretrained_lm`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch

from revlib import _validate

# (prompt, correct next word, written without its leading space). Chosen before looking
# at the model's outputs; every answer is one token with a leading space in SmolLM2's
# vocabulary.
FACTUAL = (
    ("Madrid is located in", "Spain"),
    ("Paris is located in", "France"),
    ("Rome is located in", "Italy"),
    ("Berlin is located in", "Germany"),
    ("Tokyo is located in", "Japan"),
    ("Moscow is located in", "Russia"),
    ("Beijing is located in", "China"),
    ("Cairo is located in", "Egypt"),
    ("Toronto is located in", "Canada"),
    ("Sydney is located in", "Australia"),
    ("Lisbon is located in", "Portugal"),
    ("Athens is located in", "Greece"),
    ("Mumbai is located in", "India"),
    ("Dublin is located in", "Ireland"),
    ("Stockholm is located in", "Sweden"),
    ("Warsaw is located in", "Poland"),
    ("Vienna is located in", "Austria"),
    ("Amsterdam is located in", "Netherlands"),
    ("Istanbul is located in", "Turkey"),
    ("Buenos Aires is located in", "Argentina"),
    ("Oslo is located in", "Norway"),
    ("Helsinki is located in", "Finland"),
    ("Nairobi is located in", "Kenya"),
    ("Lima is located in", "Peru"),
    ("The Eiffel Tower is located in", "Paris"),
    ("The Colosseum is located in", "Rome"),
    ("The Great Wall is located in", "China"),
    ("The Taj Mahal is located in", "India"),
    ("The Kremlin is located in", "Moscow"),
    ("Big Ben is located in", "London"),
)

# {A} {B}: the two names in order of appearance; {S}: the repeated subject. The answer
# (the indirect object, IO) is the name that is not repeated.
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
    "Mary",
    "John",
    "Tom",
    "James",
    "Anna",
    "Sarah",
    "Michael",
    "David",
    "Paul",
    "Peter",
    "Susan",
    "Emma",
    "Kate",
    "Lisa",
    "Mark",
    "Jane",
    "Alice",
    "Bob",
    "Robert",
    "William",
    "Daniel",
    "Thomas",
    "Richard",
    "George",
    "Edward",
    "Henry",
    "Jack",
    "Harry",
    "Laura",
    "Rachel",
    "Emily",
    "Helen",
    "Kevin",
    "Eric",
    "Adam",
    "Andrew",
    "Martin",
    "Grace",
    "Lucy",
    "Julia",
)


def ioi_prompts(n: int = 100, seed: int = 0, remove_io: bool = False) -> list[dict]:
    """``n`` IOI sentences cycling through :data:`IOI_TEMPLATES`, alternating ABBA ("A
    and B ..., B gave to" -> A) and BABA (names swapped). Two distinct names per
    sentence, drawn with ``random.Random(seed)``. Items: ``{"prompt", "io", "s",
    "order"}`` (``io``: the answer, ``s``: the repeated subject). ``remove_io`` (a
    control): the IO's mention is replaced by a third name (drawn from its own stream,
    so ``io`` and ``s`` are those of the default), so the answer is no longer in the
    context."""
    _validate.integer("n", n, 1, 10**6)
    if not isinstance(seed, (int, float)):  # random.Random(seed) and seed + 104_729
        raise ValueError(f"seed must be an integer, got {seed!r}")
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
        raise ValueError(
            f"' {word}' is {len(ids)} tokens, not one: choose another word"
        )
    return ids[0]


@dataclass(frozen=True)
class ProbeSet:
    """One left-padded batch: ``input_ids``, ``attention_mask``, ``position_ids`` ``[N,
    T]`` and target token ids ``targets[label]`` ``[N]`` (labels: correct, the, and
    subject)."""

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


def probe_sets(
    tok, n_ioi: int = 100, seed: int = 0, control: str = "none"
) -> tuple[ProbeSet, ProbeSet]:
    """The factual-recall and the IOI probe sets. ``control`` (a notebook control,
    targets unchanged): ``"fact_in_context"`` states each fact before its prompt
    ("Madrid is located in Spain. Madrid is located in"), so the answer can be copied
    from the context; ``"io_removed"``: the IOI sentences no longer mention the IO
    (:func:`ioi_prompts`)."""
    _validate.choice("control", control, PROMPT_CONTROLS)
    the = token_id(tok, "the")
    prompts = tuple(p for p, _ in FACTUAL)
    if control == "fact_in_context":
        prompts = tuple(f"{p} {a}. {p}" for p, a in FACTUAL)
    factual = ProbeSet(
        "factual",
        prompts,
        *_encode(tok, prompts),
        targets={
            "correct": torch.tensor([token_id(tok, a) for _, a in FACTUAL]),
            "the": torch.full((len(FACTUAL),), the),
        },
    )
    items = ioi_prompts(n_ioi, seed, remove_io=control == "io_removed")
    prompts = tuple(d["prompt"] for d in items)
    ioi = ProbeSet(
        "ioi",
        prompts,
        *_encode(tok, prompts),
        targets={
            "correct": torch.tensor([token_id(tok, d["io"]) for d in items]),
            "subject": torch.tensor([token_id(tok, d["s"]) for d in items]),
            "the": torch.full((len(items),), the),
        },
    )
    return factual, ioi


def halves(ps: ProbeSet) -> tuple[ProbeSet, ProbeSet]:
    """``ps`` split into two disjoint probe sets, its even and its odd prompts, named
    ``<name>_select`` and ``<name>_report``: choose a setting on the first, report it on
    the second, so that the reported effect is not the best of many on the same
    prompts."""
    if len(ps.prompts) < 2:
        raise ValueError(
            f"ps must hold at least 2 prompts to split, got {len(ps.prompts)}"
        )

    def part(start: int, suffix: str) -> ProbeSet:
        return ProbeSet(
            f"{ps.name}_{suffix}",
            ps.prompts[start::2],
            ps.input_ids[start::2],
            ps.attention_mask[start::2],
            ps.position_ids[start::2],
            targets={k: v[start::2] for k, v in ps.targets.items()},
        )

    return part(0, "select"), part(1, "report")
