"""The book's own Sphinx pieces.

- ``{paper}`0.81``` marks a number as the paper's (quoted, not measured here): rendered as
  it is, with a tooltip; the prose-number test accepts it.
- ``{claims-scorecard}`` (a directive) builds the page "Claims at a glance" from the ledgers
  stored in the executed notebooks (:mod:`revlib.claims`), so nothing on it is typed.
- under every figure: its PDF, SVG and PNG, the command that regenerates it and a citation
  (:mod:`figures`).
"""

from __future__ import annotations

from docutils import nodes


def paper_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    node = nodes.inline(rawtext, text, classes=["paper-number"])
    node["title"] = "the paper's number, quoted (not measured here)"
    return [node], []


def setup(app):
    app.add_role("paper", paper_role)
    from scorecard import ClaimsScorecard  # noqa: PLC0415  (same folder, on sys.path)

    app.add_directive("claims-scorecard", ClaimsScorecard)
    import figures  # noqa: PLC0415  (files, command and citation under every figure)

    figures.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
