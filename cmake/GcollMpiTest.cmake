# gcoll_add_mpi_test(NAME <name> NP <n> COMMAND <exe> [args...]
#                    [ENV VAR=VALUE ...] [PRELOAD] [TIMEOUT <s>] [LABELS <l>...]
#                    [LAUNCHER <cmd> [args...]])
#
# Registers a CTest test that runs <exe> under mpirun with <n> ranks.
# - Oversubscription is always allowed (CI has 2 cores) and running as root is allowed.
# - ENV entries are exported to every rank with `-x VAR=VALUE` (Open MPI) or
#   `-genv VAR VALUE` (MPICH's hydra): gcoll_mpiexec_env, cmake/GcollMpiFlavor.cmake.
# - PRELOAD puts libgcoll.so under the program with `-x LD_PRELOAD=...`, exactly as a
#   user would; use it for programs that do not link gcoll.
# - Open MPI yields when idle (OMPI_MCA_mpi_yield_when_idle=1): `ctest -jN` runs several
#   jobs on one machine, and Open MPI only yields by itself when ONE job has more ranks
#   than cores; 4 jobs of 6-8 ranks on 16 cores then spun each other into the 240 s limit
#   (issue 12: 117 s per test, 6.5 s with this setting). MPICH has no such setting: its
#   tests preload mpi_tests/yield_shim.c instead (GCOLL_MPI_TEST_SHIM). MPICH 5 skips
#   the network's progress (ucp_worker_progress, where the shim yields) after polls that
#   found nothing unless MPIR_CVAR_CH4_PROGRESS_THROTTLE=0 (set here: 10 s -> 3.5 s for
#   mpi.allreduce.default.np4 under the MPICH 5.0.2 wheel).
# - GCOLL_HOST_TUNE=off (inherited by mpirun's local ranks; an ENV entry overrides it):
#   host buffers with GCOLL_HOST_BUFFERS=engine take the engine at every size, so that
#   the tests exercise its host algorithms; the built-in crossovers (@mpi below them) are
#   tested by mpi.host_crossover.* (mpi_tests/CMakeLists.txt).
# - TIMEOUT (default 300 s) is CTest's hard limit; tests should also have their own
#   in-process watchdog so a hang fails with a message instead of a kill.
# - LAUNCHER runs the whole mpirun command line as its last arguments (e.g. a script
#   that checks the output after mpirun returns).
# Each test's mpirun has a session directory of its own (gcoll_mpi_tests_own_tmpdir below).
function(gcoll_add_mpi_test)
  cmake_parse_arguments(T "PRELOAD" "NAME;NP;TIMEOUT" "COMMAND;ENV;LABELS;LAUNCHER" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(envs ${T_ENV})
  set(preload)
  if(T_PRELOAD)
    list(APPEND preload "$<TARGET_FILE:gcoll>")
  endif()
  if(GCOLL_MPI_TEST_SHIM)  # mpi_tests/yield_shim.c, for MPIs whose waits never yield
    list(APPEND preload "${GCOLL_MPI_TEST_SHIM}")
  endif()
  if(preload)
    string(REPLACE ";" ":" preload "${preload}")
    list(APPEND envs "LD_PRELOAD=${preload}")
  endif()
  gcoll_mpiexec_env(xargs ${envs})
  add_test(NAME ${T_NAME}
           COMMAND ${T_LAUNCHER} ${MPIEXEC_EXECUTABLE} ${GCOLL_MPIEXEC_FLAGS} -np ${T_NP} ${xargs} ${T_COMMAND})
  # PROCESSORS: a job of 6 ranks or more counts as 3, so that `ctest -j 3` (CI: 2 cores,
  # scripts/test.sh) runs it alone; smaller ones run three at a time.
  set(procs 1)
  if(T_NP GREATER_EQUAL 6)
    set(procs 3)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    PROCESSORS ${procs}
    LABELS "mpi;${T_LABELS}"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1;MPIR_CVAR_CH4_PROGRESS_THROTTLE=0;GCOLL_HOST_TUNE=off")
  gcoll_mpi_tests_own_tmpdir()
endfunction()

# gcoll_mpi_tests_own_tmpdir(): at the end of the calling directory's CMakeLists.txt, every
# test registered there gets OMPI_MCA_orte_tmpdir_base=<a directory of its own>. Open MPI
# 4.1's mpirun makes its session directory under <base>/ompi.<host>.<uid>/, and the last job
# to finish removes that shared directory when it is empty: a job starting at that moment
# failed its mkdir ("orte_session_dir failed", before any of its ranks ran) in a CI run of
# 2026-11-29, where ctest runs 3 jobs at a time. One base per test: no shared directory.
# Called by gcoll_add_mpi_test; a directory whose tests run mpirun from scripts calls it
# itself. Idempotent; other MPIs ignore the variable. The base is under the build
# directory, or under /tmp where the build directory's path is long (PMIx's socket, in the
# session directory, must fit sun_path's 108 bytes).
set(GCOLL_MPI_TMPDIR_BASE "${CMAKE_BINARY_DIR}/mpi-tmp")
string(LENGTH "${CMAKE_BINARY_DIR}" _gcoll_bin_len)
if(_gcoll_bin_len GREATER 40)
  string(MD5 _gcoll_bin_hash "${CMAKE_BINARY_DIR}")
  string(SUBSTRING "${_gcoll_bin_hash}" 0 10 _gcoll_bin_hash)
  set(GCOLL_MPI_TMPDIR_BASE "/tmp/gcoll-mpi-tmp.${_gcoll_bin_hash}")
endif()
function(gcoll_mpi_tests_own_tmpdir)
  cmake_language(DEFER GET_CALL_IDS _ids)
  if(NOT "gcoll_own_tmpdir" IN_LIST _ids)
    cmake_language(DEFER ID gcoll_own_tmpdir CALL _gcoll_mpi_tests_own_tmpdir_now)
  endif()
endfunction()
function(_gcoll_mpi_tests_own_tmpdir_now)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_t IN LISTS _tests)
    string(MD5 _h "${_t}")
    string(SUBSTRING "${_h}" 0 12 _h)
    set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_orte_tmpdir_base=${GCOLL_MPI_TMPDIR_BASE}/${_h}")
  endforeach()
endfunction()

# GCOLL_GPU_TEST_LOCK: what the tests that use the GPU add to their properties. Where a GPU
# is visible when the build is configured (/dev/nvidia<N>), RESOURCE_LOCK gcoll_gpu: they
# share it and run one at a time. Without one (CI) they run on the emulated GPU, CPU work
# like any other test's: no lock, so that `ctest -j` spreads them over its slots (they were
# a chain of about 7 minutes of CI's 2-core time, one at a time, before 2026-11-28).
file(GLOB _gcoll_nvidia_devices /dev/nvidia[0-9]*)
if(_gcoll_nvidia_devices)
  set(GCOLL_GPU_TEST_LOCK RESOURCE_LOCK gcoll_gpu)
else()
  set(GCOLL_GPU_TEST_LOCK)
endif()
