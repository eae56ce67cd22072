// MPI calls made from Fortran. Open MPI's Fortran bindings (libmpi_mpifh for mpif.h and `use mpi`,
// libmpi_usempif08 for `use mpi_f08`, which goes through libmpi_mpifh) call the C library's PMPI_*
// functions directly: an interposed MPI_* never sees a Fortran program's calls. When the tracer is
// loaded, it points those libraries' own PMPI_* slots (their global offset table) at its MPI_* wrappers,
// and only those (got_slots.h): the C library, its I/O components and any other PMPI_* caller keep theirs.
//
// A wrapper entered from a binding names the Fortran program's line, not the binding's: app_caller()
// (mpi_common.h) steps over the binding's frames. A frame's size at a given return address is fixed
// (Open MPI 4.1's two binding libraries never move the stack pointer by a computed amount: their arrays
// are on the heap), so it is learnt once from the DWARF unwinder and then read from a table keyed by that
// address: a few loads per call instead of an unwind. The return address sits just below the frame
// address on x86-64 only; elsewhere every such call asks the unwinder.
#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <cstring>

#include "got_slots.h"
#include "mpi_common.h"

namespace lockstep::trace::mpi {

LOCKSTEP_HOT_DATA constinit FortranBindings g_fortran{};

namespace {

// The binding libraries, by the start of their file names: Open MPI's two (and the module library of
// `use mpi`, which makes no calls of its own in 4.1), and MPICH's, handled alike (untested).
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
    for (; j + 1 < w.n && in_binding(w.ip[j]); ++j)
      learn_size(w.ip[j], w.callee_cfa[j + 1] - w.callee_cfa[j]);
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

struct Redirected {
  void* self;
  const lst_got* got = nullptr;
  int slots = 0;
};

int redirect_slot(void** slot, const char* symbol, void* arg) {
  auto& r = *static_cast<Redirected*>(arg);
  if (void* wrapper = wrapper_for(r.self, symbol); wrapper && lst_got_store(r.got, slot, wrapper) == 0)
    ++r.slots;
  return 0;
}

int visit(dl_phdr_info* info, size_t, void* arg) {
  if (!is_binding(info->dlpi_name)) return 0;
  auto& r = *static_cast<Redirected*>(arg);
  for (int i = 0; i < info->dlpi_phnum && g_nranges < kMaxRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    g_ranges[g_nranges++] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
  }
  lst_got got{};
  if (lst_got_open(info, &got) == 0) {
    r.got = &got;
    lst_got_each(&got, redirect_slot, &r);
  }
  return 0;
}

}  // namespace

uint64_t fortran_caller(uint64_t ret, uintptr_t cfa) noexcept {
#if !defined(__x86_64__)
  if (in_binding(ret)) return learn(ret, cfa);
#endif
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
