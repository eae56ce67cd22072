// libFuzzer entry for the trace reader: any bytes, opened and walked the way every tool walks a
// trace. A FormatError is the expected answer to garbage; anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "lockstep/format/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::format;
  // The reader takes a path: one memory file, rewritten for every input.
  static const int fd = memfd_create("lstrace-fuzz", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0) return 0;
  if (size && pwrite(fd, data, size, 0) != ssize_t(size)) return 0;
  try {
    TraceFile t = TraceFile::open(path);
    t.validate();
    size_t sum = t.host().size() + t.cmdline().size() + t.job_id().size() + t.tracer_version().size();
    for (const Module& m : t.modules()) sum += m.path.size() + m.build_id.size();
    for (uint64_t id = t.first_id(); id < t.end_id(); ++id) {
      const lst_record* r = t.record(id);
      if (!r) continue;
      sum += op_name(*r).size() + t.string(r->aux).size() + t.offset_of(id);
      sum += std::string(dtype_name(r->dtype)).size() + std::string(redop_name(r->redop)).size();
      sum += std::string(state_name(LST_WORD_STATE(r->word))).size();
      if (LST_WORD_KIND(r->word) == LST_KIND_COMM) sum += t.members(r->members).size();
    }
    if (sum == 1) std::fputc(' ', stderr);  // keeps the walk from being optimised away
  } catch (const FormatError&) {
  }
  return 0;
}
