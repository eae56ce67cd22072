/* One intercepted path in a loop, for instruction counts under callgrind (path_instructions.sh): each
 * path has a traced loop (MPI_* through the preloaded tracer) and its PMPI_* twin, and callgrind
 * counts the instructions inside each loop function alone (--toggle-collect).
 *   path_loop PATH N      PATH: allreduce | iallreduce_wait | iallreduce_test | send_recv | sendrecv |
 *                               isend_irecv_waitall | annotate | rt_collective | rt_collective_named |
 *                               rt_collective_long | rt_collective_moving | rt_collective_batch |
 *                               allreduce_8deep_fp |
 *                               allreduce_8deep_nofp | floor | allreduce_cold | send_recv_cold | floor_cold
 *   allreduce_8deep_fp: MPI_Allreduce 8 frames deep in code built with frame pointers (call_chain.c),
 *   what LOCKSTEP_TRACE_STACK=8 walks; allreduce_8deep_nofp: the same code built without them.
 *   floor: PMPI_Allreduce with the least a record of a blocking call takes, done here without the
 *   tracer (floor_enter, floor_return): what the tracer's paths compare with on the same machine.
 *   allreduce_cold, send_recv_cold, floor_cold: the same with other work between the calls, in both
 *   loops (evict_l1): 48 KiB of code run and 48 KiB of data written, more than a level-1 cache holds,
 *   as a program's own code or an interpreter does between its MPI calls; the tracer's code and data
 *   come back from the level-2 cache on every call.
 *   path_loop PATH N ROUNDS   times ROUNDS alternating rounds of N iterations of each loop instead
 *   (thread CPU time, path_time.sh) and prints the added ns per iteration: the fastest traced round
 *   minus the fastest PMPI_ round, then the median of the rounds' differences. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lockstep/annotate.h"

/* The tracer's clock: the TSC on x86-64, the virtual counter on AArch64. */
static inline uint64_t floor_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  uint64_t t;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(t));
  return t;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}
/* The least a traced blocking call writes: a TSC reading, a slot taken with one locked add on a
 * shared counter, a 64-byte record stored into a 4 MiB ring (the next slots prefetched) and published
 * with a release store of its first word; at the return a second TSC reading, the duration and the
 * word stored again. Out of line, as the tracer's calls are. */
#define FLOOR_SLOTS 65536u
static unsigned char g_floor_ring[FLOOR_SLOTS * 64u] __attribute__((aligned(64)));
static uint64_t g_floor_next;
struct floor_pending {
  unsigned char* rec;
  uint64_t t0;
};
__attribute__((noinline)) static struct floor_pending floor_enter(uint64_t a, uint64_t b, uint64_t c) {
  const uint64_t t0 = floor_ticks();
  const uint64_t n = __atomic_fetch_add(&g_floor_next, 1, __ATOMIC_RELAXED);
  unsigned char* rec = g_floor_ring + (n & (FLOOR_SLOTS - 1u)) * 64u;
  __builtin_prefetch(g_floor_ring + ((n + 8u) & (FLOOR_SLOTS - 1u)) * 64u, 1, 3);
  const uint64_t words[8] = {0, a, b, c, n, t0, a ^ b, c ^ n};
  memcpy(rec, words, sizeof words);
  __atomic_store_n((uint32_t*)rec, 1u, __ATOMIC_RELEASE);
  struct floor_pending p = {rec, t0};
  return p;
}
__attribute__((noinline)) static void floor_return(struct floor_pending p) {
  const uint64_t t = floor_ticks();
  const uint32_t ticks = (uint32_t)(t - p.t0);
  memcpy(p.rec + 60, &ticks, sizeof ticks);
  __atomic_store_n((uint32_t*)p.rec, 2u, __ATOMIC_RELEASE);
}

#define LOOP(name, body)                           \
  __attribute__((noinline)) void name(long n) {    \
    int x = 1, y = 0;                              \
    for (long i = 0; i < n; ++i) {                 \
      body;                                        \
      __asm__ volatile("" : : "r"(&y) : "memory"); \
    }                                              \
  }

LOOP(traced_allreduce, MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF))
LOOP(pmpi_allreduce, PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF))
LOOP(traced_iallreduce_wait, {
  MPI_Request r;
  MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
})
LOOP(pmpi_iallreduce_wait, {
  MPI_Request r;
  PMPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
  PMPI_Wait(&r, MPI_STATUS_IGNORE);
})
LOOP(traced_iallreduce_test, {
  MPI_Request r;
  int flag = 0;
  MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
  while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
})
LOOP(pmpi_iallreduce_test, {
  MPI_Request r;
  int flag = 0;
  PMPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
  while (!flag) PMPI_Test(&r, &flag, MPI_STATUS_IGNORE);
})
/* Other work between two calls: 48 KiB of straight-line code (12,288 four-byte no-ops) and a store
 * into each line of 48 KiB of data, more than the level-1 instruction and data caches of the x86-64
 * and AArch64 cores this runs on (32 KiB or 48 KiB each). Elsewhere only the data part. */
static unsigned char g_evict[48 * 1024] __attribute__((aligned(64)));
__attribute__((noinline)) static void evict_l1(void) {
  for (unsigned k = 0; k < sizeof g_evict; k += 64) g_evict[k]++;
#if defined(__x86_64__)
  __asm__ volatile(".rept 12288\n\tnopl 0(%%rax)\n\t.endr" : : : "memory");
#elif defined(__aarch64__)
  __asm__ volatile(".rept 12288\n\tnop\n\t.endr" : : : "memory");
#endif
}
LOOP(traced_allreduce_cold, {
  evict_l1();
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
})
LOOP(pmpi_allreduce_cold, {
  evict_l1();
  PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
})
LOOP(traced_send_recv_cold, {
  evict_l1();
  MPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
  evict_l1();
  MPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
})
LOOP(pmpi_send_recv_cold, {
  evict_l1();
  PMPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
  evict_l1();
  PMPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
})
LOOP(traced_floor_cold, {
  evict_l1();
  const struct floor_pending p = floor_enter((uintptr_t)&x, (uintptr_t)&y, 1);
  PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  floor_return(p);
})
LOOP(traced_send_recv, {
  MPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
  MPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
})
LOOP(pmpi_send_recv, {
  PMPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
  PMPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
})
LOOP(traced_floor, {
  const struct floor_pending p = floor_enter((uintptr_t)&x, (uintptr_t)&y, 1);
  PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  floor_return(p);
})
LOOP(traced_sendrecv,
     MPI_Sendrecv(&x, 1, MPI_INT, 0, 7, &y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE))
LOOP(pmpi_sendrecv,
     PMPI_Sendrecv(&x, 1, MPI_INT, 0, 7, &y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE))
LOOP(traced_isend_irecv_waitall, {
  MPI_Request r[2];
  MPI_Irecv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[0]);
  MPI_Isend(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
})
LOOP(pmpi_isend_irecv_waitall, {
  MPI_Request r[2];
  PMPI_Irecv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[0]);
  PMPI_Isend(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[1]);
  PMPI_Waitall(2, r, MPI_STATUSES_IGNORE);
})
/* The annotation API has no untraced twin: its baseline is the empty loop. */
LOOP(traced_annotate, LOCKSTEP_ANNOTATE("step"))
LOOP(pmpi_annotate, (void)x)
LOOP(traced_rt_collective, {
  if (lockstep_rt_collective_begin && lockstep_rt_collective_end)
    lockstep_rt_collective_end(lockstep_rt_collective_begin(7, 3, NULL, 1, 0, 4, 1, -1), 1);
})
LOOP(pmpi_rt_collective, (void)x)
/* The same with a tensor name, as a runtime passes one: a short one, and one as long as the names of
 * Horovod's gradient ops (which the tracer cannot keep a copy of in its per-thread cache). */
static const char kShortTensor[] = "grad/dense0/kernel";
static const char kLongTensor[] = "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1_0";
LOOP(traced_rt_collective_named, {
  if (lockstep_rt_collective_begin && lockstep_rt_collective_end)
    lockstep_rt_collective_end(lockstep_rt_collective_begin(7, 3, kShortTensor, 1, 0, 4, 1, -1), 1);
})
LOOP(traced_rt_collective_long, {
  if (lockstep_rt_collective_begin && lockstep_rt_collective_end)
    lockstep_rt_collective_end(lockstep_rt_collective_begin(7, 3, kLongTensor, 1, 0, 4, 1, -1), 1);
})
LOOP(pmpi_rt_collective_named, (void)x)
LOOP(pmpi_rt_collective_long, (void)x)
/* Long names at a new address on most calls, as a runtime that builds each step's request afresh passes
 * them: 16 names in 64 buffers (filled by main), taken in turn; the twin takes them in turn too. */
static char moving_names[64][96];
LOOP(traced_rt_collective_moving, {
  if (lockstep_rt_collective_begin && lockstep_rt_collective_end)
    lockstep_rt_collective_end(
        lockstep_rt_collective_begin(7, 3, moving_names[(unsigned long)i & 63], 1, 0, 4, 1, -1), 1);
})
LOOP(pmpi_rt_collective_moving, y += moving_names[(unsigned long)i & 63][0])
/* As a runtime submits a step's requests and completes them later (the bundled runtime ends them on its
 * background thread): four begun, then the four ended in order, each end for a request other than the
 * thread's last one begun but the fourth. Four collectives per iteration. */
static const char* const kBatchTensors[4] = {"grad/dense0/kernel", "grad/dense0/bias", "grad/dense1/kernel",
                                             "grad/dense1/bias"};
LOOP(traced_rt_collective_batch, {
  if (lockstep_rt_collective_begin && lockstep_rt_collective_end) {
    uint64_t t[4];
    for (int k = 0; k < 4; ++k) t[k] = lockstep_rt_collective_begin(7, 3, kBatchTensors[k], 1, 0, 4, 1, -1);
    for (int k = 0; k < 4; ++k) lockstep_rt_collective_end(t[k], 1);
  }
})
LOOP(pmpi_rt_collective_batch, (void)x)
int fp_allreduce(int traced);
LOOP(traced_allreduce_8deep_fp, y += fp_allreduce(1))
LOOP(pmpi_allreduce_8deep_fp, y += fp_allreduce(0))
int nofp_allreduce(int traced);
LOOP(traced_allreduce_8deep_nofp, y += nofp_allreduce(1))
LOOP(pmpi_allreduce_8deep_nofp, y += nofp_allreduce(0))

struct path {
  const char* name;
  void (*traced)(long);
  void (*pmpi)(long);
};
static const struct path kPaths[] = {
    {"allreduce", traced_allreduce, pmpi_allreduce},
    {"iallreduce_wait", traced_iallreduce_wait, pmpi_iallreduce_wait},
    {"iallreduce_test", traced_iallreduce_test, pmpi_iallreduce_test},
    {"send_recv", traced_send_recv, pmpi_send_recv},
    {"sendrecv", traced_sendrecv, pmpi_sendrecv},
    {"isend_irecv_waitall", traced_isend_irecv_waitall, pmpi_isend_irecv_waitall},
    {"annotate", traced_annotate, pmpi_annotate},
    {"rt_collective", traced_rt_collective, pmpi_rt_collective},
    {"rt_collective_named", traced_rt_collective_named, pmpi_rt_collective_named},
    {"rt_collective_long", traced_rt_collective_long, pmpi_rt_collective_long},
    {"rt_collective_moving", traced_rt_collective_moving, pmpi_rt_collective_moving},
    {"rt_collective_batch", traced_rt_collective_batch, pmpi_rt_collective_batch},
    {"allreduce_8deep_fp", traced_allreduce_8deep_fp, pmpi_allreduce_8deep_fp},
    {"allreduce_8deep_nofp", traced_allreduce_8deep_nofp, pmpi_allreduce_8deep_nofp},
    {"floor", traced_floor, pmpi_allreduce},
    {"allreduce_cold", traced_allreduce_cold, pmpi_allreduce_cold},
    {"send_recv_cold", traced_send_recv_cold, pmpi_send_recv_cold},
    {"floor_cold", traced_floor_cold, pmpi_allreduce_cold},
};

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
/* Thread CPU time leaves out the time the thread waits for a core on a shared machine; the fastest
 * round is the one the other load disturbed least. */
static void time_rounds(const struct path* p, long n, int rounds) {
  double best_t = 1e300, best_b = 1e300;
  double* diff = malloc(sizeof(double) * (size_t)rounds);
  if (!diff) return;
  for (int r = 0; r < rounds; ++r) {
    double t0 = cpu_ns();
    p->traced(n);
    double t1 = cpu_ns();
    p->pmpi(n);
    double t2 = cpu_ns();
    const double t = (t1 - t0) / (double)n, b = (t2 - t1) / (double)n;
    if (t < best_t) best_t = t;
    if (b < best_b) best_b = b;
    diff[r] = t - b;
  }
  qsort(diff, (size_t)rounds, sizeof(double), by_value);
  printf("%.1f %.1f\n", best_t - best_b, diff[rounds / 2]);
  free(diff);
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: path_loop PATH N [ROUNDS]\n");
    return 2;
  }
  const long n = strtol(argv[2], NULL, 10);
  const int rounds = argc == 4 ? (int)strtol(argv[3], NULL, 10) : 0;
  MPI_Init(&argc, &argv);
  if (lockstep_rt_process_set) {
    const int32_t me = 0;
    lockstep_rt_process_set(7, "self", &me, 1, 0);
  }
  for (int k = 0; k < 64; ++k)
    snprintf(moving_names[k], sizeof moving_names[k], "%s_%d", kLongTensor, k % 16);
  int rc = 2;
  for (size_t i = 0; i < sizeof kPaths / sizeof kPaths[0]; ++i)
    if (strcmp(argv[1], kPaths[i].name) == 0) {
      /* Warm both loops (first-use lookups, first file pages) before the counted runs. */
      kPaths[i].traced(1000);
      kPaths[i].pmpi(1000);
      if (rounds > 0) {
        time_rounds(&kPaths[i], n, rounds);
      } else {
        kPaths[i].traced(n);
        kPaths[i].pmpi(n);
      }
      rc = 0;
    }
  if (rc) fprintf(stderr, "path_loop: unknown path %s\n", argv[1]);
  MPI_Finalize();
  return rc;
}
