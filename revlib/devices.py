"""Where an experiment's tensors live: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

The experiments build their data and models inside ``run(config)``, so rather than
thread a ``device`` through every chapter, :func:`use` runs a whole experiment on a
device: tensor constructors default to it (as with ``torch.set_default_device``), CPU
tensors made otherwise (``torch.from_numpy``) follow the device tensors they meet, and
``.numpy()`` copies a result back to the host first. One difference from
``torch.set_default_device``: every random draw in revlib takes a CPU
``torch.Generator`` (one stream per seed, see :mod:`revlib.repro`), which a CUDA
constructor rejects; such draws run on the CPU and are then moved, so a seed gets the
same data and initial weights on every device.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode

# The factory functions that take ``device=`` and would otherwise allocate on the CPU.
_CONSTRUCTORS = frozenset(
    {
        torch.empty,
        torch.empty_strided,
        torch.zeros,
        torch.ones,
        torch.full,
        torch.arange,
        torch.eye,
        torch.linspace,
        torch.logspace,
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
        torch.tensor,
        torch.as_tensor,
        torch.asarray,
        torch.scalar_tensor,
        torch.tril_indices,
        torch.triu_indices,
    }
)


def resolve(device: str, here: bool = True) -> torch.device:
    """Check ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``) against this machine.

    Raises ``ValueError`` naming ``device`` when it is malformed, when CUDA is not
    available, or when ``N`` is not one of the visible GPUs. ``here=False`` checks the
    spelling only (for a device on another machine, e.g. a Dask worker's).
    """
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    dev = torch.device(device)
    if dev.type == "cuda" and here:
        if not torch.cuda.is_available():
            raise ValueError(
                f"device must be 'cpu' on this machine (CUDA is not available), "
                f"got {device!r}"
            )
        n = torch.cuda.device_count()
        if dev.index is not None and dev.index >= n:
            raise ValueError(
                f"device must be 'cuda:N' with N in [0, {n - 1}] on this machine, "
                f"got {device!r}"
            )
    return dev


class _OnDevice(TorchFunctionMode):
    """Allocate on ``device``; draw with CPU generators on the CPU; ``.numpy()`` via the
    host.

    Tensors that did not come from a constructor (``torch.from_numpy``, tables built
    before the run) stay on the CPU; an operation that meets them together with device
    tensors moves them to the device (not 0-dim ones, which CUDA takes as scalars, e.g.
    optimiser step counts). An in-place operation on a CPU tensor instead brings its
    other operands to the CPU, so the write lands in the tensor the caller holds, not in
    a copy. Inside ``__torch_function__`` the mode is switched off, so ``func(...)``
    runs plain torch.
    """

    def __init__(self, device: torch.device):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.numpy:
            return func(args[0].cpu(), *args[1:], **kwargs)
        if func in _CONSTRUCTORS and kwargs.get("device") is None:
            gen = kwargs.get("generator")
            if gen is not None and gen.device.type == "cpu":
                return func(*args, **kwargs).to(self.device)
            return func(*args, **{**kwargs, "device": self.device})
        name = getattr(func, "__name__", "")
        if name not in _NO_MOVE:
            tensors = [t for t in _tensors((args, kwargs)) if t.dim() > 0]
            if any(t.device.type == "cpu" for t in tensors) and any(
                t.device.type != "cpu" for t in tensors
            ):
                in_place = name == "__setitem__" or (
                    name.endswith("_") and not name.endswith("__")
                )
                if (
                    in_place
                    and isinstance(args[0], torch.Tensor)
                    and args[0].device.type == "cpu"
                ):
                    target, head = torch.device("cpu"), args[:1]
                    args, kwargs = _moved(args[1:], target), _moved(kwargs, target)
                    args = head + args
                else:
                    args, kwargs = (
                        _moved(args, self.device),
                        _moved(kwargs, self.device),
                    )
        return func(*args, **kwargs)


# Operations whose point is the device of their operands.
_NO_MOVE = frozenset({"to", "cpu", "cuda", "copy_", "type_as", "new_tensor"})


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for x in tree:
            yield from _tensors(x)
    elif isinstance(tree, dict):
        for x in tree.values():
            yield from _tensors(x)


def _moved(tree, device: torch.device):
    if isinstance(tree, torch.Tensor):
        return tree.to(device) if tree.dim() > 0 else tree
    if isinstance(tree, (list, tuple)):
        return type(tree)(_moved(x, device) for x in tree)
    if isinstance(tree, dict):
        return {k: _moved(v, device) for k, v in tree.items()}
    return tree


@contextmanager
def use(device: str | torch.device):
    """Run the enclosed code on ``device`` (validated by :func:`resolve`); a no-op for
    the CPU.

    ``with revlib.devices.use("cuda"): result = run(config)``. Arrays in the result that
    were made with ``.numpy()`` are on the host; tensors kept in it (a model, a task)
    stay on the device.
    """
    dev = resolve(str(device))
    if dev.type == "cpu":
        yield dev
        return
    with _OnDevice(dev):
        yield dev
