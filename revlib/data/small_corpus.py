"""A generated toy corpus: generic sentences mixed with indirect-object (IOI-like)
sentences.

Nothing is downloaded. The vocabulary is a few dozen word tokens. Each sequence is a run
of sentences drawn independently:

* generic sentences, where ``to`` is always followed by ``the`` (the distributional
  association, like " the" after " to" in English):

  - ``NAME went to the PLACE .``
  - ``NAME gave a OBJ to the NOUN .``
  - ``the NOUN went to the PLACE .``

* with probability ``p_ioi`` an IOI sentence, with two distinct random names ``A`` (the
  indirect object, IO) and ``B`` (the subject, S), their order in the first clause
  random:

  ``when A and B went to the PLACE , B gave a OBJ to A .``  (or ``when B and A ...``)

  After its last ``to`` the next token is the in-context answer ``A`` with probability
  ``1 - alpha`` and the generic ``the`` with probability ``alpha`` (then the sentence
  ends ``to the NOUN .``). This is the noisy in-context recall task of Chen, Bruna &
  Bietti in words: ``to -> the`` is the distributional association, ``A`` needs the
  context.

At an IOI answer position the Bayes-optimal prediction is ``p(the) = alpha``,
``p(A) = 1 - alpha``, ``p(B) = 0``.

``to_the=False`` (a control: the distributional association removed) drops every
``the`` that follows ``to``: ``NAME went to PLACE .``, ``... went to PLACE , B gave a
OBJ to A .``, and the generic IOI ending becomes ``to NOUN .``. ``the`` still opens the
sentences ``the NOUN went to PLACE .``, but after ``to`` it never comes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from revlib import _validate, repro

NAMES = (
    "Mary",
    "John",
    "Anna",
    "Paul",
    "Lucy",
    "Mark",
    "Emma",
    "Noah",
    "Rosa",
    "Ivan",
    "Sara",
    "Omar",
)
PLACES = ("store", "park", "school", "beach")
OBJECTS = ("book", "drink", "ball", "key")
NOUNS = ("friend", "teacher", "dog", "child", "doctor", "cat")
WORDS = ("when", "and", "went", "to", "the", "gave", "a", ",", ".")
VOCAB = WORDS + NAMES + PLACES + OBJECTS + NOUNS
VOCAB_SIZE = len(VOCAB)
TOKEN = {w: i for i, w in enumerate(VOCAB)}
THE = TOKEN["the"]
_NAME_IDS = torch.tensor([TOKEN[w] for w in NAMES])
_PLACE_IDS = torch.tensor([TOKEN[w] for w in PLACES])
_OBJECT_IDS = torch.tensor([TOKEN[w] for w in OBJECTS])
_NOUN_IDS = torch.tensor([TOKEN[w] for w in NOUNS])

# Templates as (kind, value) slots; kind "w" is a fixed word, the others are filled per
# sentence. The IOI template has its answer slot "ans" (A or "the") and, after it,
# "tail" (a NOUN when the answer was "the", else a pad that is dropped).
_L = 16  # longest template (IOI with "the NOUN"), every template is padded to it
_TEMPLATES = (
    ["NAME", "went", "to", "the", "PLACE", "."],
    ["NAME", "gave", "a", "OBJ", "to", "the", "NOUN", "."],
    ["the", "NOUN", "went", "to", "the", "PLACE", "."],
    [
        "when",
        "N1",
        "and",
        "N2",
        "went",
        "to",
        "the",
        "PLACE",
        ",",
        "B",
        "gave",
        "a",
        "OBJ",
        "to",
        "ans",
        "tail",
    ],
)
_IOI = len(_TEMPLATES) - 1
_PAD = -1


def _without_to_the(template: list[str]) -> list[str]:
    """The template with every ``the`` after ``to`` dropped."""
    return [
        w
        for j, w in enumerate(template)
        if not (w == "the" and template[j - 1] == "to")
    ]


_TEMPLATES_NO_TO_THE = tuple(_without_to_the(t) for t in _TEMPLATES)


@dataclass(frozen=True)
class Corpus:
    """``S`` seeds, ``N`` sequences of length ``T`` each.

    ``x`` ``[S, N, T]`` inputs and ``y`` ``[S, N, T]`` next tokens. ``answer``
    ``[S, N, T]`` bool: the input is the last ``to`` of an IOI sentence (the next token
    is ``io`` or ``the``). ``io`` and ``s`` ``[S, N, T]``: the IO and subject names of
    that sentence (``-1`` elsewhere).
    """

    x: torch.Tensor
    y: torch.Tensor
    answer: torch.Tensor
    io: torch.Tensor
    s: torch.Tensor
    alpha: float

    def select(self, idx: torch.Tensor) -> "Corpus":
        """Per-seed subset of sequences; ``idx`` ``[S, B]``."""

        def take(t):
            return t.gather(1, idx[:, :, None].expand(*idx.shape, t.shape[2]))

        return Corpus(
            take(self.x),
            take(self.y),
            take(self.answer),
            take(self.io),
            take(self.s),
            self.alpha,
        )


def sample(
    seeds: list[int],
    n: int,
    seq_len: int,
    p_ioi: float,
    alpha: float,
    stream: int = 0,
    to_the: bool = True,
) -> Corpus:
    """``n`` sequences of ``seq_len`` tokens per seed; seed ``s``'s data depends only on
    ``(s, stream)``. ``p_ioi``: probability that a sentence is an IOI sentence;
    ``alpha``: probability that an IOI sentence ends with the generic
    ``to the NOUN``. ``to_the=False``: no ``the`` after ``to`` (the module's
    docstring); the random draws are the same, so only those tokens differ."""
    _validate.integer("n", n, 1, 10**7)
    _validate.integer("seq_len", seq_len, 2, 10**5)
    _validate.real("p_ioi", p_ioi, 0.0, 1.0)
    _validate.real("alpha", alpha, 0.0, 1.0)
    _validate.integer("stream", stream, 0, 10**6)
    _validate.boolean("to_the", to_the)
    seeds = _validate.seeds(seeds)
    parts = [
        _sample_one(
            repro.generator(s * 1_000_003 + stream * 7_919 + 29),
            n,
            seq_len,
            p_ioi,
            alpha,
            to_the,
        )
        for s in seeds
    ]
    fields = [torch.stack([p[i] for p in parts]) for i in range(5)]
    return Corpus(*fields, alpha=float(alpha))


def decode(tokens) -> str:
    """Token ids -> words separated by spaces."""
    return " ".join(VOCAB[int(t)] for t in tokens)


def _sample_one(
    gen: torch.Generator,
    n: int,
    seq_len: int,
    p_ioi: float,
    alpha: float,
    to_the: bool,
):
    templates = _TEMPLATES if to_the else _TEMPLATES_NO_TO_THE
    # enough sentences that every sequence exceeds seq_len + 1 tokens (the shortest
    # template: 6 tokens, 5 without "to the")
    K = (seq_len + 1) // min(len(t) for t in templates) + 2
    shape = (n, K)

    def pick(ids):
        return ids[torch.randint(0, len(ids), shape, generator=gen)]

    generic = torch.randint(0, _IOI, shape, generator=gen)
    kind = torch.where(torch.rand(shape, generator=gen) < p_ioi, _IOI, generic)
    name, place, obj, noun = (
        pick(_NAME_IDS),
        pick(_PLACE_IDS),
        pick(_OBJECT_IDS),
        pick(_NOUN_IDS),
    )
    # two distinct names: b = a + offset (mod the number of names), offset in
    # 1..n_names-1
    ia = torch.randint(0, len(NAMES), shape, generator=gen)
    ib = (ia + torch.randint(1, len(NAMES), shape, generator=gen)) % len(NAMES)
    a, b = _NAME_IDS[ia], _NAME_IDS[ib]
    swap = torch.rand(shape, generator=gen) < 0.5
    generic_end = torch.rand(shape, generator=gen) < alpha
    fill = {
        "NAME": name,
        "PLACE": place,
        "OBJ": obj,
        "NOUN": noun,
        "B": b,
        "N1": torch.where(swap, b, a),
        "N2": torch.where(swap, a, b),
        # the generic ending "to the NOUN ." ("to NOUN ." without "to the")
        "ans": torch.where(generic_end, THE if to_the else noun, a),
        "tail": torch.where(generic_end & to_the, noun, _PAD),
    }
    tokens = torch.full((n, K, _L), _PAD, dtype=torch.long)
    answer = torch.zeros((n, K, _L), dtype=torch.bool)
    io = torch.full((n, K, _L), -1, dtype=torch.long)
    sub = torch.full((n, K, _L), -1, dtype=torch.long)
    for k, template in enumerate(templates):
        rows = kind == k
        for j, slot in enumerate(template):
            value = fill[slot] if slot in fill else torch.full(shape, TOKEN[slot])
            tokens[:, :, j] = torch.where(rows, value, tokens[:, :, j])
        if k == _IOI:
            j = (
                template.index("ans") - 1
            )  # the input "to" whose next token is the answer
            answer[:, :, j] = rows
            io[:, :, j] = torch.where(rows, a, -1)
            sub[:, :, j] = torch.where(rows, b, -1)
    # the terminating "." of IOI sentences follows the answer or the tail noun
    n_ioi = len(templates[_IOI])  # its last slot is "tail"
    end = torch.where(generic_end & to_the, n_ioi, n_ioi - 1)
    has_dot = (kind == _IOI)[:, :, None] & (
        torch.arange(_L + 1)[None, None, :] == end[:, :, None]
    )
    tokens = torch.cat([tokens, torch.full((n, K, 1), _PAD)], dim=2)
    tokens[has_dot] = TOKEN["."]
    answer, io, sub = (
        torch.cat([t, torch.full((n, K, 1), f, dtype=t.dtype)], dim=2)
        for t, f in ((answer, False), (io, -1), (sub, -1))
    )
    # concatenate each row's sentences without the pads: a stable sort moves the kept
    # tokens to the front in order, with no Python loop over sequences
    keep = (tokens != _PAD).view(n, -1)
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)[:, : seq_len + 1]
    flat = [t.view(n, -1).gather(1, order) for t in (tokens, answer, io, sub)]
    seq, ans, io_, s_ = flat
    x, y = seq[:, :-1], seq[:, 1:]
    return x, y, ans[:, :-1], io_[:, :-1], s_[:, :-1]
