"""Every field of every registered experiment Config is validated when the Config is
made: a value of the wrong type, or out of range, is a ValueError that names the field,
raised before anything trains (in ``__post_init__``; ``run`` is never called here)."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from revlib import sweeps
from revlib.config import ExperimentConfig

NOT_A_VALUE = object()  # the wrong type for every field


def _fields():
    for name in sweeps.available():
        cfg = sweeps.experiment(name).Config
        hints = typing.get_type_hints(cfg)
        for f in dataclasses.fields(cfg):
            if f.init:
                yield name, f.name, hints[f.name]


def _bad_values(kind):
    bad = [("wrong type", NOT_A_VALUE)]
    if kind in (int, float):
        bad += [("far below", -(10**12)), ("far above", 10**12)]
    if kind is bool:
        bad += [("an int for a bool", 1)]
    if kind is int:
        bad += [("a float for an int", 2.5)]
    return bad


CASES = [
    pytest.param(
        name,
        field,
        value,
        id=f"{name}.{field}:{what}",
    )
    for name, field, kind in _fields()
    for what, value in _bad_values(kind)
]


@pytest.mark.parametrize("name, field, value", CASES)
def test_a_bad_field_is_a_value_error_naming_it(name, field, value):
    cfg = sweeps.experiment(name).Config
    with pytest.raises(ValueError, match=field):
        cfg(**{field: value})


def test_the_sweep_covers_every_registered_experiment():
    names = {n for n, _, _ in _fields()}
    assert names == set(sweeps.available()) and len(names) >= 13
    assert len(CASES) > 200


@pytest.mark.parametrize("name", sweeps.available())
def test_the_defaults_are_valid(name):
    cfg = sweeps.experiment(name).Config()
    if isinstance(cfg, ExperimentConfig):
        assert cfg.seeds == list(range(cfg.seed, cfg.seed + cfg.n_seeds))


def test_the_base_gives_the_shared_fields_and_the_optimiser():
    from revlib.experiments import ff_vs_attention, jepa, surface_names

    own = {f.name for f in dataclasses.fields(surface_names.Config)}
    assert {"seed", "n_seeds"} <= own
    assert "seed" not in surface_names.Config.__dict__.get("__annotations__", {})
    tc = jepa.Config(steps=10, lr=0.5, batch_size=4, eval_points=3).train_config()
    assert (tc.optimizer, tc.steps, tc.lr, tc.batch_size, tc.eval_points) == (
        "adamw",
        10,
        0.5,
        4,
        3,
    )
    assert ff_vs_attention.Config(momentum=0.5).train_config().momentum == 0.5
    assert ff_vs_attention.Config().train_config().optimizer == "sgd"


def test_every_experiment_train_config_passes_no_training_on():
    """A TrainConfig built by hand in an experiment must carry ``no_training``: one
    that did not (one_layer's T=3 run) trained under the no_training control, so a
    claim that had to fail there held (CI, stop 31)."""
    import ast
    import pathlib

    import revlib.experiments

    missing = []
    for path in sorted(pathlib.Path(revlib.experiments.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None))
                == "TrainConfig"
                and not any(k.arg in ("no_training", None) for k in node.keywords)
            ):
                missing.append(f"{path.name}:{node.lineno}")
    assert not missing, f"TrainConfig(...) without no_training=: {missing}"
