// A GOT swap, for python_mpi4py_same_process.py: repoint one loaded object's calls to an imported
// function (its JUMP_SLOT relocations in DT_JMPREL, or its GLOB_DAT ones in DT_RELA where it was built
// with -fno-plt) at another function, here and now, in this process.
//
// Why: what the tracer adds to mpi4py's own methods (comm.Allreduce, comm.Send, comm.Recv) is smaller
// than the difference in speed between two Python processes on a small virtual machine, so it is
// measured inside one process, alternating loops that are traced and loops that are not. ctypes can
// call PMPI_Allreduce instead of MPI_Allreduce (python_same_process.py); mpi4py's extension module
// cannot be told to, but it calls MPI_Allreduce through its global offset table, so writing
// PMPI_Allreduce's address into that slot makes the same comm.Allreduce untraced, and writing the
// tracer's MPI_Allreduce back makes it traced again, with no other change to the path the call takes.
//
// How: dl_iterate_phdr finds the object whose name contains a given string; tracer/src/got_slots.h
// finds its slots for the symbol and stores into them (the tracer redirects the MPI Fortran bindings
// with the same code).
//
//   int lst_got_swap(const char* module, const char* symbol, void* new_target, void** old_target);
//
// Returns how many slots now hold new_target (> 0; *old_target is the first one's previous content,
// which is the PLT's lazy-binding stub until the function was first called through it), 0 when the
// object has no such relocation, -1 when no loaded object's name contains `module`, -2 when mprotect
// failed (errno says why). Not thread-safe against a concurrent dlopen/dlclose of that object or
// another lst_got_swap on the same page; a call through the slot while it is swapped is safe (the
// store is one aligned pointer).
#define _GNU_SOURCE
#include <string.h>

#include "got_slots.h"

__attribute__((visibility("default"))) int lst_got_swap(const char* module, const char* symbol,
                                                        void* new_target, void** old_target);

struct swap {
  const char* module;
  const char* symbol;
  void* new_target;
  void** old_target;
  const struct lst_got* got;
  int found_object;
  int result;
};

static int swap_slot(void** slot, const char* symbol, void* data) {
  struct swap* s = data;
  if (strcmp(symbol, s->symbol) != 0) return 0;
  void* old = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
  int rc = lst_got_store(s->got, slot, s->new_target);
  if (rc != 0) {
    s->result = rc;
    return rc;
  }
  if (s->result == 0 && s->old_target != NULL) *s->old_target = old;
  ++s->result;
  return 0;
}

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct swap* s = data;
  if (info->dlpi_name == NULL || strstr(info->dlpi_name, s->module) == NULL) return 0;
  s->found_object = 1;
  struct lst_got got;
  if (lst_got_open(info, &got) != 0) return 1;
  s->got = &got;
  lst_got_each(&got, swap_slot, s);
  return 1;  // the first object that matches, only
}

int lst_got_swap(const char* module, const char* symbol, void* new_target, void** old_target) {
  struct swap s = {module, symbol, new_target, old_target, NULL, 0, 0};
  dl_iterate_phdr(visit, &s);
  return s.found_object ? s.result : -1;
}
