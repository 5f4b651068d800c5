#!/usr/bin/env bash
# The main job on built-in data, from a fresh machine: installs what is missing, builds the
# release configuration, runs `kf demo` (seed 001: Gaussian kernel regression, KNN and softmax
# attention side by side), reproduces its fit with `kf attend` on the .npy files it wrote, then
# writes the report (`kf report`: every seed's demonstration measured, the periodic experiment
# and a language model's attention, as an offline HTML page) and says how to start the explorer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install_deps.sh build
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs" --target kf

kf=build/release/kf
out=build/demo
"$kf" demo --out "$out"
echo
h=$(awk 'BEGIN { printf "%.17g", 1 / sqrt(10) }')
"$kf" attend -q "$out/queries.npy" -k "$out/keys.npy" -v "$out/values.npy" \
  --kernel gaussian --bandwidth "$h" -o "$out/attend.npy"
cmp -s <(tail -c 4000 "$out/attend.npy") <(tail -c 4000 "$out/nw.npy") &&
  echo "kf attend reproduced the demo's fit bit for bit ($out/attend.npy)"
echo
"$kf" report --out build/report
echo
echo "Report: $(pwd)/build/report/index.html"
echo "Explorer: $kf serve --port 8080   then open http://127.0.0.1:8080/"
echo "Next: $kf --help, $kf <command> --help; docs/ explains the design."
