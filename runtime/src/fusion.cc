// Packing, one collective, unpacking: the fusion of small allreduces (docs/runtime.md, "Fusion").
#include "fusion.h"

#include <algorithm>

namespace lockstep::rt::internal {

Status FusionBuffer::allreduce(SetComm& set, const std::vector<std::shared_ptr<RequestState>>& states) {
  const Submission& first = states.front()->sub;
  const size_t esz = dtype_size(first.dtype);
  size_t total = 0;
  for (const auto& st : states) total += st->sub.count;
  if (total * esz > size_) {
    release();
    size_ = std::max(total * esz, threshold_);
    buf_ = backend_.alloc(size_);
  }
  char* base = static_cast<char*>(buf_);
  Status s;
  size_t off = 0;
  for (const auto& st : states) {
    if (s.ok()) s = backend_.copy(base + off, st->sub.in, st->sub.count * esz);
    off += st->sub.count * esz;
  }
  if (s.ok()) s = backend_.allreduce(set, buf_, buf_, total, first.dtype, first.reduce);
  off = 0;
  for (const auto& st : states) {
    if (s.ok()) s = backend_.copy(st->sub.out, base + off, st->sub.count * esz);
    off += st->sub.count * esz;
  }
  return s;
}

void FusionBuffer::release() {
  if (buf_) backend_.release(buf_);
  buf_ = nullptr;
  size_ = 0;
}

}  // namespace lockstep::rt::internal
