# Runs the compiler on one case and prints its diagnostics (the test's regex checks them).
string(REPLACE "|" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} -DCASE=${CASE} ${SRC} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "case ${CASE} compiled, but it must not")
endif()
message("${err}")
