// C entry points. The application's calls land here instead of in the MPI library.
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/config.h"
#include "pmpi/collectives.h"
#include "pmpi/mpi_flavor.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

// Under another MPI (pmpi/mpi_flavor.h, the load check): the call goes on unchanged. The
// pointer is loaded and jumped to before anything else, so the arguments reach the
// process's MPI in the registers the caller used (its handles may be wider or narrower
// than this build's).
#define GCOLL_FORWARD(entry, type, ...)                                          \
  if (void *next = gcoll::flavor::foreign(gcoll::flavor::entry)) return reinterpret_cast<type>(next)(__VA_ARGS__);

extern "C" {

GCOLL_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm) {
  GCOLL_FORWARD(kAllreduce, decltype(&MPI_Allreduce), sendbuf, recvbuf, count, datatype, op, comm)
  return gcoll::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

GCOLL_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  GCOLL_FORWARD(kBcast, decltype(&MPI_Bcast), buffer, count, datatype, root, comm)
  return gcoll::bcast(buffer, count, datatype, root, comm);
}

GCOLL_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_FORWARD(kAllgather, decltype(&MPI_Allgather), sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
  return gcoll::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// MPI-4 large counts (MPI_Count), where the MPI has them (MPICH 4; Open MPI 4.1 has
// none): a count that fits an int takes gcoll's path like any other call (the MPI's own
// int-count call behind it computes the same); a larger one goes to the MPI's large-count
// call and is counted as passthrough, so that every call is seen and the stats add up.
// (A device buffer of more than 2^31 elements therefore reaches the MPI as it is.)
// Forwarded by the load check like the others (a library built for the standard ABI may
// meet a program built for MPICH's native ABI, which makes these calls).
#if GCOLL_MPI_LARGE_COUNT
namespace {

bool fits_int(MPI_Count n) { return n >= 0 && n <= INT_MAX; }

unsigned long long type_bytes(MPI_Count count, MPI_Datatype t) {
  MPI_Count sz = 0;
  if (PMPI_Type_size_c(t, &sz) != MPI_SUCCESS || sz < 0 || count < 0) return 0;
  return static_cast<unsigned long long>(count) * static_cast<unsigned long long>(sz);
}

}  // namespace

GCOLL_EXPORT int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm) {
  GCOLL_FORWARD(kAllreduceC, decltype(&MPI_Allreduce_c), sendbuf, recvbuf, count, datatype, op, comm)
  if (fits_int(count)) return gcoll::allreduce(sendbuf, recvbuf, static_cast<int>(count), datatype, op, comm);
  return gcoll::count_passthrough(gcoll::Coll::Allreduce, PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm),
                                  type_bytes(count, datatype));
}

GCOLL_EXPORT int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  GCOLL_FORWARD(kBcastC, decltype(&MPI_Bcast_c), buffer, count, datatype, root, comm)
  if (fits_int(count)) return gcoll::bcast(buffer, static_cast<int>(count), datatype, root, comm);
  return gcoll::count_passthrough(gcoll::Coll::Bcast, PMPI_Bcast_c(buffer, count, datatype, root, comm), type_bytes(count, datatype));
}

GCOLL_EXPORT int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  GCOLL_FORWARD(kAllgatherC, decltype(&MPI_Allgather_c), sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                comm)
  if (fits_int(sendcount) && fits_int(recvcount))
    return gcoll::allgather(sendbuf, static_cast<int>(sendcount), sendtype, recvbuf, static_cast<int>(recvcount),
                            recvtype, comm);
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return gcoll::count_passthrough(
      gcoll::Coll::Allgather, PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
      type_bytes(recvcount, recvtype) * static_cast<unsigned long long>(n > 0 ? n : 0));
}
#endif

GCOLL_EXPORT int MPI_Finalize(void) {
  GCOLL_FORWARD(kFinalize, decltype(&MPI_Finalize))
  return gcoll::finalize();
}

}  // extern "C"

// ---- the load check ---------------------------------------------------------------------
namespace gcoll {
namespace flavor {

void *g_foreign[kEntries] = {};
bool g_foreign_mpi = false;

namespace {

// An MPI C library loaded in the process: a loaded object that defines PMPI_Init itself.
struct MpiLib {
  std::string path;
  int family = -1;   // kMpis index, -1: an MPI gcoll does not know
  int abi = 0;       // the MPI-5 standard ABI's major version it implements, or 0 (a native ABI)
};

// Whether `sym` (found through a handle, which also searches the object's dependencies) is
// defined in the object `path` itself.
bool defined_in(void *sym, const std::string &path) {
  Dl_info info{};
  return sym && dladdr(sym, &info) && info.dli_fname && path == info.dli_fname;
}

int collect_object(struct dl_phdr_info *info, size_t, void *data) {
  if (info->dlpi_name && info->dlpi_name[0]) static_cast<std::vector<std::string> *>(data)->push_back(info->dlpi_name);
  return 0;
}

std::vector<MpiLib> mpi_libraries() {
  std::vector<std::string> objects;
  dl_iterate_phdr(collect_object, &objects);
  std::vector<MpiLib> libs;
  for (const std::string &path : objects) {
    void *h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    if (defined_in(dlsym(h, "PMPI_Init"), path)) {
      MpiLib lib;
      lib.path = path;
      for (int k = 0; k < static_cast<int>(sizeof kMpis / sizeof kMpis[0]) && lib.family < 0; ++k)
        if (defined_in(dlsym(h, kMpis[k].marker), path)) lib.family = k;
      // MPI-5: callable before MPI_Init; a native ABI's answers -1 (MPICH 5's libmpi.so).
      void *abi_version = dlsym(h, "PMPI_Abi_get_version");
      if (defined_in(abi_version, path)) {
        int major = -1, minor = -1;
        if (reinterpret_cast<int (*)(int *, int *)>(abi_version)(&major, &minor) == 0 && major >= 1)
          lib.abi = major;
      }
      libs.push_back(lib);
    }
    dlclose(h);
  }
  return libs;
}

// Whether gcoll, as built, can run under `lib`.
bool compatible(const MpiLib &lib) {
  return kBuiltAbi ? lib.abi == kBuiltAbiMajor : lib.abi == 0 && lib.family == kBuiltFor;
}

std::string describe(const MpiLib &lib) {
  std::string s = lib.family >= 0 ? kMpis[lib.family].name : "an MPI gcoll does not know";
  if (lib.abi) s += " through the MPI standard ABI " + std::to_string(lib.abi);
  return s + " (" + lib.path + ")";
}

// Rank 0 of the job (by the launchers' variables), or a process started without one.
bool first_rank() {
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *r = foreign_env(v)) return std::atoi(r) == 0;
  return true;
}

__attribute__((constructor)) void load_check() {
  // An MPI in the process that gcoll was not built for (gcoll never loads one itself
  // except through its own dependency): the program's.
  const std::vector<MpiLib> libs = mpi_libraries();
  const MpiLib *other = nullptr;
  for (const MpiLib &lib : libs)
    if (!compatible(lib)) {
      other = &lib;
      break;
    }
  if (!other) return;
  const std::string program_mpi = describe(*other);
  // Where the program's MPI calls go: the library its PMPI_Init comes from.
  Dl_info init_info{};
  void *init = dlsym(RTLD_DEFAULT, "PMPI_Init");
  const bool bound_to_program_mpi = init && dladdr(init, &init_info) && init_info.dli_fname &&
                                    other->path == init_info.dli_fname;
  const bool print = first_rank();
  if (!bound_to_program_mpi) {
    if (print)
      std::fprintf(stderr,
                   "gcoll: this libgcoll.so was built for %s %s but the program runs under %s, and the loader "
                   "bound the program's MPI calls to gcoll's MPI: gcoll refuses to run (exit 1); use a "
                   "libgcoll.so built for the program's MPI (GCOLL_MPI)\n",
                   built_for(), kBuiltVersion, program_mpi.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  void *h = dlopen(other->path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  static const char *const kNames[kEntries] = {
      "MPI_Allreduce",  "MPI_Bcast",  "MPI_Allgather",  "MPI_Finalize", "MPI_Allreduce_c", "MPI_Bcast_c",
      "MPI_Allgather_c", "mpi_allreduce_", "mpi_bcast_", "mpi_allgather_", "mpi_finalize_"};
  for (int e = 0; e < kEntries; ++e)  // C ones from the program's MPI, Fortran ones from the next library
    g_foreign[e] = e < kFAllreduce ? (h ? dlsym(h, kNames[e]) : nullptr) : dlsym(RTLD_NEXT, kNames[e]);
  // mpi_finalize_f08_ may pass a null ierror: forward every Fortran MPI_Finalize to the
  // f08 binding when there is one (it takes both).
  if (void *f08 = dlsym(RTLD_NEXT, "mpi_finalize_f08_")) g_foreign[kFFinalize] = f08;
  g_foreign_mpi = true;
  if (print)
    std::fprintf(stderr,
                 "gcoll: this libgcoll.so was built for %s %s but the program runs under %s: gcoll stays out "
                 "of the way (every call goes to the program's MPI unchanged; no stats)\n",
                 built_for(), kBuiltVersion, program_mpi.c_str());
}

}  // namespace

}  // namespace flavor
}  // namespace gcoll
