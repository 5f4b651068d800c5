#!/usr/bin/env bash
# A/B timing of one benchmark built two ways (two presets, e.g. the portable release against the
# -march=native opt-in, or two commits: a build folder of another worktree), alternating runs:
# this machine's speed drifts by 10-30% over minutes, so only side-by-side pairs compare. Each run
# takes the minimum of 3 repetitions; the summary gives both medians and the median B/A ratio
# (B/A < 1: B is faster). A or B is a preset name (build/NAME) or a build folder (a path with /).
#
#   scripts/ab_builds.sh BENCH FILTER PAIRS A B
#   scripts/ab_builds.sh bench_attention 'heads_forward/1024/0' 5 release native
#   scripts/ab_builds.sh bench_smooth 'gaussian' 5 ../base/build/release release   # two commits
#
# Needs both builds: cmake --preset P && cmake --build --preset P --target BENCH
set -euo pipefail
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  usage
  exit 0
fi
if [[ $# -ne 5 ]]; then
  echo "ab_builds.sh: expected 5 arguments, got $#" >&2
  usage >&2
  exit 2
fi
bench=$1 filter=$2 pairs=$3 root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir() { if [[ $1 == */* ]]; then echo "$1"; else echo "$root/build/$1"; fi; }
bin_a="$(build_dir "$4")/bench/$bench" bin_b="$(build_dir "$5")/bench/$bench"
for b in "$bin_a" "$bin_b"; do
  [[ -x $b ]] || { echo "ab_builds.sh: $b not built" >&2; exit 1; }
done
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "ab_builds.sh: PAIRS must be a positive integer, got '$pairs'" >&2; exit 2; }
run() {
  "$1" --benchmark_filter="$filter" --benchmark_min_time=0.2 --benchmark_repetitions=3 2>/dev/null |
    grep -E '^BM_' | grep -v -E '_(mean|median|stddev|cv) ' | awk '{print $2}' | sort -g | head -1
}
for ((i = 0; i < pairs; ++i)); do
  a=$(run "$bin_a") b=$(run "$bin_b")
  [[ -n $a && -n $b ]] || { echo "ab_builds.sh: no benchmark matched '$filter'" >&2; exit 1; }
  echo "$a $b"
done | /usr/bin/python3 -c '
import statistics as s, sys
p = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
A, B, R = [a for a, _ in p], [b for _, b in p], [b / a for a, b in p]
print(f"A median {s.median(A):.2f}  B median {s.median(B):.2f}  "
      f"B/A median {s.median(R):.3f} ({min(R):.3f}-{max(R):.3f}), {len(p)} pairs")'
