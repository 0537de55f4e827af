"""``{stored-outputs}``: which machine made each notebook's stored outputs, and how far
its claims' numbers move with a fresh seed.

One row per notebook of ``_toc.yml``: the provenance that ``scripts/refresh-notebooks``
writes into the notebook's metadata (``revlib.provenance``: CPU, ATen kernel level, MKL
code path, threads, torch), and from ``tests/seed_spread.json``
(``scripts/seed-spread``) how many of its live claims have a tolerance that covers their
largest move over fresh seeds. Nothing on the table is typed: a re-executed notebook or
a re-measured spread changes it.
"""

from __future__ import annotations

import json

import nbformat
from docutils import nodes
from docutils.parsers.rst import Directive
from ledgers import ROOT, table, toc_notebooks

SPREAD = ROOT / "tests" / "seed_spread.json"


def _covered(entry: dict | None, ledger: dict | None) -> str:
    """``"k of n"``: live claims (no preconditions, measured on fresh seeds) whose
    stored
    tolerance covers their fresh-seed move; ``"not measured"`` without an entry."""
    if entry is None or ledger is None:
        return "not measured"
    tols = {r["id"]: r["tol"] for r in ledger.get("records", [])}
    rows = [
        (tols.get(rid), r["spread"])
        for rid, r in entry["records"].items()
        if r["kind"] != "precondition" and r["fresh"] and rid in tols
    ]
    ok = sum(1 for tol, move in rows if tol is not None and tol >= move)
    return f"{ok} of {len(rows)}"


def _rows() -> list[list[str]]:
    from revlib import claims

    spread = json.loads(SPREAD.read_text())["notebooks"] if SPREAD.exists() else {}
    rows = []
    for doc in toc_notebooks():
        nb = nbformat.read(ROOT / f"{doc}.ipynb", as_version=4)
        prov = nb.metadata.get("revlib", {}).get("provenance", {})
        ledger = claims.ledger_of(nb)
        name = ledger["notebook"] if ledger else doc.split("/", 1)[1]
        entry = spread.get(name)
        seeds = ", ".join(str(s) for s in entry["seeds"]) if entry else "–"
        rows.append(
            [
                name,
                prov.get("cpu", "not recorded"),
                prov.get("kernel level (ATen)", "–"),
                prov.get("MKL_ENABLE_INSTRUCTIONS", "–"),
                prov.get("threads", "–"),
                prov.get("torch", "–"),
                seeds,
                _covered(entry, ledger),
            ]
        )
    return rows


class StoredOutputs(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_dependency(str(SPREAD))
        for doc in toc_notebooks():
            env.note_dependency(str(ROOT / f"{doc}.ipynb"))
        head = [
            "notebook",
            "stored on (CPU)",
            "kernel level",
            "MKL path",
            "threads",
            "torch",
            "fresh seeds measured",
            "tolerance covers the move",
        ]
        return [table(head, _rows(), [18, 16, 9, 9, 6, 10, 14, 12], "stored-outputs")]


def setup(app):
    app.add_directive("stored-outputs", StoredOutputs)
