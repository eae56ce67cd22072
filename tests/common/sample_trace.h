// A known sequence of records written through the real Writer, and small writer helpers: shared by the
// format unit tests, the `lockstep show` tests and the fuzz seed corpus.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "lockstep/format/writer.h"

namespace lockstep::test {

struct SampleCall {
  uint8_t kind, api, op, flags, state;
  uint64_t comm;
  uint64_t count;
  uint8_t dtype;
  uint32_t dtype_size;
  uint8_t redop;
  int32_t root_or_peer;
  const char* name;
};

// What the sample holds, in id order. Collective seq numbers are per communicator, from 0.
inline constexpr uint64_t kWorld = 0x1000, kNccl = 0x2000;
inline constexpr SampleCall kSample[] = {
    {LST_KIND_MARKER, LST_API_NONE, LST_MARK_PROCESS_START, 0, 0, 0, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_COMM, LST_API_MPI, LST_COMM_WORLD, 0, 0, kWorld, 0, 0, 0, 0, LST_NONE, "world"},
    {LST_KIND_COLLECTIVE, LST_API_MPI, LST_OP_ALLREDUCE, 0, LST_STATE_RETURNED, kWorld, 1024, LST_DT_FLOAT32,
     4, LST_RED_SUM, LST_NONE, nullptr},
    {LST_KIND_COLLECTIVE, LST_API_MPI, LST_OP_ALLREDUCE, LST_F_NONBLOCKING, LST_STATE_COMPLETED, kWorld, 8,
     LST_DT_INT64, 8, LST_RED_MAX, LST_NONE, nullptr},
    {LST_KIND_WAIT, LST_API_MPI, LST_WAIT_WAIT, 0, LST_STATE_RETURNED, kWorld, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_COLLECTIVE, LST_API_MPI, LST_OP_BCAST, 0, LST_STATE_RETURNED, kWorld, 16, LST_DT_BYTE, 1,
     LST_RED_NONE, 0, nullptr},
    {LST_KIND_COMM, LST_API_NCCL, LST_COMM_NCCL_INIT_RANK, 0, 0, kNccl, 0, 0, 0, 0, LST_NONE, "nccl-main"},
    {LST_KIND_MARKER, LST_API_NCCL, LST_MARK_NCCL_GROUP_START, 0, 0, 0, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_COLLECTIVE, LST_API_NCCL, LST_OP_SEND, LST_F_IN_GROUP, LST_STATE_RETURNED, kNccl, 256,
     LST_DT_BFLOAT16, 2, LST_RED_NONE, 1, nullptr},
    {LST_KIND_MARKER, LST_API_NCCL, LST_MARK_NCCL_GROUP_END, 0, 0, 0, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_COLLECTIVE, LST_API_NCCL, LST_OP_ALLREDUCE, 0, LST_STATE_ENTERED, kNccl, 4096, LST_DT_FLOAT16,
     2, LST_RED_AVG, LST_NONE, "grad/dense_1"},
    {LST_KIND_DEVICE, LST_API_CUDA, 0, 0, 0, kNccl, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_STACK, LST_API_NONE, 0, 0, 0, 0, 0, 0, 0, 0, LST_NONE, nullptr},
    {LST_KIND_MARKER, LST_API_NONE, LST_MARK_ANNOTATION, 0, 0, 0, 0, 0, 0, 0, LST_NONE, "step 1 done"},
    {LST_KIND_MARKER, LST_API_MPI, LST_MARK_MPI_FINALIZE, 0, LST_STATE_RETURNED, 0, 0, 0, 0, 0, LST_NONE,
     nullptr},
};
inline constexpr int kSampleMembers[] = {0, 1, 2, 3};

// Writes one sample call as the interposers do: fill, publish ENTERED, then move the state forward in
// place. `caller` is stored as the call site (and its module noted).
inline uint64_t write_call(format::Writer& w, const SampleCall& c, uint64_t caller, uint32_t seq) {
  uint64_t id = 0;
  lst_record* r = w.reserve(&id);
  if (!r) return UINT64_MAX;
  r->op = c.op;
  r->api = c.api;
  r->comm = c.comm;
  r->caller = caller;
  r->t_ns = w.header()->start_mono_ns + 1000 + id * 10;
  r->aux = c.name ? w.intern(c.name, std::strlen(c.name)) : 0;
  switch (c.kind) {
    case LST_KIND_COLLECTIVE:
      r->dtype = c.dtype;
      r->redop = c.redop;
      r->u.coll.seq = seq;
      r->u.coll.root_or_peer = c.root_or_peer;
      r->u.coll.dtype_size = c.dtype_size;
      r->u.coll.count = c.count;
      break;
    case LST_KIND_COMM:
      r->u.comm.parent = 0;
      r->u.comm.color = LST_NONE;
      r->u.comm.key = LST_NONE;
      r->u.comm.size = 4;
      r->u.comm.rank = 2;
      r->members = w.intern(kSampleMembers, sizeof kSampleMembers, LST_STR_MEMBERS);
      break;
    case LST_KIND_MARKER:
      r->u.marker.value = c.op == LST_MARK_PROCESS_START ? 4242 : 1;
      r->u.marker.ref = 0;
      r->u.marker.extra = 0;
      break;
    case LST_KIND_WAIT:
      r->u.wait.first_ref = id - 1;
      r->u.wait.nrequests = 1;
      r->u.wait.ncompleted = 1;
      r->u.wait.id = id;
      break;
    case LST_KIND_DEVICE:
      r->u.device.ref = id - 1;
      r->u.device.start_ns = 5000;
      r->u.device.end_ns = 6000;
      break;
    case LST_KIND_STACK:
      r->u.stack.ref = id - 2;
      r->u.stack.frames[0] = caller;
      r->u.stack.frames[1] = 0;
      break;
    default:  // the sample holds only the kinds above
      break;
  }
  w.note_module(caller);
  const bool stateful = c.kind == LST_KIND_COLLECTIVE || c.kind == LST_KIND_WAIT;
  format::Writer::publish(r, LST_WORD(c.kind, stateful ? uint8_t(LST_STATE_ENTERED) : c.state, c.flags));
  if (stateful) {
    for (uint8_t s = LST_STATE_RETURNED; s <= c.state; ++s) {
      r->t_return_us = 7;
      format::Writer::publish(w.at(id), LST_WORD(c.kind, s, c.flags));
    }
  }
  return id;
}

// Writes the whole sample; per-communicator seq numbers as the interposers keep them.
inline void write_sample(format::Writer& w, uint64_t caller) {
  uint32_t world_seq = 0, nccl_seq = 0;
  for (const SampleCall& c : kSample) {
    uint32_t seq = 0;
    if (c.kind == LST_KIND_COLLECTIVE) seq = c.comm == kWorld ? world_seq++ : nccl_seq++;
    write_call(w, c, caller, seq);
  }
}

// A writer configuration with small chunks and metadata, so that tests cross their boundaries.
inline format::WriterConfig small_config(const std::string& dir) {
  format::WriterConfig c;
  c.dir = dir.c_str();
  c.chunk_records = 64;
  c.meta_slots = 128;
  c.job_id = "job-42";
  c.cmdline = "./app --steps 3";
  return c;
}

// Opens `w` on `c` as a test does it: "" when the writer is open, else why not (what the test prints
// when it stops there: ASSERT_EQ(open_error(w, c), "")).
inline std::string open_error(format::Writer& w, const format::WriterConfig& c) {
  char err[256] = {};
  return w.open(c, err, sizeof err) ? std::string() : std::string("cannot open a writer: ") + err;
}

// Blocks a file holds on disk (its apparent size includes the metadata hole).
inline uint64_t disk_bytes(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
}

}  // namespace lockstep::test
