# Runs a test executable with KF_SIMD=${SIMD}, only on a CPU that has every x86 feature in
# ${REQUIRE} (comma-separated /proc/cpuinfo flags); elsewhere prints KF_ISA_SKIP, which the test's
# SKIP_REGULAR_EXPRESSION turns into a skip. Decided when the test runs, not at configure time:
# the CI machine's CPU varies from run to run (tests/CMakeLists.txt).
#   cmake -DEXE=path -DSIMD=avx2 -DREQUIRE=avx512f,avx512dq,avx512bw,avx512vl -P run_at_isa.cmake
cmake_minimum_required(VERSION 3.25)  # IN_LIST
set(flags "")
if(EXISTS /proc/cpuinfo)
  file(STRINGS /proc/cpuinfo lines REGEX "^flags" LIMIT_COUNT 1)
  if(lines)
    string(REGEX REPLACE "^flags[ \t]*:[ \t]*" "" flags "${lines}")
    string(REPLACE " " ";" flags "${flags}")
  endif()
endif()
string(REPLACE "," ";" required "${REQUIRE}")
foreach(f IN LISTS required)
  if(NOT f IN_LIST flags)
    message("KF_ISA_SKIP: this CPU lacks ${f}, so the suites' own run already took the widest "
            "variant it has; KF_SIMD=${SIMD} would repeat it")
    return()
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env KF_SIMD=${SIMD} OMP_WAIT_POLICY=PASSIVE ${EXE}
                RESULT_VARIABLE rv)
if(NOT rv EQUAL 0)
  message(FATAL_ERROR "${EXE} with KF_SIMD=${SIMD} failed (${rv})")
endif()
