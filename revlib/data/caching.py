"""A hard caching set from real facts: pairs of questions that do or do not share an
answer.

Chapter "Prompt caching via embedding similarity" (Part IV). The paper's hard set is
built from Natural Questions, which no package ships; here the facts are the 254
countries of the ``countryinfo`` wheel (MIT): capital, currency (ISO code), calling
code, demonym, population and area, with an English alternative name
(``"French Republic"``).

A *question* is a template of a relation filled with a country (by name, alternative
name or demonym, ``"the French capital"``). Its *response key* is what a cached response
must say: ``(relation, answer)`` for the single-country relations (so the currency
questions of France and Germany share the key ``(currency, EUR)``: one cached "EUR"
answers both) and the proposition ``(larger, A, B)`` for the comparisons
"Is A larger than B?" (equivalently "Is B smaller than A?"). Two questions are a cache
hit (label 1) exactly when their keys are equal.

Pair types (:data:`PAIR_TYPES`): same-key pairs by *paraphrase* (two templates), *alias*
(the alternative name), *demonym* (a demonym template) and *reverse_wording*
("Is A larger than B?" / "Is B smaller than A?"); different-key pairs by *lookalike*
(the same template, another country with a close name or the same subregion: Niger /
Nigeria, Austria / Australia), *other_relation* (the same country, another relation),
*order_swap* ("Is A larger than B?" / "Is B larger than A?") and *random*. Labels are
computed from the keys, never assumed from the type (a look-alike pair can share a
currency).

Countries and templates are both split in two (:func:`build`): the test pairs use only
held-out countries and held-out templates, so a model cannot pass by memorising either.
The *hard* subset (:func:`hard_subset`) is **selected against a base model**: each
positive is matched with the negative of closest base cosine, so the base model's AUC on
it is about 0.5 by construction (the paper's set, with base AUC 0.51, was apparently
selected so too; its recipe is not public). The whole, unselected test set is kept
beside it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from revlib import _validate

# relation -> templates; {X}: the country's name or alternative name, {D}: its demonym
TEMPLATES = {
    "capital": (
        "What is the capital of {X}?",
        "Which city is the capital of {X}?",
        "Name the capital city of {X}.",
        "What city serves as the capital of {X}?",
        "Where is the seat of government of {X}?",
        "What is the {D} capital?",
        "Which city is {X}'s capital?",
        "In which city does the government of {X} sit?",
    ),
    "currency": (
        "What is the currency of {X}?",
        "Which currency is used in {X}?",
        "What money do people use in {X}?",
        "What is the official currency of {X}?",
        "What do you pay with in {X}?",
        "Which currency do {D} people use?",
        "What is the legal tender of {X}?",
        "In {X}, which currency do shops accept?",
    ),
    "calling_code": (
        "What is the calling code of {X}?",
        "What is the international dialling code for {X}?",
        "Which phone prefix do you dial to call {X}?",
        "What country code do phone numbers in {X} have?",
        "What do I dial before a phone number in {X}?",
        "What is the {D} telephone country code?",
        "Which calling code belongs to {X}?",
        "To phone {X} from abroad, which code do you dial?",
    ),
    "demonym": (
        "What do you call a person from {X}?",
        "What is the demonym for people from {X}?",
        "What are the people of {X} called?",
        "How do you refer to a citizen of {X}?",
        "What word describes someone from {X}?",
        "A native of {X} is called what?",
    ),
    "population": (
        "What is the population of {X}?",
        "How many people live in {X}?",
        "How many inhabitants does {X} have?",
        "What is the number of residents of {X}?",
        "How populous is {X}?",
        "How many people does {X} have?",
    ),
}
# comparisons: "larger" wordings state (larger, A, B) directly; "smaller" wordings state
# the same proposition with the countries the other way round
LARGER = (
    "Is {A} larger than {B}?",
    "Is {A} bigger than {B}?",
    "Does {A} cover more land than {B}?",
    "Is the area of {A} greater than that of {B}?",
)
SMALLER = (
    "Is {B} smaller than {A}?",
    "Is {B} tinier than {A}?",
    "Does {B} cover less land than {A}?",
    "Is the area of {B} less than that of {A}?",
)
RELATIONS = tuple(TEMPLATES) + ("larger",)
POSITIVE_TYPES = ("paraphrase", "alias", "demonym", "reverse_wording")
NEGATIVE_TYPES = ("lookalike", "other_relation", "order_swap", "random")
PAIR_TYPES = POSITIVE_TYPES + NEGATIVE_TYPES


class DataUnavailable(RuntimeError):
    """The ``countryinfo`` wheel is not installed."""


@dataclass(frozen=True)
class Country:
    name: str
    alias: str | None
    demonym: str
    subregion: str
    facts: dict  # relation -> answer (strings)
    area: float
    demonym_unique: (
        bool  # no other country has this demonym ("Chinese": China, Hong Kong)
    )


def _data_dir() -> Path:
    spec = importlib.util.find_spec("countryinfo")
    if spec is None or not spec.submodule_search_locations:
        raise DataUnavailable(
            'countryinfo is not installed: pip install -e ".[lm]" (countryinfo==1.0.1)'
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _alias(name: str, spellings) -> str | None:
    """The first English-looking alternative name with a space ("French Republic")."""
    for s in spellings or ():
        if (
            s != name
            and " " in s
            and s.isascii()
            and not s.isupper()
            and len(s) >= 5
            and name.split()[0].lower() not in ("the",)
        ):
            return s
    return None


def _one(value) -> str:
    """A fact as one string: countryinfo gives a few as one-element lists (Vatican City
    State's capital is ``["Vatican City"]``), which would make an unhashable response
    key; a list of several answers keeps them all, joined."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def countries() -> list[Country]:
    """Every country with all six facts, sorted by name (235 of countryinfo's 254)."""
    out = []
    for path in sorted(_data_dir().glob("*.json")):
        d = json.loads(path.read_text())
        need = (
            "name",
            "capital",
            "demonym",
            "currencies",
            "callingCodes",
            "population",
            "area",
            "subregion",
        )
        if (
            not all(d.get(k) for k in need)
            or not d["currencies"][0]
            or not d["callingCodes"][0]
        ):
            continue
        name = d["name"]
        if not name.isascii() or not d["demonym"].isascii():
            continue
        facts = {
            "capital": _one(d["capital"]),
            "currency": _one(d["currencies"][0]),
            "calling_code": "+" + _one(d["callingCodes"][0]),
            "demonym": _one(d["demonym"]),
            "population": str(int(d["population"])),
        }
        out.append(
            Country(
                name,
                _alias(name, d.get("altSpellings")),
                d["demonym"],
                d["subregion"],
                facts,
                float(d["area"]),
                True,
            )
        )
    dem = [c.demonym for c in out]
    out = [
        dataclasses.replace(c, demonym_unique=dem.count(c.demonym) == 1) for c in out
    ]
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError("countryinfo lists a country twice")
    return sorted(out, key=lambda c: c.name)


@dataclass(frozen=True)
class Question:
    text: str
    key: tuple  # the response key: equal keys <=> the same response answers both
    relation: str
    template: str
    entity: str  # the country (comparisons: "A|B")


@dataclass
class Split:
    """One side of the data: ``questions`` (distinct texts) and pairs ``[P, 2]`` of
    indices into it, with ``labels`` ``[P]`` (1 = same key) and ``types`` ``[P]``
    (PAIR_TYPES)."""

    name: str
    countries: tuple
    templates: dict
    questions: list
    pairs: np.ndarray
    labels: np.ndarray
    types: np.ndarray
    index: dict = field(default_factory=dict)  # text -> row

    def texts(self) -> list[str]:
        return [q.text for q in self.questions]


def _fill(template: str, c: Country, mention: str) -> str:
    return template.format(X=c.alias if mention == "alias" else c.name, D=c.demonym)


class _Builder:
    def __init__(self, name, cs, templates, larger, smaller, rng):
        self.name, self.cs, self.templates = name, cs, templates
        self.larger, self.smaller, self.rng = larger, smaller, rng
        self.questions, self.index, self.rows = [], {}, []
        self.by_name = {c.name: c for c in cs}
        self.lookalikes = {c.name: self._lookalikes(c) for c in cs}

    def _lookalikes(self, c: Country) -> list[str]:
        others = [o for o in self.cs if o.name != c.name]
        close = difflib.get_close_matches(
            c.name, [o.name for o in others], n=3, cutoff=0.6
        )
        same_region = [o.name for o in others if o.subregion == c.subregion]
        out = list(dict.fromkeys(close + same_region))
        # alone in its subregion with no close name in this split: the closest names
        return out or difflib.get_close_matches(
            c.name, [o.name for o in others], n=3, cutoff=0.0
        )

    def q(self, text, key, relation, template, entity) -> int:
        if text not in self.index:
            self.index[text] = len(self.questions)
            self.questions.append(Question(text, key, relation, template, entity))
        elif self.questions[self.index[text]].key != key:
            return -1  # the same words asking for two answers: unusable
        return self.index[text]

    def single(self, c: Country, relation: str, template: str, mention: str) -> int:
        return self.q(
            _fill(template, c, mention),
            (relation, c.facts[relation]),
            relation,
            template,
            c.name,
        )

    def compare(self, a: Country, b: Country, template: str) -> int:
        # "Is {A} larger than {B}?" and "Is {B} smaller than {A}?" both state
        # (larger, A, B)
        text = template.format(A=a.name, B=b.name)
        return self.q(
            text, ("larger", a.name, b.name), "larger", template, f"{a.name}|{b.name}"
        )

    def add(self, i, j, kind):
        if i >= 0 and j >= 0 and i != j:
            self.rows.append((i, j, kind))

    def pick(self, seq):
        return seq[self.rng.integers(len(seq))]

    def one(self, kind: str) -> None:
        rel = self.pick([r for r in TEMPLATES])
        c = self.pick(self.cs)
        ts = self.templates[rel]
        if kind in (
            "paraphrase",
            "alias",
            "demonym",
            "lookalike",
            "other_relation",
            "random",
        ):
            x_ts = [t for t in ts if "{D}" not in t]
            d_ts = [t for t in ts if "{D}" in t]
        if kind == "paraphrase":
            t1, t2 = self.rng.choice(len(x_ts), 2, replace=False)
            self.add(
                self.single(c, rel, x_ts[t1], "name"),
                self.single(c, rel, x_ts[t2], "name"),
                kind,
            )
        elif kind == "alias":
            cs = [x for x in self.cs if x.alias]
            c = self.pick(cs)
            self.add(
                self.single(c, rel, self.pick(x_ts), "name"),
                self.single(c, rel, self.pick(x_ts), "alias"),
                kind,
            )
        elif kind == "demonym":
            rels = [
                r
                for r in TEMPLATES
                if r != "demonym" and any("{D}" in t for t in self.templates[r])
            ]
            if not rels:
                return
            rel = self.pick(rels)
            ts = self.templates[rel]
            c = self.pick([x for x in self.cs if x.demonym_unique])
            self.add(
                self.single(
                    c, rel, self.pick([t for t in ts if "{D}" not in t]), "name"
                ),
                self.single(
                    c, rel, self.pick([t for t in ts if "{D}" in t]), "demonym"
                ),
                kind,
            )
        elif kind == "lookalike":
            o = self.by_name[self.pick(self.lookalikes[c.name])]
            t = self.pick(x_ts)
            self.add(
                self.single(c, rel, t, "name"), self.single(o, rel, t, "name"), kind
            )
        elif kind == "other_relation":
            rel2 = self.pick([r for r in TEMPLATES if r != rel])
            t2 = self.pick([t for t in self.templates[rel2] if "{D}" not in t])
            self.add(
                self.single(c, rel, self.pick(x_ts), "name"),
                self.single(c, rel2, t2, "name"),
                kind,
            )
        elif kind == "random":
            o = self.pick(self.cs)
            rel2 = self.pick(list(TEMPLATES))
            t2 = self.pick([t for t in self.templates[rel2] if "{D}" not in t])
            self.add(
                self.single(c, rel, self.pick(x_ts), "name"),
                self.single(o, rel2, t2, "name"),
                kind,
            )
        else:
            o = self.by_name[self.pick(self.lookalikes[c.name])]
            if c.area == o.area:
                return
            if (
                kind == "reverse_wording"
            ):  # the same proposition, worded the other way round
                self.add(
                    self.compare(c, o, self.pick(self.larger)),
                    self.compare(c, o, self.pick(self.smaller)),
                    kind,
                )
            elif kind == "order_swap":  # the same words, the countries swapped
                t = self.pick(self.larger + self.smaller)
                self.add(self.compare(c, o, t), self.compare(o, c, t), kind)

    def split(self, n_per_type: int) -> Split:
        seen = set()
        for kind in PAIR_TYPES:
            count, tries = 0, 0
            while count < n_per_type and tries < 50 * n_per_type:
                tries += 1
                before = len(self.rows)
                self.one(kind)
                if len(self.rows) > before:
                    i, j, _ = self.rows[-1]
                    pair = (min(i, j), max(i, j))
                    if pair in seen:
                        self.rows.pop()
                        continue
                    seen.add(pair)
                    count += 1
        pairs = np.array([(i, j) for i, j, _ in self.rows], dtype=int).reshape(-1, 2)
        keys = [q.key for q in self.questions]
        labels = np.array([keys[i] == keys[j] for i, j in pairs], dtype=int)
        types = np.array([k for _, _, k in self.rows])
        return Split(
            self.name,
            tuple(c.name for c in self.cs),
            self.templates,
            self.questions,
            pairs,
            labels,
            types,
            dict(self.index),
        )


def build(
    seed: int = 0,
    n_train_per_type: int = 80,
    n_test_per_type: int = 50,
    test_fraction: float = 0.5,
) -> tuple[Split, Split]:
    """``(train, test)``: countries split at random (``test_fraction`` held out), every
    relation's templates split in half (each half keeps a demonym template where the
    relation has one), pairs drawn per type on each side with ``numpy`` seed
    ``seed``."""
    _validate.integer("seed", seed, 0, 2**32 - 1)
    _validate.integer("n_train_per_type", n_train_per_type, 1, 100_000)
    _validate.integer("n_test_per_type", n_test_per_type, 1, 100_000)
    _validate.real("test_fraction", test_fraction, 0.05, 0.95)
    rng = np.random.default_rng(seed)
    cs = countries()
    perm = rng.permutation(len(cs))
    n_test = int(round(test_fraction * len(cs)))
    test_cs = [cs[i] for i in sorted(perm[:n_test])]
    train_cs = [cs[i] for i in sorted(perm[n_test:])]
    train_t, test_t = {}, {}
    for rel, ts in TEMPLATES.items():
        x = [t for t in ts if "{D}" not in t]
        d = [t for t in ts if "{D}" in t]
        x = [x[i] for i in rng.permutation(len(x))]
        half = len(x) // 2
        train_t[rel], test_t[rel] = tuple(x[:half] + d), tuple(x[half:] + d)
    lp, sp = rng.permutation(len(LARGER)), rng.permutation(len(SMALLER))
    train_l, test_l = tuple(LARGER[i] for i in lp[:2]), tuple(LARGER[i] for i in lp[2:])
    train_s, test_s = (
        tuple(SMALLER[i] for i in sp[:2]),
        tuple(SMALLER[i] for i in sp[2:]),
    )
    train = _Builder("train", train_cs, train_t, train_l, train_s, rng).split(
        n_train_per_type
    )
    test = _Builder("test", test_cs, test_t, test_l, test_s, rng).split(n_test_per_type)
    return train, test


def hard_subset(
    cos: np.ndarray, labels: np.ndarray, max_gap: float = 0.01
) -> np.ndarray:
    """Indices of a subset on which the scores ``cos`` ``[P]`` do not separate the
    labels: the cosines are cut into bins of width ``max_gap`` and each bin keeps as
    many positives as negatives (the ones of lowest index). The two classes then have
    the same histogram of base cosines, so the base AUC on the result is about 0.5 **by
    construction**: this is a selection against the model that produced ``cos``."""
    if not isinstance(max_gap, numbers.Real) or math.isnan(max_gap) or max_gap == 0:
        raise ValueError(
            f"max_gap must be a nonzero number (the bin width), got {max_gap!r}"
        )
    cos, labels = np.asarray(cos, dtype=float), np.asarray(labels)
    if cos.ndim != 1 or labels.shape != cos.shape:
        raise ValueError(
            f"cos and labels must be 1-D of the same length, got shapes "
            f"{cos.shape} and {labels.shape}"
        )
    bins = np.floor(cos / max_gap).astype(int)
    keep = []
    for b in np.unique(bins):
        pos = np.flatnonzero((bins == b) & (labels == 1))
        neg = np.flatnonzero((bins == b) & (labels == 0))
        k = min(len(pos), len(neg))
        keep += pos[:k].tolist() + neg[:k].tolist()
    return np.array(sorted(keep), dtype=int)


def stream(split: Split, length: int, seed: int, zipf: float = 1.1) -> np.ndarray:
    """A request stream ``[length]`` of question rows of ``split``: a response key drawn
    with Zipf-like popularity (rank ``r`` has weight ``r ** -zipf``), then one of its
    wordings uniformly. Only keys asked in at least two wordings enter (a semantic cache
    has nothing to find for the others); they are ranked in a seeded random order."""
    if not hasattr(split, "questions"):
        raise ValueError(
            f"split must be a Split (the train or the test side of build()), "
            f"got {type(split).__name__}"
        )
    _validate.integer("length", length, 1, 10**6)
    if not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not isinstance(zipf, numbers.Real) or math.isnan(zipf):
        raise ValueError(f"zipf must be a number, got {zipf!r}")
    rng = np.random.default_rng(seed)
    by_key: dict = {}
    for i, q in enumerate(split.questions):
        by_key.setdefault(q.key, []).append(i)
    keys = [k for k, rows in by_key.items() if len(rows) >= 2]
    if not keys:
        raise ValueError(
            f"split {getattr(split, 'name', '')!r} has no response key asked in "
            "two wordings: its stream has nothing for a semantic cache to find"
        )
    order = rng.permutation(len(keys))
    with np.errstate(over="ignore"):
        w = (1.0 + np.arange(len(keys))) ** -zipf
    if not np.isfinite(w.sum()):
        raise ValueError(
            f"zipf={zipf} overflows the weights of the {len(keys)} keys "
            "(rank ** -zipf): use a larger zipf"
        )
    w /= w.sum()
    draws = rng.choice(len(keys), size=length, p=w)
    return np.array([rng.choice(by_key[keys[order[k]]]) for k in draws], dtype=int)
