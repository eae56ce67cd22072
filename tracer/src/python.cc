// Python call sites through the CPython C API (3.9-3.13), looked up with dlsym in the running
// interpreter: PyEval_GetFrame, PyFrame_GetLineNumber/GetCode/GetBack, and the code object's
// co_filename and co_qualname (co_name before 3.11). Frames are read only with the GIL held, so the GIL
// also guards the code-object table below. mpi4py releases the GIL around blocking MPI calls; a Python
// thread that released it takes it back for the read (PyGILState_Ensure), which is what a C callback
// does: uncontended that is a mutex, and it waits only while another Python thread runs Python code.
#include "python.h"
#include "lockstep/env.h"

#include "lockstep/format/fnv.h"

#include <dlfcn.h>
#include <sys/types.h>

#include <cstdlib>
#include <cstring>

#include "lockstep/format/layout.h"

namespace lockstep::trace {

std::atomic<int> g_python_state{0};

namespace {

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
  int (*finalizing)();  // Py_IsFinalizing (3.13) or _Py_IsFinalizing; may be absent
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
  if (ok) g_api = a;
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

uint64_t code_base(format::Writer* w, void* code) noexcept {
  const uintptr_t k = reinterpret_cast<uintptr_t>(code);
  size_t i = ((k >> 4) * 0x9e3779b97f4a7c15ull) >> 52;  // 12 bits: kCodeSlots
  size_t n = 0;
  for (; n < kCodeSlots && g_codes[i].code; ++n, i = (i + 1) & (kCodeSlots - 1))
    if (g_codes[i].code == code) return g_codes[i].lo;
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
    }
  }
  if (file_obj) g_api.decref(file_obj);
  if (name_obj) g_api.decref(name_obj);
  return lo;
}

}  // namespace

int python_frames_slow(format::Writer* w, uint64_t* out, int max) noexcept {
  if (g_python_state.load(std::memory_order_acquire) != 1 && !detect()) return 0;
  if (max <= 0 || !g_api.is_initialized() || (g_api.finalizing && g_api.finalizing())) return 0;
  int gil = -1;  // PyGILState_Ensure's state when this call took the GIL
  if (!g_api.gil_check()) {
    if (!g_api.this_thread_state()) return 0;  // not a Python thread: the native call site stands
    gil = g_api.gil_ensure();
  }
  void* frame = g_api.current_frame();
  if (frame) g_api.incref(frame);
  int n = 0;
  while (frame) {
    void* code = g_api.frame_code(frame);
    const int line = g_api.line_number(frame);
    const uint64_t lo = code ? code_base(w, code) : 0;
    if (code) g_api.decref(code);
    if (lo && line >= 0 && uint64_t(line) + 1 < LST_PY_LINE_SPAN) out[n++] = lo + uint64_t(line) + 1;
    void* back = n < max ? g_api.frame_back(frame) : nullptr;
    g_api.decref(frame);
    frame = back;
  }
  if (gil != -1) g_api.gil_release(gil);
  return n;
}

}  // namespace lockstep::trace
