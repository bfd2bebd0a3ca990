#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (issue 15): builds gcoll without CUDA into
# build-asan/ (or $GCOLL_BUILD_ASAN) with -fsanitize=address,undefined and runs the unit
# tests (the emulated GPU, the rails with threads as ranks, the staged channel) and an
# MPI subset on 4 ranks: the engine on one node and on 2 virtual nodes (UCX between
# them), bad input, threads, the small soak, the container limits. Any sanitizer report
# fails the test that made it (halt_on_error). Run by scripts/test.sh; about 4 minutes
# on 2 cores.
#
# Options, and why:
#   detect_leaks=0            Open MPI, UCX and hwloc keep allocations until exit by design
#                             (LeakSanitizer reports hundreds from MPI_Init alone);
#                             gcoll's own lifetime checks are the soak's flat RSS (in the
#                             normal build: here the soak runs without its memory check).
#   allocator_may_return_null=1  `new` must throw std::bad_alloc as it does without ASan
#                             (gcoll turns it into MPI_ERR_NO_MEM; the tests check that).
#   verify_asan_link_order=0  preloaded programs (LD_PRELOAD=libgcoll.so) that are not
#                             built with ASan get the runtime through libgcoll.so.
# Not run: mpi.boundary.engine.np2 (it needs a 4 GiB allocation to fail, which ASan
# reports as a fatal out-of-memory whatever the options), and the GPU tests (they need
# the CUDA build; the emulated GPU is covered in-process by the unit tests).
set -euo pipefail
source "$(dirname "$0")/env.sh"
asan_build="${GCOLL_BUILD_ASAN:-$GCOLL_ROOT/build-asan}"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$GCOLL_ROOT" -B "$asan_build" -DCMAKE_BUILD_TYPE=Debug -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$asan_build" -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:verify_asan_link_order=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$asan_build"
ctest --output-on-failure -L unit -j "$(nproc)"
subset='^(mpi\.(allreduce|bcast|allgather|comms)\.(engine|vnodes2)\.np4|mpi\.errors\.(default|engine|vnodes2)\.np4'
subset+='|engine\.threads\..*|engine\.limits\..*|engine\.traffic\.(small|large)\.n2xl2)$'
ctest --output-on-failure -R "$subset" -j 1
# The soak's mix, without its memory check: ASan's quarantine holds freed memory (up to
# 256 MiB), so the resident set grows by design here.
timeout -k 5 240 mpirun -np 4 -x LD_PRELOAD="$asan_build/lib/libgcoll.so" -x GCOLL_HOST_BUFFERS=engine \
  -x GCOLL_RANKS_PER_NODE=2 "$asan_build/bin/gcoll_soak" --calls 3000 --comm-every 100 --device off \
  --rss-slack-mib 100000 --timeout 200
