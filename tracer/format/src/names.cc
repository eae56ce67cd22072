// Names for the trace format's enum values: the API's own spelling for operations (what a user wrote
// in the source) and short neutral names for everything else. Shared by show, check and the reports.
#include <cctype>
#include <string>

#include "lockstep/format/reader.h"

namespace lockstep::format {
namespace {

struct OpNames {
  const char* neutral;  // "allreduce"
  const char* mpi;      // "Allreduce": MPI_ + this; nonblocking: MPI_I + lower-cased first letter
  const char* nccl;     // "AllReduce": nccl + this; nullptr when NCCL has no such call
};

const OpNames kOps[LST_OP__COUNT] = {
    {"unknown", nullptr, nullptr},
    {"barrier", "Barrier", nullptr},
    {"bcast", "Bcast", "Broadcast"},
    {"reduce", "Reduce", "Reduce"},
    {"allreduce", "Allreduce", "AllReduce"},
    {"gather", "Gather", "Gather"},
    {"gatherv", "Gatherv", nullptr},
    {"scatter", "Scatter", "Scatter"},
    {"scatterv", "Scatterv", nullptr},
    {"allgather", "Allgather", "AllGather"},
    {"allgatherv", "Allgatherv", nullptr},
    {"alltoall", "Alltoall", "AlltoAll"},
    {"alltoallv", "Alltoallv", nullptr},
    {"alltoallw", "Alltoallw", nullptr},
    {"reduce_scatter", "Reduce_scatter", "ReduceScatter"},
    {"reduce_scatter_block", "Reduce_scatter_block", nullptr},
    {"scan", "Scan", nullptr},
    {"exscan", "Exscan", nullptr},
    {"send", "Send", "Send"},
    {"recv", "Recv", "Recv"},
    {"probe", "Probe", nullptr},
};

struct CommNames {
  const char* neutral;
  const char* api;  // the call's own name
};
const CommNames kComm[LST_COMM__COUNT] = {
    {"unknown", nullptr},
    {"world", "MPI_COMM_WORLD"},
    {"dup", "MPI_Comm_dup"},
    {"idup", "MPI_Comm_idup"},
    {"split", "MPI_Comm_split"},
    {"split_type", "MPI_Comm_split_type"},
    {"create", "MPI_Comm_create"},
    {"create_group", "MPI_Comm_create_group"},
    {"intercomm_create", "MPI_Intercomm_create"},
    {"intercomm_merge", "MPI_Intercomm_merge"},
    {"cart_create", "MPI_Cart_create"},
    {"graph_create", "MPI_Graph_create"},
    {"free", "MPI_Comm_free"},
    {"nccl_init_rank", "ncclCommInitRank"},
    {"nccl_init_all", "ncclCommInitAll"},
    {"nccl_split", "ncclCommSplit"},
    {"nccl_shrink", "ncclCommShrink"},
    {"nccl_destroy", "ncclCommDestroy"},
    {"nccl_abort", "ncclCommAbort"},
    {"nccl_finalize", "ncclCommFinalize"},
    {"process_set", "rt.process_set"},
};

const char* const kMarkers[LST_MARK__COUNT] = {
    "unknown",   "process_start", "process_end",      "mpi_init",       "mpi_finalize",
    "mpi_abort", "signal",        "nccl_group_start", "nccl_group_end", "annotation",
    "rt_event",  "fork",          "tracer_warning",
};

const char* const kWaits[] = {"unknown",  "MPI_Wait",    "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
                              "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"};

}  // namespace

std::string op_name(const lst_record& r) {
  const uint8_t kind = LST_WORD_KIND(r.word);
  const bool nonblocking = LST_WORD_FLAGS(r.word) & LST_F_NONBLOCKING;
  switch (kind) {
    case LST_KIND_COLLECTIVE: {
      if (r.op >= LST_OP__COUNT) return "op(" + std::to_string(r.op) + ")";
      const OpNames& n = kOps[r.op];
      if (r.api == LST_API_MPI && n.mpi) {
        if (!nonblocking) return std::string("MPI_") + n.mpi;
        std::string s = std::string("MPI_I") + n.mpi;
        s[5] = char(std::tolower(static_cast<unsigned char>(s[5])));
        return s;
      }
      if (r.api == LST_API_NCCL && n.nccl) return std::string("nccl") + n.nccl;
      if (r.api == LST_API_RT) return std::string("rt.") + n.neutral;
      if (r.api == LST_API_CUDA) return std::string("cuda.") + n.neutral;
      return n.neutral;
    }
    case LST_KIND_COMM:
      if (r.op < LST_COMM__COUNT && kComm[r.op].api) return kComm[r.op].api;
      return "comm(" + std::to_string(r.op) + ")";
    case LST_KIND_MARKER:
      switch (r.op) {
        case LST_MARK_MPI_INIT:
          return "MPI_Init";
        case LST_MARK_MPI_FINALIZE:
          return "MPI_Finalize";
        case LST_MARK_MPI_ABORT:
          return "MPI_Abort";
        case LST_MARK_NCCL_GROUP_START:
          return "ncclGroupStart";
        case LST_MARK_NCCL_GROUP_END:
          return "ncclGroupEnd";
        default:
          return marker_name(r.op);
      }
    case LST_KIND_WAIT:
      return wait_op_name(r.op);
    case LST_KIND_DEVICE:
      return "device";
    case LST_KIND_STACK:
      return "stack";
    default:
      return kind_name(kind);
  }
}

const char* dtype_name(uint8_t d) {
  static const char* const names[] = {"",         "int8",        "uint8",  "int16",   "uint16",   "int32",
                                      "uint32",   "int64",       "uint64", "float16", "bfloat16", "float32",
                                      "float64",  "long_double", "char",   "byte",    "packed",   "bool",
                                      "fp8_e4m3", "fp8_e5m2",    "pair"};
  if (d < sizeof names / sizeof names[0]) return names[d];
  if (d == LST_DT_DERIVED) return "derived";
  if (d == LST_DT_UNKNOWN) return "unknown";
  return "?";
}

const char* redop_name(uint8_t o) {
  static const char* const names[] = {"",       "sum",    "prod",    "min",      "max",  "avg",
                                      "land",   "lor",    "band",    "bor",      "lxor", "bxor",
                                      "minloc", "maxloc", "replace", "premulsum"};
  if (o < sizeof names / sizeof names[0]) return names[o];
  if (o == LST_RED_USER) return "user";
  if (o == LST_RED_UNKNOWN) return "unknown";
  return "?";
}

const char* state_name(uint8_t s) {
  static const char* const names[] = {"", "entered", "returned", "completed", "failed"};
  return s < sizeof names / sizeof names[0] ? names[s] : "?";
}

const char* kind_name(uint8_t k) {
  switch (k) {
    case LST_KIND_COLLECTIVE:
      return "collective";
    case LST_KIND_COMM:
      return "comm";
    case LST_KIND_MARKER:
      return "marker";
    case LST_KIND_WAIT:
      return "wait";
    case LST_KIND_DEVICE:
      return "device";
    case LST_KIND_STACK:
      return "stack";
    case LST_KIND_STRING:
      return "string";
    case LST_KIND_MODULE:
      return "module";
    default:
      return "unknown";
  }
}

const char* comm_op_name(uint8_t op) { return op < LST_COMM__COUNT ? kComm[op].neutral : "unknown"; }
const char* marker_name(uint8_t op) { return op < LST_MARK__COUNT ? kMarkers[op] : "unknown"; }
const char* wait_op_name(uint8_t op) { return op <= LST_WAIT_TESTSOME ? kWaits[op] : "unknown"; }

const char* api_name(uint8_t api) {
  switch (api) {
    case LST_API_NONE:
      return "";
    case LST_API_MPI:
      return "mpi";
    case LST_API_NCCL:
      return "nccl";
    case LST_API_RT:
      return "rt";
    case LST_API_CUDA:
      return "cuda";
    default:
      return "?";
  }
}

const char* end_state_name(uint32_t s) {
  switch (s) {
    case LST_END_RUNNING:
      return "running";
    case LST_END_EXIT:
      return "exit";
    case LST_END_SIGNAL:
      return "signal";
    case LST_END_ABORT:
      return "abort";
    default:
      return "unknown";
  }
}

}  // namespace lockstep::format
