! What the tracer adds to a Fortran program's MPI calls (mpif.h, through libmpi_mpifh), measured in one
! process: alternating rounds of the same loop with the bindings' slots pointed at the tracer and back
! at libmpi (fortran_slots.c). Thread CPU time; per path, the fastest traced round minus the fastest
! untraced one, per call, then the median of the rounds' own differences; then how many calls each path
! sent to the tracer, for fortran_time.sh to compare with the trace.
!   fortran_loop N ROUNDS      (run with liblockstep_trace.so preloaded)
program fortran_loop
  use, intrinsic :: iso_c_binding
  implicit none
  include 'mpif.h'
  interface
    integer(c_int) function lst_fortran_trace(on) bind(C)
      import :: c_int
      integer(c_int), value :: on
    end function
    integer(c_long_long) function lst_cpu_ns() bind(C)
      import :: c_long_long
    end function
  end interface
  integer :: ierr, n, rounds, r, i, x, y, path
  integer :: status(MPI_STATUS_SIZE)
  integer(c_long_long) :: t0, best(0:1, 2), diff(200, 2)
  integer(c_long_long) :: traced_calls(2)
  character(len=32) :: arg

  call get_command_argument(1, arg)
  read (arg, *) n
  call get_command_argument(2, arg)
  read (arg, *) rounds
  rounds = min(rounds, 200)
  call MPI_Init(ierr)
  x = 1
  best = huge(best)
  traced_calls = 0
  do r = 1, rounds
    do path = 1, 2
      do i = 0, 1  ! 0 untraced, 1 traced
        if (lst_fortran_trace(int(i, c_int)) /= 0) stop 'lst_fortran_trace failed: is the tracer preloaded?'
        t0 = lst_cpu_ns()
        call run(path, n)
        t0 = lst_cpu_ns() - t0
        best(i, path) = min(best(i, path), t0)
        if (i == 0) diff(r, path) = -t0
        if (i == 1) diff(r, path) = diff(r, path) + t0
        if (i == 1) traced_calls(path) = traced_calls(path) + n
      end do
    end do
  end do
  if (lst_fortran_trace(1_c_int) /= 0) stop 'lst_fortran_trace failed'
  do path = 1, 2
    write (*, '(a, 1x, f0.1, 1x, f0.1, 1x, i0)') trim(merge('allreduce', 'send_recv', path == 1)), &
      real(best(1, path) - best(0, path)) / real(n * path), median(diff(1:rounds, path)) / real(n * path), &
      traced_calls(path) * path
  end do
  call MPI_Finalize(ierr)
contains
  subroutine run(path, n)
    integer, intent(in) :: path, n
    integer :: k
    do k = 1, n
      if (path == 1) then
        call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_SELF, ierr)
      else
        call MPI_Send(x, 1, MPI_INTEGER, 0, 7, MPI_COMM_SELF, ierr)
        call MPI_Recv(y, 1, MPI_INTEGER, 0, 7, MPI_COMM_SELF, status, ierr)
      end if
    end do
  end subroutine
  real function median(v)
    integer(c_long_long), intent(in) :: v(:)
    integer(c_long_long) :: s(size(v)), t
    integer :: a, b
    s = v
    do a = 2, size(s)
      t = s(a)
      b = a - 1
      do while (b >= 1)
        if (s(b) <= t) exit
        s(b + 1) = s(b)
        b = b - 1
      end do
      s(b + 1) = t
    end do
    median = real(s((size(s) + 1) / 2))
  end function
end program
