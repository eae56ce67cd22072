/* Runtime collectives from several threads on one process set: the set's positions must stay one per
 * call, none twice, none skipped, while the set passes from one thread's ownership to all threads'
 * (session.cc, next_rt_seq). For each of SETS sets: the main thread first makes CALLS collectives on it
 * alone (so it owns the set), then THREADS more threads join it at once and each makes CALLS more, the
 * first of them taking the set over while the owner is counting. Every set after the first is also
 * first used by two threads at the same moment, racing for the ownership. Call i of thread t on set s
 * has count (s * 16 + t) * 100000 + i, so tests/tracer/rt_threads.sh can tell every call apart.
 * With `fork`, the main thread then forks while thread 13 counts on set 0; in the child (a trace of its
 * own), thread 14 (the forking one) and a new thread 15 make CALLS calls each on set 0, taking it over
 * from an owner the child does not have. Just before the fork, the main thread begins a collective on
 * set "straddle" that the parent never ends; the child, once its first call has opened its own trace,
 * ends it: the parent's record must stay entered (the child never writes into the parent's file, and
 * its trace has no such record). Before that, four collectives on set "handoff" are begun by the main
 * thread and ended 20 ms later by another, as a runtime's background thread ends them.
 *   rt_threads SETS THREADS CALLS [fork] */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockstep/annotate.h"

static int g_sets, g_threads, g_calls;
static pthread_barrier_t g_start, g_done;

static void calls(uint64_t set, int thread) {
  for (int i = 0; i < g_calls; ++i) {
    const uint64_t count = ((uint64_t)set * 16 + (uint64_t)thread) * 100000 + (uint64_t)i;
    lockstep_rt_collective_end(lockstep_rt_collective_begin(100 + set, 3, "grad", count, 0, 4, 1, -1), 1);
  }
}

static uint64_t g_handed[4];

static void* end_later(void* arg) {
  (void)arg;
  usleep(20000);
  for (int k = 0; k < 4; ++k) lockstep_rt_collective_end(g_handed[k], 1);
  return NULL;
}

static volatile int g_progress;

static void* counter(void* arg) {
  const int thread = (int)(intptr_t)arg;
  for (int i = 0; i < g_calls; ++i) {
    const uint64_t count = (uint64_t)thread * 100000 + (uint64_t)i;
    lockstep_rt_collective_end(lockstep_rt_collective_begin(100, 3, "grad", count, 0, 4, 1, -1), 1);
    __atomic_store_n(&g_progress, i, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* Forks while thread 13 counts on set 0; the child's two threads count on it too. 0 when the child
 * exited 0 within 60 s. */
static int fork_while_counting(void) {
  pthread_t busy;
  pthread_create(&busy, NULL, counter, (void*)(intptr_t)13);
  while (__atomic_load_n(&g_progress, __ATOMIC_RELAXED) < g_calls / 4) sched_yield();
  static const int32_t members[1] = {0};
  lockstep_rt_process_set(98, "straddle", members, 1, 0);
  const uint64_t straddle = lockstep_rt_collective_begin(98, 3, "grad", 7, 0, 4, 1, -1);
  const pid_t child = fork();
  if (child == 0) {
    lockstep_annotate("child");  // opens the child's trace
    lockstep_rt_collective_end(straddle, 1);
    pthread_t other;
    pthread_create(&other, NULL, counter, (void*)(intptr_t)15);
    counter((void*)(intptr_t)14);
    pthread_join(other, NULL);
    exit(0);
  }
  pthread_join(busy, NULL);
  if (child < 0) return 1;
  for (int waited = 0; waited < 600; ++waited) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
      fprintf(stderr, "rt_threads: the forked child %s %d\n",
              WIFSIGNALED(status) ? "died of signal" : "exited",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      return 1;
    }
    usleep(100000);
  }
  fprintf(stderr, "rt_threads: the forked child did not finish in 60 s\n");
  kill(child, SIGKILL);
  return 1;
}

static void* worker(void* arg) {
  const int thread = (int)(intptr_t)arg;
  for (int s = 0; s < g_sets; ++s) {
    pthread_barrier_wait(&g_start);
    calls((uint64_t)s, thread);
    pthread_barrier_wait(&g_done);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int with_fork = argc == 5 && strcmp(argv[4], "fork") == 0;
  if (argc != 4 && !with_fork) {
    fprintf(stderr, "usage: rt_threads SETS THREADS CALLS [fork]\n");
    return 2;
  }
  g_sets = atoi(argv[1]);
  g_threads = atoi(argv[2]);
  g_calls = atoi(argv[3]);
  if (g_sets < 1 || g_sets > 1000 || g_threads < 1 || g_threads > 12 || g_calls < 4 || g_calls > 99999) {
    fprintf(stderr, "rt_threads: SETS 1-1000, THREADS 1-12, CALLS 4-99999\n");
    return 2;
  }
  if (!lockstep_rt_collective_begin || !lockstep_rt_collective_end || !lockstep_rt_process_set) {
    fprintf(stderr, "rt_threads: run it with the tracer preloaded\n");
    return 2;
  }
  const int32_t members[1] = {0};
  for (int s = 0; s < g_sets; ++s) {
    char name[32];
    snprintf(name, sizeof name, "set.%d", s);
    lockstep_rt_process_set(100 + (uint64_t)s, name, members, 1, 0);
  }
  pthread_barrier_init(&g_start, NULL, (unsigned)g_threads + 1);
  pthread_barrier_init(&g_done, NULL, (unsigned)g_threads + 1);
  pthread_t* pool = malloc(sizeof(pthread_t) * (size_t)g_threads);
  for (int t = 0; t < g_threads; ++t) pthread_create(&pool[t], NULL, worker, (void*)(intptr_t)(t + 1));
  for (int s = 0; s < g_sets; ++s) {
    /* Sets after the first: the main thread and thread 1's first call race for the ownership, since
     * the main thread's calls on the set start when the others' do. */
    if (s == 0) calls((uint64_t)s, 0);
    pthread_barrier_wait(&g_start);
    if (s != 0) calls((uint64_t)s, 0);
    pthread_barrier_wait(&g_done);
  }
  for (int t = 0; t < g_threads; ++t) pthread_join(pool[t], NULL);
  free(pool);
  lockstep_rt_process_set(99, "handoff", members, 1, 0);
  for (int k = 0; k < 4; ++k)
    g_handed[k] = lockstep_rt_collective_begin(99, 3, "grad", (uint64_t)k, 0, 4, 1, -1);
  pthread_t ender;
  pthread_create(&ender, NULL, end_later, NULL);
  pthread_join(ender, NULL);
  if (with_fork && fork_while_counting() != 0) return 1;
  printf("%d %d %d\n", g_sets, g_threads, g_calls);
  return 0;
}
