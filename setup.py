"""Builds the Python package `kernelformer`: the extension `kernelformer._kernelformer` by CMake
(python/CMakeLists.txt, pybind11) and the plain-Python layer in python/kernelformer/.

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .

CMake configures this repository in build/python (Release, -DKF_BUILD_PYTHON=ON) and builds only
the target _kernelformer, so a second install recompiles only what changed. Environment:
KF_PYTHON_CMAKE_BUILD (a CMake build of this repository that already has the target _kernelformer,
such as build/dev: it is built there, linking that build's library objects, and not configured
again; scripts/test_python.sh uses build/dev when it exists), KF_PYTHON_BUILD_DIR (another folder
for setup.py's own build), KF_BUILD_JOBS (parallel compile jobs; default: the
core count), KF_PYTHON_BUILD_TYPE (default Release), KF_BUILD_PROGRESS=0 (no progress line on the
terminal). ccache, when installed, serves every compile it has seen before (ccache_settings).
"""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(kernelformer VERSION ([0-9.]+)", text).group(1)


def ccache_settings():
    """What scripts/ccache_env.sh sets: ccache (in front of the compiler when installed,
    cmake/kf_ccache.cmake) hashes paths relative to the repository and not the build folder, so a
    second install, another clone's or CI's, compiles nothing it has compiled before."""
    return {
        "CCACHE_BASEDIR": os.environ.get("CCACHE_BASEDIR", str(ROOT)),
        "CCACHE_NOHASHDIR": "true",
        "CCACHE_SLOPPINESS": os.environ.get(
            "CCACHE_SLOPPINESS", "pch_defines,time_macros,include_file_mtime,include_file_ctime"),
    }


def progress_sink():
    """pip shows a build's output only with -v; the progress line goes to the terminal itself
    when there is one (KF_BUILD_PROGRESS=0 turns it off)."""
    if os.environ.get("KF_BUILD_PROGRESS", "1") == "0":
        return None
    try:
        return open("/dev/tty", "w")
    except OSError:
        return None


def build_with_progress(command, env):
    """Runs the CMake build; its '[ NN%]' lines become one line on the terminal with the elapsed
    time and an estimate of the rest, and every line still reaches pip's log (pip -v)."""
    tty = progress_sink()
    start = time.monotonic()
    tail = []
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1) as proc:
        for line in proc.stdout:
            sys.stderr.write(line)
            tail = (tail + [line])[-40:]
            m = re.match(r"\[\s*(\d+)%\]", line)
            if tty and m:
                pct = int(m.group(1))
                spent = time.monotonic() - start
                eta = f", about {spent * (100 - pct) / pct:.0f} s left" if 5 <= pct < 100 else ""
                tty.write(f"\rkernelformer: compiling the extension {pct:3d}% ({spent:.0f} s{eta})  ")
                tty.flush()
    if tty:
        tty.write(f"\rkernelformer: compiled the extension in {time.monotonic() - start:.0f} s"
                  + " " * 30 + "\n")
        tty.close()
    if proc.returncode != 0:
        sys.stderr.write("".join(tail))
        raise RuntimeError(f"the CMake build failed (exit {proc.returncode}); its last lines are above")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class cmake_build_ext(build_ext):
    def configure(self, cmake, build_dir, env):
        build_type = os.environ.get("KF_PYTHON_BUILD_TYPE", "Release")
        configure = [
            cmake, "-S", str(ROOT), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DKF_BUILD_PYTHON=ON", "-DKF_BUILD_APPS=OFF", "-DKF_BUILD_TESTS=OFF",
            "-DKF_BUILD_BENCH=OFF", "-DBUILD_SHARED_LIBS=OFF",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            f"-DPYTHON_EXECUTABLE={sys.executable}",
        ]
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL, env=env)

    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("cmake not found: run scripts/install_deps.sh (Debian's cmake)")
        jobs = os.environ.get("KF_BUILD_JOBS", str(os.cpu_count() or 2))
        env = dict(os.environ, **ccache_settings())
        existing = os.environ.get("KF_PYTHON_CMAKE_BUILD")
        if existing:
            build_dir = Path(existing).resolve()
            if not (build_dir / "CMakeCache.txt").exists():
                raise RuntimeError(f"KF_PYTHON_CMAKE_BUILD={existing}: not a configured CMake "
                                   "build (cmake --preset dev first)")
            if not (build_dir / "python").is_dir():
                raise RuntimeError(f"KF_PYTHON_CMAKE_BUILD={existing}: that build has no Python "
                                   "extension (configure it with -DKF_PYTHON_IF_FOUND=ON and "
                                   "pybind11 installed)")
        else:
            build_dir = Path(os.environ.get("KF_PYTHON_BUILD_DIR", ROOT / "build" / "python"))
            self.configure(cmake, build_dir, env)
        build_with_progress([cmake, "--build", str(build_dir), "--target", "_kernelformer",
                             "-j", jobs], env)
        built = sorted((build_dir / "python").glob("_kernelformer*.so"),
                       key=lambda p: p.stat().st_mtime)
        if not built:
            raise RuntimeError(f"the build left no _kernelformer*.so in {build_dir / 'python'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(
    version=project_version(),
    package_dir={"": "python"},
    packages=["kernelformer"],
    package_data={"kernelformer": ["py.typed", "_kernelformer.pyi"]},
    ext_modules=[CMakeExtension("kernelformer._kernelformer")],
    cmdclass={"build_ext": cmake_build_ext},
    zip_safe=False,
)
