# Test helpers shared by every tests/ subfolder.
#
# lockstep_add_mpi_test(NAME <name> NP <n> [TIMEOUT <s>] [LABELS ...] COMMAND <prog> [args...])
#   runs <prog> under mpirun with <n> real processes (as root and with more ranks than cores).
set(LOCKSTEP_MPIRUN_FLAGS --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader
    --mca btl_vader_single_copy_mechanism none)
function(lockstep_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT" "LABELS;COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${MPIEXEC_EXECUTABLE} ${LOCKSTEP_MPIRUN_FLAGS} -np ${T_NP} ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "mpi;${T_LABELS}"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${T_ENVIRONMENT}")
endfunction()
