# The MPI gcoll is built for: one source tree, one library per MPI, each in its own build
# directory, chosen at configure time with -DGCOLL_MPI=openmpi (default), mpich, or abi
# (the MPI-5 standard ABI: mpi_abi.h and libmpi_abi.so under -DGCOLL_MPI_ABI_ROOT=<prefix>;
# one library for every MPI that implements it; scripts/mpi_abi.sh makes such a prefix
# from PyPI's mpich wheel).
# Everything that differs between MPIs on the CMake side is set here, before
# find_package(MPI); on the source side it is src/pmpi/mpi_flavor.h (which MPI is read from
# the mpi.h compiled against: Fortran entry points, the load check, names).
#
# Sets:
#   GCOLL_MPI_NAME            the MPI's name in messages ("Open MPI", "MPICH", "the MPI
#                             standard ABI")
#   GCOLL_MPIEXEC_ENV_STYLE   how the launcher exports a variable to the ranks:
#                             "x" (-x VAR=VALUE, Open MPI) or "genv" (-genv VAR VALUE, hydra)
#   MPIEXEC_EXECUTABLE, GCOLL_MPIEXEC_FLAGS defaults (cache; tests use them)
# and the function gcoll_mpiexec_env(<out> VAR=VALUE...): the launcher arguments that
# export those variables to every rank, and the macro gcoll_find_mpi(): MPI::MPI_C (and
# MPI::MPI_Fortran where the MPI has Fortran bindings gcoll can build tests with).
set(GCOLL_MPI openmpi CACHE STRING "The MPI to build for: openmpi (default), mpich or abi (one build directory each)")
set_property(CACHE GCOLL_MPI PROPERTY STRINGS openmpi mpich abi)
set(GCOLL_MPI_ABI_ROOT "" CACHE PATH
    "GCOLL_MPI=abi: the prefix holding include/mpi_abi.h and lib/libmpi_abi.so (e.g. a Python venv with the mpich wheel)")

# An MPICH that is not Debian's (e.g. PyPI's mpich wheel, MPICH 5.0.2, whose mpi.h has the
# stream API gcoll takes over): -DGCOLL_MPI=mpich -DMPI_C_COMPILER=<prefix>/bin/mpicc
# -DMPIEXEC_EXECUTABLE=<prefix>/bin/mpiexec, and -DCMAKE_Fortran_COMPILER=NOTFOUND where it
# has no Fortran bindings (scripts/test.sh: build-mpich5).
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
elseif(GCOLL_MPI STREQUAL "abi")
  # No wrappers: the standard ABI is a header and a library (mpicc_abi only adds -DMPI_ABI,
  # the include directory and -lmpi_abi). The launcher is the implementation's.
  if(NOT EXISTS "${GCOLL_MPI_ABI_ROOT}/include/mpi_abi.h" OR NOT EXISTS "${GCOLL_MPI_ABI_ROOT}/lib/libmpi_abi.so")
    message(FATAL_ERROR "GCOLL_MPI=abi: GCOLL_MPI_ABI_ROOT='${GCOLL_MPI_ABI_ROOT}' must be a prefix holding "
                        "include/mpi_abi.h and lib/libmpi_abi.so (scripts/mpi_abi.sh <dir> installs PyPI's mpich "
                        "wheel, which has them, into a virtual environment <dir>)")
  endif()
  get_filename_component(GCOLL_MPI_ABI_ROOT "${GCOLL_MPI_ABI_ROOT}" ABSOLUTE)
  if(NOT MPIEXEC_EXECUTABLE)
    find_program(_gcoll_mpiexec NAMES mpiexec mpirun PATHS "${GCOLL_MPI_ABI_ROOT}/bin" NO_DEFAULT_PATH)
    if(_gcoll_mpiexec)
      set(MPIEXEC_EXECUTABLE "${_gcoll_mpiexec}" CACHE FILEPATH "mpirun used by the tests")
    endif()
  endif()
  set(GCOLL_MPI_NAME "the MPI standard ABI")
  # The tests run under MPICH's hydra (the wheel's mpiexec). Under another implementation
  # of the ABI, give its launcher as MPIEXEC_EXECUTABLE (Open MPI's takes -x: set
  # GCOLL_MPIEXEC_ENV_STYLE=x).
  set(GCOLL_MPIEXEC_ENV_STYLE genv CACHE STRING "How the launcher exports variables: genv (hydra) or x (Open MPI)")
  set(_gcoll_mpiexec_flags "")
else()
  message(FATAL_ERROR "GCOLL_MPI='${GCOLL_MPI}': expected openmpi, mpich or abi")
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

# MPI::MPI_C for the MPI asked for; MPI::MPI_Fortran too where the MPI has Fortran bindings
# (if Fortran is enabled). The standard ABI covers C only (MPI-5 leaves Fortran to
# libraries above it; PyPI's mpich wheel has no Fortran bindings): no MPI::MPI_Fortran.
macro(gcoll_find_mpi)
  if(GCOLL_MPI STREQUAL "abi")
    add_library(MPI::MPI_C INTERFACE IMPORTED GLOBAL)
    set_target_properties(MPI::MPI_C PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${GCOLL_MPI_ABI_ROOT}/include"
      INTERFACE_COMPILE_DEFINITIONS MPI_ABI
      INTERFACE_LINK_LIBRARIES "${GCOLL_MPI_ABI_ROOT}/lib/libmpi_abi.so")
    set(MPI_C_INCLUDE_DIRS "${GCOLL_MPI_ABI_ROOT}/include")
    set(MPI_C_COMPILE_DEFINITIONS MPI_ABI)
    set(MPI_C_FOUND TRUE)
  else()
    find_package(MPI REQUIRED COMPONENTS C)
    if(CMAKE_Fortran_COMPILER)
      find_package(MPI COMPONENTS Fortran)
    endif()
  endif()
  gcoll_check_mpi_flavor()
endmacro()

# After finding the MPI: check that it is the MPI asked for (a stale cache or an
# MPI_C_COMPILER given by hand could point elsewhere).
function(gcoll_check_mpi_flavor)
  set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_DEFINITIONS)
  foreach(d IN LISTS MPI_C_COMPILE_DEFINITIONS)
    list(APPEND CMAKE_REQUIRED_DEFINITIONS -D${d})
  endforeach()
  include(CheckSymbolExists)
  if(GCOLL_MPI STREQUAL "openmpi")
    check_symbol_exists(OPEN_MPI "mpi.h" GCOLL_MPI_H_IS_FLAVOR)
  elseif(GCOLL_MPI STREQUAL "mpich")
    check_symbol_exists(MPICH_VERSION "mpi.h" GCOLL_MPI_H_IS_FLAVOR)
  else()
    check_symbol_exists(MPI_ABI_VERSION "mpi.h" GCOLL_MPI_H_IS_FLAVOR)
  endif()
  if(NOT GCOLL_MPI_H_IS_FLAVOR)
    message(FATAL_ERROR "GCOLL_MPI=${GCOLL_MPI} but the mpi.h found (${MPI_C_INCLUDE_DIRS}) is not ${GCOLL_MPI_NAME}'s; "
                        "use a fresh build directory per MPI")
  endif()
  # MPICH's stream API in mpi.h (MPICH >= 4.1): gcoll takes it over (pmpi/stream.cc) rather
  # than defining its own; the stream tests then run the parts that stay MPICH's.
  check_symbol_exists(MPIX_STREAM_NULL "mpi.h" GCOLL_MPI_HAS_STREAM_API)
  if(GCOLL_MPI_HAS_STREAM_API)
    message(STATUS "gcoll: the MPI's mpi.h has MPICH's stream API: gcoll takes it over")
  endif()
endfunction()

