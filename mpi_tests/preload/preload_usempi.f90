! preload_usempi: plain MPI Fortran program using the `use mpi` module (does not
! link gcoll); run under `mpirun -x LD_PRELOAD=libgcoll.so`. With Open MPI's
! ignore-TKR module the calls go to mpi_allreduce_ etc.
!
! Makes a fixed number of MPI_Allreduce / MPI_Bcast / MPI_Allgather calls per rank
! (must match GCOLL_PRELOAD_CALLS_usempi in CMakeLists.txt), checks every result against
! a formula, and prints on rank 0 the GCOLL_EXPECT lines read by
! gcoll_preload_check.py (bytes per gcoll's stats definition, summed over ranks
! with MPI_Reduce, counted like the program's other calls), then PASS or FAIL.
! Exits non-zero on failure.
module tally_usempi
  use mpi
  implicit none
  integer, parameter :: AR = 1, BC = 2, AG = 3, RSB = 4, KRD = 5, KGA = 6, KGV = 7, KSC = 8, KSV = 9, &
      KAA = 10, KRS = 11, KAV = 12, NCOLL = 12
  integer(kind=8) :: ncalls(NCOLL) = 0, nbytes(NCOLL) = 0
  integer :: nfail = 0, myrank = 0
contains
  subroutine tally(coll, count, dtype, comm)
    integer, intent(in) :: coll, count, dtype, comm
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext
    integer :: csize, ierr
    call MPI_Type_get_extent(dtype, lb, ext, ierr)
    csize = 1
    if (coll == AG .or. coll == RSB .or. coll == KAA .or. coll == KRS .or. coll == KAV) call MPI_Comm_size(comm, csize, ierr)
    ncalls(coll) = ncalls(coll) + 1
    nbytes(coll) = nbytes(coll) + int(count, 8) * int(ext, 8) * int(csize, 8)
  end subroutine tally

  subroutine check(ok, what, idx)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx
    if (.not. ok) then
      if (nfail < 20) write(0, '(A,I0,A,A,A,I0,A)') 'preload_usempi rank ', myrank, &
          ': FAIL ', what, ' [', idx, ']'
      nfail = nfail + 1
    end if
  end subroutine check

  subroutine ierr_check(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) then
      write(0, '(A,I0,A,A,A,I0)') 'preload_usempi rank ', myrank, ': FAIL ', what, &
          ' ierror=', ierr
      nfail = nfail + 1
    end if
  end subroutine ierr_check
end module tally_usempi

program preload_usempi
  use mpi
  use tally_usempi
  implicit none
  integer :: ierr, np, i, q, it, root, color, half, hrank, hsize, dup
  integer :: nfail_tot
  integer(kind=8) :: sum_ranks, half_sum, calls_tot(NCOLL), bytes_tot(NCOLL), k8(3), fact
  integer :: iv(8)
  integer, allocatable :: iag(:)
  double precision :: dv(64), dpair(2, 1), ds, want
  double precision, allocatable :: dag(:)
  real :: rv(5)
  real, allocatable :: rag(:)
  character(len=20), parameter :: names(NCOLL) = [character(len=20) :: 'allreduce', 'bcast', &
      'allgather', 'reduce_scatter_block', 'reduce', 'gather', 'gatherv', 'scatter', 'scatterv', &
      'alltoall', 'reduce_scatter', 'allgatherv']
  integer, allocatable :: rsi(:)
  integer :: rso(2)
  integer, allocatable :: xs(:), xr(:), cnts(:), dsp(:)
  integer :: xone, xres
  double precision, allocatable :: rsd(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  sum_ranks = int(np, 8) * int(np - 1, 8) / 2
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  color = mod(myrank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, myrank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  half_sum = 0
  do q = color, np - 1, 2
    half_sum = half_sum + q
  end do

  ! ---------------------------- MPI_Allreduce ---------------------------------
  ! 1: MPI_IN_PLACE INTEGER sum, 8 elements
  do i = 1, 8
    iv(i) = myrank * i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, iv, 8, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce in-place integer')
  call tally(AR, 8, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 8
    call check(int(iv(i), 8) == sum_ranks * i, 'allreduce in-place integer sum', i)
  end do

  ! 2: INTEGER*8 product and sum: np! and np*(np+1)/2
  k8(1) = myrank + 1
  k8(2) = myrank + 1
  call MPI_Allreduce(k8(1), k8(3), 1, MPI_INTEGER8, MPI_PROD, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce integer8')
  call tally(AR, 1, MPI_INTEGER8, MPI_COMM_WORLD)
  fact = 1
  do q = 2, np
    fact = fact * q
  end do
  call check(k8(3) == fact, 'allreduce integer8 prod', 1)

  ! 3: DOUBLE PRECISION min, 64 elements, on the dup'ed communicator
  do i = 1, 64
    dv(i) = 3d0 * myrank - i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, dv, 64, MPI_DOUBLE_PRECISION, MPI_MIN, dup, ierr)
  call ierr_check(ierr, 'allreduce double min')
  call tally(AR, 64, MPI_DOUBLE_PRECISION, dup)
  do i = 1, 64
    call check(dv(i) == dble(-i), 'allreduce double min', i)
  end do

  ! 4: MPI_2DOUBLE_PRECISION maxloc: value = rank, location = rank
  dpair(1, 1) = dble(myrank)
  dpair(2, 1) = dble(myrank)
  call MPI_Allreduce(MPI_IN_PLACE, dpair, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, &
      MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allreduce 2double maxloc')
  call tally(AR, 1, MPI_2DOUBLE_PRECISION, MPI_COMM_WORLD)
  call check(dpair(1, 1) == dble(np - 1) .and. dpair(2, 1) == dble(np - 1), &
      'allreduce 2double maxloc', 1)

  ! 5: REAL sum on the split communicator
  rv(1) = real(myrank)
  rv(2) = 1.0
  call MPI_Allreduce(rv(1:2), rv(3:4), 2, MPI_REAL, MPI_SUM, half, ierr)
  call ierr_check(ierr, 'allreduce real split')
  call tally(AR, 2, MPI_REAL, half)
  call check(rv(3) == real(half_sum) .and. rv(4) == real(hsize), 'allreduce real split', 1)

  ! 6..9: loop of 8-byte allreduces
  do it = 1, 4
    ds = myrank + 0.5d0 * it
    call MPI_Allreduce(MPI_IN_PLACE, ds, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call ierr_check(ierr, 'allreduce loop')
    call tally(AR, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    want = dble(sum_ranks) + 0.5d0 * it * np
    call check(ds == want, 'allreduce loop', it)
  end do

  ! ------------------------------ MPI_Bcast -----------------------------------
  ! 1..3: INTEGER from every root in turn (0, 1, 2 modulo np)
  do it = 0, 2
    root = mod(it, np)
    iv = -1
    if (myrank == root) then
      do i = 1, 8
        iv(i) = 1000 * (root + 1) + i
      end do
    end if
    call MPI_Bcast(iv, 8, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call ierr_check(ierr, 'bcast integer')
    call tally(BC, 8, MPI_INTEGER, MPI_COMM_WORLD)
    do i = 1, 8
      call check(iv(i) == 1000 * (root + 1) + i, 'bcast integer rotating root', i)
    end do
  end do

  ! 4: DOUBLE PRECISION from the last rank
  root = np - 1
  dv = -1d0
  if (myrank == root) then
    do i = 1, 64
      dv(i) = root + i / 8d0
    end do
  end if
  call MPI_Bcast(dv, 64, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'bcast double')
  call tally(BC, 64, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do i = 1, 64
    call check(dv(i) == root + i / 8d0, 'bcast double root last', i)
  end do

  ! 5: REAL on the dup'ed communicator from root 1
  root = mod(1, np)
  rv = 0.0
  if (myrank == root) rv = [1.0, 2.0, 3.0, 4.0, 5.0]
  call MPI_Bcast(rv, 5, MPI_REAL, root, dup, ierr)
  call ierr_check(ierr, 'bcast real')
  call tally(BC, 5, MPI_REAL, dup)
  do i = 1, 5
    call check(rv(i) == real(i), 'bcast real root 1', i)
  end do

  ! 6: INTEGER*8 on the split communicator from its last local rank
  root = hsize - 1
  k8 = 0
  if (hrank == root) k8 = [int(color, 8), 7_8, huge(1_8)]
  call MPI_Bcast(k8, 3, MPI_INTEGER8, root, half, ierr)
  call ierr_check(ierr, 'bcast integer8')
  call tally(BC, 3, MPI_INTEGER8, half)
  call check(k8(1) == color .and. k8(2) == 7 .and. k8(3) == huge(1_8), 'bcast integer8 split', 1)

  ! ---------------------------- MPI_Allgather ---------------------------------
  ! 1: MPI_IN_PLACE INTEGER, 2 per rank
  allocate(iag(2 * np))
  iag = -1
  iag(2 * myrank + 1) = myrank * 10
  iag(2 * myrank + 2) = myrank * 10 + 1
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iag, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgather in-place integer')
  call tally(AG, 2, MPI_INTEGER, MPI_COMM_WORLD)
  do q = 0, np - 1
    call check(iag(2 * q + 1) == q * 10 .and. iag(2 * q + 2) == q * 10 + 1, &
        'allgather in-place integer', q)
  end do
  deallocate(iag)

  ! 2: DOUBLE PRECISION, 4 per rank
  allocate(dag(4 * np))
  do i = 1, 4
    dv(i) = myrank * 100d0 + i
  end do
  call MPI_Allgather(dv, 4, MPI_DOUBLE_PRECISION, dag, 4, MPI_DOUBLE_PRECISION, &
      MPI_COMM_WORLD, ierr)
  call ierr_check(ierr, 'allgather double')
  call tally(AG, 4, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  do q = 0, np - 1
    do i = 1, 4
      call check(dag(4 * q + i) == q * 100d0 + i, 'allgather double', 4 * q + i)
    end do
  end do
  deallocate(dag)

  ! 3: REAL on the dup'ed communicator
  allocate(rag(np))
  rv(1) = real(myrank) * 0.5
  call MPI_Allgather(rv, 1, MPI_REAL, rag, 1, MPI_REAL, dup, ierr)
  call ierr_check(ierr, 'allgather real')
  call tally(AG, 1, MPI_REAL, dup)
  do q = 0, np - 1
    call check(rag(q + 1) == real(q) * 0.5, 'allgather real', q)
  end do
  deallocate(rag)

  ! 4: INTEGER on the split communicator (world ranks color, color+2, ...)
  allocate(iag(hsize))
  iv(1) = myrank
  call MPI_Allgather(iv, 1, MPI_INTEGER, iag, 1, MPI_INTEGER, half, ierr)
  call ierr_check(ierr, 'allgather split')
  call tally(AG, 1, MPI_INTEGER, half)
  do q = 0, hsize - 1
    call check(iag(q + 1) == color + 2 * q, 'allgather integer split', q)
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
  call MPI_Reduce(ncalls, calls_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(nbytes, bytes_tot, NCOLL, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(nfail, nfail_tot, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (myrank == 0) then
    write(*, '(A,I0)') 'GCOLL_EXPECT np=', np
    do i = 1, NCOLL
      write(*, '(A,A,A,I0,A,I0,A,I0)') 'GCOLL_EXPECT ', trim(names(i)), ' calls_per_rank=', &
          ncalls(i), ' calls=', calls_tot(i), ' bytes=', bytes_tot(i)
    end do
    if (nfail_tot == 0) then
      write(*, '(A)') 'preload_usempi: PASS'
    else
      write(*, '(A,I0)') 'preload_usempi: FAIL nfail=', nfail_tot
    end if
    flush(6)
    nfail = nfail_tot
  end if
  call MPI_Comm_free(half, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Finalize(ierr)
  if (nfail /= 0) stop 1
end program preload_usempi
