// The trace writer inside the traced process: file creation, the mapping that grows in chunks inside
// one reserved address range, the lock-free record path, interning and the module table.
// long file: one Impl whose mapping, growth and lock-free record path share the invariants of the
// reserved address range and the publish order; they are kept and reviewed together.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "lockstep/format/writer.h"
#include "lockstep/format/fnv.h"
#include "lockstep/format/record_check.h"

#include "checks.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

#ifndef LOCKSTEP_TRACER_VERSION
#define LOCKSTEP_TRACER_VERSION "0"
#endif

namespace lockstep::format {
namespace {

constexpr uint64_t kPage = 4096;
// Metadata blocks are allocated this many slots at a time (16 KiB), just before they are first written.
constexpr uint64_t kMetaStep = 256;
constexpr uint32_t kInternSlots = 8192;  // power of two
constexpr uint32_t kMaxModules = 512;
// How long a thread waits for another thread's growth (or an interrupted one) before dropping.
constexpr int kGrowSpins = 200000;

// The intern table: read without the lock, written under meta_lock (id and length first, then the hash
// with release order, so a reader that sees the hash sees them and the string they name). Entries are
// never removed.
struct InternEntry {
  std::atomic<uint64_t> hash{0};  // intern_hash of the string, never 0; 0: free
  std::atomic<uint32_t> id{0};
  std::atomic<uint32_t> len{0};
};

// intern_frames' table: read without the lock, written under meta_lock (id first, then the hash with
// release order, so a reader that sees the hash sees its id). Entries are never removed.
constexpr uint32_t kFramesSlots = 8192;  // power of two
constexpr uint32_t kFramesProbes = 16;
struct FramesEntry {
  std::atomic<uint64_t> hash{0};  // frames_hash of the list, never 0; 0: free
  std::atomic<uint32_t> id{0};
};

struct ModuleRange {
  uint64_t lo, hi;
};

struct Impl {
  std::atomic<bool> grow_lock{false};
  std::atomic<long> grow_owner{
      0};  // thread id of the growing thread, so its own signal handler does not wait on it
  std::atomic<bool> grow_failed{false};
  std::atomic<bool> full_reported{false};  // the one "no space" line was printed
  bool meta_full = false;                  // the metadata region could not get more blocks (under meta_lock)
  uint64_t meta_backed = 0;                // metadata slots with file blocks behind them (under meta_lock)
  uint64_t initial_records = 0;
  const char* path = "";              // the Writer's path_, for the one "no space" line
  std::atomic<uint64_t> capacity{0};  // record slots mapped and backed by the file
  uint64_t max_records = 0;
  uint64_t chunk_records = 0;
  uint64_t ring = 0;       // ring size, 0 for a growing file
  uint64_t ring_mask = 0;  // ring - 1 when the ring size is a power of two (no division per record)
  size_t reserved_len = 0;
  std::atomic<bool> meta_lock{false};
  InternEntry intern[kInternSlots];
  FramesEntry frames[kFramesSlots];
  std::atomic<uint32_t> nmodules{0};
  ModuleRange modules[kMaxModules];
  int dirfd = -1;
  char name[512];  // file name inside the directory
  char host[64];
  uint32_t pid = 0;
  // Growth ahead of the writers (growing file only): when a record is reserved at ahead_mark, the
  // first slot of the newest chunk, the helper thread maps and prefaults the next chunk while the
  // writers fill this one, so neither the growth nor the first-touch faults land on the record path.
  std::atomic<uint64_t> ahead_mark{UINT64_MAX};
  std::atomic<uint32_t> ahead_wake{0};  // futex word: bumped for each request
  std::atomic<bool> ahead_stop{false};
  std::atomic<uint64_t> ahead_faulted{0};  // helper only: records below this were prefaulted
  bool ahead_running = false;
  pid_t ahead_pid = 0;  // the process that started the helper: a forked child must not join it
  pthread_t ahead_thread{};
  int fd = -1;
  uint8_t* base = nullptr;
  lst_header* header = nullptr;
};

template <class T>
T load_acq(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

uint64_t clock_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

void copy_str(char* dst, size_t cap, const char* src) {
  size_t n = src ? strnlen(src, cap - 1) : 0;
  memcpy(dst, src ? src : "", n);
  memset(dst + n, 0, cap - n);
}

// A spin lock that gives up: the record path may run inside a signal handler that interrupted the
// holder, so waiting forever could deadlock the process.
bool try_lock(std::atomic<bool>& l) {
  for (int i = 0; i < kGrowSpins; ++i) {
    if (!l.exchange(true, std::memory_order_acquire)) return true;
    if (i > 64) sched_yield();
  }
  return false;
}
void unlock(std::atomic<bool>& l) { l.store(false, std::memory_order_release); }

// mkdir -p with mode 0700 for what it creates; existing directories keep their mode.
bool make_dirs(const char* dir) {
  char buf[4096];
  size_t n = strnlen(dir, sizeof buf);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char c = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0700) != 0 && errno != EEXIST) return false;
      buf[i] = c;
    }
  }
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

void file_name(char* out, size_t cap, int32_t rank, const char* host, uint32_t pid) {
  if (rank >= 0)
    snprintf(out, cap, "rank-%d.%s.%u.lstrace", rank, host, pid);
  else
    snprintf(out, cap, "rank-u.%s.%u.lstrace", host, pid);
}

// Gives [off, off + len) real blocks (extending the file when it ends before), so that a full disk
// shows up here as an error rather than as SIGBUS on a later store into the mapping. Where the file
// system has no fallocate, writing zeros allocates the blocks just as well; the range is never one
// that holds data yet. Async-signal-safe; errno says why on false.
bool back_range(int fd, uint64_t off, uint64_t len) {
  if (len == 0) return true;
  if (fallocate(fd, 0, off_t(off), off_t(len)) == 0) return true;
  if (errno != EOPNOTSUPP && errno != ENOSYS) return false;
  static const char zeros[16384] = {};
  while (len > 0) {
    const ssize_t n = pwrite(fd, zeros, len < sizeof zeros ? len : sizeof zeros, off_t(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    off += uint64_t(n);
    len -= uint64_t(n);
  }
  return true;
}

bool grow_file(int fd, uint64_t old_size, uint64_t size) {
  return size <= old_size || back_range(fd, old_size, size - old_size);
}

// The file system refused blocks (errno `err`): on a full disk or quota, stop recording for good, say
// so in the header and once on stderr. Built without stdio: this may run inside a signal handler.
void note_growth_failure(Impl* im, int err) {
  im->grow_failed.store(true, std::memory_order_relaxed);
  if (err != ENOSPC && err != EDQUOT) return;
  im->meta_full = true;  // a racy store is harmless: it only ever goes false -> true
  if (im->header) __atomic_fetch_or(&im->header->flags, LST_HDR_NOSPACE, __ATOMIC_RELEASE);
  if (im->full_reported.exchange(true)) return;
  char line[1024];
  size_t n = 0;
  auto put = [&](const char* t) {
    for (; *t && n < sizeof line - 1; ++t) line[n++] = *t;
  };
  char pid[16];
  int k = sizeof pid;
  pid[--k] = '\0';
  uint32_t v = im->pid;
  do pid[--k] = char('0' + v % 10);
  while ((v /= 10) && k > 0);
  put("lockstep: no space left for the trace of pid ");
  put(pid + k);
  put(" (");
  put(im->path);
  put("): recording stopped, the job goes on\n");
  (void)!write(2, line, n);
}

// Record capacity after the next growth: the step doubles the capacity until it reaches a whole
// chunk, so a short job's trace stays small and a long one grows in large steps.
uint64_t next_capacity(const Impl* im, uint64_t cap) {
  const uint64_t step = cap && cap < im->chunk_records ? cap : im->chunk_records;
  return cap + step > im->max_records ? im->max_records : cap + step;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and the pages fault lazily
#endif

// Faults a freshly mapped range in, writable, in one system call: otherwise the first store into each
// new page of the MAP_SHARED file takes a page fault on the record path (one per 64 records, most of
// a record's cost). Only a prefault: the pages are the same page-cache pages either way, so what is
// published survives kill -9 exactly as before; a failure leaves them to fault lazily.
// Then one load from each page, from user space: under a hypervisor that keeps shadow page tables,
// the kernel's prefault fills only the guest's, and the first user access to each page still exits to
// the hypervisor (0.75 us a page on such a KVM guest, where a growing file then cost 157 ns per
// MPI_Allreduce against 78 for a ring). The load takes that exit here instead; it reads, so it can
// never disturb a record a writer is filling.
void prefault(void* addr, uint64_t len) {
  (void)madvise(addr, len, MADV_POPULATE_WRITE);
  auto* bytes = static_cast<uint8_t*>(addr);
  for (uint64_t off = 0; off < len; off += kPage)
    (void)__atomic_load_n(reinterpret_cast<uint32_t*>(bytes + off), __ATOMIC_RELAXED);
}

// The helper's prefault of records [lo, hi) that a writer mapped itself and is already filling: from
// the end backwards, in small pieces, until it meets the writers. A new file page costs the kernel
// about 3 us (read in as zeros, made writable: 50 ns per 64-byte record), so writers that record
// faster than that catch up with the helper; front to back, both would fault the same pages one after
// the other, while from the back the writers fault only the pages before the meeting point and the
// helper all the rest. Pages a writer already touched are skipped, so once the writers are past a
// piece nothing is left to do.
void prefault_back(Impl* im, uint64_t lo, uint64_t hi) {
  constexpr uint64_t kPiece = 16;  // pages per madvise call
  uint8_t* records = im->base + im->header->records_offset;
  const uint64_t per_page = kPage / LST_SLOT_SIZE;
  for (uint64_t end = hi; end > lo;) {
    const uint64_t start = end - lo > kPiece * per_page ? end - kPiece * per_page : lo;
    // Writers are at or past `end`: they faulted everything below it themselves.
    if (__atomic_load_n(&im->header->record_next, __ATOMIC_RELAXED) >= end) return;
    prefault(records + start * LST_SLOT_SIZE, (end - start) * LST_SLOT_SIZE);
    end = start;
  }
}

// Maps one more chunk after `cap` (the caller holds grow_lock); false when the file cannot grow (then
// grow_failed is set). One chunk at a time, in order: the file only ever grows and chunk k maps at its
// own place.
bool grow_chunk(Impl* im, uint64_t cap) {
  lst_header* h = im->header;
  const uint64_t new_cap = next_capacity(im, cap);
  const uint64_t old_size = h->records_offset + cap * LST_SLOT_SIZE;
  const uint64_t new_size = h->records_offset + new_cap * LST_SLOT_SIZE;
  if (!grow_file(im->fd, old_size, new_size)) {
    note_growth_failure(im, errno);
    return false;
  }
  // old_size is page aligned (records_offset and chunk sizes are), so the chunk maps on its own.
  if (mmap(im->base + old_size, new_size - old_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, im->fd,
           off_t(old_size)) == MAP_FAILED) {
    im->grow_failed.store(true, std::memory_order_relaxed);
    return false;
  }
  __atomic_store_n(&h->record_capacity, new_cap, __ATOMIC_RELEASE);
  im->capacity.store(new_cap, std::memory_order_release);
  return true;
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t val) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, nullptr, nullptr, 0);
}

void* ahead_main(void* arg) {
  auto* im = static_cast<Impl*>(arg);
  uint32_t seen = 0;
  for (;;) {
    while (im->ahead_wake.load(std::memory_order_acquire) == seen &&
           !im->ahead_stop.load(std::memory_order_acquire))
      futex(&im->ahead_wake, FUTEX_WAIT_PRIVATE, seen);
    if (im->ahead_stop.load(std::memory_order_acquire)) return nullptr;
    seen = im->ahead_wake.load(std::memory_order_acquire);
    // Chunks a writer had to map itself (this thread lagged behind): fault them in from the back while
    // the writer fills them from the front.
    const uint64_t mapped = im->capacity.load(std::memory_order_acquire);
    const uint64_t faulted = im->ahead_faulted.load(std::memory_order_relaxed);
    if (faulted < mapped) {
      prefault_back(im, faulted, mapped);
      im->ahead_faulted.store(mapped, std::memory_order_relaxed);
    }
    // Same lock as the record path's own growth; a writer that got there first has grown already.
    while (im->grow_lock.exchange(true, std::memory_order_acquire)) sched_yield();
    const uint64_t cap = im->capacity.load(std::memory_order_relaxed);
    bool grown = false;
    if (cap < im->max_records && !im->grow_failed.load(std::memory_order_relaxed))
      grown = grow_chunk(im, cap);
    im->grow_lock.store(false, std::memory_order_release);
    if (!grown) continue;
    const uint64_t new_cap = im->capacity.load(std::memory_order_relaxed);
    // Marked before the prefault: writers that enter the new chunk while it is still being faulted in
    // queue the next request, and the loop takes it at once.
    im->ahead_mark.store(cap, std::memory_order_release);
    // Outside the lock: writers already store into the chunk's first pages while the rest is faulted in.
    // Front to back: the writers have not reached this chunk yet and will enter it from the front.
    prefault(im->base + im->header->records_offset + cap * LST_SLOT_SIZE, (new_cap - cap) * LST_SLOT_SIZE);
    // Only when everything below was faulted in: a chunk a writer mapped while this thread waited for
    // the lock stays above the mark, and the next request faults it in (what is here already is
    // skipped then).
    if (im->ahead_faulted.load(std::memory_order_relaxed) >= cap)
      im->ahead_faulted.store(new_cap, std::memory_order_relaxed);
  }
}

// The helper sleeps in the kernel; it takes no signals, so the traced program's handlers never run on it.
void start_ahead(Impl* im) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  im->ahead_running = pthread_create(&im->ahead_thread, nullptr, ahead_main, im) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (im->ahead_running) {
    im->ahead_pid = getpid();
    // A quarter of the way through the first chunk: a short trace never grows, and the helper has
    // three quarters of a chunk of records' time to map and fault in the second one.
    im->ahead_mark.store(im->initial_records / 4, std::memory_order_release);
    im->ahead_faulted.store(im->initial_records, std::memory_order_relaxed);
  }
}

struct PhdrSearch {
  uint64_t addr;
  bool found;
  uint64_t base, lo, hi;
  char path[1024];
  uint8_t build_id[64];
  uint32_t build_id_len;
};

void read_build_id(const dl_phdr_info* info, const ElfW(Phdr) * ph, PhdrSearch* s) {
  const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph->p_vaddr);
  size_t left = ph->p_memsz;
  while (left >= sizeof(ElfW(Nhdr))) {
    const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
    size_t name_sz = round_up(nh->n_namesz, 4), desc_sz = round_up(nh->n_descsz, 4);
    size_t total = sizeof(ElfW(Nhdr)) + name_sz + desc_sz;
    if (total > left) return;
    const char* name = reinterpret_cast<const char*>(p + sizeof(ElfW(Nhdr)));
    if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
      uint32_t n = nh->n_descsz < sizeof s->build_id ? nh->n_descsz : sizeof s->build_id;
      memcpy(s->build_id, p + sizeof(ElfW(Nhdr)) + name_sz, n);
      s->build_id_len = n;
      return;
    }
    p += total;
    left -= total;
  }
}

int phdr_callback(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<PhdrSearch*>(data);
  uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
  }
  if (!(s->addr >= lo && s->addr < hi)) return 0;
  s->found = true;
  s->base = info->dlpi_addr;
  s->lo = lo;
  s->hi = hi;
  const char* name = info->dlpi_name;
  if (name && name[0]) {
    copy_str(s->path, sizeof s->path, name);
  } else {  // the main program
    ssize_t n = readlink("/proc/self/exe", s->path, sizeof s->path - 1);
    s->path[n > 0 ? n : 0] = '\0';
  }
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_NOTE && s->build_id_len == 0)
      read_build_id(info, &info->dlpi_phdr[i], s);
  return 1;
}

}  // namespace

Writer::~Writer() { close(); }

bool Writer::open(const WriterConfig& config, char* err, size_t err_len) {
  auto fail = [&](const char* what, int e) {
    if (err && err_len) snprintf(err, err_len, "%s: %s", what, e ? strerror(e) : "failed");
    abandon();
    return false;
  };
  if (header_) return fail("trace writer already open", 0);
  if (!config.dir || !config.dir[0]) return fail("no trace directory", 0);
  if (strnlen(config.dir, sizeof path_) > sizeof path_ - 600) return fail("trace directory path too long", 0);

  void* mem = mmap(nullptr, sizeof(Impl), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return fail("cannot allocate writer state", errno);
  Impl* im = new (mem) Impl();
  impl_ = im;

  const uint64_t ring = config.ring_records;
  const uint64_t chunk = round_up(config.chunk_records ? config.chunk_records : 1, kPage / LST_SLOT_SIZE);
  const uint64_t meta_slots = round_up(config.meta_slots ? config.meta_slots : 1, kPage / LST_SLOT_SIZE);
  const uint64_t meta_offset = LST_HEADER_SIZE;
  const uint64_t records_offset = meta_offset + meta_slots * LST_SLOT_SIZE;
  uint64_t max_records = ring ? ring : round_up(config.max_records ? config.max_records : chunk, chunk);
  if (max_records > (1ull << 40) / LST_SLOT_SIZE) return fail("trace size limit too large", 0);
  im->ring = ring;
  im->ring_mask = (ring && (ring & (ring - 1)) == 0) ? ring - 1 : 0;
  im->chunk_records = chunk;
  im->max_records = max_records;
  uint64_t initial = round_up(config.initial_records ? config.initial_records : chunk, kPage / LST_SLOT_SIZE);
  if (initial > chunk) initial = chunk;
  if (initial > max_records) initial = max_records;
  im->initial_records = initial;
  im->path = path_;

  if (!make_dirs(config.dir)) return fail(config.dir, errno);
  im->dirfd = ::open(config.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (im->dirfd < 0) return fail(config.dir, errno);

  char host[64] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) copy_str(host, sizeof host, "localhost");
  for (char* c = host; *c; ++c)
    if (*c == '/' || *c == ' ' || *c == '.') *c = *c == '.' ? '-' : '_';
  copy_str(im->host, sizeof im->host, host);
  im->pid = uint32_t(getpid());
  file_name(im->name, sizeof im->name, config.rank_hint, im->host, im->pid);
  snprintf(path_, sizeof path_, "%s/%s", config.dir, im->name);

  // The file is created under a hidden name and gets its real name only once its header is complete,
  // so a process killed while creating its trace never leaves a .lstrace without a header.
  // O_EXCL never follows a symlink at the last component; O_NOFOLLOW says so explicitly.
  char tmp[sizeof im->name + 16];
  snprintf(tmp, sizeof tmp, ".%s.creating", im->name);
  fd_ = openat(im->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) return fail(path_, errno);
  fchmod(fd_, 0600);  // the umask may have removed bits we need; never add any for others

  const uint64_t initial_records = ring ? ring : initial;
  const uint64_t file_size = records_offset + initial_records * LST_SLOT_SIZE;
  // Every page gets its blocks before it is first written: the header page, the first metadata page
  // and the first records now, the rest of the metadata as it fills (meta_alloc), the records as they
  // grow. The metadata region in between stays a hole until then.
  if (ftruncate(fd_, off_t(records_offset)) != 0 || !back_range(fd_, 0, meta_offset + kPage) ||
      !grow_file(fd_, records_offset, file_size)) {
    int e = errno;
    unlinkat(im->dirfd, tmp, 0);
    return fail(path_, e);
  }

  im->reserved_len = round_up(records_offset + max_records * LST_SLOT_SIZE, kPage);
  void* range =
      mmap(nullptr, im->reserved_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) {
    int e = errno;
    unlinkat(im->dirfd, tmp, 0);
    return fail("cannot reserve address range for the trace", e);
  }
  base_ = static_cast<uint8_t*>(range);
  if (mmap(base_, file_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED) {
    int e = errno;
    unlinkat(im->dirfd, tmp, 0);
    return fail("cannot map the trace file", e);
  }
  prefault(base_ + records_offset, initial_records * LST_SLOT_SIZE);
  im->meta_backed = kPage / LST_SLOT_SIZE;

  auto* h = reinterpret_cast<lst_header*>(base_);
  h->version_major = LST_VERSION_MAJOR;
  h->version_minor = LST_VERSION_MINOR;
  h->header_size = LST_HEADER_SIZE;
  h->slot_size = LST_SLOT_SIZE;
  h->flags = (ring ? LST_HDR_RING : 0) | LST_HDR_CHECKED;
  h->meta_offset = meta_offset;
  h->meta_slots = meta_slots;
  h->records_offset = records_offset;
  h->record_capacity = initial_records;
  h->meta_next = 0;
  h->record_next = 0;
  h->world_rank = config.rank_hint >= 0 ? config.rank_hint : LST_NONE;
  h->world_size = config.rank_hint >= 0 && config.size_hint > config.rank_hint ? config.size_hint : LST_NONE;
  h->pid = im->pid;
  h->ppid = uint32_t(getppid());
  h->start_wall_ns = clock_ns(CLOCK_REALTIME);
  h->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
  const char* job = config.job_id ? config.job_id : "";
  h->job_hash = fnv1a(job, strlen(job));
  h->end_state = LST_END_RUNNING;
  copy_str(h->job_id, sizeof h->job_id, job);
  copy_str(h->host, sizeof h->host, im->host);
  copy_str(h->cmdline, sizeof h->cmdline, config.cmdline);
  copy_str(h->tracer_version, sizeof h->tracer_version, LOCKSTEP_TRACER_VERSION);
  h->header_check = header_check(h);
  // The magic goes last: a reader that sees it sees a complete header.
  uint64_t magic;
  memcpy(&magic, LST_MAGIC, 8);
  __atomic_store_n(reinterpret_cast<uint64_t*>(h->magic), magic, __ATOMIC_RELEASE);
  // Never replace a file that is already there (RENAME_NOREPLACE, or link, which fails on EEXIST).
  bool named = renameat2(im->dirfd, tmp, im->dirfd, im->name, RENAME_NOREPLACE) == 0;
  if (!named && (errno == EINVAL || errno == ENOSYS)) {
    named = linkat(im->dirfd, tmp, im->dirfd, im->name, 0) == 0;
    if (named) unlinkat(im->dirfd, tmp, 0);
  }
  if (!named) {
    int e = errno;
    unlinkat(im->dirfd, tmp, 0);
    return fail(path_, e);
  }
  im->capacity.store(initial_records, std::memory_order_release);
  header_ = h;
  im->fd = fd_;
  im->base = base_;
  im->header = h;
  if (!ring && initial_records < max_records) start_ahead(im);
  if (!ring || im->ring_mask) {
    hot_.ring_mask = im->ring_mask;
    hot_.capacity = &im->capacity;
    hot_.ahead_mark = &im->ahead_mark;
    hot_.records = base_ + records_offset;
  }
  return true;
}

lst_record* Writer::reserve_any(uint64_t* id_out) {
  lst_header* h = header_;
  if (!h) return nullptr;
  return reserve_slow(__atomic_fetch_add(&h->record_next, 1, __ATOMIC_RELAXED), id_out);
}

lst_record* Writer::reserve_slow(uint64_t id, uint64_t* id_out) {
  lst_header* h = header_;
  auto* im = static_cast<Impl*>(impl_);
  uint8_t* records = base_ + h->records_offset;
  lst_record* r;
  if (im->ring) {
    const uint64_t slot = im->ring_mask ? (id & im->ring_mask) : (id % im->ring);
    r = reinterpret_cast<lst_record*>(records + slot * LST_SLOT_SIZE);
    // The slot was last written a whole ring ago and is likely out of the cache: start fetching the
    // slot a few records ahead, so that its miss overlaps the calls in between.
    uint64_t ahead = slot + 8;  // no second division: slot < ring
    if (ahead >= im->ring) ahead = im->ring > 8 ? ahead - im->ring : slot;
    __builtin_prefetch(records + ahead * LST_SLOT_SIZE, 1, 3);
    // Unpublish first, so a reader never pairs the old word with the new fields: the release fence
    // keeps the stores that refill the slot after the store of 0 (free on x86, where stores stay in order).
    __atomic_store_n(&r->word, 0u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
  } else {
    if (__builtin_expect(id == im->ahead_mark.load(std::memory_order_relaxed), 0)) {
      im->ahead_wake.fetch_add(1, std::memory_order_release);
      futex(&im->ahead_wake, FUTEX_WAKE_PRIVATE, 1);
    }
    int spins = 0;
    while (id >= im->capacity.load(std::memory_order_acquire)) {
      if (id >= im->max_records || im->grow_failed.load(std::memory_order_relaxed) || ++spins > kGrowSpins) {
        __atomic_fetch_add(&h->dropped_records, 1, __ATOMIC_RELAXED);
        return nullptr;
      }
      if (im->grow_lock.exchange(true, std::memory_order_acquire)) {
        // A signal handler that interrupted the growing thread would wait for itself: drop at once.
        if (im->grow_owner.load(std::memory_order_relaxed) == syscall(SYS_gettid)) spins = kGrowSpins;
        if (spins > 64) sched_yield();
        continue;
      }
      im->grow_owner.store(syscall(SYS_gettid), std::memory_order_relaxed);
      const uint64_t cap = im->capacity.load(std::memory_order_relaxed);
      if (id >= cap && grow_chunk(im, cap)) {
        if (im->ahead_running) {
          // The helper lagged behind (its mark may already be behind us, so it would never be woken
          // again): it faults this chunk in from the back, while this thread faults only the pages it
          // reaches first, then maps the chunk after it. Prefaulting the whole chunk here would put
          // all of its page faults on the record path.
          im->ahead_wake.fetch_add(1, std::memory_order_release);
          futex(&im->ahead_wake, FUTEX_WAKE_PRIVATE, 1);
        } else {
          prefault(base_ + h->records_offset + cap * LST_SLOT_SIZE,
                   (im->capacity.load(std::memory_order_relaxed) - cap) * LST_SLOT_SIZE);
        }
      }
      im->grow_owner.store(0, std::memory_order_relaxed);
      im->grow_lock.store(false, std::memory_order_release);
    }
    r = reinterpret_cast<lst_record*>(records + id * LST_SLOT_SIZE);
  }
  r->u.coll.id_lo = uint32_t(id);
  if (id_out) *id_out = id;
  return r;
}

void Writer::publish(lst_record* r, uint32_t word) {
  __atomic_store_n(&r->word, seal_record_word(r, word), __ATOMIC_RELEASE);
}

// A return that may race other updates (finish, finish_wait) goes through here: it applies its own
// change to the check, never a check recomputed from memory, so that updates racing on one record (a
// device completion and a return) each count once. The state moves only from ENTERED (a record
// returns once). advance (writer.h) applies its change the same way.
static void update(lst_record* r, uint8_t state, uint64_t d3, uint64_t d7) {
  uint32_t old = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  for (;;) {
    const uint8_t cur = uint8_t(LST_WORD_STATE(old));
    const uint8_t s = cur < LST_STATE_RETURNED ? state : cur;
    const uint32_t fields = LST_WORD(LST_WORD_KIND(old), s, LST_WORD_FLAGS(old)) & ~LST_REC_CHECK_MASK;
    const uint32_t next = fields | updated_check(old, fields, d3, d7);
    if (next == old ||
        __atomic_compare_exchange_n(&r->word, &old, next, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
      return;
  }
}

void Writer::finish(lst_record* r, uint8_t state, uint32_t t_return_us) {
  const uint32_t was = r->t_return_us;
  r->t_return_us = t_return_us;
  update(r, state, 0, uint64_t(was ^ t_return_us));
}

void Writer::finish_wait(lst_record* r, uint8_t state, uint32_t t_return_us, uint32_t ncompleted) {
  const uint32_t was_t = r->t_return_us, was_n = r->u.wait.ncompleted;
  r->u.wait.ncompleted = ncompleted;
  r->t_return_us = t_return_us;
  update(r, state, uint64_t(was_n ^ ncompleted) << 32, uint64_t(was_t ^ t_return_us));
}

lst_record* Writer::at_any(uint64_t id) {
  lst_header* h = header_;
  if (!h) return nullptr;
  auto* im = static_cast<Impl*>(impl_);
  const uint64_t next = load_acq(&h->record_next);
  if (id >= next) return nullptr;
  uint8_t* records = base_ + h->records_offset;
  if (im->ring) {
    if (next - id > im->ring) return nullptr;
    auto* r = reinterpret_cast<lst_record*>(
        records + (im->ring_mask ? (id & im->ring_mask) : (id % im->ring)) * LST_SLOT_SIZE);
    const uint32_t w = load_acq(&r->word);
    if (LST_WORD_KIND(w) == LST_KIND_COLLECTIVE && r->u.coll.id_lo != uint32_t(id)) return nullptr;
    return r;
  }
  if (id >= im->capacity.load(std::memory_order_acquire)) return nullptr;
  return reinterpret_cast<lst_record*>(records + id * LST_SLOT_SIZE);
}

// Metadata writes are serialised by meta_lock, so at most the last entry can be unpublished (a process
// killed mid-write) and a reader walking the region stops there.
static uint8_t* meta_alloc(Impl* im, lst_header* h, uint8_t* base, uint64_t nslots, uint32_t* first) {
  const uint64_t next = h->meta_next;
  if (next + nslots > h->meta_slots || next + 1 > 0xFFFFFFFFull || im->meta_full) {
    __atomic_fetch_add(&h->dropped_meta, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  if (next + nslots > im->meta_backed) {
    // The region is a hole past meta_backed: a store there with the disk full would be SIGBUS.
    uint64_t want = round_up(next + nslots, kMetaStep);
    if (want > h->meta_slots) want = h->meta_slots;
    if (!back_range(im->fd, h->meta_offset + im->meta_backed * LST_SLOT_SIZE,
                    (want - im->meta_backed) * LST_SLOT_SIZE)) {
      note_growth_failure(im, errno);
      im->meta_full = true;
      __atomic_fetch_add(&h->dropped_meta, 1, __ATOMIC_RELAXED);
      return nullptr;
    }
    im->meta_backed = want;
  }
  __atomic_store_n(&h->meta_next, next + nslots, __ATOMIC_RELEASE);
  *first = uint32_t(next);
  return base + h->meta_offset + next * LST_SLOT_SIZE;
}

// Fills the string entry at `p` (meta_alloc's slots) and publishes it.
static void store_string(uint8_t* p, const void* bytes, size_t len, uint8_t subkind) {
  auto* s = reinterpret_cast<lst_meta_string*>(p);
  s->len = uint32_t(len);
  memcpy(p + sizeof(lst_meta_string), bytes, len);
  __atomic_store_n(&s->word, LST_WORD(LST_KIND_STRING, string_check(uint32_t(len), bytes), subkind),
                   __ATOMIC_RELEASE);
}

static inline uint64_t intern_word(const uint8_t* p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}
static inline uint64_t intern_mix(uint64_t h, uint64_t w, uint64_t k) {
  h = (h ^ w) * k;
  return h ^ (h >> 32);
}
// Strings over 128 bytes: four independent lanes take eight bytes each per step.
static uint64_t intern_hash_long(const uint8_t* b, size_t len, uint64_t seed) {
  constexpr uint64_t k0 = 0xff51afd7ed558ccdull, k1 = 0xc4ceb9fe1a85ec53ull, k2 = 0x9e3779b97f4a7c15ull,
                     k3 = 0xd6e8feb86659fd93ull;
  uint64_t h0 = k2 ^ seed, h1 = k0, h2 = k1, h3 = k3;
  size_t i = 0;
  for (; i + 32 <= len; i += 32) {
    h0 = intern_mix(h0, intern_word(b + i), k0);
    h1 = intern_mix(h1, intern_word(b + i + 8), k1);
    h2 = intern_mix(h2, intern_word(b + i + 16), k2);
    h3 = intern_mix(h3, intern_word(b + i + 24), k3);
  }
  // The last 32 bytes again, overlapping the words before them (the length is in the seed).
  h0 = intern_mix(h0, intern_word(b + len - 32), k1);
  h1 = intern_mix(h1, intern_word(b + len - 24), k2);
  h2 = intern_mix(h2, intern_word(b + len - 16), k3);
  h3 = intern_mix(h3, intern_word(b + len - 8), k0);
  return (h0 ^ (h1 << 21 | h1 >> 43)) + ((h2 << 42 | h2 >> 22) ^ (h3 << 13 | h3 >> 51));
}
// Keys for intern_hash: every byte has its top bit set, so no word of ASCII text equals one (a word
// equal to its key would zero its product and hide the other word).
constexpr uint64_t kInternKeys[18] = {0xaacae79f82d3899full, 0x888ffe83acd0a9c9ull, 0xd6c2fba689a3acd9ull,
                                      0xdde0daabacde99cdull, 0x9e80f1eed1809addull, 0xf2b4b28b9df68ee9ull,
                                      0x99d5aacebbe2e8fdull, 0x879d8dc284a49d9full, 0xdc97c2d799f8a591ull,
                                      0xa7b282aba588d2b5ull, 0xc3b0f5fc9ea4fed3ull, 0xe1ece083929786a7ull,
                                      0xe886babdf085a4d9ull, 0xef95c7d297f6d1afull, 0xe4e59fa1a1c8efffull,
                                      0x918696fadeabcdfdull, 0x8484f69d8eb5bcd1ull, 0xfac287cfb4d0e0b3ull};
// The 128-bit product of a and b, its halves folded together.
static inline uint64_t intern_fold(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return uint64_t(p) ^ uint64_t(p >> 64);
}
// A hash of a string and its subkind, never 0. Up to 128 bytes, each 16 bytes (the last 16 overlapping
// the bytes before them) with keys of their own make one product, and the products are summed: they are
// independent, so a tensor name of 68 bytes costs the latency of one multiply and a few adds, where a
// chain of multiplies took one per eight bytes. On a name at an address the caller's cache does not
// know, the hash is on the path of every call.
static uint64_t intern_hash(const void* bytes, size_t len, uint8_t subkind) {
  const auto* b = static_cast<const uint8_t*>(bytes);
  const uint64_t seed = uint64_t(len) << 8 | subkind;
  uint64_t h;
  if (len > 128) {
    h = intern_hash_long(b, len, seed);
  } else {
    h = seed * kInternKeys[16];
    if (len > 16) {
      size_t i = 0, k = 0;
      for (; i + 16 < len; i += 16, k += 2)
        h += intern_fold(intern_word(b + i) ^ kInternKeys[k], intern_word(b + i + 8) ^ kInternKeys[k + 1]);
      h += intern_fold(intern_word(b + len - 16) ^ kInternKeys[k],
                       intern_word(b + len - 8) ^ kInternKeys[k + 1]);
    } else {
      // 0-16 bytes: two words overlapping, two halves of words overlapping, or three bytes (a copy of a
      // variable length would be a call).
      uint64_t lo = 0, hi = 0;
      if (len >= 8) {
        lo = intern_word(b);
        hi = intern_word(b + len - 8);
      } else if (len >= 4) {
        uint32_t x, y;
        memcpy(&x, b, sizeof x);
        memcpy(&y, b + len - 4, sizeof y);
        lo = x;
        hi = y;
      } else if (len > 0) {
        lo = uint64_t(b[0]) | uint64_t(b[len >> 1]) << 8 | uint64_t(b[len - 1]) << 16;
      }
      h += intern_fold(lo ^ kInternKeys[0], hi ^ kInternKeys[1]);
    }
  }
  h ^= h >> 31;
  h *= kInternKeys[17];
  h ^= h >> 29;
  return h | 1;
}

// The id of the string (bytes, subkind) in the intern table, 0 when it is not there; *free_pos: the
// first free entry of its probe sequence, or kInternSlots when the sequence is full. Safe without the
// lock: an entry is published by its hash, and each hit is compared with the stored string itself.
static uint32_t intern_find(const lst_header* h, const uint8_t* base, const Impl* im, const void* bytes,
                            size_t len, uint8_t subkind, uint64_t hash, uint32_t* free_pos) {
  uint32_t pos = uint32_t(hash >> 32) & (kInternSlots - 1);
  for (uint32_t probe = 0; probe < 64; ++probe, pos = (pos + 1) & (kInternSlots - 1)) {
    const InternEntry& e = im->intern[pos];
    const uint64_t eh = e.hash.load(std::memory_order_acquire);
    if (eh == 0) {
      *free_pos = pos;
      return 0;
    }
    if (eh != hash || e.len.load(std::memory_order_relaxed) != len) continue;
    const uint32_t id = e.id.load(std::memory_order_relaxed);
    const uint8_t* slot = base + h->meta_offset + uint64_t(id - 1) * LST_SLOT_SIZE;
    const uint32_t word =
        __atomic_load_n(&reinterpret_cast<const lst_meta_string*>(slot)->word, __ATOMIC_ACQUIRE);
    if (LST_WORD_FLAGS(word) == subkind && memcmp(slot + sizeof(lst_meta_string), bytes, len) == 0) return id;
  }
  *free_pos = kInternSlots;
  return 0;
}

static uint32_t intern_locked(lst_header* h, uint8_t* base, Impl* im, const void* bytes, size_t len,
                              uint8_t subkind, uint64_t hash) {
  uint32_t free_pos = kInternSlots;
  if (const uint32_t id = intern_find(h, base, im, bytes, len, subkind, hash, &free_pos)) return id;
  uint32_t first;
  uint8_t* p =
      meta_alloc(im, h, base, (sizeof(lst_meta_string) + len + LST_SLOT_SIZE - 1) / LST_SLOT_SIZE, &first);
  if (!p) return 0;
  store_string(p, bytes, len, subkind);
  const uint32_t id = first + 1;
  // Remembered in the first free entry of its probe sequence; a crowded one just means no dedup.
  if (free_pos < kInternSlots) {
    InternEntry& e = im->intern[free_pos];
    e.id.store(id, std::memory_order_relaxed);
    e.len.store(uint32_t(len), std::memory_order_relaxed);
    e.hash.store(hash, std::memory_order_release);
  }
  return id;
}
static uint32_t intern_locked(lst_header* h, uint8_t* base, Impl* im, const void* bytes, size_t len,
                              uint8_t subkind) {
  return intern_locked(h, base, im, bytes, len, subkind, intern_hash(bytes, len, subkind));
}

// A hash of a frame list, never 0. Two multiply chains over alternate frames, so the latency of a
// list of 6 is about 3 rounds rather than 6.
static uint64_t frames_hash(const uint64_t* f, size_t n) {
  uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0xc2b2ae3d27d4eb4full;
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    a = (a ^ f[i]) * 0xff51afd7ed558ccdull;
    b = (b ^ f[i + 1]) * 0xc4ceb9fe1a85ec53ull;
    a ^= a >> 29;
    b ^= b >> 31;
  }
  if (i < n) a = (a ^ f[i]) * 0xff51afd7ed558ccdull;
  const uint64_t h = (a ^ (b >> 17) ^ (b << 23)) * 0x94d049bb133111ebull;
  return (h ^ h >> 32) | 1;
}

uint32_t Writer::intern_frames(const uint64_t* frames, size_t n, bool* added) {
  *added = false;
  if (!header_ || n == 0 || n > 4096) return 0;
  auto* im = static_cast<Impl*>(impl_);
  const size_t len = n * sizeof(uint64_t);
  const uint64_t hash = frames_hash(frames, n);
  const uint8_t* meta = base_ + header_->meta_offset;
  auto same = [&](uint32_t id) {
    const uint8_t* slot = meta + uint64_t(id - 1) * LST_SLOT_SIZE;
    return reinterpret_cast<const lst_meta_string*>(slot)->len == len &&
           memcmp(slot + sizeof(lst_meta_string), frames, len) == 0;
  };
  // The list's id in its neighbourhood of the table (0: not there), and where it ends: the first free
  // entry, or null when the neighbourhood is full.
  const uint32_t home = uint32_t(hash >> 32) & (kFramesSlots - 1);
  auto find = [&](FramesEntry** free_entry) -> uint32_t {
    for (uint32_t probe = 0; probe < kFramesProbes; ++probe) {
      FramesEntry& e = im->frames[(home + probe) & (kFramesSlots - 1)];
      const uint64_t h = e.hash.load(std::memory_order_acquire);
      if (h == 0) {
        *free_entry = &e;
        return 0;
      }
      if (h == hash) {
        const uint32_t id = e.id.load(std::memory_order_relaxed);
        if (same(id)) return id;
      }
    }
    *free_entry = nullptr;
    return 0;
  };
  FramesEntry* free_entry = nullptr;
  if (const uint32_t id = find(&free_entry)) return id;
  // New here, or written by another thread since: looked up again under the lock, which is waited for
  // a bounded time only.
  if (!try_lock(im->meta_lock)) return 0;
  uint32_t id = find(&free_entry);
  const uint64_t nslots = (sizeof(lst_meta_string) + len + LST_SLOT_SIZE - 1) / LST_SLOT_SIZE;
  if (id == 0 && free_entry && !im->meta_full && header_->meta_next + nslots <= header_->meta_slots / 2) {
    uint32_t first;
    if (uint8_t* p = meta_alloc(im, header_, base_, nslots, &first)) {
      store_string(p, frames, len, LST_STR_FRAMES);
      id = first + 1;
      free_entry->id.store(id, std::memory_order_relaxed);
      free_entry->hash.store(hash, std::memory_order_release);
      *added = true;
    }
  }
  unlock(im->meta_lock);
  return id;
}

uint32_t Writer::intern(const void* bytes, size_t len, uint8_t subkind) {
  if (!header_ || len == 0 || len > 0xFFFFFFFFu - 64) return 0;
  auto* im = static_cast<Impl*>(impl_);
  // A string met before is found without the lock: the common case of a name passed again and again.
  const uint64_t hash = intern_hash(bytes, len, subkind);
  uint32_t free_pos;
  if (const uint32_t id = intern_find(header_, base_, im, bytes, len, subkind, hash, &free_pos)) return id;
  if (!try_lock(im->meta_lock)) {
    __atomic_fetch_add(&header_->dropped_meta, 1, __ATOMIC_RELAXED);
    return 0;
  }
  uint32_t id = intern_locked(header_, base_, im, bytes, len, subkind, hash);
  unlock(im->meta_lock);
  return id;
}

bool Writer::note_module(uint64_t addr) {
  // Python call sites are entered by add_python_module(), never found by walking the loaded objects.
  if (!header_ || addr == 0 || addr >= LST_PY_ADDR_BASE) return true;
  auto* im = static_cast<Impl*>(impl_);
  const uint32_t n = im->nmodules.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (addr >= im->modules[i].lo && addr < im->modules[i].hi) return true;
  if (n >= kMaxModules) return true;

  PhdrSearch s;
  memset(&s, 0, sizeof s);
  s.addr = addr;
  dl_iterate_phdr(phdr_callback, &s);
  if (!s.found) return true;

  if (!try_lock(im->meta_lock)) return false;
  const uint32_t m = im->nmodules.load(std::memory_order_relaxed);
  bool known = false;
  for (uint32_t i = 0; i < m; ++i) known = known || (s.lo == im->modules[i].lo && s.hi == im->modules[i].hi);
  if (!known && m < kMaxModules) {
    uint32_t path = intern_locked(header_, base_, im, s.path, strlen(s.path), LST_STR_TEXT);
    uint32_t build =
        s.build_id_len ? intern_locked(header_, base_, im, s.build_id, s.build_id_len, LST_STR_BUILD_ID) : 0;
    uint32_t first;
    if (uint8_t* p = meta_alloc(im, header_, base_, 1, &first)) {
      auto* mod = reinterpret_cast<lst_meta_module*>(p);
      mod->path = path;
      mod->base = s.base;
      mod->lo = s.lo;
      mod->hi = s.hi;
      mod->build_id = build;
      mod->check = module_check(mod);
      __atomic_store_n(&mod->word, LST_WORD(LST_KIND_MODULE, 0, 0), __ATOMIC_RELEASE);
    }
    // Known even when the table entry could not be written, so a full region is not searched again.
    im->modules[m] = {s.lo, s.hi};
    im->nmodules.store(m + 1, std::memory_order_release);
  }
  unlock(im->meta_lock);
  return true;
}

bool Writer::add_python_module(const char* file, size_t file_len, const char* function, size_t function_len,
                               uint64_t lo) {
  if (!header_) return false;
  auto* im = static_cast<Impl*>(impl_);
  if (!try_lock(im->meta_lock)) return false;
  bool ok = false;
  const uint32_t path = intern_locked(header_, base_, im, file, file_len, LST_STR_TEXT);
  const uint32_t fn = intern_locked(header_, base_, im, function, function_len, LST_STR_TEXT);
  uint32_t first;
  if (path && fn)
    if (uint8_t* p = meta_alloc(im, header_, base_, 1, &first)) {
      auto* mod = reinterpret_cast<lst_meta_module*>(p);
      mod->path = path;
      mod->base = lo;
      mod->lo = lo;
      mod->hi = lo + LST_PY_LINE_SPAN;
      mod->function = fn;
      mod->check = module_check(mod);
      __atomic_store_n(&mod->word, LST_WORD(LST_KIND_MODULE, 0, LST_MOD_PYTHON), __ATOMIC_RELEASE);
      ok = true;
    }
  unlock(im->meta_lock);
  return ok;
}

void Writer::set_world(int32_t rank, int32_t size) {
  if (!header_) return;
  auto* im = static_cast<Impl*>(impl_);
  __atomic_store_n(&header_->world_size, size, __ATOMIC_RELEASE);
  __atomic_store_n(&header_->world_rank, rank, __ATOMIC_RELEASE);
  if (rank < 0) return;
  char name[sizeof im->name];
  file_name(name, sizeof name, rank, im->host, im->pid);
  if (strcmp(name, im->name) == 0) return;
  // Never replace a file that is already there: keep the old name instead.
  bool moved = renameat2(im->dirfd, im->name, im->dirfd, name, RENAME_NOREPLACE) == 0;
  if (!moved && (errno == EINVAL || errno == ENOSYS)) {
    moved = linkat(im->dirfd, im->name, im->dirfd, name, 0) == 0;
    if (moved) unlinkat(im->dirfd, im->name, 0);
  }
  if (!moved) return;
  memcpy(im->name, name, sizeof name);
  // path_ is "<dir>/<name>": replace the part after the last '/'.
  char* slash = strrchr(path_, '/');
  if (slash) snprintf(slash + 1, sizeof path_ - size_t(slash + 1 - path_), "%s", name);
}

void Writer::set_end_state(uint32_t state) {
  if (header_) __atomic_store_n(&header_->end_state, state, __ATOMIC_RELEASE);
}

// The page cache already holds every store (MAP_SHARED), so closing needs no msync to survive the
// process; unmapping is all that differs from abandon().
void Writer::close() { abandon(); }

void Writer::abandon() {
  auto* im = static_cast<Impl*>(impl_);
  if (im && im->ahead_running && im->ahead_pid == getpid()) {
    im->ahead_stop.store(true, std::memory_order_release);
    im->ahead_wake.fetch_add(1, std::memory_order_release);
    futex(&im->ahead_wake, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(im->ahead_thread, nullptr);
  }
  if (base_ && im) munmap(base_, im->reserved_len);
  if (fd_ >= 0) ::close(fd_);
  if (im) {
    if (im->dirfd >= 0) ::close(im->dirfd);
    munmap(im, sizeof(Impl));
  }
  hot_ = Hot();
  header_ = nullptr;
  base_ = nullptr;
  fd_ = -1;
  impl_ = nullptr;
}

}  // namespace lockstep::format
