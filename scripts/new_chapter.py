"""Start a chapter in the book's shape (``scripts/new-chapter``): a page, a notebook and
an experiment module, wired to the ledger, with one working claim and its science
control, so that a new chapter starts from something that runs and is then rewritten.

    scripts/new-chapter <part> <name> "<Title>"

writes ``book/<part>/<name>.md``, ``notebooks/<part>/<name>.py`` and
``revlib/experiments/<name>.py`` and prints the lines to add to ``_toc.yml`` and to
``book/results/<part>.yml``. It refuses to overwrite a file, and writes nothing unless
every file can be written. The experiment it starts from is a placeholder (a slope
fitted by least squares, whose "the slope is found" claim a shuffled-label control
breaks): replace it with the chapter's own, keeping its shape. CONTRIBUTING.md says what
each part must hold; then ``scripts/colab-cell`` adds the Colab cell and
``scripts/refresh-notebooks`` executes the notebook.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("reversal", "binding", "associations", "caching")

PAGE = """(chap-{name})=
# {title}
```{{reproduced-box}} {part}/{name}
```

One paragraph: the paper's question, its answer, and what this chapter shows at our
scale. The notebook {{doc}}`../../notebooks/{part}/{name}` measures every claim.

## The setting

The task, the model and the paper's notation.

## The result

```{{prf:theorem}} The paper's statement
:label: thm-{name}

State it in the paper's notation.
```

## What the notebook shows

Every number here is glued from the notebook, never typed: the placeholder fits a
slope of {{nb}}`slope` (its claim:
"the slope is found"; under the control `shuffled_labels` it is not).
"""

NOTEBOOK = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook: {lower_title}
#
# The executable side of {{doc}}`../../book/{part}/{name}`. Every claim below
# is checked through a ledger (`revlib.claims`): one line with the value per seed,
# its test and its margin. The controls re-run this notebook with the mechanism
# removed or the answer given, and each claim names the control under which its
# test must fail (`scripts/check-claims`).

# %% tags=["parameters"]
SEED = 0          # base seed; seeds SEED, SEED+1, ... run side by side
N_SEEDS = 3       # seeds
N = 200           # data points per seed (a size knob)
CONTROL = "none"  # a control run, one of the ledger's controls (check-claims)

# %%
from revlib import claims, repro
from revlib.experiments import {name}

repro.setup(SEED)
ledger = claims.Ledger.of({name}, CONTROL, scale=f"n = {{N}}, {{N_SEEDS}} seeds",
                          paper_scale="unknown", size_knobs={{"N": N}})

import numpy as np

from revlib.report import approx

result = {name}.run(ledger.config({name}.Config(n=N, seed=SEED, n_seeds=N_SEEDS)))

# %% [markdown]
# ## 1. The slope is found (placeholder: replace with the chapter's first claim)

# %% tags=["hide-input"]
# Tolerance: the largest move of a seed's slope over 5 fresh seeds (scripts/seed-spread)
TOL_SLOPE = 0.2
print(f"fitted slope per seed: {{approx(result.slope, TOL_SLOPE)}} (true slope "
      f"{{result.config.slope}})")
ledger.check("slope-found", "the fitted slope is within 0.5 of the true one (per seed)",
             np.abs(result.slope - result.config.slope), below=0.5, print_tol=TOL_SLOPE,
             kind="ours", broken_by=("shuffled_labels",))
ledger.glue("slope", np.median(result.slope), print_tol=TOL_SLOPE)

# %% tags=["hide-input"]
ledger.summary()
"""

EXPERIMENT = '''"""Chapter "{title}".

A placeholder experiment in the book's shape (a slope fitted by least squares). Replace
it with the chapter's own, keeping the shape: ``NOTEBOOK``, ``CONTROLS``,
``SIZE_KNOBS``, ``QUICK``, a frozen ``Config`` validated in ``__post_init__``, and
``run(config) -> Result``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from revlib import _validate, repro
from revlib.config import Control, ExperimentConfig

NOTEBOOK = "{part}/{name}"
# The notebook's controls (its CONTROL), each with the Config change it makes.
CONTROLS = (
    Control(
        "shuffled_labels",
        "science",
        "the targets are shuffled across the inputs, so there is no slope to find",
        {{"shuffled_labels": True}},
    ),
)
SIZE_KNOBS = ("N",)  # what check-claims --scale multiplies
QUICK = {{"N_SEEDS": 2}}  # CI's control runs


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """``n`` points ``x ~ N(0, 1)`` per seed, ``y = slope * x + noise * N(0, 1)``.
    ``shuffled_labels`` (a control): ``y`` is permuted across the points."""

    n: int = 200
    slope: float = 2.0
    noise: float = 0.5
    n_seeds: int = 3
    shuffled_labels: bool = False

    def __post_init__(self):
        _validate.integer("n", self.n, 2, 10**7)
        _validate.real("slope", self.slope, -100.0, 100.0)
        _validate.real("noise", self.noise, 0.0, 100.0)
        _validate.boolean("shuffled_labels", self.shuffled_labels)
        super().__post_init__()  # seed, n_seeds


@dataclass
class Result:
    """``slope`` ``[S]``: the least-squares slope of each seed."""

    config: Config
    slope: np.ndarray


def run(config: Config) -> Result:
    """Fit the slope of each seed's data by least squares."""
    slopes = []
    for s in config.seeds:
        g = repro.generator(s)
        x = torch.randn(config.n, generator=g, dtype=torch.float64)
        noise = torch.randn(config.n, generator=g, dtype=torch.float64)
        y = config.slope * x + config.noise * noise
        if config.shuffled_labels:
            y = y[torch.randperm(config.n, generator=g)]
        slopes.append(float((x @ y) / (x @ x)))
    return Result(config=config, slope=np.array(slopes))
'''

TOC = """      - file: book/{part}/{name}
        sections:
          - file: notebooks/{part}/{name}"""

RESULTS = """  - result: "What the paper states, in a few words"
    source: "Section, theorem, figure or table"
    paper: "the paper's statement and number (or 'no number')"
    paper_scale: "the paper's sizes (or 'unknown')"
    chapter: {part}/{name}
    claims: []  # the ids of the kind="paper" claims that test it
    figure: fig-{name}
    gap: "what closing the gap to the paper would take\""""


def files(part: str, name: str, title: str) -> dict[Path, str]:
    """The three files of a new chapter, by path relative to the repository."""
    keys = dict(
        part=part, name=name, title=title, lower_title=title[:1].lower() + title[1:]
    )
    return {
        Path("book") / part / f"{name}.md": PAGE.format(**keys),
        Path("notebooks") / part / f"{name}.py": NOTEBOOK.format(**keys),
        Path("revlib/experiments") / f"{name}.py": EXPERIMENT.format(**keys),
    }


def create(part: str, name: str, title: str, root: Path = ROOT) -> list[Path]:
    """Write the chapter's files under ``root``; ``ValueError`` on a bad name or a file
    that exists (then nothing is written)."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    if not re.fullmatch(r"[a-z][a-z0-9_]{1,40}", name or ""):
        raise ValueError(
            f"name must be lower_snake_case (a Python module name), got {name!r}"
        )
    if not title.strip() or "\n" in title:
        raise ValueError(f"title must be one line of text, got {title!r}")
    out = files(part, name, title.strip())
    taken = [str(p) for p in out if (root / p).exists()]
    if taken:
        raise ValueError(f"these files exist, nothing was written: {taken}")
    written = []
    try:
        for rel, text in out.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x") as fh:  # never overwrite
                fh.write(text)
            written.append(path)
    except BaseException:
        for path in written:  # nothing half-written is left behind
            path.unlink(missing_ok=True)
        raise
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", help=f"one of {PARTS}")
    ap.add_argument("name", help="lower_snake_case: page, notebook and module name")
    ap.add_argument("title", help="the chapter's title")
    args = ap.parse_args(argv)
    try:
        written = create(args.part, args.name, args.title)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    keys = dict(part=args.part, name=args.name)
    print("\nadd to _toc.yml, under the part's chapters:\n" + TOC.format(**keys))
    print(
        f"\nadd to book/results/{args.part}.yml, one row per result the chapter tests:"
    )
    print(RESULTS.format(**keys))
    print(
        "\nthen: scripts/colab-cell notebooks/{0}/{1}.py && "
        "scripts/refresh-notebooks notebooks/{0}/{1}.py && "
        "scripts/check-claims notebooks/{0}/{1}.py".format(args.part, args.name)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
