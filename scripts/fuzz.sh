#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang++ -fsanitize=fuzzer,address,undefined, with the
# library compiled into them under the same instrumentation; build dir build/fuzz) and runs each
# one: first a replay of its checked-in seed corpus fuzz/corpus/<target>/ (every file once), then
# SECONDS of fuzzing from it (default 30), new inputs kept in build/fuzz/corpus/<target>/.
# Exits non-zero at the first finding; the input that caused it is left in
# build/fuzz/findings/<target>/. One summary line per target: executions, coverage, findings.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: npy csv safetensors tokenizer request (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(npy csv safetensors tokenizer request)
cxx=${KF_FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (bash scripts/install_deps.sh build)" >&2; exit 1; }

cmake -S fuzz -B build/fuzz -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$(nproc 2>/dev/null || echo 2)" --target $(printf 'fuzz_%s ' "${targets[@]}")

# OpenMP's and OpenBLAS's thread pools live until exit: their allocations are not leaks.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OMP_NUM_THREADS=1
status=0
for t in "${targets[@]}"; do
  exe=build/fuzz/fuzz_$t
  seeds=fuzz/corpus/$t
  work=build/fuzz/corpus/$t
  findings=build/fuzz/findings/$t
  log=build/fuzz/$t.log
  mkdir -p "$work" "$findings"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  # Memory: a file that claims a huge shape must be refused before it is allocated, so a
  # malloc of more than 512 MiB is a finding too.
  # The explorer's API trains attention heads on request (seconds under ASan at -O1, more on a
  # loaded machine): its per-input limit is 120 s, the readers' 20 s.
  timeout=20
  [ "$t" = request ] && timeout=120
  opts=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=$timeout -max_len=65536
        -artifact_prefix="$findings/" -print_final_stats=1 "${dict[@]}")
  echo "== fuzz_$t: replay of $seeds ($(ls "$seeds" | wc -l) files) =="
  if ! "$exe" "${opts[@]}" -runs=0 "$seeds" >"$log.replay" 2>&1; then
    tail -40 "$log.replay"
    echo "fuzz_$t: the seed corpus fails (above)" >&2
    exit 1
  fi
  echo "== fuzz_$t: ${secs} s =="
  if ! "$exe" "${opts[@]}" -max_total_time="$secs" "$work" "$seeds" >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz_$t: FINDING (input in $findings/)" >&2
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  corp=$(ls "$work" | wc -l)
  # Findings are crashes, timeouts, out-of-memory and leaks; libFuzzer also keeps inputs slower
  # than 10 s (slow-unit-*: under ASan on a loaded machine the API's larger requests take that),
  # counted apart.
  nfind=$(ls "$findings" | grep -cv '^slow-unit-' || true)
  nslow=$(ls "$findings" | grep -c '^slow-unit-' || true)
  echo "fuzz_$t: ${secs} s, ${execs} executions, coverage ${cov} edges (${ft} features)," \
       "corpus ${corp} inputs, findings ${nfind}, slow inputs kept ${nslow}"
  [ "$status" = 0 ] || exit 1
done
