import os
import tempfile

# Figures written by tests go to a temporary folder, never into the tree.
os.environ.setdefault("REVLIB_FIGURES_DIR", tempfile.mkdtemp(prefix="revlib-figs-"))


import pytest  # noqa: E402


@pytest.fixture
def offline_switches_after():
    """``run(imports, call)``: in a fresh interpreter with the offline switches unset,
    run ``imports``, note whether ``HF_HUB_OFFLINE`` is set, run ``call``, and return
    ``[set_after_import, HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE]`` as printed strings."""
    import subprocess
    import sys

    def run(imports: str, call: str) -> list[str]:
        code = (
            "import os; os.environ.pop('HF_HUB_OFFLINE', None); "
            f"os.environ.pop('TRANSFORMERS_OFFLINE', None); {imports}; "
            f"a = 'HF_HUB_OFFLINE' in os.environ; {call}; "
            "print(a, os.environ['HF_HUB_OFFLINE'], os.environ['TRANSFORMERS_OFFLINE'])"
        )
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()

    return run


@pytest.fixture
def n_train_spy(monkeypatch):
    """``spy(module)`` -> a dict whose ``"n"`` is the number of trained facts that
    ``module.run`` last passed to ``train`` (the real ``train`` still runs)."""

    def spy_on(module):
        seen = {}
        real = module.train

        def spy(model, loss, cfg, evals, n_train, **kw):
            seen["n"] = n_train
            return real(model, loss, cfg, evals, n_train=n_train, **kw)

        monkeypatch.setattr(module, "train", spy)
        return seen

    return spy_on


@pytest.fixture
def arithmetic_n_train(n_train_spy):
    """The spy on ``revlib.experiments.arithmetic``'s ``train``."""
    import revlib.experiments.arithmetic as ar

    return n_train_spy(ar)
