// MPI capture through the PMPI profiling interface: every MPI-3 collective (blocking and nonblocking),
// their completion in the Wait/Test family, communicator creation and destruction, Init/Finalize/Abort.
//
// The library never links libmpi: PMPI_* functions are looked up with dlsym on first use and the
// predefined handles (MPI_INT, MPI_SUM, MPI_COMM_WORLD, ...) are weak references, so the same file
// loads in a job without MPI, in a process linked with -z now, and next to any libmpi of this ABI.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "request_table.h"
#include "session.h"
#include "wrap.h"

// Predefined handles are addresses of objects inside libmpi (OpenMPI ABI). Weak, so that loading
// the tracer never fails when libmpi is absent; they are only compared against, never dereferenced.
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_comm_self
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_request_null
#pragma weak ompi_mpi_group_null
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_mpi_op_null
#pragma weak ompi_mpi_char
#pragma weak ompi_mpi_signed_char
#pragma weak ompi_mpi_unsigned_char
#pragma weak ompi_mpi_byte
#pragma weak ompi_mpi_packed
#pragma weak ompi_mpi_short
#pragma weak ompi_mpi_unsigned_short
#pragma weak ompi_mpi_int
#pragma weak ompi_mpi_unsigned
#pragma weak ompi_mpi_long
#pragma weak ompi_mpi_unsigned_long
#pragma weak ompi_mpi_long_long_int
#pragma weak ompi_mpi_unsigned_long_long
#pragma weak ompi_mpi_float
#pragma weak ompi_mpi_double
#pragma weak ompi_mpi_long_double
#pragma weak ompi_mpi_wchar
#pragma weak ompi_mpi_c_bool
#pragma weak ompi_mpi_int8_t
#pragma weak ompi_mpi_uint8_t
#pragma weak ompi_mpi_int16_t
#pragma weak ompi_mpi_uint16_t
#pragma weak ompi_mpi_int32_t
#pragma weak ompi_mpi_uint32_t
#pragma weak ompi_mpi_int64_t
#pragma weak ompi_mpi_uint64_t
#pragma weak ompi_mpi_aint
#pragma weak ompi_mpi_offset
#pragma weak ompi_mpi_count
#pragma weak ompi_mpi_float_int
#pragma weak ompi_mpi_double_int
#pragma weak ompi_mpi_long_int
#pragma weak ompi_mpi_2int
#pragma weak ompi_mpi_short_int
#pragma weak ompi_mpi_longdbl_int
#pragma weak ompi_mpi_op_max
#pragma weak ompi_mpi_op_min
#pragma weak ompi_mpi_op_sum
#pragma weak ompi_mpi_op_prod
#pragma weak ompi_mpi_op_land
#pragma weak ompi_mpi_op_band
#pragma weak ompi_mpi_op_lor
#pragma weak ompi_mpi_op_bor
#pragma weak ompi_mpi_op_lxor
#pragma weak ompi_mpi_op_bxor
#pragma weak ompi_mpi_op_maxloc
#pragma weak ompi_mpi_op_minloc
#pragma weak ompi_mpi_op_replace

using namespace lockstep::trace;

namespace {

// ---- PMPI lookup ---------------------------------------------------------------------------------

void* lookup_pmpi(const char* name) noexcept {
  void* p = dlsym(RTLD_NEXT, name);
  return p ? p : dlsym(RTLD_DEFAULT, name);
}

// wrap.h's contract.
struct WrapApi {
  static void* lookup(const char* name) noexcept { return lookup_pmpi(name); }
  static void missing(const char* name) noexcept {
    // An MPI_* call reached the tracer but no MPI library defines its PMPI_* twin.
    std::fprintf(stderr, "lockstep: %s not found in the process: cannot forward the MPI call\n", name);
    std::abort();
  }
  static int unavailable() noexcept { return MPI_ERR_INTERN; }
  static bool tracing() noexcept { return writer() != nullptr; }
};
#define REAL_TYPE(fn) decltype(&P##fn)
#define REAL_NAME(fn) "P" #fn

// ---- datatypes and reduction ops -------------------------------------------------------------------

struct TypeEntry {
  MPI_Datatype type;
  uint8_t dtype;
  uint32_t size;
};
// Most frequent first: the lookup is a linear scan on the hot path.
const TypeEntry kTypes[] = {
    {MPI_FLOAT, LST_DT_FLOAT32, 4},
    {MPI_DOUBLE, LST_DT_FLOAT64, 8},
    {MPI_INT, LST_DT_INT32, 4},
    {MPI_LONG, LST_DT_INT64, sizeof(long)},
    {MPI_BYTE, LST_DT_BYTE, 1},
    {MPI_CHAR, LST_DT_CHAR, 1},
    {MPI_UNSIGNED, LST_DT_UINT32, 4},
    {MPI_UNSIGNED_LONG, LST_DT_UINT64, sizeof(long)},
    {MPI_LONG_LONG_INT, LST_DT_INT64, 8},
    {MPI_UNSIGNED_LONG_LONG, LST_DT_UINT64, 8},
    {MPI_INT64_T, LST_DT_INT64, 8},
    {MPI_UINT64_T, LST_DT_UINT64, 8},
    {MPI_INT32_T, LST_DT_INT32, 4},
    {MPI_UINT32_T, LST_DT_UINT32, 4},
    {MPI_INT16_T, LST_DT_INT16, 2},
    {MPI_UINT16_T, LST_DT_UINT16, 2},
    {MPI_INT8_T, LST_DT_INT8, 1},
    {MPI_UINT8_T, LST_DT_UINT8, 1},
    {MPI_SHORT, LST_DT_INT16, 2},
    {MPI_UNSIGNED_SHORT, LST_DT_UINT16, 2},
    {MPI_SIGNED_CHAR, LST_DT_INT8, 1},
    {MPI_UNSIGNED_CHAR, LST_DT_UINT8, 1},
    {MPI_C_BOOL, LST_DT_BOOL, 1},
    {MPI_PACKED, LST_DT_PACKED, 1},
    {MPI_LONG_DOUBLE, LST_DT_LONG_DOUBLE, sizeof(long double)},
    {MPI_WCHAR, LST_DT_INT32, sizeof(wchar_t)},
    {MPI_AINT, LST_DT_INT64, sizeof(MPI_Aint)},
    {MPI_OFFSET, LST_DT_INT64, sizeof(MPI_Offset)},
    {MPI_COUNT, LST_DT_INT64, sizeof(MPI_Count)},
    {MPI_FLOAT_INT, LST_DT_PAIR, 0},
    {MPI_DOUBLE_INT, LST_DT_PAIR, 0},
    {MPI_LONG_INT, LST_DT_PAIR, 0},
    {MPI_2INT, LST_DT_PAIR, 0},
    {MPI_SHORT_INT, LST_DT_PAIR, 0},
    {MPI_LONG_DOUBLE_INT, LST_DT_PAIR, 0},
};

struct OpEntry {
  MPI_Op op;
  uint8_t redop;
};
const OpEntry kOps[] = {
    {MPI_SUM, LST_RED_SUM},         {MPI_MAX, LST_RED_MAX},       {MPI_MIN, LST_RED_MIN},
    {MPI_PROD, LST_RED_PROD},       {MPI_LAND, LST_RED_LAND},     {MPI_LOR, LST_RED_LOR},
    {MPI_BAND, LST_RED_BAND},       {MPI_BOR, LST_RED_BOR},       {MPI_LXOR, LST_RED_LXOR},
    {MPI_BXOR, LST_RED_BXOR},       {MPI_MINLOC, LST_RED_MINLOC}, {MPI_MAXLOC, LST_RED_MAXLOC},
    {MPI_REPLACE, LST_RED_REPLACE},
};

void set_dtype(CollectiveArgs& a, MPI_Datatype t) noexcept {
  if (t == MPI_DATATYPE_NULL || t == nullptr) {
    a.dtype = LST_DT_NONE;
    return;
  }
  for (const TypeEntry& e : kTypes) {
    if (e.type == t && t != nullptr) {
      a.dtype = e.dtype;
      a.dtype_size = e.size;
      if (e.size == 0) {
        int sz = 0;
        REAL(MPI_Type_size)(t, &sz);
        a.dtype_size = static_cast<uint32_t>(sz);
      }
      return;
    }
  }
  // A constructed type, or a predefined one without an lst_dtype (complex numbers): bytes compare.
  int sz = 0;
  REAL(MPI_Type_size)(t, &sz);
  a.dtype = LST_DT_DERIVED;
  a.dtype_size = sz > 0 ? static_cast<uint32_t>(sz) : 0;
  a.flags |= LST_F_DERIVED;
}

uint8_t redop_of(MPI_Op op) noexcept {
  for (const OpEntry& e : kOps)
    if (e.op == op && op != nullptr) return e.redop;
  return op == MPI_OP_NULL ? LST_RED_NONE : LST_RED_USER;
}

// ---- communicators ----------------------------------------------------------------------------

std::mutex g_mpi_mutex;             // world group and occurrence counters (creation paths only)
MPI_Group g_world_group = nullptr;  // MPI_COMM_WORLD's group, for translating members
uint64_t g_world_id = 0;

// World ranks of a communicator's members in its rank order (local group, then remote group for an
// intercommunicator). Only on creation paths.
struct Members {
  std::vector<int32_t> world;
  int32_t size = LST_NONE;
  int32_t rank = LST_NONE;
};

void append_group(MPI_Group g, std::vector<int32_t>& out) noexcept {
  int n = 0;
  REAL(MPI_Group_size)(g, &n);
  if (n <= 0) return;
  std::vector<int> in(static_cast<size_t>(n)), res(static_cast<size_t>(n), MPI_UNDEFINED);
  for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = i;
  if (g_world_group) REAL(MPI_Group_translate_ranks)(g, n, in.data(), g_world_group, res.data());
  for (int r : res) out.push_back(r == MPI_UNDEFINED ? LST_NONE : r);
}

Members members_of(MPI_Comm c) noexcept {
  Members m;
  int size = 0, rank = 0, inter = 0;
  REAL(MPI_Comm_size)(c, &size);
  REAL(MPI_Comm_rank)(c, &rank);
  m.size = size;
  m.rank = rank;
  MPI_Group g;
  if (REAL(MPI_Comm_group)(c, &g) == MPI_SUCCESS) {
    append_group(g, m.world);
    REAL(MPI_Group_free)(&g);
  }
  REAL(MPI_Comm_test_inter)(c, &inter);
  if (inter && REAL(MPI_Comm_remote_group)(c, &g) == MPI_SUCCESS) {
    append_group(g, m.world);
    REAL(MPI_Group_free)(&g);
  }
  return m;
}

uint64_t hash_members(uint64_t h, std::vector<int32_t> sorted) noexcept {
  std::sort(sorted.begin(), sorted.end());
  return hash_bytes(h, sorted.data(), sorted.size() * sizeof(int32_t));
}

template <typename T>
uint64_t mix(uint64_t h, const T& v) noexcept {
  return hash_bytes(h, &v, sizeof v);
}

// For creations that are collective over the new members only (Comm_create_group, Intercomm_create):
// the n-th creation with the same key on every member, so every member numbers them alike.
uint32_t occurrence(uint64_t key) noexcept {
  static struct {
    uint64_t key;
    uint32_t count;
  } table[1024];
  std::lock_guard<std::mutex> lock(g_mpi_mutex);
  size_t i = key & 1023;
  for (size_t probes = 0; probes < 1024; ++probes, i = (i + 1) & 1023) {
    if (table[i].key == key) return table[i].count++;
    if (table[i].key == 0) {
      table[i].key = key;
      table[i].count = 1;
      return 0;
    }
  }
  return 0;
}

CommEntry* register_comm(MPI_Comm c, uint8_t comm_op, uint64_t id, uint64_t parent, int32_t color,
                         int32_t key, const Members& m, uint64_t caller) noexcept {
  return comm_add(LST_API_MPI, reinterpret_cast<uintptr_t>(c), comm_op, id, parent, color, key, m.size,
                  m.rank, m.world.empty() ? nullptr : m.world.data(), nullptr, caller);
}

// A communicator the tracer did not see being created (made before the library was loaded, or
// through a call it does not intercept): named by its members and how often they appeared.
__attribute__((noinline)) CommEntry* adopt_comm(MPI_Comm c) noexcept {
  if (c == MPI_COMM_NULL || c == nullptr) return nullptr;
  Members m = members_of(c);
  uint64_t h = hash_members(hash_bytes(kHashSeed, "mpi-adopted", 11), m.world);
  h = mix(h, occurrence(h));
  return register_comm(c, LST_COMM_CREATE, h, 0, LST_NONE, 0, m, 0);
}

inline CommEntry* comm_of(MPI_Comm c) noexcept {
  CommEntry* e = comm_find(LST_API_MPI, reinterpret_cast<uintptr_t>(c));
  return e ? e : adopt_comm(c);
}

// Identity of a communicator created collectively over its parent (DESIGN.md): the parent's id, the
// creation's index on the parent, the kind, the colour, and the members' world ranks.
uint64_t child_id(uint64_t parent, uint32_t index, uint8_t comm_op, int32_t color,
                  const std::vector<int32_t>& members) noexcept {
  uint64_t h = hash_bytes(kHashSeed, "mpi-child", 9);
  h = mix(h, parent);
  h = mix(h, index);
  h = mix(h, comm_op);
  h = mix(h, color);
  return hash_members(h, members);
}

struct Creation {
  CommEntry* parent = nullptr;
  uint64_t parent_id = 0;
  uint32_t index = 0;
};
Creation begin_creation(MPI_Comm parent) noexcept {
  Creation c;
  c.parent = comm_of(parent);
  if (c.parent) {
    c.parent_id = c.parent->id;
    // Taken before the call, so that a creation that fails still numbers the next alike everywhere.
    c.index = c.parent->children.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

void finish_creation(const Creation& cr, MPI_Comm created, uint8_t comm_op, int32_t color, int32_t key,
                     uint64_t caller) noexcept {
  if (created == MPI_COMM_NULL || created == nullptr) return;
  Members m = members_of(created);
  uint64_t id = child_id(cr.parent_id, cr.index, comm_op, color, m.world);
  register_comm(created, comm_op, id, cr.parent_id, color, key, m, caller);
}

void after_init(int provided, uint64_t caller) noexcept {
  int rank = 0, size = 0;
  REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &rank);
  REAL(MPI_Comm_size)(MPI_COMM_WORLD, &size);
  set_world(rank, size);
  {
    std::lock_guard<std::mutex> lock(g_mpi_mutex);
    if (!g_world_group) REAL(MPI_Comm_group)(MPI_COMM_WORLD, &g_world_group);
  }
  const char* job = job_id();
  g_world_id = hash_bytes(hash_bytes(kHashSeed, "MPI_COMM_WORLD", 14), job, std::strlen(job));
  Members world;
  world.size = size;
  world.rank = rank;
  for (int i = 0; i < size; ++i) world.world.push_back(i);
  comm_add(LST_API_MPI, reinterpret_cast<uintptr_t>(MPI_COMM_WORLD), LST_COMM_WORLD, g_world_id, 0, LST_NONE,
           0, size, rank, world.world.data(), "MPI_COMM_WORLD", caller);
  int32_t me = rank;
  uint64_t self_id = mix(hash_bytes(kHashSeed, "MPI_COMM_SELF", 13), g_world_id);
  self_id = mix(self_id, me);
  comm_add(LST_API_MPI, reinterpret_cast<uintptr_t>(MPI_COMM_SELF), LST_COMM_WORLD, self_id, 0, LST_NONE, 0,
           1, 0, &me, "MPI_COMM_SELF", caller);
  marker(LST_MARK_MPI_INIT, static_cast<uint64_t>(provided), nullptr, caller);
  // MPI_Init installs its own fatal-signal handlers; ours go back in front and chain to them.
  reinstall_signal_handlers();
}

// ---- requests of nonblocking calls ----------------------------------------------------------------

RequestTable g_requests;  // request -> record id, until a Wait/Test completes it

inline uintptr_t key_of(MPI_Request r) noexcept { return reinterpret_cast<uintptr_t>(r); }

// The collective requests among the ones passed to a Wait/Test call, found before the call (the call
// sets completed requests to MPI_REQUEST_NULL).
struct Tracked {
  static constexpr int kInline = 32;
  int n = 0;
  int idx[kInline];
  uint64_t ids[kInline];
  MPI_Request handles[kInline];
  std::vector<int> more_idx;  // beyond kInline (large Waitall): rare, allocates
  std::vector<uint64_t> more_ids;
  std::vector<MPI_Request> more_handles;

  void add(int i, uint64_t id, MPI_Request h) noexcept {
    if (n < kInline) {
      idx[n] = i;
      ids[n] = id;
      handles[n] = h;
    } else {
      more_idx.push_back(i);
      more_ids.push_back(id);
      more_handles.push_back(h);
    }
    ++n;
  }
  int index(int k) const noexcept {
    return k < kInline ? idx[k] : more_idx[static_cast<size_t>(k - kInline)];
  }
  uint64_t id(int k) const noexcept {
    return k < kInline ? ids[k] : more_ids[static_cast<size_t>(k - kInline)];
  }
  MPI_Request handle(int k) const noexcept {
    return k < kInline ? handles[k] : more_handles[static_cast<size_t>(k - kInline)];
  }
  uint64_t first() const noexcept { return n ? id(0) : 0; }
};

void track(Tracked& t, int count, const MPI_Request* reqs) noexcept {
  if (g_requests.pending() == 0 || !reqs) return;
  for (int i = 0; i < count; ++i) {
    MPI_Request r = reqs[i];
    uint64_t id;
    if (r != MPI_REQUEST_NULL && r != nullptr && g_requests.find(key_of(r), &id)) t.add(i, id, r);
  }
}

// Marks the tracked collectives whose request the call completed (set to MPI_REQUEST_NULL; nonblocking
// collectives are never persistent). Returns how many.
uint32_t settle(const Tracked& t, const MPI_Request* reqs) noexcept {
  uint32_t done = 0;
  for (int k = 0; k < t.n; ++k) {
    if (reqs[t.index(k)] != MPI_REQUEST_NULL) continue;
    collective_complete(t.id(k));
    g_requests.erase(key_of(t.handle(k)));
    ++done;
  }
  return done;
}

inline bool tracing() noexcept { return WrapApi::tracing(); }

// ---- one argument mapper per family: the blocking call and its MPI_I* twin record alike ------------

// Barrier, and the base of every mapper.
CollectiveArgs args(uint8_t op, MPI_Comm comm, int64_t count, MPI_Datatype dt) noexcept {
  CollectiveArgs a;
  a.api = LST_API_MPI;
  a.op = op;
  a.comm = comm_of(comm);
  a.count = count < 0 ? 0 : static_cast<uint64_t>(count);
  if (dt) set_dtype(a, dt);
  return a;
}

inline int32_t my_rank(const CollectiveArgs& a) noexcept { return a.comm ? a.comm->rank : 0; }
inline int32_t comm_size(const CollectiveArgs& a) noexcept {
  return a.comm && a.comm->size > 0 ? a.comm->size : 0;
}

int64_t sum(const int* counts, int n) noexcept {
  int64_t s = 0;
  if (counts)
    for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

CollectiveArgs bcast_args(int count, MPI_Datatype dt, int root, MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_BCAST, comm, count, dt);
  a.root_or_peer = root;
  return a;
}

// Reduce (root >= 0), Allreduce, Scan, Exscan, Reduce_scatter_block.
CollectiveArgs reduce_args(uint8_t lst_op, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                           int root = LST_NONE) noexcept {
  CollectiveArgs a = args(lst_op, comm, count, dt);
  a.redop = redop_of(op);
  a.root_or_peer = root;
  return a;
}

// Gather, Allgather, Alltoall: this rank's send count (with MPI_IN_PLACE: its receive count).
CollectiveArgs gather_args(uint8_t op, const void* sbuf, int scount, MPI_Datatype stype, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm, int root = LST_NONE) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(op, comm, in_place ? rcount : scount, in_place ? rtype : stype);
  a.root_or_peer = root;
  return a;
}

// Gatherv, Allgatherv: this rank's send count (with MPI_IN_PLACE: its own entry of recvcounts).
CollectiveArgs gatherv_args(uint8_t op, const void* sbuf, int scount, MPI_Datatype stype, const int rcounts[],
                            MPI_Datatype rtype, MPI_Comm comm, int root = LST_NONE) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(op, comm, scount, in_place ? rtype : stype);
  if (in_place && rcounts) a.count = static_cast<uint64_t>(rcounts[my_rank(a)]);
  a.flags |= LST_F_VCOUNTS;
  a.root_or_peer = root;
  return a;
}

// Scatter: this rank's receive count (the root with MPI_IN_PLACE: its send count).
CollectiveArgs scatter_args(int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                            int root, MPI_Comm comm) noexcept {
  const bool in_place = rbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(LST_OP_SCATTER, comm, in_place ? scount : rcount, in_place ? stype : rtype);
  a.root_or_peer = root;
  return a;
}

// Scatterv: only the root sends, so every rank records what it receives.
CollectiveArgs scatterv_args(const int scounts[], MPI_Datatype stype, void* rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm) noexcept {
  const bool in_place = rbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(LST_OP_SCATTERV, comm, rcount, in_place ? stype : rtype);
  if (in_place && scounts) a.count = static_cast<uint64_t>(scounts[my_rank(a)]);
  a.flags |= LST_F_VCOUNTS;
  a.root_or_peer = root;
  return a;
}

// Alltoallv: the total this rank sends (sum of its send counts).
CollectiveArgs alltoallv_args(const void* sbuf, const int scounts[], MPI_Datatype stype, const int rcounts[],
                              MPI_Datatype rtype, MPI_Comm comm) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(LST_OP_ALLTOALLV, comm, 0, in_place ? rtype : stype);
  a.count = static_cast<uint64_t>(sum(in_place ? rcounts : scounts, comm_size(a)));
  a.flags |= LST_F_VCOUNTS;
  return a;
}

// Alltoallw: the bytes this rank sends, as a derived-type record of 1-byte elements.
CollectiveArgs alltoallw_args(const void* sbuf, const int scounts[], const MPI_Datatype stypes[],
                              const int rcounts[], const MPI_Datatype rtypes[], MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_ALLTOALLW, comm, 0, nullptr);
  const bool in_place = sbuf == MPI_IN_PLACE;
  const int* counts = in_place ? rcounts : scounts;
  const MPI_Datatype* types = in_place ? rtypes : stypes;
  int64_t bytes = 0;
  if (counts && types)
    for (int i = 0; i < comm_size(a); ++i) {
      int sz = 0;
      if (counts[i] > 0) REAL(MPI_Type_size)(types[i], &sz);
      bytes += static_cast<int64_t>(counts[i]) * sz;
    }
  a.count = static_cast<uint64_t>(bytes);
  a.dtype = LST_DT_DERIVED;
  a.dtype_size = 1;
  a.flags |= LST_F_VCOUNTS | LST_F_DERIVED;
  return a;
}

// Reduce_scatter: the elements this rank contributes (the sum of recvcounts, equal on every rank).
CollectiveArgs reduce_scatter_args(const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_REDUCE_SCATTER, comm, 0, dt);
  a.count = static_cast<uint64_t>(sum(rcounts, comm_size(a)));
  a.redop = redop_of(op);
  a.flags |= LST_F_VCOUNTS;
  return a;
}

// ---- the record path -------------------------------------------------------------------------------

template <typename Call>
__attribute__((always_inline)) inline int blocking(const CollectiveArgs& a, uint64_t caller, Call&& call) {
  Pending p = collective_enter(a, caller);
  int rc = call();
  collective_return(p, rc == MPI_SUCCESS);
  return rc;
}

// A nonblocking call: RETURNED when it has started, COMPLETED by the Wait/Test that finishes its request.
template <typename Call>
__attribute__((always_inline)) inline int nonblocking(CollectiveArgs a, uint64_t caller, MPI_Request* req,
                                                      Call&& call) {
  a.flags |= LST_F_NONBLOCKING;
  Pending p = collective_enter(a, caller);
  uint64_t id = p.id;
  bool recorded = p.rec != nullptr;
  int rc = call();
  collective_return(p, rc == MPI_SUCCESS);
  if (recorded && rc == MPI_SUCCESS && req && *req != MPI_REQUEST_NULL) g_requests.insert(key_of(*req), id);
  return rc;
}

}  // namespace

// ---- collectives: blocking, then nonblocking -------------------------------------------------------

WRAP_EXPORT int MPI_Barrier(MPI_Comm comm) {
  PASSTHROUGH(MPI_Barrier, comm);
  return blocking(args(LST_OP_BARRIER, comm, 0, nullptr), caller, CALL_REAL(comm));
}

WRAP_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Bcast, buf, count, dt, root, comm);
  return blocking(bcast_args(count, dt, root, comm), caller, CALL_REAL(buf, count, dt, root, comm));
}

WRAP_EXPORT int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                           MPI_Comm comm) {
  PASSTHROUGH(MPI_Reduce, sbuf, rbuf, count, dt, op, root, comm);
  return blocking(reduce_args(LST_OP_REDUCE, count, dt, op, comm, root), caller,
                  CALL_REAL(sbuf, rbuf, count, dt, op, root, comm));
}

WRAP_EXPORT int MPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm) {
  PASSTHROUGH(MPI_Allreduce, sbuf, rbuf, count, dt, op, comm);
  return blocking(reduce_args(LST_OP_ALLREDUCE, count, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, count, dt, op, comm));
}

WRAP_EXPORT int MPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Gather, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  return blocking(gather_args(LST_OP_GATHER, sbuf, scount, stype, rcount, rtype, comm, root), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[],
                            const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Gatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
  return blocking(gatherv_args(LST_OP_GATHERV, sbuf, scount, stype, rcounts, rtype, comm, root), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}

WRAP_EXPORT int MPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                            MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Scatter, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  return blocking(scatter_args(scount, stype, rbuf, rcount, rtype, root, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Scatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                             void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Scatterv, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
  return blocking(scatterv_args(scounts, stype, rbuf, rcount, rtype, root, comm), caller,
                  CALL_REAL(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                              MPI_Datatype rtype, MPI_Comm comm) {
  PASSTHROUGH(MPI_Allgather, sbuf, scount, stype, rbuf, rcount, rtype, comm);
  return blocking(gather_args(LST_OP_ALLGATHER, sbuf, scount, stype, rcount, rtype, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

WRAP_EXPORT int MPI_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                               const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  PASSTHROUGH(MPI_Allgatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
  return blocking(gatherv_args(LST_OP_ALLGATHERV, sbuf, scount, stype, rcounts, rtype, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

WRAP_EXPORT int MPI_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                             MPI_Datatype rtype, MPI_Comm comm) {
  PASSTHROUGH(MPI_Alltoall, sbuf, scount, stype, rbuf, rcount, rtype, comm);
  return blocking(gather_args(LST_OP_ALLTOALL, sbuf, scount, stype, rcount, rtype, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

WRAP_EXPORT int MPI_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                              void* rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                              MPI_Comm comm) {
  PASSTHROUGH(MPI_Alltoallv, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
  return blocking(alltoallv_args(sbuf, scounts, stype, rcounts, rtype, comm), caller,
                  CALL_REAL(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

WRAP_EXPORT int MPI_Alltoallw(const void* sbuf, const int scounts[], const int sdispls[],
                              const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                              const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm) {
  PASSTHROUGH(MPI_Alltoallw, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm);
  return blocking(alltoallw_args(sbuf, scounts, stypes, rcounts, rtypes, comm), caller,
                  CALL_REAL(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm));
}

WRAP_EXPORT int MPI_Reduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm) {
  PASSTHROUGH(MPI_Reduce_scatter, sbuf, rbuf, rcounts, dt, op, comm);
  return blocking(reduce_scatter_args(rcounts, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, rcounts, dt, op, comm));
}

WRAP_EXPORT int MPI_Reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                         MPI_Comm comm) {
  PASSTHROUGH(MPI_Reduce_scatter_block, sbuf, rbuf, rcount, dt, op, comm);
  return blocking(reduce_args(LST_OP_REDUCE_SCATTER_BLOCK, rcount, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, rcount, dt, op, comm));
}

WRAP_EXPORT int MPI_Scan(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  PASSTHROUGH(MPI_Scan, sbuf, rbuf, count, dt, op, comm);
  return blocking(reduce_args(LST_OP_SCAN, count, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, count, dt, op, comm));
}

WRAP_EXPORT int MPI_Exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op,
                           MPI_Comm comm) {
  PASSTHROUGH(MPI_Exscan, sbuf, rbuf, count, dt, op, comm);
  return blocking(reduce_args(LST_OP_EXSCAN, count, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, count, dt, op, comm));
}

WRAP_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ibarrier, comm, req);
  return nonblocking(args(LST_OP_BARRIER, comm, 0, nullptr), caller, req, CALL_REAL(comm, req));
}

WRAP_EXPORT int MPI_Ibcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ibcast, buf, count, dt, root, comm, req);
  return nonblocking(bcast_args(count, dt, root, comm), caller, req,
                     CALL_REAL(buf, count, dt, root, comm, req));
}

WRAP_EXPORT int MPI_Ireduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                            MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ireduce, sbuf, rbuf, count, dt, op, root, comm, req);
  return nonblocking(reduce_args(LST_OP_REDUCE, count, dt, op, comm, root), caller, req,
                     CALL_REAL(sbuf, rbuf, count, dt, op, root, comm, req));
}

WRAP_EXPORT int MPI_Iallreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op,
                               MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Iallreduce, sbuf, rbuf, count, dt, op, comm, req);
  return nonblocking(reduce_args(LST_OP_ALLREDUCE, count, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, count, dt, op, comm, req));
}

WRAP_EXPORT int MPI_Igather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                            MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Igather, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(gather_args(LST_OP_GATHER, sbuf, scount, stype, rcount, rtype, comm, root), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Igatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                             MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Igatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req);
  return nonblocking(gatherv_args(LST_OP_GATHERV, sbuf, scount, stype, rcounts, rtype, comm, root), caller,
                     req, CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iscatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Iscatter, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(scatter_args(scount, stype, rbuf, rcount, rtype, root, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iscatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                              void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                              MPI_Request* req) {
  PASSTHROUGH(MPI_Iscatterv, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(scatterv_args(scounts, stype, rbuf, rcount, rtype, root, comm), caller, req,
                     CALL_REAL(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iallgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                               MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Iallgather, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
  return nonblocking(gather_args(LST_OP_ALLGATHER, sbuf, scount, stype, rcount, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm, req));
}

WRAP_EXPORT int MPI_Iallgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                                const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                                MPI_Request* req) {
  PASSTHROUGH(MPI_Iallgatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
  return nonblocking(gatherv_args(LST_OP_ALLGATHERV, sbuf, scount, stype, rcounts, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req));
}

WRAP_EXPORT int MPI_Ialltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                              MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ialltoall, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
  return nonblocking(gather_args(LST_OP_ALLTOALL, sbuf, scount, stype, rcount, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm, req));
}

WRAP_EXPORT int MPI_Ialltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                               void* rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                               MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ialltoallv, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
  return nonblocking(alltoallv_args(sbuf, scounts, stype, rcounts, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req));
}

WRAP_EXPORT int MPI_Ialltoallw(const void* sbuf, const int scounts[], const int sdispls[],
                               const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                               const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                               MPI_Request* req) {
  PASSTHROUGH(MPI_Ialltoallw, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req);
  return nonblocking(alltoallw_args(sbuf, scounts, stypes, rcounts, rtypes, comm), caller, req,
                     CALL_REAL(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req));
}

WRAP_EXPORT int MPI_Ireduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype dt,
                                    MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ireduce_scatter, sbuf, rbuf, rcounts, dt, op, comm, req);
  return nonblocking(reduce_scatter_args(rcounts, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, rcounts, dt, op, comm, req));
}

WRAP_EXPORT int MPI_Ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype dt,
                                          MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ireduce_scatter_block, sbuf, rbuf, rcount, dt, op, comm, req);
  return nonblocking(reduce_args(LST_OP_REDUCE_SCATTER_BLOCK, rcount, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, rcount, dt, op, comm, req));
}

WRAP_EXPORT int MPI_Iscan(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                          MPI_Request* req) {
  PASSTHROUGH(MPI_Iscan, sbuf, rbuf, count, dt, op, comm, req);
  return nonblocking(reduce_args(LST_OP_SCAN, count, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, count, dt, op, comm, req));
}

WRAP_EXPORT int MPI_Iexscan(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op,
                            MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Iexscan, sbuf, rbuf, count, dt, op, comm, req);
  return nonblocking(reduce_args(LST_OP_EXSCAN, count, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, count, dt, op, comm, req));
}

// ---- completion: the Wait/Test family ----------------------------------------------------------------
// A WAIT record is written for a call that involves at least one nonblocking collective: Wait* calls
// are recorded on entry (a rank blocked in MPI_Wait shows as such), Test* calls only when they
// complete a collective (polling loops would otherwise flood the trace).

namespace {
template <typename Call>
__attribute__((always_inline)) inline int traced_wait(uint8_t op, int count, MPI_Request* reqs,
                                                      uint64_t caller, Call&& call) {
  Tracked t;
  track(t, count, reqs);
  if (t.n == 0) return call();
  Pending p = wait_enter(op, t.first(), static_cast<uint32_t>(count), caller);
  int rc = call();
  uint32_t done = settle(t, reqs);
  wait_return(p, done, rc == MPI_SUCCESS);
  return rc;
}

template <typename Call>
__attribute__((always_inline)) inline int traced_test(uint8_t op, int count, MPI_Request* reqs,
                                                      uint64_t caller, Call&& call) {
  Tracked t;
  track(t, count, reqs);
  if (t.n == 0) return call();
  uint64_t t0 = now_ns();
  int rc = call();
  uint32_t done = settle(t, reqs);
  if (done > 0 || rc != MPI_SUCCESS) {
    Pending p = wait_enter(op, t.first(), static_cast<uint32_t>(count), caller);
    if (p.rec) p.rec->t_ns = t0;
    p.t0 = t0;
    p.ticks0 = 0;  // the duration is from t0, before the call
    wait_return(p, done, rc == MPI_SUCCESS);
  }
  return rc;
}
}  // namespace

WRAP_EXPORT int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  PASSTHROUGH(MPI_Wait, req, status);
  return traced_wait(LST_WAIT_WAIT, 1, req, caller, CALL_REAL(req, status));
}

WRAP_EXPORT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Waitall, count, reqs, statuses);
  return traced_wait(LST_WAIT_WAITALL, count, reqs, caller, CALL_REAL(count, reqs, statuses));
}

WRAP_EXPORT int MPI_Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
  PASSTHROUGH(MPI_Waitany, count, reqs, index, status);
  return traced_wait(LST_WAIT_WAITANY, count, reqs, caller, CALL_REAL(count, reqs, index, status));
}

WRAP_EXPORT int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[],
                             MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Waitsome, incount, reqs, outcount, indices, statuses);
  return traced_wait(LST_WAIT_WAITSOME, incount, reqs, caller,
                     CALL_REAL(incount, reqs, outcount, indices, statuses));
}

WRAP_EXPORT int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  PASSTHROUGH(MPI_Test, req, flag, status);
  return traced_test(LST_WAIT_TEST, 1, req, caller, CALL_REAL(req, flag, status));
}

WRAP_EXPORT int MPI_Testall(int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Testall, count, reqs, flag, statuses);
  return traced_test(LST_WAIT_TESTALL, count, reqs, caller, CALL_REAL(count, reqs, flag, statuses));
}

WRAP_EXPORT int MPI_Testany(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
  PASSTHROUGH(MPI_Testany, count, reqs, index, flag, status);
  return traced_test(LST_WAIT_TESTANY, count, reqs, caller, CALL_REAL(count, reqs, index, flag, status));
}

WRAP_EXPORT int MPI_Testsome(int incount, MPI_Request reqs[], int* outcount, int indices[],
                             MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Testsome, incount, reqs, outcount, indices, statuses);
  return traced_test(LST_WAIT_TESTSOME, incount, reqs, caller,
                     CALL_REAL(incount, reqs, outcount, indices, statuses));
}

WRAP_EXPORT int MPI_Request_free(MPI_Request* req) {
  PASSTHROUGH(MPI_Request_free, req);
  MPI_Request r = req ? *req : MPI_REQUEST_NULL;
  int rc = FORWARD(req);
  if (rc == MPI_SUCCESS && g_requests.pending() > 0 && r != MPI_REQUEST_NULL) g_requests.erase(key_of(r));
  return rc;
}

// ---- communicators ------------------------------------------------------------------------------------

WRAP_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_dup, comm, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_DUP, LST_NONE, 0, caller);
  return rc;
}

WRAP_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_dup_with_info, comm, info, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, info, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_DUP, LST_NONE, 0, caller);
  return rc;
}

// The new handle exists when Comm_idup returns; its group is the parent's, which is what is recorded.
WRAP_EXPORT int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* req) {
  PASSTHROUGH(MPI_Comm_idup, comm, newcomm, req);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, newcomm, req);
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
    Members m = members_of(comm);
    uint64_t id = child_id(cr.parent_id, cr.index, LST_COMM_IDUP, LST_NONE, m.world);
    register_comm(*newcomm, LST_COMM_IDUP, id, cr.parent_id, LST_NONE, 0, m, caller);
  }
  return rc;
}

WRAP_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_split, comm, color, key, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, color, key, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_SPLIT, color, key, caller);
  return rc;
}

WRAP_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                    MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_split_type, comm, split_type, key, info, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, split_type, key, info, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_SPLIT_TYPE, split_type, key, caller);
  return rc;
}

WRAP_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_create, comm, group, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, group, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_CREATE, LST_NONE, 0, caller);
  return rc;
}

// Collective over the group's members only: numbered by (parent, tag, members), not by the parent.
WRAP_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_create_group, comm, group, tag, newcomm);
  CommEntry* parent = comm_of(comm);
  int rc = FORWARD(comm, group, tag, newcomm);
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
    Members m = members_of(*newcomm);
    uint64_t parent_id = parent ? parent->id : 0;
    uint64_t h =
        hash_members(mix(mix(hash_bytes(kHashSeed, "mpi-create-group", 16), parent_id), tag), m.world);
    uint32_t n = occurrence(h);
    register_comm(*newcomm, LST_COMM_CREATE_GROUP, mix(h, n), parent_id, LST_NONE, tag, m, caller);
  }
  return rc;
}

// Both groups must agree on the new intercommunicator's id but share no parent: named by the tag and
// the union of the two groups.
WRAP_EXPORT int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                     int remote_leader, int tag, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Intercomm_create, local_comm, local_leader, peer_comm, remote_leader, tag, newcomm);
  CommEntry* local = comm_of(local_comm);
  int rc = FORWARD(local_comm, local_leader, peer_comm, remote_leader, tag, newcomm);
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
    Members m = members_of(*newcomm);
    uint64_t h = hash_members(mix(hash_bytes(kHashSeed, "mpi-intercomm", 13), tag), m.world);
    uint32_t n = occurrence(h);
    register_comm(*newcomm, LST_COMM_INTERCOMM_CREATE, mix(h, n), local ? local->id : 0, LST_NONE, tag, m,
                  caller);
  }
  return rc;
}

WRAP_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Intercomm_merge, intercomm, high, newcomm);
  Creation cr = begin_creation(intercomm);
  int rc = FORWARD(intercomm, high, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_INTERCOMM_MERGE, LST_NONE, high, caller);
  return rc;
}

WRAP_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                                MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Cart_create, comm, ndims, dims, periods, reorder, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, ndims, dims, periods, reorder, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_CART_CREATE, LST_NONE, 0, caller);
  return rc;
}

WRAP_EXPORT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                                 MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Graph_create, comm, nnodes, index, edges, reorder, newcomm);
  Creation cr = begin_creation(comm);
  int rc = FORWARD(comm, nnodes, index, edges, reorder, newcomm);
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, LST_COMM_GRAPH_CREATE, LST_NONE, 0, caller);
  return rc;
}

WRAP_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  PASSTHROUGH(MPI_Comm_free, comm);
  MPI_Comm c = comm ? *comm : MPI_COMM_NULL;
  int rc = FORWARD(comm);
  if (rc == MPI_SUCCESS && c != MPI_COMM_NULL)
    comm_remove(LST_API_MPI, reinterpret_cast<uintptr_t>(c), LST_COMM_FREE, caller);
  return rc;
}

// ---- lifecycle ------------------------------------------------------------------------------------------

WRAP_EXPORT int MPI_Init(int* argc, char*** argv) {
  const uint64_t caller = LOCKSTEP_CALLER();
  const auto real = REAL(MPI_Init);
  CallGuard guard;
  int rc = FORWARD(argc, argv);
  if (rc == MPI_SUCCESS && guard.outermost() && tracing()) {
    int provided = MPI_THREAD_SINGLE;
    REAL(MPI_Query_thread)(&provided);
    after_init(provided, caller);
  }
  return rc;
}

WRAP_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const uint64_t caller = LOCKSTEP_CALLER();
  const auto real = REAL(MPI_Init_thread);
  CallGuard guard;
  int rc = FORWARD(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && guard.outermost() && tracing())
    after_init(provided ? *provided : required, caller);
  return rc;
}

WRAP_EXPORT int MPI_Finalize(void) {
  PASSTHROUGH(MPI_Finalize);
  uint64_t id = marker_ex(LST_MARK_MPI_FINALIZE, 0, 0, 0, nullptr, caller, LST_STATE_ENTERED);
  int rc = FORWARD();
  marker_return(id);
  return rc;
}

WRAP_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  PASSTHROUGH(MPI_Abort, comm, errorcode);
  marker(LST_MARK_MPI_ABORT, static_cast<uint64_t>(static_cast<int64_t>(errorcode)), nullptr, caller);
  set_end_state(LST_END_ABORT);
  return FORWARD(comm, errorcode);
}
