"""Figures for citing: under every numbered figure of the book, its files and how to
cite it.

Each figure whose label ``fig-...`` names files ``figures/<label>.pdf/.svg/.png``
(written by :func:`revlib.plot.savefig`) gets, inside the figure after its caption:

- links to the three files, which the HTML build ships under ``figures/``;
- the command that regenerates that figure alone, ``python -m revlib figure <label>``;
- a one-line citation: book title, chapter (the part of ``_toc.yml`` the page belongs
  to), figure number and label, and the commit the book was built from.

A figure whose files are missing is a warning (the strict build fails on it): run the
command above, or the notebook, to write them.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.osutil import relative_uri

logger = logging.getLogger(__name__)

FORMATS = ("pdf", "svg", "png")
LABEL = re.compile(r"^fig-[a-z0-9-]+$")
OUT_FOLDER = "figures"  # inside the HTML output, as in the repository


def _commit(root: Path) -> str:
    """Short hash of HEAD, with ``-dirty`` when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "diff", "--quiet", "HEAD", "--"], cwd=root, capture_output=True
            ).returncode
            != 0
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _figures_dir(app) -> Path:
    return Path(app.srcdir) / "figures"


def _chapter(env, docname: str) -> str:
    """Title of the chapter a page belongs to: the page whose toctree includes it, or
    itself."""
    parent = next(
        (
            p
            for p, kids in env.toctree_includes.items()
            if docname in kids and p != env.config.root_doc
        ),
        docname,
    )
    title = env.titles.get(parent)
    return title.astext() if title is not None else parent


def _figure_number(env, docname: str, label: str) -> str:
    number = env.toc_fignumbers.get(docname, {}).get("figure", {}).get(label)
    return "Fig. " + ".".join(map(str, number)) if number else "Figure"


def citation(
    title: str, author: str, chapter: str, number: str, label: str, commit: str
) -> str:
    """The one-line citation of a figure (plain text)."""
    return (
        f"{author}, \u201c{title}\u201d, chapter \u201c{chapter}\u201d, {number} "
        f"({label}), commit {commit}."
    )


def figure_files_html(app, docname: str, label: str) -> str:
    env = app.builder.env
    page = app.builder.get_target_uri(docname)
    links = " \u00b7 ".join(
        '<a class="reference download" href="'
        f'{html.escape(relative_uri(page, f"{OUT_FOLDER}/{label}.{fmt}"))}"'
        f" download>{fmt.upper()}</a>"
        for fmt in FORMATS
    )
    title = env.config.html_title or env.config.project  # Jupyter Book sets html_title
    cite = citation(
        title,
        env.config.author,
        _chapter(env, docname),
        _figure_number(env, docname, label),
        label,
        app.config.revlib_commit,
    )
    return (
        f'<div class="revlib-figure-files" data-label="{label}">'
        '<p class="revlib-figure-downloads">'
        '<span class="revlib-figure-key">Files</span> '
        f'{links} <span class="revlib-figure-key">Regenerate</span> '
        '<code class="docutils literal notranslate">'
        f"python -m revlib figure {label}</code></p>"
        f'<p class="revlib-figure-cite"><span class="revlib-figure-key">Cite</span> '
        f"{html.escape(cite)}</p></div>"
    )


def _figure_label(fig: nodes.figure) -> str | None:
    return next((i for i in fig["ids"] if LABEL.match(i)), None)


def add_figure_files(app, doctree, docname):
    if app.builder.format != "html":
        return
    folder = _figures_dir(app)
    for fig in list(doctree.findall(nodes.figure)):
        label = _figure_label(fig)
        if label is None:
            continue
        missing = [
            f"{label}.{fmt}"
            for fmt in FORMATS
            if not (folder / f"{label}.{fmt}").exists()
        ]
        if missing:
            logger.warning(
                f"figure {label} has no {', '.join(missing)} in figures/: run "
                f"`python -m revlib figure {label}`",
                location=fig,
                type="revlib",
                subtype="figure-files",
            )
            continue
        fig += nodes.raw("", figure_files_html(app, docname, label), format="html")


def copy_figure_files(app, exception):
    """Ship the files of every numbered figure with the HTML."""
    if exception is not None or app.builder.format != "html":
        return
    folder = _figures_dir(app)
    out = Path(app.outdir) / OUT_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    for figs in app.builder.env.toc_fignumbers.values():
        for label in figs.get("figure", {}):
            if not LABEL.match(label):
                continue
            for fmt in FORMATS:
                src = folder / f"{label}.{fmt}"
                if src.exists():
                    shutil.copyfile(src, out / src.name)


def setup(app):
    app.add_config_value("revlib_commit", _commit(Path(app.srcdir)), "")
    app.connect("doctree-resolved", add_figure_files)
    app.connect("build-finished", copy_figure_files)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
