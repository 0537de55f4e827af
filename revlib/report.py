"""Printed numbers that carry their tolerance, and the comparison that honours it.

A notebook prints a measured number together with how far it is expected to move between
re-runs on other machines and seeds: ``approx(0.4312, 0.05)`` gives ``"0.43 ±0.05"``,
and ``approx([8.2, 9.1], 1.5)`` gives ``"[8.2 9.1] ±1.5"``; ``approx(x, "10%")`` gives a
tolerance relative to the value. The tolerance is declared in the code next to the
claim, shown to the reader, and read back by :func:`compare`, which the test suite uses
instead of nbval's exact string match (see :mod:`revlib.nbval_plugin`):

- the text around the numbers must match exactly (runs of whitespace count as one space,
  and padding inside brackets is ignored, since column widths follow the numbers);
- a number followed by ``±T`` (or a bracketed list of numbers followed by ``±T``) may
  differ from the stored one by ``T`` plus the rounding of the two printed values;
  ``±P%`` allows ``P`` percent of the stored value;
- every other number must be equal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

MARK = "±"

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
_TOKEN = re.compile(rf"(?<![\w.])(?:{_NUM})(?![\w.])")
_TOL = re.compile(rf"\s*{MARK}\s*((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(%?)")


def _digits_for(tol: float) -> int:
    """Decimals that resolve a tolerance: 0.05 -> 2, 0.5 -> 1, 2 -> 0."""
    return max(0, -math.floor(math.log10(tol))) if tol > 0 else 3


def _parse_tol(tol: float | str) -> tuple[float, bool]:
    if isinstance(tol, str):
        if not re.fullmatch(r"\d+(\.\d*)?%", tol.strip()):
            raise ValueError(
                f"tol must be a positive number or a percentage like '10%', got {tol!r}"
            )
        value, relative = float(tol.strip()[:-1]), True
    else:
        value, relative = float(tol), False
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"tol must be positive and finite, got {tol!r}")
    return value, relative


def approx(value, tol: float | str, digits: int | None = None) -> str:
    """``value`` rounded to ``digits`` decimals, followed by its tolerance ``±tol``.

    ``value`` is a number or anything ``np.asarray`` accepts (printed as ``[a b c]``,
    nested for 2-D); ``tol`` is an absolute tolerance (> 0) or a percentage string such
    as ``"10%"``. ``digits`` defaults to the decimals that resolve the tolerance.
    """
    t, relative = _parse_tol(tol)
    if digits is None:
        if relative:  # resolve the tolerance of the largest value
            finite = np.abs(np.asarray(value, dtype=float))
            finite = finite[np.isfinite(finite)]
            t = t * (finite.max() if finite.size else 1.0) / 100
        digits = _digits_for(t / 10)  # one decimal finer than the tolerance
    if not isinstance(digits, int) or not 0 <= digits <= 12:
        raise ValueError(f"digits must be an integer in [0, 12], got {digits!r}")

    def one(x) -> str:
        x = float(x)
        return f"{x:.{digits}f}" if math.isfinite(x) else str(x)

    def nested(a) -> str:
        return one(a) if np.ndim(a) == 0 else "[" + " ".join(nested(b) for b in a) + "]"

    mark = f"{MARK}{tol.strip()}" if relative else f"{MARK}{t:g}"
    return f"{nested(np.asarray(value, dtype=float))} {mark}"


def exact(values, digits: int = 3) -> str:
    """Numbers read from a committed file, printed as they are (no tolerance: the file
    does not change between runs): ``exact([0.6471, 0.4567])`` gives
    ``"[0.647 0.457]"``."""
    return (
        "["
        + " ".join(f"{v:.{digits}f}" for v in np.ravel(np.asarray(values, dtype=float)))
        + "]"
    )


def _normalise(text: str) -> str:
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\[ +", "[", re.sub(r" +\]", "]", text)).strip()


def _decimals(token: str) -> int:
    mantissa = re.split(r"[eE]", token)[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _parse(text: str) -> tuple[str, list[tuple[str, float | None, bool]]]:
    """Skeleton (numbers replaced by ``#``) and the numbers, each with its tolerance."""
    text = _normalise(text)
    numbers: list[list] = []
    skeleton: list[str] = []
    depth_start: list[int] = []  # index into numbers where each open bracket began
    i = 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m:
            skeleton.append("#")
            numbers.append([m.group(0), None, False])
            i = m.end()
        else:
            ch = text[i]
            if ch == "[":
                depth_start.append(len(numbers))
            elif ch == "]" and depth_start:
                group_start = depth_start.pop()
                t = _TOL.match(text, i + 1)
                if t:
                    for n in numbers[group_start:]:
                        if n[1] is None:
                            n[1], n[2] = float(t.group(1)), bool(t.group(2))
            t = _TOL.match(text, i) if ch != "]" else None
            if t and numbers and skeleton and skeleton[-1] == "#":
                numbers[-1][1], numbers[-1][2] = float(t.group(1)), bool(t.group(2))
            skeleton.append(ch)
            i += 1
    return "".join(skeleton), [tuple(n) for n in numbers]


def _close(ref: str, new: str, tol: float | None, relative: bool) -> tuple[bool, float]:
    a, b = float(ref), float(new)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b), 0.0
    if tol is None:
        return a == b, abs(a - b)
    allowed = tol * abs(a) / 100 if relative else tol
    rounding = 0.5 * 10.0 ** -_decimals(ref) + 0.5 * 10.0 ** -_decimals(new)
    return abs(a - b) <= allowed + rounding + 1e-12, abs(a - b)


def compare(ref: str, new: str) -> list[str]:
    """Why ``new`` does not match the stored ``ref`` (an empty list when it does)."""
    if ref == new:
        return []
    ref_skel, ref_nums = _parse(ref)
    new_skel, new_nums = _parse(new)
    if ref_skel != new_skel or len(ref_nums) != len(new_nums):
        return [
            "the text around the numbers differs (tolerances apply to numbers only)"
        ]
    problems = []
    for k, ((r, tol, rel), (n, _, _)) in enumerate(zip(ref_nums, new_nums)):
        ok, diff = _close(r, n, tol, rel)
        if not ok:
            what = (
                "must be equal"
                if tol is None
                else f"tolerance ±{tol:g}{'%' if rel else ''}"
            )
            problems.append(
                f"number {k + 1}: stored {r}, now {n} (differs by {diff:.3g}; {what})"
            )
    return problems


def drift(ref: str, new: str) -> str:
    """One line on how far ``new``'s numbers moved from ``ref``'s ('' when
    identical)."""
    if ref == new:
        return ""
    ref_skel, ref_nums = _parse(ref)
    new_skel, new_nums = _parse(new)
    if ref_skel != new_skel or len(ref_nums) != len(new_nums):
        return "text differs"
    worst = []
    for (r, tol, rel), (n, _, _) in zip(ref_nums, new_nums):
        a, b = float(r), float(n)
        if a != b and not (math.isnan(a) and math.isnan(b)):
            worst.append((abs(a - b), r, n, tol, rel))
    if not worst:
        return ""
    worst.sort(reverse=True)
    d, r, n, tol, rel = worst[0]
    bad = sum(1 for w in worst if not _close(w[1], w[2], w[3], w[4])[0])
    return (
        f"{len(worst)} number(s) moved, largest {r} -> {n}"
        + (
            f" (tol ±{tol:g}{'%' if rel else ''})"
            if tol is not None
            else " (no tolerance)"
        )
        + (f"; {bad} beyond tolerance" if bad else "")
    )


def count_tolerances(texts: Iterable[str]) -> int:
    """How many printed numbers in ``texts`` carry a tolerance."""
    return sum(1 for t in texts for _, tol, _ in _parse(t)[1] if tol is not None)
