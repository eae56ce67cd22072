// Which MPI operations name a root rank. The checker's ingest and alignment, the report's timeline and
// `lockstep show` all read the root field of exactly these, so the list lives here once.
#pragma once

#include <cstdint>

#include "lockstep/format/layout.h"

namespace lockstep::check {

inline bool is_rooted(uint8_t op) {
  switch (op) {
    case LST_OP_BCAST:
    case LST_OP_REDUCE:
    case LST_OP_GATHER:
    case LST_OP_GATHERV:
    case LST_OP_SCATTER:
    case LST_OP_SCATTERV:
      return true;
    default:
      return false;
  }
}

}  // namespace lockstep::check
