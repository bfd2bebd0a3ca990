#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (issue 15): builds gcoll without CUDA into
# build-asan/ (or $GCOLL_BUILD_ASAN) with -fsanitize=address,undefined and runs the unit
# tests (the emulated GPU, the rails with threads as ranks, the staged channel) and an
# MPI subset on 4 ranks: the engine on one node and on 2 virtual nodes (UCX between
# them; issue 23's collectives there too), bad input, threads, the small soak, the
# container limits; then the device path
# on the emulated GPU (GCOLL_CUDA=emulate: the GPU tests of mpi_tests/gpu are built
# without CUDA on the emulation alone): gcoll_gpu_mpi_test on one node (the fused
# one-shot and the banks) and on 2 virtual nodes pipelined and direct, each with a part
# of its suites; device buffers from 4 threads per rank, memory kinds, the fused
# protocol, the staged path's stats, device traffic between nodes, stream-ordered calls
# on the proxy thread (gpu.stream.proxy.np3) and on the device path (gpu.stream.device.np2:
# the stream communicators' banks, mapped peers and scratch); the soak's mix on device buffers.
# Any sanitizer report fails the test that made it (halt_on_error). Run
# by scripts/test.sh; about 4 minutes on 2 cores, and about one more for the GPU part
# (69 s measured with other jobs loading the machine to 7-9).
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
#   GCOLL_EMU_DELAY=20        (GPU part) the emulated streams' work runs up to 20 us late
#                             rather than 200: still out of order, five times faster
#                             under ASan (as gpu.memkind.* and gpu.soak.* do).
# Not run: mpi.boundary.engine.np2 (it needs a 4 GiB allocation to fail, which ASan
# reports as a fatal out-of-memory whatever the options); gpu.limits.memlock.np2 (ASan's
# mlock interceptor ignores the call and returns 0, so the memlock limit never bites);
# the slowest GPU suites (GpuOrdering, GpuBackToBack, GpuAllreduceLarge.FloatSum*, most
# of GpuDerived and GpuMixed: minutes under ASan; when the GPU part was added, the whole of
# gcoll_gpu_mpi_test passed under ASan on one node, on 2 virtual nodes pipelined and
# direct, staged, and every gpu.{threads,memkind,fused,stats,traffic}.* test too); the
# tests that need the CUDA runtime (gpu.fused_kernels, gpu.osu.*: not built without
# CUDA).
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
subset+='|mpi\.gather_reduce\.vnodes2\.np4|engine\.threads\..*|engine\.limits\..*|engine\.traffic\.(small|large)\.n2xl2)$'
ctest --output-on-failure -R "$subset" -j 1
# The soak's mix, without its memory check: ASan's quarantine holds freed memory (up to
# 256 MiB), so the resident set grows by design here.
timeout -k 5 240 mpirun -np 4 -x LD_PRELOAD="$asan_build/lib/libgcoll.so" -x GCOLL_HOST_BUFFERS=engine \
  -x GCOLL_HOST_TUNE=off -x GCOLL_RANKS_PER_NODE=2 "$asan_build/bin/gcoll_soak" --calls 3000 --comm-every 100 --device off \
  --rss-slack-mib 100000 --timeout 200

# ---- the device path on the emulated GPU ----
# gcoll_gpu_mpi_test on 4 ranks (NAME FILTER VAR=VALUE...): the suites of FILTER, with
# the environment of the gpu.mpi.* test it stands for (mpi_tests/gpu/CMakeLists.txt).
gpu_mpi() {
  local name=$1 filter=$2 xs=() v
  shift 2
  for v in "$@"; do xs+=(-x "$v"); done
  echo "sanitize.sh: $name on the emulated GPU: $filter"
  OMPI_MCA_mpi_yield_when_idle=1 timeout -k 5 200 mpirun -np 4 -x GCOLL_CUDA=emulate -x GCOLL_ENABLE=1 \
    -x GCOLL_EMU_DELAY=20 -x GCOLLTEST_TIMEOUT=180 "${xs[@]}" "$asan_build/bin/gcoll_gpu_mpi_test" \
    --gtest_filter="$filter"
}
gpu_start=$SECONDS
# One node: the device engine (fused one-shot where it applies, the banks), the staged
# path (derived types, user ops), buffers freed and reallocated, pool memory, mixed kinds.
gpu_mpi gpu.mpi.default.np4 'GpuSetup.*:GpuAllreduceMatrix.*/World_*:GpuAllreduceComms.*:GpuBcast.*/World:GpuAllgather.*:GpuAllgatherLarge.*:GpuStale.*:GpuUserOp.*:GpuDerived.Allgather/World:GpuAsync.MixedWithCudaMalloc:GpuOffsets.OddByteOffsets:GpuMixed.*/SendDevice_RecvHost' \
  GCOLL_DEVICE_FUSED=auto
# 2 virtual nodes of 2: the hierarchical engine on device memory, the rails' bytes
# through pinned host memory in pieces of 64K, or read from the device memory directly.
across='GpuAllreduceComms.*:GpuBcast.*/World:GpuAllgather.*/World:GpuAllreduceLarge.AwkwardCounts:GpuBcastLarge.*:GpuAllgatherLarge.*:GpuStale.*'
gpu_mpi gpu.mpi.vnodes2.pipelined.np4 "$across" GCOLL_RANKS_PER_NODE=2 GCOLL_DEVICE_NET=pipelined GCOLL_DEVICE_NET_CHUNK=64K
gpu_mpi gpu.mpi.vnodes2.direct.np4 "$across" GCOLL_RANKS_PER_NODE=2 GCOLL_DEVICE_NET=direct GCOLL_DEVICE_NET_CHUNK=64K
# Whole GPU tests (gpu_or_skip.sh finds no GPU in this build and runs them on the emulated one).
gpu_subset='^gpu\.(threads\..*|memkind\.np4|fused\.np4|stats\.staged\.np4|traffic\.large\.pipelined\.n2xl2'
gpu_subset+='|traffic\.small\.direct\.n2xl2|colls\.vnodes2\.pipelined\.np4|stream\.proxy\.np3|stream\.device\.np2)$'
ctest --output-on-failure -R "$gpu_subset" -j 1
# The soak's mix on device buffers too (and host and device ranks in one call), the
# engine on both, communicators created and freed every 100 calls, device buffers
# reallocated (as pool memory every other time); without its memory check (see above).
timeout -k 5 240 mpirun -np 4 -x LD_PRELOAD="$asan_build/lib/libgcoll.so" -x GCOLL_CUDA=emulate -x GCOLL_EMU_DELAY=20 \
  -x GCOLL_HOST_BUFFERS=engine -x GCOLL_HOST_TUNE=off "$asan_build/bin/gcoll_soak" --calls 1500 --comm-every 100 --realloc-every 2 \
  --max-bytes 1048576 --rss-slack-mib 100000 --timeout 200
echo "sanitize.sh: the device path on the emulated GPU took $((SECONDS - gpu_start)) s"
