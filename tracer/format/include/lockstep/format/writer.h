// Trace writer used inside the traced process (liblockstep_trace.so): creates the per-process file
// and appends records through a MAP_SHARED mapping, so that whatever was published survives a hang,
// a crash or kill -9. No exceptions; no allocation or lock on the record path (growth and interning
// take a lock; interning is off the per-call path for everything but runtime tensor names).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lockstep/format/layout.h"

namespace lockstep::format {

struct WriterConfig {
  const char* dir = nullptr;          // trace directory; created 0700 when missing
  int32_t rank_hint = LST_NONE;       // world rank known from the launcher's environment, if any
  uint64_t ring_records = 0;          // 0: growing file; N: keep the last N records
  uint64_t initial_records = 4096;    // growing file: records it holds at first (256 KiB)
  uint64_t chunk_records = 1u << 16;  // largest growth step (records); steps double up to it
  uint64_t meta_slots = 1u << 16;     // metadata region size (slots; blocks allocated as it fills)
  uint64_t max_records = 1u << 26;  // growing file: records it may hold at most (address range reserved once)
  const char* job_id = "";          // groups the files of one job
  const char* cmdline = "";
};

class Writer {
 public:
  Writer() = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Creates <dir>/rank-<r>.<host>.<pid>.lstrace with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, writes the
  // header and maps the file. On failure returns false with a one-line reason in `err`.
  bool open(const WriterConfig& config, char* err, size_t err_len);
  bool is_open() const { return header_ != nullptr; }
  const char* path() const { return path_; }

  // Reserves the next record slot (one atomic add). Returns nullptr when the file cannot grow (the
  // drop is counted in the header). The slot's word is zero until publish(); u.coll.id_lo already
  // holds the id's low 32 bits (collective records keep it: it tells a ring reader the slot's owner).
  // Async-signal-safe: no allocation, no lock (growth is a bounded wait on the growing thread).
  lst_record* reserve(uint64_t* id);
  // Stores `word` with release order: every field written before is visible to a reader that
  // sees the word.
  static void publish(lst_record* r, uint32_t word);
  // The slot of a record reserved earlier, for in-place updates; nullptr when a ring has since
  // reused it.
  lst_record* at(uint64_t id);

  // Interns bytes into the metadata region; returns the string id (0 when the region is full or the
  // file system has no room for its page).
  uint32_t intern(const void* bytes, size_t len, uint8_t subkind = LST_STR_TEXT);
  // Makes sure the module containing `addr` is in the module table (dl_iterate_phdr on a miss).
  void note_module(uint64_t addr);
  // Adds a Python code object's module entry (layout.h, LST_MOD_PYTHON) for [lo, lo + LST_PY_LINE_SPAN).
  // Returns false when the metadata region is full or busy.
  bool add_python_module(const char* file, size_t file_len, const char* function, size_t function_len,
                         uint64_t lo);

  // Once MPI (or NCCL) tells the world rank and size; renames a rank-less file to its final name.
  void set_world(int32_t rank, int32_t size);
  void set_end_state(uint32_t state);
  lst_header* header() { return header_; }
  // Unmaps and closes; the file stays. Only when no other thread can still write a record. After
  // fork() the child calls abandon() instead: it unmaps without touching the parent's file.
  void close();
  void abandon();

 private:
  lst_header* header_ = nullptr;
  uint8_t* base_ = nullptr;  // start of the reserved address range the file is mapped into
  int fd_ = -1;
  char path_[4096] = {};
  void* impl_ = nullptr;  // growth lock, module ranges, intern table (writer.cc)
};

}  // namespace lockstep::format
