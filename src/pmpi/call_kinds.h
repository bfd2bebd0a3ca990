// The argument kinds of the call list (base/coll_list.h), spelled out for the MPI: C
// parameters, large-count parameters, Fortran parameters and their conversion to C.
// Used with GCOLL_PP_MAP over a list row's arguments.
#pragma once

#include <climits>
#include <vector>

#include <mpi.h>

#include "base/coll_list.h"
#include "coll/mpi_forms.h"

namespace gcoll {

// The ranks an array argument has an entry for (base/coll_list.h), and where it is read.
enum class ArrayRanks {
  Group,  // every rank: the communicator's ranks (an intercommunicator's remote group)
  Local,  // every rank: its own group's ranks
  Root,   // the root alone (an intercommunicator's MPI_ROOT), the communicator's ranks
  In,     // every rank: its neighbours it receives from (a topology's in-degree)
  Out,    // every rank: its neighbours it sends to (the out-degree)
};
// The entries of such an array the MPI reads on this rank (0 where it reads none, or
// where the communicator is not valid: the MPI reports that).
int array_length(MPI_Comm comm, ArrayRanks which, int root);

// A large-count array (MPI_Count counts, MPI_Aint displacements) as the int array of the
// int-count form: fits() when every entry the MPI reads is an int (counts: not negative
// either, as GCOLL_LC_FITS_CNT) and the array is there.
template <class T>
class IntArray {
 public:
  IntArray(const T *a, int n, bool count) {
    if (n <= 0) return;
    if (!a) {
      fits_ = false;
      return;
    }
    v_.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      if (a[i] > INT_MAX || a[i] < (count ? 0 : INT_MIN)) fits_ = false;
      v_[static_cast<std::size_t>(i)] = static_cast<int>(a[i]);
    }
  }
  bool fits() const { return fits_; }
  const int *data() const { return v_.empty() ? nullptr : v_.data(); }

 private:
  std::vector<int> v_;
  bool fits_ = true;
};

}  // namespace gcoll

// C parameters (GCOLL_C_PARAM) and GCOLL_ARG: coll/mpi_forms.h.

// MPI-4 large-count parameters: counts are MPI_Count.
#define GCOLL_LC_PARAM(kind, name) GCOLL_LC_PARAM_##kind(name)
#define GCOLL_LC_PARAM_SBUF(n) const void *n
#define GCOLL_LC_PARAM_RBUF(n) void *n
#define GCOLL_LC_PARAM_CNT(n) MPI_Count n
#define GCOLL_LC_PARAM_DT(n) MPI_Datatype n
#define GCOLL_LC_PARAM_OP(n) MPI_Op n
#define GCOLL_LC_PARAM_ROOT(n) int n
#define GCOLL_LC_PARAM_COMM(n) MPI_Comm n
#define GCOLL_LC_PARAM_CNTS(n) const MPI_Count n[]
#define GCOLL_LC_PARAM_DISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_ROOTCNTS(n) const MPI_Count n[]
#define GCOLL_LC_PARAM_ROOTDISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_LOCALCNTS(n) const MPI_Count n[]
#define GCOLL_LC_PARAM_DTS(n) const MPI_Datatype n[]
#define GCOLL_LC_PARAM_WDISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_INCNTS(n) const MPI_Count n[]
#define GCOLL_LC_PARAM_INDISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_OUTCNTS(n) const MPI_Count n[]
#define GCOLL_LC_PARAM_OUTDISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_INDTS(n) const MPI_Datatype n[]
#define GCOLL_LC_PARAM_OUTDTS(n) const MPI_Datatype n[]
#define GCOLL_LC_PARAM_INADISPLS(n) const MPI_Aint n[]
#define GCOLL_LC_PARAM_OUTADISPLS(n) const MPI_Aint n[]
// Statements before the conversion: an array's int copy, <name>_int (IntArray above; the
// row's communicator is `comm`, its root `root`, as every row of the list names them).
#define GCOLL_LC_LOCAL(kind, name) GCOLL_LC_LOCAL_##kind(name)
#define GCOLL_LC_LOCAL_SBUF(n)
#define GCOLL_LC_LOCAL_RBUF(n)
#define GCOLL_LC_LOCAL_CNT(n)
#define GCOLL_LC_LOCAL_DT(n)
#define GCOLL_LC_LOCAL_OP(n)
#define GCOLL_LC_LOCAL_ROOT(n)
#define GCOLL_LC_LOCAL_COMM(n)
#define GCOLL_LC_LOCAL_CNTS(n) \
  const gcoll::IntArray<MPI_Count> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Group, 0), true);
#define GCOLL_LC_LOCAL_DISPLS(n) \
  const gcoll::IntArray<MPI_Aint> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Group, 0), false);
#define GCOLL_LC_LOCAL_ROOTCNTS(n) \
  const gcoll::IntArray<MPI_Count> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Root, root), true);
#define GCOLL_LC_LOCAL_ROOTDISPLS(n) \
  const gcoll::IntArray<MPI_Aint> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Root, root), false);
#define GCOLL_LC_LOCAL_LOCALCNTS(n) \
  const gcoll::IntArray<MPI_Count> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Local, 0), true);
#define GCOLL_LC_LOCAL_DTS(n)
#define GCOLL_LC_LOCAL_WDISPLS(n) GCOLL_LC_LOCAL_DISPLS(n)
#define GCOLL_LC_LOCAL_INCNTS(n) \
  const gcoll::IntArray<MPI_Count> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::In, 0), true);
#define GCOLL_LC_LOCAL_INDISPLS(n) \
  const gcoll::IntArray<MPI_Aint> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::In, 0), false);
#define GCOLL_LC_LOCAL_OUTCNTS(n) \
  const gcoll::IntArray<MPI_Count> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Out, 0), true);
#define GCOLL_LC_LOCAL_OUTDISPLS(n) \
  const gcoll::IntArray<MPI_Aint> n##_int(n, gcoll::array_length(comm, gcoll::ArrayRanks::Out, 0), false);
#define GCOLL_LC_LOCAL_INDTS(n)
#define GCOLL_LC_LOCAL_OUTDTS(n)
#define GCOLL_LC_LOCAL_INADISPLS(n)
#define GCOLL_LC_LOCAL_OUTADISPLS(n)
// A large-count argument passed on as the int-count form's (after GCOLL_LC_FITS).
#define GCOLL_LC_ARG(kind, name) GCOLL_LC_ARG_##kind(name)
#define GCOLL_LC_ARG_SBUF(n) n
#define GCOLL_LC_ARG_RBUF(n) n
#define GCOLL_LC_ARG_CNT(n) static_cast<int>(n)
#define GCOLL_LC_ARG_DT(n) n
#define GCOLL_LC_ARG_OP(n) n
#define GCOLL_LC_ARG_ROOT(n) n
#define GCOLL_LC_ARG_COMM(n) n
#define GCOLL_LC_ARG_CNTS(n) n##_int.data()
#define GCOLL_LC_ARG_DISPLS(n) n##_int.data()
#define GCOLL_LC_ARG_ROOTCNTS(n) n##_int.data()
#define GCOLL_LC_ARG_ROOTDISPLS(n) n##_int.data()
#define GCOLL_LC_ARG_LOCALCNTS(n) n##_int.data()
#define GCOLL_LC_ARG_DTS(n) n
#define GCOLL_LC_ARG_WDISPLS(n) n##_int.data()
#define GCOLL_LC_ARG_INCNTS(n) n##_int.data()
#define GCOLL_LC_ARG_INDISPLS(n) n##_int.data()
#define GCOLL_LC_ARG_OUTCNTS(n) n##_int.data()
#define GCOLL_LC_ARG_OUTDISPLS(n) n##_int.data()
#define GCOLL_LC_ARG_INDTS(n) n
#define GCOLL_LC_ARG_OUTDTS(n) n
#define GCOLL_LC_ARG_INADISPLS(n) n
#define GCOLL_LC_ARG_OUTADISPLS(n) n
// Whether an argument fits the int-count form (only counts and arrays can fail).
#define GCOLL_LC_FITS(kind, name) GCOLL_LC_FITS_##kind(name)
#define GCOLL_LC_FITS_SBUF(n) true
#define GCOLL_LC_FITS_RBUF(n) true
#define GCOLL_LC_FITS_CNT(n) ((n) >= 0 && (n) <= INT_MAX)
#define GCOLL_LC_FITS_DT(n) true
#define GCOLL_LC_FITS_OP(n) true
#define GCOLL_LC_FITS_ROOT(n) true
#define GCOLL_LC_FITS_COMM(n) true
#define GCOLL_LC_FITS_CNTS(n) n##_int.fits()
#define GCOLL_LC_FITS_DISPLS(n) n##_int.fits()
#define GCOLL_LC_FITS_ROOTCNTS(n) n##_int.fits()
#define GCOLL_LC_FITS_ROOTDISPLS(n) n##_int.fits()
#define GCOLL_LC_FITS_LOCALCNTS(n) n##_int.fits()
#define GCOLL_LC_FITS_DTS(n) true
#define GCOLL_LC_FITS_WDISPLS(n) n##_int.fits()
#define GCOLL_LC_FITS_INCNTS(n) n##_int.fits()
#define GCOLL_LC_FITS_INDISPLS(n) n##_int.fits()
#define GCOLL_LC_FITS_OUTCNTS(n) n##_int.fits()
#define GCOLL_LC_FITS_OUTDISPLS(n) n##_int.fits()
#define GCOLL_LC_FITS_INDTS(n) true
#define GCOLL_LC_FITS_OUTDTS(n) true
#define GCOLL_LC_FITS_INADISPLS(n) true
#define GCOLL_LC_FITS_OUTADISPLS(n) true

// Fortran parameters (every argument by reference; buffers as addresses).
#define GCOLL_F_PARAM(kind, name) GCOLL_F_PARAM_##kind(name)
#define GCOLL_F_PARAM_SBUF(n) void *n
#define GCOLL_F_PARAM_RBUF(n) void *n
#define GCOLL_F_PARAM_CNT(n) MPI_Fint *n
#define GCOLL_F_PARAM_DT(n) MPI_Fint *n
#define GCOLL_F_PARAM_OP(n) MPI_Fint *n
#define GCOLL_F_PARAM_ROOT(n) MPI_Fint *n
#define GCOLL_F_PARAM_COMM(n) MPI_Fint *n
#define GCOLL_F_PARAM_CNTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_DISPLS(n) MPI_Fint *n
#define GCOLL_F_PARAM_ROOTCNTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_ROOTDISPLS(n) MPI_Fint *n
#define GCOLL_F_PARAM_LOCALCNTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_DTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_WDISPLS(n) MPI_Fint *n
#define GCOLL_F_PARAM_INCNTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_INDISPLS(n) MPI_Fint *n
#define GCOLL_F_PARAM_OUTCNTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_OUTDISPLS(n) MPI_Fint *n
#define GCOLL_F_PARAM_INDTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_OUTDTS(n) MPI_Fint *n
#define GCOLL_F_PARAM_INADISPLS(n) MPI_Aint *n
#define GCOLL_F_PARAM_OUTADISPLS(n) MPI_Aint *n
// Their types alone (for the aliases' declarations).
#define GCOLL_F_TYPE(kind, name) GCOLL_F_TYPE_##kind
#define GCOLL_F_TYPE_SBUF void *
#define GCOLL_F_TYPE_RBUF void *
#define GCOLL_F_TYPE_CNT MPI_Fint *
#define GCOLL_F_TYPE_DT MPI_Fint *
#define GCOLL_F_TYPE_OP MPI_Fint *
#define GCOLL_F_TYPE_ROOT MPI_Fint *
#define GCOLL_F_TYPE_COMM MPI_Fint *
#define GCOLL_F_TYPE_CNTS MPI_Fint *
#define GCOLL_F_TYPE_DISPLS MPI_Fint *
#define GCOLL_F_TYPE_ROOTCNTS MPI_Fint *
#define GCOLL_F_TYPE_ROOTDISPLS MPI_Fint *
#define GCOLL_F_TYPE_LOCALCNTS MPI_Fint *
#define GCOLL_F_TYPE_DTS MPI_Fint *
#define GCOLL_F_TYPE_WDISPLS MPI_Fint *
#define GCOLL_F_TYPE_INCNTS MPI_Fint *
#define GCOLL_F_TYPE_INDISPLS MPI_Fint *
#define GCOLL_F_TYPE_OUTCNTS MPI_Fint *
#define GCOLL_F_TYPE_OUTDISPLS MPI_Fint *
#define GCOLL_F_TYPE_INDTS MPI_Fint *
#define GCOLL_F_TYPE_OUTDTS MPI_Fint *
#define GCOLL_F_TYPE_INADISPLS MPI_Aint *
#define GCOLL_F_TYPE_OUTADISPLS MPI_Aint *
// Fortran -> C (f2c_buffer, f2c_ints, f2c_types: entry_fortran.cc; INTEGER arrays are the int
// arrays of the C form where MPI_Fint is int, the only case gcoll defines Fortran entry
// points for).
#define GCOLL_F_ARG(kind, name) GCOLL_F_ARG_##kind(name)
#define GCOLL_F_ARG_SBUF(n) f2c_buffer(n)
#define GCOLL_F_ARG_RBUF(n) f2c_buffer(n)
#define GCOLL_F_ARG_CNT(n) (*n)
#define GCOLL_F_ARG_DT(n) PMPI_Type_f2c(*n)
#define GCOLL_F_ARG_OP(n) PMPI_Op_f2c(*n)
#define GCOLL_F_ARG_ROOT(n) (*n)
#define GCOLL_F_ARG_COMM(n) PMPI_Comm_f2c(*n)
#define GCOLL_F_ARG_CNTS(n) f2c_ints(n)
#define GCOLL_F_ARG_DISPLS(n) f2c_ints(n)
#define GCOLL_F_ARG_ROOTCNTS(n) f2c_ints(n)
#define GCOLL_F_ARG_ROOTDISPLS(n) f2c_ints(n)
#define GCOLL_F_ARG_LOCALCNTS(n) f2c_ints(n)
// Datatype arrays: a C array of the entries the MPI reads (the row's communicator is
// `comm`); it lives until the call returns.
#define GCOLL_F_ARG_DTS(n) \
  f2c_types(n, gcoll::array_length(PMPI_Comm_f2c(*comm), gcoll::ArrayRanks::Group, 0)).data()
#define GCOLL_F_ARG_WDISPLS(n) f2c_ints(n)
#define GCOLL_F_ARG_INCNTS(n) f2c_ints(n)
#define GCOLL_F_ARG_INDISPLS(n) f2c_ints(n)
#define GCOLL_F_ARG_OUTCNTS(n) f2c_ints(n)
#define GCOLL_F_ARG_OUTDISPLS(n) f2c_ints(n)
#define GCOLL_F_ARG_INDTS(n) \
  f2c_types(n, gcoll::array_length(PMPI_Comm_f2c(*comm), gcoll::ArrayRanks::In, 0)).data()
#define GCOLL_F_ARG_OUTDTS(n) \
  f2c_types(n, gcoll::array_length(PMPI_Comm_f2c(*comm), gcoll::ArrayRanks::Out, 0)).data()
#define GCOLL_F_ARG_INADISPLS(n) (n)
#define GCOLL_F_ARG_OUTADISPLS(n) (n)
