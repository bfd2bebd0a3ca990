! stream_f08: gcoll's Fortran stream API (module gcoll_mpix_f08, src/fortran) from a
! `use mpi_f08` program on device buffers of gcoll's emulated GPU (GCOLL_CUDA=emulate): a
! stream of the emulated GPU made an MPIX_Stream through an info whose value is set with
! MPIX_Info_set_hex, a stream communicator, MPIX_Comm_get_stream round-tripping the
! handle, then each of the six MPIX_<Name>_enqueue calls, every result checked on a host
! copy against the same MPI call on host buffers (the reference). As in the C test
! (mpi_tests/stream/stream_test.cc), ordering is part of each case: the input reaches the
! device by a copy queued on the stream behind garbage and a busy stretch, the result
! comes back by a copy queued after the call, and only then is the stream synchronized.
! Also: MPI_IN_PLACE and a large count (INTEGER(MPI_COUNT_KIND): the _c specific), the
! host's wait (argument `multiple`: MPI_Init_thread with MPI_THREAD_MULTIPLE, the proxy
! thread, the call returns while the stream is busy; `single`: host-synchronous, it
! waits), and errors under MPI_ERRORS_RETURN (a communicator without a stream, a
! non-contiguous section, a freed stream handle). Prints PASS or FAIL on rank 0; exits
! non-zero on failure.
program stream_f08
  use mpi_f08
  use gcoll_mpix_f08
  use iso_c_binding
  implicit none
  interface
    integer(c_int) function emu_malloc(p, bytes, kind) bind(C, name='gcoll_emu_malloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr) :: p
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function
    integer(c_int) function emu_free(p) bind(C, name='gcoll_emu_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function emu_stream_create(s) bind(C, name='gcoll_emu_stream_create')
      import :: c_int, c_ptr
      type(c_ptr) :: s
    end function
    integer(c_int) function emu_stream_destroy(s) bind(C, name='gcoll_emu_stream_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: s
    end function
    integer(c_int) function emu_stream_synchronize(s) bind(C, name='gcoll_emu_stream_synchronize')
      import :: c_int, c_ptr
      type(c_ptr), value :: s
    end function
    integer(c_int) function emu_stream_query(s) bind(C, name='gcoll_emu_stream_query')
      import :: c_int, c_ptr
      type(c_ptr), value :: s
    end function
    integer(c_int) function emu_stream_sleep(s, us) bind(C, name='gcoll_emu_stream_sleep')
      import :: c_int, c_ptr
      type(c_ptr), value :: s
      integer(c_int), value :: us
    end function
    integer(c_int) function emu_memcpy_async(dst, src, bytes, s) bind(C, name='gcoll_emu_memcpy_async')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: s
    end function
    integer(c_int) function emu_memset_async(p, v, bytes, s) bind(C, name='gcoll_emu_memset_async')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_int), value :: v
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: s
    end function
  end interface
  integer, parameter :: n = 1000
  integer(c_int), parameter :: busy_us = 3000, emu_not_ready = 4
  integer :: ierr, rank, np, required, provided, level, nfail, nfail_tot, i, root
  logical :: multiple
  character(len=16) :: arg
  type(c_ptr) :: s, pin, pout
  integer(c_size_t) :: all_bytes
  integer, pointer :: din_i(:), dout_i(:)
  double precision, pointer :: din_d(:), dout_d(:)
  integer, allocatable, target :: hin_i(:), got_i(:), want_i(:)
  double precision, allocatable, target :: hin_d(:), got_d(:), want_d(:)
  type(MPI_Info) :: info
  type(MPIX_Stream) :: stream, s2, old
  type(MPI_Comm) :: scomm
  double precision :: t0, dt

  call get_command_argument(1, arg)
  multiple = trim(arg) == 'multiple'
  required = MPI_THREAD_SINGLE
  if (multiple) required = MPI_THREAD_MULTIPLE
  call MPI_Init_thread(required, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  nfail = 0
  call MPI_Query_thread(level)
  call ok(level == provided, 'MPI_Query_thread agrees with MPI_Init_thread', level)
  if (multiple) call ok(provided == MPI_THREAD_MULTIPLE, 'MPI_THREAD_MULTIPLE provided', provided)
  if (rank == 0) print '(A,A,A,I0,A)', 'stream_f08: MPI_Init_thread provided ', trim(level_name(provided)), ', ', np, &
                       ' ranks'

  ! Device memory and host copies for the largest case (n per rank, np ranks, doubles),
  ! all allocated first and freed last: freeing device memory waits for the whole device.
  all_bytes = int(8 * n * np, c_size_t)
  if (emu_malloc(pin, all_bytes, 0_c_int) /= 0 .or. emu_malloc(pout, all_bytes, 0_c_int) /= 0) &
      error stop 'no emulated device memory (GCOLL_CUDA=emulate?)'
  call c_f_pointer(pin, din_i, [n * np])
  call c_f_pointer(pout, dout_i, [n * np])
  call c_f_pointer(pin, din_d, [n * np])
  call c_f_pointer(pout, dout_d, [n * np])
  allocate(hin_i(n * np), got_i(n * np), want_i(n * np), hin_d(n * np), got_d(n * np), want_d(n * np))

  ! The stream, its MPIX_Stream (the cudaStream_t's bytes in hexadecimal) and a stream
  ! communicator; the handle comes back from the communicator as it went in.
  call ok(emu_stream_create(s) == 0, 'gcoll_emu_stream_create', 0)
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'type', 'cudaStream_t')
  call MPIX_Info_set_hex(info, 'value', s, int(c_sizeof(s)), ierr)
  call ok(ierr == MPI_SUCCESS, 'MPIX_Info_set_hex', ierr)
  call MPIX_Stream_create(info, stream, ierr)
  call ok(ierr == MPI_SUCCESS .and. stream /= MPIX_STREAM_NULL, 'MPIX_Stream_create', ierr)
  call MPI_Info_free(info)
  call MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, scomm, ierr)
  call ok(ierr == MPI_SUCCESS .and. scomm /= MPI_COMM_NULL, 'MPIX_Stream_comm_create', ierr)
  call MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN)
  call MPIX_Comm_get_stream(scomm, 0, s2)  ! (no ierror: it is optional)
  call ok(s2 == stream .and. s2%MPI_VAL == stream%MPI_VAL, 'MPIX_Comm_get_stream: the same handle', s2%MPI_VAL)
  call MPIX_Comm_get_stream(MPI_COMM_WORLD, 0, s2, ierr)
  call ok(ierr == MPI_SUCCESS .and. s2 == MPIX_STREAM_NULL, 'MPIX_Comm_get_stream: MPIX_STREAM_NULL', s2%MPI_VAL)

  ! 1. Allreduce, INTEGER, MPI_SUM.
  call fill_i(1)
  call MPI_Allreduce(hin_i, want_i, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call late_input(pin, c_loc(hin_i), 4 * n)
  call MPIX_Allreduce_enqueue(din_i, dout_i, n, MPI_INTEGER, MPI_SUM, scomm, ierr)
  call check_i(ierr, n, 'MPIX_Allreduce_enqueue')

  ! 2. Allreduce in place, DOUBLE PRECISION, MPI_SUM.
  call fill_d(2)
  want_d(1:n) = hin_d(1:n)
  call MPI_Allreduce(MPI_IN_PLACE, want_d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call late_input(pout, c_loc(hin_d), 8 * n)
  call MPIX_Allreduce_enqueue(MPI_IN_PLACE, dout_d, n, MPI_DOUBLE_PRECISION, MPI_SUM, scomm, ierr)
  call check_d(ierr, n, 'MPIX_Allreduce_enqueue (MPI_IN_PLACE)')

  ! 3. Bcast from the last rank, DOUBLE PRECISION, a large count (the _c specific).
  root = np - 1
  call fill_d(3)
  want_d(1:n) = hin_d(1:n)
  call MPI_Bcast(want_d, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD)
  call late_input(pout, c_loc(hin_d), 8 * n)
  call MPIX_Bcast_enqueue(dout_d, int(n, MPI_COUNT_KIND), MPI_DOUBLE_PRECISION, root, scomm, ierr)
  call check_d(ierr, n, 'MPIX_Bcast_enqueue (MPI_COUNT_KIND count)')

  ! 4. Allgather, INTEGER.
  call fill_i(4)
  call MPI_Allgather(hin_i, n, MPI_INTEGER, want_i, n, MPI_INTEGER, MPI_COMM_WORLD)
  call late_input(pin, c_loc(hin_i), 4 * n)
  call MPIX_Allgather_enqueue(din_i, n, MPI_INTEGER, dout_i, n, MPI_INTEGER, scomm, ierr)
  call check_i(ierr, n * np, 'MPIX_Allgather_enqueue')

  ! 5. Reduce_scatter_block, INTEGER, MPI_SUM: n per rank out of n * np.
  call fill_i(5)
  call MPI_Reduce_scatter_block(hin_i, want_i, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call late_input(pin, c_loc(hin_i), 4 * n * np)
  call MPIX_Reduce_scatter_block_enqueue(din_i, dout_i, n, MPI_INTEGER, MPI_SUM, scomm, ierr)
  call check_i(ierr, n, 'MPIX_Reduce_scatter_block_enqueue')

  ! 6. Reduce to rank 0, DOUBLE PRECISION, MPI_MAX (the result is rank 0's only).
  call fill_d(6)
  call MPI_Reduce(hin_d, want_d, n, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD)
  call late_input(pin, c_loc(hin_d), 8 * n)
  call MPIX_Reduce_enqueue(din_d, dout_d, n, MPI_DOUBLE_PRECISION, MPI_MAX, 0, scomm, ierr)
  call check_d(ierr, merge(n, 0, rank == 0), 'MPIX_Reduce_enqueue')

  ! 7. Alltoall, INTEGER: block j of every rank's input to rank j.
  call fill_i(7)
  call MPI_Alltoall(hin_i, n, MPI_INTEGER, want_i, n, MPI_INTEGER, MPI_COMM_WORLD)
  call late_input(pin, c_loc(hin_i), 4 * n * np)
  call MPIX_Alltoall_enqueue(din_i, n, MPI_INTEGER, dout_i, n, MPI_INTEGER, scomm, ierr)
  call check_i(ierr, n * np, 'MPIX_Alltoall_enqueue')

  ! The host's wait: with the proxy thread the call returns while the stream is still busy
  ! with earlier work (300 ms); host-synchronous, the call waits for that work.
  ierr = emu_memset_async(pout, 0_c_int, int(4 * n, c_size_t), s)
  ierr = emu_stream_sleep(s, 300000_c_int)
  t0 = MPI_Wtime()
  call MPIX_Allreduce_enqueue(MPI_IN_PLACE, dout_i, n, MPI_INTEGER, MPI_SUM, scomm, ierr)
  dt = MPI_Wtime() - t0
  i = emu_stream_query(s)
  call ok(ierr == MPI_SUCCESS, 'MPIX_Allreduce_enqueue behind a busy stream', ierr)
  if (provided == MPI_THREAD_MULTIPLE) then
    call ok(i == emu_not_ready .and. dt < 0.25d0, 'proxy thread: the call returned at once, the stream busy', &
            int(dt * 1000))
  else
    call ok(dt >= 0.25d0, 'host-synchronous: the call waited for the stream', int(dt * 1000))
  end if
  call ok(emu_stream_synchronize(s) == 0, 'gcoll_emu_stream_synchronize', 0)

  ! Errors, under MPI_ERRORS_RETURN, nothing queued: a communicator without a stream
  ! (MPI_ERR_COMM), a non-contiguous section (MPI_ERR_BUFFER), a freed stream (MPI_ERR_ARG,
  ! through MPI_COMM_SELF's handler as in C).
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN)
  call MPIX_Allreduce_enqueue(MPI_IN_PLACE, dout_i, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call error_class_is(ierr, MPI_ERR_COMM, 'enqueue on a communicator without a stream')
  call MPIX_Allreduce_enqueue(MPI_IN_PLACE, dout_i(1:n:2), n / 2, MPI_INTEGER, MPI_SUM, scomm, ierr)
  call error_class_is(ierr, MPI_ERR_BUFFER, 'enqueue of a non-contiguous section')

  call MPI_Comm_free(scomm)
  old = stream
  call MPIX_Stream_free(stream, ierr)
  call ok(ierr == MPI_SUCCESS .and. stream == MPIX_STREAM_NULL, 'MPIX_Stream_free', ierr)
  call MPIX_Stream_free(old, ierr)
  call error_class_is(ierr, MPI_ERR_ARG, 'MPIX_Stream_free of a freed handle')
  call ok(emu_stream_destroy(s) == 0, 'gcoll_emu_stream_destroy', 0)
  i = emu_free(pin)
  i = emu_free(pout)

  call MPI_Reduce(nfail, nfail_tot, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (nfail_tot == 0) then
      print '(A)', 'stream_f08: PASS'
    else
      print '(A,I0,A)', 'stream_f08: FAIL (', nfail_tot, ' checks)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (nfail /= 0) error stop 1

contains

  function level_name(l) result(name)
    integer, intent(in) :: l
    character(len=24) :: name
    select case (l)
    case (MPI_THREAD_SINGLE)
      name = 'MPI_THREAD_SINGLE'
    case (MPI_THREAD_FUNNELED)
      name = 'MPI_THREAD_FUNNELED'
    case (MPI_THREAD_SERIALIZED)
      name = 'MPI_THREAD_SERIALIZED'
    case (MPI_THREAD_MULTIPLE)
      name = 'MPI_THREAD_MULTIPLE'
    case default
      name = '?'
    end select
  end function level_name

  ! Rank r's element i of case k (small integers: exact in every sum and as doubles).
  subroutine fill_i(k)
    integer, intent(in) :: k
    integer :: j
    do j = 1, n * np
      hin_i(j) = mod(j * 7 + rank * 13 + k, 61) - 20
    end do
  end subroutine fill_i
  subroutine fill_d(k)
    integer, intent(in) :: k
    integer :: j
    do j = 1, n * np
      hin_d(j) = dble(mod(j * 7 + rank * 13 + k, 61) - 20)
    end do
  end subroutine fill_d

  ! Garbage in both device buffers, a busy stretch, then the input into `dst`, all queued
  ! on the stream: a call that read its input before the stream's earlier work got garbage.
  subroutine late_input(dst, src, bytes)
    type(c_ptr), intent(in) :: dst, src
    integer, intent(in) :: bytes
    integer(c_int) :: e
    e = emu_memset_async(pin, 127_c_int, all_bytes, s)
    e = e + emu_memset_async(pout, 127_c_int, all_bytes, s)
    e = e + emu_stream_sleep(s, busy_us)
    e = e + emu_memcpy_async(dst, src, int(bytes, c_size_t), s)
    call ok(e == 0, 'queueing the input on the stream', int(e))
  end subroutine late_input

  ! The result (m elements of the output buffer), copied back on the stream after the call.
  subroutine check_i(rc, m, what)
    integer, intent(in) :: rc, m
    character(len=*), intent(in) :: what
    integer :: j, bad
    call ok(rc == MPI_SUCCESS, what // ': ierror', rc)
    got_i = -99
    call ok(emu_memcpy_async(c_loc(got_i), pout, int(4 * m, c_size_t), s) == 0, what // ': copy back', 0)
    call ok(emu_stream_synchronize(s) == 0, what // ': synchronize', 0)
    bad = 0
    do j = 1, m
      if (got_i(j) /= want_i(j)) then
        if (bad == 0) write(0, '(A,I0,A,A,I0,A,I0,A,I0)') 'stream_f08 rank ', rank, ': ', what // ': element ', j, &
                                                          ' got ', got_i(j), ' want ', want_i(j)
        bad = bad + 1
      end if
    end do
    call ok(bad == 0, what // ': result', bad)
  end subroutine check_i
  subroutine check_d(rc, m, what)
    integer, intent(in) :: rc, m
    character(len=*), intent(in) :: what
    integer :: j, bad
    call ok(rc == MPI_SUCCESS, what // ': ierror', rc)
    got_d = -99d0
    call ok(emu_memcpy_async(c_loc(got_d), pout, int(8 * m, c_size_t), s) == 0, what // ': copy back', 0)
    call ok(emu_stream_synchronize(s) == 0, what // ': synchronize', 0)
    bad = 0
    do j = 1, m
      if (got_d(j) /= want_d(j)) then
        if (bad == 0) write(0, '(A,I0,A,A,I0,A,G0,A,G0)') 'stream_f08 rank ', rank, ': ', what // ': element ', j, &
                                                          ' got ', got_d(j), ' want ', want_d(j)
        bad = bad + 1
      end if
    end do
    call ok(bad == 0, what // ': result', bad)
  end subroutine check_d

  subroutine error_class_is(rc, want, what)
    integer, intent(in) :: rc, want
    character(len=*), intent(in) :: what
    integer :: c
    c = MPI_SUCCESS
    if (rc /= MPI_SUCCESS) call MPI_Error_class(rc, c)
    call ok(c == want, what // ': error class', c)
  end subroutine error_class_is

  subroutine ok(cond, what, k)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    integer, intent(in) :: k
    if (.not. cond) then
      if (nfail < 20) write(0, '(A,I0,A,A,A,I0,A)') 'stream_f08 rank ', rank, ': FAIL ', what, ' [', k, ']'
      nfail = nfail + 1
    end if
  end subroutine ok
end program stream_f08
