"""Builds the Python package `kernelformer`: the extension `kernelformer._kernelformer` by CMake
(python/CMakeLists.txt, pybind11) and the plain-Python layer in python/kernelformer/.

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .

CMake configures this repository in build/python (Release, -DKF_BUILD_PYTHON=ON) and builds only
the target _kernelformer, so a second install recompiles only what changed. Environment:
KF_PYTHON_BUILD_DIR (another build folder), KF_BUILD_JOBS (parallel compile jobs; default: the
core count), KF_PYTHON_BUILD_TYPE (default Release).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(kernelformer VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class cmake_build_ext(build_ext):
    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("cmake not found: run scripts/install_deps.sh (Debian's cmake)")
        build_dir = Path(os.environ.get("KF_PYTHON_BUILD_DIR", ROOT / "build" / "python"))
        build_type = os.environ.get("KF_PYTHON_BUILD_TYPE", "Release")
        jobs = os.environ.get("KF_BUILD_JOBS", str(os.cpu_count() or 2))
        configure = [
            cmake, "-S", str(ROOT), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DKF_BUILD_PYTHON=ON", "-DKF_BUILD_APPS=OFF", "-DKF_BUILD_TESTS=OFF",
            "-DKF_BUILD_BENCH=OFF", "-DBUILD_SHARED_LIBS=OFF",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            f"-DPYTHON_EXECUTABLE={sys.executable}",
        ]
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([cmake, "--build", str(build_dir), "--target", "_kernelformer",
                        "-j", jobs], check=True)
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
    ext_modules=[CMakeExtension("kernelformer._kernelformer")],
    cmdclass={"build_ext": cmake_build_ext},
    zip_safe=False,
)
