// Python call sites through the CPython C API (3.9-3.13), looked up with dlsym in the running
// interpreter: PyEval_GetFrame, PyFrame_GetLineNumber/GetCode/GetBack, and the code object's
// co_filename and co_qualname (co_name before 3.11). Frames are read that way only with the GIL held, so
// the GIL also guards the tables below. mpi4py releases the GIL around blocking MPI calls; a Python
// thread that released it takes it back for the read (PyGILState_Ensure), which is what a C callback
// does: uncontended that is a mutex, and it waits only while another Python thread runs Python code.
//
// The fast path skips all of that: where the interpreter is the Python major.minor whose headers the
// tracer was built with (python_frame.c), the thread's frames are read from its own frame stack without
// the GIL (no other thread changes them while this one is inside a call), and a frame whose (code
// object, instruction) is already in the site table needs nothing else. The first calls that find
// frames compare the two readings; any difference turns the fast path off for the process.
#include "python.h"
#include "lockstep/env.h"
#include "python_frame.h"
#include "session.h"

#include "lockstep/format/fnv.h"

#include <dlfcn.h>
#include <sys/types.h>

#include <cstdlib>
#include <cstring>

#include "lockstep/format/layout.h"

namespace lockstep::trace {

LOCKSTEP_HOT_DATA std::atomic<int> g_python_state{0};

namespace {

// The fast path: off (this interpreter's layout is not the one built in, or the readings differed),
// on trial (both readings are taken, under the GIL, and compared), or on.
enum Fast : int { kFastOff, kFastTrial, kFastOn };
LOCKSTEP_HOT_DATA std::atomic<int> g_fast{kFastOff};
constexpr int kMaxPyFrames = 64;  // LOCKSTEP_TRACE_STACK's limit
constexpr int kTrialCalls = 8;    // agreeing readings before the fast path is trusted
int g_trial_agreed = 0;           // guarded by the GIL

struct PyApi {
  int (*is_initialized)();
  int (*gil_check)();
  void* (*current_frame)();  // borrowed reference
  int (*line_number)(void*);
  void* (*frame_code)(void*);  // new reference
  void* (*frame_back)(void*);  // new reference, or null
  void* (*get_attr)(void*, const char*);
  const char* (*utf8)(void*, ssize_t*);
  void (*incref)(void*);
  void (*decref)(void*);
  void (*clear_error)();
  void* (*this_thread_state)();  // PyGILState_GetThisThreadState: null for a thread Python never saw
  int (*gil_ensure)();
  void (*gil_release)(int);
  int (*finalizing)();         // Py_IsFinalizing (3.13) or _Py_IsFinalizing; may be absent
  int (*frame_lasti)(void*);   // PyFrame_GetLasti (3.11+); without it every line is computed
  void* (*thread_state)();     // PyThreadState_Get: the thread's current state, with the GIL held
  int (*at_exit)(void (*)());  // Py_AtExit: for lst_py_read_in_place; may be absent
};
PyApi g_api;

template <typename F>
bool find(F& slot, const char* name) noexcept {
  slot = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return slot != nullptr;
}

bool detect() noexcept {
  static std::atomic<bool> busy{false};
  if (busy.exchange(true)) return false;  // another thread is detecting: this call goes native
  // LOCKSTEP_TRACE_PYTHON=0: native call sites only, and the GIL is never taken by the tracer.
  if (!env::on(env::Var::kTracePython)) {
    g_python_state.store(2, std::memory_order_release);
    return false;
  }
  PyApi a{};
  bool ok = find(a.is_initialized, "Py_IsInitialized") && find(a.gil_check, "PyGILState_Check") &&
            find(a.current_frame, "PyEval_GetFrame") && find(a.line_number, "PyFrame_GetLineNumber") &&
            find(a.frame_code, "PyFrame_GetCode") && find(a.frame_back, "PyFrame_GetBack") &&
            find(a.get_attr, "PyObject_GetAttrString") && find(a.utf8, "PyUnicode_AsUTF8AndSize") &&
            find(a.incref, "Py_IncRef") && find(a.decref, "Py_DecRef") && find(a.clear_error, "PyErr_Clear");
  ok = ok && find(a.this_thread_state, "PyGILState_GetThisThreadState") &&
       find(a.gil_ensure, "PyGILState_Ensure") && find(a.gil_release, "PyGILState_Release");
  if (ok && !find(a.finalizing, "Py_IsFinalizing")) find(a.finalizing, "_Py_IsFinalizing");
  if (ok) find(a.frame_lasti, "PyFrame_GetLasti");
  if (ok) find(a.at_exit, "Py_AtExit");
  if (ok) g_api = a;
  // Py_Version (3.11+) is the running interpreter's PY_VERSION_HEX; the fast path needs its
  // major.minor to be the layout's, and the instruction offsets of PyFrame_GetLasti to compare with.
  const auto* version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"));
  void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  const char* read = env::get(env::Var::kTracePythonRead);
  if (ok && version && runtime && !(read && std::strcmp(read, "api") == 0) && a.frame_lasti &&
      find(g_api.thread_state, "PyThreadState_Get") && lst_py_layout_version() != 0 &&
      (*version & 0xffff0000ul) == lst_py_layout_version()) {
    lst_py_bind(runtime);
    g_fast.store(kFastTrial, std::memory_order_relaxed);
  }
  g_python_state.store(ok ? 1 : 2, std::memory_order_release);
  return ok;
}

// Code object -> the base of its synthetic address range. A code object in the table is kept alive
// (one reference), so its address is never reused for another function.
constexpr size_t kCodeSlots = 4096;
struct CodeSlot {
  void* code;
  uint64_t lo;
};
CodeSlot g_codes[kCodeSlots];

// The attribute as UTF-8, or null; `*owner` holds the reference to release.
const char* text_attr(void* obj, const char* name, void** owner, ssize_t* len) noexcept {
  *owner = g_api.get_attr(obj, name);
  if (!*owner) {
    g_api.clear_error();
    return nullptr;
  }
  const char* s = g_api.utf8(*owner, len);
  if (!s) g_api.clear_error();
  return s;
}

// (code object, instruction offset) -> call-site address: PyFrame_GetLineNumber walks the code
// object's line table on every call (the largest part of a Python call site's cost), and the fast path
// has nothing else to name a frame by. Only code objects kept alive by g_codes are entered, so an address
// here always names the same function and line. Entries are written once, with the GIL held (one writer
// at a time), and published by their code pointer: the fast path reads them without the GIL.
constexpr size_t kLineSlots = 4096;
constexpr size_t kLineProbes = 8;
struct LineSlot {
  std::atomic<const void*> code;
  int lasti;
  uint64_t site;
};
// constinit: a dynamic initializer would run when the library is loaded, which may be after its first calls.
constinit LineSlot g_lines[kLineSlots]{};

inline size_t line_slot(const void* code, int lasti) noexcept {
  const uint64_t k = reinterpret_cast<uintptr_t>(code) ^ (static_cast<uint64_t>(lasti) << 40);
  return static_cast<size_t>((k * 0x9e3779b97f4a7c15ull) >> 52);  // 12 bits: kLineSlots
}

// The cached site, or 0.
inline uint64_t cached_site(const void* code, int lasti) noexcept {
  for (size_t i = line_slot(code, lasti), n = 0; n < kLineProbes; ++n, i = (i + 1) & (kLineSlots - 1)) {
    const void* c = g_lines[i].code.load(std::memory_order_acquire);
    if (!c) return 0;
    if (c == code && g_lines[i].lasti == lasti) return g_lines[i].site;
  }
  return 0;
}

// With the GIL held. A key whose probes are all taken stays uncached (read through the API each time).
void cache_site(const void* code, int lasti, uint64_t site) noexcept {
  for (size_t i = line_slot(code, lasti), n = 0; n < kLineProbes; ++n, i = (i + 1) & (kLineSlots - 1)) {
    const void* c = g_lines[i].code.load(std::memory_order_relaxed);
    if (c == code && g_lines[i].lasti == lasti) return;
    if (!c) {
      g_lines[i].lasti = lasti;
      g_lines[i].site = site;
      g_lines[i].code.store(code, std::memory_order_release);
      return;
    }
  }
}

// LOCKSTEP_TRACE_PYTHON_STATS: how the call sites were read. The switch is read on every call, with the
// other hot data.
LOCKSTEP_HOT_DATA bool g_count_reads = false;
std::atomic<uint64_t> g_read_direct{0}, g_read_api{0};

// A frame's site from the shared table, kept among the thread's recent ones (python_frame.h) when it is
// found.
inline uint64_t shared_site(const lst_py_frame& f) noexcept {
  const uint64_t site = f.lasti >= 0 ? cached_site(f.code, f.lasti) : 0;
  if (site && f.instr) lst_py_remember(f.instr, site);
  return site;
}

inline uint64_t site_of(const lst_py_frame& f) noexcept {
  if (f.instr)
    if (const uint64_t site = lst_py_recent(f.instr)) return site;
  return shared_site(f);
}

// The fast path, for up to kDirectFrames frames: every frame read from the thread's frame stack and
// found among the known sites; false sends the call to the API path, which learns the sites. (The
// common call, one frame whose site this thread met lately, never gets here: python_frames_slow finds
// it from the frame's instruction pointer alone, a shorter chain of loads than the code object and
// offset.) A small stack frame of its own: the API path's frame buffers stay out of the common call.
constexpr int kDirectFrames = 8;
bool read_direct(uint64_t* out, int max, int* n) noexcept {
  lst_py_frame f[kDirectFrames];
  const int k = lst_py_read_own_frames(f, max);  // -1: no thread state, or finalizing
  if (k < 0) return false;
  for (int i = 0; i < k; ++i) {
    const uint64_t site = site_of(f[i]);
    if (!site) return false;
    out[i] = site;
  }
  *n = k;
  return true;
}

// On trial, with the GIL held: the frames the API walked (`seen`) against the frame stack's.
void try_direct(const lst_py_frame* seen, int nseen) noexcept {
  lst_py_frame f[kMaxPyFrames];
  const int k = lst_py_own_thread_state() == g_api.thread_state() ? lst_py_read_own_frames(f, nseen) : -1;
  bool same = k == nseen;
  for (int i = 0; same && i < k; ++i) same = f[i].code == seen[i].code && f[i].lasti == seen[i].lasti;
  if (!same)
    g_fast.store(kFastOff, std::memory_order_relaxed);
  else if (++g_trial_agreed >= kTrialCalls) {
    lst_py_read_in_place(g_api.at_exit);  // the GIL is held, as it needs
    g_fast.store(kFastOn, std::memory_order_release);
  }
}

// `kept`: the code object is in g_codes (alive for good), so its sites may be cached.
uint64_t code_base(format::Writer* w, void* code, bool* kept) noexcept {
  const uintptr_t k = reinterpret_cast<uintptr_t>(code);
  size_t i = ((k >> 4) * 0x9e3779b97f4a7c15ull) >> 52;  // 12 bits: kCodeSlots
  size_t n = 0;
  *kept = false;
  for (; n < kCodeSlots && g_codes[i].code; ++n, i = (i + 1) & (kCodeSlots - 1))
    if (g_codes[i].code == code) {
      *kept = true;
      return g_codes[i].lo;
    }
  if (n == kCodeSlots) return 0;  // table full: this function keeps its native call site
  void *file_obj = nullptr, *name_obj = nullptr;
  ssize_t file_len = 0, name_len = 0;
  const char* file = text_attr(code, "co_filename", &file_obj, &file_len);
  const char* name = text_attr(code, "co_qualname", &name_obj, &name_len);
  if (!name) {
    if (name_obj) g_api.decref(name_obj);
    name = text_attr(code, "co_name", &name_obj, &name_len);
  }
  uint64_t lo = 0;
  if (file && name) {
    // The same function gets the same range in every process of the job: sites compare across ranks.
    const uint64_t h = format::fnv1a(name, size_t(name_len) + 1, format::fnv1a(file, size_t(file_len)));
    lo = LST_PY_ADDR_BASE | ((h ^ (h >> 32)) & 0xffffffffull) << 24;
    if (w->add_python_module(file, size_t(file_len), name, size_t(name_len), lo)) {
      g_api.incref(code);
      g_codes[i] = {code, lo};
      *kept = true;
    }
  }
  if (file_obj) g_api.decref(file_obj);
  if (name_obj) g_api.decref(name_obj);
  return lo;
}

}  // namespace

namespace {

// Through CPython's C API, with the GIL: the path of the first calls, of the sites not known yet, and of
// every call where the fast path is off.
__attribute__((noinline)) int frames_api(format::Writer* w, uint64_t* out, int max) noexcept {
  if (!g_api.is_initialized() || (g_api.finalizing && g_api.finalizing())) return 0;
  if (g_count_reads) g_read_api.fetch_add(1, std::memory_order_relaxed);
  int gil = -1;  // PyGILState_Ensure's state when this call took the GIL
  if (!g_api.gil_check()) {
    if (!g_api.this_thread_state()) return 0;  // not a Python thread: the native call site stands
    gil = g_api.gil_ensure();
  }
  lst_py_frame seen[kMaxPyFrames];  // the frames walked, for the fast path's trial
  int nseen = 0, n = 0;
  void* frame = g_api.current_frame();
  if (frame) g_api.incref(frame);
  while (frame) {
    void* code = g_api.frame_code(frame);
    const int lasti = g_api.frame_lasti && code ? g_api.frame_lasti(frame) : -1;
    if (nseen < kMaxPyFrames) seen[nseen++] = {code, lasti};
    const uint64_t cached = lasti >= 0 ? cached_site(code, lasti) : 0;
    if (cached) {
      out[n++] = cached;
    } else {
      const int line = g_api.line_number(frame);
      bool kept = false;
      const uint64_t lo = code ? code_base(w, code, &kept) : 0;
      if (lo && line >= 0 && uint64_t(line) + 1 < LST_PY_LINE_SPAN) {
        out[n++] = lo + uint64_t(line) + 1;
        if (lasti >= 0 && kept) cache_site(code, lasti, out[n - 1]);
      }
    }
    if (code) g_api.decref(code);
    void* back = n < max ? g_api.frame_back(frame) : nullptr;
    g_api.decref(frame);
    frame = back;
  }
  if (nseen > 0 && g_fast.load(std::memory_order_relaxed) == kFastTrial) try_direct(seen, nseen);
  if (gil != -1) g_api.gil_release(gil);
  return n;
}

}  // namespace

namespace {

// Every call the common one below is not: Python looked for, a call site read in full or learnt.
__attribute__((noinline)) int frames_rest(format::Writer* w, uint64_t* out, int max) noexcept {
  if (g_python_state.load(std::memory_order_acquire) != 1 && !detect()) return 0;
  if (max <= 0) return 0;
  // No Py_IsInitialized here: before it there is no trial; from Py_Finalize on, no thread state.
  if (g_fast.load(std::memory_order_acquire) == kFastOn && max <= kDirectFrames) {
    int n = 0;
    if (read_direct(out, max, &n)) {
      if (g_count_reads) g_read_direct.fetch_add(1, std::memory_order_relaxed);
      return n;
    }
  }
  return frames_api(w, out, max);
}

// The one-frame call whose innermost frame's pointer is not among the recent sites (a loop over more
// sites than they hold, a line not met lately): read_direct's reading, from the frame already found, and
// the recent sites not searched again for that same pointer.
__attribute__((noinline)) int frame_from(format::Writer* w, lst_py_innermost at, uint64_t* out) noexcept {
  lst_py_frame f;
  const int k = lst_py_read_frames_from(at.frame, &f, 1);
  if (k == 0 || (k == 1 && (out[0] = f.instr == at.instr ? shared_site(f) : site_of(f)) != 0)) {
    if (g_count_reads) g_read_direct.fetch_add(1, std::memory_order_relaxed);
    return k;
  }
  return frames_api(w, out, 1);
}

}  // namespace

// The common call, one frame (no LOCKSTEP_TRACE_STACK) with the fast path on (which implies Python was
// found), goes straight to lst_py_recent_site: a jump, with no stack frame here, and none there when the
// innermost frame's instruction pointer is among the thread's recent sites.
int python_frames_slow(format::Writer* w, uint64_t* out, int max) noexcept {
  if (__builtin_expect(max == 1 && g_fast.load(std::memory_order_acquire) == kFastOn, 1))
    return g_count_reads ? lst_py_site_missed(w, out) : lst_py_recent_site(w, out);
  return frames_rest(w, out, max);
}

void python_stats(bool on) noexcept { g_count_reads = on; }

void python_counts(uint64_t* direct, uint64_t* api, const char** fast) noexcept {
  *direct = g_read_direct.load(std::memory_order_relaxed);
  *api = g_read_api.load(std::memory_order_relaxed);
  const int f = g_fast.load(std::memory_order_relaxed);
  const bool in_place = lst_py_reads_in_place() != 0;
  *fast = f == kFastOn      ? (in_place ? "on, thread state read in place" : "on")
          : f == kFastTrial ? "on trial"
                            : "off";
}

}  // namespace lockstep::trace

// The one-frame call lst_py_recent_site did not find among the thread's recent sites, or any call while
// LOCKSTEP_TRACE_PYTHON_STATS counts them: its innermost frame read again, then frame_from.
int lst_py_site_missed(void* writer, uint64_t* out) {
  using namespace lockstep::trace;
  auto* w = static_cast<lockstep::format::Writer*>(writer);
  const lst_py_innermost at = lst_py_own_instr();
  if (const uint64_t site = lst_py_recent(at.instr)) {
    out[0] = site;
    if (g_count_reads) g_read_direct.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  if (at.frame) return frame_from(w, at, out);
  return frames_rest(w, out, 1);
}
