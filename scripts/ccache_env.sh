# Sourced by scripts/test.sh and scripts/demo.sh: the settings under which ccache serves a clone
# in any folder from one cache outside the work tree (~/.cache/ccache unless CCACHE_DIR is set).
#   CCACHE_BASEDIR     paths under the source folder are hashed relative to it
#   CCACHE_NOHASHDIR   the build folder is not part of the hash (line tables keep the first
#                      clone's folder names; the code is the same)
#   CCACHE_SLOPPINESS  precompiled headers (tests/pch.cpp) and a fresh clone's new mtimes cached
# CMake puts ccache in front of the compiler when it is installed (cmake/kf_ccache.cmake).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
