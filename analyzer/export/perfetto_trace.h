// Perfetto's native protobuf trace (TracePacket / TrackEvent) of a job's collectives: the format
// ui.perfetto.dev reads fastest and the smallest to write. docs/report.md describes the layout.
#pragma once

#include <cstdint>
#include <cstdio>

#include "chrome_trace.h"
#include "lockstep/check/check.h"
#include "lockstep/report/timeline.h"

namespace lockstep::exporter {

struct PerfettoStats {
  uint64_t packets = 0, slices = 0, flows = 0, instants = 0;
  PerfettoStats& operator+=(const PerfettoStats& o) {
    packets += o.packets;
    slices += o.slices;
    flows += o.flows;
    instants += o.instants;
    return *this;
  }
};

// Streams the trace to `out`, one rank at a time: a process track per rank, a track per communicator
// under it (and one for device times when recorded), each call a begin/end slice pair whose names,
// argument values and call sites are interned once per packet sequence, flows joining a position of a
// communicator across its ranks, findings as instant events. Throws std::runtime_error when a write fails.
PerfettoStats write_perfetto_trace(const check::Job& job, const check::Result& result,
                                   report::Timeline& timeline, std::FILE* out,
                                   const ChromeOptions& options = {});

}  // namespace lockstep::exporter
