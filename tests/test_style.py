"""Code style of the notebooks: every code line at most 88 characters (pyproject's ruff
``line-length``), so no line of a code cell is cut off at the cell's right edge in the
book. The Python code of revlib, scripts, tests and _ext is kept as ``ruff format``
writes it and passes ``ruff check``."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_SOURCES = sorted((ROOT / "notebooks").rglob("*.py"))
LINE_LENGTH = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"][
    "line-length"
]
RUFF = shutil.which("ruff") or (
    str(Path(sys.executable).parent / "ruff")
    if (Path(sys.executable).parent / "ruff").exists()
    else None
)
needs_ruff = pytest.mark.skipif(
    RUFF is None, reason="ruff is not installed (pip install -e '.[test]')"
)
# The Python code that ruff format and ruff check keep in shape.
RUFF_PATHS = ["revlib", "scripts", "tests", "_ext"]
# Files ruff leaves alone (none: every file is formatted).
RUFF_EXCLUDE: list[str] = []


def long_code_lines(src: Path, limit: int = LINE_LENGTH) -> list[str]:
    """``'<cell>:<line>: <length>'`` for each code-cell line of ``src`` over
    ``limit``."""
    out = []
    code = [c for c in jupytext.read(src).cells if c.cell_type == "code"]
    for i, cell in enumerate(code, start=1):
        for j, line in enumerate(cell.source.splitlines(), start=1):
            if len(line) > limit:
                out.append(
                    f"code cell {i}, line {j}: {len(line)} characters: {line[:50]}..."
                )
    return out


def test_long_code_lines_are_found(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text(
        "# %% [markdown]\n# " + "m" * 120 + "\n\n# %%\nx = 1\ny = '" + "a" * 90 + "'\n"
    )
    found = long_code_lines(src)
    assert len(found) == 1 and found[0].startswith("code cell 1, line 2: 96 characters")


@pytest.mark.parametrize("src", NOTEBOOK_SOURCES, ids=lambda p: p.stem)
def test_notebook_code_lines_fit(src):
    long = long_code_lines(src)
    assert not long, (
        f"{src.relative_to(ROOT)}: {len(long)} code lines over {LINE_LENGTH}:\n"
        + "\n".join(long)
    )


@needs_ruff
def test_ruff_passes_on_the_notebooks():
    """ruff, configured in pyproject.toml, on the executed notebooks (it reads code
    cells only)."""
    notebooks = sorted(
        str(p)
        for p in (ROOT / "notebooks").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    )
    res = subprocess.run(
        [RUFF, "check", "--no-cache", "--output-format", "concise", *notebooks],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


@needs_ruff
def test_notebook_sources_are_formatted():
    """Every notebook's ``.py`` source is kept as ``ruff format`` writes it (one
    formatting for all fourteen, not some hand-aligned and some not)."""
    sources = [str(p) for p in NOTEBOOK_SOURCES]
    res = subprocess.run(
        [RUFF, "format", "--check", "--no-cache", *sources],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, (
        "notebook sources not formatted (`ruff format notebooks/*/*.py`, then "
        "`jupytext --update --to ipynb` each):\n" + res.stdout[-4000:]
    )


@needs_ruff
@pytest.mark.parametrize(
    "command",
    [["format", "--check"], ["check", "--output-format", "concise"]],
    ids=["format", "check"],
)
def test_ruff_passes_on_the_code(command):
    """``ruff format --check`` and ``ruff check`` (pyproject.toml's settings) on the
    Python files of revlib, scripts, tests and _ext, less ``RUFF_EXCLUDE``."""
    exclude = [arg for path in RUFF_EXCLUDE for arg in ("--extend-exclude", path)]
    res = subprocess.run(
        [RUFF, *command, "--no-cache", *exclude, *RUFF_PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    rerun = " ".join(["ruff", command[0], *exclude, *RUFF_PATHS])
    assert res.returncode == 0, (
        f"ruff {command[0]} fails (`{rerun}` shows or fixes it):\n"
        + res.stdout[-4000:]
        + res.stderr[-2000:]
    )
