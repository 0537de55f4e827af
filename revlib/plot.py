"""One plotting theme and one way to save a figure for citing.

``savefig(fig, label)`` writes ``figures/<label>.pdf``, ``.svg`` and ``.png``, where
``label`` is the figure's MyST name (so ``{numref}`fig-bilinear-losses``` and the file
agree). The files are written atomically (a failure leaves no half-written figure) and
without timestamps, so re-running a notebook rewrites identical vector files on the same
machine. ``REVLIB_FIGURES_DIR`` redirects them (the test suite uses this to keep the
tree clean).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

FORMATS = ("pdf", "svg", "png")
_METADATA = {
    "pdf": {"CreationDate": None, "Producer": None, "Creator": None},
    "svg": {"Date": None, "Creator": None},
    "png": {"Software": None},
}
_LABEL = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def set_theme() -> None:
    """The book's seaborn theme; also fixes the SVG hash salt so SVG files are
    stable."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    mpl.rcParams.update(
        {
            "svg.hashsalt": "revlib",
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
            "figure.constrained_layout.use": True,
            "axes.titlesize": "medium",
        }
    )


def figures_dir() -> Path:
    """``$REVLIB_FIGURES_DIR`` if set, else ``figures/`` at the top of the
    repository."""
    env = os.environ.get("REVLIB_FIGURES_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "figures"


def savefig(
    fig: plt.Figure, label: str, directory: str | Path | None = None
) -> list[Path]:
    """Write ``fig`` as ``<label>.pdf/.svg/.png``; returns the paths written."""
    if not isinstance(label, str) or not _LABEL.match(label):
        raise ValueError(
            f"label must be lower-case letters, digits and '-', got {label!r}"
        )
    out = Path(directory) if directory is not None else figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    written, tmps = [], []
    try:
        for fmt in FORMATS:
            fd, tmp = tempfile.mkstemp(prefix=f".{label}.", suffix=f".{fmt}", dir=out)
            os.close(fd)
            tmps.append(tmp)
            fig.savefig(tmp, format=fmt, metadata=_METADATA[fmt])
            os.chmod(
                tmp, 0o644
            )  # mkstemp creates 0600; figures are for everyone to read
        for fmt, tmp in zip(FORMATS, tmps):
            path = out / f"{label}.{fmt}"
            os.replace(tmp, path)
            written.append(path)
    finally:
        for tmp in tmps:
            if os.path.exists(tmp):
                os.remove(tmp)
    return written


def seed_band(
    ax: plt.Axes,
    x: np.ndarray,
    values: np.ndarray,
    label: str | None = None,
    color=None,
    **line_kw,
) -> None:
    """Median over seeds as a line, min-max over seeds as a band. ``values`` is
    ``[E, S]``."""
    values = np.asarray(values)
    (line,) = ax.plot(x, np.median(values, axis=1), label=label, color=color, **line_kw)
    ax.fill_between(
        x,
        values.min(axis=1),
        values.max(axis=1),
        color=line.get_color(),
        alpha=0.25,
        linewidth=0,
    )


def heatmap(
    ax: plt.Axes,
    matrix: np.ndarray,
    title: str,
    xlabel: str = "",
    ylabel: str = "",
    center: float | None = None,
    **kw,
) -> None:
    """A labelled seaborn heatmap without tick clutter.

    The cells are rasterised inside the vector files (axes and text stay vector): a
    300 x 300 heatmap drawn as vector rectangles makes a 10 MB SVG.
    """
    sns.heatmap(
        np.asarray(matrix),
        ax=ax,
        cmap=kw.pop("cmap", "mako"),
        center=center,
        xticklabels=False,
        yticklabels=False,
        square=True,
        rasterized=True,
        **kw,
    )
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
