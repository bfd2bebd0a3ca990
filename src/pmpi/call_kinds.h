// The argument kinds of the call list (base/coll_list.h), spelled out for the MPI: C
// parameters, large-count parameters, Fortran parameters and their conversion to C.
// Used with GCOLL_PP_MAP over a list row's arguments.
#pragma once

#include <climits>

#include <mpi.h>

#include "base/coll_list.h"

// C parameters: (KIND, name) -> "type name".
#define GCOLL_C_PARAM(kind, name) GCOLL_C_PARAM_##kind(name)
#define GCOLL_C_PARAM_SBUF(n) const void *n
#define GCOLL_C_PARAM_RBUF(n) void *n
#define GCOLL_C_PARAM_CNT(n) int n
#define GCOLL_C_PARAM_DT(n) MPI_Datatype n
#define GCOLL_C_PARAM_OP(n) MPI_Op n
#define GCOLL_C_PARAM_ROOT(n) int n
#define GCOLL_C_PARAM_COMM(n) MPI_Comm n

// The argument itself.
#define GCOLL_ARG(kind, name) name

// MPI-4 large-count parameters: counts are MPI_Count.
#define GCOLL_LC_PARAM(kind, name) GCOLL_LC_PARAM_##kind(name)
#define GCOLL_LC_PARAM_SBUF(n) const void *n
#define GCOLL_LC_PARAM_RBUF(n) void *n
#define GCOLL_LC_PARAM_CNT(n) MPI_Count n
#define GCOLL_LC_PARAM_DT(n) MPI_Datatype n
#define GCOLL_LC_PARAM_OP(n) MPI_Op n
#define GCOLL_LC_PARAM_ROOT(n) int n
#define GCOLL_LC_PARAM_COMM(n) MPI_Comm n
// A large-count argument passed on as the int-count form's (after GCOLL_LC_FITS).
#define GCOLL_LC_ARG(kind, name) GCOLL_LC_ARG_##kind(name)
#define GCOLL_LC_ARG_SBUF(n) n
#define GCOLL_LC_ARG_RBUF(n) n
#define GCOLL_LC_ARG_CNT(n) static_cast<int>(n)
#define GCOLL_LC_ARG_DT(n) n
#define GCOLL_LC_ARG_OP(n) n
#define GCOLL_LC_ARG_ROOT(n) n
#define GCOLL_LC_ARG_COMM(n) n
// Whether an argument fits the int-count form (only counts can fail).
#define GCOLL_LC_FITS(kind, name) GCOLL_LC_FITS_##kind(name)
#define GCOLL_LC_FITS_SBUF(n) true
#define GCOLL_LC_FITS_RBUF(n) true
#define GCOLL_LC_FITS_CNT(n) ((n) >= 0 && (n) <= INT_MAX)
#define GCOLL_LC_FITS_DT(n) true
#define GCOLL_LC_FITS_OP(n) true
#define GCOLL_LC_FITS_ROOT(n) true
#define GCOLL_LC_FITS_COMM(n) true

// Fortran parameters (every argument by reference; buffers as addresses).
#define GCOLL_F_PARAM(kind, name) GCOLL_F_PARAM_##kind(name)
#define GCOLL_F_PARAM_SBUF(n) void *n
#define GCOLL_F_PARAM_RBUF(n) void *n
#define GCOLL_F_PARAM_CNT(n) MPI_Fint *n
#define GCOLL_F_PARAM_DT(n) MPI_Fint *n
#define GCOLL_F_PARAM_OP(n) MPI_Fint *n
#define GCOLL_F_PARAM_ROOT(n) MPI_Fint *n
#define GCOLL_F_PARAM_COMM(n) MPI_Fint *n
// Their types alone (for the aliases' declarations).
#define GCOLL_F_TYPE(kind, name) GCOLL_F_TYPE_##kind
#define GCOLL_F_TYPE_SBUF void *
#define GCOLL_F_TYPE_RBUF void *
#define GCOLL_F_TYPE_CNT MPI_Fint *
#define GCOLL_F_TYPE_DT MPI_Fint *
#define GCOLL_F_TYPE_OP MPI_Fint *
#define GCOLL_F_TYPE_ROOT MPI_Fint *
#define GCOLL_F_TYPE_COMM MPI_Fint *
// Fortran -> C (f2c_buffer: entry_fortran.cc).
#define GCOLL_F_ARG(kind, name) GCOLL_F_ARG_##kind(name)
#define GCOLL_F_ARG_SBUF(n) f2c_buffer(n)
#define GCOLL_F_ARG_RBUF(n) f2c_buffer(n)
#define GCOLL_F_ARG_CNT(n) (*n)
#define GCOLL_F_ARG_DT(n) PMPI_Type_f2c(*n)
#define GCOLL_F_ARG_OP(n) PMPI_Op_f2c(*n)
#define GCOLL_F_ARG_ROOT(n) (*n)
#define GCOLL_F_ARG_COMM(n) PMPI_Comm_f2c(*n)
