"""``python -m revlib figure <label>``: the label lookup, the cut after the figure's
cell, the error on an unknown label, and one regeneration of a tiny notebook in a real
kernel."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from revlib import cli, figures, plot

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks").rglob("*.py"))


def _names_in_source(src: Path) -> list[str]:
    return re.findall(r'"name": "(fig-[a-z0-9-]+)"', src.read_text())


def test_every_notebook_figure_is_known_and_found_in_its_notebook():
    known = figures.known_figures(ROOT)
    names = {name: src for src in SOURCES for name in _names_in_source(src)}
    assert names and set(known) == set(names)
    for label, src in names.items():
        found = figures.find(label, ROOT)
        assert found.notebook == src.with_suffix(".ipynb")
        cell = json.loads(found.notebook.read_text())["cells"][found.cell]
        assert figures.figure_label(cell) == label
        assert f'plot.savefig(fig, "{label}")' in "".join(cell["source"])


def test_notebook_is_cut_after_the_figure_cell():
    label = "fig-bilinear-losses"
    src = figures.find(label, ROOT)
    nb = figures.notebook_up_to(src)
    assert len(nb.cells) == src.code_cells
    assert all(c.cell_type == "code" and not c.outputs for c in nb.cells)
    assert figures.figure_label(nb.cells[-1]) == label
    assert "parameters" in [t for c in nb.cells for t in c.metadata.get("tags", [])]


def test_unknown_label_is_an_error_that_lists_the_known_ones(capsys):
    with pytest.raises(figures.UnknownFigure, match="fig-bilinear-losses"):
        figures.find("fig-no-such-figure", ROOT)
    assert cli.main(["figure", "fig-no-such-figure"]) == 2
    err = capsys.readouterr().err
    assert "fig-no-such-figure" in err and "known figures:" in err
    assert all(label in err for label in figures.known_figures(ROOT))
    assert cli.main(["figure"]) == 2


def test_list_prints_every_label(capsys):
    assert cli.main(["figure", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == list(figures.known_figures(ROOT))


def _tiny_book(tmp_path: Path) -> Path:
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    folder = tmp_path / "notebooks" / "demo"
    folder.mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "data" / "x.txt").write_text("3\n")
    nb = nbformat.v4.new_notebook()
    fig_meta = {"mystnb": {"figure": {"caption": "A line.", "name": "fig-demo-line"}}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Demo"),
        nbformat.v4.new_code_cell(
            "N = int(open('data/x.txt').read())", metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_code_cell(
            "import matplotlib\nmatplotlib.use('Agg')\n"
            "import matplotlib.pyplot as plt\n"
            "from revlib import plot\nfig, ax = plt.subplots()\nax.plot(range(N))\n"
            'plot.savefig(fig, "fig-demo-line")',
            metadata=fig_meta,
        ),
        nbformat.v4.new_code_cell(
            "raise RuntimeError('cells after the figure must not run')"
        ),
    ]
    nbformat.write(nb, folder / "demo.ipynb")
    return tmp_path


def test_regenerate_runs_the_notebook_up_to_the_figure(tmp_path):
    root = _tiny_book(tmp_path)
    assert list(figures.known_figures(root)) == ["fig-demo-line"]
    out = tmp_path / "out"
    written = figures.regenerate(
        "fig-demo-line", out=out, root=root, timeout=120, log=open("/dev/null", "w")
    )
    assert [p.name for p in written] == [
        f"fig-demo-line.{f}" for f in ("pdf", "svg", "png")
    ]
    assert all(p.stat().st_size > 0 for p in written)


def test_a_hand_run_nbval_saves_figures_outside_the_tree(monkeypatch):
    """``pytest --nbval`` without REVLIB_FIGURES_DIR (a hand run, not scripts/test)
    points the notebooks' figures at a temporary folder and removes it at the end, so
    the committed figures/ are not redrawn from this machine's numbers; a set folder is
    kept."""
    from types import SimpleNamespace

    from revlib import nbval_plugin

    monkeypatch.setattr(nbval_plugin, "_install", lambda: None)
    monkeypatch.delenv(nbval_plugin.FIGURES_ENV, raising=False)
    config = SimpleNamespace(option=SimpleNamespace(nbval=True, nbval_lax=False))
    nbval_plugin.pytest_configure(config)
    folder = Path(os.environ[nbval_plugin.FIGURES_ENV])
    assert folder.is_dir() and plot.figures_dir() == folder
    assert not folder.is_relative_to(ROOT)
    nbval_plugin.pytest_unconfigure(config)
    assert not folder.exists() and nbval_plugin.FIGURES_ENV not in os.environ

    monkeypatch.setenv(nbval_plugin.FIGURES_ENV, "/somewhere/chosen")
    nbval_plugin.pytest_configure(config)
    assert os.environ[nbval_plugin.FIGURES_ENV] == "/somewhere/chosen"
    nbval_plugin.pytest_unconfigure(config)
    assert os.environ[nbval_plugin.FIGURES_ENV] == "/somewhere/chosen"

    plain = SimpleNamespace(option=SimpleNamespace(nbval=False, nbval_lax=False))
    monkeypatch.delenv(nbval_plugin.FIGURES_ENV)
    nbval_plugin.pytest_configure(plain)
    nbval_plugin.pytest_unconfigure(plain)
    assert nbval_plugin.FIGURES_ENV not in os.environ
