"""Numbers printed with their tolerance, and the tolerant comparison nbval uses."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import nbformat
import numpy as np
import pytest

from revlib import report


def test_approx_formats_scalars_arrays_and_relative_tolerances():
    assert (
        report.approx(0.4312, 0.05) == "0.431 ±0.05"
    )  # one decimal finer than the tolerance
    assert report.approx([8.21, 9.13], 1.5) == "[8.2 9.1] ±1.5"
    assert report.approx([[1, 2], [3, 4]], 0.5, digits=0) == "[[1 2] [3 4]] ±0.5"
    assert report.approx(12.34, "10%") == "12.3 ±10%"
    assert report.approx(float("nan"), 0.1) == "nan ±0.1"


@pytest.mark.parametrize("tol", [0, -1, float("inf"), "ten%", "-5%"])
def test_approx_rejects_bad_tolerance(tol):
    with pytest.raises(ValueError, match="tol"):
        report.approx(1.0, tol)


def test_approx_rejects_bad_digits():
    with pytest.raises(ValueError, match="digits"):
        report.approx(1.0, 0.1, digits=-1)


@pytest.mark.parametrize(
    "ref, new",
    [
        (
            "NLL [8.2 9.1] ±1.5, vocab 202",
            "NLL [ 9.6  7.7] ±1.5, vocab 202",
        ),  # within, re-padded
        ("p 0.43 ±0.05 (chance 0.01)", "p 0.47 ±0.05 (chance 0.01)"),
        ("gain 12.3 ±10%", "gain 13.5 ±10%"),
        ("a\n  b 1.00 ±0.1", "a b 1.1 ±0.1"),  # whitespace, digits
        ("flat 0.5", "flat 0.50"),  # same value
    ],
)
def test_compare_accepts_moves_within_tolerance(ref, new):
    assert report.compare(ref, new) == []


@pytest.mark.parametrize(
    "ref, new, why",
    [
        ("NLL [8.2 9.1] ±1.5, vocab 202", "NLL [8.2 10.8] ±1.5, vocab 202", "number 2"),
        (
            "NLL [8.2 9.1] ±1.5, vocab 202",
            "NLL [8.2 9.1] ±1.5, vocab 203",
            "must be equal",
        ),
        ("p 0.43 ±0.05", "p 0.50 ±0.05", "tolerance"),
        ("gain 12.3 ±10%", "gain 14.0 ±10%", "tolerance"),
        ("held 0.1 ±0.1", "NOT held 0.1 ±0.1", "text"),
        (
            "x 1 ±0.5",
            "x 1 ±0.9",
            "must be equal",
        ),  # a tolerance is itself compared exactly
        ("x [1 2] ±0.5", "x [1 2 3] ±0.5", "text"),
    ],
)
def test_compare_rejects_real_differences(ref, new, why):
    problems = report.compare(ref, new)
    assert problems and why in " ".join(problems)


def test_numbers_inside_words_are_text():
    assert report.compare("layer2 p_AB", "layer3 p_AB")
    assert report.count_tolerances(["d=64 x 0.1 ±0.1 [1 2] ±3"]) == 3


def test_drift_summarises_the_largest_move():
    assert report.drift("a 1.0 ±0.5 b 2", "a 1.0 ±0.5 b 2") == ""
    line = report.drift("a 1.0 ±0.5 b 2", "a 1.7 ±0.5 b 2")
    assert "1.0 -> 1.7" in line and "beyond tolerance" in line


def _notebook(tmp_path, stored: str, printed: str):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"print({printed!r})", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored + "\n")]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize(
    "printed, passes", [("loss 0.47 ±0.05", True), ("loss 0.55 ±0.05", False)]
)
def test_nbval_uses_the_declared_tolerance(tmp_path, printed, passes):
    path = _notebook(tmp_path, "loss 0.43 ±0.05", printed)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--nbval",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert (run.returncode == 0) == passes, run.stdout[-2000:]
    if not passes:
        assert "tolerance ±0.05" in run.stdout


def test_notebooks_keep_most_outputs_compared():
    """At most 10% of code cells may have their outputs ignored by nbval."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    markers = ("nbval-ignore-output", "nbval-skip", "raises-exception")
    total = ignored = 0
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            total += 1
            src = "".join(cell["source"])
            tags = cell.get("metadata", {}).get("tags", [])
            if (
                any(t in tags for t in markers)
                or "NBVAL_IGNORE_OUTPUT" in src
                or "NBVAL_SKIP" in src
            ):
                ignored += 1
    assert total > 50
    assert ignored <= 0.10 * total, (
        f"{ignored} of {total} code cells have ignored outputs"
    )


def test_chance_mrr_and_diagonal_ranks():
    from revlib import probes

    assert probes.chance_mrr(1) == 1.0
    assert abs(probes.chance_mrr(4) - (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4) < 1e-12
    with pytest.raises(ValueError, match="n_candidates"):
        probes.chance_mrr(0)
    block = [[3.0, 1.0, 0.0], [2.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    # row 0: own entry largest; row 1: second; row 2: tied with two others, ties count
    # against it
    assert list(probes.diagonal_reciprocal_rank(block, [0, 1, 2])) == [1.0, 0.5, 1 / 3]


def test_exact_prints_stored_numbers_without_a_tolerance():
    assert report.exact([0.6471, 0.4567]) == "[0.647 0.457]"
    assert report.exact(np.array([[1.0]]), digits=1) == "[1.0]"
