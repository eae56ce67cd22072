// MPI point-to-point (format 1.1, LST_F_P2P): sends, receives and probes as COLLECTIVE records that take
// no collective sequence number. The tag is recorded in coll.seq and the peer, as the caller gave it, in
// coll.root_or_peer, so a rank blocked in a receive shows whom it waits for. LOCKSTEP_TRACE_P2P=0 turns
// the records off; the calls then only pass through.
#include <cstring>

#include "mpi_common.h"

namespace lockstep::trace::mpi {
namespace {

// The runtime's own control-plane messages (lockstep_control_plane) are its protocol, not the
// application's communication: only its collectives are recorded (with LST_F_CONTROL).
inline bool recording_p2p() noexcept { return g_trace_p2p && thread_state().control == 0; }

int32_t peer_of(int rank) noexcept {
  if (rank == MPI_ANY_SOURCE) return LST_ANY_SOURCE;
  if (rank == MPI_PROC_NULL) return LST_PROC_NULL;
  return rank;
}

int32_t tag_of(int tag) noexcept { return tag == MPI_ANY_TAG ? LST_ANY_TAG : tag; }

__attribute__((always_inline)) inline CollectiveArgs p2p_args_on(uint8_t op, int count, MPI_Datatype dt,
                                                                 int peer, int tag,
                                                                 CommEntry* comm) noexcept {
  CollectiveArgs a = args_on(op, comm, count, dt);
  a.flags |= LST_F_P2P;
  a.root_or_peer = peer_of(peer);
  a.tag = tag_of(tag);
  return a;
}
__attribute__((always_inline)) inline CollectiveArgs p2p_args(uint8_t op, int count, MPI_Datatype dt,
                                                              int peer, int tag, MPI_Comm comm) noexcept {
  return p2p_args_on(op, count, dt, peer, tag, comm_of(comm));
}

// MPI_Sendrecv: a SEND and a RECV record, both entered before the call and returned after it, with
// consecutive ids and one entry time and duration between them (one call: one clock reading at each
// end). MPI says not which half an error code is about, so both records fail with it; a process that
// ends inside the call names the RECV record, the half it waits in longest.
template <typename Call>
__attribute__((always_inline)) inline int send_and_receive(const CollectiveArgs& send,
                                                           const CollectiveArgs& recv, uint64_t caller,
                                                           Call&& call) {
  PendingPair p;
  collective_enter_pair(send, recv, caller, p);
  int rc;
  {
    InsideCall in(p.rec[1] != nullptr, p.id[1]);
    rc = call();
  }
  collective_return_pair(p, rc == MPI_SUCCESS);
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) {
    if (p.rec[0]) record_error(p.id[0], rc);
    if (p.rec[1]) record_error(p.id[1], rc);
  }
  return rc;
}

// A polling loop of MPI_Iprobe (or MPI_Improbe) is one PROBE record, NONBLOCKING: entered at the first
// poll that finds nothing, returned when a poll with the same arguments finds a message, or when the
// thread makes another point-to-point call. A loop that never succeeds leaves one ENTERED record —
// the rank is waiting for that peer — instead of one record per poll.
// Whether one is open is t_hot.polling, in the line every call reads anyway.
struct Poll {
  MPI_Comm comm = nullptr;
  int source = 0, tag = 0;
  Pending pending;
};
__attribute__((tls_model("initial-exec"))) thread_local Poll t_poll;

void close_poll(bool found) noexcept {
  collective_return(t_poll.pending, found);
  t_hot.polling = false;
}

inline void end_polling() noexcept {
  if (__builtin_expect(t_hot.polling, 0)) close_poll(true);
}

void polled(int source, int tag, MPI_Comm comm, bool found, uint64_t caller) noexcept {
  const bool same = t_hot.polling && t_poll.comm == comm && t_poll.source == source && t_poll.tag == tag;
  if (same) {
    if (found) close_poll(true);
    return;
  }
  end_polling();
  if (found) return;  // found at the first poll: nothing was waited for
  CollectiveArgs a = p2p_args(LST_OP_PROBE, 0, nullptr, source, tag, comm);
  a.flags |= LST_F_NONBLOCKING;
  keep_pending(t_poll.pending, collective_enter(a, caller));
  t_hot.polling = t_poll.pending.rec != nullptr;
  t_poll.comm = comm;
  t_poll.source = source;
  t_poll.tag = tag;
}

// A poll that MPI failed (a bad communicator, source or tag): it ends the polling loop, and is a PROBE
// record of its own, FAILED with its error, since a poll that finds nothing is not recorded.
__attribute__((noinline, cold)) void failed_poll(int source, int tag, MPI_Comm comm, int rc,
                                                 uint64_t caller) noexcept {
  end_polling();
  Pending p = collective_enter(p2p_args(LST_OP_PROBE, 0, nullptr, source, tag, comm), caller);
  returned(p, rc);
}

// MPI_Mrecv names a message, not a peer: the peer and tag come from the Mprobe that matched it.
struct Matched {
  MPI_Message message = nullptr;
  MPI_Comm comm = nullptr;
  int source = MPI_ANY_SOURCE, tag = MPI_ANY_TAG;
};
__attribute__((tls_model("initial-exec"))) thread_local Matched t_matched[4];
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_matched_next = 0;

void remember_match(MPI_Message m, MPI_Comm comm, int source, int tag, const MPI_Status* st) noexcept {
  if (!m || m == MPI_MESSAGE_NULL) return;
  Matched& e = t_matched[t_matched_next++ % 4];
  e.message = m;
  e.comm = comm;
  e.source = st ? st->MPI_SOURCE : source;
  e.tag = st ? st->MPI_TAG : tag;
}

CollectiveArgs mrecv_args(int count, MPI_Datatype dt, MPI_Message m) noexcept {
  for (Matched& e : t_matched)
    if (e.message == m && m) {
      CollectiveArgs a = p2p_args(LST_OP_RECV, count, dt, e.source, e.tag, e.comm);
      e.message = nullptr;
      return a;
    }
  // A message probed on another thread, or MPI_MESSAGE_NO_PROC: its communicator is not known here.
  const bool no_proc = m == MPI_MESSAGE_NO_PROC && m;
  CollectiveArgs a =
      p2p_args(LST_OP_RECV, count, dt, no_proc ? MPI_PROC_NULL : MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_NULL);
  return a;
}

}  // namespace
}  // namespace lockstep::trace::mpi

// A point-to-point wrapper: PASSTHROUGH, then straight through too when LOCKSTEP_TRACE_P2P=0.
#define P2P_PASSTHROUGH(fn, ...)                     \
  PASSTHROUGH(fn, __VA_ARGS__);                      \
  if (!recording_p2p()) return FORWARD(__VA_ARGS__); \
  end_polling()

// ---- sends and receives ----------------------------------------------------------------------------

// The four send modes (standard, synchronous, buffered, ready) record the same SEND: one body defines a
// mode's blocking call and its MPI_I* twin.
#define SEND_MODE(BLOCKING, NONBLOCKING)                                                                     \
  WRAP_EXPORT int BLOCKING(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {  \
    P2P_PASSTHROUGH(BLOCKING, buf, count, dt, dest, tag, comm);                                              \
    return blocking(p2p_args(LST_OP_SEND, count, dt, dest, tag, comm), caller,                               \
                    CALL_REAL(buf, count, dt, dest, tag, comm));                                             \
  }                                                                                                          \
  WRAP_EXPORT int NONBLOCKING(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, \
                              MPI_Request* req) {                                                            \
    P2P_PASSTHROUGH(NONBLOCKING, buf, count, dt, dest, tag, comm, req);                                      \
    return nonblocking(p2p_args(LST_OP_SEND, count, dt, dest, tag, comm), caller, req,                       \
                       CALL_REAL(buf, count, dt, dest, tag, comm, req));                                     \
  }
SEND_MODE(MPI_Send, MPI_Isend)
SEND_MODE(MPI_Ssend, MPI_Issend)
SEND_MODE(MPI_Bsend, MPI_Ibsend)
SEND_MODE(MPI_Rsend, MPI_Irsend)

// The receive and its twin, completed by the Wait/Test family through the request table.
WRAP_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                         MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Recv, buf, count, dt, source, tag, comm, st);
  return blocking(p2p_args(LST_OP_RECV, count, dt, source, tag, comm), caller,
                  CALL_REAL(buf, count, dt, source, tag, comm, st));
}

WRAP_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                          MPI_Request* req) {
  P2P_PASSTHROUGH(MPI_Irecv, buf, count, dt, source, tag, comm, req);
  return nonblocking(p2p_args(LST_OP_RECV, count, dt, source, tag, comm), caller, req,
                     CALL_REAL(buf, count, dt, source, tag, comm, req));
}

WRAP_EXPORT int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf,
                             int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                             MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Sendrecv, sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st);
  CommEntry* c = comm_of(comm);
  return send_and_receive(
      p2p_args_on(LST_OP_SEND, scount, stype, dest, stag, c),
      p2p_args_on(LST_OP_RECV, rcount, rtype, source, rtag, c), caller,
      CALL_REAL(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st));
}

WRAP_EXPORT int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int stag, int source,
                                     int rtag, MPI_Comm comm, MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Sendrecv_replace, buf, count, dt, dest, stag, source, rtag, comm, st);
  CommEntry* c = comm_of(comm);
  return send_and_receive(p2p_args_on(LST_OP_SEND, count, dt, dest, stag, c),
                          p2p_args_on(LST_OP_RECV, count, dt, source, rtag, c), caller,
                          CALL_REAL(buf, count, dt, dest, stag, source, rtag, comm, st));
}

// ---- probes and matched receives ---------------------------------------------------------------------

WRAP_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Probe, source, tag, comm, st);
  return blocking(p2p_args(LST_OP_PROBE, 0, nullptr, source, tag, comm), caller,
                  CALL_REAL(source, tag, comm, st));
}

WRAP_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* st) {
  PASSTHROUGH(MPI_Iprobe, source, tag, comm, flag, st);
  if (!recording_p2p()) return FORWARD(source, tag, comm, flag, st);
  int rc = FORWARD(source, tag, comm, flag, st);
  if (__builtin_expect(rc != MPI_SUCCESS, 0))
    failed_poll(source, tag, comm, rc, caller);
  else if (flag)
    polled(source, tag, comm, *flag != 0, caller);
  return rc;
}

WRAP_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* msg, MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Mprobe, source, tag, comm, msg, st);
  int rc = blocking(p2p_args(LST_OP_PROBE, 0, nullptr, source, tag, comm), caller,
                    CALL_REAL(source, tag, comm, msg, st));
  if (rc == MPI_SUCCESS && msg)
    remember_match(*msg, comm, source, tag, st == MPI_STATUS_IGNORE ? nullptr : st);
  return rc;
}

WRAP_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* msg, MPI_Status* st) {
  PASSTHROUGH(MPI_Improbe, source, tag, comm, flag, msg, st);
  if (!recording_p2p()) return FORWARD(source, tag, comm, flag, msg, st);
  int rc = FORWARD(source, tag, comm, flag, msg, st);
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) {
    failed_poll(source, tag, comm, rc, caller);
  } else if (flag) {
    polled(source, tag, comm, *flag != 0, caller);
    if (*flag && msg) remember_match(*msg, comm, source, tag, st == MPI_STATUS_IGNORE ? nullptr : st);
  }
  return rc;
}

WRAP_EXPORT int MPI_Mrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* msg, MPI_Status* st) {
  P2P_PASSTHROUGH(MPI_Mrecv, buf, count, dt, msg, st);
  return blocking(mrecv_args(count, dt, msg ? *msg : nullptr), caller, CALL_REAL(buf, count, dt, msg, st));
}

WRAP_EXPORT int MPI_Imrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* msg, MPI_Request* req) {
  P2P_PASSTHROUGH(MPI_Imrecv, buf, count, dt, msg, req);
  return nonblocking(mrecv_args(count, dt, msg ? *msg : nullptr), caller, req,
                     CALL_REAL(buf, count, dt, msg, req));
}
