// UCX's memory hooks (libucm): a counter that moves on at every map and unmap of the
// process, which lets the real driver's memory-kind cache remember host buffers
// (driver_cuda.cc, device.h: KindCache). UCX is loaded, never linked (net/ucx_api.h: the
// process's UCX, the MPI's if it brought one). libucm.so.0 cannot be loaded by itself: it
// needs symbols of libucs.so.0 (ucs_load_modules), which depends on it; so the hooks are
// reached through libucs.so.0 (found on an H200 at 2026-11-26: loading libucm alone failed
// and every host buffer was queried at every call).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace gcoll {
namespace cuda {

// Installs the handler once and checks that events arrive (ucm_test_events). False, with
// the reason in *why, when UCX cannot be loaded, has no hooks, or reports no events (e.g.
// UCX_MEM_EVENTS=no). Thread-safe; later calls answer as the first.
bool install_vm_hooks(std::string *why);

// Moves on BEFORE any range of the process is unmapped or remapped (once the hooks are
// installed). Never 0.
const std::atomic<std::uint64_t> &vm_epoch();

}  // namespace cuda
}  // namespace gcoll
