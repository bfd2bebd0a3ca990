// The C side of gcoll's Fortran stream API (module gcoll_mpix_f08, src/fortran): what the
// module's procedures call once they have made C arguments of the Fortran ones (buffer
// addresses, MPI_IN_PLACE found, contiguity checked). Handles arrive as Fortran INTEGER
// handles (MPI_Fint: the MPI_VAL of TYPE(MPI_Comm) etc.) and are converted with the MPI's
// own f2c functions; each function returns the C call's error code, which the module
// stores in ierror. Errors go through the C calls (pmpi/stream.cc), so the communicator's
// error handler runs as it would for a C program.
//
// A stream is a pointer in C (struct gcoll_mpix_stream *) but an INTEGER in Fortran
// (MPICH's TYPE(MPIX_Stream) has INTEGER MPI_VAL, and a program written for MPICH compares
// and stores it as such): the Fortran handle is an index into a table of the streams
// Fortran has seen, as Open MPI's handles are. 0 is MPIX_STREAM_NULL; a stream gets its
// index when Fortran first sees it (MPIX_Stream_create, MPIX_Comm_get_stream of a stream a
// C caller made) and loses it when Fortran frees it. A stream freed from C keeps its entry
// until the slot is reused by a new stream at the same address (the same stream to C);
// the C calls then reject it as freed, as they do a stale C handle.
//
// Built against an MPI that has the stream API (MPICH >= 4.1: MPIX_STREAM_NULL), gcoll
// takes over its C side only (pmpi/stream.cc) and the MPI's own mpi_f08 module has the
// Fortran side (MPICH's handles are integers there already); against the
// standard ABI, nothing either (it has no Fortran part, not even MPI_Fint).
#include <mpi.h>

#if !defined(MPIX_STREAM_NULL) && !defined(MPI_ABI_VERSION)
#include "gcoll/mpix_stream.h"

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "pmpi/errors.h"

namespace gcoll {
namespace {

#define GCOLL_EXPORT __attribute__((visibility("default")))

std::mutex g_table_mu;
std::vector<MPIX_Stream> &table() {
  static auto *t = new std::vector<MPIX_Stream>(1, MPIX_STREAM_NULL);  // never destroyed; [0]: MPIX_STREAM_NULL
  return *t;
}

MPI_Fint stream_c2f(MPIX_Stream s) {
  if (s == MPIX_STREAM_NULL) return 0;
  std::lock_guard<std::mutex> g(g_table_mu);
  auto &t = table();
  std::size_t free_slot = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    if (t[i] == s) return static_cast<MPI_Fint>(i);
    if (t[i] == MPIX_STREAM_NULL && free_slot == 0) free_slot = i;
  }
  if (free_slot == 0) {
    free_slot = t.size();
    t.push_back(s);
  } else {
    t[free_slot] = s;
  }
  return static_cast<MPI_Fint>(free_slot);
}

// false for a handle Fortran never had (out of range, or a slot freed since).
bool stream_f2c(MPI_Fint f, MPIX_Stream *out) {
  if (f == 0) {
    *out = MPIX_STREAM_NULL;
    return true;
  }
  std::lock_guard<std::mutex> g(g_table_mu);
  const auto &t = table();
  if (f < 0 || static_cast<std::size_t>(f) >= t.size() || t[static_cast<std::size_t>(f)] == MPIX_STREAM_NULL)
    return false;
  *out = t[static_cast<std::size_t>(f)];
  return true;
}

void forget(MPI_Fint f) {
  std::lock_guard<std::mutex> g(g_table_mu);
  auto &t = table();
  if (f > 0 && static_cast<std::size_t>(f) < t.size()) t[static_cast<std::size_t>(f)] = MPIX_STREAM_NULL;
}

// The MPI's f2c functions return a null C handle for an integer that names nothing (Open
// MPI: a null pointer, not MPI_COMM_NULL): the C calls then see the MPI's null handle and
// reject it through their own checks instead of dereferencing nothing.
template <class H>
H or_null(H h, H null) {
  return h == H{} ? null : h;
}
MPI_Comm comm_f2c(MPI_Fint f) { return or_null(PMPI_Comm_f2c(f), MPI_COMM_NULL); }
MPI_Datatype type_f2c(MPI_Fint f) { return or_null(PMPI_Type_f2c(f), MPI_DATATYPE_NULL); }
MPI_Op op_f2c(MPI_Fint f) { return or_null(PMPI_Op_f2c(f), MPI_OP_NULL); }
MPI_Info info_f2c(MPI_Fint f) { return or_null(PMPI_Info_f2c(f), MPI_INFO_NULL); }

int bad_stream(MPI_Comm comm, const char *func) {
  return raise_error(comm, Status::ErrArg, func, "not a stream (a Fortran handle that MPIX_Stream_create never returned, or freed)");
}

}  // namespace
}  // namespace gcoll

using gcoll::Status;

extern "C" {

// MPI_IN_PLACE and MPI_BOTTOM as C sees them: the module puts them in place of the
// addresses of its own MPI_IN_PLACE / MPI_BOTTOM (whatever the MPI's mpi_f08 makes them).
GCOLL_EXPORT void *gcoll_mpix_f_in_place(void) { return MPI_IN_PLACE; }
GCOLL_EXPORT void *gcoll_mpix_f_bottom(void) { return MPI_BOTTOM; }

// A buffer the module cannot pass as one address (a non-contiguous array section): the
// stream reads it after the call returns, so no temporary copy can stand in for it.
GCOLL_EXPORT int gcoll_mpix_f_noncontiguous(MPI_Fint comm, const char *func) {
  return gcoll::raise_error(gcoll::comm_f2c(comm), Status::ErrBuffer, func,
                            "the buffer is not contiguous (the stream reads it after the call returns: pass a "
                            "contiguous array)");
}

// MPIX_Info_set_hex itself (the module binds it here directly: gcoll_mpix_f08.f90 says why).
// `key` and `value` are the Fortran compiler's C descriptors (ISO_Fortran_binding.h's
// CFI_cdesc_t), of which the standard fixes the first members only, in this order: no
// header of one compiler in libgcoll.so, the module may come from another. MPI ignores an
// info key's leading and trailing blanks in Fortran. ierror: null when absent.
struct CdescHead {
  void *base_addr;
  std::size_t elem_len;
};
GCOLL_EXPORT void gcoll_mpix_f_info_set_hex(const MPI_Fint *info, const CdescHead *key, const CdescHead *value,
                                            const MPI_Fint *value_size, MPI_Fint *ierror) {
  const char *k = static_cast<const char *>(key->base_addr);
  std::size_t len = key->elem_len;
  while (len && *k == ' ') ++k, --len;
  while (len && k[len - 1] == ' ') --len;
  const std::string ckey(k, len);
  const int rc = MPIX_Info_set_hex(gcoll::info_f2c(*info), ckey.c_str(), value->base_addr, static_cast<int>(*value_size));
  if (ierror) *ierror = static_cast<MPI_Fint>(rc);
}

GCOLL_EXPORT int gcoll_mpix_f_stream_create(MPI_Fint info, MPI_Fint *stream) {
  MPIX_Stream s = MPIX_STREAM_NULL;
  const int rc = MPIX_Stream_create(gcoll::info_f2c(info), &s);
  *stream = rc == MPI_SUCCESS ? gcoll::stream_c2f(s) : 0;
  return rc;
}

GCOLL_EXPORT int gcoll_mpix_f_stream_free(MPI_Fint *stream) {
  MPIX_Stream s = MPIX_STREAM_NULL;
  if (!gcoll::stream_f2c(*stream, &s)) return gcoll::bad_stream(MPI_COMM_SELF, "MPIX_Stream_free");
  const int rc = MPIX_Stream_free(&s);
  if (rc == MPI_SUCCESS) {
    gcoll::forget(*stream);
    *stream = 0;
  }
  return rc;
}

GCOLL_EXPORT int gcoll_mpix_f_stream_comm_create(MPI_Fint comm, MPI_Fint stream, MPI_Fint *newcomm) {
  const MPI_Comm c = gcoll::comm_f2c(comm);
  MPIX_Stream s = MPIX_STREAM_NULL;
  if (!gcoll::stream_f2c(stream, &s)) return gcoll::bad_stream(c, "MPIX_Stream_comm_create");
  MPI_Comm nc = MPI_COMM_NULL;
  const int rc = MPIX_Stream_comm_create(c, s, &nc);
  *newcomm = PMPI_Comm_c2f(rc == MPI_SUCCESS ? nc : MPI_COMM_NULL);
  return rc;
}

GCOLL_EXPORT int gcoll_mpix_f_comm_get_stream(MPI_Fint comm, int idx, MPI_Fint *stream) {
  MPIX_Stream s = MPIX_STREAM_NULL;
  const int rc = MPIX_Comm_get_stream(gcoll::comm_f2c(comm), idx, &s);
  *stream = rc == MPI_SUCCESS ? gcoll::stream_c2f(s) : 0;
  return rc;
}

// The enqueue forms: one function per collective for both Fortran specifics (`large` 0:
// the count came from a default INTEGER and fits an int, the C call is the int form,
// whose name the error messages and the stats carry; 1: the _c form).
GCOLL_EXPORT int gcoll_mpix_f_allreduce_enqueue(const void *sendbuf, void *recvbuf, MPI_Count count,
                                                MPI_Fint datatype, MPI_Fint op, MPI_Fint comm, int large) {
  const MPI_Datatype t = gcoll::type_f2c(datatype);
  const MPI_Op o = gcoll::op_f2c(op);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Allreduce_enqueue_c(sendbuf, recvbuf, count, t, o, c)
               : MPIX_Allreduce_enqueue(sendbuf, recvbuf, static_cast<int>(count), t, o, c);
}

GCOLL_EXPORT int gcoll_mpix_f_bcast_enqueue(void *buffer, MPI_Count count, MPI_Fint datatype, int root,
                                            MPI_Fint comm, int large) {
  const MPI_Datatype t = gcoll::type_f2c(datatype);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Bcast_enqueue_c(buffer, count, t, root, c)
               : MPIX_Bcast_enqueue(buffer, static_cast<int>(count), t, root, c);
}

GCOLL_EXPORT int gcoll_mpix_f_allgather_enqueue(const void *sendbuf, MPI_Count sendcount, MPI_Fint sendtype,
                                                void *recvbuf, MPI_Count recvcount, MPI_Fint recvtype,
                                                MPI_Fint comm, int large) {
  const MPI_Datatype st = gcoll::type_f2c(sendtype), rt = gcoll::type_f2c(recvtype);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Allgather_enqueue_c(sendbuf, sendcount, st, recvbuf, recvcount, rt, c)
               : MPIX_Allgather_enqueue(sendbuf, static_cast<int>(sendcount), st, recvbuf,
                                        static_cast<int>(recvcount), rt, c);
}

GCOLL_EXPORT int gcoll_mpix_f_reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                                           MPI_Fint datatype, MPI_Fint op, MPI_Fint comm,
                                                           int large) {
  const MPI_Datatype t = gcoll::type_f2c(datatype);
  const MPI_Op o = gcoll::op_f2c(op);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Reduce_scatter_block_enqueue_c(sendbuf, recvbuf, recvcount, t, o, c)
               : MPIX_Reduce_scatter_block_enqueue(sendbuf, recvbuf, static_cast<int>(recvcount), t, o, c);
}

GCOLL_EXPORT int gcoll_mpix_f_reduce_enqueue(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Fint datatype,
                                             MPI_Fint op, int root, MPI_Fint comm, int large) {
  const MPI_Datatype t = gcoll::type_f2c(datatype);
  const MPI_Op o = gcoll::op_f2c(op);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Reduce_enqueue_c(sendbuf, recvbuf, count, t, o, root, c)
               : MPIX_Reduce_enqueue(sendbuf, recvbuf, static_cast<int>(count), t, o, root, c);
}

GCOLL_EXPORT int gcoll_mpix_f_alltoall_enqueue(const void *sendbuf, MPI_Count sendcount, MPI_Fint sendtype,
                                               void *recvbuf, MPI_Count recvcount, MPI_Fint recvtype,
                                               MPI_Fint comm, int large) {
  const MPI_Datatype st = gcoll::type_f2c(sendtype), rt = gcoll::type_f2c(recvtype);
  const MPI_Comm c = gcoll::comm_f2c(comm);
  return large ? MPIX_Alltoall_enqueue_c(sendbuf, sendcount, st, recvbuf, recvcount, rt, c)
               : MPIX_Alltoall_enqueue(sendbuf, static_cast<int>(sendcount), st, recvbuf,
                                       static_cast<int>(recvcount), rt, c);
}

}  // extern "C"

#endif  // !MPIX_STREAM_NULL && !MPI_ABI_VERSION
