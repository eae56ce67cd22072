! The bug this project started from, in Fortran: the gradient allreduce runs only when the rank's own
! gradients are finite. Rank 2's overflow at step 4 makes it skip allreduce #8; every later call pairs
! with the wrong one (the metric's has the same size) and the others end blocked in their last call.
program fortran_overflow_skip
  use mpi_f08
  implicit none
  integer :: rank, nranks, step
  real :: grad(64), metric(64), total(64), scale
  logical :: finite

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  if (nranks /= 4) call MPI_Abort(MPI_COMM_WORLD, 2)
  metric = real(rank)
  scale = 2.0
  do step = 0, 9
    grad = real(rank + step)
    if (rank == 2 .and. step == 4) grad(7) = huge(grad(7)) * scale
    finite = all(abs(grad) <= huge(grad))
    if (finite) then
      call MPI_Allreduce(grad, total, 64, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
    end if
    call MPI_Allreduce(metric, total, 64, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  end do
  call MPI_Finalize()
end program
