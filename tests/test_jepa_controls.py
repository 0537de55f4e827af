"""The binding chapters' control option: ``Config.shuffle_atomic`` (jepa and
surface_names) permutes the answers of the atomic facts (heads, relations and the
multiset of answers kept), off by default."""

from __future__ import annotations

import pytest
import torch

from revlib.data.binding import binding_task, shuffle_atomic
from revlib.experiments import jepa, surface_names


@pytest.mark.parametrize("module", [jepa, surface_names], ids=lambda m: m.NOTEBOOK)
def test_shuffle_atomic_is_validated_and_off_by_default(module):
    assert module.Config().shuffle_atomic is False
    with pytest.raises(ValueError, match="shuffle_atomic"):
        module.Config(shuffle_atomic="yes")


def test_shuffle_atomic_permutes_the_answers_only():
    seeds = [0, 1]
    task = binding_task(40, 24, 2, 4, seeds)
    out = shuffle_atomic(task, seeds)
    before, after = task.facts["atomic"], out.facts["atomic"]
    assert torch.equal(before[..., :2], after[..., :2])  # heads and relations kept
    for s in range(len(seeds)):
        assert torch.equal(before[s, :, 2].sort().values, after[s, :, 2].sort().values)
        # most answers move, so few atomic facts stay the reverse of a held-out one
        assert (before[s, :, 2] != after[s, :, 2]).float().mean() > 0.5
    for k in ("train", "test"):
        assert torch.equal(task.facts[k], out.facts[k])
    assert torch.equal(task.facts["atomic"], before)  # the input is not changed
    again = shuffle_atomic(task, seeds)
    assert torch.equal(again.facts["atomic"], after)  # deterministic per seed


def test_shuffle_atomic_wants_one_seed_per_task_seed():
    task = binding_task(40, 24, 2, 4, [0, 1])
    with pytest.raises(ValueError, match="one seed per task seed"):
        shuffle_atomic(task, [0])
