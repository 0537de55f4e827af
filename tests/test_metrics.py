import numpy as np
import pytest
import torch

from revlib import probes
from revlib.metrics import answer_rank, masked_mean, mean_reciprocal_rank, rank


def test_masked_mean_by_hand_and_empty_mask():
    values = torch.tensor(
        [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]
    )  # [2, 2, 2]
    mask = torch.tensor(
        [[[True, False], [False, True]], [[False, False], [False, False]]]
    )
    out = masked_mean(values, mask)
    torch.testing.assert_close(out, torch.tensor([2.5, 0.0]))  # (1 + 4) / 2; empty: 0
    torch.testing.assert_close(
        masked_mean(values, mask, dim=-1), torch.tensor([[1.0, 4.0], [0.0, 0.0]])
    )


def test_rank_ties_count_against_the_answer():
    scores = torch.tensor([[0.5, 0.9, 0.1], [0.3, 0.3, 0.3], [0.2, 0.7, 0.7]])
    answer = torch.tensor([1, 0, 2])
    # row 0: the answer is top; row 1: all tied -> last; row 2: tied with one other -> 2
    assert answer_rank(scores, answer).tolist() == [1, 3, 2]
    assert rank(scores, scores[torch.arange(3), answer]).tolist() == [1, 3, 2]
    mrr = mean_reciprocal_rank(answer_rank(scores, answer), dim=0)
    torch.testing.assert_close(mrr, torch.tensor((1 + 1 / 3 + 1 / 2) / 3))


def test_probes_diagonal_rank_uses_the_same_rule():
    block = np.array([[1.0, 1.0], [0.0, 2.0]])
    rr = probes.diagonal_reciprocal_rank(block, [0, 1])
    np.testing.assert_allclose(rr, [0.5, 1.0])


@pytest.mark.parametrize("n", [1, 7])
def test_a_constant_scorer_gets_the_lowest_mrr_not_the_highest(n):
    scores = torch.zeros(4, n)
    ranks = answer_rank(scores, torch.zeros(4, dtype=torch.long))
    assert ranks.tolist() == [n] * 4
