import pytest
import torch

from revlib import repro


def test_setup_fixes_seed_threads_and_determinism():
    repro.setup(123)
    a = torch.randn(5)
    gen = repro.setup(123)
    b = torch.randn(5)
    assert torch.equal(a, b)
    assert torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.equal(
        torch.randn(3, generator=gen), torch.randn(3, generator=repro.generator(123))
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": 0, "threads": 0}, "threads"),
    ],
)
def test_setup_rejects_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        repro.setup(**kwargs)


def test_environment_report_names_versions():
    report = repro.environment_report()
    assert report["torch"].startswith("2.13")
    assert {"python", "numpy", "matplotlib", "seaborn", "revlib"} <= set(report)


def test_seed_list():
    assert repro.seed_list(7, 3) == [7, 8, 9]


def test_thread_count_comes_from_revlib_threads(monkeypatch):
    monkeypatch.setenv("REVLIB_THREADS", "2")
    repro.setup(0)
    assert torch.get_num_threads() == 2
    monkeypatch.setenv("REVLIB_THREADS", "two")
    with pytest.raises(ValueError, match="REVLIB_THREADS"):
        repro.setup(0)
    monkeypatch.delenv("REVLIB_THREADS")
    repro.setup(0)
    assert torch.get_num_threads() == 1


def test_default_dtype_comes_from_revlib_dtype(monkeypatch):
    try:
        monkeypatch.setenv("REVLIB_DTYPE", "float64")
        repro.setup(0)
        assert torch.get_default_dtype() == torch.float64
        assert repro.provenance()["dtype"] == "float64"
        monkeypatch.setenv("REVLIB_DTYPE", "half")
        with pytest.raises(ValueError, match="REVLIB_DTYPE"):
            repro.setup(0)
    finally:
        monkeypatch.delenv("REVLIB_DTYPE")
        repro.setup(0)
    assert torch.get_default_dtype() == torch.float32
    assert "dtype" not in repro.provenance()


def _other_machine_in(env):
    import os
    import subprocess
    import sys

    code = "from revlib import repro; print(repro.other_machine())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return eval(out)


def test_other_machine_is_one_kernel_level_below_this_one():
    here = torch.backends.cpu.get_cpu_capability()
    other = repro.other_machine()
    assert other["REVLIB_THREADS"] == "2"
    if here in ("AVX2", "AVX512"):  # x86: there is a lower level to go to
        assert other["ATEN_CPU_CAPABILITY"].upper() != here
    # what ATen would run under those variables is a lower level, never this machine's
    assert (
        _other_machine_in({"ATEN_CPU_CAPABILITY": "avx2"})["ATEN_CPU_CAPABILITY"]
        == "default"
    )
    if here == "AVX512":
        assert other == {
            "ATEN_CPU_CAPABILITY": "avx2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "REVLIB_THREADS": "2",
        }
