"""The shuffled_labels controls' helper: every answer moves, deterministically."""

import pytest
import torch

from revlib.data import derangement, shuffle_answers


@pytest.mark.parametrize("n", [2, 3, 17, 500])
def test_a_derangement_moves_every_element_and_depends_on_the_seed_alone(n):
    perm = derangement(n, 3)
    assert sorted(perm.tolist()) == list(range(n))
    assert (perm != torch.arange(n)).all()
    assert torch.equal(perm, derangement(n, 3))
    if n > 3:
        assert not torch.equal(perm, derangement(n, 4))


def test_shuffled_answers_move_together_and_per_seed():
    answers = torch.arange(2 * 6 * 2).reshape(2, 6, 2)  # [S, N, w]: distinct answers
    out = shuffle_answers(answers, [0, 1])
    for s in range(2):
        rows = {tuple(r) for r in answers[s].tolist()}
        assert {tuple(r) for r in out[s].tolist()} == rows  # whole answers move
        assert (out[s] != answers[s]).any(dim=-1).all()  # none stays
    # seed 1 alone gets the same shuffle as seed 1 beside seed 0
    assert torch.equal(shuffle_answers(answers[1:], [1])[0], out[1])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="n must"):
        derangement(1, 0)
    with pytest.raises(ValueError, match="seed"):
        derangement(5, 1.5)
    with pytest.raises(ValueError, match="answers must be"):
        shuffle_answers(torch.zeros(3), [0])
    with pytest.raises(ValueError, match="answers must be"):
        shuffle_answers(torch.zeros(2, 4), [0])


def test_shuffled_last_tokens_keep_the_rest_of_each_sentence():
    from revlib.data import shuffle_last_tokens

    seqs = torch.arange(2 * 5 * 4).reshape(2, 5, 4)
    out = shuffle_last_tokens(seqs, 2, [0, 1])
    assert torch.equal(out[..., :2], seqs[..., :2])
    assert torch.equal(out[..., 2:], shuffle_answers(seqs[..., 2:], [0, 1]))
    with pytest.raises(ValueError, match="width"):
        shuffle_last_tokens(seqs, 4, [0, 1])
