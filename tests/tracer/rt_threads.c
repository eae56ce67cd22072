/* Runtime collectives from several threads on one process set: the set's positions must stay one per
 * call, none twice, none skipped, while the set passes from one thread's ownership to all threads'
 * (session.cc, next_rt_seq). For each of SETS sets: the main thread first makes CALLS collectives on it
 * alone (so it owns the set), then THREADS more threads join it at once and each makes CALLS more, the
 * first of them taking the set over while the owner is counting. Every set after the first is also
 * first used by two threads at the same moment, racing for the ownership. Call i of thread t on set s
 * has count (s * 16 + t) * 100000 + i, so tests/tracer/rt_threads.sh can tell every call apart.
 *   rt_threads SETS THREADS CALLS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lockstep/annotate.h"

static int g_sets, g_threads, g_calls;
static pthread_barrier_t g_start, g_done;

static void calls(uint64_t set, int thread) {
  for (int i = 0; i < g_calls; ++i) {
    const uint64_t count = ((uint64_t)set * 16 + (uint64_t)thread) * 100000 + (uint64_t)i;
    lockstep_rt_collective_end(lockstep_rt_collective_begin(100 + set, 3, "grad", count, 0, 4, 1, -1), 1);
  }
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
  if (argc != 4) {
    fprintf(stderr, "usage: rt_threads SETS THREADS CALLS\n");
    return 2;
  }
  g_sets = atoi(argv[1]);
  g_threads = atoi(argv[2]);
  g_calls = atoi(argv[3]);
  if (g_sets < 1 || g_sets > 1000 || g_threads < 1 || g_threads > 15 || g_calls < 1 || g_calls > 99999) {
    fprintf(stderr, "rt_threads: SETS 1-1000, THREADS 1-15, CALLS 1-99999\n");
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
  printf("%d %d %d\n", g_sets, g_threads, g_calls);
  return 0;
}
