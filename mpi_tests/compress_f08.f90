! compress_f.f90 with `use mpi_f08` (handles TYPE(MPI_Comm), ierror optional).
program compress_f08
  use mpi_f08
  use iso_c_binding
  implicit none
  interface
    function gcoll_library_counter(name) bind(C, name='gcoll_library_counter')
      import :: c_char, c_long_long
      character(kind=c_char), dimension(*) :: name
      integer(c_long_long) :: gcoll_library_counter
    end function
  end interface
  type(MPI_Info) :: info
  type(MPI_Comm) :: comm, comm2
  integer :: me, np, i, bad
  logical :: flag
  real :: a(1000), b(1000)
  character(len=32) :: v
  integer(c_long_long) :: c0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  bad = 0
  do i = 1, 1000
    a(i) = 1.0 + i * 0.001
  end do
  call MPI_Comm_dup(MPI_COMM_WORLD, comm)
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'gcoll_allreduce_compress', 'fp8')
  call MPI_Comm_set_info(comm, info)
  call MPI_Info_free(info)
  c0 = gcoll_library_counter('compressed_allreduce_calls' // c_null_char)
  call MPI_Allreduce(a, b, 1000, MPI_REAL, MPI_SUM, comm)
  if (gcoll_library_counter('compressed_allreduce_calls' // c_null_char) /= c0 + 1) bad = bad + 1
  if (maxval(abs(b - np * a) / (np * a)) > np * 2.0**(-4) * 1.5) bad = bad + 1
  call MPI_Comm_get_info(comm, info)
  call MPI_Info_get(info, 'gcoll_allreduce_compress', 31, v, flag)
  if (.not. flag .or. trim(v) /= 'fp8') bad = bad + 1
  call MPI_Info_free(info)
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'gcoll_allreduce_compress', 'bf16')
  call MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, comm2)
  call MPI_Info_free(info)
  c0 = gcoll_library_counter('compressed_allreduce_calls' // c_null_char)
  call MPI_Allreduce(a, b, 1000, MPI_REAL, MPI_SUM, comm2)
  if (gcoll_library_counter('compressed_allreduce_calls' // c_null_char) /= c0 + 1) bad = bad + 1
  if (bad /= 0) print *, 'rank', me, ': compress_f08 failed checks:', bad
  call MPI_Comm_free(comm2)
  call MPI_Comm_free(comm)
  call MPI_Finalize()
  if (bad /= 0) stop 1
  if (me == 0) print *, 'compress_f08: passed'
end program
