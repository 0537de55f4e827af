import os
import tempfile

# Figures written by tests go to a temporary folder, never into the tree.
os.environ.setdefault("REVLIB_FIGURES_DIR", tempfile.mkdtemp(prefix="revlib-figs-"))
