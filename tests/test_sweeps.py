"""Devices: validation, the device mode that runs an experiment on a GPU, and train()."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from revlib import devices
from revlib.train import TrainConfig, train


# ---------------------------------------------------------------- devices

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error():
    for dev in ("cuda", "cuda:1"):
        with pytest.raises(ValueError, match=rf"^device must be 'cpu' on this machine .*'{dev}'"):
            devices.resolve(dev)
    assert devices.resolve("cuda:3", here=False) == torch.device("cuda", 3)
    with pytest.raises(ValueError, match="device must be"):
        devices.resolve("cuda:x")


def test_device_mode_places_tensors_and_keeps_random_streams():
    # "meta" stands in for a GPU: a second device that, like CUDA, refuses to mix with the CPU.
    g, ref = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    table = torch.from_numpy(np.arange(6.0))         # a CPU tensor made outside the constructors
    with devices._OnDevice(torch.device("meta")):
        x = torch.randn(4, generator=g)              # drawn on the CPU, then moved
        perm = torch.randperm(5, generator=g)
        z = torch.zeros(3)
        y = table[torch.arange(3)] + z               # the CPU table follows the meta tensors
        host = torch.ones(2, device="cpu").numpy()
    assert x.device.type == perm.device.type == z.device.type == y.device.type == "meta"
    torch.randn(4, generator=ref), torch.randperm(5, generator=ref)
    assert torch.equal(g.get_state(), ref.get_state())   # same draws as on the CPU
    assert isinstance(host, np.ndarray) and torch.zeros(1).device.type == "cpu"  # mode is gone


def test_train_puts_minibatch_indices_on_the_parameters_device():
    p = torch.nn.Parameter(torch.zeros(2, 3, device="meta"))
    seen = []

    def loss(idx):
        seen.append(idx.device.type)
        return (p * p).sum(-1)

    train([p], loss, TrainConfig(steps=2, lr=0.1, optimizer="sgd", batch_size=2, eval_points=2),
          {}, n_train=4, n_seeds=2)
    assert seen == ["meta", "meta"]
