"""Numbers in the chapters' prose come from the notebooks (issue 18): every decimal
number in a chapter page is glued (``{glue:text}``), or a paper's number marked as such
(``{paper}``), or a configuration value that appears as a literal in the code of the
chapter's notebook(s) or of their experiment modules. Math, code and other roles are not
prose and are not checked."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))
import booktoc  # noqa: E402  (the one _toc.yml walker)

PAGES = sorted(
    p for p in (ROOT / "book").rglob("*.md") if p.name not in {"references.md"}
)
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\d)")
# "Section 4.2", "Figure 3.1", "(1.2)" as a reference to the paper's numbering
REFERENCE_WORDS = re.compile(
    r"(section|sections|figure|figures|fig\.|table|tables|theorem|"
    r"theorems|lemma|lemmas|corollary|proposition|eq\.|equation|"
    r"equations|appendix|assumption|definition|§|v|version|jupyter book|"
    r"python)\s*\(?$",
    re.I,
)


def _strip(text: str) -> str:
    """The page's prose: code, math, roles, directive options, links and comments
    removed."""
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)  # front matter
    text = re.sub(r"(`{3,}|~{3,}).*?\1", " ", text, flags=re.S)  # fenced blocks
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)  # display math
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", " ", text)  # inline math
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", text)  # roles, glue included
    text = re.sub(r"`[^`\n]*`", " ", text)  # inline code
    text = re.sub(r"^\s*:[\w-]+:.*$", " ", text, flags=re.M)  # directive options
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"https?://\S+", " ", text)
    return text


def _literals(path: Path) -> set[str]:
    """Every number literal in a Python file, in a few spellings (0.1, .1, 1e-3 as
    0.001)."""
    out: set[str] = set()
    try:
        tree = ast.parse(path.read_text())
    except (SyntaxError, FileNotFoundError):
        return out
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
        ):
            v = float(node.value)
            out |= {repr(v), f"{v:g}", str(node.value)}
            for scale in (1, 100):  # a fraction quoted as a percentage
                out.add(f"{v * scale:g}")
    return out


def _sections() -> dict[str, list[str]]:
    """chapter docname -> the notebooks listed under it in _toc.yml."""
    return booktoc.sections()


def allowed_literals(page: Path) -> set[str]:
    doc = page.relative_to(ROOT).with_suffix("").as_posix()
    allowed: set[str] = set()
    for nb in _sections().get(doc, []):
        src = ROOT / f"{nb}.py"
        allowed |= _literals(src)
        name = src.stem
        allowed |= _literals(ROOT / "revlib" / "experiments" / f"{name}.py")
    return allowed


def untraced_numbers(page: Path) -> list[str]:
    prose = _strip(page.read_text())
    allowed = allowed_literals(page)
    bad = []
    for m in DECIMAL.finditer(prose):
        before = prose[max(0, m.start() - 20) : m.start()]
        if REFERENCE_WORDS.search(before.rstrip()) or m.group(0) in allowed:
            continue
        if float(m.group(0)) in {
            float(a) for a in allowed if re.fullmatch(r"[\d.e+-]+", a)
        }:
            continue
        context = prose[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ")
        bad.append(f"{m.group(0)!r} in '…{context.strip()}…'")
    return bad


def test_the_stripper_keeps_prose_only():
    text = (
        "A $0.5$ and `0.7` and {glue:text}`x::y:s` and {paper}`0.81` and\n"
        "```\n0.9\n```\n"
        "$$\n1.5\n$$\nbut 0.43 stays; Section 4.2 too."
    )
    prose = _strip(text)
    assert [m.group(0) for m in DECIMAL.finditer(prose)] == ["0.43", "4.2"]


@pytest.mark.parametrize(
    "page", PAGES, ids=[p.relative_to(ROOT / "book").as_posix() for p in PAGES]
)
def test_every_decimal_in_the_prose_is_glued_or_the_papers(page):
    bad = untraced_numbers(page)
    assert not bad, (
        f"{page.relative_to(ROOT)}: {len(bad)} decimal number(s) neither glued "
        "({glue:text}), nor a paper's number ({paper}), nor a configuration value "
        "of its notebook:\n  " + "\n  ".join(bad)
    )
