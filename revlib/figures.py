"""``python -m revlib figure <label>``: regenerate one figure of the book, alone.

Every figure is drawn by one notebook cell whose ``mystnb`` metadata names it
(``figure: {name: fig-...}``); the cell saves it with :func:`revlib.plot.savefig` under
that label. Regenerating a figure runs that notebook's code cells in order, from the
first up to and including the figure's cell (nothing after it), in a fresh kernel
started in the notebook's folder (so its ``data/`` paths resolve), with
``REVLIB_FIGURES_DIR`` pointing at ``figures/`` (or ``--out``). The notebook's own
parameters are used: stored runs are read where the notebook reads them, live runs are
re-run where it runs them.

The notebooks are read from the ``.ipynb`` of each pair (jupytext keeps it in step with
the ``.py`` source; ``tests/test_project.py`` checks that).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from revlib.plot import FORMATS


class UnknownFigure(ValueError):
    """A label that no notebook draws; the message lists the known ones."""


@dataclass(frozen=True)
class FigureSource:
    label: str
    notebook: Path  # the .ipynb that draws it
    cell: int  # index of the figure's cell in the notebook's cell list
    code_cells: int  # code cells that run, the figure's cell included


def book_root(start: Path | None = None) -> Path:
    """The repository: the first folder holding ``_toc.yml`` and ``notebooks/``, looking
    up from ``start`` (default: the working directory), else the folder above this
    package."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
            return folder
    return Path(__file__).resolve().parent.parent


def figure_label(cell: dict) -> str | None:
    """The figure name of a notebook cell (``metadata.mystnb.figure.name``), if any."""
    meta = cell.get("metadata", {}).get("mystnb", {})
    fig = meta.get("figure") if isinstance(meta, dict) else None
    name = fig.get("name") if isinstance(fig, dict) else None
    return name if isinstance(name, str) else None


def known_figures(root: Path | None = None) -> dict[str, FigureSource]:
    """Every figure label drawn by a notebook under ``<root>/notebooks``, sorted by
    label."""
    root = book_root() if root is None else Path(root)
    found: dict[str, FigureSource] = {}
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        cells = json.loads(path.read_text())["cells"]
        n_code = 0
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            n_code += 1
            label = figure_label(cell)
            if label is None:
                continue
            if label in found:
                raise ValueError(
                    f"figure {label} is drawn twice: by {found[label].notebook} "
                    f"and {path}"
                )
            found[label] = FigureSource(label, path, i, n_code)
    return dict(sorted(found.items()))


def find(label: str, root: Path | None = None) -> FigureSource:
    """The notebook cell that draws ``label``; :class:`UnknownFigure` if none does."""
    figures = known_figures(root)
    if label not in figures:
        known = ", ".join(figures) or "(none: no notebooks found)"
        raise UnknownFigure(
            f"no notebook draws a figure named {label!r}; known figures: {known}"
        )
    return figures[label]


def notebook_up_to(source: FigureSource):
    """The notebook cut after the figure's cell, code cells only, without stored
    outputs."""
    import nbformat  # noqa: PLC0415  (installed with the book's extras)

    nb = nbformat.read(source.notebook, as_version=4)
    keep = [c for c in nb.cells[: source.cell + 1] if c.cell_type == "code"]
    for cell in keep:
        cell.outputs, cell.execution_count = [], None
    nb.cells = keep
    return nb


def regenerate(
    label: str,
    out: Path | None = None,
    root: Path | None = None,
    timeout: int = 3600,
    log=sys.stderr,
) -> list[Path]:
    """Run the notebook of ``label`` up to its figure and return the files it wrote."""
    from nbclient import NotebookClient  # noqa: PLC0415

    root = book_root() if root is None else Path(root)
    source = find(label, root)
    out = (Path(out) if out is not None else root / "figures").resolve()
    out.mkdir(parents=True, exist_ok=True)
    nb = notebook_up_to(source)
    rel = source.notebook.relative_to(root)
    print(
        f"revlib figure: running {rel}, code cells 1-{source.code_cells}, "
        f"writing {out}/{label}.{{{','.join(FORMATS)}}}",
        file=log,
    )
    start = time.time()
    old = os.environ.get("REVLIB_FIGURES_DIR")
    os.environ["REVLIB_FIGURES_DIR"] = str(
        out
    )  # the kernel inherits this process's environment
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(source.notebook.parent)}},
        ).execute()
    finally:
        if old is None:
            os.environ.pop("REVLIB_FIGURES_DIR", None)
        else:
            os.environ["REVLIB_FIGURES_DIR"] = old
    written = [out / f"{label}.{fmt}" for fmt in FORMATS]
    stale = [p.name for p in written if not p.exists() or p.stat().st_mtime < start - 1]
    if stale:
        raise RuntimeError(
            f"{rel} ran up to the cell of {label} but did not write "
            f"{', '.join(stale)} (does the cell call plot.savefig(fig, {label!r})?)"
        )
    print(
        f"revlib figure: wrote {', '.join(p.name for p in written)} in "
        f"{time.time() - start:.0f} s",
        file=log,
    )
    return written
