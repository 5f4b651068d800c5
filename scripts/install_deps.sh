#!/usr/bin/env bash
# Installs the Debian packages kernelformer needs — only those missing, so a second run is a
# no-op. Groups (docs/dependencies.md says why each package is there):
#   build   (default) compiler, CMake, GoogleTest, Google Benchmark, Eigen, OpenBLAS (OpenMP
#           build), CLI11, fmt, nlohmann-json, cairo (figures), clang-format, cpp-httplib
#           (kf serve), fortunes (the language model's default corpus), nanoflann (k-d trees),
#           OpenMPI (mpirun -np N kf ...), clang 14 with libFuzzer's runtime and OpenMP
#           (scripts/fuzz.sh), ccache (every build served from a cache across runs and clones)
#   web     Debian's chromium, Node.js + npm (if missing), and web/node_modules (playwright-core,
#           `npm ci`, no browser download) for the explorer's headless-browser test
#   r       R (Debian's r-base-core: its datasets package holds the classic series of
#           python/bench_series_vs_holt_winters.py; r-cran-kernsmooth and r-cran-mass for
#           python/make_fixture_dpill.py's reference values)
#   python  the Python package (python/, scripts/test_python.sh) on its own: what its build needs
#           (compiler, CMake, pkg-config, Eigen, OpenBLAS, fmt, FFTW, cairo, cpp-httplib,
#           nlohmann-json, OpenMPI's headers, ccache), pybind11, the headers, venv, pip,
#           setuptools, wheel, pytest, and Debian's numpy, PyTorch, statsmodels, scikit-learn
#           under /usr/bin/python3 (also the fixture generators and side-by-side benchmarks)
# Usage: scripts/install_deps.sh [build] [web] [python] [r]
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config clang-format googletest libgtest-dev libbenchmark-dev
  libeigen3-dev libopenblas-openmp-dev libcli11-dev libfmt-dev nlohmann-json3-dev libcairo2-dev libfftw3-dev
  fonts-dejavu-core fortunes libcpp-httplib-dev libnanoflann-dev libopenmpi-dev openmpi-bin
  clang-14 libclang-rt-14-dev libomp-14-dev ccache)
web_pkgs=(chromium)
command -v node >/dev/null || web_pkgs+=(nodejs)
command -v npm >/dev/null || web_pkgs+=(npm)
r_pkgs=(r-base-core r-cran-kernsmooth r-cran-mass)
# What `pip install .` compiles with (CMakeLists.txt's find_package calls), a subset of build.
python_build_pkgs=(build-essential cmake pkg-config libeigen3-dev libopenblas-openmp-dev libfmt-dev
  nlohmann-json3-dev libcairo2-dev libfftw3-dev libcpp-httplib-dev libopenmpi-dev ccache)
python_pkgs=("${python_build_pkgs[@]}" python3 python3-numpy python3-torch python3-statsmodels python3-sklearn python3-dev
  pybind11-dev python3-pybind11 python3-venv python3-pip python3-setuptools python3-wheel
  python3-pytest)

want_npm=0
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(build)
wanted=()
for g in "${groups[@]}"; do
  case "$g" in
    build) wanted+=("${build_pkgs[@]}") ;;
    python) wanted+=("${python_pkgs[@]}") ;;
    r) wanted+=("${r_pkgs[@]}") ;;
    web) wanted+=("${web_pkgs[@]}"); want_npm=1 ;;
    *) echo "install_deps.sh: unknown group '$g' (build, web, python, r)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
npm_step() {
  # playwright-core only (exact version from web/package-lock.json); it drives Debian's chromium.
  if [ "$want_npm" = 1 ] && [ ! -d "$(dirname "$0")/../web/node_modules/playwright-core" ]; then
    echo "install_deps.sh: npm ci --prefix web"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$(dirname "$0")/../web" --no-audit --no-fund >/dev/null
  fi
}
if [ ${#missing[@]} -eq 0 ]; then
  npm_step
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install_deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_step
