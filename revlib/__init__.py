"""revlib: the helper library of the executable book on the reversal curse.

Every notebook starts with :func:`revlib.repro.setup` and then calls one
``revlib.experiments.<chapter>.run(Config(...))``; see CONTRIBUTING.md (the layers, a
chapter, a claim, stored runs, tolerances).
"""

__version__ = "0.1.0"

from revlib import repro  # noqa: F401  (the one call every notebook makes first)
