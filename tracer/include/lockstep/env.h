// The environment variables the tracer (its MPI, NCCL, Python and CUDA parts) and `lockstep run` read,
// in one table: name, type, default and one line of documentation. docs/tracer.md's table is checked
// against this one, both ways, by tests/tracer/env_table_test.cc. Usable in the injected library: no
// exceptions, no allocation.
#ifndef LOCKSTEP_ENV_H
#define LOCKSTEP_ENV_H

#include <cstdlib>
#include <cstring>

namespace lockstep::env {

enum class Var : int {
  kTraceDir,
  kTraceRing,
  kTraceStack,
  kTraceStackUnwind,
  kTraceStackStats,
  kTraceP2p,
  kTraceFortran,
  kTracePython,
  kTracePythonRead,
  kTracePythonStats,
  kTraceClock,
  kTraceTscSkew,
  kTraceDevice,
  kTraceCupti,
  kCupti,
  kCudart,
  kJobId,
  kTracerLib,
  kCount,
};

struct Entry {
  Var var;
  const char* name;
  // "path", "string", "count" (a non-negative integer), "switch" (0 is off, any other value on) or
  // "a/b" (one of the words).
  const char* type;
  const char* fallback;  // the behaviour when unset, as docs/tracer.md says it
  const char* doc;       // Markdown, as in docs/tracer.md
};

// Ordered as Var (the static_asserts below hold it so).
inline constexpr Entry kTable[] = {
    {Var::kTraceDir, "LOCKSTEP_TRACE_DIR", "path", "unset",
     "where the traces go (created `0700`); without it the library does nothing"},
    {Var::kTraceRing, "LOCKSTEP_TRACE_RING", "count", "0",
     "keep only the last N records per process (long production jobs); 0 keeps them all"},
    {Var::kTraceStack, "LOCKSTEP_TRACE_STACK", "count", "0",
     "keep N caller frames per collective (at most 64): the call site plus N-1 frames above it, in STACK "
     "records (below, \"Call stacks\")"},
    {Var::kTraceStackUnwind, "LOCKSTEP_TRACE_STACK_UNWIND", "auto/fp/dwarf", "auto",
     "`auto`: frame pointers where confirmed, else unwind rules read once per return address from the call "
     "frame information and confirmed by the DWARF unwinder, else the DWARF unwinder; `fp`: frame pointers "
     "only; `dwarf`: the DWARF unwinder only"},
    {Var::kTraceStackStats, "LOCKSTEP_TRACE_STACK_STATS", "switch", "0",
     "`1`: at exit, one line per process on stderr: how many stacks needed the DWARF unwinder, and how many "
     "were stepped by unwind rules"},
    {Var::kTraceP2p, "LOCKSTEP_TRACE_P2P", "switch", "1",
     "`0`: do not record MPI point-to-point calls (recorded by default, below)"},
    {Var::kTraceFortran, "LOCKSTEP_TRACE_FORTRAN", "switch", "1",
     "`0`: leave the MPI Fortran bindings' calls untraced (traced by default, below)"},
    {Var::kTracePython, "LOCKSTEP_TRACE_PYTHON", "switch", "1",
     "`0`: keep native call sites for calls made from Python (below): the tracer then never takes the GIL"},
    {Var::kTracePythonRead, "LOCKSTEP_TRACE_PYTHON_READ", "auto/api", "auto",
     "`auto`: read a Python call site from the thread's frame stack, without the GIL, where the interpreter "
     "is the version the tracer was built for (below); `api`: always through CPython's C API, with the GIL"},
    {Var::kTracePythonStats, "LOCKSTEP_TRACE_PYTHON_STATS", "switch", "0",
     "`1`: at exit, one line per process on stderr: how many Python call sites were read each way"},
    {Var::kTraceClock, "LOCKSTEP_TRACE_CLOCK", "tsc/monotonic", "tsc",
     "`monotonic`: stamp every record with a `clock_gettime(CLOCK_MONOTONIC)` call instead of the "
     "TSC-derived clock (below)"},
    {Var::kTraceTscSkew, "LOCKSTEP_TRACE_TSC_SKEW_PPM", "count", "0",
     "for tests: make the first estimate of the TSC rate this many parts per million high, as a poor "
     "calibration would (the rate is refined at a thread's first re-anchor)"},
    {Var::kTraceDevice, "LOCKSTEP_TRACE_DEVICE", "switch", "1",
     "`0`: no CUDA events, so NCCL collectives are not marked completed on the device ([gpu.md](gpu.md))"},
    {Var::kTraceCupti, "LOCKSTEP_TRACE_CUPTI", "switch", "0",
     "`1`: record the kernels each NCCL call launched with CUPTI ([gpu.md](gpu.md))"},
    {Var::kCupti, "LOCKSTEP_CUPTI", "path", "libcupti.so.13",
     "the CUPTI library `LOCKSTEP_TRACE_CUPTI=1` loads"},
    {Var::kCudart, "LOCKSTEP_CUDART", "path", "the program's",
     "the CUDA runtime the device events use; else the one the program loaded, else `libcudart.so`"},
    {Var::kJobId, "LOCKSTEP_JOB_ID", "string", "the launcher's",
     "groups the files of one job; else `PMIX_NAMESPACE`, `OMPI_MCA_ess_base_jobid`, `SLURM_JOB_ID`, "
     "`TORCHELASTIC_RUN_ID` (torchrun), else `ppid-<parent pid>@<host>`; `lockstep run` sets a fresh one"},
    {Var::kTracerLib, "LOCKSTEP_TRACER_LIB", "path", "../lib/liblockstep_trace.so",
     "the library `lockstep run` injects when `--tracer` is not given (default: next to `lockstep`)"},
};
static_assert(sizeof kTable / sizeof kTable[0] == static_cast<int>(Var::kCount), "one entry per Var");
constexpr bool table_in_var_order() {
  for (int i = 0; i < static_cast<int>(Var::kCount); ++i)
    if (static_cast<int>(kTable[i].var) != i) return false;
  return true;
}
static_assert(table_in_var_order(), "kTable[i].var == i");

constexpr const Entry& entry(Var v) { return kTable[static_cast<int>(v)]; }
constexpr const char* name(Var v) { return entry(v).name; }

// The value, or nullptr when the variable is unset or empty (both mean "not given").
inline const char* get(Var v) noexcept {
  const char* s = std::getenv(name(v));
  return s && *s ? s : nullptr;
}

// A switch: its table default when not given, else off only for "0".
inline bool on(Var v) noexcept {
  const char* s = get(v);
  return s ? std::strcmp(s, "0") != 0 : std::strcmp(entry(v).fallback, "0") != 0;
}

// The entry named `text` (a whole name), or nullptr: lets `lockstep run` catch a misspelt variable.
inline const Entry* find(const char* text, size_t len) noexcept {
  for (const Entry& e : kTable)
    if (std::strlen(e.name) == len && std::strncmp(e.name, text, len) == 0) return &e;
  return nullptr;
}

// Whether the tracer takes `value` as written, by the entry's type; an invalid value makes it fall back
// to the default (a count) or to the first word (a choice). `lockstep run` warns about those.
inline bool valid(const Entry& e, const char* value) noexcept {
  if (std::strcmp(e.type, "count") == 0) {
    if (!*value) return false;
    long long n = 0;
    for (const char* p = value; *p; ++p) {
      if (*p < '0' || *p > '9') return false;
      n = n * 10 + (*p - '0');
      if (n > 0x7fffffff) return false;
    }
    return true;
  }
  if (std::strchr(e.type, '/')) {
    const size_t len = std::strlen(value);
    for (const char* w = e.type; *w;) {
      const char* end = std::strchr(w, '/');
      const size_t n = end ? static_cast<size_t>(end - w) : std::strlen(w);
      if (n == len && std::strncmp(w, value, n) == 0) return true;
      w += n + (end ? 1 : 0);
    }
    return false;
  }
  return true;
}

}  // namespace lockstep::env

#endif  // LOCKSTEP_ENV_H
