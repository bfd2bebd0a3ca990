#include <gtest/gtest.h>

#include <set>

#include "pmpi/errors.h"

namespace gcoll {
namespace {

TEST(Errors, StatusToMpiClass) {
  EXPECT_EQ(mpi_error_class(Status::Ok), MPI_SUCCESS);
  EXPECT_EQ(mpi_error_class(Status::ErrCount), MPI_ERR_COUNT);
  EXPECT_EQ(mpi_error_class(Status::ErrType), MPI_ERR_TYPE);
  EXPECT_EQ(mpi_error_class(Status::ErrOp), MPI_ERR_OP);
  EXPECT_EQ(mpi_error_class(Status::ErrComm), MPI_ERR_COMM);
  EXPECT_EQ(mpi_error_class(Status::ErrRoot), MPI_ERR_ROOT);
  EXPECT_EQ(mpi_error_class(Status::ErrBuffer), MPI_ERR_BUFFER);
  EXPECT_EQ(mpi_error_class(Status::ErrArg), MPI_ERR_ARG);
  EXPECT_EQ(mpi_error_class(Status::ErrNoMem), MPI_ERR_NO_MEM);
  EXPECT_EQ(mpi_error_class(Status::ErrInternal), MPI_ERR_INTERN);
  EXPECT_EQ(mpi_error_class(Status::ErrTransport), MPI_ERR_OTHER);
  EXPECT_EQ(mpi_error_class(Status::NotSupported), MPI_ERR_UNSUPPORTED_OPERATION);
}

TEST(Errors, EveryErrorStatusIsAnErrorClassWithAName) {
  for (int s = static_cast<int>(Status::NotSupported); s <= static_cast<int>(Status::ErrInternal); ++s) {
    const Status st = static_cast<Status>(s);
    EXPECT_NE(mpi_error_class(st), MPI_SUCCESS) << status_name(st);
    EXPECT_LE(mpi_error_class(st), MPI_ERR_LASTCODE) << status_name(st);
    EXPECT_STRNE(status_name(st), "unknown status");
  }
}

}  // namespace
}  // namespace gcoll
