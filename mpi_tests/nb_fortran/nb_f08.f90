! nb_f08: the nonblocking and persistent forms through `use mpi_f08` (Open MPI: gcoll's
! mpi_iallreduce_f08_, mpix_allreduce_init_f08_ and the completion calls mpi_wait_f08_ ...)
! on device buffers of gcoll's emulated GPU (GCOLL_CUDA=emulate; the CPU cannot touch them,
! so the MPI, which is not CUDA-aware, crashes on them without gcoll). A staged request's
! result reaches device memory only when gcoll's Fortran completion call sees it complete:
! each completion call is checked by reading the device result back. Prints PASS or FAIL on
! rank 0; exits non-zero on failure.
program nb_f08
  use mpi_f08
  use iso_c_binding
  implicit none
  interface
    integer(c_int) function emu_malloc(p, bytes, kind) bind(C, name='gcoll_emu_malloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr) :: p
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function
    integer(c_int) function emu_memcpy(dst, src, bytes) bind(C, name='gcoll_emu_memcpy')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function emu_free(p) bind(C, name='gcoll_emu_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
  end interface
  integer, parameter :: n = 1000, nreq = 4
  integer :: ierr, rank, np, i, k, it, idx, outcount, nfail, nfail_tot, left, right, sendv, recvv
  integer, target :: h(n), res(n)
  integer, pointer :: ds(:), dr(:)
  type(c_ptr) :: pds, pdr
  type(MPI_Request) :: req(nreq), p
  type(MPI_Status) :: st(nreq)
  integer :: indices(nreq)
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  nfail = 0
  if (emu_malloc(pds, int(4 * n, c_size_t), 0_c_int) /= 0 .or. emu_malloc(pdr, int(4 * n, c_size_t), 0_c_int) /= 0) &
      stop 'no emulated device memory (GCOLL_CUDA=emulate?)'
  call c_f_pointer(pds, ds, [n])
  call c_f_pointer(pdr, dr, [n])
  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)

  ! A warm-up call and a barrier: what gcoll's engine needs to take the calls below on its
  ! progress thread (GCOLL_PROGRESS_THREAD=on; with off they are staged).
  call fill(0)
  call MPI_Iallreduce(ds, dr, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
  call ok(ierr == MPI_SUCCESS, 'warm-up', 0)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! Each way of completing, one after the other: 1 Wait, 2 Test loop, 3 Waitall (mixed with
  ! point-to-point), 4 Waitany, 5 Waitsome, 6 Testall, 7 Testany, 8 Testsome,
  ! 9 Request_get_status then Wait.
  do k = 1, 9
    call fill(k)
    req = MPI_REQUEST_NULL
    call MPI_Iallreduce(ds, dr, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
    call ok(ierr == MPI_SUCCESS, 'iallreduce', k)
    sendv = rank
    recvv = -1
    call MPI_Irecv(recvv, 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, req(2))
    call MPI_Isend(sendv, 1, MPI_INTEGER, right, 7, MPI_COMM_WORLD, req(3))
    select case (k)
    case (1)
      call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
      call MPI_Waitall(2, req(2:3), MPI_STATUSES_IGNORE, ierr)
    case (2)
      flag = .false.
      do while (.not. flag)
        call MPI_Test(req(1), flag, st(1), ierr)
      end do
      call MPI_Waitall(2, req(2:3), st(2:3), ierr)
    case (3)
      call MPI_Waitall(nreq, req, st, ierr)
    case (4)
      do i = 1, 3
        call MPI_Waitany(nreq, req, idx, st(1), ierr)
      end do
    case (5)
      outcount = 0
      i = 0
      do while (i < 3)
        call MPI_Waitsome(nreq, req, outcount, indices, st, ierr)
        if (outcount == MPI_UNDEFINED) exit
        i = i + outcount
      end do
    case (6)
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(nreq, req, flag, MPI_STATUSES_IGNORE, ierr)
      end do
    case (7)
      i = 0
      do while (i < 3)
        call MPI_Testany(nreq, req, idx, flag, st(1), ierr)
        if (flag .and. idx /= MPI_UNDEFINED) i = i + 1
      end do
    case (8)
      i = 0
      do while (i < 3)
        call MPI_Testsome(nreq, req, outcount, indices, MPI_STATUSES_IGNORE, ierr)
        if (outcount /= MPI_UNDEFINED) i = i + outcount
      end do
    case (9)
      flag = .false.
      do while (.not. flag)
        call MPI_Request_get_status(req(1), flag, st(1), ierr)
      end do
      call check(k)  ! the result is there already
      call MPI_Wait(req(1), st(1), ierr)
      call MPI_Waitall(2, req(2:3), st(2:3), ierr)
    end select
    call ok(ierr == MPI_SUCCESS, 'completion ierror', k)
    call ok(req(1) == MPI_REQUEST_NULL, 'request not MPI_REQUEST_NULL after completion', k)
    call ok(recvv == left, 'point-to-point message', k)
    call check(k)
  end do

  ! Persistent: set up once, started three times with new input.
  call MPIX_Allreduce_init(ds, dr, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, p, ierr)
  call ok(ierr == MPI_SUCCESS, 'allreduce_init', 0)
  do it = 1, 3
    call fill(20 + it)
    call MPI_Start(p, ierr)
    call MPI_Wait(p, MPI_STATUS_IGNORE, ierr)
    call ok(p /= MPI_REQUEST_NULL, 'persistent request freed by MPI_Wait', it)
    call check(20 + it)
  end do
  req(1) = p
  call fill(30)
  call MPI_Startall(1, req, ierr)
  call MPI_Waitall(1, req, MPI_STATUSES_IGNORE, ierr)
  call check(30)
  call MPI_Request_free(p, ierr)
  call ok(ierr == MPI_SUCCESS .and. p == MPI_REQUEST_NULL, 'request_free', 0)

  call MPI_Reduce(nfail, nfail_tot, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (nfail_tot == 0) then
      print '(A)', 'nb_f08: PASS'
    else
      print '(A,I0,A)', 'nb_f08: FAIL (', nfail_tot, ' checks)'
    end if
  end if
  i = emu_free(pds)
  i = emu_free(pdr)
  call MPI_Finalize(ierr)
  if (nfail /= 0) error stop 1
contains
  ! Input of round k on the device; the result buffer set to a sentinel.
  subroutine fill(k)
    integer, intent(in) :: k
    integer :: j, e
    do j = 1, n
      h(j) = rank * 3 + j + k
      res(j) = -7
    end do
    e = emu_memcpy(pds, c_loc(h), int(4 * n, c_size_t))
    e = emu_memcpy(pdr, c_loc(res), int(4 * n, c_size_t))
  end subroutine fill
  subroutine check(k)
    integer, intent(in) :: k
    integer :: j, e, bad
    e = emu_memcpy(c_loc(res), pdr, int(4 * n, c_size_t))
    bad = 0
    do j = 1, n
      if (res(j) /= 3 * (np * (np - 1)) / 2 + np * (j + k)) bad = bad + 1
    end do
    call ok(bad == 0, 'device result', k)
  end subroutine check
  subroutine ok(cond, what, k)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    integer, intent(in) :: k
    if (.not. cond) then
      if (nfail < 20) write(0, '(A,I0,A,A,A,I0,A)') 'nb_f08 rank ', rank, ': FAIL ', what, ' [', k, ']'
      nfail = nfail + 1
    end if
  end subroutine ok
end program nb_f08
