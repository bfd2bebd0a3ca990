// The collectives gcoll takes, described once. Everything that lists them is generated
// from GCOLL_COLLS: the Coll enum and the stats' names (base/stats.h), the C entry points
// and their MPI-4 large-count forms (pmpi/entry_c.cc), every Fortran spelling
// (pmpi/entry_fortran.cc), the functions behind them (pmpi/collectives.h) and the load
// check's forwarding table (pmpi/mpi_flavor.h, pmpi/load_check.cc). What is particular to one collective lives
// in its argument file (pmpi/calls/<name>.cc: the MPI arguments -> a call description) and
// its algorithm files (src/coll; docs/contributing.md: adding a collective).
//
// X(Name, lower, UPPER, arguments...): the C entry point MPI_<Name> (and MPI_<Name>_c), the
// Fortran ones mpi_<lower>_, mpi_<lower>__, mpi_<lower>, MPI_<UPPER>, mpi_<lower>_f08_,
// Coll::<Name>, "<lower>" in the stats file. The arguments, in C order, each (KIND, name):
//   SBUF  const void *    send buffer (Fortran: MPI_IN_PLACE and MPI_BOTTOM mapped)
//   RBUF  void *          receive (or in-out) buffer (likewise)
//   CNT   int             a count (MPI_Count in the large-count form)
//   DT    MPI_Datatype
//   OP    MPI_Op
//   ROOT  int             a rank
//   COMM  MPI_Comm
// Arrays of one entry per rank (MPI_Count / MPI_Aint in the large-count form, INTEGER in
// Fortran), by the ranks they describe and where the MPI reads them:
//   CNTS        const int[]  counts, every rank: one per rank of the communicator (of the
//                            remote group on an intercommunicator)
//   DISPLS      const int[]  displacements, likewise
//   ROOTCNTS    const int[]  counts the root alone gives (intercommunicator: MPI_ROOT)
//   ROOTDISPLS  const int[]  displacements the root alone gives
//   LOCALCNTS   const int[]  counts, every rank: one per rank of its own group
//   WDISPLS     const int[]  byte displacements, every rank, one per rank (alltoallw)
//   DTS         const MPI_Datatype[]  datatypes, one per rank (alltoallw)
// The neighbourhood collectives' arrays, one entry per neighbour of the communicator's
// topology: IN* for those it receives from (in-degree), OUT* for those it sends to:
//   INCNTS, OUTCNTS (counts), INDISPLS, OUTDISPLS (displacements in extents),
//   INADISPLS, OUTADISPLS (byte displacements, MPI_Aint even in the int-count form),
//   INDTS, OUTDTS (datatypes)
// (The large-count form converts them to int arrays of that length, pmpi/call_kinds.h.)
// Collectives the engine has no algorithm for (Gather, Scatter, the rooted v-forms and the
// ones after Scatterv) are still seen, counted and, on device buffers, staged
// (coll/staged.h).
//
// Every row has three forms, each its own entry point and its own line in the stats
// (Coll, base/stats.h):
//   blocking     MPI_<Name>                     Coll::<Name>          "<lower>"
//   nonblocking  MPI_I<lower> (+ MPI_Request *)  Coll::I<lower>        "i<lower>"
//   persistent   MPI_<Name>_init (MPI-4; Open MPI 4.1: MPIX_<Name>_init) (+ MPI_Info,
//                MPI_Request *)                  Coll::<Name>_init     "<lower>_init"
// (MPI's names follow the pattern: MPI_I + "allreduce" is MPI_Iallreduce.) The
// nonblocking and persistent forms complete through the application's MPI_Wait/Test
// family (pmpi/requests.h).
// No MPI type appears here: the kinds are spelled out where they are used (base/pp.h maps
// over the list).
#pragma once

#include "base/pp.h"

#define GCOLL_COUNTED_COLLS(X)                                                                                 \
  X(Allreduce, allreduce, ALLREDUCE, (SBUF, sendbuf), (RBUF, recvbuf), (CNT, count), (DT, datatype), (OP, op), \
    (COMM, comm))                                                                                            \
  X(Bcast, bcast, BCAST, (RBUF, buffer), (CNT, count), (DT, datatype), (ROOT, root), (COMM, comm))           \
  X(Allgather, allgather, ALLGATHER, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),      \
    (CNT, recvcount), (DT, recvtype), (COMM, comm))                                                          \
  X(Reduce_scatter_block, reduce_scatter_block, REDUCE_SCATTER_BLOCK, (SBUF, sendbuf), (RBUF, recvbuf),      \
    (CNT, recvcount), (DT, datatype), (OP, op), (COMM, comm))                                                \
  X(Reduce, reduce, REDUCE, (SBUF, sendbuf), (RBUF, recvbuf), (CNT, count), (DT, datatype), (OP, op),          \
    (ROOT, root), (COMM, comm))                                                                              \
  X(Gather, gather, GATHER, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),               \
    (CNT, recvcount), (DT, recvtype), (ROOT, root), (COMM, comm))                                            \
  X(Scatter, scatter, SCATTER, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),            \
    (CNT, recvcount), (DT, recvtype), (ROOT, root), (COMM, comm))                                            \
  X(Alltoall, alltoall, ALLTOALL, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),         \
    (CNT, recvcount), (DT, recvtype), (COMM, comm))                                                          \
  X(Reduce_scatter, reduce_scatter, REDUCE_SCATTER, (SBUF, sendbuf), (RBUF, recvbuf), (LOCALCNTS, recvcounts), \
    (DT, datatype), (OP, op), (COMM, comm))                                                                  \
  X(Allgatherv, allgatherv, ALLGATHERV, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),   \
    (CNTS, recvcounts), (DISPLS, displs), (DT, recvtype), (COMM, comm))                                      \
  X(Gatherv, gatherv, GATHERV, (SBUF, sendbuf), (CNT, sendcount), (DT, sendtype), (RBUF, recvbuf),            \
    (ROOTCNTS, recvcounts), (ROOTDISPLS, displs), (DT, recvtype), (ROOT, root), (COMM, comm))                \
  X(Scatterv, scatterv, SCATTERV, (SBUF, sendbuf), (ROOTCNTS, sendcounts), (ROOTDISPLS, displs),              \
    (DT, sendtype), (RBUF, recvbuf), (CNT, recvcount), (DT, recvtype), (ROOT, root), (COMM, comm))              \
  X(Alltoallv, alltoallv, ALLTOALLV, (SBUF, sendbuf), (CNTS, sendcounts), (DISPLS, sdispls), (DT, sendtype),  \
    (RBUF, recvbuf), (CNTS, recvcounts), (DISPLS, rdispls), (DT, recvtype), (COMM, comm))                     \
  X(Scan, scan, SCAN, (SBUF, sendbuf), (RBUF, recvbuf), (CNT, count), (DT, datatype), (OP, op), (COMM, comm))   \
  X(Exscan, exscan, EXSCAN, (SBUF, sendbuf), (RBUF, recvbuf), (CNT, count), (DT, datatype), (OP, op),          \
    (COMM, comm))                                                                                            \
  X(Alltoallw, alltoallw, ALLTOALLW, (SBUF, sendbuf), (CNTS, sendcounts), (WDISPLS, sdispls),                 \
    (DTS, sendtypes), (RBUF, recvbuf), (CNTS, recvcounts), (WDISPLS, rdispls), (DTS, recvtypes), (COMM, comm)) \
  X(Neighbor_allgather, neighbor_allgather, NEIGHBOR_ALLGATHER, (SBUF, sendbuf), (CNT, sendcount),           \
    (DT, sendtype), (RBUF, recvbuf), (CNT, recvcount), (DT, recvtype), (COMM, comm))                         \
  X(Neighbor_allgatherv, neighbor_allgatherv, NEIGHBOR_ALLGATHERV, (SBUF, sendbuf), (CNT, sendcount),        \
    (DT, sendtype), (RBUF, recvbuf), (INCNTS, recvcounts), (INDISPLS, displs), (DT, recvtype), (COMM, comm)) \
  X(Neighbor_alltoall, neighbor_alltoall, NEIGHBOR_ALLTOALL, (SBUF, sendbuf), (CNT, sendcount),              \
    (DT, sendtype), (RBUF, recvbuf), (CNT, recvcount), (DT, recvtype), (COMM, comm))                         \
  X(Neighbor_alltoallv, neighbor_alltoallv, NEIGHBOR_ALLTOALLV, (SBUF, sendbuf), (OUTCNTS, sendcounts),      \
    (OUTDISPLS, sdispls), (DT, sendtype), (RBUF, recvbuf), (INCNTS, recvcounts), (INDISPLS, rdispls),         \
    (DT, recvtype), (COMM, comm))                                                                            \
  X(Neighbor_alltoallw, neighbor_alltoallw, NEIGHBOR_ALLTOALLW, (SBUF, sendbuf), (OUTCNTS, sendcounts),      \
    (OUTADISPLS, sdispls), (OUTDTS, sendtypes), (RBUF, recvbuf), (INCNTS, recvcounts), (INADISPLS, rdispls),  \
    (INDTS, recvtypes), (COMM, comm))

// Every row: the ones with counts (which have MPI-4 large-count forms, MPI_<Name>_c), then
// MPI_Barrier.
#define GCOLL_COLLS(X) GCOLL_COUNTED_COLLS(X) X(Barrier, barrier, BARRIER, (COMM, comm))

// The rows that also have a stream-ordered form (issue 30: MPIX_<Name>_enqueue and its
// large-count _c, MPICH's stream API; pmpi/stream.cc): X(Name, lower). Its stats line is
// Coll::<Name>_enqueue, "<lower>_enqueue".
#define GCOLL_ENQUEUE_COLLS(X)                                                             \
  X(Allreduce, allreduce) X(Bcast, bcast) X(Allgather, allgather)                          \
  X(Reduce_scatter_block, reduce_scatter_block) X(Reduce, reduce) X(Alltoall, alltoall)
