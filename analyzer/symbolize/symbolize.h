// Turns call-site addresses recorded in a trace (return addresses plus the trace's module table) into
// function and file:line, by running llvm-symbolizer (or addr2line) over module-relative offsets.
// Runs in the analyzer, never in the traced process.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lockstep/format/reader.h"

namespace lockstep::symbolize {

struct Location {
  std::string module;    // path of the module the address is in; empty if in none
  uint64_t offset = 0;   // module-relative address that was looked up
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file; empty when unknown
  uint32_t line = 0;
  uint32_t column = 0;
  std::string problem;  // why it could not be resolved, when it could not ("module changed since the trace")
  bool python = false;  // a Python frame (format 1.2): file, line and function come from the trace

  bool has_line() const { return !file.empty() && line != 0; }
  // "file:line" ("train.py:88 in step()" for a Python frame), or "module+0xoffset" without line
  // information, or "0xaddr".
  std::string site(bool basename = false) const;
};

struct Options {
  std::string tool;  // program to run; empty: LOCKSTEP_SYMBOLIZER, then llvm-symbolizer-19, then addr2line
  bool check_build_id = true;  // refuse to symbolize a module whose file on disk has another build id
};

class Symbolizer {
 public:
  explicit Symbolizer(const Options& options = {});

  // Location of the call whose return address is `return_address` (looks up return_address - 1, the
  // call instruction itself). Results are cached; a batch runs one tool process per module set.
  std::vector<Location> call_sites(const std::vector<format::Module>& modules,
                                   const std::vector<uint64_t>& return_addresses);
  Location call_site(const std::vector<format::Module>& modules, uint64_t return_address);

  // The tool that will be used ("" when none was found: locations then carry module+offset only).
  const std::string& tool() const { return tool_; }
  bool is_addr2line() const { return addr2line_; }
  // Processes started so far (the cache keeps repeated lookups from starting more).
  int runs() const { return runs_; }

 private:
  std::string tool_;
  bool addr2line_ = false;
  bool check_build_id_ = true;
  int runs_ = 0;
  std::map<std::pair<std::string, uint64_t>, Location> cache_;
  std::map<std::string, bool> build_id_ok_;  // path + expected id -> file on disk matches
  void run_tool(const std::vector<std::pair<std::string, uint64_t>>& queries);
};

// GNU build id of an ELF file on disk, as lowercase hex; empty if none or unreadable.
std::string read_build_id(const std::string& path);

}  // namespace lockstep::symbolize
