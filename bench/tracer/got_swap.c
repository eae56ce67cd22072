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
// How: dl_iterate_phdr finds the object whose name contains a given string; its PT_DYNAMIC gives the
// relocation tables and the dynamic symbol and string tables (glibc on x86-64 has already added the
// load address to these entries, on some other targets it has not: an entry below the load address is
// taken as unrelocated); every JUMP_SLOT or GLOB_DAT relocation against the symbol names a slot. A slot
// in the part of PT_GNU_RELRO that the loader made read-only (full RELRO, or GLOB_DAT slots under any
// RELRO) is made writable for the store and read-only again after it, as the loader left it.
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
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define LST_JUMP_SLOT R_X86_64_JUMP_SLOT
#define LST_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define LST_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define LST_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "got_swap.c knows the relocation types of x86-64 and AArch64 only"
#endif

#if __ELF_NATIVE_CLASS == 64
#define LST_R_SYM ELF64_R_SYM
#define LST_R_TYPE ELF64_R_TYPE
#else
#define LST_R_SYM ELF32_R_SYM
#define LST_R_TYPE ELF32_R_TYPE
#endif

__attribute__((visibility("default"))) int lst_got_swap(const char* module, const char* symbol,
                                                        void* new_target, void** old_target);

struct swap {
  const char* module;
  const char* symbol;
  void* new_target;
  void** old_target;
  int found_object;
  int result;
};

// An address from the dynamic section: relocated by the loader already, or an offset from `base`.
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) v) { return v < base ? base + v : v; }

// Stores `target` in `slot`, making the page writable first when it lies in [ro_start, ro_end), the
// range the loader mprotected read-only, and read-only again afterwards. Returns 0 or -2.
static int store(void** slot, void* target, uintptr_t ro_start, uintptr_t ro_end) {
  uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t page = (uintptr_t)slot & ~(page_size - 1);
  int read_only = page >= ro_start && page < ro_end;
  if (read_only && mprotect((void*)page, page_size, PROT_READ | PROT_WRITE) != 0) return -2;
  __atomic_store_n(slot, target, __ATOMIC_SEQ_CST);
  if (read_only && mprotect((void*)page, page_size, PROT_READ) != 0) return -2;
  return 0;
}

// Every JUMP_SLOT or GLOB_DAT relocation against `s->symbol` in one table (`size` bytes of entries
// `entsize` bytes apart, with addends or without), except those in [skip, skip_end): swapped, counted
// in s->result. (Some linkers make DT_RELASZ cover DT_JMPREL's entries as well.)
static void swap_table(struct swap* s, uintptr_t base, uintptr_t table, size_t size, size_t entsize,
                       uintptr_t skip, uintptr_t skip_end, const ElfW(Sym) * symtab, const char* strtab,
                       uintptr_t ro_start, uintptr_t ro_end) {
  if (table == 0 || entsize == 0) return;
  for (size_t off = 0; off + entsize <= size && s->result >= 0; off += entsize) {
    if (table + off >= skip && table + off < skip_end) continue;
    // ElfW(Rel) is ElfW(Rela)'s first two fields: r_offset and r_info.
    const ElfW(Rel)* r = (const ElfW(Rel)*)(table + off);
    unsigned long type = LST_R_TYPE(r->r_info);
    if (type != LST_JUMP_SLOT && type != LST_GLOB_DAT) continue;
    const ElfW(Sym)* sym = &symtab[LST_R_SYM(r->r_info)];
    if (strcmp(strtab + sym->st_name, s->symbol) != 0) continue;
    void** slot = (void**)(base + r->r_offset);
    void* old = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
    int rc = store(slot, s->new_target, ro_start, ro_end);
    if (rc != 0) {
      s->result = rc;
      return;
    }
    if (s->result == 0 && s->old_target != NULL) *s->old_target = old;
    ++s->result;
  }
}

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct swap* s = data;
  if (info->dlpi_name == NULL || strstr(info->dlpi_name, s->module) == NULL) return 0;
  s->found_object = 1;
  uintptr_t base = info->dlpi_addr;
  uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  const ElfW(Dyn)* dyn = NULL;
  uintptr_t ro_start = 0, ro_end = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn)*)(base + ph->p_vaddr);
    if (ph->p_type == PT_GNU_RELRO) {
      // As glibc's _dl_protect_relro: both ends rounded down to a page, the last partial page left
      // writable.
      ro_start = (base + ph->p_vaddr) & ~(page_size - 1);
      ro_end = (base + ph->p_vaddr + ph->p_memsz) & ~(page_size - 1);
    }
  }
  if (dyn == NULL) return 1;
  uintptr_t jmprel = 0, rela = 0, rel = 0, symtab = 0, strtab = 0;
  size_t pltrelsz = 0, relasz = 0, relsz = 0, relaent = sizeof(ElfW(Rela)), relent = sizeof(ElfW(Rel));
  ElfW(Sxword) pltrel = DT_RELA;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_JMPREL:
        jmprel = dyn_addr(base, d->d_un.d_ptr);
        break;
      case DT_PLTRELSZ:
        pltrelsz = d->d_un.d_val;
        break;
      case DT_PLTREL:
        pltrel = (ElfW(Sxword))d->d_un.d_val;
        break;
      case DT_RELA:
        rela = dyn_addr(base, d->d_un.d_ptr);
        break;
      case DT_RELASZ:
        relasz = d->d_un.d_val;
        break;
      case DT_RELAENT:
        relaent = d->d_un.d_val;
        break;
      case DT_REL:
        rel = dyn_addr(base, d->d_un.d_ptr);
        break;
      case DT_RELSZ:
        relsz = d->d_un.d_val;
        break;
      case DT_RELENT:
        relent = d->d_un.d_val;
        break;
      case DT_SYMTAB:
        symtab = dyn_addr(base, d->d_un.d_ptr);
        break;
      case DT_STRTAB:
        strtab = dyn_addr(base, d->d_un.d_ptr);
        break;
      default:
        break;
    }
  }
  if (symtab == 0 || strtab == 0) return 1;
  const ElfW(Sym)* syms = (const ElfW(Sym)*)symtab;
  const char* strs = (const char*)strtab;
  uintptr_t plt_end = jmprel + pltrelsz;
  swap_table(s, base, jmprel, pltrelsz, pltrel == DT_RELA ? relaent : relent, 0, 0, syms, strs, ro_start,
             ro_end);
  swap_table(s, base, rela, relasz, relaent, jmprel, plt_end, syms, strs, ro_start, ro_end);
  swap_table(s, base, rel, relsz, relent, jmprel, plt_end, syms, strs, ro_start, ro_end);
  return 1;  // the first object that matches, only
}

int lst_got_swap(const char* module, const char* symbol, void* new_target, void** old_target) {
  struct swap s = {module, symbol, new_target, old_target, 0, 0};
  dl_iterate_phdr(visit, &s);
  return s.found_object ? s.result : -1;
}
