# ccache (Debian's package, installed by scripts/install_deps.sh) in front of every compile when
# it is on the PATH: a second build of the same sources — another preset's identical units, a
# fresh clone, the CI run after a session — is served from the cache. scripts/test.sh sets
# CCACHE_BASEDIR to the source folder (paths are hashed relative to it, so a clone elsewhere hits)
# and prints the hit rate. KF_CCACHE=OFF turns it off.
option(KF_CCACHE "Compile through ccache when it is installed" ON)
if(KF_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(KF_CCACHE_PROGRAM ccache)
  if(KF_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${KF_CCACHE_PROGRAM})
  endif()
endif()
