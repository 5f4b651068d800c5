#!/usr/bin/env bash
# The compile-time profile of the dev configuration: a cold build (no ccache) in a fresh folder
# with Ninja, whose log records every translation unit's start and end; prints the total and the
# 20 slowest units (what docs/reliability.md lists). Ninja is Debian's ninja-build (installed by
# scripts/install_deps.sh build).
# Usage: bash scripts/compile_profile.sh [BUILD_DIR] [JOBS]   (default /tmp/kf-compile-profile, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-/tmp/kf-compile-profile}"
jobs="${2:-2}"
command -v ninja >/dev/null || { echo "compile_profile.sh: ninja not found (apt install ninja-build)" >&2; exit 1; }
rm -rf "$dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DKF_WERROR=ON -DKF_BUILD_BENCH=ON \
  -DKF_CCACHE=OFF >/dev/null
start=$(date +%s)
cmake --build "$dir" -j "$jobs" >/dev/null
end=$(date +%s)
# .ninja_log: start ms, end ms, mtime, output, hash (one line per output built).
awk -v wall=$((end - start)) -v njobs="$jobs" '
  NR > 1 && $4 ~ /\.o$/ { t = ($2 - $1) / 1000; total += t; n++; line[n] = sprintf("%8.1f s  %s", t, $4) ; sec[n] = t }
  END {
    printf "dev build, cold, %d jobs: %d s wall, %.0f s of compiler time over %d objects\n", njobs, wall, total, n
    for (i = 1; i <= n; i++) idx[i] = i
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (sec[idx[j]] > sec[idx[i]]) { k = idx[i]; idx[i] = idx[j]; idx[j] = k }
    for (i = 1; i <= 20 && i <= n; i++) print line[idx[i]]
  }' "$dir/.ninja_log"
