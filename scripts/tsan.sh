#!/usr/bin/env bash
# ThreadSanitizer (issue 15): builds gcoll without CUDA into build-tsan/ (or
# $GCOLL_BUILD_TSAN) with -fsanitize=thread and runs what has threads in it:
#   - the thread test under MPI_THREAD_MULTIPLE, 4 ranks of 4 threads, each thread on its
#     own communicator: engine.threads.vnodes2.np4 (host buffers through the engine, 2
#     virtual nodes: UCX between them), engine.threads.passthrough.np4, and
#     gpu.threads.rpn{0,2}.np4 (device buffers on the emulated GPU on odd threads);
#   - mpi.nonblocking.threads_engine.np3: the same thread test's nonblocking calls through
#     the engine's progress threads (coll/async_queue.h);
#   - gpu.stream.proxy.np3: stream-ordered calls (MPIX_<Name>_enqueue) on the stream
#     communicators' proxy threads (coll/stream_queue.h), on the emulated GPU;
#   - with GCOLL_TSAN_UCX=1, gcoll's UCX transport alone used from two threads
#     (ucx_mt_np2_default, ucx_mt_np4_tcp: about 10 s more; the engine test above already
#     drives it from 4 threads);
#   - gpu.threads.rpn0.np4 once more with GCOLL_DEVICE_FUSED=auto: the fused one-shot,
#     whose emulated stream threads store the outcome words the calling thread polls;
#   - the unit tests with threads: the rails with threads as ranks (gcoll_unit_tests),
#     the emulated GPU's streams (gcoll_emulate_tests), the device channels
#     (gcoll_device_channel_tests).
# Any TSan report fails the program that made it (exit code 66 at its end).
#
# The MPI and UCX are Debian's, not instrumented: scripts/tsan.supp says why each of
# their libraries is ignored (called_from_lib) and why that cannot hide a race of gcoll's.
# Before the tests, a canary checks that it does not: a memcpy inside libgcoll.so racing
# with a plain write must be reported with these settings. The settings, and why:
#   UCX_MEM_MMAP_HOOK_MODE=none  libucm patches madvise; glibc calls madvise when a thread
#                     exits (start_thread -> advise_stack_range), after TSan has torn the
#                     thread down, and libucm's hook then takes a pthread_rwlock that TSan
#                     intercepts: SIGSEGV in __tsan::MutexPreReadLock at the first thread
#                     exit of any rank. gcoll without CUDA uses no UCX memory events.
#   a dlclose that keeps libraries loaded  (lib/libgcoll_tsan_keep_dsos.so, built here,
#                     preloaded into every rank through GCOLL_MPI_TEST_SHIM): TSan ends the
#                     process when a library named in called_from_lib is unloaded, and Open
#                     MPI dlcloses its components in MPI_Init and MPI_Finalize.
#   history_size=4    older accesses kept, so that both stacks of a report can be restored.
# Without the suppressions a run of the thread test makes about 250 reports per rank, all
# inside Open MPI, and symbolizing them slows it past its 150 s watchdog.
#
# Built Debug at -O1 (assertions on). Run by scripts/test.sh, or alone: bash
# scripts/tsan.sh. About 2 minutes on 2 cores from an empty build directory (95 s of CPU),
# under one when it is up to date.
set -euo pipefail
source "$(dirname "$0")/env.sh"
tsan_build="${GCOLL_BUILD_TSAN:-$GCOLL_ROOT/build-tsan}"
supp="$GCOLL_ROOT/scripts/tsan.supp"
flags="-fsanitize=thread -O1 -fno-omit-frame-pointer"
start=$SECONDS

# The dlclose that keeps every library loaded (no TSan in it: it must not be intercepted).
mkdir -p "$tsan_build/lib"
keep="$tsan_build/lib/libgcoll_tsan_keep_dsos.so"
if [ ! -f "$keep" ]; then
  printf '%s\n' '/* scripts/tsan.sh: keeps dlopened libraries loaded (TSan, called_from_lib). */' \
    'int dlclose(void *handle) { (void)handle; return 0; }' |
    cc -shared -fPIC -O2 -x c - -o "$keep"
fi

# GCOLL_MPI_TEST_SHIM: the preload that gcoll_add_mpi_test adds to every MPI test
# (cmake/GcollMpiTest.cmake); Open MPI builds set none of their own.
cmake -S "$GCOLL_ROOT" -B "$tsan_build" -DCMAKE_BUILD_TYPE=Debug -DGCOLL_WITH_CUDA=OFF -DGCOLL_BUILD_BENCHMARKS=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  -DGCOLL_MPI_TEST_SHIM="$keep" >/dev/null
if ! grep -q "libgcoll_tsan_keep_dsos" "$tsan_build/mpi_tests/engine/CTestTestfile.cmake"; then
  echo "tsan.sh: the MPI tests do not preload $keep (GCOLL_MPI_TEST_SHIM not used?)" >&2
  exit 1
fi

# What the tests below need (the GPU and UCX targets where this tree defines them).
have_target() { grep -Eq "^(\.\.\. )?$1(:.*)?\$" <<<"$targets_all"; }
targets_all=$(cmake --build "$tsan_build" --target help)
targets=(gcoll gcoll_engine_threads gcoll_unit_tests gcoll_emulate_tests gcoll_device_channel_tests gcoll_nb_threads)
# (mpi.nonblocking.threads_engine.np3: the engine's progress threads, one per communicator,
# beside 4 application threads per rank; issue 29)
mpi_tests='engine\.threads\..*|mpi\.nonblocking\.threads_engine\.np3'
if have_target gcoll_gpu_threads; then
  targets+=(gcoll_gpu_threads gcoll_gpu_probe)
  mpi_tests+='|gpu\.threads\..*'
fi
# (gpu.stream.proxy.np3: the stream communicators' proxy threads, the emulated streams'
# threads running their host functions and waits, the application's thread; issue 30)
if have_target gcoll_stream_test; then
  targets+=(gcoll_stream_test gcoll_gpu_probe)
  mpi_tests+='|gpu\.stream\.proxy\.np3'
fi
if [ "${GCOLL_TSAN_UCX:-0}" = 1 ] && have_target ucx_test; then
  targets+=(ucx_test)
  mpi_tests+='|ucx_mt_np2_default|ucx_mt_np4_tcp'
fi
cmake --build "$tsan_build" -j "$(nproc)" --target "${targets[@]}"
echo "tsan.sh: built in $((SECONDS - start)) s"

export TSAN_OPTIONS="suppressions=$supp history_size=4 second_deadlock_stack=1"
export UCX_MEM_MMAP_HOOK_MODE=none

# Canary: with these settings a race inside libgcoll.so is still reported (gcoll_emu_memcpy
# from host to device copies the source in the calling thread, while main writes it).
canary="$tsan_build/bin/gcoll_tsan_canary"
cat >"$tsan_build/tsan_canary.c" <<'EOF'
/* scripts/tsan.sh: a race TSan must report (a memcpy in libgcoll.so vs a plain write). */
#include <pthread.h>
#include <stdio.h>
#include "gcoll/gcoll_emulate.h"
static int host[4096];
static void *dev;
static void *copier(void *arg) {
  (void)arg;
  for (int i = 0; i < 20; ++i) gcoll_emu_memcpy(dev, host, sizeof host);
  return NULL;
}
int main(void) {
  if (gcoll_emu_malloc(&dev, sizeof host, GCOLL_EMU_MEM_DEVICE) != 0) return 2;
  pthread_t t;
  pthread_create(&t, NULL, copier, NULL);
  for (int i = 0; i < 20; ++i)
    for (int k = 0; k < 4096; ++k) host[k] = i;
  pthread_join(t, NULL);
  gcoll_emu_device_synchronize();
  return 0;
}
EOF
# shellcheck disable=SC2086  # $flags: several words
cc $flags -g "$tsan_build/tsan_canary.c" -I"$GCOLL_ROOT/include" -L"$tsan_build/lib" -Wl,-rpath,"$tsan_build/lib" \
  -lgcoll -lpthread -o "$canary"
canary_out=$(GCOLL_CUDA=emulate "$canary" 2>&1) || true
if ! grep -q "WARNING: ThreadSanitizer: data race" <<<"$canary_out" || ! grep -q "(libgcoll.so" <<<"$canary_out"; then
  printf '%s\n' "$canary_out"
  echo "tsan.sh: the canary race inside libgcoll.so was not reported: these settings hide gcoll's races" >&2
  exit 1
fi
echo "tsan.sh: canary reported (a race in libgcoll.so is seen)"

# Unit tests with threads, all three at once (no MPI job: the MPI's libraries are loaded, not
# started).
cd "$tsan_build"
unit=("bin/gcoll_unit_tests" "bin/gcoll_emulate_tests --gtest_filter=-EmuChild.*" "bin/gcoll_device_channel_tests")
pids=()
for i in "${!unit[@]}"; do
  # shellcheck disable=SC2086
  ${unit[$i]} --gtest_brief=1 >"tsan_unit_$i.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!unit[@]}"; do
  if ! wait "${pids[$i]}"; then
    cat "tsan_unit_$i.log"
    echo "tsan.sh: FAILED: ${unit[$i]}" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ]
echo "tsan.sh: unit tests clean"

# The MPI tests with threads, one at a time.
ctest --output-on-failure -R "^($mpi_tests)\$" -j 1
# The fused one-shot (off by default) on the emulated GPU: its stream threads store the
# blocks' outcomes while the calling thread polls them (mem/cuda_space.cc), on one node.
if have_target gcoll_gpu_threads; then
  GCOLL_DEVICE_FUSED=auto ctest --output-on-failure -R '^gpu\.threads\.rpn0\.np4$'
fi
echo "tsan.sh: done in $((SECONDS - start)) s"
