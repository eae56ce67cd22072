// Synthetic traces written with the real Writer, as the tracer lays them out: a world communicator,
// optionally more, collectives cycling over them, MPI_Finalize. Used by the loader tests, the report
// validation and bench/check.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/format/writer.h"

namespace lockstep::check::gen {

__attribute__((noinline)) inline void site_a() { asm volatile(""); }
__attribute__((noinline)) inline void site_b() { asm volatile(""); }

struct Spec {
  std::string dir;
  std::string job = "synthetic-job";
  int32_t rank = 0, size = 4;
  uint64_t collectives = 100;    // per rank, over every communicator
  int comms = 1;                 // 1..3: world, a duplicate, a split in halves
  int64_t skip_at = -1;          // this rank leaves out call #skip_at (counted over all comms)
  int64_t count_change_at = -1;  // this rank passes twice the count at #count_change_at
  bool finalize = true;
  uint32_t chunk_records = 1u << 16;  // file growth unit: small keeps many-rank test jobs small on disk
  bool last_entered = false;          // the last collective never returns (a hang)
  int32_t blocked_recv_from = -1;     // then blocks in MPI_Recv from this rank of the world (format 1.1)
  bool two_sites = false;             // the world's calls alternate between two call sites, step by step
  uint64_t ring_records = 0;          // ring mode: keep only the last N records (0: growing file)
  uint32_t trailing_markers = 0;      // empty markers after the collectives: a ring keeps fewer of the calls
  int64_t nonblocking_from = -1;      // calls from #nonblocking_from on are nonblocking, never waited for
  uint32_t dtype_size = 4;            // bytes per element of every call
  uint32_t odd_dtype_size = 0;        // other than 0: the odd-numbered calls' element size instead
  uint64_t odd_count = 0;             // other than 0: the odd-numbered calls' count instead
  uint32_t messages = 0;       // after each collective, this many MPI_Send to the next rank and MPI_Recv from
                               // the previous one (a ring exchange; format 1.1 records)
  uint64_t spawned_world = 0;  // other than 0: an MPI_INIT marker saying MPI_Comm_spawn started the process
};

inline uint64_t comm_id(int which, int32_t rank) {
  if (which == 0) return 0x1000000000000001ull;
  if (which == 1) return 0x1000000000000002ull;
  return 0x1000000000000010ull + uint64_t(rank % 2);
}

inline std::string write_rank(const Spec& s) {
  format::Writer w;
  format::WriterConfig c;
  c.dir = s.dir.c_str();
  c.rank_hint = s.rank;
  c.job_id = s.job.c_str();
  c.cmdline = "synthetic";
  c.chunk_records = s.chunk_records;
  c.ring_records = s.ring_records;
  c.meta_slots = 256;
  c.max_records = ((s.collectives * (1 + 2 * uint64_t(s.messages)) + 64) | 0xFFFF) + 1;
  char err[256];
  if (!w.open(c, err, sizeof err)) throw std::runtime_error(err);
  w.set_world(s.rank, s.size);
  const uint64_t a = reinterpret_cast<uint64_t>(&site_a) + 4, b = reinterpret_cast<uint64_t>(&site_b) + 4;
  w.note_module(a);
  w.note_module(b);
  uint64_t id;
  auto add_comm = [&](uint64_t cid, uint8_t op, const std::vector<int32_t>& members, const char* name) {
    lst_record* r = w.reserve(&id);
    r->op = op;
    r->api = LST_API_MPI;
    r->comm = cid;
    r->u.comm.parent = op == LST_COMM_WORLD ? 0 : comm_id(0, 0);
    r->u.comm.color = op == LST_COMM_SPLIT ? s.rank % 2 : LST_NONE;
    r->u.comm.size = int32_t(members.size());
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == s.rank) r->u.comm.rank = int32_t(i);
    r->members = w.intern(members.data(), members.size() * sizeof(int32_t), LST_STR_MEMBERS);
    r->aux = w.intern(name, std::strlen(name));
    format::Writer::publish(r, LST_WORD(LST_KIND_COMM, LST_STATE_RETURNED, 0));
  };
  std::vector<int32_t> all, half;
  for (int32_t i = 0; i < s.size; ++i) {
    all.push_back(i);
    if (i % 2 == s.rank % 2) half.push_back(i);
  }
  add_comm(comm_id(0, s.rank), LST_COMM_WORLD, all, "MPI_COMM_WORLD");
  if (s.spawned_world) {
    lst_record* r = w.reserve(&id);
    r->op = LST_MARK_MPI_INIT;
    r->u.marker.extra = s.spawned_world;
    format::Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
  }
  if (s.comms > 1) add_comm(comm_id(1, s.rank), LST_COMM_DUP, all, "dup");
  if (s.comms > 2) add_comm(comm_id(2, s.rank), LST_COMM_SPLIT, half, "half");
  uint32_t seq[3] = {0, 0, 0};
  uint64_t t = 1000;
  for (uint64_t i = 0; i < s.collectives; ++i) {
    const int which = int(i % uint64_t(s.comms));
    if (int64_t(i) == s.skip_at) continue;
    lst_record* r = w.reserve(&id);
    if (!r) throw std::runtime_error("trace file full");
    r->op = which == 2 ? LST_OP_BCAST : LST_OP_ALLREDUCE;
    r->api = LST_API_MPI;
    r->dtype = LST_DT_FLOAT32;
    r->redop = which == 2 ? LST_RED_NONE : LST_RED_SUM;
    r->comm = comm_id(which, s.rank);
    r->u.coll.seq = seq[which]++;
    r->u.coll.root_or_peer = which == 2 ? 0 : LST_NONE;
    r->u.coll.dtype_size = i % 2 && s.odd_dtype_size ? s.odd_dtype_size : s.dtype_size;
    r->u.coll.id_lo = uint32_t(id);
    r->u.coll.count = int64_t(i) == s.count_change_at ? 2048 : 1024;
    if (i % 2 && s.odd_count) r->u.coll.count = s.odd_count;
    r->caller = which == 1 || (s.two_sites && which == 0 && (i / uint64_t(s.comms)) % 2) ? b : a;
    r->t_ns = t += 1000;
    r->t_return_us = 1;
    const bool last = i + 1 == s.collectives;
    const bool nonblocking = s.nonblocking_from >= 0 && int64_t(i) >= s.nonblocking_from;
    format::Writer::publish(
        r, LST_WORD(LST_KIND_COLLECTIVE, last && s.last_entered ? LST_STATE_ENTERED : LST_STATE_RETURNED,
                    nonblocking ? LST_F_NONBLOCKING : 0));
    for (uint32_t m = 0; m < 2 * s.messages; ++m) {
      const bool send = m % 2 == 0;
      lst_record* p = w.reserve(&id);
      if (!p) throw std::runtime_error("trace file full");
      p->op = send ? LST_OP_SEND : LST_OP_RECV;
      p->api = LST_API_MPI;
      p->dtype = LST_DT_FLOAT64;
      p->comm = comm_id(0, s.rank);
      p->u.coll.seq = m / 2;  // the tag
      p->u.coll.root_or_peer = send ? (s.rank + 1) % s.size : (s.rank + s.size - 1) % s.size;
      p->u.coll.dtype_size = 8;
      p->u.coll.id_lo = uint32_t(id);
      p->u.coll.count = 512;
      p->caller = send ? a : b;
      p->t_ns = t += 500;
      p->t_return_us = 1;
      format::Writer::publish(p, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, LST_F_P2P));
    }
  }
  if (s.blocked_recv_from >= 0) {
    lst_record* r = w.reserve(&id);
    r->op = LST_OP_RECV;
    r->api = LST_API_MPI;
    r->dtype = LST_DT_FLOAT32;
    r->comm = comm_id(0, s.rank);
    r->u.coll.seq = 7;  // the tag
    r->u.coll.root_or_peer = s.blocked_recv_from;
    r->u.coll.dtype_size = 4;
    r->u.coll.count = 16;
    r->caller = a;
    r->t_ns = t += 1000;
    format::Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, LST_F_P2P));
  }
  for (uint32_t i = 0; i < s.trailing_markers; ++i) {
    lst_record* r = w.reserve(&id);
    r->op = LST_MARK_NCCL_GROUP_START;
    r->t_ns = t += 10;
    format::Writer::publish(r, LST_WORD(LST_KIND_MARKER, LST_STATE_RETURNED, 0));
  }
  if (s.finalize) {
    lst_record* r = w.reserve(&id);
    r->op = LST_MARK_MPI_FINALIZE;
    r->t_ns = t + 1000;
    format::Writer::publish(r, LST_WORD(LST_KIND_MARKER, LST_STATE_RETURNED, 0));
    w.set_end_state(LST_END_EXIT);
  }
  std::string path = w.path();
  w.close();
  return path;
}

}  // namespace lockstep::check::gen
