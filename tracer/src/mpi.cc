// MPI capture through the PMPI profiling interface: the real library found at run time, datatypes and
// reduction ops, communicator identity, completion in the Wait/Test family, Init/Finalize/Abort. The
// collectives are in mpi_collectives.cc, point-to-point in mpi_p2p.cc.
// long file: what every MPI wrapper file relies on (real functions, handle names, communicator
// identity, completion through the request table) is defined here once.
//
// The library never links libmpi: PMPI_* functions and the predefined handles (MPI_INT, MPI_SUM,
// MPI_COMM_WORLD, ...) are looked up on first use in whichever loaded object defines them, so the same
// file loads in a job without MPI, in a process linked with -z now, next to any libmpi of this ABI, and
// in a Python process that loads libmpi late and privately (mpi4py).
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "lockstep/env.h"
#include "mpi_common.h"

namespace lockstep::trace::mpi {

Predefined g_predefined;
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_mpi_abort = false;
LOCKSTEP_HOT_DATA std::atomic<int> g_mpi_state{0};
RequestTable g_requests;
LOCKSTEP_HOT_DATA bool g_trace_p2p = false;  // read with the rest of MPI's state, in resolve_mpi

namespace {

// ---- the real MPI ----------------------------------------------------------------------------------

// The tracer's warnings about MPI share one flag: the first says what is wrong.
void warn_once(const char* text) noexcept {
  static std::atomic<bool> warned{false};
  ::lockstep::trace::warn_once(warned, text);
}

struct ObjectNames {
  char names[64][256];
  int n = 0;
};
int collect_object(struct dl_phdr_info* info, size_t, void* arg) {
  auto* o = static_cast<ObjectNames*>(arg);
  if (info->dlpi_name && info->dlpi_name[0] && o->n < 64)
    std::snprintf(o->names[o->n++], sizeof o->names[0], "%s", info->dlpi_name);
  return 0;
}

// The object that defines PMPI_Init, opened without loading anything: dlsym(RTLD_NEXT) and
// dlsym(RTLD_DEFAULT) only search the global scope, and Python's dlopen(RTLD_LOCAL) of an extension
// module puts libmpi (its dependency) outside it.
void* find_mpi_library() noexcept {
  static ObjectNames objects;  // too large for a stack that may be a small thread's
  objects.n = 0;
  dl_iterate_phdr(collect_object, &objects);  // names first: no dlopen under the loader's lock
  for (int i = 0; i < objects.n; ++i) {
    void* h = dlopen(objects.names[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void* fn = dlsym(h, "PMPI_Init");
    Dl_info where{};
    if (fn && !in_this_library(fn) && dladdr(fn, &where) && where.dli_fname) {
      void* lib = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
      dlclose(h);
      if (lib) return lib;
      continue;
    }
    dlclose(h);
  }
  return nullptr;
}

void* mpi_library() noexcept {
  static std::atomic<int> state{0};  // 0 not searched, 1 searching, 2 done
  static void* lib = nullptr;
  int expected = 0;
  if (state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    lib = find_mpi_library();
    state.store(2, std::memory_order_release);
  } else {
    while (state.load(std::memory_order_acquire) != 2) sched_yield();
  }
  return lib;
}

// The global scope first, in its own order: an executable that refers to a handle such as
// ompi_mpi_comm_world holds a copy of the object (a copy relocation), and that copy, not libmpi's
// original, is the one MPI uses. Then the library that defines PMPI_Init, outside the global scope.
void* lookup_symbol(const char* name) noexcept {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p && in_this_library(p)) p = dlsym(RTLD_NEXT, name);
  if (p && in_this_library(p)) p = nullptr;
  if (!p)
    if (void* lib = mpi_library()) p = dlsym(lib, name);
  return p;
}

}  // namespace

void* lookup_pmpi(const char* name) noexcept { return lookup_symbol(name); }

__attribute__((noinline, cold)) void record_error(uint64_t id, int rc) noexcept {
  int cls = rc;
  if (REAL(MPI_Error_class)(rc, &cls) != MPI_SUCCESS) cls = rc;
  // The class's own text ("MPI_ERR_ROOT: invalid root"): class numbers differ between MPI libraries.
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int len = 0;
  if (REAL(MPI_Error_string)(cls, text, &len) != MPI_SUCCESS) text[0] = '\0';
  marker_ex(LST_MARK_MPI_ERROR, static_cast<uint32_t>(cls), id, static_cast<uint32_t>(rc), text, 0, 0);
}

void no_pmpi(const char* name) noexcept {
  char text[200];
  std::snprintf(text, sizeof text,
                "lockstep: %s not found in the process: MPI calls without it return MPI_ERR_OTHER, untraced",
                name);
  warn_once(text);
}

// ---- datatypes and reduction ops -------------------------------------------------------------------

namespace {

struct TypeEntry {
  const char* symbol;  // libmpi's object for the predefined handle
  uint8_t dtype;
  uint32_t size;
};
// One row per predefined datatype (a table: its rows are alike by nature). Looked up through
// g_type_index below, not scanned; a handle with two names (MPI_LONG_LONG_INT, MPI_INT64_T) keeps
// the row that comes first.
constexpr TypeEntry kTypes[] = {
    {"ompi_mpi_float", LST_DT_FLOAT32, 4},
    {"ompi_mpi_double", LST_DT_FLOAT64, 8},
    {"ompi_mpi_int", LST_DT_INT32, 4},
    {"ompi_mpi_long", LST_DT_INT64, sizeof(long)},
    {"ompi_mpi_byte", LST_DT_BYTE, 1},
    {"ompi_mpi_char", LST_DT_CHAR, 1},
    {"ompi_mpi_unsigned", LST_DT_UINT32, 4},
    {"ompi_mpi_unsigned_long", LST_DT_UINT64, sizeof(long)},
    {"ompi_mpi_long_long_int", LST_DT_INT64, 8},
    {"ompi_mpi_unsigned_long_long", LST_DT_UINT64, 8},
    {"ompi_mpi_int64_t", LST_DT_INT64, 8},
    {"ompi_mpi_uint64_t", LST_DT_UINT64, 8},
    {"ompi_mpi_int32_t", LST_DT_INT32, 4},
    {"ompi_mpi_uint32_t", LST_DT_UINT32, 4},
    {"ompi_mpi_int16_t", LST_DT_INT16, 2},
    {"ompi_mpi_uint16_t", LST_DT_UINT16, 2},
    {"ompi_mpi_int8_t", LST_DT_INT8, 1},
    {"ompi_mpi_uint8_t", LST_DT_UINT8, 1},
    {"ompi_mpi_short", LST_DT_INT16, 2},
    {"ompi_mpi_unsigned_short", LST_DT_UINT16, 2},
    {"ompi_mpi_signed_char", LST_DT_INT8, 1},
    {"ompi_mpi_unsigned_char", LST_DT_UINT8, 1},
    {"ompi_mpi_c_bool", LST_DT_BOOL, 1},
    {"ompi_mpi_packed", LST_DT_PACKED, 1},
    {"ompi_mpi_long_double", LST_DT_LONG_DOUBLE, sizeof(long double)},
    {"ompi_mpi_wchar", LST_DT_INT32, sizeof(wchar_t)},
    {"ompi_mpi_aint", LST_DT_INT64, sizeof(MPI_Aint)},
    {"ompi_mpi_offset", LST_DT_INT64, sizeof(MPI_Offset)},
    {"ompi_mpi_count", LST_DT_INT64, sizeof(MPI_Count)},
    // Fortran's (mpif.h, `use mpi`, `use mpi_f08`): INTEGER, REAL, LOGICAL and DOUBLE PRECISION take
    // the sizes Open MPI was built with, asked for once (size 0: ask MPI_Type_size); the complex types
    // stay derived and compare by bytes, as C's do.
    {"ompi_mpi_integer", LST_DT_INT32, 0},
    {"ompi_mpi_integer1", LST_DT_INT8, 1},
    {"ompi_mpi_integer2", LST_DT_INT16, 2},
    {"ompi_mpi_integer4", LST_DT_INT32, 4},
    {"ompi_mpi_integer8", LST_DT_INT64, 8},
    {"ompi_mpi_real", LST_DT_FLOAT32, 0},
    {"ompi_mpi_dblprec", LST_DT_FLOAT64, 0},
    {"ompi_mpi_real2", LST_DT_FLOAT16, 2},
    {"ompi_mpi_real4", LST_DT_FLOAT32, 4},
    {"ompi_mpi_real8", LST_DT_FLOAT64, 8},
    {"ompi_mpi_logical", LST_DT_BOOL, 0},
    {"ompi_mpi_logical1", LST_DT_BOOL, 1},
    {"ompi_mpi_logical2", LST_DT_BOOL, 2},
    {"ompi_mpi_logical4", LST_DT_BOOL, 4},
    {"ompi_mpi_logical8", LST_DT_BOOL, 8},
    {"ompi_mpi_character", LST_DT_CHAR, 1},
    {"ompi_mpi_2integer", LST_DT_PAIR, 0},
    {"ompi_mpi_2real", LST_DT_PAIR, 0},
    {"ompi_mpi_2dblprec", LST_DT_PAIR, 0},
    {"ompi_mpi_float_int", LST_DT_PAIR, 0},
    {"ompi_mpi_double_int", LST_DT_PAIR, 0},
    {"ompi_mpi_long_int", LST_DT_PAIR, 0},
    {"ompi_mpi_2int", LST_DT_PAIR, 0},
    {"ompi_mpi_short_int", LST_DT_PAIR, 0},
    {"ompi_mpi_longdbl_int", LST_DT_PAIR, 0},
};

struct OpEntry {
  const char* symbol;
  uint8_t redop;
};
constexpr OpEntry kOps[] = {

    {"ompi_mpi_op_sum", LST_RED_SUM},         {"ompi_mpi_op_max", LST_RED_MAX},
    {"ompi_mpi_op_min", LST_RED_MIN},         {"ompi_mpi_op_prod", LST_RED_PROD},
    {"ompi_mpi_op_land", LST_RED_LAND},       {"ompi_mpi_op_lor", LST_RED_LOR},
    {"ompi_mpi_op_band", LST_RED_BAND},       {"ompi_mpi_op_bor", LST_RED_BOR},
    {"ompi_mpi_op_lxor", LST_RED_LXOR},       {"ompi_mpi_op_bxor", LST_RED_BXOR},
    {"ompi_mpi_op_minloc", LST_RED_MINLOC},   {"ompi_mpi_op_maxloc", LST_RED_MAXLOC},
    {"ompi_mpi_op_replace", LST_RED_REPLACE},
};

constexpr size_t kNumTypes = sizeof kTypes / sizeof kTypes[0];
constexpr size_t kNumOps = sizeof kOps / sizeof kOps[0];
MPI_Datatype g_types[kNumTypes];  // kTypes' handles, looked up with the other predefined handles
MPI_Op g_ops[kNumOps];

// Handle -> index in kTypes / kOps, open addressing, filled once before the handles are published
// (g_mpi_state 1): a call's datatype and op cost one or two probes instead of a scan of the tables.
constexpr size_t kIndexSlots = 128;  // power of two, over twice the entries
struct HandleIndex {
  const void* handle[kIndexSlots];
  uint8_t index[kIndexSlots];

  static size_t home(const void* h) noexcept {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(h) * 0x9e3779b97f4a7c15ull) >> 57);
  }
  void add(const void* h, size_t i) noexcept {
    if (!h) return;
    for (size_t s = home(h);; s = (s + 1) & (kIndexSlots - 1)) {
      if (handle[s] == h) return;  // two names of one object (MPI_LONG_LONG_INT and MPI_INT64_T): the first
      if (!handle[s]) {
        handle[s] = h;
        index[s] = static_cast<uint8_t>(i);
        return;
      }
    }
  }
  int find(const void* h) const noexcept {
    for (size_t s = home(h);; s = (s + 1) & (kIndexSlots - 1)) {
      if (handle[s] == h) return index[s];
      if (!handle[s]) return -1;
    }
  }
};
HandleIndex g_type_index, g_op_index;

}  // namespace

namespace {
// A predefined type whose size the table leaves to MPI: the trace type of that size in its family
// (a Fortran INTEGER of 8 bytes is an int64), LST_DT_DERIVED for a size the family lacks. Pairs keep
// their kind at any size.
uint8_t sized(uint8_t dtype, uint32_t size) noexcept {
  int out = LST_DT_DERIVED;
  if (dtype == LST_DT_INT32) {
    if (size == 1) out = LST_DT_INT8;
    if (size == 2) out = LST_DT_INT16;
    if (size == 4) out = LST_DT_INT32;
    if (size == 8) out = LST_DT_INT64;
  } else if (dtype == LST_DT_FLOAT32 || dtype == LST_DT_FLOAT64) {
    if (size == 2) out = LST_DT_FLOAT16;
    if (size == 4) out = LST_DT_FLOAT32;
    if (size == 8) out = LST_DT_FLOAT64;
  } else if (size != 0) {
    out = dtype;
  }
  return static_cast<uint8_t>(out);
}
}  // namespace

void set_dtype_slow(CollectiveArgs& a, MPI_Datatype t) noexcept {
  if (t == MPI_DATATYPE_NULL || t == nullptr) {
    a.dtype = LST_DT_NONE;
    return;
  }
  if (const int i = g_type_index.find(t); i >= 0) {
    const TypeEntry& e = kTypes[i];
    uint8_t dtype = e.dtype;
    uint32_t size = e.size;
    if (size == 0) {
      int sz = 0;
      REAL(MPI_Type_size)(t, &sz);
      size = sz > 0 ? static_cast<uint32_t>(sz) : 0;
      dtype = sized(dtype, size);
    }
    if (dtype != LST_DT_DERIVED) {
      a.dtype = dtype;
      a.dtype_size = size;
      if (size != 0) t_hot.last_type = {t, size, dtype};
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

// The predefined reduction op this thread passed last: t_hot.last_op (session.h).
uint8_t redop_of(MPI_Op op) noexcept {
  LastHandle& last = t_hot.last_op;
  if (__builtin_expect(last.handle == op && op != nullptr, 1)) return last.code;
  if (op == nullptr) return LST_RED_USER;
  if (const int i = g_op_index.find(op); i >= 0) {
    last = {op, 0, kOps[i].redop};
    return kOps[i].redop;
  }
  return op == MPI_OP_NULL ? LST_RED_NONE : LST_RED_USER;
}

bool resolve_mpi() noexcept {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  const int s = g_mpi_state.load(std::memory_order_acquire);
  if (s != 0) return s == 1;
  struct Handle {
    const char* symbol;
    void** slot;
    bool required;
  };
  Predefined p;
  const Handle handles[] = {
      {"ompi_mpi_comm_world", reinterpret_cast<void**>(&p.comm_world), true},
      {"ompi_mpi_comm_self", reinterpret_cast<void**>(&p.comm_self), true},
      {"ompi_mpi_comm_null", reinterpret_cast<void**>(&p.comm_null), true},
      {"ompi_request_null", reinterpret_cast<void**>(&p.request_null), true},
      {"ompi_mpi_group_null", reinterpret_cast<void**>(&p.group_null), true},
      {"ompi_mpi_datatype_null", reinterpret_cast<void**>(&p.datatype_null), true},
      {"ompi_mpi_op_null", reinterpret_cast<void**>(&p.op_null), true},
      {"ompi_message_null", reinterpret_cast<void**>(&p.message_null), false},
      {"ompi_message_no_proc", reinterpret_cast<void**>(&p.message_no_proc), false},
  };
  for (const Handle& h : handles) {
    *h.slot = lookup_symbol(h.symbol);
    if (!*h.slot && h.required) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "lockstep: %s not found (not Open MPI?): MPI calls are forwarded untraced", h.symbol);
      warn_once(text);
      g_mpi_state.store(2, std::memory_order_release);
      return false;
    }
  }
  for (size_t i = 0; i < kNumTypes; ++i)
    g_types[i] = static_cast<MPI_Datatype>(lookup_symbol(kTypes[i].symbol));
  for (size_t i = 0; i < kNumOps; ++i) g_ops[i] = static_cast<MPI_Op>(lookup_symbol(kOps[i].symbol));
  for (size_t i = 0; i < kNumTypes; ++i) g_type_index.add(g_types[i], i);
  for (size_t i = 0; i < kNumOps; ++i) g_op_index.add(g_ops[i], i);
  g_predefined = p;
  g_trace_p2p = env::on(env::Var::kTraceP2p);
  g_mpi_state.store(1, std::memory_order_release);
  return true;
}

namespace {

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

// Identity of a communicator created collectively over its parent (docs/tracer.md): the parent's id, the
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

// A communicator creation as a call of its own (LST_MARK_COMM_CREATE): entered before the real call,
// returned or failed after, so that an error (a bad colour, a null communicator) or a process that dies
// in it is in the trace even though no communicator comes of it.
template <typename Call>
int creating(uint8_t comm_op, const CommEntry* parent, int32_t color, uint64_t caller, Call&& call) {
  const uint64_t id =
      marker_ex(LST_MARK_COMM_CREATE, comm_op, 0, static_cast<uint64_t>(static_cast<int64_t>(color)), nullptr,
                caller, LST_STATE_ENTERED, parent ? parent->id : 0);
  int rc;
  {
    InsideCall in(id != UINT64_MAX, id);
    rc = call();
  }
  marker_returned(id, rc);
  return rc;
}

int32_t split_color(int color) noexcept { return color == MPI_UNDEFINED ? LST_UNDEFINED : color; }

void finish_creation(const Creation& cr, MPI_Comm created, uint8_t comm_op, int32_t color, int32_t key,
                     uint64_t caller) noexcept {
  if (created == MPI_COMM_NULL || created == nullptr) return;
  Members m = members_of(created);
  uint64_t id = child_id(cr.parent_id, cr.index, comm_op, color, m.world);
  register_comm(created, comm_op, id, cr.parent_id, color, key, m, caller);
}

// A communicator created collectively over its parent, one body for every such wrapper: numbered on the
// parent, recorded as a call of its own, registered when MPI made one. `color` is what the call was
// given (a split's colour or split type; 0 for the kinds without one), `child_color` what the new
// communicator records (LST_NONE for those kinds), `key` its key (Intercomm_merge: `high`).
template <typename Call>
int create_child(uint8_t comm_op, MPI_Comm parent, int32_t color, int32_t child_color, int32_t key,
                 MPI_Comm* newcomm, uint64_t caller, Call&& call) {
  Creation cr = begin_creation(parent);
  int rc = creating(comm_op, cr.parent, color, caller, static_cast<Call&&>(call));
  if (rc == MPI_SUCCESS) finish_creation(cr, *newcomm, comm_op, child_color, key, caller);
  return rc;
}

// The kinds without a colour: Comm_dup, Comm_create, Cart_create, ...
template <typename Call>
int create_child(uint8_t comm_op, MPI_Comm parent, int32_t key, MPI_Comm* newcomm, uint64_t caller,
                 Call&& call) {
  return create_child(comm_op, parent, 0, LST_NONE, key, newcomm, caller, static_cast<Call&&>(call));
}

// Nonzero when MPI_Comm_spawn started this process (it has a parent): a key of its MPI_COMM_WORLD that
// every process of that world computes alike and the job's other worlds do not, from the launcher's name
// for it (PMIx's namespace, Open MPI's job id, the PMI key-value space), else 1.
uint64_t spawned_world_key() noexcept {
  MPI_Comm parent = MPI_COMM_NULL;
  const auto get_parent = REAL(MPI_Comm_get_parent);
  if (!get_parent || get_parent(&parent) != MPI_SUCCESS || parent == MPI_COMM_NULL) return 0;
  for (const char* var : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_KVSNAME"})
    if (const char* v = std::getenv(var); v && *v) {
      const uint64_t h = hash_bytes(kHashSeed, v, std::strlen(v));
      return h ? h : 1;
    }
  return 1;
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
  // A process that MPI_Comm_spawn started shares the job's id (its environment) but has a world of its
  // own: that world gets its own id, and the MPI_INIT marker says so (spawned_world_key).
  const uint64_t spawned = spawned_world_key();
  if (spawned) g_world_id = mix(g_world_id, spawned);
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
  marker_ex(LST_MARK_MPI_INIT, static_cast<uint64_t>(provided), 0, spawned, nullptr, caller, 0);
  // Below MPI_THREAD_MULTIPLE the application calls MPI from one thread at a time, in an order it keeps
  // itself: the request table needs no locked instruction to claim a way.
  g_requests.set_one_caller(provided < MPI_THREAD_MULTIPLE);
  // MPI_Init installs its own fatal-signal handlers; ours go back in front and chain to them.
  reinstall_signal_handlers();
}

// ---- completion of nonblocking calls ----------------------------------------------------------------

// The collective requests among the ones passed to a Wait/Test call, found before the call (the call
// sets completed requests to MPI_REQUEST_NULL).
struct Tracked {
  static constexpr int kInline = 32;
  // Beyond kInline (a large Waitall): rare, allocated then. Built only then, so that the common call
  // constructs and destroys nothing.
  struct More {
    std::vector<int> idx;
    std::vector<uint64_t> ids;
    std::vector<MPI_Request> handles;
  };
  int n = 0;
  int idx[kInline];
  uint64_t ids[kInline];
  MPI_Request handles[kInline];
  More* more = nullptr;

  Tracked() noexcept = default;
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { delete more; }

  void add(int i, uint64_t id, MPI_Request h) noexcept {
    if (n < kInline) {
      idx[n] = i;
      ids[n] = id;
      handles[n] = h;
    } else {
      if (!more) more = new More();
      more->idx.push_back(i);
      more->ids.push_back(id);
      more->handles.push_back(h);
    }
    ++n;
  }
  int index(int k) const noexcept {
    return k < kInline ? idx[k] : more->idx[static_cast<size_t>(k - kInline)];
  }
  uint64_t id(int k) const noexcept {
    return k < kInline ? ids[k] : more->ids[static_cast<size_t>(k - kInline)];
  }
  MPI_Request handle(int k) const noexcept {
    return k < kInline ? handles[k] : more->handles[static_cast<size_t>(k - kInline)];
  }
  uint64_t first() const noexcept { return n ? id(0) : 0; }
};

// `take`: each entry is taken out as it is found (RequestTable::take), for MPI_Waitall, which completes
// every request unless it fails; settle_taken_all puts back those the call left pending.
template <bool take = false>
void track(Tracked& t, int count, const MPI_Request* reqs) noexcept {
  if (!g_requests.used() || !reqs) return;
  for (int i = 0; i < count; ++i) {
    MPI_Request r = reqs[i];
    uint64_t id;
    if (r != MPI_REQUEST_NULL && r != nullptr &&
        (take ? g_requests.take(key_of(r), &id) : g_requests.find(key_of(r), &id)))
      t.add(i, id, r);
  }
}

// After MPI_Waitall, whose entries track() took: completes the requests the call freed and puts back the
// entries of those it left pending. Returns how many it completed.
uint32_t settle_taken_all(const Tracked& t, const MPI_Request* reqs) noexcept {
  uint32_t done = 0;
  for (int k = 0; k < t.n; ++k) {
    if (__builtin_expect(reqs[t.index(k)] != MPI_REQUEST_NULL, 0)) {
      g_requests.insert(key_of(t.handle(k)), t.id(k));
      continue;
    }
    complete_request(t.id(k));
    ++done;
  }
  return done;
}

// Marks the tracked collectives whose request the call completed (set to MPI_REQUEST_NULL; nonblocking
// collectives are never persistent). Returns how many.
uint32_t settle(const Tracked& t, const MPI_Request* reqs) noexcept {
  uint32_t done = 0;
  for (int k = 0; k < t.n; ++k) {
    if (reqs[t.index(k)] != MPI_REQUEST_NULL) continue;
    // The entry goes first: MPI may already hand the handle to a start on another thread.
    g_requests.erase(key_of(t.handle(k)), t.id(k));
    complete_request(t.id(k));
    ++done;
  }
  return done;
}

// MPI_Wait and MPI_Test: one request, so no list to build. The record id of a recorded request, or
// false (the call is then not recorded).
// `take`: the entry is taken out (MPI_Wait, MPI_Request_free; settle_taken below).
template <bool take = false>
inline bool tracked_one(const MPI_Request* req, MPI_Request* handle, uint64_t* id) noexcept {
  if (!g_requests.used() || !req) return false;
  const MPI_Request r = *req;
  *handle = r;
  return r != MPI_REQUEST_NULL && r != nullptr &&
         (take ? g_requests.take(key_of(r), id) : g_requests.find(key_of(r), id));
}
inline uint32_t settle_one(const MPI_Request* req, MPI_Request handle, uint64_t id) noexcept {
  if (*req != MPI_REQUEST_NULL) return 0;
  g_requests.erase(key_of(handle), id);
  complete_request(id);
  return 1;
}

// MPI_Wait: the entry was taken out before the call (tracked_one with `take`: the handle is live until
// the call frees it, so no locked instruction), and is put back in the rare case the call returns with
// the request still pending (an error).
inline uint32_t settle_taken(const MPI_Request* req, MPI_Request handle, uint64_t id) noexcept {
  if (__builtin_expect(*req != MPI_REQUEST_NULL, 0)) {
    g_requests.insert(key_of(handle), id);
    return 0;
  }
  complete_request(id);
  return 1;
}

}  // namespace

// A communicator the tracer did not see being created (made before the library was loaded, or
// through a call it does not intercept): named by its members and how often they appeared.
__attribute__((noinline)) CommEntry* adopt_comm(MPI_Comm c) noexcept {
  if (c == MPI_COMM_NULL || c == nullptr) return nullptr;
  Members m = members_of(c);
  uint64_t h = hash_members(hash_bytes(kHashSeed, "mpi-adopted", 11), m.world);
  h = mix(h, occurrence(h));
  return register_comm(c, LST_COMM_CREATE, h, 0, LST_NONE, 0, m, 0);
}

}  // namespace lockstep::trace::mpi

// ---- completion: the Wait/Test family ----------------------------------------------------------------
// A WAIT record is written for a call that involves at least one recorded nonblocking call (collective
// or point-to-point): Wait* calls are recorded on entry (a rank blocked in MPI_Wait shows as such),
// Test* calls only when they complete one (polling loops would otherwise flood the trace).

namespace {
// `all`: MPI_Waitall, whose entries are taken before the call (track with `take`); Waitany and Waitsome leave
// some pending, so theirs are looked up and erased after it.
template <bool all, typename Call>
__attribute__((always_inline)) inline int traced_wait(uint8_t op, int count, MPI_Request* reqs,
                                                      uint64_t caller, Call&& call) {
  Tracked t;
  track<all>(t, count, reqs);
  if (t.n == 0) return call();
  Pending p = wait_enter(op, t.first(), static_cast<uint32_t>(count), caller);
  int rc;
  {
    InsideCall in(p);
    rc = call();
  }
  const uint32_t us = wait_elapsed_us(p);  // before settle's locked instructions
  wait_returned(p, all ? settle_taken_all(t, reqs) : settle(t, reqs), rc, us);
  return rc;
}

template <typename Call>
__attribute__((always_inline)) inline int traced_test(uint8_t op, int count, MPI_Request* reqs,
                                                      uint64_t caller, Call&& call) {
  Tracked t;
  track(t, count, reqs);
  if (t.n == 0) return call();
  uint64_t ticks0 = 0;
  const uint64_t t0 = record_clock(&ticks0);
  int rc = call();
  uint32_t done = settle(t, reqs);
  if (done > 0 || rc != MPI_SUCCESS) {
    // Entered at t0, before the call, so the duration is measured from t0.
    Pending p = wait_enter(op, t.first(), static_cast<uint32_t>(count), caller, t0, ticks0);
    wait_returned(p, done, rc, wait_elapsed_us(p));
  }
  return rc;
}
}  // namespace

WRAP_EXPORT int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  PASSTHROUGH(MPI_Wait, req, status);
  MPI_Request handle;
  uint64_t id;
  if (!tracked_one<true>(req, &handle, &id)) return FORWARD(req, status);
  Pending p = wait_enter(LST_WAIT_WAIT, id, 1, caller);
  int rc;
  {
    InsideCall in(p);
    rc = FORWARD(req, status);
  }
  const uint32_t us = wait_elapsed_us(p);
  wait_returned(p, settle_taken(req, handle, id), rc, us);
  return rc;
}

WRAP_EXPORT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Waitall, count, reqs, statuses);
  return traced_wait<true>(LST_WAIT_WAITALL, count, reqs, caller, CALL_REAL(count, reqs, statuses));
}

WRAP_EXPORT int MPI_Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
  PASSTHROUGH(MPI_Waitany, count, reqs, index, status);
  return traced_wait<false>(LST_WAIT_WAITANY, count, reqs, caller, CALL_REAL(count, reqs, index, status));
}

WRAP_EXPORT int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[],
                             MPI_Status statuses[]) {
  PASSTHROUGH(MPI_Waitsome, incount, reqs, outcount, indices, statuses);
  return traced_wait<false>(LST_WAIT_WAITSOME, incount, reqs, caller,
                            CALL_REAL(incount, reqs, outcount, indices, statuses));
}

WRAP_EXPORT int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  PASSTHROUGH(MPI_Test, req, flag, status);
  MPI_Request handle;
  uint64_t id;
  if (!tracked_one(req, &handle, &id)) return FORWARD(req, flag, status);
  uint64_t ticks0 = 0;
  const uint64_t t0 = record_clock(&ticks0);
  const int rc = FORWARD(req, flag, status);
  const uint32_t done = settle_one(req, handle, id);
  if (done > 0 || rc != MPI_SUCCESS) {
    Pending p = wait_enter(LST_WAIT_TEST, id, 1, caller, t0, ticks0);  // entered at t0, before the call
    wait_returned(p, done, rc, wait_elapsed_us(p));
  }
  return rc;
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

// The request's record stays RETURNED: freed, not completed by a traced call. Its entry is taken out
// before the call, as MPI_Wait's (the handle is live until the call frees it), and put back if the call
// fails.
WRAP_EXPORT int MPI_Request_free(MPI_Request* req) {
  PASSTHROUGH(MPI_Request_free, req);
  MPI_Request handle;
  uint64_t id;
  const bool tracked = tracked_one<true>(req, &handle, &id);
  int rc = FORWARD(req);
  if (__builtin_expect(rc != MPI_SUCCESS, 0) && tracked) g_requests.insert(key_of(handle), id);
  return rc;
}

// ---- communicators ------------------------------------------------------------------------------------

WRAP_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_dup, comm, newcomm);
  return create_child(LST_COMM_DUP, comm, 0, newcomm, caller, CALL_REAL(comm, newcomm));
}

WRAP_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_dup_with_info, comm, info, newcomm);
  return create_child(LST_COMM_DUP, comm, 0, newcomm, caller, CALL_REAL(comm, info, newcomm));
}

// The new handle exists when Comm_idup returns; its group is the parent's, which is what is recorded.
WRAP_EXPORT int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* req) {
  PASSTHROUGH(MPI_Comm_idup, comm, newcomm, req);
  Creation cr = begin_creation(comm);
  int rc = creating(LST_COMM_IDUP, cr.parent, 0, caller, CALL_REAL(comm, newcomm, req));
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
    Members m = members_of(comm);
    uint64_t id = child_id(cr.parent_id, cr.index, LST_COMM_IDUP, LST_NONE, m.world);
    register_comm(*newcomm, LST_COMM_IDUP, id, cr.parent_id, LST_NONE, 0, m, caller);
  }
  return rc;
}

WRAP_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_split, comm, color, key, newcomm);
  return create_child(LST_COMM_SPLIT, comm, split_color(color), color, key, newcomm, caller,
                      CALL_REAL(comm, color, key, newcomm));
}

WRAP_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                    MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_split_type, comm, split_type, key, info, newcomm);
  return create_child(LST_COMM_SPLIT_TYPE, comm, split_color(split_type), split_type, key, newcomm, caller,
                      CALL_REAL(comm, split_type, key, info, newcomm));
}

WRAP_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_create, comm, group, newcomm);
  return create_child(LST_COMM_CREATE, comm, 0, newcomm, caller, CALL_REAL(comm, group, newcomm));
}

// Collective over the group's members only: numbered by (parent, tag, members), not by the parent.
WRAP_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Comm_create_group, comm, group, tag, newcomm);
  CommEntry* parent = comm_of(comm);
  int rc = creating(LST_COMM_CREATE_GROUP, parent, 0, caller, CALL_REAL(comm, group, tag, newcomm));
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
  int rc = creating(LST_COMM_INTERCOMM_CREATE, local, 0, caller,
                    CALL_REAL(local_comm, local_leader, peer_comm, remote_leader, tag, newcomm));
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
  return create_child(LST_COMM_INTERCOMM_MERGE, intercomm, high, newcomm, caller,
                      CALL_REAL(intercomm, high, newcomm));
}

WRAP_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                                MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Cart_create, comm, ndims, dims, periods, reorder, newcomm);
  return create_child(LST_COMM_CART_CREATE, comm, 0, newcomm, caller,
                      CALL_REAL(comm, ndims, dims, periods, reorder, newcomm));
}

WRAP_EXPORT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                                 MPI_Comm* newcomm) {
  PASSTHROUGH(MPI_Graph_create, comm, nnodes, index, edges, reorder, newcomm);
  return create_child(LST_COMM_GRAPH_CREATE, comm, 0, newcomm, caller,
                      CALL_REAL(comm, nnodes, index, edges, reorder, newcomm));
}

namespace {
// After MPI_Comm_free or MPI_Comm_disconnect returned `rc` for `c`: its FREE record, and its handle no
// longer names it (a later communicator at the same handle is another one).
int comm_ended(MPI_Comm c, int rc, uint64_t caller) noexcept {
  if (rc == MPI_SUCCESS && c != MPI_COMM_NULL)
    comm_remove(LST_API_MPI, reinterpret_cast<uintptr_t>(c), LST_COMM_FREE, caller);
  return rc;
}
}  // namespace

WRAP_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  PASSTHROUGH(MPI_Comm_free, comm);
  const MPI_Comm c = comm ? *comm : MPI_COMM_NULL;
  return comm_ended(c, FORWARD(comm), caller);
}

// The intercommunicators of MPI_Comm_spawn, accept and connect end this way, mostly.
WRAP_EXPORT int MPI_Comm_disconnect(MPI_Comm* comm) {
  PASSTHROUGH(MPI_Comm_disconnect, comm);
  const MPI_Comm c = comm ? *comm : MPI_COMM_NULL;
  return comm_ended(c, FORWARD(comm), caller);
}

// ---- lifecycle ------------------------------------------------------------------------------------------

WRAP_EXPORT int MPI_Init(int* argc, char*** argv) {
  const uint64_t caller = app_caller(LOCKSTEP_CALLER(), __builtin_dwarf_cfa());
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
  const uint64_t caller = app_caller(LOCKSTEP_CALLER(), __builtin_dwarf_cfa());
  const auto real = REAL(MPI_Init_thread);
  CallGuard guard;
  int rc = FORWARD(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && guard.outermost() && tracing())
    after_init(provided ? *provided : required, caller);
  return rc;
}

WRAP_EXPORT int MPI_Finalize(void) {
  PASSTHROUGH(MPI_Finalize);
  const uint64_t id = marker_ex(LST_MARK_MPI_FINALIZE, 0, 0, 0, nullptr, caller, LST_STATE_ENTERED);
  int rc = FORWARD();
  marker_returned(id, rc);
  return rc;
}

WRAP_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  t_in_mpi_abort = true;  // its code is the application's, not an MPI error (see ompi_mpi_abort below)
  PASSTHROUGH(MPI_Abort, comm, errorcode);
  marker(LST_MARK_MPI_ABORT, static_cast<uint64_t>(static_cast<int64_t>(errorcode)), nullptr, caller);
  set_end_state(LST_END_ABORT);
  return FORWARD(comm, errorcode);
}

// ---- MPI's fatal error handler --------------------------------------------------------------------------
// MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT end the process from inside the failing call through Open
// MPI's ompi_mpi_abort(comm, error code), which libmpi calls through its PLT, so this definition is the
// one it reaches. It notes the code on the call this thread is inside (an MPI_ERROR marker, as for a
// code the call returns) and hands on to libmpi's own with the same arguments: the handler's message,
// the abort of the other ranks and the exit status stay Open MPI's. Before anything is noted the
// process has not yet told a peer to stop, so the note is in the trace of every rank that reached it.
// A library without this function never calls it; a code above MPI_ERR_LASTCODE (one the
// application added) is not looked up, since MPI_Error_class could call the fatal handler again.
namespace {
__attribute__((noinline, cold)) void note_fatal_error(int errcode) noexcept {
  if (t_in_mpi_abort || errcode <= MPI_SUCCESS || errcode > MPI_ERR_LASTCODE) return;
  if (g_mpi_state.load(std::memory_order_acquire) != 1 || writer() == nullptr) return;
  const uint64_t inside = thread_state().inside;
  if (inside == 0) return;  // not inside a traced call: nothing to name
  static std::atomic<bool> noted{false};
  if (noted.exchange(true)) return;
  record_error(inside - 1, errcode);
}
}  // namespace

struct ompi_communicator_t;
WRAP_EXPORT int ompi_mpi_abort(ompi_communicator_t* comm, int errcode) {
  using Fn = int (*)(ompi_communicator_t*, int);
  static const Fn real = reinterpret_cast<Fn>(lookup_pmpi("ompi_mpi_abort"));
  note_fatal_error(errcode);
  if (real) return real(comm, errcode);
  _exit(errcode == 0 ? 1 : errcode);  // what Open MPI's own does when it cannot reach the other ranks
}
