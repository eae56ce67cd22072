! MPI from Fortran, traced with no change to the program: collectives, nonblocking calls, point-to-point
! and communicator creation through Open MPI's Fortran bindings. Built twice: with -DF08 through the
! `use mpi_f08` module, without it through mpif.h (the interface of most existing Fortran code).
! Every call writes the record it should leave to EXPECTED_DIR/rank-N.txt: its name, communicator
! (W world, S split by rank parity, D dup of world), count, datatype, root or peer, reduction op and
! line, for trace_check's `named` mode.
!   mpi_fortran EXPECTED_DIR STEPS
module expected
  implicit none
  integer, parameter :: out = 10
contains
  subroutine expect(name, comm, count, dtype, root, redop, line)
    character(len=*), intent(in) :: name, comm, dtype, redop
    integer, intent(in) :: count, root, line
    write (out, '(a, 1x, a, 1x, i0, 1x, a, 1x, i0, 1x, a, 1x, i0)') name, comm, count, dtype, root, redop, line
  end subroutine
end module

program mpi_fortran
  use expected
#ifdef F08
  use mpi_f08
#define COMM type(MPI_Comm)
#define REQUEST type(MPI_Request)
#define ERR
#else
  implicit none
  include 'mpif.h'
#define COMM integer
#define REQUEST integer
#define ERR , ierr
#endif
  integer :: ierr, rank, nranks, steps, step, left, right, i
  COMM :: split, dup
  REQUEST :: reqs(2)
  double precision :: x(8), y(8)
  integer :: ibuf(16), rbuf(16), counts(64)
  character(len=256) :: dir, path

  call get_command_argument(1, dir)
  call get_command_argument(2, path)
  read (path, *) steps
  ierr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank ERR)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks ERR)
  write (path, '(a, "/rank-", i0, ".txt")') trim(dir), rank
  open (unit=out, file=trim(path), status='replace', action='write')
  write (out, '(a, 1x, i0)') 'split_color', mod(rank, 2)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, split ERR)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup ERR)
  x = rank
  ibuf = rank
  counts = 1
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  do step = 1, steps
    i = 1 + mod(step, 8)
    call MPI_Allreduce(x, y, i, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD ERR); call expect('MPI_Allreduce', 'W', i, 'float64', -1, 'sum', __LINE__)
    call MPI_Bcast(ibuf, 16, MPI_INTEGER, 0, split ERR); call expect('MPI_Bcast', 'S', 16, 'int32', 0, '-', __LINE__)
    call MPI_Reduce(ibuf, rbuf, 4, MPI_INTEGER, MPI_MAX, 1, dup ERR); call expect('MPI_Reduce', 'D', 4, 'int32', 1, 'max', __LINE__)
    call MPI_Allgather(x, 1, MPI_REAL8, y, 1, MPI_REAL8, split ERR); call expect('MPI_Allgather', 'S', 1, 'float64', -1, '-', __LINE__)
    call MPI_Iallreduce(ibuf, rbuf, 2, MPI_INTEGER, MPI_MIN, dup, reqs(1) ERR); call expect('MPI_Iallreduce', 'D', 2, 'int32', -1, 'min', __LINE__)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE ERR)
    call MPI_Irecv(rbuf, 3, MPI_INTEGER, left, step, MPI_COMM_WORLD, reqs(1) ERR); call expect('MPI_Irecv', 'W', 3, 'int32', left, '-', __LINE__)
    call MPI_Isend(ibuf, 3, MPI_INTEGER, right, step, MPI_COMM_WORLD, reqs(2) ERR); call expect('MPI_Isend', 'W', 3, 'int32', right, '-', __LINE__)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE ERR)
    call MPI_Sendrecv(x, 2, MPI_DOUBLE_PRECISION, right, 9, y, 2, MPI_DOUBLE_PRECISION, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE ERR); call expect('MPI_Send', 'W', 2, 'float64', right, '-', __LINE__); call expect('MPI_Recv', 'W', 2, 'float64', left, '-', __LINE__)
    call MPI_Gatherv(ibuf, 1, MPI_INTEGER, rbuf, counts, counts, MPI_INTEGER, 0, MPI_COMM_WORLD ERR); call expect('MPI_Gatherv', 'W', 1, 'int32', 0, '-', __LINE__)
    call MPI_Barrier(dup ERR); call expect('MPI_Barrier', 'D', 0, '-', -1, '-', __LINE__)
  end do
  call MPI_Comm_free(dup ERR)
  call MPI_Comm_free(split ERR)
  close (out)
  call MPI_Finalize(ierr)
end program
