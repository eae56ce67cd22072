// The validating trace reader: maps a file read-only and checks every length, offset and enum it
// hands out against the file's real size, so that a truncated, corrupted or still-growing file gives a
// FormatError naming the byte, never a crash.
#include "lockstep/format/reader.h"

#include "lockstep/format/escape.h"
#include "lockstep/format/record_check.h"

#include "checks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <utility>

namespace lockstep::format {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

template <class T>
T load_acq(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

std::string fixed(const char* p, size_t cap) { return std::string(p, strnlen(p, cap)); }

const char* file_type(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a file";
}

constexpr uint64_t kMaxRegion = 1ull << 40;  // no sane trace has a region over 1 TiB
constexpr uint8_t kMaxSubkind = LST_STR_FRAMES;

}  // namespace

// The file name and the text may carry any bytes (a damaged string, a hostile file name): escaped, so
// the message stays one line.
FormatError::FormatError(std::string file, uint64_t offset, const std::string& what)
    : std::runtime_error(printable(file) + ": byte " + std::to_string(offset) + ": " + printable(what)),
      file_(std::move(file)),
      offset_(offset) {}

TraceFile::TraceFile(TraceFile&& o) noexcept { *this = std::move(o); }

TraceFile& TraceFile::operator=(TraceFile&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(const_cast<uint8_t*>(base_), size_);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    header_ = std::exchange(o.header_, nullptr);
    first_id_ = o.first_id_;
    end_id_ = o.end_id_;
    unpublished_ = o.unpublished_;
    overwritten_ = o.overwritten_;
    meta_used_ = o.meta_used_;
    string_start_ = std::move(o.string_start_);
    modules_ = std::move(o.modules_);
  }
  return *this;
}

TraceFile::~TraceFile() {
  if (base_) munmap(const_cast<uint8_t*>(base_), size_);
}

TraceFile TraceFile::open(const std::string& path) {
  TraceFile t;
  t.path_ = path;
  auto fail = [&](uint64_t at, const std::string& what) { return FormatError(path, at, what); };

  // O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read at all.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw fail(0, std::string("cannot open: ") + strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail(0, std::string("not a regular file (") + file_type(st.st_mode) + ")");
  }
  t.size_ = uint64_t(st.st_size);
  if (t.size_ < LST_HEADER_SIZE) {
    ::close(fd);
    throw fail(t.size_, format("file ends after %" PRIu64
                               " bytes, inside the %u-byte header (truncated or not a trace)",
                               t.size_, LST_HEADER_SIZE));
  }
  // A file that is still being written may grow between fstat and reading its capacity: map again.
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  const lst_header* h = nullptr;
  bool newer = false;
  uint64_t meta_offset = 0, meta_slots = 0, records_offset = 0, capacity = 0, grown_size = 0;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      munmap(const_cast<uint8_t*>(t.base_), t.size_);
      t.base_ = nullptr;
      t.size_ = grown_size;  // only now: size_ is always the length of the current mapping
    }
    void* m = mmap(nullptr, t.size_, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) throw fail(0, std::string("cannot map: ") + strerror(errno));
    t.base_ = static_cast<const uint8_t*>(m);
    h = reinterpret_cast<const lst_header*>(t.base_);
    t.header_ = h;
    // Header.
    if (memcmp(h->magic, LST_MAGIC, 8) != 0) throw fail(0, "bad magic: not a lockstep trace");
    // 1.x files (records without checks) stay readable; records then keep the 1.x word layout.
    if (h->version_major != LST_VERSION_MAJOR && h->version_major != 1)
      throw fail(offsetof(lst_header, version_major),
                 format("format version %u.%u is not readable by this reader (reads 1.x and %u.x)",
                        h->version_major, h->version_minor, LST_VERSION_MAJOR));
    newer = h->version_minor > (h->version_major == 1 ? LST_V1_LAST_MINOR : LST_VERSION_MINOR);
    if (h->header_size != LST_HEADER_SIZE)
      throw fail(offsetof(lst_header, header_size),
                 format("header size %u, expected %u", h->header_size, LST_HEADER_SIZE));
    if (h->slot_size != LST_SLOT_SIZE)
      throw fail(offsetof(lst_header, slot_size),
                 format("slot size %u, expected %u", h->slot_size, LST_SLOT_SIZE));
    if (!newer && (h->flags & ~uint32_t(LST_HDR_RING | LST_HDR_NOSPACE | LST_HDR_CHECKED)))
      throw fail(offsetof(lst_header, flags), format("unknown header flags 0x%x", h->flags));
    if (h->end_state > LST_END_ABORT && !newer)
      throw fail(offsetof(lst_header, end_state), format("unknown end state %u", h->end_state));

    meta_offset = h->meta_offset, meta_slots = h->meta_slots;
    records_offset = h->records_offset, capacity = h->record_capacity;
    if (meta_offset < LST_HEADER_SIZE || meta_offset % LST_SLOT_SIZE != 0 || meta_offset > kMaxRegion)
      throw fail(offsetof(lst_header, meta_offset),
                 format("metadata offset %" PRIu64 " is invalid", meta_offset));
    if (meta_slots > kMaxRegion / LST_SLOT_SIZE)
      throw fail(offsetof(lst_header, meta_slots),
                 format("metadata region of %" PRIu64 " slots is too large", meta_slots));
    const uint64_t meta_end = meta_offset + meta_slots * LST_SLOT_SIZE;
    if (records_offset < meta_end || records_offset % LST_SLOT_SIZE != 0 || records_offset > kMaxRegion)
      throw fail(offsetof(lst_header, records_offset),
                 format("records offset %" PRIu64 " overlaps the metadata region ending at byte %" PRIu64
                        " or is invalid",
                        records_offset, meta_end));
    if (capacity > kMaxRegion / LST_SLOT_SIZE)
      throw fail(offsetof(lst_header, record_capacity),
                 format("record capacity %" PRIu64 " is too large", capacity));
    const uint64_t records_end = records_offset + capacity * LST_SLOT_SIZE;
    // A writer grows the file before it raises record_capacity, so a shorter file was cut -- unless
    // the file grew after it was measured: then map it again. A writer growing in small chunks on a
    // busy machine can outrun a few retries, and a cut file never grows, so the bound is generous.
    if (t.size_ < records_end) {
      struct stat now;
      if (attempt < 1000 && fstat(fd, &now) == 0 && uint64_t(now.st_size) >= records_end) {
        grown_size = uint64_t(now.st_size);
        continue;
      }
      throw fail(t.size_, format("file ends at byte %" PRIu64 ", before the end of its %" PRIu64
                                 "-record region at byte %" PRIu64 " (truncated)",
                                 t.size_, capacity, records_end));
    }
    break;
  }

  const bool checked = h->flags & LST_HDR_CHECKED;
  if (checked && h->header_check != header_check(h))
    throw fail(offsetof(lst_header, header_check),
               format("header does not match its check 0x%08x (damaged between bytes 8 and %zu)",
                      h->header_check, sizeof(lst_header)));
  const uint64_t next = load_acq(&h->record_next);
  if (h->flags & LST_HDR_RING) {
    if (capacity == 0) throw fail(offsetof(lst_header, record_capacity), "ring of 0 records");
    t.first_id_ = next > capacity ? next - capacity : 0;
    t.end_id_ = next;
  } else {
    t.first_id_ = 0;
    t.end_id_ = std::min(next, capacity);  // reserved past capacity: dropped or not mapped yet
  }

  // Metadata: a sequence of published entries; the first zero word ends it (serialised writes mean
  // only the last entry can be incomplete).
  const uint64_t meta_used = std::min(load_acq(&h->meta_next), meta_slots);
  t.string_start_.assign(meta_used, 0);
  std::vector<std::pair<uint64_t, const lst_meta_module*>> mods;
  uint64_t i = 0;
  while (i < meta_used) {
    const uint64_t at = meta_offset + i * LST_SLOT_SIZE;
    const uint32_t w = load_acq(reinterpret_cast<const uint32_t*>(t.base_ + at));
    if (w == 0) break;
    if (LST_WORD_MAGIC(w) != LST_SLOT_MAGIC)
      throw fail(at, format("metadata slot %" PRIu64 " has a bad word 0x%08x", i, w));
    const uint32_t kind = LST_META_KIND(w);
    if (kind == LST_KIND_STRING) {
      const auto* s = reinterpret_cast<const lst_meta_string*>(t.base_ + at);
      const uint64_t nslots =
          (sizeof(lst_meta_string) + uint64_t(s->len) + LST_SLOT_SIZE - 1) / LST_SLOT_SIZE;
      if (nslots > meta_used - i)
        throw fail(at + 4,
                   format("string at metadata slot %" PRIu64 " has length %u, past the end of the metadata "
                          "region",
                          i, s->len));
      const uint8_t sub = LST_WORD_FLAGS(w);
      if (sub > kMaxSubkind && !newer)
        throw fail(at, format("string at metadata slot %" PRIu64 " has unknown subkind %u", i, sub));
      if (checked && LST_META_STATE(w) != string_check(s->len, t.base_ + at + sizeof(lst_meta_string)))
        throw fail(at, format("string at metadata slot %" PRIu64
                              " does not match its check byte (damaged somewhere in "
                              "bytes %" PRIu64 "..%" PRIu64 ")",
                              i, at, at + sizeof(lst_meta_string) + s->len));
      if (sub == LST_STR_COMM && s->len != sizeof(lst_record))
        throw fail(at + 4, format("communicator copy at metadata slot %" PRIu64 " has length %u, not %zu", i,
                                  s->len, sizeof(lst_record)));
      if (sub == LST_STR_FRAMES && (s->len == 0 || s->len % sizeof(uint64_t) != 0))
        throw fail(
            at + 4,
            format("frame list at metadata slot %" PRIu64 " has length %u, not a multiple of 8", i, s->len));
      t.string_start_[i] = uint8_t(sub + 1);
      i += nslots;
    } else if (kind == LST_KIND_MODULE) {
      const auto* mod = reinterpret_cast<const lst_meta_module*>(t.base_ + at);
      // The check covers the fields, not the word: its flags must be known and fit the fields.
      const uint8_t mflags = LST_WORD_FLAGS(w);
      if (LST_META_STATE(w) != 0 && !newer)
        throw fail(at + 2, format("module entry at metadata slot %" PRIu64 " has state %u, not 0", i,
                                  unsigned(LST_META_STATE(w))));
      if (mflags & ~uint8_t(LST_MOD_PYTHON) && !newer)
        throw fail(at + 3,
                   format("module entry at metadata slot %" PRIu64 " has unknown flags 0x%x", i, mflags));
      if (!(mflags & LST_MOD_PYTHON) && (mod->function != 0 || mod->lo >= LST_PY_ADDR_BASE))
        throw fail(at,
                   format("module entry at metadata slot %" PRIu64 " is native but has Python fields", i));
      if (checked && mod->check != module_check(mod))
        throw fail(at, format("module entry at metadata slot %" PRIu64
                              " does not match its check (damaged somewhere in "
                              "bytes %" PRIu64 "..%" PRIu64 ")",
                              i, at, at + 44));
      mods.emplace_back(at, mod);
      i += 1;
    } else {
      // An entry of an unknown kind has an unknown length, so even a newer file cannot be walked past it.
      if (!newer) throw fail(at, format("metadata slot %" PRIu64 " has unknown kind %u", i, kind));
      break;
    }
  }
  t.meta_used_ = i;
  for (auto& [at, mod] : mods) {
    t.check_string_id(mod->path, at + offsetof(lst_meta_module, path), "module path", UINT64_MAX);
    t.check_string_id(mod->build_id, at + offsetof(lst_meta_module, build_id), "module build id", UINT64_MAX);
    if (mod->lo > mod->hi)
      throw fail(at + offsetof(lst_meta_module, lo), "module range ends before it starts");
    Module out;
    out.path = std::string(t.string(mod->path));
    std::string_view b = t.string(mod->build_id);
    static const char* hex = "0123456789abcdef";
    for (unsigned char c : b) {
      out.build_id += hex[c >> 4];
      out.build_id += hex[c & 15];
    }
    out.base = mod->base;
    out.lo = mod->lo;
    out.hi = mod->hi;
    if (LST_WORD_FLAGS(mod->word) & LST_MOD_PYTHON) {
      t.check_string_id(mod->function, at + offsetof(lst_meta_module, function), "module function",
                        UINT64_MAX);
      if (mod->lo < LST_PY_ADDR_BASE)
        throw fail(at + offsetof(lst_meta_module, lo), "Python code module below the Python address range");
      out.function = std::string(t.string(mod->function));
      out.build_id.clear();
    }
    t.modules_.push_back(std::move(out));
  }
  return t;
}

uint64_t TraceFile::offset_of(uint64_t id) const {
  uint64_t slot = (header_->flags & LST_HDR_RING) ? id % header_->record_capacity : id;
  return header_->records_offset + slot * LST_SLOT_SIZE;
}

const lst_record* TraceFile::record(uint64_t id) const {
  if (id < first_id_ || id >= end_id_) return nullptr;
  const auto* r = reinterpret_cast<const lst_record*>(base_ + offset_of(id));
  const uint32_t w = load_acq(&r->word);
  if (w == 0) return nullptr;
  // A collective slot holding another id is a ring slot not refilled yet -- unless the id is damage:
  // then the caller's verification of the record says so.
  if ((header_->flags & LST_HDR_RING) && LST_WORD_KIND(w) == LST_KIND_COLLECTIVE &&
      r->u.coll.id_lo != uint32_t(id) &&
      verify_record(r, w, header_->version_major) != RecordVerdict::kDamaged)
    return nullptr;
  return r;
}

void TraceFile::check_string_id(uint32_t id, uint64_t at, const char* what, uint64_t record_id) const {
  if (id == 0) return;
  if (uint64_t(id) - 1 < meta_used_ && string_start_[id - 1] != 0) return;
  std::string who = record_id == UINT64_MAX ? std::string() : format("record %" PRIu64 " ", record_id);
  throw FormatError(path_, at,
                    format("%s%s refers to string %u, which does not exist", who.c_str(), what, id));
}

std::string_view TraceFile::string(uint32_t id) const {
  if (id == 0) return {};
  check_string_id(id, header_->meta_offset + (uint64_t(id) - 1) * LST_SLOT_SIZE, "lookup", UINT64_MAX);
  const uint8_t* p = base_ + header_->meta_offset + (uint64_t(id) - 1) * LST_SLOT_SIZE;
  const auto* s = reinterpret_cast<const lst_meta_string*>(p);
  return {reinterpret_cast<const char*>(p + sizeof(lst_meta_string)), s->len};
}

std::vector<int32_t> TraceFile::members(uint32_t id) const {
  std::vector<int32_t> out;
  if (id == 0) return out;
  std::string_view b = string(id);
  const uint64_t at = header_->meta_offset + (uint64_t(id) - 1) * LST_SLOT_SIZE;
  if (string_start_[id - 1] != LST_STR_MEMBERS + 1 || b.size() % 4 != 0)
    throw FormatError(path_, at, format("string %u is not a member list", id));
  out.resize(b.size() / 4);
  if (!b.empty()) memcpy(out.data(), b.data(), b.size());
  return out;
}

std::vector<uint64_t> stack_frames_of(const lst_record& r, std::string_view list) {
  std::vector<uint64_t> out;
  for (uint64_t f : r.u.stack.frames)
    if (f) out.push_back(f);
  const size_t own = out.size(), n = list.size() / sizeof(uint64_t);
  out.resize(own + n);
  if (n) memcpy(out.data() + own, list.data(), n * sizeof(uint64_t));
  return out;
}

std::vector<uint64_t> TraceFile::stack_frames(const lst_record& r) const {
  if (r.aux == 0 || header_->version_major < 2) return stack_frames_of(r, {});
  std::string_view b = string(r.aux);
  const uint64_t at = header_->meta_offset + (uint64_t(r.aux) - 1) * LST_SLOT_SIZE;
  if (string_start_[r.aux - 1] != LST_STR_FRAMES + 1 || b.size() % sizeof(uint64_t) != 0)
    throw FormatError(path_, at, format("string %u is not a frame list", r.aux));
  return stack_frames_of(r, b);
}

std::vector<lst_record> TraceFile::comm_copies() const {
  std::vector<lst_record> out;
  for (size_t i = 0; i < string_start_.size(); ++i)
    if (string_start_[i] == LST_STR_COMM + 1) {
      std::string_view b = string(uint32_t(i + 1));
      out.emplace_back();
      memcpy(&out.back(), b.data(), sizeof(lst_record));  // length checked at open
    }
  return out;
}

void TraceFile::throw_damaged(uint64_t id, uint32_t word) const {
  const uint64_t at = offset_of(id);
  if (header_->version_major < 2)
    throw FormatError(path_, at, format("record %" PRIu64 " has a bad slot word 0x%08x", id, word));
  throw FormatError(path_, at,
                    format("record %" PRIu64 " does not match its check (damaged somewhere in bytes %" PRIu64
                           "..%" PRIu64 ")",
                           id, at, at + sizeof(lst_record)));
}

void TraceFile::validate() {
  const uint32_t major = header_->version_major;
  const bool newer = header_->version_minor > (major == 1 ? LST_V1_LAST_MINOR : LST_VERSION_MINOR);
  const bool ring = header_->flags & LST_HDR_RING;
  unpublished_ = 0;
  overwritten_ = 0;
  for (uint64_t id = first_id_; id < end_id_; ++id) {
    const uint64_t at = offset_of(id);
    const auto* r = reinterpret_cast<const lst_record*>(base_ + at);
    const uint32_t w = load_acq(&r->word);
    if (w == 0) {
      ++unpublished_;
      continue;
    }
    auto bad = [&](uint64_t field, const std::string& what) {
      return FormatError(path_, at + field, format("record %" PRIu64 " %s", id, what.c_str()));
    };
    // Damage first: the range checks below are for intact records a newer writer may have made.
    switch (verify_record(r, w, major)) {
      case RecordVerdict::kIntact:
        break;
      case RecordVerdict::kChanged:
        ++unpublished_;
        continue;  // being refilled or updated right now
      case RecordVerdict::kDamaged:
        throw_damaged(id, w);
    }
    const uint8_t kind = LST_WORD_KIND(w), state = LST_WORD_STATE(w);
    if (kind < LST_KIND_COLLECTIVE || kind > LST_KIND_STACK) {
      if (newer) continue;  // a kind added by a later minor version: skip it whole
      throw bad(0, format("has unknown kind %u", kind));
    }
    if (ring && kind == LST_KIND_COLLECTIVE && r->u.coll.id_lo != uint32_t(id)) {
      ++overwritten_;
      continue;
    }
    if (state > LST_STATE_FAILED || ((kind == LST_KIND_COLLECTIVE || kind == LST_KIND_WAIT) && state == 0))
      throw bad(0, format("has invalid state %u", state));
    if (r->api > LST_API_CUDA && !newer)
      throw bad(offsetof(lst_record, api), format("has unknown api %u", r->api));
    bool op_ok = true;
    switch (kind) {
      case LST_KIND_COLLECTIVE:
        op_ok = r->op < LST_OP__COUNT;
        break;
      case LST_KIND_COMM:
        op_ok = r->op >= LST_COMM_WORLD && r->op < LST_COMM__COUNT;
        break;
      case LST_KIND_MARKER:
        op_ok = r->op >= LST_MARK_PROCESS_START && r->op < LST_MARK__COUNT;
        break;
      case LST_KIND_WAIT:
        op_ok = r->op >= LST_WAIT_WAIT && r->op <= LST_WAIT_TESTSOME;
        break;
      default:
        break;
    }
    if (!op_ok && !newer)
      throw bad(offsetof(lst_record, op), format("(%s) has unknown op %u", kind_name(kind), r->op));
    if (kind == LST_KIND_COLLECTIVE && !newer) {
      const uint8_t d = r->dtype, o = r->redop;
      if (!(d <= LST_DT_PAIR || d == LST_DT_DERIVED || d == LST_DT_UNKNOWN))
        throw bad(offsetof(lst_record, dtype), format("has unknown datatype %u", d));
      if (!(o <= LST_RED_PREMULSUM || o == LST_RED_USER || o == LST_RED_UNKNOWN))
        throw bad(offsetof(lst_record, redop), format("has unknown reduction op %u", o));
    }
    if (kind != LST_KIND_DEVICE && kind != LST_KIND_STACK)
      check_string_id(r->aux, at + offsetof(lst_record, aux), "name", id);
    if (kind == LST_KIND_STACK && r->aux != 0 && major >= 2) {
      check_string_id(r->aux, at + offsetof(lst_record, aux), "frame list", id);
      if (string_start_[r->aux - 1] != LST_STR_FRAMES + 1)
        throw bad(offsetof(lst_record, aux), format("frame list %u is not a frame list", r->aux));
    }
    if (kind == LST_KIND_COMM && r->members != 0) {
      check_string_id(r->members, at + offsetof(lst_record, members), "member list", id);
      if (string_start_[r->members - 1] != LST_STR_MEMBERS + 1)
        throw bad(offsetof(lst_record, members), format("member list %u is not a member blob", r->members));
    }
  }
}

std::string TraceFile::host() const { return fixed(header_->host, sizeof header_->host); }
std::string TraceFile::job_id() const { return fixed(header_->job_id, sizeof header_->job_id); }
std::string TraceFile::cmdline() const { return fixed(header_->cmdline, sizeof header_->cmdline); }
std::string TraceFile::tracer_version() const {
  return fixed(header_->tracer_version, sizeof header_->tracer_version);
}

namespace {
// A decimal number of 1 to 10 digits that fits an int32_t, else -1.
int64_t decimal(std::string_view s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string_view::npos) return -1;
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v <= INT32_MAX ? v : -1;
}
}  // namespace

std::optional<TraceFileName> parse_trace_file_name(std::string_view name) {
  constexpr std::string_view kPrefix = "rank-", kSuffix = ".lstrace", kCreating = ".creating";
  TraceFileName out;
  if (name.size() > 1 + kCreating.size() && name.front() == '.' && name.ends_with(kCreating)) {
    name = name.substr(1, name.size() - 1 - kCreating.size());
    out.creating = true;
  }
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const std::string_view stem = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const size_t first = stem.find('.'), last = stem.rfind('.');
  if (first == std::string_view::npos || last <= first + 1) return std::nullopt;  // no host
  const std::string_view rank = stem.substr(0, first);
  if (rank != "u") {
    const int64_t r = decimal(rank);
    if (r < 0) return std::nullopt;
    out.rank = int32_t(r);
  }
  const int64_t pid = decimal(stem.substr(last + 1));
  if (pid <= 0) return std::nullopt;
  out.pid = int32_t(pid);
  out.host = std::string(stem.substr(first + 1, last - first - 1));
  return out;
}

std::vector<std::string> find_traces(const std::string& dir, std::vector<std::string>* skipped) {
  DIR* d = opendir(dir.c_str());
  if (!d) throw FormatError(dir, 0, std::string("cannot read directory: ") + strerror(errno));
  struct Entry {
    long rank;
    std::string host;
    long pid;
    std::string path;
  };
  std::vector<Entry> found;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    const std::string ext = ".lstrace";
    if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) continue;
    std::string full = dir + "/" + name;
    struct stat st;
    if (lstat(full.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode)) {
      // Never followed or opened: a link could point anywhere, a FIFO would block the reader.
      if (skipped) skipped->push_back(full + ": " + file_type(st.st_mode) + ", not a regular file: skipped");
      continue;
    }
    // The writer's names by rank ("u" after every number), host and pid; anything else after, by name.
    Entry en{LONG_MAX, name, LONG_MAX, full};
    if (const std::optional<TraceFileName> t = parse_trace_file_name(name)) {
      if (t->rank >= 0) en.rank = t->rank;
      en.host = t->host;
      en.pid = t->pid;
    }
    found.push_back(std::move(en));
  }
  closedir(d);
  std::sort(found.begin(), found.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.rank, a.host, a.pid, a.path) < std::tie(b.rank, b.host, b.pid, b.path);
  });
  std::vector<std::string> out;
  for (auto& e : found) out.push_back(std::move(e.path));
  return out;
}

}  // namespace lockstep::format
