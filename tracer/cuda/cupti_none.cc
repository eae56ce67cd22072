// CUPTI entry points for builds without the CUDA toolkit: kernel activity is not recorded, and
// LOCKSTEP_TRACE_CUPTI=1 says so once.
#include <cstdlib>
#include <cstring>

#include "gpu_records.h"
#include "gpu_state.h"

namespace lockstep::trace::gpu {

void cupti_start() noexcept {
  const char* v = std::getenv("LOCKSTEP_TRACE_CUPTI");
  if (v && std::strcmp(v, "0") != 0 && *v)
    warn_once_stderr(kWarnCupti, "LOCKSTEP_TRACE_CUPTI is set but this tracer was built without CUPTI");
}
bool cupti_active() noexcept { return false; }
void cupti_bind_thread(const uint64_t*, size_t) noexcept {}
void cupti_flush(bool) noexcept {}

}  // namespace lockstep::trace::gpu
