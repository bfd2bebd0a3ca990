/*
 * osu_persistent.h: the persistent allreduce of this MPI, if it has one: MPI 4.0's
 * MPI_Allreduce_init (MPICH 4, Open MPI 5), or Open MPI 4.x's MPIX_Allreduce_init from
 * the pcollreq extension (<mpi-ext.h>). Defines OSU_ALLREDUCE_INIT (the call, with MPI
 * 4.0's arguments) when there is one. CMakeLists.txt compiles this header to decide
 * whether osu_allreduce_persistent gets its tests.
 */
#ifndef GCOLL_OSU_PERSISTENT_H
#define GCOLL_OSU_PERSISTENT_H

#include <mpi.h>

#if defined(OPEN_MPI) && MPI_VERSION < 4
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
/* Open MPI 5 has MPI 4.0's persistent collectives while it reports MPI 3.1 */
#define OSU_ALLREDUCE_INIT MPI_Allreduce_init
#else
#include <mpi-ext.h>
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
#define OSU_ALLREDUCE_INIT MPIX_Allreduce_init
#endif
#endif
#elif MPI_VERSION >= 4
#define OSU_ALLREDUCE_INIT MPI_Allreduce_init
#endif

#endif
