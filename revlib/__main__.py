"""``python -m revlib run|sweep|figure ...``: see :mod:`revlib.cli`."""

from revlib.cli import main

raise SystemExit(main())
