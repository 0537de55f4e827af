"""The ``claims-scorecard`` directive: the page "Claims at a glance", built from the
ledgers.

Each executed notebook stores its ledger in the output metadata of its
``ledger.summary()`` cell (:mod:`revlib.claims`). The directive reads them from the
notebooks as this build executed them (:mod:`ledgers`), in the order of ``_toc.yml``,
and renders one folded table per chapter: each claim with its kind, what the paper
states, ours exactly as its cell prints it, the test, the controls (science or
plumbing), the verdict (for a paper claim: in size / in direction / not reproduced;
otherwise its kind) and a link to the cell that checks it. Nothing on the page is typed.
"""

from __future__ import annotations

import html

from docutils import nodes
from docutils.parsers.rst import Directive
from ledgers import ROOT, all_ledgers, table, toc_notebooks

from revlib import claims, report


def values_text(rec: dict) -> str:
    """Ours, exactly as the claim's cell prints it (:func:`revlib.report.approx`), with
    the number of seeds."""
    vals = rec["values"]
    text = report.approx(vals if len(vals) > 1 else vals[0], rec["tol"])
    return text + (f" ({len(vals)} seeds)" if len(vals) > 1 else "")


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
        return "FAILS in this run"
    return claims.verdict_of(rec)


def paper_text(rec: dict) -> str:
    if rec["kind"] != "paper":
        return "–"
    text = f"{rec['source']}: {rec['paper']}"
    if rec.get("paper_value") is not None:
        text += (
            f" (the paper's {rec['paper_value']:g}; in size within ×{rec['factor']:g})"
            if rec.get("factor")
            else f" (the paper's {rec['paper_value']:g})"
        )
    return text


def rows_of(ledger: dict) -> list[dict]:
    """The scorecard's rows for one ledger (plain strings; used by the tests too)."""
    rows = []
    for rec in ledger["records"]:
        kinds = ledger.get("control_kinds", {})
        rows.append(
            {
                "id": rec["id"],
                "claim": rec["sentence"],
                "kind": rec["kind"],
                "paper": paper_text(rec),
                "ours": values_text(rec),
                "test": test_text(rec),
                "verdict": verdict_of(rec),
                "controls": ", ".join(
                    f"{c} ({kinds.get(c, '?')})" for c in rec["controls"]
                )
                or "–",
                "anchor": rec["cell"],
            }
        )
    return rows


class _placeholder(nodes.General, nodes.Element):
    """Filled in on ``doctree-resolved``, once every notebook has been executed."""


class ClaimsScorecard(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        for doc in toc_notebooks():
            env.note_dependency(str(ROOT / f"{doc}.ipynb"))
        return [_placeholder()]


def fill_scorecard(app, doctree, docname):
    for node in list(doctree.traverse(_placeholder)):
        node.replace_self(_scorecard(app, docname))


def _scorecard(app, here: str) -> list[nodes.Node]:
    builder = app.builder
    totals: dict[str, int] = {}
    n_notebooks = 0
    sections: list[nodes.Node] = []
    for doc, (ledger, source) in all_ledgers(app).items():
        name = doc.split("/", 1)[1]
        link = nodes.reference(
            "",
            doc.split("/")[-1] + " notebook",
            refuri=builder.get_relative_uri(here, doc),
        )
        if ledger is None:
            sections += [
                nodes.rubric(text=name.replace("_", " ")),
                nodes.paragraph(
                    "", "", nodes.Text("No ledger stored in "), link, nodes.Text(".")
                ),
            ]
            continue
        n_notebooks += 1
        kinds = ledger.get("control_kinds", {})
        meta = nodes.paragraph(
            "",
            "",
            nodes.Text("Checked in the "),
            link,
            nodes.Text(
                f" ({'this build' if source == 'executed' else 'stored outputs'})."
                " Our scale: "
                f"{ledger['scale'] or 'see the notebook'}; "
                f"the paper's: {ledger['paper_scale']}. "
                "Controls: "
                + (
                    "; ".join(
                        f"{k} ({kinds.get(k, '?')}: {v})"
                        for k, v in ledger["controls"].items()
                    )
                    or "none"
                )
                + "."
            ),
        )
        body = []
        mine: dict[str, int] = {}
        for row, rec in zip(rows_of(ledger), ledger["records"]):
            if claims.is_claim(rec) or rec["kind"] == "identity":
                key = rec["kind"] + (
                    f": {row['verdict']}" if rec["kind"] == "paper" else ""
                )
                if rec["outcome"] == "untested":
                    key = rec["kind"] + ": untested"
                totals[key] = totals.get(key, 0) + 1
                mine[key] = mine.get(key, 0) + 1
            check = nodes.paragraph()
            check += nodes.reference(
                "",
                "cell",
                refuri=builder.get_relative_uri(here, doc) + "#" + row["anchor"],
            )
            body.append(
                [
                    row["claim"],
                    row["kind"],
                    row["paper"],
                    row["ours"],
                    row["test"],
                    row["controls"],
                    row["verdict"],
                    check,
                ]
            )
        container = table(
            [
                "claim",
                "kind",
                "paper",
                "ours",
                "test (each seed)",
                "controls that break it",
                "verdict",
                "check",
            ],
            body,
            [26, 6, 14, 14, 9, 13, 10, 4],
            "revlib-scorecard",
        )
        summary = f"{name.replace('_', ' ')}: " + ", ".join(
            f"{c} {k}" for k, c in sorted(mine.items())
        )
        sections += [
            nodes.raw(
                "",
                f'<details class="revlib-fold"><summary>'
                f"{html.escape(summary)}</summary>",
                format="html",
            ),
            meta,
            container,
            nodes.raw("", "</details>", format="html"),
        ]
    summary = nodes.paragraph(
        text=(
            f"{n_notebooks} notebooks. Claims by kind and verdict: "
            + ", ".join(f"{c} {k}" for k, c in sorted(totals.items()))
            + ". Only paper claims have a verdict about a paper (in size, in "
            "direction, not reproduced); identities are illustrations, never counted "
            "as evidence. Each chapter's table is folded: open it to see every claim."
        )
    )
    return [summary] + sections
