"""The ``claims-scorecard`` directive (filled in below)."""

from __future__ import annotations

from docutils.parsers.rst import Directive


class ClaimsScorecard(Directive):
    has_content = False

    def run(self):
        return []
