// MPI calls made from Fortran. Open MPI's Fortran bindings (libmpi_mpifh for mpif.h and `use mpi`,
// libmpi_usempif08 for `use mpi_f08`, which goes through libmpi_mpifh) call the C library's PMPI_*
// functions directly: an interposed MPI_* never sees a Fortran program's calls. When the tracer is
// loaded, it points those libraries' own PMPI_* slots (their global offset table) at its MPI_* wrappers,
// and only those: the C library, its I/O components and any other PMPI_* caller keep theirs.
//
// A wrapper entered from a binding names the Fortran program's line, not the binding's: app_caller()
// (mpi_common.h) steps over the binding's frames. A frame's size at a given return address is fixed
// (the bindings allocate on the heap, never on the stack), so it is learnt once from the DWARF unwinder
// and then read from a table keyed by that address: a few loads per call instead of an unwind.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include <cstdio>
#include <cstring>

#include "mpi_common.h"

namespace lockstep::trace::mpi {

constinit FortranBindings g_fortran{};

namespace {

// The binding libraries, by the start of their file names: Open MPI's two (and the module library of
// `use mpi`, which makes no calls of its own today), and MPICH's, whose bindings call MPI_* (already
// interposed) but whose frames still stand between the wrapper and the program.
constexpr const char* kBindingLibs[] = {"libmpi_mpifh", "libmpi_usempif08", "libmpi_usempi_ignore_tkr",
                                        "libmpifort"};

struct Range {
  uintptr_t lo, hi;
};
constexpr int kMaxRanges = 8;
Range g_ranges[kMaxRanges];
int g_nranges = 0;

bool in_binding(uint64_t pc) noexcept {
  for (int i = 0; i < g_nranges; ++i)
    if (pc >= g_ranges[i].lo && pc < g_ranges[i].hi) return true;
  return false;
}

bool is_binding(const char* path) noexcept {
  if (!path || !path[0]) return false;
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  for (const char* lib : kBindingLibs)
    if (std::strncmp(base, lib, std::strlen(lib)) == 0) return true;
  return false;
}

// ---- frame sizes, learnt once per return address ----------------------------------------------------

// Open addressing, never removed: a binding has a few hundred call sites at most. `key` is written last
// (release), so a reader that finds it finds the size too; two threads learning the same address write
// the same value.
constexpr size_t kSizes = 1024;
struct SizeSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> size{0};
};
SizeSlot g_sizes[kSizes];

size_t slot_of(uint64_t ret) noexcept { return (ret * 0x9e3779b97f4a7c15ull) >> 54; }  // 10 bits

uint64_t frame_size(uint64_t ret) noexcept {
  for (size_t i = slot_of(ret), n = 0; n < kSizes; i = (i + 1) % kSizes, ++n) {
    const uint64_t k = g_sizes[i].key.load(std::memory_order_acquire);
    if (k == ret) return g_sizes[i].size.load(std::memory_order_relaxed);
    if (k == 0) return 0;
  }
  return 0;
}

void learn_size(uint64_t ret, uint64_t size) noexcept {
  for (size_t i = slot_of(ret), n = 0; n < kSizes; i = (i + 1) % kSizes, ++n) {
    uint64_t k = g_sizes[i].key.load(std::memory_order_acquire);
    if (k == ret) return;
    if (k == 0) {
      g_sizes[i].size.store(size, std::memory_order_relaxed);
      if (g_sizes[i].key.compare_exchange_strong(k, ret, std::memory_order_release)) return;
      if (k == ret) return;  // another thread took the slot for the same address
    }
  }
}

// What the DWARF unwinder saw: each frame's return address and, as _Unwind_GetCFA gives it beside that
// address, the canonical frame address of the frame it returns from (its callee), innermost first.
struct Walk {
  uint64_t ip[16];
  uintptr_t callee_cfa[16];
  int n = 0;
};
_Unwind_Reason_Code walk_step(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  if (w->n == 16) return _URC_END_OF_STACK;
  w->ip[w->n] = static_cast<uint64_t>(_Unwind_GetIP(ctx));
  w->callee_cfa[w->n] = static_cast<uintptr_t>(_Unwind_GetCFA(ctx));
  ++w->n;
  return _URC_NO_REASON;
}

// Unwinds from here, learns the size of every binding frame from `ret` outwards (its frame address
// minus its callee's) and returns the first return address outside the bindings. Nothing is learnt,
// and `ret` comes back, where the unwinder disagrees with the wrapper's own frame address `cfa`.
__attribute__((noinline)) uint64_t learn(uint64_t ret, uintptr_t cfa) noexcept {
  Walk w;
  _Unwind_Backtrace(walk_step, &w);
  for (int k = 1; k < w.n; ++k) {
    if (w.ip[k] != ret) continue;
    if (w.callee_cfa[k] != cfa) return ret;
    int j = k;
    for (; j + 1 < w.n && in_binding(w.ip[j]); ++j) learn_size(w.ip[j], w.callee_cfa[j + 1] - w.callee_cfa[j]);
    return in_binding(w.ip[j]) ? ret : w.ip[j];
  }
  return ret;
}

// ---- the binding libraries' PMPI_* slots -------------------------------------------------------------

// The tracer's wrapper for PMPI_<name>'s MPI_<name>, or nullptr when it has none.
void* wrapper_for(void* self, const char* pmpi_name) noexcept {
  if (std::strncmp(pmpi_name, "PMPI_", 5) != 0) return nullptr;
  void* fn = dlsym(self, pmpi_name + 1);
  return fn && in_this_library(fn) ? fn : nullptr;
}

// The address a dynamic-section entry holds: the loader has already added the load address to most of
// them on this platform, not to all, and not for every object.
uintptr_t dyn_address(uintptr_t base, uintptr_t value) noexcept { return value < base ? base + value : value; }

struct Redirected {
  void* self;
  int slots = 0;
};

// Writes the wrapper into every PMPI_* slot of one binding library that has a wrapper, making read-only
// (RELRO) pages writable for the write and read-only again after it.
void redirect(const dl_phdr_info* info, Redirected& r) noexcept {
  const ElfW(Dyn)* dyn = nullptr;
  uintptr_t relro_lo = 0, relro_hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) {
      relro_lo = info->dlpi_addr + ph.p_vaddr;
      relro_hi = relro_lo + ph.p_memsz;
    }
  }
  if (!dyn) return;
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  uintptr_t jmprel = 0, rela = 0;
  size_t jmprel_size = 0, rela_size = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_address(base, d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(dyn_address(base, d->d_un.d_ptr)); break;
      case DT_JMPREL: jmprel = dyn_address(base, d->d_un.d_ptr); break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_RELA: rela = dyn_address(base, d->d_un.d_ptr); break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab) return;
  const long page = sysconf(_SC_PAGESIZE);
  auto patch = [&](uintptr_t table, size_t bytes) {
    const auto* rel = reinterpret_cast<const ElfW(Rela)*>(table);
    for (size_t i = 0; table && i < bytes / sizeof(ElfW(Rela)); ++i) {
      const auto type = ELF64_R_TYPE(rel[i].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      void* wrapper = wrapper_for(r.self, strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name);
      if (!wrapper) continue;
      const uintptr_t slot = base + rel[i].r_offset;
      const bool relro = slot >= relro_lo && slot < relro_hi;
      void* page_start = reinterpret_cast<void*>(slot & ~static_cast<uintptr_t>(page - 1));
      if (relro && mprotect(page_start, static_cast<size_t>(page), PROT_READ | PROT_WRITE) != 0) continue;
      __atomic_store_n(reinterpret_cast<void**>(slot), wrapper, __ATOMIC_RELEASE);
      if (relro) mprotect(page_start, static_cast<size_t>(page), PROT_READ);
      ++r.slots;
    }
  };
  patch(jmprel, jmprel_size);
  patch(rela, rela_size);
}

int visit(dl_phdr_info* info, size_t, void* arg) {
  if (!is_binding(info->dlpi_name)) return 0;
  auto& r = *static_cast<Redirected*>(arg);
  for (int i = 0; i < info->dlpi_phnum && g_nranges < kMaxRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    g_ranges[g_nranges++] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
  }
  redirect(info, r);
  return 0;
}

}  // namespace

uint64_t fortran_caller(uint64_t ret, uintptr_t cfa) noexcept {
  // A binding calls at most one other binding before the C library (mpi_f08 -> mpif.h): a few hops.
  for (int hop = 0; hop < 4 && in_binding(ret); ++hop) {
    const uint64_t size = frame_size(ret);
    if (size == 0) return learn(ret, cfa);
    cfa += size;
    ret = *reinterpret_cast<const uint64_t*>(cfa - sizeof(uint64_t));  // the binding frame's return address
  }
  return ret;
}

int redirect_fortran_bindings() noexcept {
  Dl_info mine{};
  static const int anchor = 0;
  if (!dladdr(&anchor, &mine) || !mine.dli_fname) return 0;
  Redirected r{dlopen(mine.dli_fname, RTLD_LAZY | RTLD_NOLOAD)};
  if (!r.self) return 0;
  dl_iterate_phdr(visit, &r);
  dlclose(r.self);
  if (g_nranges > 0) {
    uintptr_t lo = g_ranges[0].lo, hi = g_ranges[0].hi;
    for (int i = 1; i < g_nranges; ++i) {
      lo = g_ranges[i].lo < lo ? g_ranges[i].lo : lo;
      hi = g_ranges[i].hi > hi ? g_ranges[i].hi : hi;
    }
    g_fortran.lo = lo;
    g_fortran.span = hi - lo;
  }
  return r.slots;
}

}  // namespace lockstep::trace::mpi
