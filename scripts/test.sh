#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
set -euo pipefail
source "$(dirname "$0")/env.sh"
# Each stage's wall time, on stderr as it ends ("test.sh: <stage>: N s (total M s)"), for
# CI's time budget (docs/contributing.md).
t_start=$SECONDS
t_last=$SECONDS
stage_done() {
  echo "test.sh: $1: $((SECONDS - t_last)) s (total $((SECONDS - t_start)) s)" >&2
  t_last=$SECONDS
}
gcoll_setup_and_build
stage_done "setup and build"
cd "$GCOLL_BUILD"
# Unit tests in parallel; everything else (MPI jobs of up to 8 ranks, benchmark smoke
# tests, GPU tests on the emulated GPU where there is none) three at a time: most of a
# test's time is waiting (mpirun's start, ranks that sleep between polls), so a third
# job fills the 2 cores. MPI jobs of 6 ranks or more run alone (PROCESSORS 3,
# cmake/GcollMpiTest.cmake), tests on a real GPU one at a time (GCOLL_GPU_TEST_LOCK),
# tests that look at the whole machine's /dev/shm or /tmp alone (RUN_SERIAL).
ctest --output-on-failure -L unit -j "$(nproc)"
ctest --output-on-failure -LE unit -j 3
stage_done "Open MPI tests"

# The subset that runs under every MPI (ctest label portable: C and Fortran preload tests
# with their stats, the correctness matrix on 1 to 5 ranks, the engine on virtual nodes,
# bad input), under MPICH: its own build directory, without CUDA (issue 14).
mpich_build="${GCOLL_BUILD_MPICH:-$GCOLL_ROOT/build-mpich}"
cmake -S "$GCOLL_ROOT" -B "$mpich_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOLL_MPI=mpich \
  -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$mpich_build" -j "$(nproc)" --target gcoll_portable_tests
stage_done "MPICH build"
cd "$mpich_build"
ctest --output-on-failure -L portable -j 1
stage_done "MPICH tests"

# The MPI-5 standard ABI (issue 14): gcoll built against mpi_abi.h / libmpi_abi.so of
# MPICH 5.0.2 (PyPI's mpich wheel, in a virtual environment inside the build directory:
# scripts/mpi_abi.sh), the same portable subset under the wheel's mpiexec. Then the load
# check across builds: the Open MPI build's libgcoll.so under a program built for the
# standard ABI (the reverse is the ABI build's mpi.foreign_mpi.openmpi.np2).
abi_build="${GCOLL_BUILD_ABI:-$GCOLL_ROOT/build-abi}"
bash "$GCOLL_ROOT/scripts/mpi_abi.sh" "$abi_build/mpi-abi"
cmake -S "$GCOLL_ROOT" -B "$abi_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOLL_MPI=abi \
  -DGCOLL_MPI_ABI_ROOT="$abi_build/mpi-abi" -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$abi_build" -j "$(nproc)" --target gcoll_portable_tests
stage_done "MPI-5 ABI wheel and build"
cd "$abi_build"
ctest --output-on-failure -L portable -j 1
bash "$GCOLL_ROOT/mpi_tests/foreign_mpi.sh" "$GCOLL_BUILD/lib/libgcoll.so" "$GCOLL_ROOT/mpi_tests/preload/preload_c.c" \
  "$abi_build/mpi-abi/bin/mpicc_abi" "$abi_build/mpi-abi/bin/mpiexec" genv "$abi_build/foreign_openmpi_build"
stage_done "MPI-5 ABI tests"

# MPICH's own stream API (issue 30): gcoll built against the same wheel's native MPICH
# (its mpi.h declares MPIX_Stream_create, MPIX_Allreduce_enqueue, ...: gcoll takes them over,
# pmpi/stream.cc), without CUDA, and the stream tests on the emulated GPU under the wheel's
# mpiexec: host-synchronous, the proxy thread, the device path. The wheel has no Fortran
# bindings (no Fortran here: the mpich flavour would take Debian's mpif90.mpich).
mpich5_build="${GCOLL_BUILD_MPICH5:-$GCOLL_ROOT/build-mpich5}"
cmake -S "$GCOLL_ROOT" -B "$mpich5_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOLL_MPI=mpich \
  -DMPI_C_COMPILER="$abi_build/mpi-abi/bin/mpicc" -DMPIEXEC_EXECUTABLE="$abi_build/mpi-abi/bin/mpiexec" \
  -DCMAKE_Fortran_COMPILER=NOTFOUND -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$mpich5_build" -j "$(nproc)" --target gcoll_stream_test gcoll_gpu_probe gcoll_yield_shim
cd "$mpich5_build"
ctest --output-on-failure -R 'gpu\.stream\.(sync\.np2|proxy\.np3|device\.np2)$' -j 3
stage_done "MPICH 5 stream build and tests"

# AddressSanitizer + UndefinedBehaviorSanitizer: unit tests and an MPI subset on their own
# build without CUDA (scripts/sanitize.sh, issue 15).
bash "$GCOLL_ROOT/scripts/sanitize.sh"
stage_done "AddressSanitizer"

# ThreadSanitizer: the thread test (MPI_THREAD_MULTIPLE) and the unit tests with threads,
# on their own build without CUDA (scripts/tsan.sh, issue 15).
bash "$GCOLL_ROOT/scripts/tsan.sh"
stage_done "ThreadSanitizer"
