/* For fortran_loop.F90: turns the tracer on and off for the Fortran bindings' calls inside one process,
 * by pointing libmpi_mpifh's PMPI_Allreduce, PMPI_Send and PMPI_Recv slots at the tracer's MPI_*
 * (what the tracer itself does at load) or back at libmpi's PMPI_* (got_swap.c), and reads the thread's
 * CPU time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int lst_got_swap(const char* module, const char* symbol, void* new_target, void** old_target);

/* 0 when every slot now leads to the tracer (on != 0) or to libmpi (on == 0); -1 otherwise. */
int lst_fortran_trace(int on) {
  static const char* const names[] = {"Allreduce", "Send", "Recv"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    char mpi[64], pmpi[64];
    snprintf(mpi, sizeof mpi, "MPI_%s", names[i]);
    snprintf(pmpi, sizeof pmpi, "PMPI_%s", names[i]);
    void* traced = dlsym(RTLD_DEFAULT, mpi); /* the preloaded tracer's wrapper */
    void* real = dlsym(RTLD_DEFAULT, pmpi);  /* libmpi's: the tracer exports no PMPI_* */
    if (!traced || !real || traced == real) return -1;
    if (lst_got_swap("libmpi_mpifh", pmpi, on ? traced : real, NULL) <= 0) return -1;
  }
  return 0;
}

long long lst_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
