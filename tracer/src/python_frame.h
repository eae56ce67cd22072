/* The calling thread's Python frames read straight from the interpreter's frame stack, without the GIL:
   python.cc's fast path. Built against the Python headers found at build time (python_frame.c); used
   only in a process that runs that same Python major.minor, and only after python.cc has checked it
   against CPython's own frame API. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

struct lst_py_frame {
  const void* code; /* the frame's code object (borrowed) */
  int lasti;        /* bytes, as PyFrame_GetLasti counts them; -1 before the first instruction */
  /* The frame's instruction pointer, where it is at or past the code's first traceable instruction
     (the frame is then complete whoever owns it); null otherwise. It points into the code object's
     own bytecode, so while that code object lives it names this (code, lasti) and nothing else. */
  const void* instr;
};

/* The PY_VERSION_HEX major.minor (0x030b0000 for 3.11) whose frame layout this library reads; 0 when
   it was built without usable Python headers. */
unsigned long lst_py_layout_version(void);

/* The running interpreter's runtime state (its _PyRuntime symbol), before the calls below. */
void lst_py_bind(void* runtime);

/* The calling thread's own thread state, as PyGILState_GetThisThreadState finds it, without a call
   into the interpreter; null for a thread Python never saw, or once the interpreter is finalizing. */
const void* lst_py_own_thread_state(void);

/* The calling thread's innermost frame, complete or not, and its instruction pointer (returned in two
   registers); both null where lst_py_own_thread_state() is, or the thread runs no Python frame. An
   instruction pointer equal to a lst_py_frame.instr read earlier, with that frame's code object alive,
   is that frame's (code, lasti), complete. */
struct lst_py_innermost {
  const void* instr;
  const void* frame; /* for lst_py_read_frames_from */
};
struct lst_py_innermost lst_py_own_instr(void);

/* lst_py_read_own_frames from `frame` (lst_py_own_instr's, in the same call) outward: the calling
   thread's frames without looking its thread state up again. */
int lst_py_read_frames_from(const void* frame, struct lst_py_frame* out, int max);

/* Up to `max` frames of the calling thread (its own thread state), innermost first, skipping the
   frames CPython's API skips (incomplete ones); -1 where lst_py_own_thread_state() is null. No other
   thread changes a thread's frame stack while that thread is inside a call. */
int lst_py_read_own_frames(struct lst_py_frame* out, int max);

#ifdef __cplusplus
}
#endif
