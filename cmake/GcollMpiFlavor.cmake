# The MPI gcoll is built for: one source tree, one library per MPI, each in its own build
# directory, chosen at configure time with -DGCOLL_MPI=openmpi (default) or mpich.
# Everything that differs between MPIs on the CMake side is set here, before
# find_package(MPI); on the source side it is src/pmpi/mpi_flavor.h (which MPI is read from
# the mpi.h compiled against: Fortran entry points, the load check, names).
#
# Sets:
#   GCOLL_MPI_NAME            the MPI's name in messages ("Open MPI", "MPICH")
#   GCOLL_MPIEXEC_ENV_STYLE   how the launcher exports a variable to the ranks:
#                             "x" (-x VAR=VALUE, Open MPI) or "genv" (-genv VAR VALUE, hydra)
#   MPIEXEC_EXECUTABLE, GCOLL_MPIEXEC_FLAGS defaults (cache; tests use them)
# and the function gcoll_mpiexec_env(<out> VAR=VALUE...): the launcher arguments that
# export those variables to every rank.
set(GCOLL_MPI openmpi CACHE STRING "The MPI to build for: openmpi (default) or mpich (one build directory each)")
set_property(CACHE GCOLL_MPI PROPERTY STRINGS openmpi mpich)

# Debian installs MPIs side by side: each one's wrappers and launcher carry its suffix
# (mpicc.openmpi, mpicc.mpich, mpiexec.mpich; MPICH's headers in /usr/include/<triplet>/mpich),
# and the alternatives (mpicc, mpirun) point to one of them (Open MPI: priority 50, MPICH:
# 40). The suffixed names are used where they exist, so a build does not depend on the
# alternatives; elsewhere FindMPI's search (mpicc, mpiexec on PATH) is used.
macro(_gcoll_mpi_programs suffix launchers)
  foreach(_lang_wrapper IN ITEMS "C;mpicc" "CXX;mpicxx" "Fortran;mpif90")
    list(GET _lang_wrapper 0 _lang)
    list(GET _lang_wrapper 1 _wrapper)
    if(NOT MPI_${_lang}_COMPILER)
      find_program(_gcoll_wrapper_${_lang} NAMES ${_wrapper}.${suffix})
      if(_gcoll_wrapper_${_lang})
        set(MPI_${_lang}_COMPILER "${_gcoll_wrapper_${_lang}}" CACHE FILEPATH "MPI ${_lang} compiler wrapper")
      endif()
    endif()
  endforeach()
  if(NOT MPIEXEC_EXECUTABLE)
    find_program(_gcoll_mpiexec NAMES ${launchers})
    if(_gcoll_mpiexec)
      set(MPIEXEC_EXECUTABLE "${_gcoll_mpiexec}" CACHE FILEPATH "mpirun used by the tests")
    endif()
  endif()
endmacro()

if(GCOLL_MPI STREQUAL "openmpi")
  _gcoll_mpi_programs(openmpi "mpiexec.openmpi")
  set(GCOLL_MPI_NAME "Open MPI")
  set(GCOLL_MPIEXEC_ENV_STYLE x)
  set(_gcoll_mpiexec_flags "--oversubscribe")
elseif(GCOLL_MPI STREQUAL "mpich")
  _gcoll_mpi_programs(mpich "mpiexec.mpich;mpiexec.hydra")
  set(GCOLL_MPI_NAME "MPICH")
  set(GCOLL_MPIEXEC_ENV_STYLE genv)
  set(_gcoll_mpiexec_flags "")  # hydra runs more ranks than cores, and as root, by itself
  if(NOT MPI_C_COMPILER)
    message(FATAL_ERROR "GCOLL_MPI=mpich: mpicc.mpich not found (Debian: apt-get install mpich libmpich-dev)")
  endif()
else()
  message(FATAL_ERROR "GCOLL_MPI='${GCOLL_MPI}': expected openmpi or mpich")
endif()
message(STATUS "gcoll: built for ${GCOLL_MPI_NAME} (GCOLL_MPI=${GCOLL_MPI})")

function(gcoll_mpiexec_env out)
  set(args)
  foreach(kv IN LISTS ARGN)
    if(GCOLL_MPIEXEC_ENV_STYLE STREQUAL "genv")
      string(FIND "${kv}" "=" eq)
      string(SUBSTRING "${kv}" 0 ${eq} var)
      math(EXPR eq "${eq} + 1")
      string(SUBSTRING "${kv}" ${eq} -1 value)
      list(APPEND args -genv "${var}" "${value}")
    else()
      list(APPEND args -x "${kv}")
    endif()
  endforeach()
  set(${out} ${args} PARENT_SCOPE)
endfunction()

# After find_package(MPI): check that FindMPI found the MPI asked for (a stale cache or an
# MPI_C_COMPILER given by hand could point elsewhere).
function(gcoll_check_mpi_flavor)
  set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
  include(CheckSymbolExists)
  if(GCOLL_MPI STREQUAL "openmpi")
    check_symbol_exists(OPEN_MPI "mpi.h" GCOLL_MPI_H_IS_FLAVOR)
  else()
    check_symbol_exists(MPICH_VERSION "mpi.h" GCOLL_MPI_H_IS_FLAVOR)
  endif()
  if(NOT GCOLL_MPI_H_IS_FLAVOR)
    message(FATAL_ERROR "GCOLL_MPI=${GCOLL_MPI} but the mpi.h found (${MPI_C_INCLUDE_DIRS}) is not ${GCOLL_MPI_NAME}'s; "
                        "use a fresh build directory per MPI")
  endif()
endfunction()
