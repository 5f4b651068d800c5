#!/usr/bin/env bash
# The main job on built-in data, from a fresh machine: installs what is missing, builds the
# release configuration (quietly: the log is printed only if a step fails), runs `kf demo`
# (seed 001: Gaussian kernel regression, KNN and softmax attention side by side), reproduces its
# fit with `kf attend` on the .npy files it wrote, then writes the report (`kf report`: every
# seed's demonstration measured, the periodic experiment against seed 003's paper and a
# language model's attention, as an offline HTML page) and prints what it found and where.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build
log=build/demo.log
: >"$log"

# Runs a step with its output in the log; on failure prints the log's end and stops.
quietly() {
  local what=$1
  shift
  if ! "$@" >>"$log" 2>&1; then
    echo "demo: $what failed; the end of $log:" >&2
    tail -n 60 "$log" >&2
    exit 1
  fi
}

echo "kernelformer demo: installing what is missing and building kf (log: $log) ..."
quietly "installing the dependencies" bash scripts/install_deps.sh build
. scripts/ccache_env.sh
quietly "configuring the release build" cmake --preset release
quietly "building kf" cmake --build --preset release -j"$jobs" --target kf

kf=build/release/kf
out=build/demo
quietly "kf demo" "$kf" demo --out "$out"
h=$(awk 'BEGIN { printf "%.17g", 1 / sqrt(10) }')
quietly "kf attend" "$kf" attend -q "$out/queries.npy" -k "$out/keys.npy" -v "$out/values.npy" \
  --kernel gaussian --bandwidth "$h" -o "$out/attend.npy"
same="no"
cmp -s <(tail -c 4000 "$out/attend.npy") <(tail -c 4000 "$out/nw.npy") && same="yes"

echo "writing the report (about 2 minutes on 2 cores) ..."
summary=$("$kf" report --out build/report 2>>"$log") || {
  echo "demo: kf report failed; the end of $log:" >&2
  tail -n 60 "$log" >&2
  exit 1
}
echo
echo "$summary" | sed -n '/^Seed 00[012]/p'
echo "Seed 001 again, by the command line: kf attend reproduced kf demo's Gaussian fit bit for" \
  "bit: $same ($out/attend.npy; kf demo's table: $out/)"
echo
echo "$summary" | sed -n '/^Seed 003/,$p' | grep -v '^kf report: done\|^wrote \|^Open it'
echo
echo "Report:   $(pwd)/build/report/index.html  (offline; figures in build/report/figures)"
echo "Explorer: $kf serve --port 8080   then open http://127.0.0.1:8080/"
echo "Next:     $kf --help, $kf <command> --help; docs/ explains the design."
