/* An MPI program that embeds Python twice: Py_Initialize, Python calls into MPI (through ctypes, which
   releases the GIL as mpi4py does), Py_FinalizeEx; MPI calls from C alone; then a second interpreter
   in the same process. The tracer reads a thread's Python frames through the interpreter's
   thread-specific key, in place where it can (python_frame.c), and must stop doing so when the first
   interpreter finalizes and deletes that key: run_embed.sh checks the call sites of every round.
   A second thread makes the case that matters: a daemon Python thread of the first interpreter that
   is inside C when it finalizes keeps, in its slot of the deleted key, the thread state finalization
   freed. It calls MPI again, from C alone, once the second interpreter (whose key takes the same
   index) runs: those calls must carry their C call site, not a Python line read through the freed
   state, and must not crash.
     embed_reinit ROUND_CALLS */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORTED __attribute__((visibility("default"))) /* found by ctypes (the program has -rdynamic) */

static MPI_Comm g_own; /* the daemon thread's communicator, so that the two threads never share one */
static int g_calls;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_stage; /* 1: the daemon's first call is made; 2: go on; 3: its later calls are made */

static void set_stage(int s) {
  pthread_mutex_lock(&g_lock);
  g_stage = s;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

static void wait_stage(int s) {
  pthread_mutex_lock(&g_lock);
  while (g_stage < s) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
}

static int allreduce_on(MPI_Comm comm) {
  int in = 1, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
  return out;
}

EXPORTED int lst_test_allreduce(void) { return allreduce_on(MPI_COMM_WORLD); }

/* The daemon thread's body, entered from Python: one call with its Python frame, then, once told to,
   calls from C alone; it never returns to the interpreter that is gone. */
EXPORTED void lst_test_daemon(void) {
  allreduce_on(g_own);
  set_stage(1);
  wait_stage(2);
  for (int i = 0; i < g_calls; ++i) allreduce_on(g_own);
  set_stage(3);
  for (;;) pause();
}

static int python_round(int calls, int with_daemon) {
  char code[1024];
  snprintf(code, sizeof code,
           "import ctypes, threading\n"
           "lib = ctypes.CDLL(None)\n"
           "if %d:\n"
           "    threading.Thread(target=lib.lst_test_daemon, daemon=True).start()  # line 4: the daemon's\n"
           "for _ in range(%d):\n"
           "    lib.lst_test_allreduce()  # line 6: the call site of every Python round\n",
           with_daemon, calls);
  Py_Initialize();
  const int rc = PyRun_SimpleString(code);
  if (with_daemon) {
    /* Before the finalization, as it must be; without the GIL, which the tracer takes to read the
       daemon's first call site through the C API. */
    PyThreadState* saved = PyEval_SaveThread();
    wait_stage(1);
    PyEval_RestoreThread(saved);
  }
  return Py_FinalizeEx() < 0 || rc != 0;
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "embed_reinit: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_dup(MPI_COMM_SELF, &g_own);
  g_calls = argc > 1 ? atoi(argv[1]) : 20;
  int bad = python_round(g_calls, 1);
  for (int i = 0; i < g_calls; ++i) lst_test_allreduce(); /* between the interpreters: C call sites */
  Py_Initialize();                                        /* the second interpreter, its key created */
  set_stage(2);
  PyThreadState* saved = PyEval_SaveThread(); /* a tracer that took the daemon for a Python thread: */
  wait_stage(3);                              /* no hang on the GIL */
  PyEval_RestoreThread(saved);
  bad |= PyRun_SimpleString(
             "import ctypes\n"
             "lib = ctypes.CDLL(None)\n"
             "for _ in range(5):\n"
             "    lib.lst_test_allreduce()  # line 4 of the second interpreter's code\n") != 0;
  bad |= Py_FinalizeEx() < 0;
  MPI_Comm_free(&g_own);
  MPI_Finalize();
  return bad;
}
