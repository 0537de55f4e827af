"""Token sequences for the multi-layer reversal experiments (Zhu et al. 2024, Section
5).

The generator follows the paper's code (``src/datasets/ReverseDataset.py``):

* token 0 is the forward relation "->", token 1 the backward relation "<-"; entity ids
  are ``2 .. vocab + 1``, so the model vocabulary has ``vocab + 2`` tokens;
* ``alphabet = vocab // 4`` ids form the A-alphabet and ``alphabet`` other ids the
  B-alphabet (disjoint, drawn at random); an entity is a tuple of ``word_size`` ids of
  its alphabet, and there are ``min(alphabet ** word_size, 2 * alphabet)`` pairs
  ``(A_i, B_i)``;
* a pair is written forward ``[A_i, ->, B_i]`` ("A -> B") or backward
  ``[B_i, <-, A_i]``;
* ``split_ratio`` of the pairs (70%) are trained in both directions; each remaining pair
  puts one direction, chosen by a fair coin, in training and holds the other out for
  validation.

The in-context control (``ReverseDataset_ICL.py``) writes a fact and its reverse in one
sequence, ``[A, ->, B, <->, B, <-, A]``, with the loss on the final ``A``: the answer is
in the context, so the model has to copy rather than recall.

Every generator takes a list of seeds and stacks one independent data set per seed on a
leading axis; seed ``s``'s data depends only on ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from revlib import _validate, repro

FORWARD, BACKWARD, BOTH_WAYS = (
    0,
    1,
    2,
)  # relation tokens "->", "<-" and (in-context) "<->"
_MAX_TUPLES = (
    2**32
)  # the largest alphabet ** word_size whose tuples can be permuted (32 GiB)


@dataclass(frozen=True)
class ReversalSequences:
    """Reversal data for ``S`` seeds; entities are ``w = word_size`` tokens,
    ``T = 2w + 1``.

    ``a``, ``b``: ``[S, P, w]`` the entities of the ``P`` pairs. ``both``: ``[S, P]``
    true for the pairs trained in both directions. ``heldout_forward``: ``[S, P]`` for
    the other pairs, true when the forward sentence is the held-out one (false for the
    ``both`` pairs). ``train``: ``[S, N_train, T]`` and ``val``: ``[S, N_val, T]`` the
    sentences; the answer is the last ``w`` tokens of each. ``val_pairs``:
    ``[S, N_val]`` the pair index of each validation sentence (they are the non-``both``
    pairs in order).
    """

    vocab_size: int
    word_size: int
    a: torch.Tensor
    b: torch.Tensor
    both: torch.Tensor
    heldout_forward: torch.Tensor
    train: torch.Tensor
    val: torch.Tensor
    val_pairs: torch.Tensor

    @property
    def n_seeds(self) -> int:
        return self.a.shape[0]

    @property
    def n_pairs(self) -> int:
        return self.a.shape[1]

    @property
    def n_train(self) -> int:
        return self.train.shape[1]

    @property
    def seq_len(self) -> int:
        return 2 * self.word_size + 1

    def answer_mask(self, n: int) -> torch.Tensor:
        """``[S, n, T - 1]``: the positions whose next token belongs to the answer
        entity."""
        return _last_positions(self.n_seeds, n, self.seq_len - 1, self.word_size)


@dataclass(frozen=True)
class InContextSequences:
    """In-context control for ``S`` seeds: sentences ``[A, ->, B, <->, B, <-, A]``
    (``T = 7``).

    ``train``: ``[S, n_x * n_y_train, 7]``, ``val``:
    ``[S, n_x * (n_y - n_y_train), 7]``. A validation pair ``(A, B)`` never occurs in
    training in either direction, but its answer ``A`` is the first token of the
    context.
    """

    vocab_size: int
    train: torch.Tensor
    val: torch.Tensor

    @property
    def n_seeds(self) -> int:
        return self.train.shape[0]

    @property
    def n_train(self) -> int:
        return self.train.shape[1]

    @property
    def seq_len(self) -> int:
        return self.train.shape[2]

    def answer_mask(self, n: int) -> torch.Tensor:
        """``[S, n, 6]``: only the last position (predicting the final ``A``)."""
        return _last_positions(self.n_seeds, n, self.seq_len - 1, 1)


def _last_positions(S: int, n: int, length: int, k: int) -> torch.Tensor:
    mask = torch.zeros(S, n, length, dtype=torch.bool)
    mask[..., length - k :] = True
    return mask


def n_pairs(vocab: int, word_size: int) -> int:
    """The paper's number of pairs, ``min(alphabet ** word_size, 2 * alphabet)``."""
    _validate.integer("vocab", vocab, 8, 100_000)
    _validate.integer("word_size", word_size, 1, 4)
    alphabet = vocab // 4
    return min(alphabet**word_size, 2 * alphabet)


def reversal_sequences(
    vocab: int,
    word_size: int,
    seeds: list[int],
    split_ratio: float = 0.7,
    heldout_in_training: bool = False,
) -> ReversalSequences:
    """The paper's reversal data, one independent data set per seed in ``seeds``.

    ``vocab``: number of entity ids (the paper: 800; the model vocabulary is
    ``vocab + 2``). ``heldout_in_training`` (a control: the answer given) appends the
    held-out sentences to the training ones (``val`` is unchanged, so every pair is then
    trained both ways).
    """
    _validate.integer("vocab", vocab, 8, 100_000)
    _validate.integer("word_size", word_size, 1, 4)
    _validate.real("split_ratio", split_ratio, 0.0, 1.0, hi_open=True)
    seeds = _validate.seeds(seeds)
    alphabet, P = vocab // 4, n_pairs(vocab, word_size)
    if (
        alphabet**word_size > _MAX_TUPLES
    ):  # _entities permutes every tuple of the alphabet
        raise ValueError(
            f"word_size={word_size} with vocab={vocab} gives {alphabet}**"
            f"{word_size} possible entities, more than the {_MAX_TUPLES} this "
            f"generator can permute: lower word_size or vocab"
        )
    n_both = int(round(split_ratio * P))
    if n_both == P:
        raise ValueError(f"split_ratio={split_ratio} leaves no held-out pair among {P}")
    fields = {
        k: []
        for k in ("a", "b", "both", "heldout_forward", "train", "val", "val_pairs")
    }
    for seed in seeds:  # a loop over seeds (few); each data set is built vectorised
        g = repro.generator(seed + 2_000_003)
        ids = 2 + torch.randperm(vocab, generator=g)[: 2 * alphabet]
        a = _entities(ids[:alphabet], word_size, P, g)
        b = _entities(ids[alphabet:], word_size, P, g)
        both = (
            torch.arange(P) < n_both
        )  # pairs come in random order, so the first n_both
        heldout_fwd = (torch.rand(P, generator=g) < 0.5) & ~both
        rel_f = torch.full((P, 1), FORWARD)
        rel_b = torch.full((P, 1), BACKWARD)
        fwd = torch.cat([a, rel_f, b], dim=1)  # [P, T]
        bwd = torch.cat([b, rel_b, a], dim=1)
        one = ~both
        val = torch.where(heldout_fwd[one].unsqueeze(1), fwd[one], bwd[one])
        train = torch.cat(
            [fwd[both], bwd[both], fwd[one & ~heldout_fwd], bwd[one & heldout_fwd]]
            + ([val] if heldout_in_training else [])
        )
        for key, value in zip(
            fields, (a, b, both, heldout_fwd, train, val, torch.arange(P)[one])
        ):
            fields[key].append(value)
    stacked = {k: torch.stack(v) for k, v in fields.items()}
    return ReversalSequences(vocab_size=vocab + 2, word_size=word_size, **stacked)


def _entities(
    alphabet_ids: torch.Tensor, word_size: int, P: int, g: torch.Generator
) -> torch.Tensor:
    """``P`` distinct tuples of ``word_size`` ids from ``alphabet_ids`` ->
    ``[P, word_size]``."""
    n = alphabet_ids.numel()
    code = torch.randperm(n**word_size, generator=g)[
        :P
    ]  # distinct tuples, in random order
    digits = torch.stack(
        [(code // n**k) % n for k in reversed(range(word_size))], dim=1
    )
    return alphabet_ids[digits]


def in_context_sequences(
    vocab: int, n_x: int, n_y: int, n_y_train: int, seeds: list[int]
) -> InContextSequences:
    """The in-context control: every ``A`` (``n_x`` of them) with every ``B`` (``n_y``).

    For each ``A``, ``n_y_train`` of its ``B`` partners (at random) give training
    sentences and the rest validation sentences. Reserved tokens 0, 1, 2; entity ids
    ``3 .. vocab + 2`` (the paper: ``vocab = 400``, ``n_x = 100``, ``n_y = 10``,
    ``n_y_train = 7``).
    """
    _validate.integer("vocab", vocab, 2, 100_000)
    _validate.integer("n_x", n_x, 1, vocab - 1)
    _validate.integer("n_y", n_y, 2, vocab - n_x)
    _validate.integer("n_y_train", n_y_train, 1, n_y - 1)
    seeds = _validate.seeds(seeds)
    trains, vals = [], []
    for seed in seeds:
        g = repro.generator(seed + 3_000_017)
        ids = 3 + torch.randperm(vocab, generator=g)[: n_x + n_y]
        xs, ys = ids[:n_x], ids[n_x:]
        # an independent random order of the B's for each A: the first n_y_train are
        # trained
        order = torch.argsort(torch.rand(n_x, n_y, generator=g), dim=1)
        x = xs[:, None].expand(n_x, n_y)
        y = ys[order]
        seq = torch.stack(
            [
                x,
                torch.full_like(x, FORWARD),
                y,
                torch.full_like(x, BOTH_WAYS),
                y,
                torch.full_like(x, BACKWARD),
                x,
            ],
            dim=-1,
        )  # [n_x, n_y, 7]
        trains.append(seq[:, :n_y_train].reshape(-1, 7))
        vals.append(seq[:, n_y_train:].reshape(-1, 7))
    return InContextSequences(
        vocab_size=vocab + 3, train=torch.stack(trains), val=torch.stack(vals)
    )
