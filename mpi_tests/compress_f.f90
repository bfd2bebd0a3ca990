! The info key gcoll_allreduce_compress from Fortran (`use mpi`): Open MPI's Fortran
! bindings call PMPI_* directly, so gcoll defines MPI_Comm_dup_with_info, MPI_Comm_set_info,
! MPI_Comm_dup and MPI_Comm_get_info in every Fortran spelling (src/pmpi/comm_info.cc).
! Run on several virtual nodes (GCOLL_RANKS_PER_NODE): each allreduce on the keyed
! communicators must run compressed (gcoll_library_counter), within bf16's bound, and
! MPI_Comm_get_info must give the key back. Exit status 1 on any rank that fails.
program compress_f
  use mpi
  use iso_c_binding
  implicit none
  interface
    function gcoll_library_counter(name) bind(C, name='gcoll_library_counter')
      import :: c_char, c_long_long
      character(kind=c_char), dimension(*) :: name
      integer(c_long_long) :: gcoll_library_counter
    end function
  end interface
  integer :: ierr, info, comm, comm2, me, np, i, bad
  logical :: flag
  real :: a(1000), b(1000)
  character(len=32) :: v
  integer(c_long_long) :: c0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  bad = 0
  do i = 1, 1000
    a(i) = 1.0 + i * 0.001
  end do
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'gcoll_allreduce_compress', 'bf16', ierr)
  call MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, comm, ierr)
  call MPI_Info_free(info, ierr)
  c0 = gcoll_library_counter('compressed_allreduce_calls' // c_null_char)
  call MPI_Allreduce(a, b, 1000, MPI_REAL, MPI_SUM, comm, ierr)
  if (gcoll_library_counter('compressed_allreduce_calls' // c_null_char) /= c0 + 1) bad = bad + 1
  if (maxval(abs(b - np * a) / (np * a)) > np * 2.0**(-8) * 1.1) bad = bad + 1
  call MPI_Comm_get_info(comm, info, ierr)
  call MPI_Info_get(info, 'gcoll_allreduce_compress', 31, v, flag, ierr)
  if (.not. flag .or. trim(v) /= 'bf16') bad = bad + 1
  call MPI_Info_free(info, ierr)
  ! set_info on a plain duplicate
  call MPI_Comm_dup(MPI_COMM_WORLD, comm2, ierr)
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'gcoll_allreduce_compress', 'fp16', ierr)
  call MPI_Comm_set_info(comm2, info, ierr)
  call MPI_Info_free(info, ierr)
  c0 = gcoll_library_counter('compressed_allreduce_calls' // c_null_char)
  call MPI_Allreduce(a, b, 1000, MPI_REAL, MPI_SUM, comm2, ierr)
  if (gcoll_library_counter('compressed_allreduce_calls' // c_null_char) /= c0 + 1) bad = bad + 1
  if (bad /= 0) print *, 'rank', me, ': compress_f failed checks:', bad
  call MPI_Comm_free(comm2, ierr)
  call MPI_Comm_free(comm, ierr)
  call MPI_Finalize(ierr)
  if (bad /= 0) stop 1
  if (me == 0) print *, 'compress_f: passed'
end program
