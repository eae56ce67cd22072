/* Reads a thread's Python frames from the layout in CPython's internal headers (pycore_frame.h, which
   needs Py_BUILD_CORE). C, not C++: those headers use C11 atomics. Compiled with the headers only when
   CMake found them and a probe of this very file compiled (LOCKSTEP_PYTHON_FRAMES); otherwise every
   function below says "no layout" and python.cc keeps to the C API. */
#include "python_frame.h"

#if defined(LOCKSTEP_PYTHON_FRAMES)
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED) && \
    !defined(Py_TRACE_REFS)
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>
#include <pthread.h>
#define LST_READS_FRAMES 1
#endif
#endif

#if defined(LST_READS_FRAMES)

unsigned long lst_py_layout_version(void) { return PY_VERSION_HEX & 0xffff0000ul; }

static _PyInterpreterFrame* current(const PyThreadState* tstate) {
#if PY_VERSION_HEX >= 0x030D0000
  return tstate->current_frame;
#else
  return tstate->cframe ? tstate->cframe->current_frame : NULL;
#endif
}

static PyCodeObject* code_of(_PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030D0000
  return _PyFrame_GetCode(f);
#else
  return f->f_code;
#endif
}

static const _Py_CODEUNIT* instr_of(const _PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030D0000
  return f->instr_ptr;
#else
  return f->prev_instr;
#endif
}

/* Read on every call from Python: kept with the tracer's other hot data (session.h, LOCKSTEP_HOT_DATA). */
__attribute__((section("lockstep_hot"))) static _PyRuntimeState* runtime_ = NULL;

void lst_py_bind(void* runtime) { runtime_ = (_PyRuntimeState*)runtime; }

static inline const PyThreadState* own_thread_state(void) {
  if (!runtime_ || _PyRuntimeState_GetFinalizing(runtime_)) return NULL;
#if PY_VERSION_HEX >= 0x030C0000
  const Py_tss_t* key = &runtime_->autoTSSkey;
#else
  if (!runtime_->gilstate.autoInterpreterState) return NULL;
  const Py_tss_t* key = &runtime_->gilstate.autoTSSkey;
#endif
  return key->_is_initialized ? (const PyThreadState*)pthread_getspecific(key->_key) : NULL;
}

const void* lst_py_own_thread_state(void) { return own_thread_state(); }

struct lst_py_innermost lst_py_own_instr(void) {
  const PyThreadState* tstate = own_thread_state();
  _PyInterpreterFrame* f = tstate ? current(tstate) : NULL;
  struct lst_py_innermost at = {f ? instr_of(f) : NULL, f};
  return at;
}

int lst_py_read_frames_from(const void* frame, struct lst_py_frame* out, int max) {
  int n = 0;
  for (_PyInterpreterFrame* f = (_PyInterpreterFrame*)frame; f && n < max; f = f->previous) {
    if (_PyFrame_IsIncomplete(f)) continue; /* as PyEval_GetFrame and PyFrame_GetBack do */
    PyCodeObject* code = code_of(f);
    const int lasti = _PyInterpreterFrame_LASTI(f);
    out[n].code = code;
    out[n].lasti = lasti < 0 ? -1 : lasti * (int)sizeof(_Py_CODEUNIT);
    out[n].instr = instr_of(f) >= _PyCode_CODE(code) + code->_co_firsttraceable ? instr_of(f) : NULL;
    ++n;
  }
  return n;
}

int lst_py_read_own_frames(struct lst_py_frame* out, int max) {
  const PyThreadState* tstate = own_thread_state();
  return tstate ? lst_py_read_frames_from(current(tstate), out, max) : -1;
}

#else

unsigned long lst_py_layout_version(void) { return 0; }

void lst_py_bind(void* runtime) { (void)runtime; }

const void* lst_py_own_thread_state(void) { return NULL; }

struct lst_py_innermost lst_py_own_instr(void) {
  struct lst_py_innermost none = {NULL, NULL};
  return none;
}

int lst_py_read_frames_from(const void* frame, struct lst_py_frame* out, int max) {
  (void)frame;
  (void)out;
  (void)max;
  return -1;
}

int lst_py_read_own_frames(struct lst_py_frame* out, int max) {
  (void)out;
  (void)max;
  return -1;
}

#endif
