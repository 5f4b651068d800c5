# OpenBLAS, the OpenMP build, by path. Debian installs the OpenMP and pthread builds side by side
# and an "alternatives" link picks one for libopenblas.so; the pthread build collapses ~13x when
# called from OpenMP threads, so we never leave the choice to that link (docs/dependencies.md).
set(_kf_arch ${CMAKE_LIBRARY_ARCHITECTURE})
if(NOT _kf_arch)
  set(_kf_arch x86_64-linux-gnu)
endif()
find_library(KF_OPENBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/${_kf_arch}/openblas-openmp NO_DEFAULT_PATH)
find_path(KF_OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/${_kf_arch}/openblas-openmp NO_DEFAULT_PATH)
if(NOT KF_OPENBLAS_LIBRARY OR NOT KF_OPENBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "OpenBLAS (OpenMP build) not found: run scripts/install_deps.sh "
                      "(Debian package libopenblas-openmp-dev)")
endif()
add_library(kf::openblas UNKNOWN IMPORTED)
set_target_properties(kf::openblas PROPERTIES
  IMPORTED_LOCATION ${KF_OPENBLAS_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${KF_OPENBLAS_INCLUDE_DIR})
message(STATUS "kernelformer: OpenBLAS (OpenMP build) ${KF_OPENBLAS_LIBRARY}")
