"""pytest plugin: nbval compares printed numbers within the tolerance the notebook
declares.

Registered as a ``pytest11`` entry point, so any ``pytest --nbval`` run in an
environment where revlib is installed uses it. nbval's own comparison stays in charge
(missing outputs, images, HTML, error cells); before it runs, each text output of a
re-executed cell that matches the stored one under :func:`revlib.report.compare` is
replaced by the stored text, so only real differences reach nbval's report. A mismatch
adds the reason (which number, by how much, against which tolerance) to nbval's failure
message.

A notebook saves its figures when it runs (:func:`revlib.plot.savefig`), so a re-run
under nbval would redraw the committed ``figures/`` from this machine's numbers. Unless
``REVLIB_FIGURES_DIR`` is set (``scripts/test`` sets it), the plugin points it at a
temporary folder for the session and removes that folder at the end: a hand-run
``pytest --nbval`` leaves the tree as it found it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from revlib import report

GLUE_PREFIX = "application/papermill.record/"  # myst-nb's mime prefix for hidden glue
_ONE = re.compile(report._NUM)  # a glued number
_RANGE = re.compile(rf"(?:{report._NUM})–(?:{report._NUM})")  # a glued array's ends


def _text_fields(output) -> list[tuple[str, dict, str]]:
    """(comparison key, container, field) for each text in one output, keyed as nbval
    does."""
    if output.get("output_type") == "stream":
        return [(output.get("name", "stdout"), output, "text")]
    data = output.get("data")
    if not isinstance(data, dict):
        return []
    return [
        (k, data, k) for k in data if k.startswith(("text/", GLUE_PREFIX + "text/"))
    ]


def _with_tol(text: str, output) -> str:
    """A glued number (:meth:`revlib.claims.Ledger.glue`) carries its tolerance in the
    output's metadata, not in its text: put it back for the comparison."""
    tol = (output.get("metadata") or {}).get("revlib_tol")
    return text if tol is None else f"[{text}] {report.MARK}{tol:g}"


def _align_ranges(stored: str, new: str) -> tuple[str, str]:
    """A glued array is one number where its ends round alike and "a–b" where they do
    not (:meth:`revlib.claims.Ledger.glue`), so a re-run may turn one into the other:
    write the single number as "x–x", so that both ends are compared."""
    one, two = _ONE.fullmatch, _RANGE.fullmatch
    if one(stored) and two(new):
        stored = f"{stored}–{stored}"
    elif one(new) and two(stored):
        new = f"{new}–{new}"
    return stored, new


def _install() -> None:
    from nbval import plugin

    if getattr(plugin.IPyNbCell.compare_outputs, "_revlib", False):
        return
    original = plugin.IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        reasons = []
        ref_by_key: dict[str, list] = {}
        for out in ref:
            for key, box, field in _text_fields(out):
                ref_by_key.setdefault(key, []).append((box[field], out))
        seen: dict[str, int] = {}
        for out in test:
            for key, box, field in _text_fields(out):
                k = seen.get(key, 0)
                seen[key] = k + 1
                if k < len(ref_by_key.get(key, [])):
                    stored, ref_out = ref_by_key[key][k]
                    old, now = stored, box[field]
                    if key.startswith(GLUE_PREFIX):
                        old, now = _align_ranges(old, now)
                    problems = report.compare(
                        self.sanitize(_with_tol(old, ref_out)),
                        self.sanitize(_with_tol(now, ref_out)),
                    )
                    if not problems:
                        box[field] = stored
                    else:
                        reasons += [f"{key}: {p}" for p in problems]
        ok = original(self, test, ref, skip_compare)
        if not ok and reasons:
            self.comparison_traceback.append(
                "revlib tolerance check:\n  " + "\n  ".join(reasons)
            )
        return ok

    compare_outputs._revlib = True
    plugin.IPyNbCell.compare_outputs = compare_outputs


FIGURES_ENV = "REVLIB_FIGURES_DIR"


def pytest_configure(config):
    if getattr(config.option, "nbval", False) or getattr(
        config.option, "nbval_lax", False
    ):
        _install()
        if not os.environ.get(FIGURES_ENV):
            # the kernels nbval starts inherit this process's environment
            config._revlib_figures = tempfile.mkdtemp(prefix="revlib-nbval-figures-")
            os.environ[FIGURES_ENV] = config._revlib_figures


def pytest_unconfigure(config):
    made = getattr(config, "_revlib_figures", None)
    if made is not None:
        if os.environ.get(FIGURES_ENV) == made:
            del os.environ[FIGURES_ENV]
        shutil.rmtree(made, ignore_errors=True)
        config._revlib_figures = None
