"""The bilinear model ``l_Theta(y | x) = x^T Theta y`` (Zhu et al. 2024, Section 3).

It is a one-layer, decoder-only transformer with input length one and fixed embeddings,
written directly in its effective weight ``Theta``.
"""

from __future__ import annotations

import torch
from torch import nn

from revlib import _validate


class Bilinear(nn.Module):
    """``S`` independent bilinear models; ``theta`` is ``[S, r, r]``.

    ``theta0`` (``[S, r, r]``) is the initialisation; the theorems start from zero.
    """

    def __init__(self, n_seeds: int, dim: int, theta0: torch.Tensor | None = None):
        super().__init__()
        _validate.integer("n_seeds", n_seeds, 1, None)
        _validate.integer("dim", dim, 1, None)
        if theta0 is None:
            theta0 = torch.zeros(n_seeds, dim, dim)
        if theta0.shape != (n_seeds, dim, dim):
            raise ValueError(
                f"theta0 must have shape {(n_seeds, dim, dim)}, "
                f"got {tuple(theta0.shape)}"
            )
        self.theta = nn.Parameter(theta0.clone().to(torch.get_default_dtype()))

    def logits(self, inputs: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
        """``inputs [S, N, r]``, ``vocab [S, m, r]`` -> logits ``x^T Theta v_j``,
        ``[S, N, m]``."""
        return inputs @ self.theta @ vocab.transpose(-1, -2)

    def loss(
        self, vocab: torch.Tensor, inp: torch.Tensor, out: torch.Tensor
    ) -> torch.Tensor:
        """Mean cross-entropy ``-log p(out | inp)`` per seed, ``[S]``; ``inp``/``out``
        ids ``[S, N]``."""
        x = torch.gather(vocab, 1, inp[..., None].expand(-1, -1, vocab.shape[-1]))
        logp = torch.log_softmax(self.logits(x, vocab), dim=-1)
        return -torch.gather(logp, 2, out[..., None]).squeeze(-1).mean(dim=1)
