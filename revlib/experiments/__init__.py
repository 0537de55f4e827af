"""One module per chapter: a frozen ``Config`` dataclass and ``run(config) -> Result``;
and the registry of them, by name (:func:`experiment`, :func:`config_fields`,
:func:`make_config`), which :mod:`revlib.sweeps` and :mod:`revlib.records` both read
without importing each other."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path

_PACKAGE = "revlib.experiments"


# ------------------------------------------------------------------------- experiments


def available() -> list[str]:
    """Names of the modules in :mod:`revlib.experiments` that define ``Config`` and
    ``run``."""
    here = Path(__file__).parent
    names = []
    for info in pkgutil.iter_modules([str(here)]):
        src = here / f"{info.name}.py"
        # Read, not import: importing every chapter costs seconds and this runs on
        # errors.
        text = src.read_text() if src.exists() else ""
        if re.search(r"^class Config\b", text, re.M) and re.search(
            r"^def run\(", text, re.M
        ):
            names.append(info.name)
    return sorted(names)


def experiment(name: str) -> types.ModuleType:
    """The module of experiment ``name``: ``revlib.experiments.<name>``, or any
    importable dotted module path (``mypkg.myexp``) that has a dataclass ``Config`` and
    ``run(config)``."""
    if not isinstance(name, str) or not re.fullmatch(
        r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name
    ):
        raise ValueError(f"experiment must be a module name, got {name!r}")
    modname = name if "." in name else f"{_PACKAGE}.{name}"
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as err:
        if err.name is None or not (
            modname == err.name or modname.startswith(err.name + ".")
        ):
            raise  # the experiment exists but one of its own imports is missing
        raise ValueError(
            f"unknown experiment {name!r}; available: {', '.join(available())}"
        ) from None
    cfg = getattr(mod, "Config", None)
    if not (
        isinstance(cfg, type)
        and dataclasses.is_dataclass(cfg)
        and callable(getattr(mod, "run", None))
    ):
        raise ValueError(
            f"experiment {name!r} has no dataclass Config and run(config); "
            f"available: {', '.join(available())}"
        )
    return mod


def config_fields(name: str) -> dict[str, object]:
    """``{field: type}`` of experiment ``name``'s ``Config`` (annotations resolved)."""
    cfg = experiment(name).Config
    hints = typing.get_type_hints(cfg)
    return {f.name: hints.get(f.name, str) for f in dataclasses.fields(cfg) if f.init}


def make_config(name: str, fields: Mapping[str, object]):
    """``Config(**fields)`` of experiment ``name``; ``ValueError`` naming an unknown
    field or repeating the Config's own message, prefixed with the experiment and the
    fields."""
    known = config_fields(name)
    for key in fields:
        if key not in known:
            raise ValueError(
                f"unknown field {key!r} for experiment {name!r}; fields: "
                f"{', '.join(known)}"
            )
    try:
        return experiment(name).Config(**fields)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"invalid {name} config ({_describe(fields)}): {err}"
        ) from None


def _describe(fields: Mapping) -> str:
    return (
        ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in fields.items())
        or "defaults"
    )
