"""Each public theory function names the book label (``eq-...`` or ``thm-...``) it
implements or serves, and every label a revlib docstring names exists in the book, so a
reader can go from the page to the code and back."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LABEL = re.compile(r"\b((?:eq|thm)-[a-z0-9]+(?:-[a-z0-9]+)*)")
BOOK_LABELS = {
    m
    for p in (ROOT / "book").rglob("*.md")
    for m in re.findall(r"\$\$ \((eq-[a-z0-9-]+)\)", p.read_text())
} | {
    m
    for p in (ROOT / "book").rglob("*.md")
    for m in re.findall(r":label: (thm-[a-z0-9-]+)", p.read_text())
}
THEORY = sorted(
    p.stem for p in (ROOT / "revlib" / "theory").glob("*.py") if p.stem != "__init__"
)


def _public_functions(module):
    return [
        (n, f)
        for n, f in vars(module).items()
        if inspect.isfunction(f)
        and f.__module__ == module.__name__
        and not n.startswith("_")
    ]


def test_the_book_has_labels():
    assert {"eq-bilinear-gradient", "thm-grad-init"} <= BOOK_LABELS


@pytest.mark.parametrize("name", THEORY)
def test_every_theory_function_names_a_book_label(name):
    module = importlib.import_module(f"revlib.theory.{name}")
    for fname, f in _public_functions(module):
        labels = set(LABEL.findall(f.__doc__ or ""))
        assert labels, f"revlib.theory.{name}.{fname} names no book label"
        assert labels <= BOOK_LABELS, (
            f"revlib.theory.{name}.{fname} names unknown labels {labels - BOOK_LABELS}"
        )
