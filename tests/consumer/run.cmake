# ctest driver: install the built tree into a scratch prefix, then configure, build and run
# tests/consumer against it with find_package(kernelformer).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configure failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "build failed: ${rc}")
endif()
foreach(exe consumer consumer_core)
  execute_process(COMMAND ${WORK_DIR}/build/${exe} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "${exe} failed: ${rc}")
  endif()
endforeach()
# kernelformer::core is the primitive without the figures and the binned routes: its program
# loads neither cairo nor FFTW.
execute_process(COMMAND ldd ${WORK_DIR}/build/consumer_core OUTPUT_VARIABLE libs RESULT_VARIABLE rc)
if(rc OR libs MATCHES "cairo|fftw" OR NOT libs MATCHES "kernelformer_core")
  message(FATAL_ERROR "consumer_core should load kernelformer_core without cairo or FFTW (${rc}):\n${libs}")
endif()

# The installed kf (bin/kf, the launcher, running libexec/kernelformer/kf whose RUNPATH is
# $ORIGIN/../../lib) runs from the prefix with no LD_LIBRARY_PATH.
if(EXISTS ${WORK_DIR}/prefix/bin/kf)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH
                          ${WORK_DIR}/prefix/bin/kf demo --rows 3
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "NW gaussian")
    message(FATAL_ERROR "installed kf failed (${rc}): ${out} ${err}")
  endif()
endif()
