"""Claims: one sentence, a measurement per seed, a test with a margin, and the controls
that break it.

A notebook states each of its claims through one :class:`Ledger`::

    ledger = claims.Ledger.of(bilinear, CONTROL, scale=f"m = {M}, d = {D}",
                              paper_scale="unknown", size_knobs={"M": M, "D": D})
    cfg = ledger.config(bilinear.Config(m=M, d=D))   # the control's change applied
    fit = ledger.precondition("fit", "the training facts are fitted",
                              train_loss / log_m, below=0.05, print_tol=0.01)
    ledger.check("reverse-at-log-m", "the held-out reverse loss stays at log m",
                 reverse_loss / log_m, above=0.9, below=1.1, print_tol=0.02,
                 kind="paper", source="Theorem 3", paper="stays near log m (no number)",
                 negative=True, broken_by=("reverse_in_training",), requires=("fit",))
    ledger.summary()

Every claim says what it is (``kind``, :data:`KINDS`): ``"paper"``, a result the paper
states (``source`` names its theorem, figure or table; ``paper`` says what it states;
with ``paper_value`` and ``factor``, the paper's number in the units of ``values``);
``"derivation"``, the book's own theorem against its own measurement; ``"ours"``, a
finding beyond the papers; ``"check"``, code or stored-run consistency. Facts true by
construction go through :meth:`Ledger.sanity` instead (kind ``identity``). Only a paper
claim has a verdict about the paper, and it is computed (:func:`verdict_of`), never
passed: *in size* when every seed is within the factor of the paper's number, *in
direction* when the test holds but the paper gives no number or ours is outside the
factor, *not reproduced* for a claim that states (``contradicts=True``) that the
paper's statement fails at our scale.

The test of a claim is a bound on every seed's value (``above``, ``below`` or both). Its
*margin* is the smallest distance by which any seed clears a bound (negative when a seed
does not): the claim holds when the margin is positive. The printed tolerance
``print_tol`` (what nbval lets a re-run move, see :mod:`revlib.report`) must be smaller
than the margin, so that a number nbval accepts cannot flip the verdict; the test suite
checks this on every stored ledger.

Controls are cheap runs of the same notebook (its ``CONTROL`` parameter) in which the
mechanism is removed or the answer is given. A claim names the controls under which its
test must fail (``broken_by``). Outcomes, per claim and run:

- default run (``CONTROL = "none"``): the claim must hold;
- under a control the claim names: the claim must fail (the control broke it);
- under another control: recorded, not required either way;
- a ``requires`` precondition that did not hold: the claim is *untested*
  ("not fitted at this budget"), neither held nor failed.

In the default mode a required outcome that does not happen raises ``AssertionError`` at
the claim (after printing its line). With ``REVLIB_CLAIMS=record``
(``scripts/check-claims``) nothing raises and the ledger is written as JSON to
``REVLIB_LEDGER`` when set. :meth:`Ledger.identity` shows a fact that holds by
construction: printed and asserted as a sanity check, marked as an illustration, never
counted as evidence.

The ledger is stored in the notebook itself: :meth:`Ledger.summary` displays a table
whose output metadata (``revlib_ledger``, which nbval does not compare) carries every
record; the book's scorecard page (``book/claims.md``) is built from those.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from revlib import report
from revlib.config import CONTROL_KINDS, Control

MODES = ("assert", "record")
KINDS = (
    "paper",
    "derivation",
    "ours",
    "check",
)  # claims; records also: identity, precondition
PAPER_VERDICTS = ("in size", "in direction", "not reproduced", "not run")
# a science control removes the mechanism or gives the answer away; a plumbing control
# changes what is read, swapped or compared (a stored file, step 0, no training)
# the key of Ledger(quick=...) that lists the claims whose effect a quick-size default
# run does not show: CI does not count their controls there; they are checked at full
# size
FULL_SIZE_ONLY = "full_size_only"
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def mode() -> str:
    """``REVLIB_CLAIMS``: ``assert`` (default) or ``record``."""
    value = os.environ.get("REVLIB_CLAIMS", "assert")
    if value not in MODES:
        raise ValueError(f"REVLIB_CLAIMS must be one of {MODES}, got {value!r}")
    return value


UNMET = (
    "not fitted at this budget"  # why a claim is untested, unless its precondition says
)


@dataclass
class Record:
    """One checked claim, precondition or identity, as stored in the ledger."""

    id: str
    kind: str  # one of KINDS, "precondition" or "identity"
    sentence: str
    values: list[float]  # one per seed (or a single value)
    above: float | None
    below: float | None
    tol: float
    margin: float  # > 0: holds; <= 0: fails; nan: untested
    outcome: str  # "holds", "fails" or "untested"
    expected: str  # "holds", "fails" (under one of its controls) or "any"
    paper: str = ""  # what the paper states (paper claims)
    verdict: str = ""  # verdict_of(): about the paper for paper claims, else the kind
    source: str = ""  # the paper's theorem, figure or table (paper claims)
    paper_value: float | None = None  # the paper's number, in the units of values
    factor: float | None = None  # "in size": every seed within this factor of it
    contradicts: bool = False  # the claim states that the paper's result fails here
    ratio: float | None = None  # median of values / paper_value
    science: bool = False  # one of its controls is a science control
    negative: bool = False  # it states that something is not learnt or does not happen
    controls: list[str] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    cell: str = ""  # HTML anchor of the printed line
    unmet: str = ""  # why untested (a claim), or the reason a precondition gives


def _as_values(values) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("values must hold at least one number")
    return arr


def margin_of(values, above: float | None = None, below: float | None = None) -> float:
    """Smallest distance by which every value clears its bounds (negative if one does
    not; ``-inf`` for a NaN value)."""
    if above is None and below is None:
        raise ValueError("a test needs a bound: give above=, below= or both")
    if above is not None and below is not None and not above < below:
        raise ValueError(
            f"above must be smaller than below, got above={above}, below={below}"
        )
    arr = _as_values(values)
    if np.isnan(arr).any():
        return -math.inf
    gaps = []
    if above is not None:
        gaps.append(arr - above)
    if below is not None:
        gaps.append(below - arr)
    return float(np.min(np.concatenate(gaps)))


def _test_text(above, below) -> str:
    if above is not None and below is not None:
        return f"each in ({above:g}, {below:g})"
    return f"each > {above:g}" if above is not None else f"each < {below:g}"


def is_claim(rec) -> bool:
    """Whether a record (a :class:`Record` or its dict) is a claim (not an identity or a
    precondition)."""
    kind = rec["kind"] if isinstance(rec, dict) else rec.kind
    return kind in KINDS


def verdict_of(rec) -> str:
    """The verdict of a record (a :class:`Record` or its dict): for a paper claim that
    held, ``"not reproduced"`` (it states the paper's result fails here), ``"in size"``
    (every seed within ``factor`` of ``paper_value``) or ``"in direction"``;
    ``"untested"`` or ``"fails"`` when the test did not hold; for other claims, their
    kind."""
    r = rec if isinstance(rec, dict) else asdict(rec)
    if r["kind"] in ("identity", "precondition"):
        return r["kind"]
    if r["outcome"] != "holds":
        return r["outcome"]
    if r["kind"] != "paper":
        return r["kind"]
    if r.get("contradicts"):
        return "not reproduced"
    p, f = r.get("paper_value"), r.get("factor")
    if p is None or f is None:
        return "in direction"
    vals = np.asarray(r["values"], dtype=float)
    return (
        "in size" if bool(np.all((vals >= p / f) & (vals <= p * f))) else "in direction"
    )


class Ledger:
    """The claims of one notebook run. ``notebook``: its path under ``notebooks/``
    without suffix (``"reversal/bilinear"``); ``control``: ``"none"`` or a key of
    ``controls`` (name -> ``(kind, what the control removes, gives away or swaps)``,
    kind ``"science"`` or ``"plumbing"``, :data:`CONTROL_KINDS`);
    ``scale``/``paper_scale``: the sizes of this run and of the paper's (``"unknown"``
    where not known); ``size_knobs``: the ``parameters``-cell names that
    ``scripts/check-claims --scale K`` multiplies, with their values in this run;
    ``quick``: parameter values that make the control runs of CI cheaper
    (``check-claims --quick``) while giving the same verdicts; a key that names a
    control maps to values for that control's run only (e.g.
    ``{"N_SEEDS": 1, "swap_stored": {"STEPS": 20}}``: a control that only reads stored
    runs need not train the live ones at full length, since none of the claims it must
    break reads them); ``quick["full_size_only"]``: the ids of claims whose effect a
    quick-size default run does not show (CI's quick runs then prove nothing about their
    controls; they are checked at full size)."""

    def __init__(
        self,
        notebook: str,
        *,
        control: str = "none",
        controls: dict[str, tuple[str, str]] | None = None,
        scale: str = "",
        paper_scale: str = "unknown",
        size_knobs: dict[str, float] | None = None,
        quick: dict[str, object] | None = None,
    ):
        if not re.fullmatch(r"[a-z_]+/[a-z0-9_]+", notebook or ""):
            raise ValueError(f"notebook must look like 'part/name', got {notebook!r}")
        self.controls, self.control_kinds = {}, {}
        for name, spec in (controls or {}).items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name == "none":
                raise ValueError(
                    "control names must be lower_snake_case and not 'none', "
                    f"got {name!r}"
                )
            if not (
                isinstance(spec, tuple) and len(spec) == 2 and spec[0] in CONTROL_KINDS
            ):
                raise ValueError(
                    f"controls[{name!r}] must be (kind, what it changes) with kind "
                    f"one of {CONTROL_KINDS}, got {spec!r}"
                )
            self.control_kinds[name], self.controls[name] = spec
        if control != "none" and control not in self.controls:
            raise ValueError(
                f"CONTROL must be 'none' or one of {sorted(self.controls)}, "
                f"got {control!r}"
            )
        self.notebook, self.control = notebook, control
        self.scale, self.paper_scale = scale, paper_scale
        self.size_knobs = dict(size_knobs or {})
        self.quick = dict(quick or {})
        for name, value in self.quick.items():
            if name == FULL_SIZE_ONLY:
                if not (
                    isinstance(value, (list, tuple))
                    and all(_ID.fullmatch(str(v)) for v in value)
                ):
                    raise ValueError(
                        f"quick[{FULL_SIZE_ONLY!r}] must be a list of claim "
                        f"ids, got {value!r}"
                    )
                self.quick[name] = list(value)
                continue
            if isinstance(value, dict) and name not in self.controls:
                raise ValueError(
                    f"quick[{name!r}] holds a control's values, but {name!r} is "
                    f"not one of the controls {sorted(self.controls)}"
                )
        self.records: dict[str, Record] = {}
        self.mode = mode()
        self._changes: dict[str, dict[str, object]] = {}
        self._applied: set[str] = set()
        self._swaps: set[str] = set()

    @classmethod
    def of(
        cls,
        experiment,
        control: str = "none",
        *,
        scale: str = "",
        paper_scale: str = "unknown",
        size_knobs: dict[str, float] | None = None,
    ) -> "Ledger":
        """The ledger of a notebook whose experiment module declares its controls
        (``revlib.experiments.<name>``: ``NOTEBOOK``, ``CONTROLS``, a tuple of
        :class:`revlib.config.Control`, and ``QUICK``, the quick sizes of CI, read from
        the source by ``scripts/check-claims``). ``size_knobs``: the ``parameters``-cell
        values that ``check-claims --scale`` multiplies (their names are the module's
        ``SIZE_KNOBS``)."""
        for name in ("NOTEBOOK", "CONTROLS"):
            if not hasattr(experiment, name):
                raise ValueError(
                    f"{getattr(experiment, '__name__', experiment)!r} declares no "
                    f"{name}: an experiment module names its notebook and its controls"
                )
        knobs = dict(size_knobs or {})
        declared = set(getattr(experiment, "SIZE_KNOBS", ()))
        if set(knobs) != declared:
            raise ValueError(
                f"size_knobs must give the module's SIZE_KNOBS {sorted(declared)}, "
                f"got {sorted(knobs)}"
            )
        led = cls(
            experiment.NOTEBOOK,
            control=control,
            controls={c.name: (c.kind, c.sentence) for c in experiment.CONTROLS},
            scale=scale,
            paper_scale=paper_scale,
            size_knobs=knobs,
            quick=dict(getattr(experiment, "QUICK", {})),
        )
        led._changes = {c.name: dict(c.change) for c in experiment.CONTROLS}
        led._swaps = {c.name for c in experiment.CONTROLS if c.swaps}
        return led

    def config(self, cfg):
        """``cfg`` with the running control's ``Config`` changes applied (unchanged
        in the default run): ``cfg = ledger.config(module.Config(...))``. A notebook
        with several Configs passes each: a change applies to those that have its
        field, and :meth:`summary` fails if one found no Config to apply to."""
        import dataclasses

        trains = getattr(cfg, "trains", True)  # no_training reaches trained Configs
        change = {
            k: v
            for k, v in self._changes.get(self.control, {}).items()
            if hasattr(cfg, k) and (k != "no_training" or trains)
        }
        self._applied.update(change)
        # a callable value is the field's value for this Config (a control that treats
        # two models differently, e.g. each gets the other's norm)
        change = {k: v(cfg) if callable(v) else v for k, v in change.items()}
        return dataclasses.replace(cfg, **change) if change else cfg

    def swap(self, a, b):
        """``(a, b)``, or ``(b, a)`` under a control declared with ``swaps=True``: the
        two things it reads each as the other (``one, two = ledger.swap(x, y)``)."""
        return (b, a) if self.control in self._swaps else (a, b)

    def _check_applied(self) -> None:
        unused = set(self._changes.get(self.control, {})) - self._applied
        if unused:
            raise ValueError(
                f"control {self.control!r} sets {sorted(unused)}, but no Config passed "
                "to ledger.config has such a field: the control changed nothing"
            )

    def skips(self, skip_under: tuple[str, ...]) -> bool:
        """Whether a record stated with ``skip_under`` is left out of this run (it does
        not apply under the running control; ``"controls"`` names every control)."""
        unknown = set(skip_under) - set(self.controls) - {"controls"}
        if unknown:
            raise ValueError(
                f"skip_under names {sorted(unknown)}, not controls of "
                f"{self.notebook} ({sorted(self.controls)})"
            )
        if self.control == "none":
            return False
        return "controls" in skip_under or self.control in skip_under

    # -- stating -----------------------------------------------------------------------
    def _record(self, rec: Record, label: str) -> Record:
        if not _ID.fullmatch(rec.id):
            raise ValueError(
                "claim id must be lower-case letters, digits, '-' or '_', "
                f"got {rec.id!r}"
            )
        if rec.id in self.records:
            raise ValueError(f"claim id {rec.id!r} is used twice in {self.notebook}")
        rec.cell = f"claim-{self.notebook.split('/')[-1]}-{rec.id}"
        self.records[rec.id] = rec
        self._show(rec, rec.kind if label == "claim" else label)
        return rec

    def _line(self, rec: Record, label: str) -> str:
        values = report.approx(
            rec.values if len(rec.values) > 1 else rec.values[0], rec.tol
        )
        test = _test_text(rec.above, rec.below)
        if rec.outcome == "untested":
            return (
                f"[{label} {rec.id}] {rec.sentence}: {values}; untested ({rec.unmet})"
            )
        margin = (
            report.approx(rec.margin, rec.tol) if math.isfinite(rec.margin) else "-inf"
        )
        verdict = rec.outcome
        if self.control != "none":
            verdict += f" under control {self.control}" + (
                " (as it must)"
                if rec.expected == "fails" and rec.outcome == "fails"
                else " (THE CONTROL DID NOT BREAK IT)"
                if rec.expected == "fails"
                else ""
            )
        line = (
            f"[{label} {rec.id}] {rec.sentence}: {values}; "
            f"test {test}, margin {margin}: {verdict}"
        )
        if rec.kind == "paper" and rec.outcome == "holds" and self.control == "none":
            about = f"{rec.source}: {rec.paper}"
            if rec.paper_value is not None:
                ratio = report.approx(rec.ratio, rec.tol / rec.paper_value)
                about += f"; the paper's {rec.paper_value:g}, ours/paper {ratio}"
                if rec.factor is not None:
                    about += f" (in size within x{rec.factor:g})"
            line += f"; paper claim ({about}): {rec.verdict}"
        return line

    def _show(self, rec: Record, label: str) -> None:
        line = self._line(rec, label)
        import html

        if not _display(
            {
                "text/plain": line,
                "text/html": f'<pre class="revlib-claim revlib-{rec.outcome}" '
                f'id="{rec.cell}">{html.escape(line)}</pre>',
            }
        ):
            print(line)

    def _judge(
        self, kind, id, sentence, values, above, below, tol, controls, requires, **about
    ) -> Record:
        report._parse_tol(tol)
        if isinstance(tol, str):
            raise ValueError(
                "tol must be an absolute number here (the margin is compared with it)"
            )
        for c in controls:
            if c not in self.controls:
                raise ValueError(
                    f"claim {id!r} names control {c!r}; "
                    f"declared: {sorted(self.controls)}"
                )
        arr = _as_values(values)
        margin = margin_of(arr, above, below)
        unmet = ""
        if requires and not all(self.held(r) for r in requires):
            outcome, margin = "untested", math.nan
            unmet = "; ".join(
                f"{r} did not hold: {self.records[r].unmet or UNMET}"
                for r in requires
                if not self.held(r)
            )
        else:
            outcome = "holds" if margin > 0 else "fails"
        if self.control == "none":
            expected = "holds"
        elif self.control in controls:
            expected = "fails"
        else:
            expected = "any"
        rec = Record(
            id=id,
            kind=kind,
            sentence=sentence,
            values=[float(v) for v in arr],
            above=above,
            below=below,
            tol=float(tol),
            margin=margin,
            outcome=outcome,
            expected=expected,
            controls=list(controls),
            requires=list(requires),
            unmet=unmet,
            science=any(self.control_kinds[c] == "science" for c in controls),
            **about,
        )
        if rec.paper_value is not None and outcome != "untested":
            rec.ratio = float(np.median(arr) / rec.paper_value)
        rec.verdict = verdict_of(rec)
        return rec

    def check(
        self,
        id: str,
        sentence: str,
        values,
        *,
        kind: str,
        above: float | None = None,
        below: float | None = None,
        print_tol: float,
        broken_by: tuple[str, ...] = (),
        requires: tuple[str, ...] = (),
        source: str = "",
        paper: str = "",
        paper_value: float | None = None,
        factor: float | None = None,
        contradicts: bool = False,
        negative: bool = False,
    ) -> None:
        """State a claim: every value must lie above ``above`` and/or below ``below``.
        ``kind``: one of :data:`KINDS` (no default: say what the claim is). A
        ``"paper"`` claim names its ``source`` (theorem, figure, table) and says what
        the paper states (``paper``); ``paper_value`` (> 0, in the units of ``values``)
        shows ours as a ratio to the paper's number, and ``factor`` (> 1) makes the
        verdict *in size* when every seed lies within the factor of it (leave ``factor``
        out where a seed lies within its tolerance of the factor's bounds: a re-run
        could flip that verdict, and the test suite refuses it); ``contradicts=True``:
        the claim states that the paper's result fails at our scale (verdict *not
        reproduced*). Other kinds take no paper fields (``source`` may name the book's
        own theorem for a derivation). ``print_tol``: the tolerance within which the
        printed values reproduce on another machine or seed (nbval compares them within
        it; it must stay below the margin). ``broken_by``: the controls under which the
        test must fail (at least one); ``requires``: ids of preconditions checked
        before.
        ``negative=True``: the claim states that something is *not* learnt or does not
        happen ("the reverse stays at log m"); one of ``broken_by`` must then be a
        science control in which the answer becomes learnable (the reverse facts
        trained, the probes given), so that the same test is seen to fail when
        learning happens. The outcome is in ``ledger.records[id]``; nothing is
        returned, so that a claim's cell prints only its line."""
        if kind not in KINDS:
            raise ValueError(
                f"kind must be one of {KINDS} (an identity goes through "
                f"Ledger.sanity), got {kind!r}"
            )
        tol, controls = print_tol, broken_by
        if not controls:
            raise ValueError(
                f"claim {id!r} names no control: "
                "an empirical claim needs one under which it fails"
            )
        if kind == "paper":
            if not source or not paper:
                raise ValueError(
                    f"paper claim {id!r} needs source= (its theorem, figure or "
                    "table) and paper= (what the paper states)"
                )
            if factor is not None and paper_value is None:
                raise ValueError(
                    f"paper claim {id!r}: factor needs the paper's number "
                    f"(paper_value), got factor={factor!r} alone"
                )
            if paper_value is not None:
                if not (math.isfinite(paper_value) and paper_value > 0):
                    raise ValueError(
                        f"paper_value must be a positive number, got {paper_value!r}"
                    )
                if factor is not None and not (math.isfinite(factor) and factor > 1):
                    raise ValueError(f"factor must be a number above 1, got {factor!r}")
                if contradicts:
                    raise ValueError(
                        f"claim {id!r}: contradicts=True states that the paper's "
                        "result fails; it takes no paper_value"
                    )
        elif paper or paper_value is not None or factor is not None or contradicts:
            raise ValueError(
                f"claim {id!r} is of kind {kind!r}: paper=, paper_value=, "
                "factor= and contradicts= belong to kind='paper' claims"
            )
        if negative and kind in ("paper", "ours"):
            learnable = [c for c in controls if self.control_kinds.get(c) == "science"]
            if not learnable:
                raise ValueError(
                    f"negative {kind} claim {id!r} names no science control "
                    f"(broken_by={tuple(controls)!r}): a claim that something is not "
                    "learnt needs a control in which the answer becomes learnable "
                    "and the same test fails"
                )
        rec = self._record(
            self._judge(
                kind,
                id,
                sentence,
                values,
                above,
                below,
                tol,
                controls,
                requires,
                source=str(source),
                paper=str(paper),
                paper_value=None if paper_value is None else float(paper_value),
                factor=None if factor is None else float(factor),
                contradicts=bool(contradicts),
                negative=bool(negative),
            ),
            "claim",
        )
        self._enforce(rec)

    def held(self, id: str) -> bool:
        """Whether the record ``id`` (a claim, precondition or identity) held;
        ``requires`` asks it of each precondition."""
        if id not in self.records:
            raise ValueError(
                f"{id!r} is named, but {self.notebook} has not checked yet a "
                "record of that id"
            )
        return self.records[id].outcome == "holds"

    def precondition(
        self,
        id: str,
        sentence: str,
        values,
        *,
        above: float | None = None,
        below: float | None = None,
        print_tol: float,
        unmet: str = "",
    ) -> bool:
        """A condition the claims after it need (the training facts are fitted).
        Reported apart from them: when it fails, the claims that require it read
        "untested" with ``unmet`` as the reason (default: "not fitted at this budget";
        e.g. "the model is not installed"); it never raises by itself (a stored output
        that said it held makes nbval catch the change)."""
        judged = self._judge(
            "precondition", id, sentence, values, above, below, print_tol, (), ()
        )
        judged.unmet = str(unmet)
        rec = self._record(judged, "precondition")
        rec.expected = "any"
        return rec.outcome == "holds"

    def sanity(
        self,
        id: str,
        sentence: str,
        values,
        *,
        above: float | None = None,
        below: float | None = None,
        print_tol: float,
        skip_under: tuple[str, ...] = (),
    ) -> bool:
        """A sanity check of the code: something true by construction (a structural
        zero, a parameter count), recorded as kind ``identity``, shown as an
        illustration and asserted, never counted as evidence. ``skip_under``: controls
        under which it is not true by construction and is not stated
        (``("controls",)``: every control)."""
        if self.skips(skip_under):
            return True
        rec = self._record(
            self._judge(
                "identity", id, sentence, values, above, below, print_tol, (), ()
            ),
            "identity",
        )
        rec.expected = "holds"
        if self.mode == "assert" and rec.outcome != "holds":
            raise AssertionError(
                f"identity {id!r} of {self.notebook} does not hold: {rec.values}"
            )
        return rec.outcome == "holds"

    def recheck(
        self,
        id: str,
        experiment,
        rows,
        *,
        metrics: tuple[str, ...],
        steps: int,
        seed: int,
        against: str = "seed",
        below: float,
        print_tol: float,
        skip_under: tuple[str, ...] = (),
        what: str = "the stored run",
    ) -> dict[str, tuple[float, float]]:
        """The one live re-check of a stored run: train the first ``steps`` steps of
        the stored configuration ``rows`` (the rows of one configuration in a
        :func:`revlib.records.load` frame with ``curves=True``) again, live, for
        ``seed`` (the stored seed 0 where ``seed`` is not stored), and state a claim of
        kind ``check``, broken by ``no_training``: for each of ``metrics`` at step
        ``steps``, the distance between the live value and the stored one beyond the
        stored spread (0 inside it) is below ``below``. ``against="seed"`` compares
        with that seed's stored curve (spread 0); ``"median"`` with the stored seeds'
        median, the spread their range (where another machine's kernels move a seed
        as a fresh seed would). The control in force is applied to the re-run's
        Config (:meth:`config`); under a control in ``skip_under`` (one that does not
        break the claim and would only cost time) nothing runs. Returns ``{metric:
        (live, stored)}`` for the prose to glue (empty when skipped)."""
        from revlib import records  # noqa: PLC0415  (records imports nothing of this)

        if against not in ("seed", "median"):
            raise ValueError(f"against must be 'seed' or 'median', got {against!r}")
        if self.skips(skip_under):
            print(
                f"live re-run skipped under control {self.control} (its claim names "
                "no_training)"
            )
            return {}
        stored = {int(s) for s in rows["seed"]}
        use = seed if seed in stored else min(stored)
        row = rows[rows["seed"] == use].iloc[0]
        cfg = self.config(
            records.config_of(row, steps=steps, eval_points=2, seed=use, n_seeds=1)
        )
        live = experiment.run(cfg)
        out, excess = {}, []
        ref_seed = use if against == "seed" else -1
        for name, got, ref, allowed in records.live_against_stored(
            rows, live, metrics, steps, ref_seed, 0.0
        ):
            print(
                f"step {steps}, {name}: live {report.approx(got, print_tol)}, stored "
                + (f"{ref:.3f}" if against == "seed" else f"median {ref:.3f}")
                + ("" if against == "seed" else f", range {allowed:.3f}")
            )
            out[name] = (got, ref)
            excess.append(max(0.0, abs(got - ref) - allowed))
        self.check(
            id,
            f"re-trained live, {what} (seed {use}) agrees with "
            + ("its stored curve" if against == "seed" else "the stored seeds")
            + f" at step {steps} within {below:g} "
            + ("" if against == "seed" else "beyond their range ")
            + f"({', '.join(metrics)})",
            excess,
            below=below,
            print_tol=print_tol,
            kind="check",
            broken_by=("no_training",),
        )
        return out

    def _enforce(self, rec: Record) -> None:
        if self.mode != "assert" or rec.outcome == "untested" or rec.expected == "any":
            return
        if rec.outcome != rec.expected:
            where = "" if self.control == "none" else f" under control {self.control!r}"
            raise AssertionError(
                f"claim {rec.id!r} of {self.notebook} {rec.outcome}{where}, "
                f"expected to {rec.expected.rstrip('s')}: values {rec.values}, "
                f"test {_test_text(rec.above, rec.below)}, margin {rec.margin:.4g}"
            )

    def glue(
        self,
        name: str,
        value,
        print_tol: float | None = None,
        digits: int | None = None,
    ) -> None:
        """Glue a number (or a short text) for the chapter's prose (the page writes
        ``{nb}`name```, which the book expands to myst-nb's ``{glue:text}`` of its own
        notebook), rounded like the printed lines: with ``print_tol``, to one decimal
        finer than it (nbval compares it within ``print_tol``); without, to ``digits``
        decimals (a number that must not move, e.g. read from a stored run). Arrays are
        glued as "a–b" (min to max), or as one number where both ends round alike
        (revlib's nbval plugin compares "x" with a re-run's "x–y" end by end); a string
        is glued as it is. Returns nothing, as
        :meth:`check` does: a glue ending a cell must not print its text as the cell's
        value, which nbval would compare exactly, without the tolerance."""
        tol = print_tol
        if isinstance(value, str):
            key = f"{self.notebook.split('/')[-1]}.{name}"
            prefix = "application/papermill.record/"
            meta = {"scrapbook": {"name": key, "mime_prefix": prefix}}
            _display({prefix + "text/plain": repr(value)}, meta)
            return
        if tol is None and digits is None:
            raise ValueError(
                "glue needs print_tol= (a measured number) or digits= (a fixed one)"
            )
        if digits is None:
            digits = report._digits_for(float(tol) / 10)
        arr = _as_values(value)
        fmt = lambda v: f"{v:.{digits}f}"
        lo, hi = fmt(arr.min()), fmt(arr.max())
        text = lo if lo == hi else f"{lo}–{hi}"
        key = f"{self.notebook.split('/')[-1]}.{name}"
        # hidden in the page as myst-nb's glue(display=False) is; pasted by {glue:text}
        prefix = "application/papermill.record/"
        meta = {"scrapbook": {"name": key, "mime_prefix": prefix}}
        if tol is not None:
            meta["revlib_tol"] = float(tol)
        _display({prefix + "text/plain": text}, meta)

    # -- the ledger --------------------------------------------------------------------
    def as_dict(self) -> dict:
        return {
            "notebook": self.notebook,
            "control": self.control,
            "controls": self.controls,
            "control_kinds": self.control_kinds,
            "scale": self.scale,
            "paper_scale": self.paper_scale,
            "size_knobs": self.size_knobs,
            "quick": self.quick,
            "records": [asdict(r) for r in self.records.values()],
        }

    def problems(self) -> list[str]:
        """Required outcomes that did not happen (empty when the run is as it must
        be)."""
        out = []
        for r in self.records.values():
            if r.expected != "any" and r.outcome not in ("untested", r.expected):
                out.append(f"{r.id}: {r.outcome}, expected to {r.expected.rstrip('s')}")
        return out

    def summary(self) -> None:
        """Print the ledger (one line per record) and store it in the notebook; with
        ``REVLIB_LEDGER`` set, also write it there as JSON (atomically)."""
        self._check_applied()
        counts = {
            k: sum(r.outcome == k for r in self.records.values() if is_claim(r))
            for k in ("holds", "fails", "untested")
        }
        n_id = sum(r.kind == "identity" for r in self.records.values())
        head = (
            f"ledger {self.notebook} (control: {self.control}): "
            f"{len(self.records)} records; "
            f"claims {counts['holds']} held, {counts['fails']} failed, "
            f"{counts['untested']} untested; "
            f"{n_id} identities (illustrations, not evidence)"
        )
        lines = [head] + [
            f"  {r.kind:12s} {r.id:28s} {r.outcome}" for r in self.records.values()
        ]
        text = "\n".join(lines)
        data = self.as_dict()
        # an untested claim's margin is NaN, which a kernel message cannot carry as JSON
        # (jupyter_client warns on stderr and sends "nan"): send "nan" itself
        if not _display({"text/plain": text}, {"revlib_ledger": _json_safe(data)}):
            print(text)
        target = os.environ.get("REVLIB_LEDGER")
        if target:
            write_json(Path(target), data)


def _json_safe(value):
    """``value`` with every NaN or infinite float written as its text ("nan", "inf",
    "-inf"), which JSON can carry; ``float()`` reads it back."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _display(bundle: dict, metadata: dict | None = None) -> bool:
    """Show a raw mime bundle in a running IPython kernel; False where there is none."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython ships with the notebooks' kernel
        return False
    if get_ipython() is None:
        return False
    display(bundle, raw=True, metadata=metadata or {})
    return True


def write_json(path: Path, data) -> None:
    """Write ``data`` (a ledger or a report) as JSON atomically, through
    :func:`revlib.records.write` with NaN allowed: an untested claim's margin is NaN."""
    from revlib import records

    records.write(path, data, allow_nan=True)


def ledger_of(notebook: dict | str | Path) -> dict | None:
    """The ledger stored in an executed notebook (a path or its JSON), or ``None``."""
    nb = (
        json.loads(Path(notebook).read_text())
        if isinstance(notebook, (str, Path))
        else notebook
    )
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            meta = out.get("metadata") or {}
            if "revlib_ledger" in meta:
                return meta["revlib_ledger"]
    return None


def parameters_of(source: str | Path) -> dict[str, object]:
    """The literal values of a notebook's ``parameters`` cell, read from its jupytext
    source (``notebooks/<part>/<name>.py``) without running it."""
    import ast

    lines, inside = [], False
    for line in Path(source).read_text().splitlines():
        if line.startswith("# %%"):
            if inside:
                break
            inside = '"parameters"' in line
            continue
        if inside:
            lines.append(line)
    if not inside and not lines:
        raise ValueError(f"{source}: no cell tagged 'parameters'")
    out = {}
    for node in ast.parse("\n".join(lines)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue  # not a literal: not a knob CI can set
            if isinstance(target, ast.Name):
                out[target.id] = value
            elif (  # N_A, N_B = 400, 240
                isinstance(target, ast.Tuple)
                and all(isinstance(e, ast.Name) for e in target.elts)
                and isinstance(value, tuple)
                and len(value) == len(target.elts)
            ):
                out.update({e.id: v for e, v in zip(target.elts, value)})
    return out


def declared(notebook: str | Path) -> dict | None:
    """A notebook's controls, quick sizes and size knobs as its experiment module
    (``revlib.experiments.<name>``) declares them, read from the source; ``None`` where
    the module declares no ``CONTROLS`` (the notebook then names them in its ledger,
    which :func:`ledger_of` reads from the executed outputs)."""
    import importlib

    path = Path(notebook)
    try:
        module = importlib.import_module(f"revlib.experiments.{path.stem}")
    except ModuleNotFoundError:
        return None
    if not hasattr(module, "CONTROLS"):
        return None
    params = parameters_of(path.with_suffix(".py"))
    missing = [k for k in getattr(module, "SIZE_KNOBS", ()) if k not in params]
    if missing:
        raise ValueError(
            f"{path.with_suffix('.py')}: SIZE_KNOBS {missing} are not literals of its "
            "parameters cell"
        )
    return {
        "notebook": module.NOTEBOOK,
        "controls": {c.name: c.sentence for c in module.CONTROLS},
        "control_kinds": {c.name: c.kind for c in module.CONTROLS},
        "quick": dict(getattr(module, "QUICK", {})),
        "size_knobs": {k: params[k] for k in getattr(module, "SIZE_KNOBS", ())},
    }
