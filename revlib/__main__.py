"""``python -m revlib run|sweep ...``: see :mod:`revlib.cli`."""

from revlib.cli import main

raise SystemExit(main())
