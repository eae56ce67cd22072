// The writer's file handling: modes and directory creation, never following or overwriting what is at
// the target path, renaming a rankless file, a forked child, and growth on disk.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/format/reader.h"
#include "lockstep/format/writer.h"
#include "sample_trace.h"
#include "temp_dir.h"

namespace lockstep::format {
namespace {

using test::disk_bytes;
using test::open_error;
using test::read_all;
using test::small_config;
using test::TempDir;
using test::write_all;

TEST(FileSafety, ModesAndDirectoryCreation) {
  TempDir d;
  const std::string dir = d.path() + "/a/b";
  const mode_t old = umask(0);
  Writer w;
  WriterConfig c = small_config(dir);
  const std::string error = open_error(w, c);
  umask(old);
  ASSERT_EQ(error, "");
  struct stat st;
  ASSERT_EQ(stat(w.path(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat((d.path() + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_NE(std::string(w.path()).find("/rank-u."), std::string::npos) << "rank not known yet";
}

TEST(FileSafety, SymlinkAtTheTargetPathIsRefused) {
  TempDir d;
  std::string target;
  {
    Writer w;
    WriterConfig c = small_config(d.path());
    c.rank_hint = 5;
    ASSERT_EQ(open_error(w, c), "");
    target = w.path();
    w.close();
  }
  ASSERT_EQ(unlink(target.c_str()), 0);
  const std::string victim = d.path() + "/victim";
  write_all(victim, "precious");
  ASSERT_EQ(symlink(victim.c_str(), target.c_str()), 0);
  Writer w;
  char err[256] = {};
  WriterConfig c = small_config(d.path());
  c.rank_hint = 5;
  EXPECT_FALSE(w.open(c, err, sizeof err));
  EXPECT_NE(std::string(err).find(target), std::string::npos) << err;
  EXPECT_EQ(read_all(victim), "precious");
  struct stat st;
  ASSERT_EQ(lstat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(FileSafety, ExistingFileIsNeverOverwritten) {
  TempDir d;
  Writer a;
  char err[256];
  WriterConfig c = small_config(d.path());
  c.rank_hint = 1;
  ASSERT_EQ(open_error(a, c), "");
  Writer b;
  EXPECT_FALSE(b.open(c, err, sizeof err));
  EXPECT_FALSE(b.is_open());
}

TEST(SetWorld, RenamesARanklessFileButNeverOverAnother) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  const std::string before = w.path();
  w.set_world(3, 8);
  const std::string after = w.path();
  EXPECT_NE(after.find("/rank-3."), std::string::npos) << after;
  EXPECT_NE(access(after.c_str(), F_OK), -1);
  EXPECT_EQ(access(before.c_str(), F_OK), -1);
  w.close();
  TraceFile t = TraceFile::open(after);
  EXPECT_EQ(t.header().world_rank, 3);
  EXPECT_EQ(t.header().world_size, 8);

  // The final name is taken (another file): the trace keeps its rank-less name.
  ASSERT_EQ(rename(after.c_str(), (d.path() + "/moved").c_str()), 0);
  write_all(after, "someone else's file");
  Writer v;
  ASSERT_EQ(open_error(v, c), "");
  v.set_world(3, 8);
  EXPECT_EQ(std::string(v.path()), before);
  EXPECT_EQ(read_all(after), "someone else's file");
}

TEST(Fork, AbandonedChildLeavesTheParentsTraceAlone) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  uint64_t id;
  lst_record* first = w.reserve(&id);
  first->op = LST_MARK_PROCESS_START;
  Writer::publish(first, LST_WORD(LST_KIND_MARKER, 0, 0));
  const std::string p = w.path();
  const std::string before = read_all(p);
  pid_t child = fork();
  if (child == 0) {
    w.abandon();
    _exit(w.is_open() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(read_all(p), before);
  lst_record* r = w.reserve(&id);
  r->op = LST_MARK_PROCESS_END;
  Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
  w.close();
  TraceFile t = TraceFile::open(p);
  EXPECT_EQ(t.end_id(), 2u);
}

// A trace with the defaults the tracer uses starts at 264 KiB of disk (header page, one metadata
// page, 4,096 records) instead of 8 MiB, grows by doubling up to 4 MiB chunks, and the metadata region
// gets blocks as strings arrive: every page a store reaches is backed first (no SIGBUS on a full disk).
TEST(Writer, StartsSmallAndGrowsByDoubling) {
  TempDir d;
  Writer w;
  WriterConfig c;
  c.dir = d.path().c_str();
  ASSERT_EQ(open_error(w, c), "");
  EXPECT_EQ(w.header()->record_capacity, 4096u);
  EXPECT_LE(disk_bytes(w.path()), 264u * 1024 + 8192) << "a new trace holds more than 264 KiB of disk";
  EXPECT_TRUE(w.header()->flags & LST_HDR_CHECKED);
  std::vector<uint64_t> caps{w.header()->record_capacity};
  for (uint64_t i = 0; i < 70000; ++i) {
    uint64_t id;
    lst_record* r = w.reserve(&id);
    ASSERT_NE(r, nullptr) << "record " << i << " dropped";
    r->op = LST_MARK_PROCESS_START;
    Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
    const uint64_t cap = __atomic_load_n(&w.header()->record_capacity, __ATOMIC_ACQUIRE);
    if (cap != caps.back()) caps.push_back(cap);
  }
  // The helper may grow ahead of the writer, and a writer that outran it may grow too, so one change
  // seen here may be several steps; each step is the doubling or one whole chunk.
  for (size_t i = 1; i < caps.size(); ++i) {
    uint64_t cap = caps[i - 1];
    while (cap < caps[i]) cap += std::min<uint64_t>(cap, 65536);
    EXPECT_EQ(cap, caps[i]) << "growth from " << caps[i - 1] << " to " << caps[i] << " is not whole steps";
  }
  EXPECT_GE(caps.back(), 70000u);
  // Strings larger than the first metadata page land on backed pages and read back intact.
  const std::string big(20000, 'x');
  const uint32_t id = w.intern(big.data(), big.size());
  ASSERT_NE(id, 0u);
  const std::string p = w.path();
  w.close();
  TraceFile t = TraceFile::open(p);
  EXPECT_EQ(t.string(id), big);
  EXPECT_EQ(t.header().dropped_meta, 0u);
}

// Whether the page holding `addr` is mapped in this process's page table (/proc/self/pagemap bit 63),
// that is, whether a store there still takes a page fault.
bool page_present(const void* addr) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t e = 0;
  const off_t at = off_t(reinterpret_cast<uintptr_t>(addr) / 4096 * sizeof e);
  const bool ok = pread(fd, &e, sizeof e, at) == ssize_t(sizeof e);
  ::close(fd);
  return ok && (e >> 63) != 0;
}

// A writer that outruns the growth helper maps the next chunk itself but leaves faulting it in to the
// helper, which works from the chunk's end: the record path takes faults only for the pages it stores
// into (it used to fault in the whole chunk, 256 pages here, on the call that crossed into it), and the
// rest of the chunk is still faulted in ahead of the writer.
TEST(Writer, OutrunningTheHelperFaultsOnlyThePagesTheWriterTouches) {
  TempDir d;
  Writer w;
  WriterConfig c;
  c.dir = d.path().c_str();
  c.initial_records = 16384;  // one chunk of 1 MiB, prefaulted when the file is opened
  c.chunk_records = 16384;
  ASSERT_EQ(open_error(w, c), "");
  rusage before{}, after{};
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &before), 0);
  // Reserving without filling the slots outruns the helper: it is woken a quarter of the way through
  // the first chunk and has a few microseconds to wake up before this thread needs the second one.
  lst_record* r = nullptr;
  uint64_t id = 0;
  for (uint64_t i = 0; i <= 16384; ++i) r = w.reserve(&id);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(id, 16384u);
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &after), 0);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 16)
      << "the record path faulted in pages it never stored into";
  // The second chunk's last page gets faulted in by the helper (bounded wait, no timing asserted).
  const auto* records = reinterpret_cast<const uint8_t*>(w.header()) + w.header()->records_offset;
  const uint8_t* last = records + (2 * 16384 - 1) * LST_SLOT_SIZE;
  bool present = false;
  for (int i = 0; i < 2000 && !(present = page_present(last)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(present) << "the helper never faulted in the chunk the writer mapped";
  EXPECT_GE(w.header()->record_capacity, 2u * 16384);
}

}  // namespace
}  // namespace lockstep::format
