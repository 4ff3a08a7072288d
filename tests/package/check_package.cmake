# Installs the built grma into a fresh prefix, then configures, builds and runs
# the consumer project against it with find_package(grma), as a user would:
# without MPI's development files (CMAKE_DISABLE_FIND_PACKAGE_MPI), and where
# grma has CUDA also compiled by nvcc, whose failing GRMA_ASSERT must arrive
# with its rank, file, line and expression (on a GPU when one is visible).
# The installed grma-info runs too (it finds the library by its RPATH).
file(REMOVE_RECURSE "${WORK_DIR}")
set(cuda_args)
if(CUDA)
  set(cuda_args "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
  COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build"
  "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "-DGRMA_CONSUMER_CUDA=${CUDA}" ${cuda_args}
  COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
execute_process(COMMAND "${WORK_DIR}/build/consumer" COMMAND_ERROR_IS_FATAL ANY)
if(EXISTS "${WORK_DIR}/prefix/bin/grma-info")
  execute_process(COMMAND "${WORK_DIR}/prefix/bin/grma-info" COMMAND_ERROR_IS_FATAL ANY OUTPUT_QUIET)
endif()
if(CUDA)
  execute_process(COMMAND "${WORK_DIR}/build/consumer_cuda" COMMAND_ERROR_IS_FATAL ANY)
  foreach(mode assert-one assert-all)
    execute_process(COMMAND "${WORK_DIR}/build/consumer_cuda" ${mode}
      RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_VARIABLE out)
    if(mode STREQUAL "assert-one")
      set(rank 3)
    else()
      set(rank "[0-3]")
    endif()
    if(NOT status EQUAL 2 OR NOT err MATCHES
       "^grma: rank ${rank}: GRMA_ASSERT: assertion failed: consumer/program.hpp:[0-9]+: me < 0\n$")
      message(FATAL_ERROR "consumer_cuda ${mode}: exit status ${status}, expected 2 and the "
                          "assertion's message; it said:\n${out}${err}")
    endif()
    message("consumer_cuda ${mode}: ${err}")
  endforeach()
endif()
