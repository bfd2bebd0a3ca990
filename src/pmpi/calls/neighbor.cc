// The neighbourhood collectives (MPI_Neighbor_allgather, _allgatherv, _alltoall,
// _alltoallv, _alltoallw): their arguments -> the MPI's call and the staged one
// (pmpi/call.h); the engine has no algorithm for them. Blocks are per neighbour of the
// communicator's topology (coll/staged.h: neighbor_degrees): received from the in-degree's
// neighbours, sent to the out-degree's. No in place (MPI has none for them).
#include "pmpi/call.h"
#include "pmpi/collectives.h"

namespace gcoll {

namespace {

template <class C>
unsigned long long sum_large(int n, const C *counts) {
  unsigned long long s = 0;
  for (int i = 0; counts && i < n; ++i) s += counts[i] > 0 ? static_cast<unsigned long long>(counts[i]) : 0;
  return s;
}

}  // namespace

int neighbor_allgather(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return pmpi_neighbor_allgather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const NeighborDegrees d = neighbor_degrees(comm);
  const bool negative = sendcount < 0 || recvcount < 0;
  Buffers bufs;
  if (sendcount > 0 && d.out > 0) bufs.send = sendbuf;
  if (recvcount > 0 && d.in > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Neighbor_allgather, form), "negative count");
  };
  return run_call(
      Coll::Neighbor_allgather, form, "MPI_Neighbor_allgather", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_neighbor_allgather(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&] { return payload(recvcount, recvtype) * static_cast<std::uint64_t>(d.in); });
}

unsigned long long neighbor_allgather_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, MPI_Count recvcount,
                                                  MPI_Datatype recvtype, MPI_Comm comm) {
  return payload(recvcount, recvtype) * static_cast<std::uint64_t>(neighbor_degrees(comm).in);
}

int neighbor_allgatherv(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm) {
  if (!library_active())
    return pmpi_neighbor_allgatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  const NeighborDegrees d = neighbor_degrees(comm);
  const bool negative = sendcount < 0 || any_negative(recvcounts, d.in);
  const long long got = sum_of(recvcounts, d.in);
  Buffers bufs;
  if (sendcount > 0 && d.out > 0) bufs.send = sendbuf;
  if (got > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Neighbor_allgatherv, form), "negative count");
  };
  return run_call(
      Coll::Neighbor_allgatherv, form, "MPI_Neighbor_allgatherv", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_neighbor_allgatherv(form, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                        comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                          sb);
      },
      [&] { return payload(got, recvtype); });
}

unsigned long long neighbor_allgatherv_large_bytes(const void *, MPI_Count, MPI_Datatype, void *,
                                                   const MPI_Count recvcounts[], const MPI_Aint[],
                                                   MPI_Datatype recvtype, MPI_Comm comm) {
  return payload(static_cast<long long>(sum_large(neighbor_degrees(comm).in, recvcounts)), recvtype);
}

int neighbor_alltoall(const CallForm &form, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return pmpi_neighbor_alltoall(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const NeighborDegrees d = neighbor_degrees(comm);
  const bool negative = sendcount < 0 || recvcount < 0;
  Buffers bufs;
  if (sendcount > 0 && d.out > 0) bufs.send = sendbuf;
  if (recvcount > 0 && d.in > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Neighbor_alltoall, form), "negative count");
  };
  return run_call(
      Coll::Neighbor_alltoall, form, "MPI_Neighbor_alltoall", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_neighbor_alltoall(form, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, sb);
      },
      [&] { return payload(recvcount, recvtype) * static_cast<std::uint64_t>(d.in); });
}

unsigned long long neighbor_alltoall_large_bytes(const void *, MPI_Count, MPI_Datatype, void *, MPI_Count recvcount,
                                                 MPI_Datatype recvtype, MPI_Comm comm) {
  return payload(recvcount, recvtype) * static_cast<std::uint64_t>(neighbor_degrees(comm).in);
}

int neighbor_alltoallv(const CallForm &form, const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                       MPI_Datatype recvtype, MPI_Comm comm) {
  if (!library_active())
    return pmpi_neighbor_alltoallv(form, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                   recvtype, comm);
  const NeighborDegrees d = neighbor_degrees(comm);
  const bool negative = any_negative(sendcounts, d.out) || any_negative(recvcounts, d.in);
  const long long got = sum_of(recvcounts, d.in);
  Buffers bufs;
  if (sum_of(sendcounts, d.out) > 0) bufs.send = sendbuf;
  if (got > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Neighbor_alltoallv, form), "negative count");
  };
  return run_call(
      Coll::Neighbor_alltoallv, form, "MPI_Neighbor_alltoallv", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_neighbor_alltoallv(form, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                       recvtype, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                         recvtype, comm, sb);
      },
      [&] { return payload(got, recvtype); });
}

unsigned long long neighbor_alltoallv_large_bytes(const void *, const MPI_Count[], const MPI_Aint[], MPI_Datatype,
                                                  void *, const MPI_Count recvcounts[], const MPI_Aint[],
                                                  MPI_Datatype recvtype, MPI_Comm comm) {
  return payload(static_cast<long long>(sum_large(neighbor_degrees(comm).in, recvcounts)), recvtype);
}

int neighbor_alltoallw(const CallForm &form, const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  if (!library_active())
    return pmpi_neighbor_alltoallw(form, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                   recvtypes, comm);
  const NeighborDegrees d = neighbor_degrees(comm);
  const bool negative = any_negative(sendcounts, d.out) || any_negative(recvcounts, d.in);
  Buffers bufs;
  if (sum_of(sendcounts, d.out) > 0) bufs.send = sendbuf;
  if (sum_of(recvcounts, d.in) > 0) bufs.recv = recvbuf;
  const auto fail = [&] {
    return raise_error(comm, Status::ErrCount, func_of(Coll::Neighbor_alltoallw, form), "negative count");
  };
  return run_call(
      Coll::Neighbor_alltoallw, form, "MPI_Neighbor_alltoallw", comm, bufs, engine_declines,
      [&] {
        if (negative) return fail();
        return pmpi_neighbor_alltoallw(form, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                       recvtypes, comm);
      },
      [&](StagedBuffers sb) -> StagedResult {
        if (negative) return {fail()};
        return staged_neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                         recvtypes, comm, sb);
      },
      [&] { return payload_typed(d.in, recvcounts, recvtypes); });
}

unsigned long long neighbor_alltoallw_large_bytes(const void *, const MPI_Count[], const MPI_Aint[],
                                                  const MPI_Datatype[], void *, const MPI_Count recvcounts[],
                                                  const MPI_Aint[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const int n = neighbor_degrees(comm).in;
  unsigned long long b = 0;
  for (int i = 0; recvcounts && recvtypes && i < n; ++i) b += payload(recvcounts[i], recvtypes[i]);
  return b;
}

}  // namespace gcoll
