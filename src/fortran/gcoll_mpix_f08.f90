! gcoll_mpix_f08: MPICH's stream API for `use mpi_f08` programs, under the MPIs that lack
! it (Open MPI, MPICH 4.0): the Fortran side of include/gcoll/mpix_stream.h. MPICH 4.1 and
! later have these calls in their own mpi_f08 module (TYPE(MPIX_Stream) in mpi_f08_types);
! the names, argument lists and types here are MPICH's, so that a program written for it
! needs one more line, `use gcoll_mpix_f08` after `use mpi_f08`, and nothing else:
!
!   use mpi_f08
!   use gcoll_mpix_f08
!   type(MPI_Info) :: info;  type(MPIX_Stream) :: stream;  type(MPI_Comm) :: scomm
!   call MPI_Info_create(info)
!   call MPI_Info_set(info, 'type', 'cudaStream_t')
!   call MPIX_Info_set_hex(info, 'value', cuda_stream, int(c_sizeof(cuda_stream)))
!   call MPIX_Stream_create(info, stream);  call MPI_Info_free(info)
!   call MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, scomm)
!   call MPIX_Allreduce_enqueue(MPI_IN_PLACE, dev_buf, n, MPI_REAL, MPI_SUM, scomm)
!   ...                                 ! cudaStreamSynchronize(cuda_stream) before reading
!   call MPI_Comm_free(scomm);  call MPIX_Stream_free(stream)
!
! MPICH has the enqueue form of MPI_Allreduce only; the other five (Bcast, Allgather,
! Reduce_scatter_block, Reduce, Alltoall) are gcoll's, with the same conventions. Each
! enqueue name is generic: a default INTEGER count takes the int C call, an
! INTEGER(MPI_COUNT_KIND) one its _c form (MPI-4's large counts, as mpi_f08 does them).
!
! Buffers are TYPE(*), DIMENSION(..) (any type, kind and rank, scalars too, as in MPICH's
! mpi_f08) and must be contiguous: an enqueued call reads and writes them after it has
! returned, when the stream gets there, so a temporary copy cannot stand in for a section
! (MPI_ERR_BUFFER through the communicator's error handler). Device memory reaches Fortran
! as a C pointer (cudaMalloc): give it shape with c_f_pointer and pass the array.
! MPIX_Info_set_hex takes the cudaStream_t variable itself (TYPE(c_ptr) or
! INTEGER(c_intptr_t)) and its size, c_sizeof(stream), as in C.
!
! The procedures here turn the Fortran arguments into C ones (a buffer's address,
! MPI_IN_PLACE and MPI_BOTTOM recognised by address, handles as their INTEGER MPI_VAL) and
! call src/pmpi/stream_fortran.cc in libgcoll.so, which converts the handles with the
! MPI's f2c functions and makes the C call. Everything about the calls themselves (checks,
! errors, the stream's order) is the C API's. Link: -lgcoll_f08 -lgcoll.
module gcoll_mpix_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_char, c_null_char, c_loc, c_associated
  use :: mpi_f08, only: MPI_Comm, MPI_Datatype, MPI_Op, MPI_Info, MPI_COUNT_KIND, MPI_IN_PLACE, MPI_BOTTOM
  implicit none
  private

  ! MPICH's: a handle whose only member is an INTEGER, like every mpi_f08 handle. Here it
  ! indexes the table of streams in stream_fortran.cc (0: MPIX_STREAM_NULL).
  type, bind(C), public :: MPIX_Stream
    integer :: MPI_VAL
  end type MPIX_Stream
  type(MPIX_Stream), parameter, public :: MPIX_STREAM_NULL = MPIX_Stream(0)

  public :: MPIX_Info_set_hex, MPIX_Stream_create, MPIX_Stream_free, MPIX_Stream_comm_create, MPIX_Comm_get_stream
  public :: MPIX_Allreduce_enqueue, MPIX_Bcast_enqueue, MPIX_Allgather_enqueue, MPIX_Reduce_scatter_block_enqueue, &
            MPIX_Reduce_enqueue, MPIX_Alltoall_enqueue
  public :: operator(==), operator(/=)

  ! As mpi_f08 compares its handles: with each other and with an INTEGER handle.
  interface operator(==)
    module procedure stream_eq, stream_eq_f, f_eq_stream
  end interface
  interface operator(/=)
    module procedure stream_ne, stream_ne_f, f_ne_stream
  end interface

  interface MPIX_Allreduce_enqueue
    module procedure MPIX_Allreduce_enqueue_f08ts, MPIX_Allreduce_enqueue_c_f08ts
  end interface
  interface MPIX_Bcast_enqueue
    module procedure MPIX_Bcast_enqueue_f08ts, MPIX_Bcast_enqueue_c_f08ts
  end interface
  interface MPIX_Allgather_enqueue
    module procedure MPIX_Allgather_enqueue_f08ts, MPIX_Allgather_enqueue_c_f08ts
  end interface
  interface MPIX_Reduce_scatter_block_enqueue
    module procedure MPIX_Reduce_scatter_block_enqueue_f08ts, MPIX_Reduce_scatter_block_enqueue_c_f08ts
  end interface
  interface MPIX_Reduce_enqueue
    module procedure MPIX_Reduce_enqueue_f08ts, MPIX_Reduce_enqueue_c_f08ts
  end interface
  interface MPIX_Alltoall_enqueue
    module procedure MPIX_Alltoall_enqueue_f08ts, MPIX_Alltoall_enqueue_c_f08ts
  end interface

  ! src/pmpi/stream_fortran.cc. INTEGER arguments are MPI_Fint (the MPI's C type for a
  ! Fortran INTEGER, so default INTEGER here); counts MPI_Count.
  interface
    function c_in_place() result(p) bind(C, name='gcoll_mpix_f_in_place')
      import :: c_ptr
      type(c_ptr) :: p
    end function
    function c_bottom() result(p) bind(C, name='gcoll_mpix_f_bottom')
      import :: c_ptr
      type(c_ptr) :: p
    end function
    integer(c_int) function c_noncontiguous(comm, func) bind(C, name='gcoll_mpix_f_noncontiguous')
      import :: c_int, c_char
      integer, value :: comm
      character(kind=c_char), dimension(*), intent(in) :: func
    end function
    ! Bound to C directly, the one call that is: gfortran (12) hands a Fortran procedure's
    ! TYPE(*) dummy the value of a TYPE(c_ptr) actual instead of its address, and the
    ! stream is commonly a TYPE(c_ptr) here. A bind(C) procedure gets descriptors whose
    ! first members the standard fixes (base_addr, elem_len): the C side reads only those.
    subroutine MPIX_Info_set_hex(info, key, value, value_size, ierror) bind(C, name='gcoll_mpix_f_info_set_hex')
      import :: MPI_Info
      type(MPI_Info), intent(in) :: info
      character(len=*), intent(in) :: key
      type(*), dimension(..), intent(in) :: value
      integer, intent(in) :: value_size
      integer, optional, intent(out) :: ierror
    end subroutine
    integer(c_int) function c_stream_create(info, stream) bind(C, name='gcoll_mpix_f_stream_create')
      import :: c_int
      integer, value :: info
      integer, intent(out) :: stream
    end function
    integer(c_int) function c_stream_free(stream) bind(C, name='gcoll_mpix_f_stream_free')
      import :: c_int
      integer, intent(inout) :: stream
    end function
    integer(c_int) function c_stream_comm_create(comm, stream, newcomm) bind(C, name='gcoll_mpix_f_stream_comm_create')
      import :: c_int
      integer, value :: comm, stream
      integer, intent(out) :: newcomm
    end function
    integer(c_int) function c_comm_get_stream(comm, idx, stream) bind(C, name='gcoll_mpix_f_comm_get_stream')
      import :: c_int
      integer, value :: comm
      integer(c_int), value :: idx
      integer, intent(out) :: stream
    end function
    integer(c_int) function c_allreduce(sendbuf, recvbuf, count, datatype, op, comm, large) &
        bind(C, name='gcoll_mpix_f_allreduce_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: sendbuf, recvbuf
      integer(MPI_COUNT_KIND), value :: count
      integer, value :: datatype, op, comm
      integer(c_int), value :: large
    end function
    integer(c_int) function c_bcast(buffer, count, datatype, root, comm, large) &
        bind(C, name='gcoll_mpix_f_bcast_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: buffer
      integer(MPI_COUNT_KIND), value :: count
      integer, value :: datatype
      integer(c_int), value :: root
      integer, value :: comm
      integer(c_int), value :: large
    end function
    integer(c_int) function c_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, large) &
        bind(C, name='gcoll_mpix_f_allgather_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: sendbuf
      integer(MPI_COUNT_KIND), value :: sendcount
      integer, value :: sendtype
      type(c_ptr), value :: recvbuf
      integer(MPI_COUNT_KIND), value :: recvcount
      integer, value :: recvtype, comm
      integer(c_int), value :: large
    end function
    integer(c_int) function c_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, large) &
        bind(C, name='gcoll_mpix_f_reduce_scatter_block_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: sendbuf, recvbuf
      integer(MPI_COUNT_KIND), value :: recvcount
      integer, value :: datatype, op, comm
      integer(c_int), value :: large
    end function
    integer(c_int) function c_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, large) &
        bind(C, name='gcoll_mpix_f_reduce_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: sendbuf, recvbuf
      integer(MPI_COUNT_KIND), value :: count
      integer, value :: datatype, op
      integer(c_int), value :: root
      integer, value :: comm
      integer(c_int), value :: large
    end function
    integer(c_int) function c_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, large) &
        bind(C, name='gcoll_mpix_f_alltoall_enqueue')
      import :: c_int, c_ptr, MPI_COUNT_KIND
      type(c_ptr), value :: sendbuf
      integer(MPI_COUNT_KIND), value :: sendcount
      integer, value :: sendtype
      type(c_ptr), value :: recvbuf
      integer(MPI_COUNT_KIND), value :: recvcount
      integer, value :: recvtype, comm
      integer(c_int), value :: large
    end function
  end interface

contains

  ! ---- helpers ---------------------------------------------------------------------------

  subroutine set(ierror, rc)
    integer, optional, intent(out) :: ierror
    integer(c_int), intent(in) :: rc
    if (present(ierror)) ierror = int(rc)
  end subroutine set

  ! The address of whatever was passed (TARGET: the address of the actual argument itself,
  ! never of a copy, since an assumed-rank dummy takes the actual as it is).
  function address_of(x) result(p)
    type(*), dimension(..), intent(in), target :: x
    type(c_ptr) :: p
    p = c_loc(x)
  end function address_of

  ! A buffer's address for C: the mpi_f08 module's MPI_IN_PLACE and MPI_BOTTOM (variables
  ! the MPI knows by address) become C's; `ok` is false for a non-contiguous one.
  function c_buffer(x, ok) result(p)
    type(*), dimension(..), intent(in), target :: x
    logical, intent(out) :: ok
    type(c_ptr) :: p
    ok = .true.
    p = c_loc(x)
    if (c_associated(p, address_of(MPI_IN_PLACE))) then
      p = c_in_place()
    else if (c_associated(p, address_of(MPI_BOTTOM))) then
      p = c_bottom()
    else
      ok = is_contiguous(x)
    end if
  end function c_buffer

  ! ---- handles ---------------------------------------------------------------------------

  elemental logical function stream_eq(a, b)
    type(MPIX_Stream), intent(in) :: a, b
    stream_eq = a%MPI_VAL == b%MPI_VAL
  end function
  elemental logical function stream_eq_f(a, f)
    type(MPIX_Stream), intent(in) :: a
    integer, intent(in) :: f
    stream_eq_f = a%MPI_VAL == f
  end function
  elemental logical function f_eq_stream(f, a)
    integer, intent(in) :: f
    type(MPIX_Stream), intent(in) :: a
    f_eq_stream = a%MPI_VAL == f
  end function
  elemental logical function stream_ne(a, b)
    type(MPIX_Stream), intent(in) :: a, b
    stream_ne = a%MPI_VAL /= b%MPI_VAL
  end function
  elemental logical function stream_ne_f(a, f)
    type(MPIX_Stream), intent(in) :: a
    integer, intent(in) :: f
    stream_ne_f = a%MPI_VAL /= f
  end function
  elemental logical function f_ne_stream(f, a)
    integer, intent(in) :: f
    type(MPIX_Stream), intent(in) :: a
    f_ne_stream = a%MPI_VAL /= f
  end function

  ! ---- streams and stream communicators --------------------------------------------------

  subroutine MPIX_Stream_create(info, stream, ierror)
    type(MPI_Info), intent(in) :: info
    type(MPIX_Stream), intent(out) :: stream
    integer, optional, intent(out) :: ierror
    call set(ierror, c_stream_create(info%MPI_VAL, stream%MPI_VAL))
  end subroutine MPIX_Stream_create

  subroutine MPIX_Stream_free(stream, ierror)
    type(MPIX_Stream), intent(inout) :: stream
    integer, optional, intent(out) :: ierror
    call set(ierror, c_stream_free(stream%MPI_VAL))
  end subroutine MPIX_Stream_free

  subroutine MPIX_Stream_comm_create(comm, stream, newcomm, ierror)
    type(MPI_Comm), intent(in) :: comm
    type(MPIX_Stream), intent(in) :: stream
    type(MPI_Comm), intent(out) :: newcomm
    integer, optional, intent(out) :: ierror
    call set(ierror, c_stream_comm_create(comm%MPI_VAL, stream%MPI_VAL, newcomm%MPI_VAL))
  end subroutine MPIX_Stream_comm_create

  ! idx counts from 0, as in C (MPICH's mpi_f08 passes it unchanged).
  subroutine MPIX_Comm_get_stream(comm, idx, stream, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: idx
    type(MPIX_Stream), intent(out) :: stream
    integer, optional, intent(out) :: ierror
    call set(ierror, c_comm_get_stream(comm%MPI_VAL, int(idx, c_int), stream%MPI_VAL))
  end subroutine MPIX_Comm_get_stream

  ! ---- the enqueue forms -----------------------------------------------------------------
  ! Each pair shares one body (`*_any`, the count as MPI_Count); `large` picks the C call.

  subroutine allreduce_any(sendbuf, recvbuf, count, datatype, op, comm, large, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: s, r
    logical :: sok, rok
    s = c_buffer(sendbuf, sok)
    r = c_buffer(recvbuf, rok)
    if (.not. (sok .and. rok)) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Allreduce_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_allreduce(s, r, count, datatype%MPI_VAL, op%MPI_VAL, comm%MPI_VAL, large))
  end subroutine allreduce_any

  subroutine MPIX_Allreduce_enqueue_f08ts(sendbuf, recvbuf, count, datatype, op, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer, intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call allreduce_any(sendbuf, recvbuf, int(count, MPI_COUNT_KIND), datatype, op, comm, 0_c_int, ierror)
  end subroutine MPIX_Allreduce_enqueue_f08ts

  subroutine MPIX_Allreduce_enqueue_c_f08ts(sendbuf, recvbuf, count, datatype, op, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call allreduce_any(sendbuf, recvbuf, count, datatype, op, comm, 1_c_int, ierror)
  end subroutine MPIX_Allreduce_enqueue_c_f08ts

  subroutine bcast_any(buffer, count, datatype, root, comm, large, ierror)
    type(*), dimension(..), target, asynchronous :: buffer
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    integer, intent(in) :: root
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: b
    logical :: bok
    b = c_buffer(buffer, bok)
    if (.not. bok) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Bcast_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_bcast(b, count, datatype%MPI_VAL, int(root, c_int), comm%MPI_VAL, large))
  end subroutine bcast_any

  subroutine MPIX_Bcast_enqueue_f08ts(buffer, count, datatype, root, comm, ierror)
    type(*), dimension(..), target, asynchronous :: buffer
    integer, intent(in) :: count, root
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call bcast_any(buffer, int(count, MPI_COUNT_KIND), datatype, root, comm, 0_c_int, ierror)
  end subroutine MPIX_Bcast_enqueue_f08ts

  subroutine MPIX_Bcast_enqueue_c_f08ts(buffer, count, datatype, root, comm, ierror)
    type(*), dimension(..), target, asynchronous :: buffer
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    integer, intent(in) :: root
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call bcast_any(buffer, count, datatype, root, comm, 1_c_int, ierror)
  end subroutine MPIX_Bcast_enqueue_c_f08ts

  subroutine allgather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, large, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(MPI_COUNT_KIND), intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: s, r
    logical :: sok, rok
    s = c_buffer(sendbuf, sok)
    r = c_buffer(recvbuf, rok)
    if (.not. (sok .and. rok)) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Allgather_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_allgather(s, sendcount, sendtype%MPI_VAL, r, recvcount, recvtype%MPI_VAL, comm%MPI_VAL, large))
  end subroutine allgather_any

  subroutine MPIX_Allgather_enqueue_f08ts(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer, intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call allgather_any(sendbuf, int(sendcount, MPI_COUNT_KIND), sendtype, recvbuf, int(recvcount, MPI_COUNT_KIND), &
                       recvtype, comm, 0_c_int, ierror)
  end subroutine MPIX_Allgather_enqueue_f08ts

  subroutine MPIX_Allgather_enqueue_c_f08ts(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(MPI_COUNT_KIND), intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call allgather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, 1_c_int, ierror)
  end subroutine MPIX_Allgather_enqueue_c_f08ts

  subroutine reduce_scatter_block_any(sendbuf, recvbuf, recvcount, datatype, op, comm, large, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: recvcount
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: s, r
    logical :: sok, rok
    s = c_buffer(sendbuf, sok)
    r = c_buffer(recvbuf, rok)
    if (.not. (sok .and. rok)) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Reduce_scatter_block_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_reduce_scatter_block(s, r, recvcount, datatype%MPI_VAL, op%MPI_VAL, comm%MPI_VAL, large))
  end subroutine reduce_scatter_block_any

  subroutine MPIX_Reduce_scatter_block_enqueue_f08ts(sendbuf, recvbuf, recvcount, datatype, op, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer, intent(in) :: recvcount
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call reduce_scatter_block_any(sendbuf, recvbuf, int(recvcount, MPI_COUNT_KIND), datatype, op, comm, 0_c_int, &
                                  ierror)
  end subroutine MPIX_Reduce_scatter_block_enqueue_f08ts

  subroutine MPIX_Reduce_scatter_block_enqueue_c_f08ts(sendbuf, recvbuf, recvcount, datatype, op, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: recvcount
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call reduce_scatter_block_any(sendbuf, recvbuf, recvcount, datatype, op, comm, 1_c_int, ierror)
  end subroutine MPIX_Reduce_scatter_block_enqueue_c_f08ts

  subroutine reduce_any(sendbuf, recvbuf, count, datatype, op, root, comm, large, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    integer, intent(in) :: root
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: s, r
    logical :: sok, rok
    s = c_buffer(sendbuf, sok)
    r = c_buffer(recvbuf, rok)
    if (.not. (sok .and. rok)) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Reduce_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_reduce(s, r, count, datatype%MPI_VAL, op%MPI_VAL, int(root, c_int), comm%MPI_VAL, large))
  end subroutine reduce_any

  subroutine MPIX_Reduce_enqueue_f08ts(sendbuf, recvbuf, count, datatype, op, root, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer, intent(in) :: count, root
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call reduce_any(sendbuf, recvbuf, int(count, MPI_COUNT_KIND), datatype, op, root, comm, 0_c_int, ierror)
  end subroutine MPIX_Reduce_enqueue_f08ts

  subroutine MPIX_Reduce_enqueue_c_f08ts(sendbuf, recvbuf, count, datatype, op, root, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), target, asynchronous :: recvbuf
    integer(MPI_COUNT_KIND), intent(in) :: count
    type(MPI_Datatype), intent(in) :: datatype
    type(MPI_Op), intent(in) :: op
    integer, intent(in) :: root
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call reduce_any(sendbuf, recvbuf, count, datatype, op, root, comm, 1_c_int, ierror)
  end subroutine MPIX_Reduce_enqueue_c_f08ts

  subroutine alltoall_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, large, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(MPI_COUNT_KIND), intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: large
    integer, optional, intent(out) :: ierror
    type(c_ptr) :: s, r
    logical :: sok, rok
    s = c_buffer(sendbuf, sok)
    r = c_buffer(recvbuf, rok)
    if (.not. (sok .and. rok)) then
      call set(ierror, c_noncontiguous(comm%MPI_VAL, 'MPIX_Alltoall_enqueue' // c_null_char))
      return
    end if
    call set(ierror, c_alltoall(s, sendcount, sendtype%MPI_VAL, r, recvcount, recvtype%MPI_VAL, comm%MPI_VAL, large))
  end subroutine alltoall_any

  subroutine MPIX_Alltoall_enqueue_f08ts(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer, intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call alltoall_any(sendbuf, int(sendcount, MPI_COUNT_KIND), sendtype, recvbuf, int(recvcount, MPI_COUNT_KIND), &
                      recvtype, comm, 0_c_int, ierror)
  end subroutine MPIX_Alltoall_enqueue_f08ts

  subroutine MPIX_Alltoall_enqueue_c_f08ts(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(MPI_COUNT_KIND), intent(in) :: sendcount, recvcount
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(*), dimension(..), target, asynchronous :: recvbuf
    type(MPI_Comm), intent(in) :: comm
    integer, optional, intent(out) :: ierror
    call alltoall_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, 1_c_int, ierror)
  end subroutine MPIX_Alltoall_enqueue_c_f08ts

end module gcoll_mpix_f08
