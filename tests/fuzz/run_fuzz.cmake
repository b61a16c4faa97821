# Runs one fuzz target the same way every time (ctest's Fuzz.* tests): a fixed -seed, and a fresh,
# empty working corpus, so the run starts from the checked-in seeds alone and what an earlier run
# found cannot change what this one does. New inputs land in WORK_CORPUS, and a crash input in
# the artifacts folder, for inspection. Arguments (-D): EXE, WORK_CORPUS, SEED_CORPUS, ARGS (the
# libFuzzer flags joined with '|').
string(REPLACE "|" ";" ARGS "${ARGS}")
file(REMOVE_RECURSE "${WORK_CORPUS}")
file(MAKE_DIRECTORY "${WORK_CORPUS}")
execute_process(COMMAND "${EXE}" ${ARGS} "${WORK_CORPUS}" "${SEED_CORPUS}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} failed (${rc}); the input that broke it is in the artifacts folder")
endif()
