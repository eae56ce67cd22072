/* The byte layout of a lockstep trace file (.lstrace): shared by the injected writer, the reader and
 * every tool. Plain C so the injected library and C programs can include it. docs/trace-format.md is
 * the prose version of this file; change both together and follow the versioning rules there. */
#ifndef LOCKSTEP_FORMAT_LAYOUT_H
#define LOCKSTEP_FORMAT_LAYOUT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LST_MAGIC "LSTRACE\x01" /* 8 bytes at offset 0 */
#define LST_VERSION_MAJOR 2     /* bumped when a field changes meaning or place */
#define LST_VERSION_MINOR 2     /* bumped when a field, kind or enum value is added */
#define LST_V1_LAST_MINOR 2     /* 1.x files (no record checks) are still read: 1.0 to 1.2 */
#define LST_HEADER_SIZE 4096u   /* the header page */
#define LST_SLOT_SIZE 64u       /* every record and metadata slot: one cache line */
#define LST_SLOT_MAGIC 0xC5u    /* low byte of a metadata slot's word (and of a 1.x record's) */
#define LST_NONE (-1)           /* root/peer/rank not applicable or not known */

/* File layout:
 *   [0, 4096)                                  lst_header
 *   [meta_offset, meta_offset + meta_slots*64) metadata slots: strings, blobs, modules (append only)
 *   [records_offset, ...)                      record slots, growing in chunks (or a ring)
 */

/* Header flags. */
#define LST_HDR_RING 0x1u /* records region is a ring of record_capacity slots */
/* (1.1) The file system refused to back more of the file (ENOSPC, EDQUOT): recording stopped there;
 * what follows is counted in dropped_records / dropped_meta. */
#define LST_HDR_NOSPACE 0x2u
/* (1.1) header_check, the string check bytes and the module checks are set; a reader verifies them. */
#define LST_HDR_CHECKED 0x4u

typedef struct lst_header {
  char magic[8];            /* LST_MAGIC */
  uint16_t version_major;   /* LST_VERSION_MAJOR */
  uint16_t version_minor;   /* LST_VERSION_MINOR */
  uint32_t header_size;     /* LST_HEADER_SIZE */
  uint32_t slot_size;       /* LST_SLOT_SIZE */
  uint32_t flags;           /* LST_HDR_* */
  uint64_t meta_offset;     /* byte offset of the metadata region */
  uint64_t meta_slots;      /* capacity of the metadata region, in slots */
  uint64_t records_offset;  /* byte offset of the first record slot */
  uint64_t record_capacity; /* slots the file holds now (ring: the ring size); grows */
  uint64_t meta_next;       /* atomic: metadata slots reserved so far */
  uint64_t record_next;     /* atomic: records reserved so far (monotonic record id) */
  int32_t world_rank;       /* LST_NONE until known; set at MPI_Init / first NCCL init */
  int32_t world_size;       /* LST_NONE until known */
  uint32_t pid;             /* the traced process */
  uint32_t ppid;
  uint64_t start_wall_ns;   /* CLOCK_REALTIME at trace creation ... */
  uint64_t start_mono_ns;   /* ... and CLOCK_MONOTONIC at the same instant: aligns ranks */
  uint64_t job_hash;        /* FNV-1a of job_id: groups the files of one job */
  uint32_t dropped_records; /* atomic: records not written (file could not grow) */
  uint32_t dropped_meta;    /* atomic: strings/modules not written (metadata region full) */
  uint32_t end_state;       /* LST_END_*: how the process ended, as far as it could say */
  uint32_t header_check;    /* (1.1, LST_HDR_CHECKED) FNV-1a 32 of the fields fixed at creation */
  char job_id[64];          /* LOCKSTEP_JOB_ID, else the launcher's job id, NUL padded */
  char host[64];            /* gethostname(), NUL padded */
  char cmdline[1024];       /* argv joined by spaces, NUL padded, truncated */
  char tracer_version[32];  /* version of the library that wrote the file */
} lst_header;

enum lst_end_state {
  LST_END_RUNNING = 0, /* nothing recorded yet: running, hung, or killed */
  LST_END_EXIT = 1,    /* exit() / return from main ran the tracer's exit hook */
  LST_END_SIGNAL = 2,  /* a fatal signal was caught (value in the SIGNAL marker) */
  LST_END_ABORT = 3    /* MPI_Abort / ncclCommAbort */
};

/* The first 32-bit word of every slot, stored last with release order. A zero word is a slot that
 * was reserved but never published.
 * Metadata slots (and records of 1.x files): bits 0-7 LST_SLOT_MAGIC, 8-15 kind, 16-23 state (a
 * string's check byte), 24-31 flags.
 * Records (2.0): bits 8-12 kind, 16-18 state, 24-31 flags as before; the other 16 bits (LST_REC_CHECK_MASK:
 * 0-7, 13-15, 19-23, once the slot magic and unused high bits of kind and state) hold the record's check,
 * a 16-bit hash of all 64 bytes with these bits cleared (lockstep/format/record_check.h), stored with
 * the word in the same release store. LST_WORD builds the 1.x form; Writer::publish seals it. */
#define LST_WORD(kind, state, flags) \
  ((uint32_t)LST_SLOT_MAGIC | ((uint32_t)(kind) << 8) | ((uint32_t)(state) << 16) | ((uint32_t)(flags) << 24))
#define LST_WORD_MAGIC(w) ((uint32_t)(w) & 0xFFu)
#define LST_WORD_KIND(w) (((uint32_t)(w) >> 8) & 0x1Fu)   /* every kind, record or metadata, is < 32 */
#define LST_WORD_STATE(w) (((uint32_t)(w) >> 16) & 0x07u) /* record states are < 8 */
#define LST_WORD_FLAGS(w) (((uint32_t)(w) >> 24) & 0xFFu)
#define LST_META_KIND(w) (((uint32_t)(w) >> 8) & 0xFFu) /* the whole bytes, for metadata words */
#define LST_META_STATE(w) (((uint32_t)(w) >> 16) & 0xFFu)
#define LST_REC_CHECK_MASK 0x00F8E0FFu /* (2.0) the check bits of a record word */

enum lst_kind {                          /* record kinds (records region) */
                LST_KIND_COLLECTIVE = 1, /* a collective or point-to-point call: lst_record.coll */
                LST_KIND_COMM = 2,       /* communicator created or destroyed: lst_record.comm */
                LST_KIND_MARKER = 3, /* process/MPI lifecycle, NCCL groups, annotations: lst_record.marker */
                LST_KIND_WAIT = 4,   /* MPI_Wait/Test family call: lst_record.wait */
                LST_KIND_DEVICE = 5, /* device-side times of a collective: lst_record.device */
                LST_KIND_STACK = 6,  /* extra caller frames of the previous record: lst_record.stack */
                /* metadata kinds (metadata region) */
                LST_KIND_STRING = 16, /* interned bytes: lst_meta_string */
                LST_KIND_MODULE = 17  /* a loaded module, for symbolizing call sites: lst_meta_module */
};

enum lst_state {                          /* collective and wait records move forward only */
                 LST_STATE_ENTERED = 1,   /* arguments recorded, call not back yet */
                 LST_STATE_RETURNED = 2,  /* the call came back (nonblocking/GPU: work enqueued) */
                 LST_STATE_COMPLETED = 3, /* the work finished (Wait/Test, or device completion) */
                 LST_STATE_FAILED = 4     /* the call returned an error code (in coll.count for WAIT etc.) */
};

/* Record flags (bits 24-31 of the word). */
#define LST_F_NONBLOCKING 0x01u /* MPI_I* */
#define LST_F_IN_GROUP 0x02u    /* inside ncclGroupStart/End */
#define LST_F_INFERRED 0x04u    /* reconstructed (from kernel names / plugin events), not intercepted */
#define LST_F_CONTROL 0x08u     /* runtime control-plane traffic, not the application's data */
#define LST_F_VCOUNTS 0x10u     /* v-variant: count is this rank's own send count */
#define LST_F_DERIVED 0x20u     /* derived or unknown datatype: compare bytes, not dtype */
#define LST_F_P2P                                                               \
  0x40u /* (1.1) MPI point-to-point (op SEND, RECV or PROBE): not part of the   \
         * communicator's collective sequence; coll.seq holds the tag           \
         * (int32 bits, LST_ANY_TAG for MPI_ANY_TAG), coll.root_or_peer the     \
         * peer rank in comm (LST_ANY_SOURCE, LST_PROC_NULL). MPI_Sendrecv is a \
         * SEND record then a RECV record, both entered before the call and     \
         * returned after it, like an Isend + Irecv + Waitall. */

/* Peer and tag values of point-to-point records (1.1). */
#define LST_ANY_SOURCE (-2) /* MPI_ANY_SOURCE: waits for every other rank of comm */
#define LST_PROC_NULL (-3)  /* MPI_PROC_NULL: no peer, completes at once */
/* (2.0) Roots of rooted MPI collectives are recorded as the caller gave them, invalid ones included
 * (so -1 is a root of -1 there, never "no root": the op says whether a record has a root), except
 * the intercommunicator roles MPI_PROC_NULL (LST_PROC_NULL) and MPI_ROOT (LST_ROOT). */
#define LST_ROOT (-4) /* MPI_ROOT: this process is the root group's root */
/* (2.0) MPI_UNDEFINED as a split colour (LST_MARK_COMM_CREATE extra). */
#define LST_UNDEFINED INT32_MIN
/* (2.0) Null handles in MPI records: comm 0 is MPI_COMM_NULL (or a handle the tracer could not
 * register); dtype LST_DT_NONE on an op that takes a datatype (all but barrier, probe and Alltoallw) is
 * MPI_DATATYPE_NULL. */
#define LST_ANY_TAG (-1) /* MPI_ANY_TAG */

enum lst_api { LST_API_NONE = 0, LST_API_MPI = 1, LST_API_NCCL = 2, LST_API_RT = 3, LST_API_CUDA = 4 };

enum lst_op { /* collective operations (kind COLLECTIVE) */
              LST_OP_UNKNOWN = 0,
              LST_OP_BARRIER,
              LST_OP_BCAST,
              LST_OP_REDUCE,
              LST_OP_ALLREDUCE,
              LST_OP_GATHER,
              LST_OP_GATHERV,
              LST_OP_SCATTER,
              LST_OP_SCATTERV,
              LST_OP_ALLGATHER,
              LST_OP_ALLGATHERV,
              LST_OP_ALLTOALL,
              LST_OP_ALLTOALLV,
              LST_OP_ALLTOALLW,
              LST_OP_REDUCE_SCATTER,
              LST_OP_REDUCE_SCATTER_BLOCK,
              LST_OP_SCAN,
              LST_OP_EXSCAN,
              LST_OP_SEND,
              LST_OP_RECV,
              LST_OP_PROBE, /* (1.1) MPI_Probe/Mprobe with LST_F_P2P; with LST_F_NONBLOCKING too, an
                             * MPI_Iprobe polling loop (docs/trace-format.md) */
              LST_OP__COUNT
};

enum lst_comm_op {                     /* communicator events (kind COMM, in lst_record.op) */
                   LST_COMM_WORLD = 1, /* MPI_COMM_WORLD / MPI_COMM_SELF at init */
                   LST_COMM_DUP,
                   LST_COMM_IDUP,
                   LST_COMM_SPLIT,
                   LST_COMM_SPLIT_TYPE,
                   LST_COMM_CREATE,
                   LST_COMM_CREATE_GROUP,
                   LST_COMM_INTERCOMM_CREATE,
                   LST_COMM_INTERCOMM_MERGE,
                   LST_COMM_CART_CREATE,
                   LST_COMM_GRAPH_CREATE,
                   LST_COMM_FREE,
                   LST_COMM_NCCL_INIT_RANK,
                   LST_COMM_NCCL_INIT_ALL,
                   LST_COMM_NCCL_SPLIT,
                   LST_COMM_NCCL_SHRINK,
                   LST_COMM_NCCL_DESTROY,
                   LST_COMM_NCCL_ABORT,
                   LST_COMM_NCCL_FINALIZE,
                   LST_COMM_RT_PROCESS_SET, /* a runtime process set */
                   LST_COMM__COUNT
};

enum lst_marker {                             /* markers (kind MARKER, in lst_record.op) */
                  LST_MARK_PROCESS_START = 1, /* value: pid */
                  LST_MARK_PROCESS_END,  /* value: exit status if known (UINT64_MAX: not known); (2.0) ref:
                                          * the record of the call the exiting thread was inside, 0 if none */
                  LST_MARK_MPI_INIT,     /* value: provided thread level; extra: for a process that
                                          * MPI_Comm_spawn started, a nonzero key of its own
                                          * MPI_COMM_WORLD; else 0 (and in files of earlier tracers) */
                  LST_MARK_MPI_FINALIZE, /* state ENTERED then RETURNED */
                  LST_MARK_MPI_ABORT,    /* value: error code */
                  LST_MARK_SIGNAL,       /* value: signal number; (2.0) ref: as for PROCESS_END, the record
                                          * of the call the thread that got the signal was inside */
                  LST_MARK_NCCL_GROUP_START, /* value: depth after the call */
                  LST_MARK_NCCL_GROUP_END,   /* value: depth after the call */
                  LST_MARK_ANNOTATION,       /* text: free-form annotation from lockstep_annotate() */
                  LST_MARK_RT_EVENT,         /* runtime event: value = lst_rt_event, text = tensor name */
                  LST_MARK_FORK,             /* value: child pid */
                  LST_MARK_TRACER_WARNING,   /* text: a warning the tracer gave once */
                  LST_MARK_MPI_ERROR,   /* (2.0) an MPI call returned an error: value = its MPI error class,
                                         * extra = the error code, ref = the record of the call (a COLLECTIVE,
                                         * WAIT or COMM_CREATE record, left FAILED), aux = the class's text
                                         * (MPI_Error_string: class numbers differ between MPI libraries) */
                  LST_MARK_COMM_CREATE, /* (2.0) an MPI communicator creation call, ENTERED before it and
                                         * RETURNED or FAILED after: value = lst_comm_op, comm = the parent's
                                         * id, extra = the split colour as int64 (LST_UNDEFINED for
                                         * MPI_UNDEFINED; 0 for other creations). A process that dies inside
                                         * the call leaves it ENTERED. */
                  LST_MARK__COUNT
};

enum lst_wait_op { /* kind WAIT, in lst_record.op */
                   LST_WAIT_WAIT = 1,
                   LST_WAIT_WAITALL,
                   LST_WAIT_WAITANY,
                   LST_WAIT_WAITSOME,
                   LST_WAIT_TEST,
                   LST_WAIT_TESTALL,
                   LST_WAIT_TESTANY,
                   LST_WAIT_TESTSOME
};

enum lst_dtype { /* element types (MPI and NCCL mapped onto one list) */
                 LST_DT_NONE = 0,
                 LST_DT_INT8,
                 LST_DT_UINT8,
                 LST_DT_INT16,
                 LST_DT_UINT16,
                 LST_DT_INT32,
                 LST_DT_UINT32,
                 LST_DT_INT64,
                 LST_DT_UINT64,
                 LST_DT_FLOAT16,
                 LST_DT_BFLOAT16,
                 LST_DT_FLOAT32,
                 LST_DT_FLOAT64,
                 LST_DT_LONG_DOUBLE,
                 LST_DT_CHAR,
                 LST_DT_BYTE,
                 LST_DT_PACKED,
                 LST_DT_BOOL,
                 LST_DT_FP8_E4M3,
                 LST_DT_FP8_E5M2,
                 LST_DT_PAIR,          /* MPI_FLOAT_INT and friends (MINLOC/MAXLOC) */
                 LST_DT_DERIVED = 254, /* a user-constructed type: only dtype_size is meaningful */
                 LST_DT_UNKNOWN = 255
};

enum lst_redop {
  LST_RED_NONE = 0,
  LST_RED_SUM,
  LST_RED_PROD,
  LST_RED_MIN,
  LST_RED_MAX,
  LST_RED_AVG,
  LST_RED_LAND,
  LST_RED_LOR,
  LST_RED_BAND,
  LST_RED_BOR,
  LST_RED_LXOR,
  LST_RED_BXOR,
  LST_RED_MINLOC,
  LST_RED_MAXLOC,
  LST_RED_REPLACE,
  LST_RED_PREMULSUM,
  LST_RED_USER = 254,
  LST_RED_UNKNOWN = 255
};

enum lst_rt_event { /* lst_marker LST_MARK_RT_EVENT values */
                    LST_RT_SUBMITTED = 1,
                    LST_RT_NEGOTIATED,
                    LST_RT_EXECUTED,
                    LST_RT_COMPLETED,
                    LST_RT_ERROR
};

/* One record slot. `word` is written last (release) when a slot is published and again, with a new
 * state, when a collective returns or completes; every other field a state adds is written first. */
typedef struct lst_record {
  uint32_t word;            /* 0: LST_WORD(kind, state, flags) */
  uint8_t op;               /* 4: lst_op / lst_comm_op / lst_marker / lst_wait_op */
  uint8_t api;              /* 5: lst_api */
  uint8_t dtype;            /* 6: lst_dtype (collectives) */
  uint8_t redop;            /* 7: lst_redop (collectives) */
  uint64_t comm;            /* 8: communicator's cross-rank id (COMM: the new communicator) */
  union {                   /* 16..40: by kind */
    struct {                /* LST_KIND_COLLECTIVE */
      uint32_t seq;         /* 16: position of this collective on `comm`, from 0, per rank */
      int32_t root_or_peer; /* 20: root (rooted ops) or peer (send/recv) as a rank in comm */
      uint32_t dtype_size;  /* 24: bytes per element (MPI_Type_size) */
      uint32_t id_lo;       /* 28: low 32 bits of this record's id (detects ring overwrite) */
      uint64_t count;       /* 32: elements (v-variants: this rank's send count) */
    } coll;
    struct {           /* LST_KIND_COMM */
      uint64_t parent; /* 16: parent communicator id, 0 for none */
      int32_t color;   /* 24: split colour (LST_NONE when not a split) */
      int32_t key;     /* 28: split key */
      int32_t size;    /* 32: communicator size */
      int32_t rank;    /* 36: this process's rank in it */
    } comm;
    struct {          /* LST_KIND_MARKER */
      uint64_t value; /* 16: meaning depends on the marker */
      uint64_t ref;   /* 24: related record id, when there is one */
      uint64_t extra; /* 32: marker specific (RT_EVENT: element count) */
    } marker;
    struct {               /* LST_KIND_WAIT */
      uint64_t first_ref;  /* 16: id of the collective record of the first request waited on */
      uint32_t nrequests;  /* 24: requests passed */
      uint32_t ncompleted; /* 28: collectives it completed */
      uint64_t id;         /* 32: this record's id */
    } wait;
    struct {             /* LST_KIND_DEVICE */
      uint64_t ref;      /* 16: id of the collective record */
      uint64_t start_ns; /* 24: kernel start, CLOCK_MONOTONIC-aligned */
      uint64_t end_ns;   /* 32: kernel end or event completion */
    } device;
    struct {              /* LST_KIND_STACK */
      uint64_t ref;       /* 16: id of the record the frames belong to */
      uint64_t frames[2]; /* 24..40: return addresses, caller's caller first; 0 = none */
    } stack;              /* (2.2) aux: 0, or a LST_STR_FRAMES blob of the frames after frames[1] */
    uint8_t raw[24];
  } u;
  uint64_t caller; /* 40: return address in the caller of the intercepted function */
  uint64_t t_ns;   /* 48: CLOCK_MONOTONIC when the record was entered */
  union {
    uint32_t t_return_us; /* 56: microseconds from entry to return (saturating) */
    uint32_t members;     /* 56: COMM records: blob id of the members' world ranks, 0 if unknown */
  };
  uint32_t aux; /* 60: string id: name (tensor / communicator / annotation text) */
} lst_record;

/* Metadata: a string or blob occupies ceil((8 + len) / 64) consecutive metadata slots; its id is the
 * index of its first slot + 1 (0 means "no string"). With LST_HDR_CHECKED the state byte of a string's
 * word holds a check byte of its length and payload, and a module's `reserved` a check of its fields.
 * For COMM records, `aux` is the communicator name and `members` the blob of its members' world ranks
 * (LST_STR_MEMBERS). */
typedef struct lst_meta_string {
  uint32_t word; /* LST_WORD(LST_KIND_STRING, check byte, subkind) */
  uint32_t len;  /* payload bytes (not NUL terminated) */
  /* uint8_t bytes[len] follow */
} lst_meta_string;

enum lst_string_subkind {
  LST_STR_TEXT = 0,
  LST_STR_MEMBERS = 1 /* int32 world ranks */,
  LST_STR_BUILD_ID = 2,
  LST_STR_COMM = 3,  /* (2.1) ring mode: a copy of a COMM creation record (one lst_record, 64 bytes), kept
                        where the ring cannot overwrite it */
  LST_STR_FRAMES = 4 /* (2.2) uint64 return addresses, outermost last: the frames of a STACK record
                        after its two own (lst_record.stack, aux); written once per distinct tail */
};

typedef struct lst_meta_module {
  uint32_t word;     /* LST_WORD(LST_KIND_MODULE, 0, flags): LST_MOD_* */
  uint32_t path;     /* string id of the module's path (Python: the source file) */
  uint64_t base;     /* load address (dlpi_addr; Python: lo) */
  uint64_t lo, hi;   /* address range of its executable segments (Python: below) */
  uint32_t build_id; /* string id of the GNU build id bytes, 0 if none */
  uint32_t function; /* (1.2) LST_MOD_PYTHON: string id of the function's qualified name */
  uint32_t check;    /* (1.1, LST_HDR_CHECKED) FNV-1a 32 of bytes 4..40 */
  uint8_t pad[20];
} lst_meta_module;

/* Python call sites (1.2). A Python function (one code object) is a module entry with flag
 * LST_MOD_PYTHON: path = its source file, function = its qualified name, base = lo = a synthetic
 * address at or above LST_PY_ADDR_BASE (never a user-space address), hi = lo + LST_PY_LINE_SPAN. A
 * record made from line L of that function has caller = lo + L + 1, so that, as for a native return
 * address, caller - 1 - base is the line. STACK frames of such a record are outer Python frames,
 * encoded alike. */
#define LST_MOD_PYTHON 0x01u
#define LST_PY_ADDR_BASE 0xFF00000000000000ull
#define LST_PY_LINE_SPAN (1ull << 24)

#ifdef __cplusplus
}
static_assert(sizeof(lst_record) == LST_SLOT_SIZE, "a record is one cache line");
static_assert(sizeof(lst_meta_module) == LST_SLOT_SIZE, "a module entry is one slot");
static_assert(sizeof(lst_header) <= LST_HEADER_SIZE, "the header fits its page");
#endif

#endif /* LOCKSTEP_FORMAT_LAYOUT_H */
