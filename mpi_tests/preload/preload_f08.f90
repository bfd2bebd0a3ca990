! preload_f08: plain MPI Fortran program using the `use mpi_f08` module (does not
! link gcoll); run under `mpirun -x LD_PRELOAD=libgcoll.so`. With Open MPI the
! calls go to mpi_allreduce_f08_ etc. ierror is optional in mpi_f08: some calls
! pass it and some do not (the callee then sees a NULL ierror pointer).
!
! Makes a fixed number of MPI_Allreduce / MPI_Bcast / MPI_Allgather calls per rank
! (must match GCOLL_PRELOAD_CALLS_f08 in CMakeLists.txt), checks every result against
! a formula, and prints on rank 0 the GCOLL_EXPECT lines read by
! gcoll_preload_check.py (bytes per gcoll's stats definition, summed over ranks
! with MPI_Reduce, counted like the program's other calls), then PASS or FAIL.
! Exits non-zero on failure.
module tally_f08
  use mpi_f08
  implicit none
  integer, parameter :: AR = 1, BC = 2, AG = 3, RSB = 4, KRD = 5, KGA = 6, KGV = 7, KSC = 8, KSV = 9, &
      KAA = 10, KRS = 11, KAV = 12, NCOLL = 12
  integer(kind=8) :: ncalls(NCOLL) = 0, nbytes(NCOLL) = 0
  integer :: nfail = 0, myrank = 0
contains
  subroutine tally(coll, count, dtype, comm)
    integer, intent(in) :: coll, count
    type(MPI_Datatype), intent(in) :: dtype
    type(MPI_Comm), intent(in) :: comm
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext
    integer :: csize
    call MPI_Type_get_extent(dtype, lb, ext)
    csize = 1
    if (coll == AG .or. coll == RSB .or. coll == KAA .or. coll == KRS .or. coll == KAV) call MPI_Comm_size(comm, csize)
    ncalls(coll) = ncalls(coll) + 1
    nbytes(coll) = nbytes(coll) + int(count, 8) * int(ext, 8) * int(csize, 8)
  end subroutine tally

  subroutine check(ok, what, idx)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx
    if (.not. ok) then
      if (nfail < 20) write(0, '(A,I0,A,A,A,I0,A)') 'preload_f08 rank ', myrank, &
          ': FAIL ', what, ' [', idx, ']'
      nfail = nfail + 1
    end if
  end subroutine check

  subroutine ierr_check(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) then
      write(0, '(A,I0,A,A,A,I0)') 'preload_f08 rank ', myrank, ': FAIL ', what, &
          ' ierror=', ierr
      nfail = nfail + 1
    end if
  end subroutine ierr_check
end module tally_f08

program preload_f08
  use mpi_f08
  use tally_f08
  implicit none
  integer :: ierr, np, i, q, it, root, color, hrank, hsize
  integer :: nfail_tot
  type(MPI_Comm) :: half, dup
  integer(kind=8) :: sum_ranks, half_sum, calls_tot(NCOLL), bytes_tot(NCOLL)
  integer :: is(3), ir(3), iv(4)
  integer, allocatable :: iag(:)
  double precision :: dv(128), ds, dr, want
  double precision, allocatable :: dag(:)
  real :: rs(2), rr(2), rv(4)
  real, allocatable :: rag(:)
  character(len=20), parameter :: names(NCOLL) = [character(len=20) :: 'allreduce', 'bcast', &
      'allgather', 'reduce_scatter_block', 'reduce', 'gather', 'gatherv', 'scatter', 'scatterv', &
      'alltoall', 'reduce_scatter', 'allgatherv']
  integer, allocatable :: rsi(:)
  integer :: rso(2)
  integer, allocatable :: xs(:), xr(:), cnts(:), dsp(:)
  integer :: xone, xres
  double precision, allocatable :: rsd(:)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  sum_ranks = int(np, 8) * int(np - 1, 8) / 2
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  color = mod(myrank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, myrank, half)
  call MPI_Comm_rank(half, hrank)
  call MPI_Comm_size(half, hsize)
  half_sum = 0
  do q = color, np - 1, 2
    half_sum = half_sum + q
  end do

  ! ---------------------------- MPI_Allreduce ---------------------------------
  ! 1: INTEGER sum, with ierror
  do i = 1, 3
    is(i) = myrank - i
  end do
  ierr = -12345
  call MPI_Allreduce(is, ir, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce integer')
  call tally(AR, 3, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 3
    call check(int(ir(i), 8) == sum_ranks - int(i, 8) * np, 'allreduce integer sum', i)
  end do

  ! 2: MPI_IN_PLACE DOUBLE PRECISION max, without ierror
  do i = 1, 128
    dv(i) = 0.25d0 * myrank - i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, dv, 128, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  call tally(AR, 128, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do i = 1, 128
    call check(dv(i) == 0.25d0 * (np - 1) - i, 'allreduce in-place double max', i)
  end do

  ! 3: REAL sum on the dup'ed communicator, without ierror
  rs = [real(myrank + 1), 2.0 * real(myrank + 1)]
  call MPI_Allreduce(rs, rr, 2, MPI_REAL, MPI_SUM, dup)
  call tally(AR, 2, MPI_REAL, dup)
  call check(rr(1) == real(np * (np + 1) / 2) .and. rr(2) == 2.0 * real(np * (np + 1) / 2), &
      'allreduce real sum', 1)

  ! 4: MPI_IN_PLACE INTEGER sum on the split communicator, with ierror
  iv(1) = myrank
  iv(2) = 1
  ierr = -12345
  call MPI_Allreduce(MPI_IN_PLACE, iv, 2, MPI_INTEGER, MPI_SUM, half, ierr)
  call ierr_check(ierr, 'allreduce split')
  call tally(AR, 2, MPI_INTEGER, half)
  call check(int(iv(1), 8) == half_sum .and. iv(2) == hsize, 'allreduce split', 1)

  ! 5..12: loop of 8-byte allreduces, ierror on even iterations only,
  !        in place on odd iterations
  do it = 0, 7
    ds = myrank * 4d0 + it
    dr = ds
    ierr = -12345
    if (mod(it, 2) == 0) then
      call MPI_Allreduce(ds, dr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      call ierr_check(ierr, 'allreduce loop')
    else
      call MPI_Allreduce(MPI_IN_PLACE, dr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    end if
    call tally(AR, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    want = 4d0 * dble(sum_ranks) + dble(np) * it
    call check(dr == want, 'allreduce loop', it)
  end do

  ! ------------------------------ MPI_Bcast -----------------------------------
  ! 1: INTEGER from root 0, without ierror
  iv = -1
  if (myrank == 0) iv = [11, 22, 33, 44]
  call MPI_Bcast(iv, 4, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call tally(BC, 4, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 4
    call check(iv(i) == 11 * i, 'bcast integer root 0', i)
  end do

  ! 2: DOUBLE PRECISION from the last rank, with ierror
  root = np - 1
  dv = -1d0
  if (myrank == root) then
    do i = 1, 128
      dv(i) = root * 10d0 + i / 4d0
    end do
  end if
  ierr = -12345
  call MPI_Bcast(dv, 128, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'bcast double')
  call tally(BC, 128, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do i = 1, 128
    call check(dv(i) == root * 10d0 + i / 4d0, 'bcast double root last', i)
  end do

  ! 3: REAL from root 1 on the dup'ed communicator, without ierror
  root = mod(1, np)
  rv = 0.0
  if (myrank == root) rv = [0.5, 1.5, 2.5, 3.5]
  call MPI_Bcast(rv, 4, MPI_REAL, root, dup)
  call tally(BC, 4, MPI_REAL, dup)
  do i = 1, 4
    call check(rv(i) == real(i) - 0.5, 'bcast real root 1', i)
  end do

  ! ---------------------------- MPI_Allgather ---------------------------------
  ! 1: INTEGER, 1 per rank, with ierror
  allocate(iag(np))
  is(1) = myrank * 3 + 1
  ierr = -12345
  call MPI_Allgather(is, 1, MPI_INTEGER, iag, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgather integer')
  call tally(AG, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(iag(q + 1) == q * 3 + 1, 'allgather integer', q)
  end do
  deallocate(iag)

  ! 2: MPI_IN_PLACE DOUBLE PRECISION, 2 per rank, without ierror
  allocate(dag(2 * np))
  dag = -1d0
  dag(2 * myrank + 1) = myrank + 0.5d0
  dag(2 * myrank + 2) = -myrank - 0.5d0
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dag, 2, MPI_DOUBLE_PRECISION, &
      MPI_COMM_WORLD)
  call tally(AG, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(dag(2 * q + 1) == q + 0.5d0 .and. dag(2 * q + 2) == -q - 0.5d0, &
        'allgather in-place double', q)
  end do
  deallocate(dag)

  ! 3: REAL on the split communicator, without ierror
  allocate(rag(hsize))
  rs(1) = real(myrank)
  call MPI_Allgather(rs, 1, MPI_REAL, rag, 1, MPI_REAL, half)
  call tally(AG, 1, MPI_REAL, half)
  do q = 0, hsize - 1
    call check(rag(q + 1) == real(color + 2 * q), 'allgather real split', q)
  end do
  deallocate(rag)

  ! 4: MPI_IN_PLACE INTEGER on the dup'ed communicator, with ierror
  allocate(iag(np))
  iag = -1
  iag(myrank + 1) = 7 * myrank
  ierr = -12345
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iag, 1, MPI_INTEGER, dup, ierr)
  call ierr_check(ierr, 'allgather in-place integer')
  call tally(AG, 1, MPI_INTEGER, dup)
  do q = 0, np - 1
    call check(iag(q + 1) == 7 * q, 'allgather in-place integer', q)
  end do
  deallocate(iag)

  ! ------------------------ MPI_REDUCE_SCATTER_BLOCK -------------------------
  ! rank q's input element k (from 0): q + k; rank r gets block r (2 integers)
  allocate(rsi(2 * np))
  do i = 1, 2 * np
    rsi(i) = myrank + i - 1
  end do
  rso = -1
  call MPI_Reduce_scatter_block(rsi, rso, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'reduce_scatter_block integer')
  call tally(RSB, 2, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 2
    call check(rso(i) == np * (2 * myrank + i - 1) + np * (np - 1) / 2, 'reduce_scatter_block integer', i)
  end do
  deallocate(rsi)
  ! in place, one DOUBLE PRECISION per rank
  allocate(rsd(np))
  do i = 1, np
    rsd(i) = 0.5d0 * (myrank + 1) * i
  end do
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, rsd, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'reduce_scatter_block in place')
  call tally(RSB, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  call check(rsd(1) == 0.5d0 * (myrank + 1) * np * (np + 1) / 2, 'reduce_scatter_block in place', 1)
  deallocate(rsd)

  ! ---- the collectives without an engine algorithm: one INTEGER per rank, root 0 ----
  allocate(xs(np), xr(np), cnts(np), dsp(np))
  do i = 1, np
    cnts(i) = 1
    dsp(i) = i - 1
  end do
  ! reduce: the sum of myrank + 1 at the root
  xone = myrank + 1
  xres = -1
  call MPI_Reduce(xone, xres, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'reduce')
  call tally(KRD, 1, MPI_INTEGER, MPI_COMM_WORLD)
  if (myrank == 0) call check(xres == np * (np + 1) / 2, 'reduce', 1)
  ! gather and gatherv: rank q's myrank at the root
  do it = 1, 2
    xr = -1
    if (it == 1) then
      call MPI_Gather(myrank, 1, MPI_INTEGER, xr, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    else
      call MPI_Gatherv(myrank, 1, MPI_INTEGER, xr, cnts, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    end if
    call ierr_check(ierr, 'gather(v)')
    if (myrank == 0) then
      call tally(KGA + it - 1, np, MPI_INTEGER, MPI_COMM_WORLD)
      do q = 0, np - 1
        call check(xr(q + 1) == q, 'gather(v)', q)
      end do
    else
      call tally(KGA + it - 1, 1, MPI_INTEGER, MPI_COMM_WORLD)
    end if
  end do
  ! scatter and scatterv: 10 q from the root to rank q
  do i = 1, np
    xs(i) = 10 * (i - 1)
  end do
  do it = 1, 2
    xres = -1
    if (it == 1) then
      call MPI_Scatter(xs, 1, MPI_INTEGER, xres, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    else
      call MPI_Scatterv(xs, cnts, dsp, MPI_INTEGER, xres, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    end if
    call ierr_check(ierr, 'scatter(v)')
    if (myrank == 0) then
      call tally(KSC + it - 1, np, MPI_INTEGER, MPI_COMM_WORLD)
    else
      call tally(KSC + it - 1, 1, MPI_INTEGER, MPI_COMM_WORLD)
    end if
    call check(xres == 10 * myrank, 'scatter(v)', it)
  end do
  ! alltoall: element j of rank q is 100 q + j; rank r gets 100 q + r from q
  do i = 1, np
    xs(i) = 100 * myrank + i - 1
  end do
  xr = -1
  call MPI_Alltoall(xs, 1, MPI_INTEGER, xr, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'alltoall')
  call tally(KAA, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(xr(q + 1) == 100 * q + myrank, 'alltoall', q)
  end do
  ! reduce_scatter: rank q's element j is q + j; rank r gets np r + np (np - 1) / 2
  do i = 1, np
    xs(i) = myrank + i - 1
  end do
  xres = -1
  call MPI_Reduce_scatter(xs, xres, cnts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'reduce_scatter')
  call tally(KRS, 1, MPI_INTEGER, MPI_COMM_WORLD)
  call check(xres == np * myrank + np * (np - 1) / 2, 'reduce_scatter', 1)
  ! allgatherv: every rank's myrank everywhere
  xr = -1
  call MPI_Allgatherv(myrank, 1, MPI_INTEGER, xr, cnts, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgatherv')
  call tally(KAV, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(xr(q + 1) == q, 'allgatherv', q)
  end do
  deallocate(xs, xr, cnts, dsp)
  ! the report's three MPI_Reduce calls below are counted too
  call tally(KRD, NCOLL, MPI_INTEGER8, MPI_COMM_WORLD)
  call tally(KRD, NCOLL, MPI_INTEGER8, MPI_COMM_WORLD)
  call tally(KRD, 1, MPI_INTEGER, MPI_COMM_WORLD)

  ! -------------------------------- report ------------------------------------
  call MPI_Reduce(ncalls, calls_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD)
  call MPI_Reduce(nbytes, bytes_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD)
  call MPI_Reduce(nfail, nfail_tot, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (myrank == 0) then
    write(*, '(A,I0)') 'GCOLL_EXPECT np=', np
    do i = 1, NCOLL
      write(*, '(A,A,A,I0,A,I0,A,I0)') 'GCOLL_EXPECT ', trim(names(i)), ' calls_per_rank=', &
          ncalls(i), ' calls=', calls_tot(i), ' bytes=', bytes_tot(i)
    end do
    if (nfail_tot == 0) then
      write(*, '(A)') 'preload_f08: PASS'
    else
      write(*, '(A,I0)') 'preload_f08: FAIL nfail=', nfail_tot
    end if
    flush(6)
    nfail = nfail_tot
  end if
  call MPI_Comm_free(half)
  call MPI_Comm_free(dup)
  call MPI_Finalize()
  if (nfail /= 0) stop 1
end program preload_f08
