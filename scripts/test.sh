#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, checks formatting,
# builds and runs every test (dev preset: -Werror), fuzzes each parser for 30 s (scripts/fuzz.sh),
# builds the Python package into .venv and runs
# its tests (pytest), compiles the library once more with AVX-512 enabled
# (-march=x86-64-v4 -Werror, compile only: an AVX-512-only breakage shows on any machine), then
# builds and runs every test again under AddressSanitizer + UndefinedBehaviorSanitizer.
#   KF_SKIP_ASAN=1   skip the sanitizer pass (local iteration only; CI runs it)
#   KF_SKIP_SLOW=1   skip tests labelled slow
#   KF_SKIP_FUZZ=1   skip the fuzzing step (scripts/fuzz.sh 30: ~5 min with its build)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install_deps.sh build web python

echo "== format check (clang-format, .clang-format) =="
bash scripts/check_format.sh

ctest_args=(--output-on-failure -j"$jobs")
[ "${KF_SKIP_SLOW:-0}" = 1 ] && ctest_args+=(-LE slow)

echo "== dev build: warnings as errors =="
cmake --preset dev >/dev/null
cmake --build --preset dev -j"$jobs"
ctest --preset dev "${ctest_args[@]}"

if [ "${KF_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzzing: each target's seed corpus replayed, then 30 s of fuzzing (clang, ASan+UBSan) =="
  bash scripts/fuzz.sh 30
fi

echo "== python package: pip install into .venv (build/python), pytest python/tests =="
bash scripts/test_python.sh

echo "== AVX-512 compile check: the library with -march=x86-64-v4, warnings as errors =="
cmake --preset isa-v4 >/dev/null
cmake --build --preset isa-v4 -j"$jobs"

if [ "${KF_SKIP_ASAN:-0}" != 1 ]; then
  echo "== asan build: AddressSanitizer + UndefinedBehaviorSanitizer =="
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  ctest --preset asan "${ctest_args[@]}"
fi
