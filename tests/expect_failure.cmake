# Runs PROGRAM with ARGS and passes when it exits nonzero and its standard
# error matches EXPECT (a regular expression), and, where COUNTED is given,
# has that pattern exactly TIMES times.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE status
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} exited 0; expected a failure\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "stderr of ${PROGRAM} ${ARGS} does not match '${EXPECT}':\n${err}")
endif()
if(DEFINED COUNTED)
  string(REGEX MATCHALL "${COUNTED}" found "${err}")
  list(LENGTH found times)
  if(NOT times EQUAL TIMES)
    message(FATAL_ERROR "stderr of ${PROGRAM} ${ARGS} has '${COUNTED}' ${times} times, not ${TIMES}:\n${err}")
  endif()
endif()
message(STATUS "exit status ${status}; stderr matched '${EXPECT}'")
