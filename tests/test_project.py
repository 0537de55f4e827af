"""Book-level checks: configuration, notebook pairing and conventions, citations, launch
links."""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))
import booktoc  # noqa: E402  (the one _toc.yml walker)

NOTEBOOK_SOURCES = sorted((ROOT / "notebooks").rglob("*.py"))
REQUIRED_BIB = {
    "zhu2024reversal",
    "wang2025binding",
    "chen2025distributional",
    "bietti2023birth",
    "sharma2024laser",
    "berglund2024reversal",
}


def _pip_name(req: str) -> str:
    return re.split(r"[=<>!~\[ ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in ("book", "test", "lm"):
        wanted += project["optional-dependencies"][extra]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pins = [p for p in pip if not p.startswith("-")]
    assert sorted(pins) == sorted(wanted)
    assert "torch==2.13.0" in wanted


def test_config_is_strict():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["only_build_toc_files"] is True
    assert cfg["execute"]["execute_notebooks"] == "cache"
    assert cfg["execute"]["raise_on_error"] is True
    assert "sphinx_proof" in cfg["sphinx"]["extra_extensions"]
    assert cfg["sphinx"]["config"]["numfig"] is True
    assert cfg["launch_buttons"]["binderhub_url"] and cfg["launch_buttons"]["colab_url"]


def test_every_toc_entry_exists_and_every_notebook_is_in_the_toc():
    entries = booktoc.docs()
    for entry in entries:
        matches = [
            p for ext in (".md", ".ipynb") if (p := ROOT / f"{entry}{ext}").exists()
        ]
        assert matches, f"_toc.yml names {entry}, which does not exist"
    for src in NOTEBOOK_SOURCES:
        rel = src.relative_to(ROOT).with_suffix("").as_posix()
        assert rel in entries, f"{rel} is not in _toc.yml"


def test_bibliography_has_the_papers():
    keys = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "references.bib").read_text()))
    assert REQUIRED_BIB <= keys
    cited = set()
    for page in list((ROOT / "book").rglob("*.md")) + NOTEBOOK_SOURCES:
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text()):
            cited |= {k.strip() for k in group.split(",")}
    assert cited <= keys, cited - keys


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_notebook_pair_in_sync(src):
    ipynb = src.with_suffix(".ipynb")
    assert ipynb.exists(), f"{src.name} has no paired .ipynb"
    text_cells = [(c.cell_type, c.source) for c in jupytext.read(src).cells]
    nb = json.loads(ipynb.read_text())
    nb_cells = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]
    assert text_cells == nb_cells, (
        f"{ipynb.name} is out of sync with {src.name}: run jupytext --sync"
    )


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_notebook_executed_with_outputs(src):
    nb = json.loads(src.with_suffix(".ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "execute the notebook top to bottom"
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"])


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_no_cell_shows_its_value(src):
    """Numbers reach the page through print (approx: with their tolerance) or glue (the
    tolerance in the output's metadata). A cell's value (an execute_result) carries no
    tolerance, so nbval compares it exactly: a glued value ending a cell once did, and
    failed on a re-run that moved it within its tolerance."""
    nb = json.loads(src.with_suffix(".ipynb").read_text())
    shown = [
        i
        for i, c in enumerate(nb["cells"])
        for o in c.get("outputs", [])
        if o.get("output_type") == "execute_result"
    ]
    assert not shown, f"cells {shown} show their value: end them with a statement"


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_notebook_records_the_machine_that_made_its_outputs(src):
    nb = json.loads(src.with_suffix(".ipynb").read_text())
    prov = nb["metadata"].get("revlib", {}).get("provenance", {})
    missing = {
        "cpu",
        "kernel level (ATen)",
        "MKL_ENABLE_INSTRUCTIONS",
        "threads",
        "torch",
    } - set(prov)
    assert not missing, (
        f"no {sorted(missing)} in its provenance: scripts/refresh-notebooks"
    )
    assert prov["kernel level (ATen)"] in {
        "DEFAULT",
        "AVX2",
        "AVX512",
        "ZVECTOR",
        "VSX",
    }


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_notebook_conventions(src):
    nb = jupytext.read(src)
    # the Colab set-up cell (scripts/colab-cell: removed from the HTML) comes before the
    # rest
    code = [
        c
        for c in nb.cells
        if c.cell_type == "code" and "colab-setup" not in c.metadata.get("tags", [])
    ]
    first = code[0]
    assert "parameters" in first.metadata.get("tags", []), (
        "first code cell must be tagged parameters"
    )
    assigned = {
        t.id
        for node in ast.parse(first.source).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    assert "SEED" in assigned
    assert re.search(r"repro\.setup\(SEED", code[1].source), (
        "second cell must call repro.setup(SEED)"
    )
    # every figure cell names a figure and saves it under the same label
    for cell in code:
        fig = cell.metadata.get("mystnb", {}).get("figure")
        if fig:
            assert fig.get("caption") and re.match(r"^fig-[a-z0-9-]+$", fig["name"])
            assert f'plot.savefig(fig, "{fig["name"]}")' in cell.source


def test_launch_targets_exist():
    """Binder and Colab open notebooks/<...>.ipynb at the repository root
    (path_to_book '')."""
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["repository"]["path_to_book"] == ""
    for entry in booktoc.docs():
        if entry.startswith("notebooks/"):
            assert (ROOT / f"{entry}.ipynb").exists()


def test_figure_references_resolve_to_notebook_figures():
    names = set()
    for src in NOTEBOOK_SOURCES:
        names |= set(re.findall(r'"name": "(fig-[a-z0-9-]+)"', src.read_text()))
    for page in (ROOT / "book").rglob("*.md"):
        for ref in re.findall(r"\{numref\}`(fig-[a-z0-9-]+)`", page.read_text()):
            assert ref in names, f"{page.name} cites {ref}, which no notebook draws"


def test_a_chapter_page_and_its_notebook_share_a_name():
    """book/<part>/<name>.md is the page of notebooks/<part>/<name> (issue 23: a page
    named apart from its notebook was found only by reading _toc.yml)."""
    import booktoc

    pairs = {
        doc: nbs for doc, nbs in booktoc.sections().items() if doc.startswith("book/")
    }
    apart = {
        doc: nbs
        for doc, nbs in pairs.items()
        if nbs and nbs != [doc.replace("book/", "notebooks/", 1)]
    }
    assert pairs and not apart, f"page and notebook named apart: {apart}"


def test_a_glued_number_keeps_the_decimals_it_was_rounded_to():
    """myst-nb would show a glued "1.000" as "1.0"; the book shows it as glued, a long
    integer with thousands separators, and formats everything else as myst-nb does."""
    import revbook
    from myst_nb.core.variables import format_plain_text

    fmt = revbook.keep_decimals(format_plain_text)
    assert format_plain_text("1.000", "s") == "1.0"  # what the patch is for
    assert [fmt(t, "s") for t in ("1.000", "0.070", "-0.043", "0.0050")] == [
        "1.000",
        "0.070",
        "-0.043",
        "0.0050",
    ]
    assert fmt("'a text'", "s") == "a text"  # a glued string: unquoted, as before
    assert fmt("0.100–0.200", "s") == "0.100–0.200"
    # a long integer (a step, a count) with the separators the prose uses
    assert [fmt(t, "s") for t in ("146253", "8746", "-12000", "999", "42")] == [
        "146,253",
        "8,746",
        "-12,000",
        "999",
        "42",
    ]
    assert fmt("0.125", ".1f") == "0.1"  # an explicit format: myst-nb's


def test_the_nb_role_expands_to_the_glue_of_the_pages_own_notebook():
    import revbook

    src = ["x {nb}`p_tau` and {nb}`lead`, {paper}`0.5`"]
    revbook.expand_nb_role(None, "book/associations/ff_vs_attention", src)
    glue = "{glue:text}`../../notebooks/associations/ff_vs_attention.ipynb::"
    assert src[0] == (
        f"x {glue}ff_vs_attention.p_tau:s` and {glue}ff_vs_attention.lead:s`, "
        "{paper}`0.5`"
    )
    with pytest.raises(Exception, match="exactly one notebook"):
        revbook.expand_nb_role(None, "book/intro", ["{nb}`x`"])
