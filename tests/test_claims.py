"""revlib.claims: margins, outcomes under controls, preconditions, and every stored ledger."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from revlib import claims

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))


def _ledger(control="none"):
    return claims.Ledger("reversal/bilinear", control=control,
                         controls={"reverse_in_training": "reverse facts trained"})


def test_margin_is_the_smallest_clearance():
    assert claims.margin_of([0.2, 0.3], below=0.5) == pytest.approx(0.2)
    assert claims.margin_of([0.95, 1.02], above=0.9, below=1.1) == pytest.approx(0.05)
    assert claims.margin_of([0.5], above=0.9) == pytest.approx(-0.4)
    assert claims.margin_of([float("nan")], above=0.0) == -math.inf
    with pytest.raises(ValueError, match="bound"):
        claims.margin_of([1.0])
    with pytest.raises(ValueError, match="above must be smaller"):
        claims.margin_of([1.0], above=2, below=1)


def test_a_claim_holds_fails_and_is_broken_by_its_control(monkeypatch):
    monkeypatch.delenv("REVLIB_CLAIMS", raising=False)
    led = _ledger()
    assert led.check("a", "s", [1.0, 1.01], above=0.9, below=1.1, tol=0.02,
                     controls=("reverse_in_training",))
    with pytest.raises(AssertionError, match="fails, expected to hold"):
        led.check("b", "s", [0.5], above=0.9, tol=0.02, controls=("reverse_in_training",))
    ctl = _ledger("reverse_in_training")
    assert not ctl.check("a", "s", [0.2], above=0.9, tol=0.02, controls=("reverse_in_training",))
    with pytest.raises(AssertionError, match="holds under control"):
        ctl.check("b", "s", [1.0], above=0.9, tol=0.02, controls=("reverse_in_training",))


def test_record_mode_never_raises_and_writes_the_ledger(monkeypatch, tmp_path):
    monkeypatch.setenv("REVLIB_CLAIMS", "record")
    monkeypatch.setenv("REVLIB_LEDGER", str(tmp_path / "l.json"))
    led = _ledger("reverse_in_training")
    led.check("b", "s", [1.0], above=0.9, tol=0.02, controls=("reverse_in_training",))
    assert led.problems() == ["b: holds, expected to fail"]
    led.summary()
    data = json.loads((tmp_path / "l.json").read_text())
    assert data["records"][0]["outcome"] == "holds" and data["control"] == "reverse_in_training"
    assert not list(tmp_path.glob(".*tmp"))


def test_an_unmet_precondition_leaves_its_claims_untested(monkeypatch):
    monkeypatch.delenv("REVLIB_CLAIMS", raising=False)
    led = _ledger()
    assert not led.precondition("fit", "fitted", [0.4], below=0.05, tol=0.01)
    assert not led.check("a", "s", [0.0], above=0.9, tol=0.02, controls=("reverse_in_training",),
                         requires=("fit",))  # would fail, but is untested: no raise
    assert led.records["a"].outcome == "untested"
    assert led.records["a"].unmet == "fit did not hold: not fitted at this budget"
    # a precondition that is not about fitting gives its own reason (a missing model)
    assert not led.precondition("model", "loads", [0.0], above=0.5, tol=0.1,
                                unmet="the model is not installed")
    led.check("b", "s", [float("nan")], above=0.9, tol=0.02,
              controls=("reverse_in_training",), requires=("model",))
    assert led.records["b"].unmet == "model did not hold: the model is not installed"
    with pytest.raises(ValueError, match="has not checked yet"):
        led.check("c", "s", [1.0], above=0.9, tol=0.02, controls=("reverse_in_training",),
                  requires=("nope",))


def test_bad_claims_are_refused():
    led = _ledger()
    with pytest.raises(ValueError, match="names no control"):
        led.check("a", "s", [1.0], above=0.9, tol=0.02)
    with pytest.raises(ValueError, match="names control 'x'"):
        led.check("a", "s", [1.0], above=0.9, tol=0.02, controls=("x",))
    with pytest.raises(ValueError, match="CONTROL must be"):
        _ledger("nope")
    with pytest.raises(ValueError, match="claim id"):
        led.check("Bad Id", "s", [1.0], above=0.9, tol=0.02, controls=("reverse_in_training",))
    with pytest.raises(ValueError, match="verdict"):
        led.check("a", "s", [1.0], above=0.9, tol=0.02, controls=("reverse_in_training",),
                  verdict="sort of")
    led.identity("i", "s", [1.0], above=0.5, tol=0.1)
    with pytest.raises(ValueError, match="used twice"):
        led.identity("i", "s", [1.0], above=0.5, tol=0.1)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_ledger_tolerances_are_below_margins(path):
    """A number nbval accepts (within its printed tolerance) cannot flip a verdict."""
    ledger = claims.ledger_of(path)
    assert ledger is not None, f"{path.name} stores no ledger: its claims must go through revlib.claims"
    assert ledger["control"] == "none", "the stored run is the default run"
    for rec in ledger["records"]:
        if rec["kind"] == "claim":
            assert rec["controls"], f"{rec['id']} names no control"
            assert rec["outcome"] == "holds", f"{rec['id']} does not hold in the stored run"
        if rec["outcome"] == "holds":
            assert rec["tol"] < rec["margin"], (
                f"{path.stem}/{rec['id']}: tolerance ±{rec['tol']} is not below the margin "
                f"{rec['margin']:.4g}: a re-run nbval accepts could flip the verdict")


def test_scorecard_rows_come_from_the_ledger(monkeypatch):
    import sys
    sys.path.insert(0, str(ROOT / "_ext"))
    import scorecard

    monkeypatch.delenv("REVLIB_CLAIMS", raising=False)
    led = _ledger()
    led.precondition("fit", "fitted", [0.01, 0.02], below=0.05, tol=0.005)
    led.check("rev", "the reverse stays at log m", [0.99, 1.01], above=0.9, below=1.1, tol=0.02,
              paper="unknown", controls=("reverse_in_training",), requires=("fit",))
    led.identity("zero", "a structural zero", [0.0], above=-1e-9, below=1e-9, tol=1e-10)
    rows = scorecard.rows_of(led.as_dict())
    assert [r["verdict"] for r in rows] == ["precondition met", "reproduced",
                                            "identity (illustration)"]
    assert rows[1]["ours"] == "0.990–1.010 ±0.02 (2 seeds)"
    assert rows[1]["test"] == "in (0.9, 1.1)" and rows[1]["controls"] == "reverse_in_training"
    assert rows[1]["anchor"] == "claim-bilinear-rev"


def test_a_glued_number_is_compared_within_its_tolerance():
    """nbval (through revlib's plugin) compares a glued number within the tolerance the glue
    stored in the output's metadata, and exactly without one."""
    from revlib import nbval_plugin, report

    key = nbval_plugin.GLUE_PREFIX + "text/plain"
    with_tol = {"output_type": "display_data", "data": {key: "0.98–1.01"},
                "metadata": {"revlib_tol": 0.02}}
    fields = nbval_plugin._text_fields(with_tol)
    assert [f[0] for f in fields] == [key]
    ref = nbval_plugin._with_tol("0.98–1.01", with_tol)
    assert not report.compare(ref, nbval_plugin._with_tol("0.99–1.02", with_tol))
    assert report.compare(ref, nbval_plugin._with_tol("0.93–1.01", with_tol))
    exact = {"output_type": "display_data", "data": {key: "0.98"}, "metadata": {}}
    assert report.compare(nbval_plugin._with_tol("0.98", exact),
                          nbval_plugin._with_tol("0.99", exact))


def test_quick_values_apply_to_every_control_run_and_per_control(tmp_path):
    import argparse
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("check_claims", root / "scripts/check_claims.py")
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    stored = {"quick": {"N_SEEDS": 1, "swap_stored": {"STEPS": 20}}}
    args = argparse.Namespace(seed=None, quick=True, scale=1.0, set=[])
    swap = cc._job(Path("x.ipynb"), stored, "swap_stored", args, tmp_path)["params"]
    other = cc._job(Path("x.ipynb"), stored, "no_training", args, tmp_path)["params"]
    assert swap == {"CONTROL": "swap_stored", "N_SEEDS": 1, "STEPS": 20}
    assert other == {"CONTROL": "no_training", "N_SEEDS": 1}
    with pytest.raises(ValueError, match="not one of the controls"):
        claims.Ledger("reversal/x", controls={"a": "..."}, quick={"b": {"STEPS": 1}})
