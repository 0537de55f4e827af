"""The import layers of revlib: no module imports one from a layer above its own.

The layers follow CONTRIBUTING.md ("data flows one way": a notebook calls an experiment,
which uses data, models and train), from the bottom up:

0. checks and reductions with no revlib dependency: ``_validate``, ``metrics``,
   ``devices``, ``report``, ``plot``;
1. seeding, the training loop, figure files: ``repro``, ``train``, ``figures``, and the
   package ``revlib`` itself (its version; it re-exports ``repro``);
2. the parts a chapter is built from: ``data.*``, ``models.*``, ``theory.*``,
   ``probes``, ``config``, ``records``, and the registry of the chapters (the package
   ``experiments`` itself, which finds a chapter by name and imports none at load);
3. the chapters: ``experiments.*``;
4. running and reporting: ``sweeps``, ``cli``, ``__main__``, ``claims``,
   ``nbval_plugin``, ``bench``.

A module may import from its own layer or below. Imports are read with ``ast``, those
inside functions included; a deferred import that reaches up is allowed only where it is
listed in ``DEFERRED_UPWARD`` with its reason (strict: an entry that no longer occurs
fails, so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "revlib"

LAYERS = {
    0: ("_validate", "metrics", "devices", "report", "plot"),
    1: ("revlib", "repro", "train", "figures"),
    2: ("data", "models", "theory", "probes", "config", "records"),
    3: ("experiments",),
    4: ("sweeps", "cli", "__main__", "claims", "nbval_plugin", "bench"),
}

# (importer, imported): deferred (function-level) imports that reach a layer up, each
# with why it is there; module-level imports never may.
DEFERRED_UPWARD = {
    ("experiments.prompt_caching", "sweeps"): "its command line writes sweeps.record",
}


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts) or "revlib"


def _module_of(imported: str) -> str:
    """``revlib.data.binding`` -> ``data.binding``; ``revlib`` -> ``revlib``."""
    rest = imported.split(".")[1:]
    while rest and not (
        (ROOT.joinpath(*rest)).with_suffix(".py").exists()
        or ROOT.joinpath(*rest).is_dir()
    ):
        rest = rest[:-1]
    return ".".join(rest) or "revlib"


def layer(module: str) -> int:
    if module == "experiments":  # the registry, below the chapters it finds
        return 2
    top = module.split(".")[0] if module != "revlib" else "revlib"
    for level, names in LAYERS.items():
        if top in names:
            return level
    raise KeyError(f"revlib module {module!r} has no layer: add it to LAYERS")


def imports(path: Path) -> list[tuple[str, bool]]:
    """``(imported revlib module, deferred?)`` for every import in ``path``."""
    tree = ast.parse(path.read_text())
    top_level = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            if n == "revlib" or n.startswith("revlib."):
                deferred = id(node) not in top_level and not _in_type_check(tree, node)
                out.append((_module_of(n), deferred))
    return out


def _in_type_check(tree: ast.Module, node: ast.AST) -> bool:
    return any(isinstance(n, ast.If) and node in ast.walk(n) for n in tree.body)


MODULES = sorted(ROOT.rglob("*.py"))


def test_every_module_has_a_layer():
    for path in MODULES:
        layer(_name(path))


@pytest.mark.parametrize("path", MODULES, ids=[_name(p) for p in MODULES])
def test_no_module_imports_from_a_layer_above(path):
    me = _name(path)
    bad = []
    for other, deferred in imports(path):
        if other == me or layer(other) <= layer(me):
            continue
        if deferred and (me, other.split(".")[0]) in DEFERRED_UPWARD:
            continue
        bad.append(
            f"{me} (layer {layer(me)}) imports {other} (layer {layer(other)})"
            + (" inside a function" if deferred else "")
        )
    assert not bad, "\n".join(bad)


def test_the_allowed_deferred_imports_still_occur():
    seen = {(_name(p), o.split(".")[0]) for p in MODULES for o, d in imports(p) if d}
    gone = set(DEFERRED_UPWARD) - seen
    assert not gone, f"remove from DEFERRED_UPWARD (no longer imported): {sorted(gone)}"


def test_the_check_finds_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"  # as if it were a data module
    bad.write_text(
        "import torch\nfrom revlib import sweeps\n\n\n"
        "def f():\n    from revlib.experiments import jepa\n"
    )
    assert imports(bad) == [("sweeps", False), ("experiments.jepa", True)]
    assert layer("sweeps") > layer("data.binding") < layer("experiments.jepa")
