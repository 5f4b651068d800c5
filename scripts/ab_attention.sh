#!/usr/bin/env bash
# A/B timing of one bench_attention benchmark under two environments, alternating runs (this
# machine's speed drifts by 10–30% over minutes, so only side-by-side pairs compare). Each run
# takes the minimum of 5 repetitions; the summary gives both medians and the median B/A ratio.
#
#   scripts/ab_attention.sh FILTER PAIRS "ENV_A" "ENV_B"
#   scripts/ab_attention.sh 'heads_fwd_bwd/1024/0' 5 KF_TILE_KERNEL=0 KF_TILE_KERNEL=1
#
# Needs the release build: cmake --preset release && cmake --build --preset release
set -euo pipefail
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  usage
  exit 0
fi
if [[ $# -ne 4 ]]; then
  echo "ab_attention.sh: expected 4 arguments, got $#" >&2
  usage >&2
  exit 2
fi
filter=$1 pairs=$2 env_a=$3 env_b=$4
bench="$(cd "$(dirname "$0")/.." && pwd)/build/release/bench/bench_attention"
[[ -x $bench ]] || { echo "ab_attention.sh: $bench not built (cmake --build --preset release)" >&2; exit 1; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "ab_attention.sh: PAIRS must be a positive integer, got '$pairs'" >&2; exit 2; }
run() {
  env "$1" "$bench" --benchmark_filter="$filter" --benchmark_min_time=0.3 \
    --benchmark_repetitions=5 2>/dev/null | grep -E '^BM_' | grep -v -E '_(mean|median|stddev|cv) ' |
    awk '{print $2}' | sort -g | head -1
}
for ((i = 0; i < pairs; ++i)); do
  a=$(run "$env_a") b=$(run "$env_b")
  [[ -n $a && -n $b ]] || { echo "ab_attention.sh: no benchmark matched '$filter'" >&2; exit 1; }
  echo "$a $b"
done | /usr/bin/python3 -c '
import statistics as s, sys
p = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
for a, b in p: print(f"{a:10.2f} {b:10.2f}")
A, B, R = [a for a, _ in p], [b for _, b in p], [b / a for a, b in p]
print(f"A median {s.median(A):.2f}  B median {s.median(B):.2f}  "
      f"B/A median {s.median(R):.3f} ({min(R):.3f}-{max(R):.3f}), {len(p)} pairs")'
