// CUPTI entry points for builds without the CUDA toolkit: kernel activity is not recorded, and
// LOCKSTEP_TRACE_CUPTI=1 says so once.
#include "gpu_records.h"
#include "gpu_state.h"
#include "lockstep/env.h"

namespace lockstep::trace::gpu {

void cupti_start() noexcept {
  if (env::on(env::Var::kTraceCupti))
    warn_once_stderr(kWarnCupti, "LOCKSTEP_TRACE_CUPTI is set but this tracer was built without CUPTI");
}
bool cupti_active() noexcept { return false; }
void cupti_bind(uint64_t, const uint64_t*, size_t) noexcept {}
void cupti_flush(bool) noexcept {}

}  // namespace lockstep::trace::gpu
