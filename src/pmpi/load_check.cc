// The load check: at library load, before main, which MPI libraries the process holds.
// When the program runs under an MPI this libgcoll.so was not built for, every entry
// point forwards to the program's MPI unchanged (pmpi/mpi_flavor.h: GCOLL_FORWARD in
// entry_c.cc and entry_fortran.cc); when the loader bound the program's calls to gcoll's
// own MPI, nothing can run correctly and the process stops with a message.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/coll_list.h"
#include "base/config.h"
#include "base/hot.h"
#include "pmpi/mpi_flavor.h"

namespace gcoll {
namespace flavor {

void *g_foreign[kEntries] = {};
GCOLL_HOT_DATA bool g_foreign_mpi = false;

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
  // In the order of flavor::Entry (the call list, base/coll_list.h).
  static const char *const kNames[kEntries] = {
#define GCOLL_X(Name, lower, ...) "MPI_" #Name, "MPI_I" #lower, GCOLL_MPI_INIT_STR(Name),
      GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_R(Name, lower, UPPER) "MPI_" #Name,
      GCOLL_REQUEST_CALLS(GCOLL_R)
#undef GCOLL_R
      "MPI_Reduce_local",
      "MPI_Comm_set_info", "MPI_Comm_dup_with_info", "MPI_Comm_dup", "MPI_Comm_get_info",
      "MPI_Finalize",
#define GCOLL_X(Name, lower, ...) "MPI_" #Name "_c", "MPI_I" #lower "_c", GCOLL_MPI_INIT_STR(Name) "_c",
      GCOLL_COUNTED_COLLS(GCOLL_X)
#undef GCOLL_X
      "MPI_Reduce_local_c",
      "mpi_finalize_",
#define GCOLL_X(Name, lower, ...) "mpi_" #lower "_", "mpi_i" #lower "_", GCOLL_MPI_F_INIT_STR(lower),
      GCOLL_COLLS(GCOLL_X)
#undef GCOLL_X
#define GCOLL_R(Name, lower, UPPER) "mpi_" #lower "_",
      GCOLL_REQUEST_CALLS(GCOLL_R)
#undef GCOLL_R
      "mpi_reduce_local_",
      "mpi_comm_set_info_", "mpi_comm_dup_with_info_", "mpi_comm_dup_", "mpi_comm_get_info_",
  };
  for (int e = 0; e < kEntries; ++e)  // C ones from the program's MPI, Fortran ones from the next library
    g_foreign[e] = e < kFFinalize ? (h ? dlsym(h, kNames[e]) : nullptr) : dlsym(RTLD_NEXT, kNames[e]);
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
