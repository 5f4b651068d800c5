#!/usr/bin/env bash
# Installs the Debian packages kernelformer needs — only those missing, so a second run is a
# no-op. Groups (docs/dependencies.md says why each package is there):
#   build   (default) compiler, CMake, GoogleTest, Google Benchmark, Eigen, OpenBLAS (OpenMP
#           build), CLI11, fmt, nlohmann-json, cairo (figures), clang-format, cpp-httplib
#           (kf serve), fortunes (the language model's default corpus)
#   python  Debian's numpy, PyTorch, statsmodels, scikit-learn under /usr/bin/python3 (fixture
#           generators and side-by-side benchmark scripts; the tests never need them)
# Usage: scripts/install_deps.sh [build] [python]
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config clang-format googletest libgtest-dev libbenchmark-dev
  libeigen3-dev libopenblas-openmp-dev libcli11-dev libfmt-dev nlohmann-json3-dev libcairo2-dev libfftw3-dev
  fonts-dejavu-core fortunes libcpp-httplib-dev)
python_pkgs=(python3 python3-numpy python3-torch python3-statsmodels python3-sklearn)

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(build)
wanted=()
for g in "${groups[@]}"; do
  case "$g" in
    build) wanted+=("${build_pkgs[@]}") ;;
    python) wanted+=("${python_pkgs[@]}") ;;
    *) echo "install_deps.sh: unknown group '$g' (build, python)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install_deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
