"""Code style of the notebooks: every code line at most 88 characters (pyproject's ruff
``line-length``), so no line of a code cell is cut off at the cell's right edge in the book."""

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


def long_code_lines(src: Path, limit: int = LINE_LENGTH) -> list[str]:
    """``'<cell>:<line>: <length>'`` for each code-cell line of ``src`` over ``limit``."""
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


@pytest.mark.skipif(
    shutil.which("ruff") is None
    and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff is not installed (pip install -e '.[test]')",
)
def test_ruff_passes_on_the_notebooks():
    """ruff, configured in pyproject.toml, on the executed notebooks (it reads code cells only)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    notebooks = sorted(
        str(p)
        for p in (ROOT / "notebooks").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    )
    res = subprocess.run(
        [ruff, "check", "--no-cache", "--output-format", "concise", *notebooks],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
