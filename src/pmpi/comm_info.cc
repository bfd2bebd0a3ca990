// The communicator info key gcoll_allreduce_compress (the opt-in compressed allreduce,
// docs/compression.md): MPI_Comm_set_info, MPI_Comm_dup_with_info and MPI_Comm_dup (which
// duplicates the parent's hints, MPI-4 6.4.2) are interposed, so that the key is recorded in
// the communicator's team (coll/team.h) whatever the MPI keeps of unknown keys, and
// MPI_Comm_get_info reports it back where the MPI dropped it. Each is a collective call of
// the communicator, so every rank marks the key pending alike (Team::compress_pending); the
// values may differ per rank (MPI allows it): the next blocking call that may take the
// engine agrees them (Team::agree_compress: min and max; different: uncompressed, one
// warning). Nothing here communicates.
//
// Not seen: MPI_Comm_idup_with_info (MPI-4; the new communicator may not be touched before
// its request completes): its key is ignored, the communicator is not compressed unless
// GCOLL_ALLREDUCE_COMPRESS says so.
//
// Fortran: Open MPI's bindings call PMPI_* directly, so the spellings are defined here too
// (mpif.h, `use mpi`, `use mpi_f08`); MPICH's call the C entry points.
#include <mpi.h>

#include <cstring>

#include "base/log.h"
#include "pmpi/comm_state.h"
#include "pmpi/mpi_flavor.h"
#include "pmpi/runtime.h"

#define GCOLL_EXPORT __attribute__((visibility("default")))

namespace gcoll {
namespace {

constexpr const char *kKey = "gcoll_allreduce_compress";

// Under another MPI than gcoll's (the load check, pmpi/mpi_flavor.h): the program's MPI's
// own entry point, resolved at the load check. Loaded and jumped to before anything else,
// so that the arguments reach that MPI in the registers the caller used (its handles may
// be wider than this build's: a call made first, such as a dlsym, would let the compiler
// keep only this build's width of them across it).
template <class F>
F foreign_next(flavor::Entry e) {
  return reinterpret_cast<F>(flavor::foreign(e));
}

// This rank's value of the key in `info`: -1 absent (or no info); an unknown value counts
// as off (0), with a warning.
int info_value(MPI_Info info) {
  if (info == MPI_INFO_NULL) return -1;
  char value[64] = {0};
  int flag = 0;
#if MPI_VERSION >= 4
  int len = static_cast<int>(sizeof value);
  if (PMPI_Info_get_string(info, kKey, &len, value, &flag) != MPI_SUCCESS) return -1;
#else
  if (PMPI_Info_get(info, kKey, static_cast<int>(sizeof value) - 1, value, &flag) != MPI_SUCCESS) return -1;
#endif
  if (!flag) return -1;
  Compress c = Compress::Off;
  if (!parse_compress(value, &c)) {
    GCOLL_WARN("info key %s='%s' is not one of off|bf16|fp16|fp8: off", kKey, value);
    return 0;
  }
  return static_cast<int>(c);
}

// The team of an intracommunicator (created: local work only), or nullptr.
CommState *team_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || !library_active()) return nullptr;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return nullptr;
  CommState *s = nullptr;
  try {
    if (!ok(comm_state(comm, &s))) return nullptr;
  } catch (...) {
    return nullptr;
  }
  return s;
}

// A collective call gave `comm` the hints `info`.
void note(MPI_Comm comm, MPI_Info info) {
  if (CommState *s = team_of(comm)) {
    s->compress_info_mine = info_value(info);
    s->compress_pending = true;
  }
}

}  // namespace

int comm_set_info(MPI_Comm comm, MPI_Info info) {
  const int rc = PMPI_Comm_set_info(comm, info);
  if (rc == MPI_SUCCESS) note(comm, info);
  return rc;
}

int comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  const int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
  if (rc == MPI_SUCCESS) note(*newcomm, info);
  return rc;
}

int comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  const int rc = PMPI_Comm_dup(comm, newcomm);
  if (rc != MPI_SUCCESS) return rc;
  // The parent's key, as it stands on every rank: agreed (and nothing pending), else pending
  // alike on every rank with this rank's value.
  CommState *p = library_active() ? comm_state_peek(comm) : nullptr;
  if (!p || (p->compress_info < 0 && !p->compress_pending)) return rc;
  if (CommState *s = team_of(*newcomm)) {
    s->compress_info = p->compress_info;
    s->compress_info_mine = p->compress_info_mine;
    s->compress_pending = p->compress_pending;
  }
  return rc;
}

int comm_get_info(MPI_Comm comm, MPI_Info *info_used) {
  const int rc = PMPI_Comm_get_info(comm, info_used);
  if (rc != MPI_SUCCESS || !info_used || *info_used == MPI_INFO_NULL) return rc;
  CommState *s = library_active() ? comm_state_peek(comm) : nullptr;
  if (!s) return rc;
  const int v = !s->compress_pending && s->compress_info >= 0 ? s->compress_info : s->compress_info_mine;
  if (v < 0 || v >= kCompressFormats) return rc;
  PMPI_Info_set(*info_used, kKey, compress_name(static_cast<Compress>(v)));
  return rc;
}

}  // namespace gcoll

extern "C" {

GCOLL_EXPORT int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  if (auto next = gcoll::foreign_next<decltype(&MPI_Comm_set_info)>(gcoll::flavor::kComm_set_info)) return next(comm, info);
  return gcoll::comm_set_info(comm, info);
}

GCOLL_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  if (auto next = gcoll::foreign_next<decltype(&MPI_Comm_dup_with_info)>(gcoll::flavor::kComm_dup_with_info))
    return next(comm, info, newcomm);
  return gcoll::comm_dup_with_info(comm, info, newcomm);
}

GCOLL_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  if (auto next = gcoll::foreign_next<decltype(&MPI_Comm_dup)>(gcoll::flavor::kComm_dup)) return next(comm, newcomm);
  return gcoll::comm_dup(comm, newcomm);
}

GCOLL_EXPORT int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) {
  if (auto next = gcoll::foreign_next<decltype(&MPI_Comm_get_info)>(gcoll::flavor::kComm_get_info)) return next(comm, info_used);
  return gcoll::comm_get_info(comm, info_used);
}

}  // extern "C"

#if GCOLL_MPI_FORTRAN_ENTRY_POINTS
// Open MPI's Fortran bindings (mpif.h, `use mpi`: ierror required; `use mpi_f08`: handles
// are TYPE(...) with the INTEGER handle as only member, ierror optional).
namespace {
void set_ierror(MPI_Fint *ierror, int rc) {
  if (ierror) *ierror = static_cast<MPI_Fint>(rc);
}
}  // namespace


extern "C" {

__attribute__((visibility("hidden"))) void gcoll_f_comm_set_info(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_comm_set_info);
  if (auto next = gcoll::foreign_next<F>(gcoll::flavor::kFComm_set_info)) return next(comm, info, ierror);
  set_ierror(ierror, gcoll::comm_set_info(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info)));
}
GCOLL_FORTRAN_SPELLINGS(mpi_comm_set_info, MPI_COMM_SET_INFO, gcoll_f_comm_set_info, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

__attribute__((visibility("hidden"))) void gcoll_f_comm_dup_with_info(MPI_Fint *comm, MPI_Fint *info,
                                                                      MPI_Fint *newcomm, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_comm_dup_with_info);
  if (auto next = gcoll::foreign_next<F>(gcoll::flavor::kFComm_dup_with_info)) return next(comm, info, newcomm, ierror);
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = gcoll::comm_dup_with_info(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c);
  if (rc == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(c);
  set_ierror(ierror, rc);
}
GCOLL_FORTRAN_SPELLINGS(mpi_comm_dup_with_info, MPI_COMM_DUP_WITH_INFO, gcoll_f_comm_dup_with_info,
                       (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

__attribute__((visibility("hidden"))) void gcoll_f_comm_dup(MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_comm_dup);
  if (auto next = gcoll::foreign_next<F>(gcoll::flavor::kFComm_dup)) return next(comm, newcomm, ierror);
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = gcoll::comm_dup(PMPI_Comm_f2c(*comm), &c);
  if (rc == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(c);
  set_ierror(ierror, rc);
}
GCOLL_FORTRAN_SPELLINGS(mpi_comm_dup, MPI_COMM_DUP, gcoll_f_comm_dup, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

__attribute__((visibility("hidden"))) void gcoll_f_comm_get_info(MPI_Fint *comm, MPI_Fint *info_used,
                                                                 MPI_Fint *ierror) {
  using F = decltype(&gcoll_f_comm_get_info);
  if (auto next = gcoll::foreign_next<F>(gcoll::flavor::kFComm_get_info)) return next(comm, info_used, ierror);
  MPI_Info i = MPI_INFO_NULL;
  const int rc = gcoll::comm_get_info(PMPI_Comm_f2c(*comm), &i);
  if (rc == MPI_SUCCESS) *info_used = PMPI_Info_c2f(i);
  set_ierror(ierror, rc);
}
GCOLL_FORTRAN_SPELLINGS(mpi_comm_get_info, MPI_COMM_GET_INFO, gcoll_f_comm_get_info, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

}  // extern "C"
#endif  // GCOLL_MPI_FORTRAN_ENTRY_POINTS
