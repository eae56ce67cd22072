/* One loaded object's calls to imported functions, as slots of its global offset table: found from its
 * dynamic section and rewritten in place. The tracer points the MPI Fortran bindings' PMPI_* calls at
 * its wrappers this way (mpi_fortran.cc); bench/tracer/got_swap.c swaps one slot back and forth to time
 * traced and untraced loops in one process. C and C++.
 *
 * The relocation tables (DT_JMPREL, and DT_RELA or DT_REL for objects built with -fno-plt) and the
 * dynamic symbol and string tables come from PT_DYNAMIC. glibc on x86-64 has already added the load
 * address to these entries, on some other targets it has not: an entry below the load address is taken
 * as unrelocated. Every JUMP_SLOT or GLOB_DAT relocation names a slot. A slot in the part of
 * PT_GNU_RELRO that the loader made read-only (full RELRO, or GLOB_DAT slots under any RELRO) is made
 * writable for the store and read-only again after it, as the loader left it. */
#ifndef LOCKSTEP_TRACER_GOT_SLOTS_H
#define LOCKSTEP_TRACER_GOT_SLOTS_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define LST_JUMP_SLOT R_X86_64_JUMP_SLOT
#define LST_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define LST_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define LST_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "got_slots.h knows the relocation types of x86-64 and AArch64 only"
#endif

#ifdef __cplusplus
#define LST_GOT_NULL nullptr
#else
#define LST_GOT_NULL NULL
#endif

#if __ELF_NATIVE_CLASS == 64
#define LST_R_SYM ELF64_R_SYM
#define LST_R_TYPE ELF64_R_TYPE
#else
#define LST_R_SYM ELF32_R_SYM
#define LST_R_TYPE ELF32_R_TYPE
#endif

struct lst_got {
  uintptr_t base;
  const ElfW(Sym) * syms;
  const char* strs;
  uintptr_t table[3]; /* DT_JMPREL, DT_RELA, DT_REL */
  size_t size[3], entsize[3];
  uintptr_t ro_start, ro_end; /* the pages the loader made read-only */
};

/* An address from the dynamic section: relocated by the loader already, or an offset from `base`. */
static inline uintptr_t lst_got_dyn_addr(uintptr_t base, ElfW(Addr) v) { return v < base ? base + v : v; }

/* Reads one object's tables; 0, or -1 when it has no dynamic section or symbol table. */
static inline int lst_got_open(const struct dl_phdr_info* info, struct lst_got* g) {
  const uintptr_t base = info->dlpi_addr;
  const uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  const ElfW(Dyn)* dyn = LST_GOT_NULL;
  uintptr_t symtab = 0, strtab = 0;
  ElfW(Sxword) pltrel = DT_RELA;
  ElfW(Half) i;
  g->base = base;
  g->ro_start = g->ro_end = 0;
  for (i = 0; i < 3; ++i) g->table[i] = g->size[i] = 0;
  g->entsize[0] = g->entsize[1] = sizeof(ElfW(Rela));
  g->entsize[2] = sizeof(ElfW(Rel));
  for (i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn)*)(base + ph->p_vaddr);
    if (ph->p_type == PT_GNU_RELRO) {
      /* As glibc's _dl_protect_relro: both ends rounded down to a page, the last partial page left
         writable. */
      g->ro_start = (base + ph->p_vaddr) & ~(page_size - 1);
      g->ro_end = (base + ph->p_vaddr + ph->p_memsz) & ~(page_size - 1);
    }
  }
  if (dyn == LST_GOT_NULL) return -1;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_JMPREL:
        g->table[0] = lst_got_dyn_addr(base, dyn->d_un.d_ptr);
        break;
      case DT_PLTRELSZ:
        g->size[0] = dyn->d_un.d_val;
        break;
      case DT_PLTREL:
        pltrel = (ElfW(Sxword))dyn->d_un.d_val;
        break;
      case DT_RELA:
        g->table[1] = lst_got_dyn_addr(base, dyn->d_un.d_ptr);
        break;
      case DT_RELASZ:
        g->size[1] = dyn->d_un.d_val;
        break;
      case DT_RELAENT:
        g->entsize[1] = dyn->d_un.d_val;
        break;
      case DT_REL:
        g->table[2] = lst_got_dyn_addr(base, dyn->d_un.d_ptr);
        break;
      case DT_RELSZ:
        g->size[2] = dyn->d_un.d_val;
        break;
      case DT_RELENT:
        g->entsize[2] = dyn->d_un.d_val;
        break;
      case DT_SYMTAB:
        symtab = lst_got_dyn_addr(base, dyn->d_un.d_ptr);
        break;
      case DT_STRTAB:
        strtab = lst_got_dyn_addr(base, dyn->d_un.d_ptr);
        break;
      default:
        break;
    }
  }
  g->entsize[0] = pltrel == DT_RELA ? g->entsize[1] : g->entsize[2];
  g->syms = (const ElfW(Sym)*)symtab;
  g->strs = (const char*)strtab;
  return symtab == 0 || strtab == 0 ? -1 : 0;
}

/* Calls each(slot, symbol, ctx) for every JUMP_SLOT or GLOB_DAT slot of the object, until it returns
 * nonzero (then that value is returned; else 0). Some linkers make DT_RELASZ cover DT_JMPREL's entries
 * as well: those are visited once. */
static inline int lst_got_each(const struct lst_got* g,
                               int (*each)(void** slot, const char* symbol, void* ctx), void* ctx) {
  const uintptr_t plt_end = g->table[0] + g->size[0];
  int t;
  for (t = 0; t < 3; ++t) {
    size_t off;
    if (g->table[t] == 0 || g->entsize[t] == 0) continue;
    for (off = 0; off + g->entsize[t] <= g->size[t]; off += g->entsize[t]) {
      const uintptr_t at = g->table[t] + off;
      /* ElfW(Rel) is ElfW(Rela)'s first two fields: r_offset and r_info. */
      const ElfW(Rel)* r = (const ElfW(Rel)*)at;
      const unsigned long type = (unsigned long)LST_R_TYPE(r->r_info);
      int rc;
      if (t > 0 && at >= g->table[0] && at < plt_end) continue;
      if (type != LST_JUMP_SLOT && type != LST_GLOB_DAT) continue;
      rc = each((void**)(g->base + r->r_offset), g->strs + g->syms[LST_R_SYM(r->r_info)].st_name, ctx);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

/* Stores `target` in one of the object's slots. Returns 0, or -2 when mprotect failed (errno says why). */
static inline int lst_got_store(const struct lst_got* g, void** slot, void* target) {
  const uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t page = (uintptr_t)slot & ~(page_size - 1);
  const int read_only = page >= g->ro_start && page < g->ro_end;
  if (read_only && mprotect((void*)page, page_size, PROT_READ | PROT_WRITE) != 0) return -2;
  __atomic_store_n(slot, target, __ATOMIC_SEQ_CST);
  if (read_only && mprotect((void*)page, page_size, PROT_READ) != 0) return -2;
  return 0;
}

#endif
