"""The book's own Sphinx pieces.

- ``{nb}`key``` in a chapter page is the number its own notebook glued as ``key``
  (``ledger.glue("key", ...)``): expanded, before the page is parsed, to myst-nb's
  ``{glue:text}`../../notebooks/<part>/<name>.ipynb::<name>.key:s``` for the one
  notebook listed under the page in ``_toc.yml``. A number glued by another chapter's
  notebook keeps the long form.
  myst-nb reads a glued text as a Python literal before formatting it, which drops a
  number's trailing zeros ("1.000" shows as "1.0", "0.070" as "0.07");
  :func:`keep_decimals` keeps a glued decimal number as the notebook printed it, and
  writes a long integer with thousands separators.
- ``{paper}`0.81``` marks a number as the paper's (quoted, not measured here): rendered
  as it is, with a tooltip; the prose-number test accepts it.
- ``{claims-scorecard}`` (a directive) builds the page "Claims at a glance" from the
  ledgers of the notebooks as this build executed them (:mod:`ledgers`), so nothing on
  it is typed and every row shows what its linked cell prints;
- ``{reproduced-page}`` and ``{reproduced-box}`` build "What reproduced" and each
  chapter's box of its rows from ``book/results/*.yml`` and the same ledgers
  (:mod:`reproduced`).
- under every figure: its PDF, SVG and PNG, the command that regenerates it and a
  citation (:mod:`figures`).
- ``{stored-outputs}``: the machine behind each notebook's stored outputs and how many
  of its claims' tolerances cover their fresh-seed move (:mod:`provenance`).
"""

from __future__ import annotations

import os
import re

from docutils import nodes
from sphinx.errors import ExtensionError

NB_ROLE = re.compile(r"\{nb\}`([A-Za-z0-9_]+)`")


def expand_nb_role(app, docname, source):
    """``{nb}`key``` -> the ``{glue:text}`` of the page's own notebook."""
    if "{nb}`" not in source[0]:
        return
    import booktoc  # noqa: PLC0415  (on sys.path)

    own = booktoc.sections().get(docname, [])
    if len(own) != 1:
        raise ExtensionError(
            f"{docname}: {{nb}} needs exactly one notebook listed under the page in "
            f"_toc.yml, found {own}"
        )
    rel = os.path.relpath(own[0], os.path.dirname(docname)) + ".ipynb"
    stem = own[0].split("/")[-1]
    source[0] = NB_ROLE.sub(
        lambda m: f"{{glue:text}}`{rel}::{stem}.{m.group(1)}:s`", source[0]
    )


DECIMAL = re.compile(r"[-+]?\d+\.\d+")
LONG_INTEGER = re.compile(r"[-+]?\d{4,}")


def keep_decimals(format_plain_text):
    """myst-nb's ``format_plain_text`` with two changes under ``:s`` (what ``{nb}``
    expands to): a glued decimal number is shown as its text, with the decimals the
    notebook rounded it to, instead of as ``str(float(text))``; and a glued integer of
    four digits or more gets the thousands separators the book's prose uses ("146,253",
    as "2,500 entities" is typed). Anything else (a quoted string, a range "a–b",
    another format) is formatted as before."""

    def fmt(text: str, fmt_spec: str) -> str:
        if fmt_spec == "s" and DECIMAL.fullmatch(text.strip()):
            return text.strip()
        if fmt_spec == "s" and LONG_INTEGER.fullmatch(text.strip()):
            return f"{int(text):,}"
        return format_plain_text(text, fmt_spec)

    fmt.__wrapped__ = format_plain_text
    return fmt


def _patch_glue_text() -> None:
    """Install :func:`keep_decimals` where myst-nb's glue roles call the formatter
    (the page's own glue and a glue read from another notebook)."""
    from myst_nb.ext.glue import crossref, roles  # noqa: PLC0415

    for module in (roles, crossref):
        if not hasattr(module.format_plain_text, "__wrapped__"):
            module.format_plain_text = keep_decimals(module.format_plain_text)


def paper_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    node = nodes.inline(rawtext, text, classes=["paper-number"])
    node["title"] = "the paper's number, quoted (not measured here)"
    return [node], []


def setup(app):
    app.add_role("paper", paper_role)
    app.connect("source-read", expand_nb_role)
    _patch_glue_text()
    from scorecard import ClaimsScorecard, fill_scorecard  # noqa: PLC0415  (on sys.path)

    app.add_directive("claims-scorecard", ClaimsScorecard)
    app.connect("doctree-resolved", fill_scorecard)
    import reproduced  # noqa: PLC0415  ("What reproduced" and each chapter's box)

    reproduced.setup(app)
    import figures  # noqa: PLC0415  (files, command and citation under every figure)

    figures.setup(app)
    import provenance  # noqa: PLC0415  (the machine behind each notebook's outputs)

    provenance.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
