// The tracer's process-wide state (session.h): opens the trace lazily from the environment, keeps the
// communicator registry, turns one intercepted call into one record, and marks how the process ended.
// long file: the record path (clock, reservation, registry lookup) stays in one translation unit so it
// inlines into the per-call entry points below; the library is built without LTO.
#include "session.h"

#include "lockstep/env.h"
#include "lockstep/format/fnv.h"
#include "lockstep/format/record_check.h"
#include "python.h"
#include "signals.h"
#include "stack.h"
#include "tsc_use.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

// glibc 2.35 and later: where each thread's restartable-sequences area lies (weak: older glibc has
// neither, and a hypervisor clock then keeps every timestamp a clock_gettime call).
extern "C" {
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
}

// The record path's hot code starts on a page of its own. The linker puts every object's hot code (the
// profile-guided build's .text.hot, this object's first) after every object's cold parts, so without
// this its start moved with the size of code no call runs, and with it which level-1 instruction cache
// sets the record path shares with the program's own code (docs/tracer.md, "One layout for every
// build"). A 4 KiB alignment of this object's .text.hot fixes that offset; the label marks it for
// tests/tracer/profile_feedback.sh.
__asm__(".section .text.hot,\"ax\",@progbits\n\t.p2align 12\nlockstep_hot_text:\n\t.previous");

namespace lockstep::trace {
namespace {

// ---- configuration from the environment -------------------------------------------------------

constexpr int kMaxFrames = 64;  // LOCKSTEP_TRACE_STACK's ceiling

// Whole cache lines (alignas pads its size), so that the hot globals after it in lockstep_hot start on a
// line of their own wherever the section lands (tests/tracer/hot_layout.py).
struct alignas(64) Config {
  const char* dir = nullptr;
  int32_t rank_hint = LST_NONE;
  int32_t size_hint = LST_NONE;  // WORLD_SIZE, with RANK
  uint64_t ring = 0;
  int stack_frames = 0;       // LOCKSTEP_TRACE_STACK: frames kept in all, the caller included
  bool stack_stats = false;   // LOCKSTEP_TRACE_STACK_STATS=1: say at exit which unwinder made the stacks
  bool python_stats = false;  // LOCKSTEP_TRACE_PYTHON_STATS=1: say at exit how Python sites were read
  char job_id[64] = {};
  char cmdline[1024] = {};
};
LOCKSTEP_HOT_DATA Config g_config;

int32_t env_int(const char* name, int32_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 0x7fffffff) return fallback;
  return static_cast<int32_t>(x);
}

void read_cmdline(char* out, size_t len) {
  int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = ::read(fd, out, len - 1);
  ::close(fd);
  if (n <= 0) return;
  // argv is NUL separated; the header wants it joined by spaces.
  while (n > 0 && out[n - 1] == '\0') --n;
  for (ssize_t i = 0; i < n; ++i)
    if (out[i] == '\0') out[i] = ' ';
  out[n] = '\0';
}

void load_config() {
  Config& c = g_config;
  c.dir = env::get(env::Var::kTraceDir);
  // torchrun (and torch.distributed's other launchers) give each worker RANK and WORLD_SIZE; they come
  // first, since a worker inherits its launcher's own variables too (SLURM_PROCID of the srun task that
  // started torchrun is its node's, the same for every worker there). A job without MPI has nothing
  // else to name its ranks by; MPI_Init, where there is one, sets the real rank.
  c.rank_hint = env_int("RANK", LST_NONE);
  c.size_hint = env_int("WORLD_SIZE", LST_NONE);
  if (c.rank_hint == LST_NONE || c.size_hint == LST_NONE || c.rank_hint >= c.size_hint) {
    c.rank_hint = c.size_hint = LST_NONE;
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
      c.rank_hint = env_int(name, LST_NONE);
      if (c.rank_hint != LST_NONE) break;
    }
  }
  c.ring = static_cast<uint64_t>(env_int(env::name(env::Var::kTraceRing), 0));
  c.stack_frames = env_int(env::name(env::Var::kTraceStack), 0);
  if (c.stack_frames > kMaxFrames) c.stack_frames = kMaxFrames;
  if (const char* u = env::get(env::Var::kTraceStackUnwind)) {
    if (std::strcmp(u, "fp") == 0) set_unwind_mode(Unwind::kFramePointers);
    if (std::strcmp(u, "dwarf") == 0) set_unwind_mode(Unwind::kDwarf);
  }
  c.stack_stats = env::on(env::Var::kTraceStackStats);
  count_stacks(c.stack_stats);
  c.python_stats = env::on(env::Var::kTracePythonStats);
  python_stats(c.python_stats);
  const char* job = nullptr;
  for (const char* name : {env::name(env::Var::kJobId), "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                           "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      job = v;
      break;
    }
  }
  if (job) {
    std::snprintf(c.job_id, sizeof c.job_id, "%s", job);
  } else {
    // No launcher told us: processes started by the same parent are taken as one job.
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    std::snprintf(c.job_id, sizeof c.job_id, "ppid-%d@%s", static_cast<int>(getppid()), host);
  }
  read_cmdline(c.cmdline, sizeof c.cmdline);
}

// ---- the writer --------------------------------------------------------------------------------

enum : int { kUntried = 0, kOpen = 1, kOff = 2 };
std::atomic<int> g_state{kUntried};
std::atomic<pid_t> g_owner{0};  // the process that opened the writer (fork detection)
// This process's pid: getpid() is a system call, too slow for every record; refreshed after fork.
std::atomic<pid_t> g_pid{0};
std::mutex g_open_mutex;
uint64_t g_load_ns = 0;
// Never destroyed: other threads may still record while exit handlers run.
alignas(format::Writer) unsigned char g_writer_storage[sizeof(format::Writer)];
format::Writer* g_writer = nullptr;

void write_process_start(format::Writer* w) noexcept;

// ---- the record path's clock --------------------------------------------------------------------

// CLOCK_MONOTONIC through the vDSO costs about as much as the rest of a record, so the record path
// reads the TSC once per timestamp and turns it into CLOCK_MONOTONIC nanoseconds itself: each thread
// keeps an anchor (a TSC reading and the clock at that moment) and takes a fresh one every
// kReanchorNs, and the rate is refined from the long interval between two anchors. Used where the
// kernel itself keeps time with the TSC (clocksource "tsc": invariant and synchronised across CPUs),
// and where it keeps time with a hypervisor's clock derived from the TSC (kvm-clock and the like,
// tsc_use.h): there nothing says the CPUs' TSCs agree, so an anchor also holds the CPU it was taken
// on, a thread anchors again when it finds itself on another CPU, and a duration is a TSC difference
// only when both ends were read on the anchor's CPU. Elsewhere, or with
// LOCKSTEP_TRACE_CLOCK=monotonic, every timestamp is a clock_gettime() call.
constexpr uint64_t kReanchorNs = 10'000'000;  // error between anchors: a few ns after the first interval
LOCKSTEP_HOT_DATA std::atomic<uint64_t> g_ns_per_tick_q32{0};  // 0: the TSC is not used
LOCKSTEP_HOT_DATA std::atomic<uint64_t> g_reanchor_ticks{0};
LOCKSTEP_HOT_DATA std::atomic<bool> g_tsc_per_cpu{false};  // TscUse::kPerCpu
// The thread's restartable-sequences area, from its thread pointer.
LOCKSTEP_HOT_DATA ptrdiff_t g_rseq_offset = 0;

inline uint64_t ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

inline uint64_t ticks_to_ns(uint64_t dt, uint64_t q) noexcept {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(dt) * q) >> 32);
}

// The CPU the calling thread runs on, as the kernel keeps it in the thread's restartable-sequences
// area (struct rseq's cpu_id, at byte 4): one load. Values from 0xFFFFFFFE up mean no registration.
inline uint32_t current_cpu() noexcept {
#if defined(__x86_64__)
  const char* area = static_cast<const char*>(__builtin_thread_pointer()) + g_rseq_offset;
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(area + 4), __ATOMIC_RELAXED);
#else
  return UINT32_MAX;
#endif
}
constexpr uint32_t kNoCpu = 0xFFFFFFFEu;

// The clocksource the kernel keeps time with ("" when unreadable).
std::string_view kernel_clocksource(char (&buf)[64]) noexcept {
  int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {};
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) --n;
  return std::string_view(buf, size_t(n));
}

// Whether this thread can read its CPU with current_cpu(): glibc (2.35 and later) registered its
// restartable-sequences area, and the kernel has written a CPU there.
bool thread_cpu_known() noexcept {
  if (!&__rseq_size || !&__rseq_offset || __rseq_size < 8) return false;
  g_rseq_offset = __rseq_offset;
  return current_cpu() < kNoCpu;
}

void calibrate_ticks() noexcept {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  const bool invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
  char buf[64];
  const TscUse use =
      choose_tsc_use(env::get(env::Var::kTraceClock), invariant, kernel_clocksource(buf), thread_cpu_known());
  if (use == TscUse::kNone) return;
  uint64_t t0 = now_ns(), c0 = ticks(), t1, c1;
  do {
    t1 = now_ns();
    c1 = ticks();
  } while (t1 - t0 < 200000);  // 0.2 ms: good to about 1e-4 until the first re-anchor refines it
  if (c1 <= c0) return;
  uint64_t q = ((t1 - t0) << 32) / (c1 - c0);
  if (const int32_t ppm = env_int(env::name(env::Var::kTraceTscSkew), 0); ppm > 0)
    q += q / 1'000'000 * static_cast<uint64_t>(ppm);
  if (q == 0) return;
  g_reanchor_ticks.store((kReanchorNs << 32) / q, std::memory_order_relaxed);
  g_tsc_per_cpu.store(use == TscUse::kPerCpu, std::memory_order_relaxed);
  g_ns_per_tick_q32.store(q, std::memory_order_release);
#endif
}

// A fresh anchor for reading t, taken on `cpu` (per-CPU anchors; kNoCpu: t may come from either of two
// CPUs, and this thread keeps no anchor until a reading is known to come from one).
__attribute__((noinline)) uint64_t reanchor(ThreadClock& c, uint64_t t, uint64_t q, uint32_t cpu) noexcept {
  const uint64_t real = now_ns();
  if (c.tsc0 != 0 && t > c.tsc0 && cpu == c.cpu) {
    const uint64_t estimate = c.ns0 + ticks_to_ns(t - c.tsc0, q);
    c.floor = estimate > c.floor ? estimate : c.floor;
    // The rate over this whole interval, from two clock readings ~10 ms apart.
    if (real > c.ns0 && t - c.tsc0 >= g_reanchor_ticks.load(std::memory_order_relaxed)) {
      const uint64_t refined = ((real - c.ns0) << 32) / (t - c.tsc0);
      if (refined > q - q / 256 && refined < q + q / 256)
        g_ns_per_tick_q32.store(refined, std::memory_order_relaxed);
    }
  } else {
    // Another CPU's TSC (or none): the last timestamp given is the floor instead.
    c.floor = c.last > c.floor ? c.last : c.floor;
  }
  c.ns0 = real;
  c.tsc0 = cpu < kNoCpu ? t : 0;
  c.cpu = cpu;
  c.last = real > c.floor ? real : c.floor;
  return c.last;
}

// A record timestamp (CLOCK_MONOTONIC ns) and the TSC reading it came from (0 without the TSC).
struct Stamp {
  uint64_t ns;
  uint64_t tsc;
};
// Inlined into each record path, as it was before the per-CPU branch made it too large for the compiler to.
__attribute__((always_inline)) inline Stamp stamp() noexcept {
  const uint64_t q = g_ns_per_tick_q32.load(std::memory_order_relaxed);
  if (__builtin_expect(q == 0, 0)) return {now_ns(), 0};
  ThreadClock& c = t_hot.clock;
  if (g_tsc_per_cpu.load(std::memory_order_relaxed)) {
    // The CPU before and after the reading: equal, the reading is that CPU's.
    const uint32_t cpu = current_cpu();
    const uint64_t t = ticks();
    const uint32_t after = current_cpu();
    const uint64_t d = t - c.tsc0;
    if (__builtin_expect(cpu != c.cpu || after != cpu || d > g_reanchor_ticks.load(std::memory_order_relaxed),
                         0))
      return after == cpu ? Stamp{reanchor(c, t, q, cpu), t} : Stamp{reanchor(c, t, q, kNoCpu), 0};
    uint64_t ns = c.ns0 + ticks_to_ns(d, q);
    ns = ns > c.floor ? ns : c.floor;
    c.last = ns;
    return {ns, t};
  }
  const uint64_t t = ticks();
  const uint64_t d = t - c.tsc0;  // huge when there is no anchor or the TSC went back: re-anchor
  if (__builtin_expect(d > g_reanchor_ticks.load(std::memory_order_relaxed), 0))
    return {reanchor(c, t, q, 0), t};
  const uint64_t ns = c.ns0 + ticks_to_ns(d, q);
  return {ns > c.floor ? ns : c.floor, t};
}

// A call's duration in us. The return it dates (entry + duration) also becomes the thread's floor: an
// entry stamp held at the floor after a re-anchor (the extrapolation had run ahead of the clock) plus a
// TSC difference could otherwise date the return after the thread's next timestamp.
inline uint32_t saturated_us(uint64_t t0_ns, uint64_t ns) noexcept {
  const uint64_t end = t0_ns + ns;
  if (end > t_hot.clock.floor) t_hot.clock.floor = end;
  const uint64_t us = ns / 1000;
  return us > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(us);
}
// Without the TSC: the clock again (out of line, so the common path saves no registers for the call).
__attribute__((noinline)) uint32_t elapsed_us_clock(uint64_t t0_ns) noexcept {
  const uint64_t now = now_ns();
  return saturated_us(t0_ns, now > t0_ns ? now - t0_ns : 0);
}
__attribute__((always_inline)) inline uint32_t elapsed_us(uint64_t t0_ns, uint64_t ticks0) noexcept {
  const uint64_t q = g_ns_per_tick_q32.load(std::memory_order_relaxed);
  if (__builtin_expect(!q || !ticks0, 0)) return elapsed_us_clock(t0_ns);
  if (g_tsc_per_cpu.load(std::memory_order_relaxed)) {
    // A TSC difference only on one CPU: the anchor's, taken no later than the entry's reading (the
    // thread changing CPU in between anchors again, and every later anchor is taken after ticks0).
    const ThreadClock& c = t_hot.clock;
    const uint32_t cpu = current_cpu();
    const uint64_t t = ticks();
    if (__builtin_expect(cpu != c.cpu || current_cpu() != cpu || ticks0 < c.tsc0 || c.tsc0 == 0, 0))
      return elapsed_us_clock(t0_ns);
    return saturated_us(t0_ns, t > ticks0 ? ticks_to_ns(t - ticks0, q) : 0);
  }
  const uint64_t t = ticks();
  return saturated_us(t0_ns, t > ticks0 ? ticks_to_ns(t - ticks0, q) : 0);
}

// The duration in us from a timestamp t0_ns written by any thread to now on this thread's clock (a
// record known only by its id, returned from another thread than its entry's).
inline uint32_t elapsed_us_since(uint64_t t0_ns) noexcept {
  const uint64_t now = stamp().ns;
  return saturated_us(t0_ns, now > t0_ns ? now - t0_ns : 0);
}

void start_session() noexcept;

format::Writer* open_writer() noexcept {
  start_session();
  std::lock_guard<std::mutex> lock(g_open_mutex);
  int st = g_state.load(std::memory_order_acquire);
  if (st == kOpen) return g_writer;
  if (st == kOff) return nullptr;
  if (!g_config.dir) {
    g_state.store(kOff, std::memory_order_release);
    g_tracing_off.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  if (!g_writer) g_writer = new (g_writer_storage) format::Writer();
  format::WriterConfig wc;
  wc.dir = g_config.dir;
  wc.rank_hint = g_config.rank_hint;
  wc.size_hint = g_config.size_hint;
  wc.ring_records = g_config.ring;
  wc.job_id = g_config.job_id;
  wc.cmdline = g_config.cmdline;
  char err[512] = {};
  if (!g_writer->open(wc, err, sizeof err)) {
    std::fprintf(stderr, "lockstep: tracing is off for pid %d: %s\n", static_cast<int>(getpid()),
                 err[0] ? err : "cannot open the trace file");
    g_state.store(kOff, std::memory_order_release);
    g_tracing_off.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  g_owner.store(g_pid.load(std::memory_order_relaxed), std::memory_order_relaxed);
  calibrate_ticks();
  g_writer_gen.fetch_add(1, std::memory_order_relaxed);
  g_state.store(kOpen, std::memory_order_release);
  g_live_writer.store(g_writer, std::memory_order_release);
  // The first record says when the library was loaded, so a trace shows time spent before MPI_Init.
  write_process_start(g_writer);
  install_fatal_signal_handlers();
  return g_writer;
}

// Only the writer this process opened itself, never one inherited through fork (the child clears it).
inline format::Writer* open_writer_or_null() noexcept {
  return g_live_writer.load(std::memory_order_acquire);
}

// Writer::note_module for a call site, skipped when this thread already passed the same address to the
// same writer: a loop's call sites are few, and the module table scan is a tenth of a record's cost.
// Two places per address (of kNotedSites, one line of the thread's hot block), so that the few call
// sites of a loop rarely evict each other.
inline void note(format::Writer* w, uint64_t addr) noexcept {
  HotThread& t = t_hot;
  static_assert(kNotedSites == 8, "two 3-bit places per address");
  const uint32_t gen = g_writer_gen.load(std::memory_order_relaxed);
  const uint64_t h = addr * 0x9e3779b97f4a7c15ull;
  const size_t a = h >> 61, b = (h >> 58) & 7;
  if (__builtin_expect(t.noted_gen == gen && (t.noted[a] == addr || t.noted[b] == addr), 1)) return;
  if (t.noted_gen != gen) {
    t.noted_gen = gen;
    for (uint64_t& x : t.noted) x = 0;
  }
  if (w->note_module(addr)) t.noted[t.noted[a] == 0 ? a : b] = addr;
}

// ThreadState::in_tracer while this thread is inside the tracer itself.
struct InTracer {
  InTracer() noexcept { ++t_hot.state.in_tracer; }
  ~InTracer() { --t_hot.state.in_tracer; }
};

void clear_slot(lst_record* r) noexcept {
  std::memset(reinterpret_cast<char*>(r) + sizeof(uint32_t), 0, sizeof(lst_record) - sizeof(uint32_t));
}

// One record: reserve a slot, clear it, let `fill` write the fields, publish it with `word`. Returns the
// slot and its id (slot nullptr when the record was dropped). The fatal-signal path writes its own,
// with nothing but async-signal-safe steps in plain sight.
struct Emitted {
  lst_record* rec = nullptr;
  uint64_t id = 0;
};
template <typename Fill>
inline Emitted emit(format::Writer* w, uint32_t word, Fill&& fill) noexcept {
  Emitted e;
  e.rec = w->reserve(&e.id);
  if (!e.rec) return e;
  clear_slot(e.rec);
  fill(*e.rec, e.id);
  format::Writer::publish(e.rec, word);
  return e;
}

// A whole record from its eight little-endian words (v0: bytes 4-7, op to redop, in its high half),
// stored in eight pieces and published with `word` sealed from the same values: no clearing first and
// nothing read back (record_check.h). The slot comes from Writer::reserve. store_sealed: the same with
// the word already sealed by the caller.
inline void store_words(lst_record* r, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3, uint64_t v4,
                        uint64_t v5, uint64_t v6, uint64_t v7) noexcept {
  auto* b = reinterpret_cast<unsigned char*>(r);
  const uint32_t head = static_cast<uint32_t>(v0 >> 32);
  std::memcpy(b + 4, &head, 4);
  // One store per word, straight from the registers (an array copied in one piece would go through
  // the stack and stall the store forwarding).
  std::memcpy(b + 8, &v1, 8);
  std::memcpy(b + 16, &v2, 8);
  std::memcpy(b + 24, &v3, 8);
  std::memcpy(b + 32, &v4, 8);
  std::memcpy(b + 40, &v5, 8);
  std::memcpy(b + 48, &v6, 8);
  std::memcpy(b + 56, &v7, 8);
}
inline void store_record(lst_record* r, uint32_t word, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3,
                         uint64_t v4, uint64_t v5, uint64_t v6, uint64_t v7) noexcept {
  store_words(r, v0, v1, v2, v3, v4, v5, v6, v7);
  format::Writer::publish_sealed(r, format::seal_words(word, v0, v1, v2, v3, v4, v5, v6, v7));
}
inline void store_sealed(lst_record* r, uint32_t sealed, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3,
                         uint64_t v4, uint64_t v5, uint64_t v6, uint64_t v7) noexcept {
  store_words(r, v0, v1, v2, v3, v4, v5, v6, v7);
  format::Writer::publish_sealed(r, sealed);
}
// Bytes 4-7 of a record (op, api, dtype, redop) as store_record's v0.
constexpr uint64_t head_word(uint8_t op, uint8_t api, uint8_t dtype = 0, uint8_t redop = 0) noexcept {
  return (uint64_t(op) | uint64_t(api) << 8 | uint64_t(dtype) << 16 | uint64_t(redop) << 24) << 32;
}
// The same of a call's arguments, and a point-to-point record's word 2 (tag, then peer), each read as
// one word: CollectiveArgs keeps them in the record's order (little-endian, as the format).
static_assert(offsetof(CollectiveArgs, api) == offsetof(CollectiveArgs, op) + 1 &&
              offsetof(CollectiveArgs, dtype) == offsetof(CollectiveArgs, op) + 2 &&
              offsetof(CollectiveArgs, redop) == offsetof(CollectiveArgs, op) + 3 &&
              offsetof(CollectiveArgs, root_or_peer) == offsetof(CollectiveArgs, tag) + 4);
inline uint64_t head_word(const CollectiveArgs& a) noexcept {
  uint32_t head;
  std::memcpy(&head, &a.op, sizeof head);
  return uint64_t(head) << 32;
}
inline uint64_t tag_peer_word(const CollectiveArgs& a) noexcept {
  uint64_t word;
  std::memcpy(&word, &a.tag, sizeof word);
  return word;
}

// ---- call stacks -------------------------------------------------------------------------------

// The STACK records for `frames`, after the record `ref` they belong to. One record in the common
// case: the first two frames in it and the rest as a frames blob (Writer::intern_frames), which a
// distinct stack writes once; a record is a file page's 64th, a blob is written once per stack.
// Where the blob cannot be had, two frames per record, reserved with one atomic add for all of them
// (Writer::reserve_n), each published on its own.
void write_stack(format::Writer* w, uint64_t ref, const uint64_t* frames, int n, uint64_t t_ns) noexcept {
  if (n <= 0) return;
  if (n > kMaxFrames) n = kMaxFrames;
  const int own = n < 2 ? n : 2;
  for (int i = 0; i < own; ++i)
    if (frames[i]) note(w, frames[i]);
  if (n > 2) {
    bool added = false;
    const uint32_t tail = w->intern_frames(frames + 2, size_t(n - 2), &added);
    // A blob's modules are noted when it is written: a later stack with the same blob has the same
    // addresses, in modules already noted.
    if (added || tail == 0)
      for (int i = 2; i < n; ++i)
        if (frames[i]) note(w, frames[i]);
    if (tail != 0) {
      uint64_t id = 0;
      if (lst_record* r = w->reserve(&id))
        store_record(r, LST_WORD(LST_KIND_STACK, 0, 0), 0, 0, ref, frames[0], frames[1], 0, t_ns,
                     uint64_t(tail) << 32);
      return;
    }
  }
  lst_record* recs[kMaxFrames / 2];
  const int nrec = (n + 1) / 2;
  uint64_t first = 0;
  w->reserve_n(recs, nrec, &first);
  for (int k = 0; k < nrec; ++k) {
    if (!recs[k]) continue;
    const int i = 2 * k;
    store_record(recs[k], LST_WORD(LST_KIND_STACK, 0, 0), 0, 0, ref, frames[i], i + 1 < n ? frames[i + 1] : 0,
                 0, t_ns, 0);
  }
}

__attribute__((noinline)) void record_stack(format::Writer* w, uint64_t ref, uint64_t caller,
                                            uint64_t t_ns) noexcept {
  uint64_t frames[kMaxFrames];
  const int n = capture_stack(caller, frames, g_config.stack_frames - 1);
  write_stack(w, ref, frames, n, t_ns);
}

// ---- the communicator registry -----------------------------------------------------------------

// Open addressing over a fixed table: lookups are lock-free (one acquire load per probe); inserts and
// removals take the mutex. A removed communicator's entry stays in its slot with key 0 and is reused
// by the next insert whose probe passes it, so handles reused after MPI_Comm_free work.
constexpr size_t kCommSlots = 8192;
struct CommSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<bool> used{false};  // ever held an entry: a probe goes on past it
  CommEntry entry;
};
CommSlot* g_comm_slots = nullptr;  // allocated once, never freed
std::atomic<bool> g_comm_ready{false};
std::mutex g_comm_mutex;
size_t comm_hash(uint64_t key) noexcept {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return static_cast<size_t>(key) & (kCommSlots - 1);
}

// ---- process end -------------------------------------------------------------------------------

std::atomic<bool> g_ended{false};

// The record of the call this thread is inside (0: none; record 0 is always PROCESS_START).
uint64_t inside_call() noexcept {
  const uint64_t in = thread_state().inside;
  return in ? in - 1 : 0;
}

void write_process_end(format::Writer* w, uint64_t status) noexcept {
  InTracer in;
  const uint64_t ref = inside_call();
  emit(w, LST_WORD(LST_KIND_MARKER, 0, 0), [&](lst_record& r, uint64_t) {
    r.op = LST_MARK_PROCESS_END;
    r.u.marker.value = status;
    r.u.marker.ref = ref;
    r.t_ns = now_ns();
  });
  w->set_end_state(LST_END_EXIT);
  if (g_config.stack_stats && g_config.stack_frames > 1) {
    uint64_t fp = 0, rules = 0, dwarf = 0;
    stack_counts(&fp, &rules, &dwarf);
    const uint64_t without = fp + rules;
    std::fprintf(
        stderr,
        "lockstep: pid %d: %llu stacks without the DWARF unwinder, %llu with it (%llu of the %llu by "
        "unwind rules)\n",
        static_cast<int>(getpid()), static_cast<unsigned long long>(without),
        static_cast<unsigned long long>(dwarf), static_cast<unsigned long long>(rules),
        static_cast<unsigned long long>(without));
  }
  if (g_config.python_stats) {
    uint64_t direct = 0, api = 0;
    const char* fast = "";
    python_counts(&direct, &api, &fast);
    std::fprintf(stderr,
                 "lockstep: pid %d: %llu Python call sites read from the frame stack, %llu through the C API "
                 "(frame stack reading %s)\n",
                 static_cast<int>(getpid()), static_cast<unsigned long long>(direct),
                 static_cast<unsigned long long>(api), fast);
  }
}

void on_exit_hook() {
  format::Writer* w = open_writer_or_null();
  if (!w || g_ended.exchange(true)) return;
  write_process_end(w, UINT64_MAX);  // the exit status is not visible from an exit hook
}

void write_process_start(format::Writer* w) noexcept {
  emit(w, LST_WORD(LST_KIND_MARKER, 0, 0), [](lst_record& r, uint64_t) {
    r.op = LST_MARK_PROCESS_START;
    r.u.marker.value = static_cast<uint64_t>(getpid());
    r.u.marker.extra = static_cast<uint64_t>(getppid());
    r.t_ns = g_load_ns ? g_load_ns : now_ns();
  });
}

void on_fork_child() {
  g_pid.store(getpid(), std::memory_order_relaxed);
  g_live_writer.store(nullptr, std::memory_order_relaxed);
  g_tracing_off.store(!g_config.dir, std::memory_order_relaxed);
  // The child must never write into the parent's file: drop the mapping without touching it. If the
  // child later calls a collective, it opens a trace of its own.
  if (g_state.load(std::memory_order_acquire) == kOpen && g_writer) g_writer->abandon();
  g_state.store(g_config.dir ? kUntried : kOff, std::memory_order_release);
  g_owner.store(0, std::memory_order_relaxed);
  g_ended.store(false, std::memory_order_relaxed);
  new (&g_open_mutex) std::mutex();
  new (&g_comm_mutex) std::mutex();
  // A runtime process set may be owned by a thread the child does not have, even one stopped between
  // its load and store of the set's position (next_rt_seq): every set is unowned again, and the child's
  // first thread to use one claims it.
  if (g_comm_slots)
    for (size_t i = 0; i < kCommSlots; ++i) g_comm_slots[i].entry.unown();
}

// The configuration, read from the environment, and the process hooks: once, at the first intercepted
// call or when the library's constructor runs, whichever comes first. A library loaded before this
// one can make MPI or NCCL calls from its own constructor (MPI_Init in a static initializer), and the
// dynamic loader runs a preloaded library's constructor after those of the program's libraries: such a
// call must find the configuration read, not take the missing LOCKSTEP_TRACE_DIR for "tracing off".
void start_session() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    g_load_ns = now_ns();
    g_pid.store(getpid(), std::memory_order_relaxed);
    load_config();
    if (!g_config.dir) {
      g_state.store(kOff, std::memory_order_release);
      g_tracing_off.store(true, std::memory_order_relaxed);
    }
    pthread_atfork(nullptr, nullptr, on_fork_child);
    std::atexit(on_exit_hook);
  });
}

__attribute__((constructor)) void on_load() {
  start_session();
  // Before main, where a Fortran program makes its first MPI call (MPI_Init) through a binding library.
  if (g_config.dir && env::on(env::Var::kTraceFortran)) mpi::redirect_fortran_bindings();
}

}  // namespace

// ---- session.h ---------------------------------------------------------------------------------

LOCKSTEP_HOT_DATA std::atomic<format::Writer*> g_live_writer{nullptr};
LOCKSTEP_HOT_DATA std::atomic<bool> g_tracing_off{false};
// Bumped each time this process opens a writer (after fork, the child's own): per-thread caches of
// what the writer already knows (modules noted) are valid for one generation.
LOCKSTEP_HOT_DATA std::atomic<uint32_t> g_writer_gen{0};
constinit __attribute__((tls_model("initial-exec"))) thread_local HotThread t_hot{};

format::Writer* writer_slow() noexcept {
  int st = g_state.load(std::memory_order_acquire);
  if (st == kOpen) return g_live_writer.load(std::memory_order_acquire);
  if (st == kOff) return nullptr;
  return open_writer();
}

uint64_t now_ns() noexcept {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* job_id() noexcept { return g_config.job_id; }
int32_t rank_hint() noexcept { return g_config.rank_hint; }

void set_world(int32_t rank, int32_t size) noexcept {
  if (format::Writer* w = writer()) {
    InTracer in;
    w->set_world(rank, size);
  }
}

void set_end_state(uint32_t state) noexcept {
  if (format::Writer* w = open_writer_or_null()) {
    if (state != LST_END_EXIT) g_ended.store(true);
    w->set_end_state(state);
  }
}

void reinstall_signal_handlers() noexcept {
  if (open_writer_or_null()) install_fatal_signal_handlers();
}

void record_fatal_signal(int sig, const siginfo_t* info) noexcept {
  if (format::Writer* w = open_writer_or_null()) {
    if (!g_ended.exchange(true)) {
      w->set_end_state(LST_END_SIGNAL);
      if (t_hot.state.in_tracer == 0) {
        uint64_t id = 0;
        if (lst_record* r = w->reserve(&id)) {
          clear_slot(r);
          r->op = LST_MARK_SIGNAL;
          r->u.marker.value = static_cast<uint64_t>(sig);
          r->u.marker.ref = inside_call();
          r->u.marker.extra = info ? static_cast<uint64_t>(reinterpret_cast<uintptr_t>(info->si_addr)) : 0;
          r->t_ns = now_ns();
          format::Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
        }
      }
    }
  }
}

uint64_t hash_bytes(uint64_t h, const void* data, size_t len) noexcept { return format::fnv1a(data, len, h); }

LOCKSTEP_HOT_DATA std::atomic<uint32_t> g_comm_gen{0};

CommEntry* comm_find_slow(uint8_t api, uintptr_t handle) noexcept {
  const uint64_t key = comm_key(api, handle);
  LastComm& last = t_hot.last_comm;
  const uint32_t gen = g_comm_gen.load(std::memory_order_acquire);
  if (last.key == key && last.gen == gen) return last.entry;
  if (!g_comm_ready.load(std::memory_order_acquire)) return nullptr;
  size_t i = comm_hash(key);
  for (size_t probes = 0; probes < kCommSlots; ++probes, i = (i + 1) & (kCommSlots - 1)) {
    CommSlot& s = g_comm_slots[i];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      last = {gen, key, &s.entry};
      return &s.entry;
    }
    // A slot that was never used ends the probe; a freed one does not.
    if (k == 0 && !s.used.load(std::memory_order_acquire)) return nullptr;
  }
  return nullptr;
}

namespace {
// One COMM record, for a communicator added (`created`) or removed (a removal has no parent, colour,
// key, members or name).
void emit_comm(format::Writer* w, bool created, uint8_t api, uint8_t comm_op, uint64_t id, uint64_t parent_id,
               int32_t color, int32_t key, int32_t size, int32_t rank, uint32_t members_id, uint32_t name_id,
               uint64_t caller) noexcept {
  if (caller) note(w, caller);
  const uint64_t t = now_ns();
  auto fill = [&](lst_record& r, uint64_t) {
    r.op = comm_op;
    r.api = api;
    r.comm = id;
    r.u.comm.parent = parent_id;
    r.u.comm.color = color;
    r.u.comm.key = key;
    r.u.comm.size = size;
    r.u.comm.rank = rank;
    r.caller = caller;
    r.t_ns = t;
    r.members = members_id;
    r.aux = name_id;
  };
  emit(w, LST_WORD(LST_KIND_COMM, 0, 0), fill);
  // A ring soon overwrites the creation records of a long job, and with them the names and members the
  // checker reports communicators by: the first creations (the long-lived communicators, made at start)
  // are also copied into the metadata region, which a ring never reuses. Capped, so that a job creating
  // a communicator per step cannot fill the region that tensor names need too.
  constexpr uint32_t kMaxCopies = 1024;
  static std::atomic<uint32_t> copies{0};
  if (g_config.ring && created && copies.fetch_add(1, std::memory_order_relaxed) < kMaxCopies) {
    lst_record copy{};
    fill(copy, 0);
    copy.word = LST_WORD(LST_KIND_COMM, LST_STATE_RETURNED, 0);
    w->intern(&copy, sizeof copy, LST_STR_COMM);
  }
}
}  // namespace

CommEntry* comm_add(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t id, uint64_t parent_id,
                    int32_t color, int32_t key_arg, int32_t size, int32_t rank, const int32_t* members,
                    const char* name, uint64_t caller) noexcept {
  InTracer in;
  CommEntry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_comm_mutex);
    if (!g_comm_slots) {
      g_comm_slots = new (std::nothrow) CommSlot[kCommSlots];
      if (!g_comm_slots) return nullptr;
      g_comm_ready.store(true, std::memory_order_release);
    }
    uint64_t key = comm_key(api, handle);
    size_t i = comm_hash(key);
    CommSlot* target = nullptr;
    for (size_t probes = 0; probes < kCommSlots; ++probes, i = (i + 1) & (kCommSlots - 1)) {
      CommSlot& s = g_comm_slots[i];
      uint64_t k = s.key.load(std::memory_order_relaxed);
      if (k == key) {  // registered again without a free in between: start it afresh
        target = &s;
        break;
      }
      if (k == 0) {
        if (!target) target = &s;
        if (!s.used.load(std::memory_order_relaxed)) break;
      }
    }
    if (!target) return nullptr;  // more live communicators than the table holds: not recorded
    target->key.store(0, std::memory_order_relaxed);
    CommEntry& e = target->entry;
    e.id = id;
    e.size = size;
    e.rank = rank;
    e.api = api;
    e.next_seq.store(0, std::memory_order_relaxed);
    e.children.store(0, std::memory_order_relaxed);
    e.unown();
    target->used.store(true, std::memory_order_release);
    target->key.store(key, std::memory_order_release);
    g_comm_gen.fetch_add(1, std::memory_order_release);
    entry = &e;
  }
  format::Writer* w = writer();
  if (!w) return entry;
  uint32_t members_id = 0;
  if (members && size > 0)
    members_id = w->intern(members, static_cast<size_t>(size) * sizeof(int32_t), LST_STR_MEMBERS);
  uint32_t name_id = (name && *name) ? w->intern(name, std::strlen(name)) : 0;
  uint64_t py[1];
  if (caller && python_frames(w, py, 1) > 0) caller = py[0];
  emit_comm(w, true, api, comm_op, id, parent_id, color, key_arg, size, rank, members_id, name_id, caller);
  return entry;
}

void comm_remove(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t caller) noexcept {
  InTracer in;
  CommEntry* e = comm_find(api, handle);
  if (!e) return;
  uint64_t id = e->id;
  int32_t size = e->size, rank = e->rank;
  {
    std::lock_guard<std::mutex> lock(g_comm_mutex);
    uint64_t key = comm_key(api, handle);
    CommSlot* slot = reinterpret_cast<CommSlot*>(reinterpret_cast<char*>(e) - offsetof(CommSlot, entry));
    if (slot->key.load(std::memory_order_relaxed) == key) slot->key.store(0, std::memory_order_release);
    g_comm_gen.fetch_add(1, std::memory_order_release);
  }
  format::Writer* w = writer();
  if (!w) return;
  emit_comm(w, false, api, comm_op, id, 0, LST_NONE, 0, size, rank, 0, 0, caller);
}

namespace {
// ---- a runtime process set's positions --------------------------------------------------------------
//
// A runtime collective reserves its slot with a locked add, and a second locked add for the set's
// position right before it cost about 5 ns per call (docs/benchmarks.md, "One thread's runtime
// positions"). Most sets are used by one thread, so the first thread to use a set owns it and counts
// with a load and a store, marking the few instructions in between (owner_counting) with compiler
// fences only. The first other thread takes the set over, once: it announces it (kTakingOver), makes
// every thread of the process pass a full memory barrier (membarrier(2), expedited), and waits until
// the owner is not between its load and store; from then on (kShared) every thread, the owner too,
// takes the locked add. The barrier is what makes the owner's side safe without a fence of its own:
// after it, the owner either sees the announcement before counting, or its mark is visible to the
// thread taking over, which then waits for it. Where the barrier is refused (no membarrier, a
// seccomp filter), no thread owns a set and every count is the locked add.
constexpr uint8_t kOwned = 0, kTakingOver = 1, kShared = 2;
std::atomic<pid_t> g_membarrier_pid{0};  // the process whose expedited barriers are registered; -1: refused

// The barrier's registration for this process (again in a forked child, whose memory is another).
bool membarrier_ready() noexcept {
  const pid_t pid = getpid();
  const pid_t was = g_membarrier_pid.load(std::memory_order_acquire);
  if (was == pid) return true;
  if (was == -pid) return false;
  constexpr int kRegisterPrivateExpedited = 1 << 4;  // MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED
  const bool ok = syscall(SYS_membarrier, kRegisterPrivateExpedited, 0, 0) == 0;
  g_membarrier_pid.store(ok ? pid : -pid, std::memory_order_release);
  return ok;
}

bool membarrier_all_threads() noexcept {
  constexpr int kPrivateExpedited = 1 << 3;  // MEMBARRIER_CMD_PRIVATE_EXPEDITED
  return membarrier_ready() && syscall(SYS_membarrier, kPrivateExpedited, 0, 0) == 0;
}

inline uintptr_t this_thread_key() noexcept {
  return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
}

__attribute__((noinline)) uint32_t next_rt_seq_slow(CommEntry& c, uintptr_t self) noexcept {
  const uint8_t sharing = c.sharing.load(std::memory_order_acquire);
  // A set already shared: the locked add alone, as every count before ownership took.
  if (sharing == kShared) return c.next_seq.fetch_add(1, std::memory_order_relaxed);
  if (sharing == kOwned && c.owner.load(std::memory_order_relaxed) == 0) {
    if (!membarrier_ready()) {
      // No thread of this process can own a set: shared from its first count.
      uint8_t owned = kOwned;
      c.sharing.compare_exchange_strong(owned, kShared, std::memory_order_acq_rel);
      return c.next_seq.fetch_add(1, std::memory_order_relaxed);
    }
    // The claim is itself a locked instruction; this first count takes the locked add too.
    uintptr_t none = 0;
    if (c.owner.compare_exchange_strong(none, self, std::memory_order_acq_rel))
      return c.next_seq.fetch_add(1, std::memory_order_relaxed);
  }
  uint8_t owned = kOwned;
  if (c.sharing.compare_exchange_strong(owned, kTakingOver, std::memory_order_acq_rel)) {
    if (!membarrier_all_threads()) {
      // Refused after it was granted (a filter added since): the owner's mark reaches this thread
      // within a store buffer's drain, far less than the pause here.
      const timespec pause{0, 1'000'000};
      nanosleep(&pause, nullptr);
    }
    while (c.owner_counting.load(std::memory_order_acquire) != 0) sched_yield();
    c.sharing.store(kShared, std::memory_order_release);
  } else {
    while (c.sharing.load(std::memory_order_acquire) != kShared) sched_yield();
  }
  return c.next_seq.fetch_add(1, std::memory_order_relaxed);
}

inline uint32_t next_rt_seq(CommEntry& c) noexcept {
  const uintptr_t self = this_thread_key();
  if (__builtin_expect(c.owner.load(std::memory_order_relaxed) == self, 1)) {
    c.owner_counting.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(c.sharing.load(std::memory_order_relaxed) == kOwned, 1)) {
      const uint32_t v = c.next_seq.load(std::memory_order_relaxed);
      c.next_seq.store(v + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      c.owner_counting.store(0, std::memory_order_release);
      return v;
    }
    c.owner_counting.store(0, std::memory_order_release);
    return c.next_seq.fetch_add(1, std::memory_order_relaxed);
  }
  return next_rt_seq_slow(c, self);
}

// A communicator's next position. The MPI standard leaves it to the user that no two collectives use
// one communicator at the same time in a process (the collective chapter, "Correctness"), and NCCL
// rules out a communicator's concurrent use from two threads, so for those a call's increment cannot
// race another's in a correct program: a load and a store, not a locked add, which on some processors
// delays the clock read that follows it (docs/benchmarks.md). A program that breaks that rule may
// record one position twice; the checker keeps the order of the records, and a ring's window
// alignment falls back as for any gap. Runtime process sets (annotations) carry no such rule: several
// threads may submit to one set at once, and next_rt_seq counts exactly.
inline uint32_t next_seq(CommEntry& c) noexcept {
  if (c.api == LST_API_RT) return next_rt_seq(c);
  const uint32_t v = c.next_seq.load(std::memory_order_relaxed);
  c.next_seq.store(v + 1, std::memory_order_relaxed);
  return v;
}
// Point-to-point calls are not in the communicator's collective sequence: the tag takes its place.
inline uint32_t seq_of(const CollectiveArgs& a) noexcept {
  return (a.flags & LST_F_P2P) ? static_cast<uint32_t>(a.tag) : a.comm ? next_seq(*a.comm) : 0;
}
// `flags` with what the thread's state adds to a record entered now.
inline uint8_t with_thread_flags(uint8_t flags) noexcept {
  const ThreadState& ts = thread_state();
  if (ts.nccl_group_depth > 0) flags |= LST_F_IN_GROUP;
  if (ts.control > 0) flags |= LST_F_CONTROL;
  return flags;
}
// A collective record in state ENTERED. t_return_us stays 0 until the return (verify_record's
// torn-return rule); id_lo tells a ring reader the slot's owner.
inline void store_collective(lst_record* r, uint64_t id, const CollectiveArgs& a, uint32_t seq, uint8_t flags,
                             uint64_t caller, uint64_t t_ns) noexcept {
  store_record(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, flags), head_word(a),
               a.comm ? a.comm->id : 0, uint64_t(seq) | uint64_t(static_cast<uint32_t>(a.root_or_peer)) << 32,
               uint64_t(a.dtype_size) | uint64_t(static_cast<uint32_t>(id)) << 32, a.count, caller, t_ns,
               uint64_t(a.name) << 32);
}
}  // namespace

namespace {
// collective_enter's body; with kNamed, `name` is interned into a.name after the slot is reserved.
template <bool kNamed>
__attribute__((always_inline)) inline Pending enter_impl(CollectiveArgs& a, const char* name,
                                                         uint64_t caller) noexcept {
  Pending p;
  format::Writer* w = writer();
  if (!w) return p;
  InTracer in;
  const uint8_t flags = with_thread_flags(a.flags);
  // Called from Python: the Python frames are the call site (and the extra frames), before the slot
  // is reserved, since reading them may intern strings.
  uint64_t py[kMaxFrames];
  const int npy = python_frames(w, py, g_config.stack_frames > 1 ? g_config.stack_frames : 1);
  if (npy > 0) caller = py[0];
  uint64_t id = 0;
  // The clock is read before the locked adds (a runtime process set's position, the slot): on some
  // processors (an Intel Xeon guest, docs/benchmarks.md) a TSC read that follows a locked instruction
  // waits for it, which cost about 12 ns per record. A wait record and a marker are dated the same way.
  const Stamp t0 = stamp();
  const uint32_t seq = seq_of(a);
  lst_record* r = w->reserve(&id);
  if (!r) return p;
  note(w, caller);
  if constexpr (kNamed) a.name = intern_text(w, name);
  store_collective(r, id, a, seq, flags, caller, t0.ns);
  if (npy > 1)
    write_stack(w, id, py + 1, npy - 1, t0.ns);
  else if (g_config.stack_frames > 1 && npy == 0)
    record_stack(w, id, caller, t0.ns);
  p.rec = r;
  p.id = id;
  p.t0 = t0.ns;
  p.ticks0 = t0.tsc;
  return p;
}
}  // namespace

Pending collective_enter(const CollectiveArgs& a, uint64_t caller) noexcept {
  return enter_impl<false>(const_cast<CollectiveArgs&>(a), nullptr, caller);  // a is not written
}

Pending collective_enter_named(CollectiveArgs& a, const char* name, uint64_t caller) noexcept {
  return enter_impl<true>(a, name, caller);
}

namespace {
// The two records of a pair, each stored where its slot is not null. b's words differ from a's only in
// words 0 (op, datatype; flags, where one datatype is derived), 2 (tag, peer), 3 (datatype size, id)
// and 4 (count), and the check is linear, so b's word is a's with the check of those differences
// applied: what both share is hashed once.
__attribute__((always_inline)) inline void store_pair(lst_record* ra, uint64_t ida, lst_record* rb,
                                                      uint64_t idb, const CollectiveArgs& a,
                                                      const CollectiveArgs& b, uint8_t from_thread,
                                                      uint64_t caller, uint64_t t_ns) noexcept {
  const uint32_t word_a = LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, a.flags | from_thread);
  const uint32_t word_b = LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, b.flags | from_thread);
  const uint64_t comm = a.comm ? a.comm->id : 0, name = uint64_t(a.name) << 32;
  // store_collective's words, with the tag as sequence number (seq_of: both are point-to-point).
  const uint64_t a0 = head_word(a), b0 = head_word(b);
  const uint64_t a2 = tag_peer_word(a), b2 = tag_peer_word(b);
  const uint64_t a3 = uint64_t(a.dtype_size) | uint64_t(static_cast<uint32_t>(ida)) << 32;
  const uint64_t b3 = uint64_t(b.dtype_size) | uint64_t(static_cast<uint32_t>(idb)) << 32;
  const uint32_t sealed_a = format::seal_words(word_a, a0, comm, a2, a3, a.count, caller, t_ns, name);
  const uint32_t sealed_b =
      format::reseal_words(sealed_a, word_b, a0 ^ b0, a2 ^ b2, a3 ^ b3, a.count ^ b.count);
  if (ra) store_sealed(ra, sealed_a, a0, comm, a2, a3, a.count, caller, t_ns, name);
  if (rb) store_sealed(rb, sealed_b, b0, comm, b2, b3, b.count, caller, t_ns, name);
}

// A pair at the call site `caller`, with no extra frames: both records reserved with one atomic add.
__attribute__((always_inline)) inline void enter_pair_at(format::Writer* w, const CollectiveArgs& a,
                                                         const CollectiveArgs& b, uint64_t caller,
                                                         PendingPair& out) noexcept {
  lst_record* r[2];
  uint64_t first = 0;
  const Stamp t0 = stamp();  // before the locked add: see collective_enter
  w->reserve_pair(r, &first);
  if (__builtin_expect(!r[0] && !r[1], 0)) return;
  note(w, caller);
  store_pair(r[0], first, r[1], first + 1, a, b, with_thread_flags(0), caller, t0.ns);
  out.rec[0] = r[0];
  out.rec[1] = r[1];
  out.id[0] = first;
  out.id[1] = first + 1;
  out.t0 = t0.ns;
  out.ticks0 = t0.tsc;
}

// A pair called from Python, or with LOCKSTEP_TRACE_STACK: out of line, so the common path carries
// neither the frames' buffers nor their branches. The Python frames are the call site; with extra
// frames each record keeps its STACK records right after it, as every record does, so the two are
// reserved apart; the frames are captured once (one call site) and both records still take the one
// clock reading.
__attribute__((noinline)) void enter_pair_with_frames(format::Writer* w, const CollectiveArgs& a,
                                                      const CollectiveArgs& b, uint64_t caller,
                                                      PendingPair& out) noexcept {
  uint64_t py[kMaxFrames];
  const int npy = python_frames(w, py, g_config.stack_frames > 1 ? g_config.stack_frames : 1);
  if (npy > 0) caller = py[0];
  if (npy == 1 || (npy == 0 && g_config.stack_frames <= 1)) return enter_pair_at(w, a, b, caller, out);
  uint64_t frames[kMaxFrames];
  int n = npy - 1;
  const uint64_t* f = py + 1;
  if (npy == 0) {
    n = capture_stack(caller, frames, g_config.stack_frames - 1);
    f = frames;
  }
  note(w, caller);
  const uint8_t from_thread = with_thread_flags(0);
  const Stamp t0 = stamp();  // before the locked adds: see collective_enter
  for (int k = 0; k < 2; ++k) {
    const CollectiveArgs& x = k == 0 ? a : b;
    uint64_t id = 0;
    lst_record* r = w->reserve(&id);
    if (!r) continue;
    store_collective(r, id, x, seq_of(x), x.flags | from_thread, caller, t0.ns);
    write_stack(w, id, f, n, t0.ns);
    out.rec[k] = r;
    out.id[k] = id;
  }
  out.t0 = t0.ns;
  out.ticks0 = t0.tsc;
}
}  // namespace

void collective_enter_pair(const CollectiveArgs& a, const CollectiveArgs& b, uint64_t caller,
                           PendingPair& out) noexcept {
  format::Writer* w = writer();
  if (!w) return;
  InTracer in;
  // Not called from Python and no extra frames: two loads decide it.
  if (__builtin_expect(g_python_state.load(std::memory_order_relaxed) == 2 && g_config.stack_frames <= 1, 1))
    enter_pair_at(w, a, b, caller, out);
  else
    enter_pair_with_frames(w, a, b, caller, out);
}

namespace {
// States only move forward, even when a Wait on another thread races the call's own return.
void advance(lst_record* r, uint8_t state) noexcept { format::Writer::advance(r, state); }

// The return of a collective record this thread entered (Pending from collective_enter): no other
// thread has updated it yet (Writer::finish_own), so one release store. A ring may have reused the
// slot meanwhile: another kind, unpublished while it is being refilled (word 0), or a collective with
// another id; then nothing is written.
inline void return_own(Pending& p, bool ok) noexcept {
  lst_record* r = p.rec;
  if (!r || !open_writer_or_null()) return;
  const uint32_t word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (g_config.ring &&
      (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(p.id)))
    return;
  format::Writer::finish_own(r, word, ok ? LST_STATE_RETURNED : LST_STATE_FAILED, elapsed_us(p.t0, p.ticks0));
  p.rec = nullptr;
}
}  // namespace

void collective_return(Pending& p, bool ok) noexcept { return_own(p, ok); }

// Both records of a pair share their entry reading (collective_enter_pair): one TSC read gives both the
// same duration. Each is returned as return_own returns one. No other thread updates them, so each is
// still ENTERED with t_return_us 0, and its return is its word with one change, the same for both
// (format::return_change); a record found otherwise takes Writer::finish_own's general path.
void collective_return_pair(const PendingPair& p, bool ok) noexcept {
  if ((!p.rec[0] && !p.rec[1]) || !open_writer_or_null()) return;
  const uint32_t us = elapsed_us(p.t0, p.ticks0);
  const uint8_t state = ok ? LST_STATE_RETURNED : LST_STATE_FAILED;
  const uint32_t change = format::return_change(state, us);
  auto finish = [&](lst_record* r, uint64_t id) {  // twice, straight-line
    if (!r) return;
    const uint32_t word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
    if (g_config.ring &&
        (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(id)))
      return;
    if (__builtin_expect(LST_WORD_STATE(word) != LST_STATE_ENTERED || r->t_return_us != 0, 0))
      return format::Writer::finish_own(r, word, state, us);
    r->t_return_us = us;
    __atomic_store_n(&r->word, word ^ change, __ATOMIC_RELEASE);
  };
  finish(p.rec[0], p.id[0]);
  finish(p.rec[1], p.id[1]);
}

// A record known only by its id may be returned from another thread than the one that entered it
// (runtime tokens): the compare-and-swap of Writer::finish keeps the first return if two race. A
// device completion that came first keeps its state; the record gains the duration. The return is
// dated by this thread's clock (the TSC-derived stamp, as every other record's), where a clock_gettime
// call cost about 24 ns more per return on a hypervisor's clock: a runtime that ends its requests on
// its own background thread returns every one of its collectives here.
void collective_return_id(uint64_t id, bool ok) noexcept {
  format::Writer* w = open_writer_or_null();
  if (!w) return;
  lst_record* r = w->at(id);
  if (!r || LST_WORD_KIND(r->word) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(id))
    return;
  format::Writer::finish(r, ok ? LST_STATE_RETURNED : LST_STATE_FAILED, elapsed_us_since(r->t_ns));
}

namespace {
void complete_slot(lst_record* r, uint64_t id) noexcept {
  if (!r || LST_WORD_KIND(r->word) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(id))
    return;
  advance(r, LST_STATE_COMPLETED);
}
}  // namespace

void collective_complete(uint64_t id) noexcept {
  format::Writer* w = open_writer_or_null();
  if (!w) return;
  complete_slot(w->at(id), id);
}

void collective_complete(const uint64_t* ids, size_t n, uint64_t next) noexcept {
  format::Writer* w = open_writer_or_null();
  if (!w) return;
  for (size_t i = 0; i < n; ++i) complete_slot(w->at(ids[i], next), ids[i]);
}

void complete_request(uint64_t id) noexcept {
  format::Writer* w = open_writer_or_null();
  if (!w) return;
  lst_record* r = w->at(id);
  if (!r) return;
  const uint32_t word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(id)) return;
  if (LST_WORD_STATE(word) >= LST_STATE_COMPLETED) return;
  const uint32_t fields = (word & ~(LST_REC_CHECK_MASK | (0x07u << 16))) | uint32_t(LST_STATE_COMPLETED)
                                                                               << 16;
  const uint32_t next = fields | format::updated_check(word, fields, 0, 0);
  // A ring may hand the slot to another record meanwhile: there the word is swapped only if it is
  // still the one checked above (a change can only be that reuse, since no other thread updates it).
  uint32_t expected = word;
  if (g_config.ring)
    __atomic_compare_exchange_n(&r->word, &expected, next, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  else
    __atomic_store_n(&r->word, next, __ATOMIC_RELEASE);
}

Pending wait_enter(uint8_t wait_op, uint64_t first_ref, uint32_t nrequests, uint64_t caller,
                   uint64_t start_ns, uint64_t start_ticks) noexcept {
  Pending p;
  format::Writer* w = writer();
  if (!w) return p;
  InTracer in;
  uint64_t py[1];
  if (python_frames(w, py, 1) > 0) caller = py[0];
  note(w, caller);
  const Stamp t0 = start_ns ? Stamp{start_ns, start_ticks} : stamp();
  uint64_t id = 0;
  lst_record* r = w->reserve(&id);
  if (!r) return p;
  // ncompleted and t_return_us stay 0 until the return (verify_record's torn-return rule).
  store_record(r, LST_WORD(LST_KIND_WAIT, LST_STATE_ENTERED, 0), head_word(wait_op, LST_API_MPI), 0,
               first_ref, nrequests, id, caller, t0.ns, 0);
  p.rec = r;
  p.id = id;
  p.t0 = t0.ns;
  p.ticks0 = t0.tsc;
  return p;
}

// A WAIT record has one writer, the thread of the call: its return is one release store.
void wait_return(Pending& p, uint32_t ncompleted, bool ok, uint32_t us) noexcept {
  lst_record* r = p.rec;
  if (!r || !open_writer_or_null()) return;
  const uint32_t word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (g_config.ring && (LST_WORD_KIND(word) != LST_KIND_WAIT || r->u.wait.id != p.id)) return;
  format::Writer::finish_wait_own(r, word, ok ? LST_STATE_RETURNED : LST_STATE_FAILED, us, ncompleted);
  p.rec = nullptr;
}

uint32_t wait_elapsed_us(const Pending& p) noexcept { return p.rec ? elapsed_us(p.t0, p.ticks0) : 0; }

namespace {
// The texts this thread interned lately, by address: the string's id and length, checked against the
// stored string before each use, since the same address may hold other text by now (a reused buffer).
// Nothing of the text is copied, so a name of any length is kept.
struct Interned {
  const char* ptr;
  uint32_t len, id, gen;
};
constexpr int kInternedBits = 4;
__attribute__((tls_model("initial-exec"))) thread_local Interned t_interned[1 << kInternedBits];
}  // namespace

uint32_t intern_nonempty_text(format::Writer* w, const char* text) noexcept {
  Interned& c =
      t_interned[(reinterpret_cast<uintptr_t>(text) * 0x9e3779b97f4a7c15ull) >> (64 - kInternedBits)];
  const uint32_t gen = g_writer_gen.load(std::memory_order_relaxed);
  // strncmp stops at the text's NUL, so it never reads past a shorter text; the text then ends where the
  // stored one does.
  if (c.ptr == text && c.gen == gen && std::strncmp(text, w->string_bytes(c.id), c.len) == 0 &&
      text[c.len] == '\0')
    return c.id;
  const size_t len = std::strlen(text);
  const uint32_t id = w->intern(text, len);
  if (id) {
    // The address last, after a signal fence: a signal handler that interns a text on this thread while
    // the entry changes sees the entry either not matching its address or whole, never one text's
    // address with another's id and length (which would read past the stored string).
    c.ptr = nullptr;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    c.len = static_cast<uint32_t>(len);
    c.id = id;
    c.gen = gen;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    c.ptr = text;
  }
  return id;
}

uint64_t record_clock(uint64_t* ticks) noexcept {
  const Stamp s = stamp();
  if (ticks) *ticks = s.tsc;
  return s.ns;
}

uint64_t marker(uint8_t op, uint64_t value, const char* text, uint64_t caller) noexcept {
  return marker_ex(op, value, 0, 0, text, caller, 0);
}

uint64_t marker_ex(uint8_t op, uint64_t value, uint64_t ref, uint64_t extra, const char* text,
                   uint64_t caller, uint8_t state, uint64_t comm) noexcept {
  format::Writer* w = writer();
  if (!w) return UINT64_MAX;
  InTracer in;
  const uint32_t text_id = intern_text(w, text);
  if (caller) note(w, caller);
  const uint64_t t_ns = stamp().ns;
  uint64_t id = 0;
  lst_record* r = w->reserve(&id);
  if (!r) return UINT64_MAX;
  store_record(r, LST_WORD(LST_KIND_MARKER, state, 0), head_word(op, LST_API_NONE), comm, value, ref, extra,
               caller, t_ns, uint64_t(text_id) << 32);
  return id;
}

void marker_return(uint64_t id, bool ok) noexcept {
  if (id == UINT64_MAX) return;
  format::Writer* w = open_writer_or_null();
  if (!w) return;
  lst_record* r = w->at(id);
  if (!r || LST_WORD_KIND(r->word) != LST_KIND_MARKER) return;
  format::Writer::finish(r, ok ? LST_STATE_RETURNED : LST_STATE_FAILED, elapsed_us_since(r->t_ns));
}

}  // namespace lockstep::trace

// _exit (and _Exit) end a process without exit hooks: Open MPI's fatal error handler (MPI_ERRORS_ARE_FATAL)
// leaves through it from inside the failing call, with the error code as status. The trace keeps that
// status and the call; then the process ends exactly as the real _exit would end it.
namespace {
[[noreturn]] void exit_now(int status) noexcept {
  using namespace lockstep::trace;
  // A vfork child shares the parent's memory and a fork child has abandoned the trace: only the
  // process that opened the writer writes (getpid() is a system call here, never a cached value).
  if (lockstep::format::Writer* w = open_writer_or_null();
      w && static_cast<pid_t>(syscall(SYS_getpid)) == g_owner.load(std::memory_order_relaxed) &&
      !g_ended.exchange(true))
    write_process_end(w, static_cast<uint64_t>(static_cast<uint32_t>(status) & 0xff));
  for (;;) {
    syscall(SYS_exit_group, status);
    syscall(SYS_exit, status);
  }
}
}  // namespace

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) { exit_now(status); }
extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) { exit_now(status); }
