"""Config validation shared by every dataclass in revlib.

Each check raises ``ValueError`` naming the field and the allowed range, so that a
reader who mistypes a parameter learns what to change without reading the source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def integer(name: str, value, lo: int | None = None, hi: int | None = None) -> None:
    """Require an int (not bool) in ``[lo, hi]`` (either bound may be open:
    ``None``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer{_range(lo, hi)}, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an integer{_range(lo, hi)}, got {value!r}")


def real(
    name: str,
    value,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> None:
    """Require a finite real number in the given (closed unless ``*_open``) interval."""
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value < hi if hi_open else value <= hi
    if not ok:
        lb = "" if lo is None else ("(" if lo_open else "[") + f"{lo}"
        ub = "" if hi is None else f"{hi}" + (")" if hi_open else "]")
        where = (
            f" in {lb or '(-inf'}, {ub or 'inf)'}"
            if (lo is not None or hi is not None)
            else ""
        )
        raise ValueError(f"{name} must be a finite number{where}, got {value!r}")


def boolean(name: str, value) -> None:
    """Require ``True`` or ``False`` (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def sequence(name: str, value, lo: int = 0, hi: int | None = None) -> None:
    """Require a tuple or list of ``lo`` to ``hi`` items (items checked apart)."""
    if not isinstance(value, (tuple, list)):
        raise ValueError(
            f"{name} must be a tuple{_range(lo, hi, ' items')}, got {value!r}"
        )
    if len(value) < lo or (hi is not None and len(value) > hi):
        raise ValueError(
            f"{name} must be a tuple{_range(lo, hi, ' items')}, "
            f"got {len(value)} items: {value!r}"
        )


def seeds(value) -> list:
    """Require a non-empty list (or tuple, range) of integer seeds; return it as a list.
    Each seed's range is checked where it seeds a generator
    (:func:`revlib.repro.generator`).
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(
            f"seeds must be a list of integer seeds such as [0, 1], got {value!r}"
        )
    value = list(value)
    if not value:
        raise ValueError("seeds must name at least one seed, got []")
    for s in value:
        if not isinstance(s, int):
            raise ValueError(
                f"each seed must be an integer, got {s!r} in seeds {value!r}"
            )
    return value


def choice(name: str, value, allowed: Iterable) -> None:
    """Require ``value`` to be one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def _range(lo, hi, unit: str = "") -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" of >= {lo}{unit}" if unit else f" >= {lo}"
    if lo is None:
        return f" of <= {hi}{unit}" if unit else f" <= {hi}"
    return f" of {lo} to {hi}{unit}" if unit else f" in [{lo}, {hi}]"
