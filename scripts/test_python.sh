#!/usr/bin/env bash
# Builds the Python package and runs its tests: a virtual environment .venv on Debian's python3
# that sees Debian's numpy, scikit-learn, statsmodels and PyTorch (--system-site-packages),
# `pip install --no-build-isolation .` (the extension built in build/dev from the dev build's
# library objects when that build exists; otherwise CMake in build/python: only the extension and
# the library sources it needs, incremental on a second run), then pytest on python/tests. Nothing is
# downloaded (--no-index). Run scripts/install_deps.sh python first (scripts/test.sh does).
#   KF_SKIP_SLOW=1   skip tests marked slow
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's interpreter by path: the python3 first on PATH may be another one without numpy.
if [ ! -x .venv/bin/python ]; then
  echo "test_python.sh: creating .venv (/usr/bin/python3 -m venv --system-site-packages)"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import numpy" 2>/dev/null; then
  echo "test_python.sh: .venv does not see Debian's numpy; remove .venv and run again" >&2
  exit 1
fi
# The dev build (cmake --preset dev) builds the extension from its own library objects: when it
# is there, pip takes the extension from it instead of compiling the library once more.
if [ -z "${KF_PYTHON_CMAKE_BUILD:-}" ] && [ -d build/dev/python ]; then
  export KF_PYTHON_CMAKE_BUILD=build/dev
  echo "test_python.sh: the extension from build/dev (the dev build's library objects)"
fi
KF_BUILD_JOBS="${KF_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}" \
  .venv/bin/pip install --no-build-isolation --no-index --disable-pip-version-check -q .

pytest_args=(-q python/tests)
[ "${KF_SKIP_SLOW:-0}" = 1 ] && pytest_args+=(-m "not slow")
# Run from the repository root: pytest.ini options come from pyproject.toml; the installed
# package is imported (python/ is not on the path).
.venv/bin/python -m pytest "${pytest_args[@]}"
