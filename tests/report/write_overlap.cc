// Writes a 2-rank job whose calls on one communicator overlap in time (each enters before the previous
// one returned, as calls from two threads can), with times on the real monotonic clock: the export must
// keep every slice's absolute times where the lane's time goes back. Between them, calls on an NCCL
// communicator with device times: two lanes written together, and a device track.
#include <time.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/format/writer.h"

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: report_write_overlap DIR\n");
    return 2;
  }
  constexpr int kRanks = 2, kCalls = 40;
  constexpr uint64_t kWorld = 0x1000000000000001ull, kNccl = 0x2000000000000002ull;
  for (int rank = 0; rank < kRanks; ++rank) {
    lockstep::format::Writer w;
    lockstep::format::WriterConfig c;
    c.dir = argv[1];
    c.rank_hint = rank;
    c.job_id = "overlap-job";
    c.cmdline = "overlap";
    c.meta_slots = 64;
    char err[256];
    if (!w.open(c, err, sizeof err)) throw std::runtime_error(err);
    w.set_world(rank, kRanks);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t t = uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec) + 1000;
    uint64_t id;
    std::vector<int32_t> all{0, 1};
    // Both communicators hold both ranks.
    auto comm = [&](uint8_t op, uint8_t api, uint64_t handle, const std::string& name) {
      lst_record* rec = w.reserve(&id);
      if (!rec) throw std::runtime_error("trace file full");
      rec->op = op;
      rec->api = api;
      rec->comm = handle;
      rec->u.comm.parent = 0;
      rec->u.comm.color = LST_NONE;
      rec->u.comm.key = LST_NONE;
      rec->u.comm.size = kRanks;
      rec->u.comm.rank = rank;
      rec->members = w.intern(all.data(), all.size() * sizeof(int32_t), LST_STR_MEMBERS);
      rec->aux = w.intern(name.data(), name.size());
      lockstep::format::Writer::publish(rec, LST_WORD(LST_KIND_COMM, LST_STATE_RETURNED, 0));
    };
    comm(LST_COMM_WORLD, LST_API_MPI, kWorld, "MPI_COMM_WORLD");
    comm(LST_COMM_NCCL_INIT_RANK, LST_API_NCCL, kNccl, "nccl");
    lst_record* r = nullptr;
    for (uint32_t i = 0; i < kCalls; ++i) {
      r = w.reserve(&id);
      if (!r) throw std::runtime_error("trace file full");
      r->op = LST_OP_ALLREDUCE;
      r->api = LST_API_MPI;
      r->dtype = LST_DT_FLOAT32;
      r->redop = LST_RED_SUM;
      r->comm = kWorld;
      r->u.coll.seq = i;
      r->u.coll.root_or_peer = LST_NONE;
      r->u.coll.dtype_size = 4;
      r->u.coll.id_lo = uint32_t(id);
      r->u.coll.count = 256;
      r->caller = 0;
      // Every other call lasts 50 us and the next one enters 20 us after it: they overlap.
      r->t_ns = t += 20000 + 1000 * uint64_t(rank);
      r->t_return_us = i % 2 ? 1 : 50;
      lockstep::format::Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, 0));
      if (i % 4 != 1) continue;
      // Every fourth call, an NCCL allreduce that its kernel ran 3-7 us after, and its device times.
      r = w.reserve(&id);
      if (!r) throw std::runtime_error("trace file full");
      const uint64_t nccl_id = id, t_nccl = t + 500;
      r->op = LST_OP_ALLREDUCE;
      r->api = LST_API_NCCL;
      r->dtype = LST_DT_FLOAT16;
      r->redop = LST_RED_SUM;
      r->comm = kNccl;
      r->u.coll.seq = i / 4;
      r->u.coll.root_or_peer = LST_NONE;
      r->u.coll.dtype_size = 2;
      r->u.coll.id_lo = uint32_t(id);
      r->u.coll.count = 1024;
      r->caller = 0;
      r->t_ns = t_nccl;
      r->t_return_us = 2;
      lockstep::format::Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_COMPLETED, 0));
      r = w.reserve(&id);
      if (!r) throw std::runtime_error("trace file full");
      r->api = LST_API_CUDA;
      r->comm = kNccl;
      r->u.device.ref = nccl_id;
      r->u.device.start_ns = t_nccl + 3000;
      r->u.device.end_ns = t_nccl + 7000 + 1000 * i;
      lockstep::format::Writer::publish(r, LST_WORD(LST_KIND_DEVICE, 0, 0));
    }
    r = w.reserve(&id);
    r->op = LST_MARK_MPI_FINALIZE;
    r->t_ns = t + 100000;
    lockstep::format::Writer::publish(r, LST_WORD(LST_KIND_MARKER, LST_STATE_RETURNED, 0));
    w.set_end_state(LST_END_EXIT);
    w.close();
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "report_write_overlap: %s\n", e.what());
  return 2;
}
