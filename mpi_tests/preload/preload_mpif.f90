! preload_mpif: plain MPI Fortran program using include 'mpif.h' (does not link
! gcoll); run under `mpirun -x LD_PRELOAD=libgcoll.so`. Calls go through the
! mpif.h symbols (mpi_allreduce_ etc.).
!
! Makes a fixed number of MPI_ALLREDUCE / MPI_BCAST / MPI_ALLGATHER calls per rank
! (must match GCOLL_PRELOAD_CALLS_mpif in CMakeLists.txt), checks every result against
! a formula, and prints on rank 0 the GCOLL_EXPECT lines read by
! gcoll_preload_check.py (bytes per gcoll's stats definition, summed over ranks
! with MPI_REDUCE, counted like the program's other calls), then PASS or FAIL.
! Exits non-zero on failure.
module tally_mpif
  implicit none
  include 'mpif.h'
  integer, parameter :: AR = 1, BC = 2, AG = 3, RSB = 4, KRD = 5, KGA = 6, KGV = 7, KSC = 8, KSV = 9, &
      KAA = 10, KRS = 11, KAV = 12, NCOLL = 12
  integer(kind=8) :: ncalls(NCOLL) = 0, nbytes(NCOLL) = 0
  integer :: nfail = 0, myrank = 0
contains
  subroutine tally(coll, count, dtype, comm)
    integer, intent(in) :: coll, count, dtype, comm
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext
    integer :: csize, ierr
    call MPI_TYPE_GET_EXTENT(dtype, lb, ext, ierr)
    csize = 1
    if (coll == AG .or. coll == RSB .or. coll == KAA .or. coll == KRS .or. coll == KAV) call MPI_COMM_SIZE(comm, csize, ierr)
    ncalls(coll) = ncalls(coll) + 1
    nbytes(coll) = nbytes(coll) + int(count, 8) * int(ext, 8) * int(csize, 8)
  end subroutine tally

  subroutine check(ok, what, idx)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx
    if (.not. ok) then
      if (nfail < 20) write(0, '(A,I0,A,A,A,I0,A)') 'preload_mpif rank ', myrank, &
          ': FAIL ', what, ' [', idx, ']'
      nfail = nfail + 1
    end if
  end subroutine check

  subroutine ierr_check(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) then
      write(0, '(A,I0,A,A,A,I0)') 'preload_mpif rank ', myrank, ': FAIL ', what, &
          ' ierror=', ierr
      nfail = nfail + 1
    end if
  end subroutine ierr_check
end module tally_mpif

program preload_mpif
  use tally_mpif
  implicit none
  integer :: ierr, np, i, q, it, root, color, half, hrank, hsize, dup
  integer :: nfail_tot
  integer(kind=8) :: sum_ranks, half_sum, calls_tot(NCOLL), bytes_tot(NCOLL)
  integer :: is(4), ir(4), iv(6)
  integer, allocatable :: iag(:)
  double precision :: dv(200), ds, dr, want
  double precision, allocatable :: dag(:)
  real :: rs(3), rr(3), rv(2)
  real, allocatable :: rag(:)
  logical :: ls(2), lr(2)
  character(len=12) :: cv, cwant
  character(len=20), parameter :: names(NCOLL) = [character(len=20) :: 'allreduce', 'bcast', &
      'allgather', 'reduce_scatter_block', 'reduce', 'gather', 'gatherv', 'scatter', 'scatterv', &
      'alltoall', 'reduce_scatter', 'allgatherv']
  integer, allocatable :: rsi(:)
  integer :: rso(2)
  integer, allocatable :: xs(:), xr(:), cnts(:), dsp(:)
  integer :: xone, xres
  double precision, allocatable :: rsd(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, myrank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  sum_ranks = int(np, 8) * int(np - 1, 8) / 2
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  color = mod(myrank, 2)
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, color, myrank, half, ierr)
  call MPI_COMM_RANK(half, hrank, ierr)
  call MPI_COMM_SIZE(half, hsize, ierr)
  half_sum = 0
  do q = color, np - 1, 2
    half_sum = half_sum + q
  end do

  ! ---------------------------- MPI_ALLREDUCE ---------------------------------
  ! 1: INTEGER sum
  do i = 1, 4
    is(i) = myrank + i
  end do
  call MPI_ALLREDUCE(is, ir, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce integer')
  call tally(AR, 4, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 4
    call check(int(ir(i), 8) == sum_ranks + int(i, 8) * np, 'allreduce integer sum', i)
  end do

  ! 2: MPI_IN_PLACE, DOUBLE PRECISION max
  do i = 1, 200
    dv(i) = 0.5d0 * myrank + i
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, dv, 200, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce in-place double')
  call tally(AR, 200, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do i = 1, 200
    call check(dv(i) == 0.5d0 * (np - 1) + i, 'allreduce in-place double max', i)
  end do

  ! 3: REAL sum on a dup'ed communicator (small integers: exact)
  do i = 1, 3
    rs(i) = real(myrank + 1) * real(i)
  end do
  call MPI_ALLREDUCE(rs, rr, 3, MPI_REAL, MPI_SUM, dup, ierr)
  call ierr_check(ierr, 'allreduce real')
  call tally(AR, 3, MPI_REAL, dup)
  do i = 1, 3
    call check(rr(i) == real(np * (np + 1) / 2) * real(i), 'allreduce real sum', i)
  end do

  ! 4: LOGICAL land / lor
  ls(1) = .true.
  ls(2) = (myrank == 0)
  call MPI_ALLREDUCE(ls, lr, 2, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce logical')
  call tally(AR, 2, MPI_LOGICAL, MPI_COMM_WORLD)
  call check(lr(1), 'allreduce logical land true', 1)
  call check(lr(2) .eqv. (np == 1), 'allreduce logical land rank0', 2)

  ! 5: MPI_IN_PLACE INTEGER sum on the split communicator
  iv(1) = myrank
  iv(2) = 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, iv, 2, MPI_INTEGER, MPI_SUM, half, ierr)
  call ierr_check(ierr, 'allreduce split')
  call tally(AR, 2, MPI_INTEGER, half)
  call check(int(iv(1), 8) == half_sum, 'allreduce split sum', 1)
  call check(iv(2) == hsize, 'allreduce split size', 2)

  ! 6..11: loop of 8-byte allreduces, in place on odd iterations
  do it = 0, 5
    ds = 2d0 * myrank + it
    if (mod(it, 2) == 1) then
      dr = ds
      call MPI_ALLREDUCE(MPI_IN_PLACE, dr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    else
      dr = 0d0
      call MPI_ALLREDUCE(ds, dr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    call ierr_check(ierr, 'allreduce loop')
    call tally(AR, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    want = 2d0 * dble(sum_ranks) + dble(np) * it
    call check(dr == want, 'allreduce loop', it)
  end do

  ! ------------------------------ MPI_BCAST -----------------------------------
  ! 1: INTEGER from root 0
  do i = 1, 4
    is(i) = -1
    if (myrank == 0) is(i) = 100 + i
  end do
  call MPI_BCAST(is, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'bcast integer')
  call tally(BC, 4, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 4
    call check(is(i) == 100 + i, 'bcast integer root 0', i)
  end do

  ! 2: DOUBLE PRECISION from the last rank (non-zero root)
  root = np - 1
  do i = 1, 200
    dv(i) = -1d0
    if (myrank == root) dv(i) = root * 1000d0 + i * 0.25d0
  end do
  call MPI_BCAST(dv, 200, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'bcast double')
  call tally(BC, 200, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do i = 1, 200
    call check(dv(i) == root * 1000d0 + i * 0.25d0, 'bcast double root last', i)
  end do

  ! 3: REAL from root 1 on the dup'ed communicator
  root = mod(1, np)
  rv = 0.0
  if (myrank == root) rv = [1.5, -2.5]
  call MPI_BCAST(rv, 2, MPI_REAL, root, dup, ierr)
  call ierr_check(ierr, 'bcast real')
  call tally(BC, 2, MPI_REAL, dup)
  call check(rv(1) == 1.5 .and. rv(2) == -2.5, 'bcast real root 1', 1)

  ! 4: CHARACTER from the last local rank of the split communicator
  root = hsize - 1
  write(cwant, '(A,I0)') 'gcoll-c', color
  cv = 'xxxxxxxxxxxx'
  if (hrank == root) cv = cwant
  call MPI_BCAST(cv, 12, MPI_CHARACTER, root, half, ierr)
  call ierr_check(ierr, 'bcast character')
  call tally(BC, 12, MPI_CHARACTER, half)
  call check(cv == cwant, 'bcast character split', 1)

  ! ---------------------------- MPI_ALLGATHER ---------------------------------
  ! 1: INTEGER, 2 per rank
  allocate(iag(2 * np))
  is(1) = myrank * 10
  is(2) = myrank * 10 + 1
  call MPI_ALLGATHER(is, 2, MPI_INTEGER, iag, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgather integer')
  call tally(AG, 2, MPI_INTEGER, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(iag(2 * q + 1) == q * 10 .and. iag(2 * q + 2) == q * 10 + 1, &
        'allgather integer', q)
  end do
  deallocate(iag)

  ! 2: MPI_IN_PLACE, DOUBLE PRECISION, 3 per rank
  allocate(dag(3 * np))
  dag = -1d0
  do i = 1, 3
    dag(3 * myrank + i) = myrank + 0.125d0 * i
  end do
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dag, 3, MPI_DOUBLE_PRECISION, &
      MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgather in-place double')
  call tally(AG, 3, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do q = 0, np - 1
    do i = 1, 3
      call check(dag(3 * q + i) == q + 0.125d0 * i, 'allgather in-place double', 3 * q + i)
    end do
  end do
  deallocate(dag)

  ! 3: REAL, 1 per rank, on the split communicator (world ranks color, color+2, ...)
  allocate(rag(hsize))
  rs(1) = real(myrank)
  call MPI_ALLGATHER(rs, 1, MPI_REAL, rag, 1, MPI_REAL, half, ierr)
  call ierr_check(ierr, 'allgather real')
  call tally(AG, 1, MPI_REAL, half)
  do q = 0, hsize - 1
    call check(rag(q + 1) == real(color + 2 * q), 'allgather real split', q)
  end do
  deallocate(rag)

  ! ------------------------ MPI_REDUCE_SCATTER_BLOCK -------------------------
  ! rank q's input element k (from 0): q + k; rank r gets block r (2 integers)
  allocate(rsi(2 * np))
  do i = 1, 2 * np
    rsi(i) = myrank + i - 1
  end do
  rso = -1
  call MPI_REDUCE_SCATTER_BLOCK(rsi, rso, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
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
  call MPI_REDUCE_SCATTER_BLOCK(MPI_IN_PLACE, rsd, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
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
  call MPI_REDUCE(ncalls, calls_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(nbytes, bytes_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(nfail, nfail_tot, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (myrank == 0) then
    write(*, '(A,I0)') 'GCOLL_EXPECT np=', np
    do i = 1, NCOLL
      write(*, '(A,A,A,I0,A,I0,A,I0)') 'GCOLL_EXPECT ', trim(names(i)), ' calls_per_rank=', &
          ncalls(i), ' calls=', calls_tot(i), ' bytes=', bytes_tot(i)
    end do
    if (nfail_tot == 0) then
      write(*, '(A)') 'preload_mpif: PASS'
    else
      write(*, '(A,I0)') 'preload_mpif: FAIL nfail=', nfail_tot
    end if
    flush(6)
    nfail = nfail_tot
  end if
  call MPI_COMM_FREE(half, ierr)
  call MPI_COMM_FREE(dup, ierr)
  call MPI_FINALIZE(ierr)
  if (nfail /= 0) stop 1
end program preload_mpif
