#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, checks formatting,
# builds and runs every test (dev preset: -Werror), fuzzes each parser for 30 s (scripts/fuzz.sh),
# builds the Python package into .venv (the extension from the dev build's library objects) and
# runs its tests (pytest), compiles the library sources whose preprocessed text -march=x86-64-v4
# changes once more with AVX-512 enabled (-Werror, compile only, scripts/isa_v4_check.py: an
# AVX-512-only breakage shows on any machine), then
# builds and runs every test again under AddressSanitizer + UndefinedBehaviorSanitizer.
#   KF_SKIP_ASAN=1   skip the sanitizer pass (local iteration only; CI runs it)
#   KF_SKIP_SLOW=1   skip tests labelled slow
#   KF_SKIP_FUZZ=1   skip the fuzzing step (scripts/fuzz.sh 30: ~5 min with its build)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# Each step's wall time, printed as the next one starts and at the end (CI's budget: ~35 min).
step_name="" step_start=$SECONDS
step() {
  [ -n "$step_name" ] && echo "-- $step_name: $((SECONDS - step_start)) s (total $SECONDS s)"
  step_name="$1" step_start=$SECONDS
  [ -n "$1" ] && echo "== $1 =="
  return 0
}

step "install what is missing (scripts/install_deps.sh build web python)"
bash scripts/install_deps.sh build web python

# ccache: one cache outside the work tree, shared by every build below and by later runs and
# clones (scripts/ccache_env.sh); its hit rate is printed at the end.
. scripts/ccache_env.sh
command -v ccache >/dev/null && ccache -z >/dev/null

step "format check (clang-format, .clang-format)"
bash scripts/check_format.sh
step "stale paths: every repository path named in docs and comments exists (scripts/check_paths.py)"
/usr/bin/python3 scripts/check_paths.py
step "layers: no include goes up a layer (scripts/check_layers.py, docs/architecture.md)"
/usr/bin/python3 scripts/check_layers.py

ctest_args=(--output-on-failure -j"$jobs")
# ctest with its output kept, then its ten slowest tests (what to make cheaper first).
run_ctest() {
  local preset=$1 log="build/$1/ctest.log"
  ctest --preset "$preset" "${ctest_args[@]}" | tee "$log"
  echo "-- the ten slowest $preset tests:"
  # (awk reads all of sort's output: `head` would close the pipe early, and under pipefail
  # sort's SIGPIPE would end the script)
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*Passed +([0-9.]+) sec$/\2 s  \1/p' "$log" |
    sort -rn | awk 'NR <= 10 { print "   " $0 }'
}
[ "${KF_SKIP_SLOW:-0}" = 1 ] && ctest_args+=(-LE slow)

step "dev build: warnings as errors"
cmake --preset dev >/dev/null
cmake --build --preset dev -j"$jobs"
step "dev tests (ctest)"
run_ctest dev

if [ "${KF_SKIP_FUZZ:-0}" != 1 ]; then
  step "fuzzing: each target's seed corpus replayed, then 30 s of fuzzing (clang, ASan+UBSan)"
  bash scripts/fuzz.sh 30
fi

step "python package: pip install into .venv (the extension from build/dev), pytest python/tests"
bash scripts/test_python.sh

step "AVX-512 compile check: the library sources -march=x86-64-v4 changes, warnings as errors"
/usr/bin/python3 scripts/isa_v4_check.py

if [ "${KF_SKIP_ASAN:-0}" != 1 ]; then
  step "asan build: AddressSanitizer + UndefinedBehaviorSanitizer"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  step "asan tests (ctest)"
  run_ctest asan
fi
step ""
if command -v ccache >/dev/null; then
  ccache -s | grep -Ei '^ *(hits|misses|cacheable calls|direct|preprocessed)|hit rate' | sed 's/^/ccache: /' || true
fi
