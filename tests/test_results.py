"""The page "What reproduced": book/results/*.yml against the stored ledgers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from revlib import claims

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))

import ledgers  # noqa: E402
import reproduced  # noqa: E402


def _stored() -> dict[str, dict | None]:
    return {
        doc.split("/", 1)[1]: ledgers.executed_ledger(None, doc)[0]
        for doc in ledgers.toc_notebooks()
    }


def test_every_paper_has_a_results_file_with_known_keys():
    papers = reproduced.load_results()
    bib = (ROOT / "references.bib").read_text()
    assert {p["part"] for p in papers} == {
        "reversal",
        "binding",
        "associations",
        "caching",
    }
    for paper in papers:
        assert f"{{{paper['paper']}," in bib, (
            f"{paper['file']}: {paper['paper']} not in references.bib"
        )
        for row in paper["results"]:
            if "chapter" in row:
                assert (ROOT / "notebooks" / f"{row['chapter']}.ipynb").exists(), row
                assert row["chapter"].split("/")[0] == paper["part"], row
            if row.get("figure"):
                assert (ROOT / "figures" / f"{row['figure']}.svg").exists(), (
                    f"{paper['file']}: figure {row['figure']} is not under figures/"
                )


def test_every_paper_claim_is_on_the_page_exactly_once():
    stored = _stored()
    named: dict[tuple[str, str], int] = {}
    for paper in reproduced.load_results():
        for row in paper["results"]:
            reproduced.view(row, stored)  # raises on a missing or non-paper claim
            for cid in row.get("claims", []):
                named[(row["chapter"], cid)] = named.get((row["chapter"], cid), 0) + 1
    paper_claims = {
        (nb, r["id"])
        for nb, led in stored.items()
        if led
        for r in led["records"]
        if r["kind"] == "paper"
    }
    assert sorted(paper_claims - set(named)) == [], (
        "paper claims on no row of What reproduced"
    )
    assert sorted(k for k, n in named.items() if n > 1) == [], "claims on two rows"


def _ledger(values, **kw):
    led = claims.Ledger("reversal/bilinear", controls={"c": ("science", "s")})
    led.check(
        "a",
        "s",
        values,
        kind="paper",
        above=0.0,
        print_tol=0.01,
        broken_by=("c",),
        source="Table 1",
        paper="about 0.7",
        **kw,
    )
    return led.as_dict()


@pytest.mark.parametrize(
    "values, kw, verdict",
    [
        ([0.6, 0.8], {"paper_value": 0.7, "factor": 2}, "in size"),
        ([0.1, 0.8], {"paper_value": 0.7, "factor": 2}, "in direction"),
        ([0.1], {}, "in direction"),
        ([0.1], {"contradicts": True}, "not reproduced"),
    ],
)
def test_a_rows_verdict_comes_from_its_claims(monkeypatch, values, kw, verdict):
    monkeypatch.delenv("REVLIB_CLAIMS", raising=False)
    row = {
        "result": "r",
        "source": "Table 1",
        "paper": "p",
        "chapter": "reversal/bilinear",
        "claims": ["a"],
    }
    assert (
        reproduced.view(row, {"reversal/bilinear": _ledger(values, **kw)})["verdict"]
        == verdict
    )
    not_run = {"result": "r", "source": "s", "paper": "p", "not_run": "why"}
    assert reproduced.view(not_run, {})["verdict"] == "not run"


def test_a_row_naming_a_missing_or_non_paper_claim_is_refused(monkeypatch):
    monkeypatch.delenv("REVLIB_CLAIMS", raising=False)
    led = claims.Ledger("reversal/bilinear", controls={"c": ("science", "s")})
    led.check(
        "mine", "s", [1.0], kind="ours", above=0.0, print_tol=0.01, broken_by=("c",)
    )
    row = {"result": "r", "source": "s", "paper": "p", "chapter": "reversal/bilinear"}
    with pytest.raises(ValueError, match="does not check"):
        reproduced.view(
            {**row, "claims": ["nope"]}, {"reversal/bilinear": led.as_dict()}
        )
    with pytest.raises(ValueError, match="only paper claims"):
        reproduced.view(
            {**row, "claims": ["mine"]}, {"reversal/bilinear": led.as_dict()}
        )


def test_a_malformed_results_file_names_the_field(tmp_path, monkeypatch):
    bad = tmp_path / "reversal.yml"
    bad.write_text(
        "paper: k\ntitle: t\nresults:\n  - result: r\n    source: s\n"
        "    paper: p\n    claims: [a]\n"
    )
    monkeypatch.setattr(reproduced, "RESULTS", tmp_path)
    monkeypatch.setattr(reproduced, "ROOT", tmp_path)
    with pytest.raises(ValueError, match="chapter"):
        reproduced.load_results()
    bad.write_text(
        "paper: k\ntitle: t\nresults:\n  - result: r\n    source: s\n"
        "    paper: p\n    not_run: why\n    colour: red\n"
    )
    with pytest.raises(ValueError, match="unknown fields"):
        reproduced.load_results()
