/* The calling thread's Python frames read straight from the interpreter's frame stack, without the GIL:
   python.cc's fast path. Built against the Python headers found at build time (python_frame.c); used
   only in a process that runs that same Python major.minor, and only after python.cc has checked it
   against CPython's own frame API. */
#pragma once

#include <stdint.h>

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

/* From here on, read the thread states below from each thread's own slot of the interpreter's key, in
   place, where this C library's layout allows it and a probe on the calling thread finds it; `at_exit`
   is the interpreter's Py_AtExit, which must take the function that stops the reading when the
   interpreter finalizes. With the GIL held (Py_AtExit changes the interpreter's state). 1 when on. */
int lst_py_read_in_place(int (*at_exit)(void (*)(void)));

/* 1 once lst_py_read_in_place turned the reading in place on (it stays 1 after the interpreter's
   finalization stopped it); 0 while every thread state below takes a pthread_getspecific call. */
int lst_py_reads_in_place(void);

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

/* The common call from Python, one frame: where the calling thread's innermost instruction pointer is
   among its recent sites (lst_py_remember), that site in out[0] and 1; otherwise, or without the
   layout, what lst_py_site_missed(writer, out) returns (python.cc, which reads the frame in full). */
int lst_py_recent_site(void* writer, uint64_t* out);
int lst_py_site_missed(void* writer, uint64_t* out);

/* The site kept for an instruction pointer among the calling thread's last four (0: none), and one
   more kept, in place of the oldest. */
uint64_t lst_py_recent(const void* instr);
void lst_py_remember(const void* instr, uint64_t site);

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
