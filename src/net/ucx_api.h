// UCX, loaded when the transport first starts (dlopen of libucp.so.0), not linked:
// libgcoll.so has no NEEDED entry for UCX. Why:
//   - one UCX per process. An MPI may bring its own (PyPI's mpich wheel: UCX 1.20 in
//     lib/mpich, found by its RUNPATH), under the same sonames as the system's (Debian:
//     1.13). A library linked to the system's UCX loads it first, and the MPI's libuct
//     then fails to load against the wrong libucs ("symbol lookup error" before main).
//     Loaded after MPI_Init, libucp.so.0 is the one the MPI already holds, if it holds one
//     (dlopen matches loaded sonames), else the system's: gcoll and the MPI share it;
//   - libgcoll.so loads where UCX is not installed (then only the transport is missing:
//     nodes cannot talk, so calls across nodes go to the MPI).
// Built against the UCX headers found at configure time (older or equal to the library
// loaded: UCX keeps its API backward compatible).
//
// ucx_internal.h maps the ucp_* / ucs_* names the transport uses onto this table, so the
// transport's code reads as plain UCX.
#pragma once

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <string>

namespace gcoll::ucx {

#define GCOLL_UCX_FUNCTIONS(X)                                                                                 \
  X(ucp_init_version) X(ucp_cleanup) X(ucp_config_read) X(ucp_config_release) X(ucp_config_modify)            \
  X(ucp_config_print) X(ucp_context_query) X(ucp_get_version_string) X(ucp_worker_create) X(ucp_worker_destroy) \
  X(ucp_worker_query) X(ucp_worker_get_address) X(ucp_worker_release_address) X(ucp_worker_progress)           \
  X(ucp_ep_create) X(ucp_ep_close_nbx) X(ucp_ep_flush_nbx) X(ucp_ep_print_info) X(ucp_request_free)            \
  X(ucp_request_cancel) X(ucp_request_check_status) X(ucp_tag_send_nbx) X(ucp_tag_recv_nbx)                    \
  X(ucp_tag_recv_request_test) X(ucs_status_string)

struct Api {
#define GCOLL_UCX_MEMBER(f) decltype(&::f) f = nullptr;
  GCOLL_UCX_FUNCTIONS(GCOLL_UCX_MEMBER)
#undef GCOLL_UCX_MEMBER
};

// Whether the UCX loaded has the UCT component `name` (e.g. "cuda_ipc") with at least one
// memory domain: its module loaded (a UCX built with CUDA, and a CUDA driver). Answered
// through uct_query_components, looked up on its own (a UCX without it answers false).
bool has_component(const char *name);

// Loads UCX once (thread-safe); false, with the reason in *why, when it cannot be loaded
// or lacks a function. Every other use of the table comes after a successful load.
bool load_api(std::string *why);
const Api &api();

}  // namespace gcoll::ucx
