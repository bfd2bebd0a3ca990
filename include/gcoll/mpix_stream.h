/* gcoll/mpix_stream.h: MPICH's stream API (MPICH 4.1 and later: MPIX_Stream,
 * MPIX_Stream_comm_create, MPIX_Allreduce_enqueue, ...), which libgcoll.so provides under
 * the MPIs that lack it (Open MPI, MPICH 4.0, the MPI standard ABI), with the same names
 * and signatures, and the enqueue forms of six collectives (MPICH has Allreduce's only).
 * Include it after <mpi.h>; where the MPI's mpi.h declares the API (MPICH 4.1 and later:
 * MPIX_STREAM_NULL is defined) it declares only the enqueue forms that MPI lacks, so one
 * source compiles against both. There libgcoll.so takes MPICH's API over: the stream
 * communicators of a cudaStream_t and their enqueue calls are gcoll's, MPICH's other
 * streams MPICH's. Link with -lgcoll or run under LD_PRELOAD=libgcoll.so.
 *
 *   cudaStream_t s;  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
 *   MPI_Info info;   MPI_Info_create(&info);
 *   MPI_Info_set(info, "type", "cudaStream_t");
 *   MPIX_Info_set_hex(info, "value", &s, sizeof s);
 *   MPIX_Stream stream;  MPIX_Stream_create(info, &stream);  MPI_Info_free(&info);
 *   MPI_Comm scomm;      MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &scomm);
 *   my_kernel<<<g, b, 0, s>>>(dev_buf);                        // writes dev_buf
 *   MPIX_Allreduce_enqueue(MPI_IN_PLACE, dev_buf, n, MPI_FLOAT, MPI_SUM, scomm);
 *   next_kernel<<<g, b, 0, s>>>(dev_buf);                      // reads the sums
 *   cudaStreamSynchronize(s);
 *   MPI_Comm_free(&scomm);  MPIX_Stream_free(&stream);
 *
 * An enqueue call returns at once; the collective runs once the stream's earlier work is
 * done, and the stream's later work waits for it (README: "Stream-ordered collectives").
 * Arguments as for the blocking collective; the communicator must have a CUDA stream.
 */
#ifndef GCOLL_MPIX_STREAM_H
#define GCOLL_MPIX_STREAM_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MPIX_STREAM_NULL
typedef struct gcoll_mpix_stream *MPIX_Stream;
#define MPIX_STREAM_NULL ((MPIX_Stream)0)
#define GCOLL_MPIX_STREAM 1 /* the API is gcoll's (not the MPI's) */

int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size);
int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream);
int MPIX_Stream_free(MPIX_Stream *stream);
int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm);
int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream);

int MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm);
int MPIX_Allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm);
#endif /* MPIX_STREAM_NULL */

/* The enqueue forms MPICH lacks (gcoll's under every MPI; MPI_Count counts in the _c forms). */
int MPIX_Bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPIX_Allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIX_Reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                      MPI_Op op, MPI_Comm comm);
int MPIX_Reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                        MPI_Comm comm);
int MPIX_Alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm);
int MPIX_Bcast_enqueue_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPIX_Allgather_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIX_Reduce_scatter_block_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPIX_Reduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                          int root, MPI_Comm comm);
int MPIX_Alltoall_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                            MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* GCOLL_MPIX_STREAM_H */
