// Validating reader for .lstrace files: maps a file read-only and hands out checked views of its
// header, records, strings and module table. It never trusts a length or offset it read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/format/layout.h"

namespace lockstep::format {

// A file that cannot be read as a trace: names the file and the byte offset of the problem.
class FormatError : public std::runtime_error {
 public:
  FormatError(std::string file, uint64_t offset, const std::string& what);
  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }

 private:
  std::string file_;
  uint64_t offset_;
};

struct Module {
  std::string path;
  std::string build_id;  // hex, empty if none
  uint64_t base = 0;     // load address
  uint64_t lo = 0, hi = 0;
  std::string function;  // Python code (lo >= LST_PY_ADDR_BASE): the function's qualified name
};

class TraceFile {
 public:
  // Maps `path` and validates the header and metadata region; throws FormatError.
  static TraceFile open(const std::string& path);
  TraceFile(TraceFile&&) noexcept;
  TraceFile& operator=(TraceFile&&) noexcept;
  TraceFile(const TraceFile&) = delete;
  ~TraceFile();

  const std::string& path() const { return path_; }
  const lst_header& header() const { return *header_; }

  // Record ids [first_id(), end_id()) are the ones still in the file (ring mode drops old ones).
  uint64_t first_id() const { return first_id_; }
  uint64_t end_id() const { return end_id_; }
  // The published record with this id, or nullptr for a slot that was reserved but never published
  // (or, in ring mode, already overwritten by a later record). Fields are validated by validate().
  const lst_record* record(uint64_t id) const;
  // Byte offset of a record slot in the file, for error messages.
  uint64_t offset_of(uint64_t id) const;

  // Checks every published record (kind, op, enum ranges, string ids); throws FormatError naming
  // the first bad one. Counts unpublished slots.
  void validate();
  uint64_t unpublished() const { return unpublished_; }
  // The FormatError for a record that verify_record (record_check.h) found damaged: its byte offset
  // and, for 2.x files, the bytes its check covers.
  [[noreturn]] void throw_damaged(uint64_t id, uint32_t word) const;
  // Ring mode: collective slots found holding an older record than the id they stand for (a writer
  // had reserved the id but not yet refilled the slot). Counted by validate().
  uint64_t overwritten() const { return overwritten_; }
  // The header's fixed-size text fields, cut at their first NUL and never past their size.
  std::string host() const;
  std::string job_id() const;
  std::string cmdline() const;
  std::string tracer_version() const;

  // Interned text by id; empty for 0. Throws FormatError for an id that does not name a string.
  std::string_view string(uint32_t id) const;
  // Members blob (world ranks) by id; empty for 0.
  std::vector<int32_t> members(uint32_t id) const;
  // The frames of a STACK record, outermost last: its own two (the zeros left out), then (2.2) those
  // of its frame list. Throws FormatError when its aux names no frame list.
  std::vector<uint64_t> stack_frames(const lst_record& stack) const;
  // (2.1) Ring mode: copies of the COMM creation records, in the order they were made (the ring may
  // have overwritten the records themselves).
  std::vector<lst_record> comm_copies() const;
  const std::vector<Module>& modules() const { return modules_; }

 private:
  TraceFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  const lst_header* header_ = nullptr;
  uint64_t first_id_ = 0, end_id_ = 0;
  uint64_t unpublished_ = 0;
  uint64_t overwritten_ = 0;
  uint64_t meta_used_ = 0;             // metadata slots walked and found valid
  std::vector<uint8_t> string_start_;  // per metadata slot: subkind + 1 where a string starts, else 0
  std::vector<Module> modules_;
  void check_string_id(uint32_t id, uint64_t at, const char* what, uint64_t record_id) const;
};

// A trace file's name as the writer gives it: rank-<rank|u>.<host>.<pid>.lstrace, or
// .rank-<rank|u>.<host>.<pid>.lstrace.creating while the file is being created. The host may hold dots.
struct TraceFileName {
  int32_t rank = -1;  // -1: "u", no rank known when the file was named
  std::string host;
  int32_t pid = 0;  // > 0
  bool creating = false;
};
// The parts of a file name (no directory), or nullopt for a name the writer does not give.
std::optional<TraceFileName> parse_trace_file_name(std::string_view name);

// The trace files in a directory (*.lstrace regular files, never following symlinks), ordered by world
// rank (rank-less files last), then host and pid. Each *.lstrace entry that is not a regular file (a
// symbolic link, a FIFO, a directory) is left out and, with `skipped`, named there in one line.
// Throws FormatError when `dir` cannot be read.
std::vector<std::string> find_traces(const std::string& dir, std::vector<std::string>* skipped = nullptr);

// The frames of a STACK record given the bytes of its frame list (empty when it has none): its own two,
// the zeros left out, then the list's, a whole 8 bytes each. For readers whose records come from
// elsewhere than a TraceFile (the checker's record sources); TraceFile::stack_frames checks the list.
std::vector<uint64_t> stack_frames_of(const lst_record& stack, std::string_view list);

// Names for enum values, shared by show, check and the report renderers.
// op_name gives the API's own spelling: "MPI_Iallreduce", "ncclAllReduce", "rt.allreduce".
std::string op_name(const lst_record& r);
const char* dtype_name(uint8_t dtype);
const char* redop_name(uint8_t redop);
const char* state_name(uint8_t state);
const char* kind_name(uint8_t kind);
const char* comm_op_name(uint8_t op);
const char* marker_name(uint8_t op);
const char* api_name(uint8_t api);
const char* wait_op_name(uint8_t op);
const char* end_state_name(uint32_t state);
// (2.0) What a COLLECTIVE record's handles and root stand for, null handles included: "MPI_COMM_NULL"
// for an MPI record made on comm 0, "" for another comm; "MPI_DATATYPE_NULL" for an MPI record whose
// operation takes a datatype and has none, else dtype_name(); "MPI_ROOT", "MPI_PROC_NULL" or the number.
const char* null_comm_name(const lst_record& r);
const char* dtype_text(const lst_record& r);
std::string root_text(int32_t root);

}  // namespace lockstep::format
