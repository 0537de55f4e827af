"""The book's table of contents, read once for every tool that walks it: the Sphinx
extensions (scorecard, "What reproduced", the chapter boxes), ``scripts/check-book`` and
the tests. Imports nothing from Sphinx, so that a test can use it."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def load() -> dict:
    """``_toc.yml`` as YAML."""
    return yaml.safe_load((ROOT / "_toc.yml").read_text())


def docs() -> list[str]:
    """Every docname of ``_toc.yml`` (the root, then every ``file``), in its order."""

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    yield node[key]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    return list(dict.fromkeys(walk(load())))


def sections() -> dict[str, list[str]]:
    """Each entry's docname -> the docnames listed under it as ``sections`` (a chapter
    -> its notebooks; ``[]`` for a page without sections)."""
    out: dict[str, list[str]] = {}

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                out[node["file"]] = [
                    s["file"] for s in node.get("sections", []) if "file" in s
                ]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(load())
    return out
