"""The ledgers the built pages show: those of the notebooks *as this build executed
them*.

The book executes its notebooks (``execute_notebooks: cache``), so a notebook page shows
this build's outputs, which on another machine differ from the stored ones within their
tolerances. A page generated from the ledgers (the scorecard, "What reproduced", a
chapter's box) must show the same numbers as the cells it links to, so it reads each
ledger from the executed notebook in the build's jupyter-cache, and from the stored
``.ipynb`` only where the build did not execute it (``execute_notebooks: off``, or no
cache entry yet).

Pages built from ledgers put a placeholder node in the doctree when they are read and
are filled in on ``doctree-resolved``, after every notebook has been read (and so
executed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from docutils import nodes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booktoc  # noqa: E402  (_ext/booktoc.py)

from revlib import claims  # noqa: E402


def toc_docs() -> list[str]:
    """Every docname of ``_toc.yml``, in its order (:func:`booktoc.docs`)."""
    return booktoc.docs()


def toc_notebooks() -> list[str]:
    """Notebook docnames (``notebooks/part/name``) in the order of ``_toc.yml``."""
    return [d for d in toc_docs() if d.startswith("notebooks/")]


def executed_ledger(config, doc: str) -> tuple[dict | None, str]:
    """``(ledger, source)`` of notebook ``doc`` (``notebooks/part/name``): from this
    build's executed copy when there is one (``source == "executed"``), else from the
    stored file (``"stored"``); ``(None, ...)`` when the notebook stores no ledger."""
    path = ROOT / f"{doc}.ipynb"
    nb = nbformat.read(path, as_version=4)
    mode = getattr(config, "nb_execution_mode", "off") if config is not None else "off"
    if mode == "cache":
        from jupyter_cache import get_cache

        cache_path = Path(config.nb_execution_cache_path)
        if not cache_path.is_absolute():
            cache_path = ROOT / cache_path
        try:
            _, merged = get_cache(str(cache_path)).merge_match_into_notebook(nb)
            return claims.ledger_of(merged), "executed"
        except KeyError:
            pass
    return claims.ledger_of(nb), "stored"


def all_ledgers(app) -> dict[str, tuple[dict | None, str]]:
    """``{docname: (ledger, source)}`` of every notebook of ``_toc.yml`` (as
    :func:`executed_ledger`), read once per build: the scorecard, "What reproduced" and
    every chapter's box share it."""
    cached = getattr(app, "_revlib_ledgers", None)
    if cached is None:
        cached = {
            doc: executed_ledger(app.config, doc)
            for doc in toc_notebooks()
            if (ROOT / f"{doc}.ipynb").exists()
        }
        app._revlib_ledgers = cached
    return cached


def table(
    head: list[str], rows: list[list], widths: list[int], table_class: str
) -> nodes.container:
    """A docutils table (``head``, ``rows`` of nodes or strings, relative column
    ``widths``) of class ``table_class``, in a box that scrolls sideways where it is
    wider than the column."""
    tab = nodes.table(classes=[table_class])
    group = nodes.tgroup(cols=len(head))
    tab += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    hrow = nodes.row()
    for h in head:
        hrow += nodes.entry("", nodes.paragraph(text=h))
    thead += hrow
    body = nodes.tbody()
    group += body
    for cells in rows:
        r = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += (
                cell
                if isinstance(cell, nodes.Element)
                else nodes.paragraph(text=str(cell))
            )
            r += entry
        body += r
    box = nodes.container(classes=["revlib-table-scroll"])
    box += tab
    return box
