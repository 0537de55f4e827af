"""Launch buttons that work: the Colab set-up cell (scripts/colab_cell.py) and Binder's
environment.yml + postBuild.

- every notebook starts with the set-up cell generated from ``_config.yml``;
- the cell does nothing outside Colab;
- run as in Colab against a local clone, in a fresh virtual environment, its commands
  install revlib from the clone, and then every module the notebooks import imports,
  from the notebook's folder, with the repository's ``data/`` where the notebooks look
  for it;
- every launch target (notebook path on the configured branch) exists;
- Binder's environment (environment.yml's pip list, then postBuild) installs revlib and
  every distribution the notebooks and revlib import.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import colab_cell  # noqa: E402

SOURCES = sorted(
    p for p in (ROOT / "notebooks").rglob("*.py") if ".ipynb_checkpoints" not in p.parts
)
CFG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _code(src: Path) -> list:
    return [c for c in jupytext.read(src).cells if c.cell_type == "code"]


def _import_statements(sources=SOURCES) -> list[str]:
    """Every import statement of the notebooks' code cells (the set-up cell's
    excepted)."""
    out = []
    for src in sources:
        for cell in _code(src):
            if colab_cell.TAG in cell.metadata.get("tags", []):
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(
                    node, "level", 0
                ):
                    out.append(ast.unparse(node))
    return sorted(set(out))


def _top_modules(statements: list[str]) -> set[str]:
    mods = set()
    for stmt in statements:
        node = ast.parse(stmt).body[0]
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
        )
        mods |= {n.split(".")[0] for n in names}
    return mods


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_notebook_starts_with_the_colab_cell(src):
    first = _code(src)[0]
    assert colab_cell.TAG in first.metadata.get("tags", []), (
        f"{src.name}: no Colab set-up cell first: run scripts/colab-cell"
    )
    assert "remove-cell" in first.metadata["tags"]
    assert first.source == colab_cell.cell_source_for(src), (
        f"{src.name}: the Colab cell is stale: run scripts/colab-cell"
    )
    ipynb = src.with_suffix(".ipynb")
    if ipynb.exists():
        nb = json.loads(ipynb.read_text())
        cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert "".join(cell["source"]) == first.source and cell["outputs"] == []


def test_colab_cell_reads_the_repository_from_the_config():
    src = colab_cell.render(
        "notebooks/x",
        lm=True,
        cfg=colab_cell.config(),
        wheels=colab_cell.postbuild_wheels(),
    )
    assert f'"{CFG["repository"]["url"]}"' in src
    assert f'"{CFG["repository"].get("branch", "main")}"' in src
    assert all(w in src for w in colab_cell.postbuild_wheels()) and "[lm]" in src
    assert max(len(line) for line in src.splitlines()) <= 88
    plain = colab_cell.render(
        "notebooks/x", lm=False, cfg=colab_cell.config(), wheels=[]
    )
    assert "[lm]" not in plain and "--no-deps" not in plain


def test_colab_cell_does_nothing_outside_colab(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)

    def refuse(*a, **k):
        raise AssertionError("the set-up cell ran a command outside Colab")

    monkeypatch.setattr(subprocess, "run", refuse)
    path = list(sys.path)
    exec(colab_cell.render("notebooks/x", True, colab_cell.config(), ["w==1"]), {})
    assert Path.cwd() == tmp_path and sys.path == path


def _fresh_venv(tmp_path: Path) -> Path:
    """A new virtual environment that sees this one's installed wheels (a .pth file), so
    nothing is downloaded; the clone's revlib is installed into the new one itself."""
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "_reuse_wheels.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    return py


def test_colab_cell_installs_from_a_clone_and_the_notebooks_import(tmp_path):
    """The set-up cell of a notebook that loads the LM (the fullest one) run as in
    Colab: the repository URL is this checkout, /content a temporary folder."""
    if (
        subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "rev-parse",
                "--verify",
                "-q",
                CFG["repository"].get("branch", "main"),
            ],
            capture_output=True,
        ).returncode
        != 0
    ):
        pytest.skip("the configured branch is not in this checkout")
    folder = "notebooks/associations"
    cell = colab_cell.render(
        folder, True, colab_cell.config(), colab_cell.postbuild_wheels()
    )
    content = tmp_path / "content"
    content.mkdir()
    cell = cell.replace(f'"{CFG["repository"]["url"].rstrip("/")}"', f'"file://{ROOT}"')
    cell = cell.replace('"/content/', f'"{content}/')
    assert f"file://{ROOT}" in cell and str(content) in cell
    py = _fresh_venv(tmp_path)
    # every import statement of the clone's notebooks, run after the cell, in its folder
    script = (
        "import json, os, sys, types\n"
        "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
        f"exec(compile({cell!r}, 'colab-setup', 'exec'))\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import pathlib, test_launch\n"
        "sources = sorted(pathlib.Path(CLONE, 'notebooks').rglob('*.py'))\n"
        "statements = test_launch._import_statements(sources)\n"
        "for stmt in statements:\n"
        "    exec(stmt, {})\n"
        "import revlib\n"
        "print(json.dumps({'cwd': os.getcwd(), 'revlib': revlib.__file__, "
        "'n': len(statements), 'data': os.path.isdir('../../data')}))\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV"))
    }
    # build the editable install with the setuptools this environment already has
    env.update(
        PIP_NO_BUILD_ISOLATION="0",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        MPLBACKEND="Agg",
    )
    res = subprocess.run(
        [str(py), "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    clone = content / CFG["repository"]["url"].rstrip("/").rsplit("/", 1)[-1]
    assert Path(out["cwd"]) == clone / folder
    assert Path(out["revlib"]).is_relative_to(clone), out["revlib"]
    assert out["data"] and out["n"] > 10


def _branch_ref() -> str:
    branch = CFG["repository"].get("branch", "main")
    ok = (
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", "-q", branch],
            capture_output=True,
        ).returncode
        == 0
    )
    return branch if ok else "HEAD"


def test_every_launch_target_is_on_the_branch():
    """Binder opens lab/tree/<path>.ipynb and Colab github/<owner>/<repo>/blob/<branch>/
    <path>.ipynb, with path_to_book '' (the repository root): that file must be
    committed."""
    assert CFG["repository"].get("path_to_book", "") == ""
    url = CFG["repository"]["url"].rstrip("/")
    assert re.match(r"^https://github\.com/[\w.-]+/[\w.-]+$", url), url
    assert CFG["launch_buttons"]["binderhub_url"] and CFG["launch_buttons"]["colab_url"]
    ref = _branch_ref()
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = re.findall(r"file: (notebooks/\S+)", yaml.safe_dump(toc))
    assert entries
    committed = set(
        subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", ref],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    )
    missing = [f"{e}.ipynb" for e in entries if f"{e}.ipynb" not in committed]
    assert not missing, f"launch targets not on {ref}: {missing}"


def _requirement_name(req: str) -> str:
    return (
        re.split(r"[=<>!~\[ ;(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
    )


def _closure(names: set[str]) -> set[str]:
    """The pinned distributions and everything they require (extras and markers
    included: a superset of what pip installs, enough to say a module cannot come from
    elsewhere)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += [_requirement_name(r) for r in reqs]
    return seen


def test_binder_environment_installs_revlib_and_what_the_notebooks_import():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pins = {_requirement_name(p) for p in pip if not p.startswith("-")}
    post = (ROOT / "postBuild").read_text()
    assert re.search(r"^pip install --no-deps -e \.\s*$", post, re.M), (
        "postBuild installs revlib"
    )
    pins |= {_requirement_name(w) for w in colab_cell.postbuild_wheels()}
    closure = _closure(pins)
    modules = _top_modules(_import_statements())
    for src in (ROOT / "revlib").rglob("*.py"):
        for node in ast.walk(ast.parse(src.read_text())):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | {"revlib", "__future__"}
    owners = md.packages_distributions()
    missing = {}
    for mod in sorted(modules):
        dists = {d.lower().replace("_", "-") for d in owners.get(mod, [])}
        if not dists & closure:
            missing[mod] = sorted(dists) or ["(not installed here)"]
    assert not missing, (
        f"imported but not installed by environment.yml + postBuild: {missing}"
    )
