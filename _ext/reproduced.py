"""The page "What reproduced" and each chapter's box of its rows, from
``book/results/*.yml`` and the ledgers.

``book/results/<part>.yml`` lists a paper's headline results (its theorems, figures,
tables, variants and ablations), each with what the paper states and at what scale, and
either the ``kind="paper"`` claims of one notebook that test it or, for a result the
book does not run, ``not_run`` and why. Nothing measured is typed there: ours and the
verdict come from the ledgers of this build's executed notebooks (:mod:`ledgers`).

A row's verdict, from its claims' (:func:`revlib.claims.verdict_of`): *not run*;
*untested* when a claim's precondition did not hold; *fails* when a claim does not hold
(a build reporting it is broken); *not reproduced* when a claim states that the paper's
result fails here; *in size* when every claim is (every seed within the claim's factor
of the paper's number); else *in direction*.

Directives: ``{reproduced-page}`` (every paper: a figure of ours against the paper's
number, then one compact table) and ``{reproduced-box} part/name`` (the rows of one
chapter, at its top, folded to one line of counts until the reader opens it).
"""

from __future__ import annotations

import html
import io
import math

import numpy as np
import yaml
from docutils import nodes
from docutils.parsers.rst import Directive

from ledgers import ROOT, all_ledgers, table, toc_notebooks

RESULTS = ROOT / "book" / "results"
PAGE = "book/reproduced"
ROW_KEYS = {
    "result",
    "source",
    "paper",
    "paper_scale",
    "chapter",
    "claims",
    "figure",
    "gap",
    "not_run",
}
ORDER = ("in size", "in direction", "not reproduced", "untested", "fails", "not run")


def load_results() -> list[dict]:
    """The papers of ``book/results/*.yml`` in the order of the book's parts, each
    checked: ``{"paper", "title", "results": [row, ...]}``. A malformed file is a
    ``ValueError`` naming the file, the row and the field."""
    order = {}
    for doc in toc_notebooks():
        order.setdefault(doc.split("/")[1], len(order))
    files = sorted(RESULTS.glob("*.yml"), key=lambda p: order.get(p.stem, len(order)))
    papers = []
    for path in files:
        data = yaml.safe_load(path.read_text())
        where = path.relative_to(ROOT)
        for key in ("paper", "title", "results"):
            if key not in data:
                raise ValueError(f"{where}: no {key!r}")
        for i, row in enumerate(data["results"]):
            name = f"{where} row {i + 1} ({row.get('result', '?')!r})"
            extra = set(row) - ROW_KEYS
            if extra:
                raise ValueError(
                    f"{name}: unknown fields {sorted(extra)}; "
                    f"allowed: {sorted(ROW_KEYS)}"
                )
            for key in ("result", "source", "paper"):
                if not str(row.get(key, "")).strip():
                    raise ValueError(f"{name}: {key!r} is missing or empty")
            if ("not_run" in row) == ("claims" in row):
                raise ValueError(
                    f"{name}: give either claims (with chapter) or not_run"
                )
            if "claims" in row and ("chapter" not in row or not row["claims"]):
                raise ValueError(
                    f"{name}: claims need a chapter (part/name) and at least one id"
                )
        papers.append({**data, "file": str(where), "part": path.stem})
    return papers


def _median_range(values: list[float]) -> tuple[float, float, float]:
    vals = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if vals.size == 0:
        return math.nan, math.nan, math.nan
    return float(np.median(vals)), float(vals.min()), float(vals.max())


def _fmt(v: float, tol: float) -> str:
    from revlib import report

    return f"{v:.{report._digits_for(tol / 10)}f}"


def view(row: dict, ledgers: dict[str, dict | None]) -> dict:
    """What the page shows for one row: its verdict, ours as text, the ratios to the
    paper's number for the figure, and the cells it links to
    (``[(doc, anchor, claim id)]``). ``ledgers``: ``{"part/name": ledger}``."""
    out = {"row": row, "cells": [], "ratios": [], "ours": [], "scale": ""}
    if "not_run" in row:
        out["verdict"] = "not run"
        return out
    ledger = ledgers.get(row["chapter"])
    if ledger is None:
        raise ValueError(
            f"row {row['result']!r}: notebook {row['chapter']} has no ledger"
        )
    recs = {r["id"]: r for r in ledger["records"]}
    verdicts = []
    for cid in row["claims"]:
        rec = recs.get(cid)
        if rec is None:
            raise ValueError(
                f"row {row['result']!r} names claim {cid!r}, which "
                f"{row['chapter']} does not check"
            )
        if rec["kind"] != "paper":
            raise ValueError(
                f"row {row['result']!r} names {row['chapter']}:{cid}, a "
                f"{rec['kind']!r} claim: only paper claims go on this page"
            )
        verdicts.append(rec["verdict"])
        med, lo, hi = _median_range(rec["values"])
        n = len(rec["values"])
        text = (
            _fmt(med, rec["tol"])
            if n == 1
            else (
                f"{_fmt(med, rec['tol'])} "
                f"({_fmt(lo, rec['tol'])}–{_fmt(hi, rec['tol'])}, {n} seeds)"
            )
        )
        if rec.get("paper_value") is not None and rec.get("ratio") is not None:
            text += f", ×{rec['ratio']:.2g} the paper's"
            vals = np.asarray(rec["values"], dtype=float) / rec["paper_value"]
            out["ratios"].append(
                (
                    cid,
                    float(np.median(vals)),
                    float(vals.min()),
                    float(vals.max()),
                    rec.get("factor"),
                )
            )
        if not rec.get("science"):
            text += " †"
        out["ours"].append((cid, text, rec["sentence"]))
        out["cells"].append((f"notebooks/{row['chapter']}", rec["cell"], cid))
    out["scale"] = ledger.get("scale", "")
    if "fails" in verdicts:
        out["verdict"] = "fails"
    elif "untested" in verdicts:
        out["verdict"] = "untested"
    elif "not reproduced" in verdicts:
        out["verdict"] = "not reproduced"
    elif all(v == "in size" for v in verdicts):
        out["verdict"] = "in size"
    else:
        out["verdict"] = "in direction"
    return out


def ratio_svg(title: str, ratios: list[tuple[str, float, float, float, float]]) -> str:
    """A dot plot, one row per result with a number: ours / the paper's (median dot,
    seed range bar, log scale), the band where it counts as in size shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positive = [v for r in ratios for v in r[1:4] if v > 0]
    floor = min(positive) / 3 if positive else 0.01  # a zero is drawn at the left edge
    ratios = [
        (label, max(med, floor), max(lo, floor), max(hi, floor), factor)
        for label, med, lo, hi, factor in ratios
    ]
    n = len(ratios)
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * n + 1.1))
    for i, (label, med, lo, hi, factor) in enumerate(ratios):
        y = n - 1 - i
        if factor:
            ax.fill_betweenx(
                [y - 0.4, y + 0.4], 1 / factor, factor, color="#dbe9d8", lw=0
            )
        ax.plot([lo, hi], [y, y], color="#555", lw=1.5)
        inside = factor and 1 / factor <= lo and hi <= factor
        ax.plot([med], [y], "o", color="#2e7d32" if inside else "#1f5fa8")
    ax.axvline(1.0, color="#333", lw=0.8, ls="--")
    ax.set_xscale("log")
    from matplotlib import ticker

    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_yticks(range(n))
    ax.set_yticklabels(
        [r[0] if len(r[0]) <= 48 else r[0][:46] + "…" for r in ratios][::-1], fontsize=8
    )
    lo = min([r[2] for r in ratios] + [1 / r[4] for r in ratios if r[4]])
    hi = max([r[3] for r in ratios] + [r[4] for r in ratios if r[4]])
    ax.set_xlim(lo / 1.5, hi * 1.5)
    # labelled ticks at round numbers inside the range, at least three of them
    for subs in (
        (1, 2, 5),
        (1, 1.5, 2, 3, 5, 7),
        (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9),
    ):
        ticks = [
            m * 10.0**e
            for e in range(-4, 5)
            for m in subs
            if lo / 1.5 <= m * 10.0**e <= hi * 1.5
        ]
        if len(ticks) >= 3:
            break
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], fontsize=8)
    ax.set_xlabel(
        "ours / the paper's number (dot: median seed, bar: seed range, "
        "shaded: in-size band)",
        fontsize=8,
    )
    ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


class _placeholder(nodes.General, nodes.Element):
    """Filled in on ``doctree-resolved``, when every notebook has been executed."""


class ReproducedPage(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        for path in RESULTS.glob("*.yml"):
            env.note_dependency(str(path))
        for doc in toc_notebooks():
            env.note_dependency(str(ROOT / f"{doc}.ipynb"))
        return [_placeholder(mode="page", chapter="")]


class ReproducedBox(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        chapter = self.arguments[0]
        if not (ROOT / "notebooks" / f"{chapter}.ipynb").exists():
            raise self.error(f"reproduced-box: no notebook notebooks/{chapter}.ipynb")
        for path in RESULTS.glob("*.yml"):
            env.note_dependency(str(path))
        env.note_dependency(str(ROOT / "notebooks" / f"{chapter}.ipynb"))
        return [_placeholder(mode="box", chapter=chapter)]


def _para(*parts) -> nodes.paragraph:
    p = nodes.paragraph()
    for part in parts:
        p += part if isinstance(part, nodes.Node) else nodes.Text(str(part))
    return p


def _verdict_node(verdict: str) -> nodes.inline:
    return nodes.inline(
        text=verdict,
        classes=["revlib-verdict", "revlib-verdict-" + verdict.replace(" ", "-")],
    )


def _ours_html(app, here: str, v: dict) -> nodes.raw:
    """Ours: each claim's number, linked to the cell that checks it (its sentence and
    the run's scale in the tooltip), then the figure."""
    parts = []
    for (doc, anchor, _), (cid, text, sentence) in zip(v["cells"], v["ours"]):
        uri = app.builder.get_relative_uri(here, doc) + "#" + anchor
        tip = html.escape(f"{cid}: {sentence}. Scale: {v['scale']}", quote=True)
        parts.append(f'<a href="{uri}" title="{tip}">{html.escape(text)}</a>')
    out = "; ".join(parts)
    fig = v["row"].get("figure")
    if fig and v["cells"]:
        uri = app.builder.get_relative_uri(here, v["cells"][0][0]) + "#" + fig
        out += f' <a class="revlib-fig-link" href="{uri}">[figure]</a>'
    return nodes.raw("", f"<p>{out}</p>", format="html")


def _all_ledgers(app) -> dict[str, dict | None]:
    """``{"part/name": ledger}``, as the build executed the notebooks."""
    return {doc.split("/", 1)[1]: led for doc, (led, _) in all_ledgers(app).items()}


def _page(app, here: str) -> list[nodes.Node]:
    ledgers = _all_ledgers(app)
    out: list[nodes.Node] = []
    counts_all: dict[str, int] = {}
    sections = []
    for paper in load_results():
        views = [view(r, ledgers) for r in paper["results"]]
        counts = {k: sum(v["verdict"] == k for v in views) for k in ORDER}
        for k, c in counts.items():
            counts_all[k] = counts_all.get(k, 0) + c
        sec = [nodes.rubric(text=paper["title"])]
        sec.append(
            _para(
                f"{len(views)} results: "
                + ", ".join(f"{c} {k}" for k, c in counts.items() if c)
                + "."
            )
        )
        ratios = [r for v in views for r in v["ratios"]]
        if ratios:
            svg = ratio_svg(
                f"{paper['title'].split(':')[0]}: ours against the paper's number",
                ratios,
            )
            sec.append(
                nodes.raw(
                    "", f'<div class="revlib-ratio-figure">{svg}</div>', format="html"
                )
            )
        rows = []
        for v in views:
            row = v["row"]
            result = _para(nodes.strong(text=row["result"]), f" ({row['source']})")
            paper_cell = _para(str(row["paper"]))
            if row.get("paper_scale") and row["paper_scale"] != "unknown":
                paper_cell += nodes.inline(
                    text=f" ({row['paper_scale']})", classes=["revlib-paper-scale"]
                )
            if v["verdict"] == "not run":
                ours = _para(nodes.emphasis(text=str(row["not_run"])))
            else:
                ours = _ours_html(app, here, v)
            gap = row.get("gap", "")
            rows.append(
                [
                    result,
                    paper_cell,
                    ours,
                    _para(_verdict_node(v["verdict"])),
                    str(gap or "–"),
                ]
            )
        sec.append(
            table(
                [
                    "result",
                    "the paper",
                    "ours",
                    "verdict",
                    "what closing the gap would take",
                ],
                rows,
                [22, 18, 26, 9, 25],
                "revlib-reproduced",
            )
        )
        sections += sec
    out.append(
        _para(
            "Over the four papers: "
            + ", ".join(f"{c} {k}" for k, c in counts_all.items() if c)
            + "."
        )
    )
    return out + sections


def _box(app, here: str, chapter: str) -> list[nodes.Node]:
    ledgers = _all_ledgers(app)
    items, found = [], []
    for paper in load_results():
        for row in paper["results"]:
            if row.get("chapter") != chapter:
                continue
            v = view(row, ledgers)
            found.append(v["verdict"])
            item = nodes.list_item()
            item += _para(
                nodes.strong(text=row["result"]),
                f" ({row['source']}): ",
                _verdict_node(v["verdict"]),
                f". The paper: {row['paper']}.",
            )
            if v["ours"]:
                item += _ours_html(app, here, v)
            items.append(item)
    counts = ", ".join(f"{found.count(k)} {k}" for k in ORDER if found.count(k))
    summary = (
        f"Against the paper: {counts} (open for each result)"
        if items
        else "Against the paper: none of its results is tested in this chapter"
    )
    out: list[nodes.Node] = [
        nodes.raw(
            "",
            '<details class="revlib-reproduced-box"><summary>'
            f"{html.escape(summary)}</summary>",
            format="html",
        )
    ]
    if items:
        lst = nodes.bullet_list()
        lst += items
        out.append(lst)
    else:
        out.append(
            _para("This chapter's claims are the book's own findings and checks.")
        )
    uri = app.builder.get_relative_uri(here, PAGE)
    out += [
        _para("All papers: ", nodes.reference("", "What reproduced", refuri=uri), "."),
        nodes.raw("", "</details>", format="html"),
    ]
    return out


def fill(app, doctree, docname):
    for node in list(doctree.traverse(_placeholder)):
        try:
            new = (
                _page(app, docname)
                if node["mode"] == "page"
                else _box(app, docname, node["chapter"])
            )
        except ValueError as err:
            from sphinx.util import logging

            logging.getLogger(__name__).warning(f"reproduced: {err}", location=docname)
            new = [_para(f"(What reproduced could not be built: {err})")]
        node.replace_self(new)


def setup(app):
    app.add_node(_placeholder)
    app.add_directive("reproduced-page", ReproducedPage)
    app.add_directive("reproduced-box", ReproducedBox)
    app.connect("doctree-resolved", fill)
