/* gcoll public API.
 *
 * gcoll is used without any code change: put libgcoll.so under an MPI program with
 *     mpirun -np N -x LD_PRELOAD=/path/to/libgcoll.so ./app
 * and it takes over MPI_Allreduce, MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block
 * (C and Fortran); it also sees MPI_Reduce, MPI_Gather, MPI_Scatter, MPI_Alltoall,
 * MPI_Reduce_scatter, MPI_Allgatherv, MPI_Gatherv and MPI_Scatterv (counted; device
 * buffers staged through host memory, host buffers to the MPI).
 * This header is for programs and tools that want to query it.
 */
#ifndef GCOLL_GCOLL_H
#define GCOLL_GCOLL_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GCOLL_VERSION_MAJOR 0
#define GCOLL_VERSION_MINOR 1
#define GCOLL_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *gcoll_version(void);

/* Prints version, build options and every GCOLL_* setting (current value and help)
 * to `out`. Works before MPI_Init and without MPI. Returns 0, or -1 on a write error. */
int gcoll_print_info(FILE *out);

/* Prints the settings table as Markdown rows (setting, type, default, what a communicator
 * does when its ranks differ, meaning): the README's table. Returns 0, or -1 on a write
 * error. `gcoll_info --markdown` calls it. */
int gcoll_print_settings_markdown(FILE *out);

/* 1 when the library takes part in collectives (GCOLL_ENABLE=1), else 0. */
int gcoll_enabled(void);

/* Number of communicators for which gcoll currently holds per-communicator state.
 * For tests and diagnostics. */
int gcoll_live_comm_states(void);

/* This process's count (all threads) of one of the library's own costs, by its name in
 * the stats file's "library" object: "hidden_mpi_calls", "memory_agreements",
 * "pointer_queries", "kind_cache_hits", "deviations", "device_topology_<class>",
 * "p2p_probe_failures". -1 for an unknown name. For tests
 * and diagnostics. */
long long gcoll_library_counter(const char *name);

/* This process's number of calls (all threads) on one line of the stats file: `coll` is
 * its key ("allreduce", "iallreduce", "allreduce_init", "allreduce_enqueue", ...), `what`
 * a path ("engine", "staged", "passthrough", "errors") or "@<algorithm>": the engine calls
 * that ran that algorithm of the collective's table (gcoll_info lists them; the forms of
 * one collective share its table, so "@ring" counts the blocking and nonblocking calls
 * alike). -1 for an unknown key or name. Benchmarks take the difference around a loop to
 * say which path its calls took (benchmarks/osu_style -J). */
long long gcoll_call_count(const char *coll, const char *what);

/* The name of the i-th (from 0) engine algorithm of `coll`'s table ("staged" included),
 * NULL past the last or for an unknown key. */
const char *gcoll_algorithm_name(const char *coll, int i);

/* The source's commit the library was built from (`git describe --always --dirty` when
 * CMake configured the build; "unknown" outside a git checkout). */
const char *gcoll_build_commit(void);

/* Prints the node topology gcoll uses (GCOLL_TOPO_FILE, else what it detects: CUDA,
 * hwloc, NVML) as `nvidia-smi topo -m` does, then what gcoll makes of it: the P2P verdict
 * of every GPU pair, the P2P islands, the NVLink rings, each rank's rail NIC and the path
 * each collective would take on device buffers, for `ranks_per_gpu` ranks per GPU (local
 * rank r on GPU r % GPUs). Works without MPI. Returns 0; 1 where GCOLL_TOPO_FILE is set but
 * unusable (the detected topology is printed, the file's fault, with its line, goes to
 * stderr); -1 on a write error.
 * `gcoll_info --topology [--ranks-per-gpu N]` calls it. */
int gcoll_print_topology(FILE *out, int ranks_per_gpu);

/* Shared-memory segments left in /dev/shm by jobs killed while they set up a
 * communicator (every other segment is unlinked at once): removes those whose creator is
 * not alive on this machine and that are older than a minute (dry_run != 0: only lists
 * them), one line each on `out` (may be NULL). Returns how many, or -1 when /dev/shm
 * cannot be read. `gcoll_info --cleanup` calls it. */
int gcoll_cleanup_segments(FILE *out, int dry_run);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_GCOLL_H */
