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
#include <dlfcn.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>
#include <pthread.h>
#include <stdint.h>
#define LST_READS_FRAMES 1
#endif
#endif

/* The last sites this thread's fast path found, by the frame's instruction pointer (lst_py_frame.instr):
   a loop's calls are found here from the innermost frame's pointer alone, without reading its code
   object or touching python.cc's shared table. Searched in full, so that the few sites a loop
   alternates between (a send and its receive) never take each other's place; a new site replaces the
   oldest. Entries come from that table, whose code objects stay alive: a pointer into one's bytecode
   names the same (code, offset) for good. One cache line, which the common call reads in full. */
struct recent_site {
  const void* instr;
  uint64_t site;
};
enum { kRecent = 4 };
static __thread __attribute__((tls_model("initial-exec"), aligned(64))) struct recent_site t_recent[kRecent];
static __thread __attribute__((tls_model("initial-exec"))) unsigned t_recent_next;

static inline uint64_t recent(const void* instr) {
  for (int i = 0; i < kRecent; ++i)
    if (t_recent[i].instr == instr) return t_recent[i].site;
  return 0;
}

uint64_t lst_py_recent(const void* instr) { return recent(instr); }

void lst_py_remember(const void* instr, uint64_t site) {
  t_recent[t_recent_next++ % kRecent] = (struct recent_site){instr, site};
}

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

static const Py_tss_t* tss_key(const _PyRuntimeState* runtime) {
#if PY_VERSION_HEX >= 0x030C0000
  return &runtime->autoTSSkey;
#else
  return &runtime->gilstate.autoTSSkey;
#endif
}

/* The thread state is the value of the interpreter's thread-specific key (PyGILState_GetThisThreadState
   reads it with pthread_getspecific). On x86-64 glibc keeps a thread's values of the first 32 keys in
   its own thread control block, at a fixed offset from the thread pointer, each with the sequence
   number its key had when the value was set; pthread_getspecific compares that with the key's current
   one, so that a value left by a deleted key at the same index is not taken for the new key's. Read in
   place, the value is one load relative to %fs, without the call and the thread pointer's load before
   it. The offset is not a published interface, so it is found, not assumed (lst_py_read_in_place): a
   probe key of the tracer's own is set and looked for in the block (within the size glibc gives
   debuggers for it), and the interpreter's key must then read there as pthread_getspecific reads it. The
   sequence number is compared with the one the interpreter's key had then: a value set since, by the
   interpreter, carries it; one a deleted key left does not, and takes pthread_getspecific. The interpreter
   deletes its key only when it finalizes, and an exit function it calls at the end of Py_FinalizeEx
   (Py_AtExit) stops the in-place reading for good, so a key created again by a later Py_Initialize is read
   with pthread_getspecific. */
struct py_hot {
  _PyRuntimeState* runtime;
  int32_t slot_offset; /* of the key's value's slot from the thread pointer; -1: pthread_getspecific */
  uint32_t slot_seq;   /* the key's sequence number when the offset was found */
};
/* Read on every call from Python: kept with the tracer's other hot data (session.h, LOCKSTEP_HOT_DATA),
   in 16 bytes. */
__attribute__((section("lockstep_hot"))) static struct py_hot runtime_ = {NULL, -1, 0};

void lst_py_bind(void* runtime) { runtime_.runtime = (_PyRuntimeState*)runtime; }

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__SEG_FS)
struct key_slot { /* glibc's per-thread value of one key */
  uintptr_t seq;
  const void* data;
};
struct key_state { /* glibc's per-process state of one key (__pthread_keys) */
  uintptr_t seq;
  void (*destructor)(void*);
};
enum { kInPlaceKeys = 32, kProbeBytes = 2048 };

/* The offset from the thread pointer of the one 16-byte position in the first `bytes` of the calling
   thread's block that holds `value` after `seq`; -1 where there is none or more than one. */
static long probe_slot(long bytes, uintptr_t seq, const void* value) {
  const uintptr_t* block = (const uintptr_t*)__builtin_thread_pointer();
  long found = -1;
  for (long i = 0; i + 1 < bytes / (long)sizeof(uintptr_t); ++i) {
    if ((const void*)block[i + 1] != value || block[i] != seq) continue;
    if (found != -1) return -1;
    found = i * (long)sizeof(uintptr_t);
  }
  return found;
}

static int in_place_found_ = 0; /* for LOCKSTEP_TRACE_PYTHON_STATS, which reports after the stop */

static void stop_in_place(void) { __atomic_store_n(&runtime_.slot_offset, -1, __ATOMIC_RELAXED); }

int lst_py_read_in_place(int (*at_exit)(void (*)(void))) {
  const struct key_state* states = (const struct key_state*)dlsym(RTLD_DEFAULT, "__pthread_keys");
  /* The block's size, which glibc publishes for debuggers (libthread_db): a thread's block may end its
     stack's mapping, so the probe reads no further. */
  const uint32_t* block_size = (const uint32_t*)dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
  if (!runtime_.runtime || !states || !block_size || !at_exit) return 0;
  const long bytes = *block_size < kProbeBytes ? (long)*block_size : kProbeBytes;
  const Py_tss_t* key = tss_key(runtime_.runtime);
  if (!key->_is_initialized || key->_key >= kInPlaceKeys || states[key->_key].seq > UINT32_MAX) return 0;
  pthread_key_t probe;
  if (pthread_key_create(&probe, NULL) != 0) return 0;
  static char marks[2];
  long at = -1;
  if (probe < kInPlaceKeys && pthread_setspecific(probe, &marks[0]) == 0) {
    at = probe_slot(bytes, states[probe].seq, &marks[0]);
    /* The same position with a second value, and the block's first slot at or after its start. */
    if (at >= 0 && (pthread_setspecific(probe, &marks[1]) != 0 ||
                    probe_slot(bytes, states[probe].seq, &marks[1]) != at ||
                    at < (long)(probe * sizeof(struct key_slot))))
      at = -1;
  }
  pthread_key_delete(probe);
  if (at < 0) return 0;
  const long offset = at + ((long)key->_key - (long)probe) * (long)sizeof(struct key_slot);
  if (offset < 0 || offset + (long)sizeof(struct key_slot) > bytes) return 0;
  const struct key_slot* mine = (const struct key_slot*)((const char*)__builtin_thread_pointer() + offset);
  const void* value = pthread_getspecific(key->_key);
  if (!value || mine->data != value || mine->seq != states[key->_key].seq) return 0;
  if (at_exit(stop_in_place) != 0) return 0;
  runtime_.slot_seq = (uint32_t)states[key->_key].seq;
  __atomic_store_n(&runtime_.slot_offset, (int32_t)offset, __ATOMIC_RELAXED);
  in_place_found_ = 1;
  return 1;
}

/* pthread_getspecific(key->_key) for the calling thread. */
static inline const void* tss_get(const Py_tss_t* key) {
  const int32_t at = __atomic_load_n(&runtime_.slot_offset, __ATOMIC_RELAXED);
  if (__builtin_expect(at >= 0, 1)) {
    const __seg_fs struct key_slot* s = (const __seg_fs struct key_slot*)(uintptr_t)at;
    const void* data = s->data;
    if (!data) return NULL;
    if (__builtin_expect(s->seq == runtime_.slot_seq, 1)) return data;
  }
  return pthread_getspecific(key->_key); /* also clears a value a deleted key left */
}

int lst_py_reads_in_place(void) { return in_place_found_; }
#else
int lst_py_read_in_place(int (*at_exit)(void (*)(void))) {
  (void)at_exit;
  return 0;
}
static inline const void* tss_get(const Py_tss_t* key) { return pthread_getspecific(key->_key); }
int lst_py_reads_in_place(void) { return 0; }
#endif

static inline const PyThreadState* own_thread_state(void) {
  const _PyRuntimeState* runtime = runtime_.runtime;
  if (!runtime || _PyRuntimeState_GetFinalizing((_PyRuntimeState*)runtime)) return NULL;
#if PY_VERSION_HEX < 0x030C0000
  if (!runtime->gilstate.autoInterpreterState) return NULL;
#endif
  const Py_tss_t* key = tss_key(runtime);
  return key->_is_initialized ? (const PyThreadState*)tss_get(key) : NULL;
}

const void* lst_py_own_thread_state(void) { return own_thread_state(); }

static inline _PyInterpreterFrame* own_frame(void) {
  const PyThreadState* tstate = own_thread_state();
  return tstate ? current(tstate) : NULL;
}

struct lst_py_innermost lst_py_own_instr(void) {
  _PyInterpreterFrame* f = own_frame();
  struct lst_py_innermost at = {f ? instr_of(f) : NULL, f};
  return at;
}

int lst_py_recent_site(void* writer, uint64_t* out) {
  _PyInterpreterFrame* f = own_frame();
  /* A null pointer (no frame, no thread state, finalizing) is in no entry that has a site. */
  const uint64_t site = f ? recent(instr_of(f)) : 0;
  if (__builtin_expect(site != 0, 1)) {
    out[0] = site;
    return 1;
  }
  return lst_py_site_missed(writer, out);
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

int lst_py_read_in_place(int (*at_exit)(void (*)(void))) {
  (void)at_exit;
  return 0;
}

int lst_py_reads_in_place(void) { return 0; }

const void* lst_py_own_thread_state(void) { return NULL; }

struct lst_py_innermost lst_py_own_instr(void) {
  struct lst_py_innermost none = {NULL, NULL};
  return none;
}

int lst_py_recent_site(void* writer, uint64_t* out) { return lst_py_site_missed(writer, out); }

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
