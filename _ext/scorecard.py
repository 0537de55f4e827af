"""The ``claims-scorecard`` directive: the page "Claims at a glance", built from the ledgers.

Each executed notebook stores its ledger in the output metadata of its ``ledger.summary()``
cell (:mod:`revlib.claims`). The directive reads them, in the order of ``_toc.yml``, and
renders one table per chapter: each claim with the paper's number, ours with its tolerance,
the test, the verdict (reproduced / partly / not reproduced / identity / precondition) and a
link to the cell that checks it. Nothing on the page is typed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import Directive

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from revlib import claims, report  # noqa: E402


def _toc_notebooks() -> list[str]:
    """Notebook docnames (``notebooks/part/name``) in the order of ``_toc.yml``."""
    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                yield node["file"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [f for f in walk(toc) if f.startswith("notebooks/")]


def _digits(tol: float) -> int:
    return report._digits_for(tol / 10)


def values_text(rec: dict) -> str:
    """Ours, as the scorecard shows it: a value or a min–max range over seeds, with ±tol."""
    vals = [v for v in rec["values"] if math.isfinite(v)]
    d = _digits(rec["tol"])
    if not vals:
        return "nan"
    lo, hi = min(vals), max(vals)
    body = f"{lo:.{d}f}" if lo == hi else f"{lo:.{d}f}–{hi:.{d}f}"
    n = len(rec["values"])
    seeds = f" ({n} seeds)" if n > 1 else ""
    return f"{body} ±{rec['tol']:g}{seeds}"


def test_text(rec: dict) -> str:
    a, b = rec["above"], rec["below"]
    if a is not None and b is not None:
        return f"in ({a:g}, {b:g})"
    return f"> {a:g}" if a is not None else f"< {b:g}"


def verdict_of(rec: dict) -> str:
    if rec["kind"] == "identity":
        return "identity (illustration)"
    if rec["kind"] == "precondition":
        return "precondition " + ("met" if rec["outcome"] == "holds" else "not met")
    if rec["outcome"] == "untested":
        return f"untested ({rec.get('unmet') or 'not fitted at this budget'})"
    if rec["outcome"] != "holds":
        return "FAILS in the stored run"
    return rec["verdict"]


def rows_of(ledger: dict) -> list[dict]:
    """The scorecard's rows for one ledger (plain strings; used by the tests too)."""
    rows = []
    for rec in ledger["records"]:
        rows.append({"id": rec["id"], "claim": rec["sentence"], "paper": rec["paper"],
                     "ours": values_text(rec), "test": test_text(rec),
                     "verdict": verdict_of(rec), "controls": ", ".join(rec["controls"]) or "–",
                     "anchor": rec["cell"]})
    return rows


def _table(head: list[str], body: list[list[nodes.Node]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["revlib-scorecard"])
    group = nodes.tgroup(cols=len(head))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    row = nodes.row()
    for h in head:
        row += nodes.entry("", nodes.paragraph(text=h))
    thead += row
    tbody = nodes.tbody()
    group += tbody
    for cells in body:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += cell if isinstance(cell, nodes.Element) else nodes.paragraph(text=str(cell))
            row += entry
        tbody += row
    return table


class ClaimsScorecard(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        builder = env.app.builder
        here = env.docname
        out: list[nodes.Node] = []
        totals = {"reproduced": 0, "partly": 0, "not reproduced": 0, "identity": 0,
                  "untested": 0, "notebooks": 0}
        sections = []
        for doc in _toc_notebooks():
            path = ROOT / f"{doc}.ipynb"
            if not path.exists():
                continue
            env.note_dependency(str(path))
            ledger = claims.ledger_of(path)
            title = nodes.rubric(text=doc.split("/", 1)[1].replace("_", " "))
            link = nodes.reference("", doc.split("/")[-1] + " notebook",
                                   refuri=builder.get_relative_uri(here, doc))
            if ledger is None:
                sections += [title, nodes.paragraph("", "", nodes.Text("No ledger stored in "),
                                                    link, nodes.Text("."))]
                continue
            totals["notebooks"] += 1
            meta = nodes.paragraph("", "", nodes.Text("Checked in the "), link,
                                   nodes.Text(f". Our scale: {ledger['scale'] or 'see the notebook'}; "
                                              f"the paper's: {ledger['paper_scale']}. Controls: "
                                              + ("; ".join(f"{k} ({v})" for k, v in
                                                           ledger["controls"].items()) or "none")
                                              + "."))
            body = []
            for row, rec in zip(rows_of(ledger), ledger["records"]):
                if rec["kind"] == "identity":
                    totals["identity"] += 1
                elif rec["kind"] == "claim":
                    key = "untested" if rec["outcome"] == "untested" else rec["verdict"]
                    totals[key] = totals.get(key, 0) + 1
                check = nodes.paragraph()
                check += nodes.reference("", "cell", refuri=builder.get_relative_uri(here, doc)
                                         + "#" + row["anchor"])
                body.append([row["claim"], row["paper"], row["ours"], row["test"],
                             row["controls"], row["verdict"], check])
            table = _table(["claim", "paper", "ours", "test (each seed)", "controls that break it",
                            "verdict", "check"], body, [30, 10, 14, 10, 14, 12, 5])
            container = nodes.container(classes=["revlib-table-scroll"])
            container += table
            sections += [title, meta, container]
        summary = nodes.paragraph(text=(
            f"{totals['notebooks']} notebooks; claims reproduced: {totals['reproduced']}, "
            f"partly: {totals['partly']}, not reproduced: {totals['not reproduced']}, "
            f"untested at this budget: {totals['untested']}; identities shown as "
            f"illustrations (not counted): {totals['identity']}."))
        out.append(summary)
        out += sections
        return out
