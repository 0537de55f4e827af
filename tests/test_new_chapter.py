"""scripts/new-chapter: the chapter it starts is in the book's shape and runs: its
experiment validates its Config and runs, its notebook executes with its claim held by
default and broken under its science control, its code passes the line-length rule, and
it never overwrites a file."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from revlib import claims

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import new_chapter  # noqa: E402

NAME = "toy_slope"


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    written = new_chapter.create("binding", NAME, "A toy slope", root=tmp_path)
    path = tmp_path / "revlib/experiments" / f"{NAME}.py"
    spec = importlib.util.spec_from_file_location(f"revlib.experiments.{NAME}", path)
    module = importlib.util.module_from_spec(spec)
    import revlib.experiments as experiments

    # in sys.modules before it runs: its dataclasses resolve their annotations there
    monkeypatch.setitem(sys.modules, f"revlib.experiments.{NAME}", module)
    monkeypatch.setattr(experiments, NAME, module, raising=False)
    spec.loader.exec_module(module)
    return tmp_path, written, module


def test_it_writes_the_three_files_of_a_chapter(chapter):
    root, written, _ = chapter
    assert sorted(p.relative_to(root).as_posix() for p in written) == [
        f"book/binding/{NAME}.md",
        f"notebooks/binding/{NAME}.py",
        f"revlib/experiments/{NAME}.py",
    ]
    page = (root / f"book/binding/{NAME}.md").read_text()
    assert f"```{{reproduced-box}} binding/{NAME}" in page
    assert "{nb}`slope`" in page  # a glued number of its own notebook, not typed
    ruff = Path(sys.executable).parent / "ruff"
    res = subprocess.run(
        [
            str(ruff),
            "check",
            "--no-cache",
            "--select",
            "E501,F",
            *map(str, written[1:]),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stdout


def test_its_experiment_validates_and_its_control_removes_the_effect(chapter):
    _, _, module = chapter
    with pytest.raises(ValueError, match="noise"):
        module.Config(noise=-1.0)
    assert [c.name for c in module.CONTROLS] == ["shuffled_labels"]
    found = module.run(module.Config(n=500, n_seeds=3))
    shuffled = module.run(module.Config(n=500, n_seeds=3, shuffled_labels=True))
    assert abs(found.slope - 2.0).max() < 0.2 and abs(shuffled.slope).max() < 0.5


@pytest.mark.parametrize(
    "control,outcome", [("none", "holds"), ("shuffled_labels", "fails")]
)
def test_its_notebook_runs_and_its_claim_fails_under_its_control(
    chapter, monkeypatch, control, outcome
):
    root, _, _ = chapter
    monkeypatch.setenv("REVLIB_CLAIMS", "record")
    monkeypatch.delenv("REVLIB_LEDGER", raising=False)
    source = (root / f"notebooks/binding/{NAME}.py").read_text()
    source = source.replace('CONTROL = "none"', f"CONTROL = {control!r}", 1)
    scope: dict = {}
    exec(compile(source, f"{NAME}.py", "exec"), scope)  # a py:percent file is Python
    rec = scope["ledger"].records["slope-found"]
    assert rec.outcome == outcome and rec.science
    assert claims.mode() == "record"


def test_it_refuses_to_overwrite_or_a_bad_name(tmp_path):
    (tmp_path / "book/binding").mkdir(parents=True)
    (tmp_path / f"book/binding/{NAME}.md").write_text("mine")
    with pytest.raises(ValueError, match="exist, nothing was written"):
        new_chapter.create("binding", NAME, "T", root=tmp_path)
    assert (tmp_path / f"book/binding/{NAME}.md").read_text() == "mine"
    assert not (tmp_path / "notebooks").exists()
    with pytest.raises(ValueError, match="part must be one of"):
        new_chapter.create("physics", NAME, "T", root=tmp_path)
    with pytest.raises(ValueError, match="lower_snake_case"):
        new_chapter.create("binding", "Toy-Slope", "T", root=tmp_path)
