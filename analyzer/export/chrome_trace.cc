// Chrome trace-event JSON writer. Times are microseconds (with nanosecond fractions) from the job's
// time origin, the earliest rank's trace start, so every rank shares one clock.
#include "chrome_trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <stdexcept>

#include <string>
#include <string_view>

#include "lockstep/format/reader.h"
#include "lockstep/report/report.h"

namespace lockstep::exporter {

namespace {

void escape_to(std::string& out, std::string_view s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += ch;
    }
  }
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  escape_to(out, s);
  out += '"';
  return out;
}

// Microseconds with nanosecond precision, as the format's "ts" and "dur" want them.
std::string us(int64_t ns) {
  if (ns < 0) return fmt::format("-{}.{:03}", (-ns) / 1000, (-ns) % 1000);
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) { buf_.reserve(kFlushAt + (1 << 16)); }
  void event(std::string_view json) {
    begin();
    buf_ += json;
    end();
  }
  // An event written piece by piece into the buffer (`buf()`), between begin() and end().
  void begin() {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
  }
  void end() {
    ++events_;
    if (buf_.size() > kFlushAt) flush();  // one write per megabyte
  }
  std::string& buf() { return buf_; }
  void raw(std::string_view s) { buf_ += s; }
  void flush() {
    errno = 0;
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      throw std::runtime_error(errno ? fmt::format("write failed: {}", std::strerror(errno))
                                     : "write failed");
    buf_.clear();
  }
  uint64_t events() const { return events_; }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  std::FILE* f_;
  std::string buf_;
  bool first_ = true;
  uint64_t events_ = 0;
};

void put_int(std::string& out, int64_t v) {
  char tmp[24];
  auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, size_t(end - tmp));
}

// Microseconds with nanosecond precision, as `us()` writes them, without formatting machinery.
void put_us(std::string& out, int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  put_int(out, ns / 1000);
  const int frac = int(ns % 1000);
  const char digits[4] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
  out.append(digits, 4);
}

// What every call of one kind writes the same: its quoted name and its arguments after "state".
struct KindJson {
  bool built = false;
  std::string name, args;
};

// Host slices on thread 2c+1, device slices of the same communicator on 2c+2.
int host_tid(uint32_t comm) { return int(comm) * 2 + 1; }
int device_tid(uint32_t comm) { return int(comm) * 2 + 2; }

}  // namespace

std::map<int32_t, std::vector<const check::Finding*>> findings_by_rank(const check::Result& result) {
  std::map<int32_t, std::vector<const check::Finding*>> out;
  for (auto& f : result.findings) {
    const std::vector<int32_t>& who = f.culprits.empty() ? f.ranks : f.culprits;
    for (int32_t r : who) out[r].push_back(&f);
  }
  return out;
}

int64_t finding_time(const check::Finding& f, int32_t rank, int64_t rank_end) {
  int64_t ts = rank_end;
  bool own = false;
  for (auto& d : f.detail) {
    if (!d.present) continue;
    if (d.rank == rank)
      ts = int64_t(d.time_s * 1e9), own = true;
    else if (!own && ts == rank_end)
      ts = int64_t(d.time_s * 1e9);
  }
  return ts;
}

uint64_t write_chrome_trace(const check::Job& job, const check::Result& result, report::Timeline& tl,
                            std::FILE* out, const ChromeOptions& opt) {
  Writer w(out);
  w.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  // Findings become instant events on the culprits' (else every named rank's) communicator track.
  const auto findings_of = findings_by_rank(result);
  std::string e;
  std::vector<KindJson> kjson;
  std::string state_json[8];
  for (uint8_t st = 0; st < 8; ++st) state_json[st] = quoted(format::state_name(st));
  const std::string never_returned = quoted("ENTERED (never returned)");
  std::vector<report::Lane> lanes;
  for (const check::Rank& r : job.ranks) {
    const int32_t pid = r.world_rank;
    w.event(fmt::format(R"({{"ph":"M","pid":{},"tid":0,"name":"process_name","args":{{"name":{}}}}})", pid,
                        quoted(fmt::format("rank {} ({} pid {})", pid, r.host, r.pid))));
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":0,"name":"process_sort_index","args":{{"sort_index":{}}}}})", pid, pid));
    tl.lanes(r, lanes);
    int64_t rank_end = tl.time_of(r, r.last_t_ns);
    for (const report::Lane& lane : lanes) {
      const report::TimelineComm& comm = tl.comms[lane.comm];
      w.event(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", pid,
                          host_tid(lane.comm), quoted(comm.ref.name)));
      w.event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})", pid,
          host_tid(lane.comm), host_tid(lane.comm)));
      bool device_named = false;
      size_t index_in_comm = 0;
      while (index_in_comm < comm.ranks.size() && comm.ranks[index_in_comm] != r.world_rank) ++index_in_comm;
      const bool flows = opt.flows && comm.ranks.size() > 1;
      const size_t first = size_t(std::max<int64_t>(opt.from, 0));
      const size_t last = std::min<size_t>(lane.calls.size(), size_t(std::max<int64_t>(opt.to, 0)));
      for (size_t i = first; i < last; ++i) {
        const report::Call& c = lane.calls[i];
        const report::CallKind& k = tl.kinds[c.kind];
        if (kjson.size() <= c.kind) kjson.resize(c.kind + 1);
        KindJson& kj = kjson[c.kind];
        if (!kj.built) {
          const check::Site& site = tl.sites[k.site];
          kj.name = quoted(k.operation);
          if (k.dtype != LST_DT_NONE || k.count) {
            kj.args += fmt::format(R"(,"count":{},"dtype":{},"bytes":{})", k.count,
                                   quoted(format::dtype_name(k.dtype)), k.count * k.dtype_size);
          }
          if (k.redop) kj.args += fmt::format(R"(,"op":{})", quoted(format::redop_name(k.redop)));
          if (k.root != LST_NONE) kj.args += fmt::format(R"(,"root":{})", k.root);
          if (k.peer != LST_NONE) kj.args += fmt::format(R"(,"peer":{})", k.peer);
          if (!k.tensor.empty()) kj.args += ",\"tensor\":" + quoted(k.tensor);
          std::string where = site.text();
          if (!where.empty()) kj.args += ",\"call_site\":" + quoted(where);
          if (!site.function.empty()) kj.args += ",\"function\":" + quoted(site.function);
          kj.args += "}}";
          kj.built = true;
        }
        int64_t t1 = c.returned ? c.t1_ns : std::max(rank_end, c.t0_ns);
        w.begin();
        std::string& b = w.buf();
        b += R"({"ph":"X","pid":)";
        put_int(b, pid);
        b += R"(,"tid":)";
        put_int(b, host_tid(lane.comm));
        b += R"(,"ts":)";
        put_us(b, c.t0_ns);
        b += R"(,"dur":)";
        put_us(b, t1 - c.t0_ns);
        b += R"(,"cat":"collective","name":)";
        b += kj.name;
        b += R"(,"args":{"seq":)";
        put_int(b, int64_t(i));
        b += R"(,"state":)";
        b += c.returned ? state_json[c.state & 7] : never_returned;
        b += kj.args;
        w.end();
        if (c.device && c.dev1_ns >= c.dev0_ns) {
          if (!device_named) {
            device_named = true;
            w.event(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                                pid, device_tid(lane.comm), quoted(comm.ref.name + " (device)")));
          }
          w.event(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"cat":"device","name":{},)"
                              R"("args":{{"seq":{}}}}})",
                              pid, device_tid(lane.comm), us(c.dev0_ns), us(c.dev1_ns - c.dev0_ns),
                              quoted(k.operation), i));
        }
        // One flow per position every rank of the communicator reached: it starts on the lowest rank,
        // steps through the others and ends on the highest (MPI pairs calls by this position).
        if (flows && i < comm.min_length) {
          const char* ph = index_in_comm == 0 ? "s" : index_in_comm + 1 == comm.ranks.size() ? "f" : "t";
          w.begin();
          b += R"({"ph":")";
          b += ph;
          b += R"(","id":)";
          put_int(b, int64_t((uint64_t(lane.comm) << 40) + i));
          b += R"(,"pid":)";
          put_int(b, pid);
          b += R"(,"tid":)";
          put_int(b, host_tid(lane.comm));
          b += R"(,"ts":)";
          put_us(b, c.t0_ns);
          b += R"(,"cat":"match","name":")";
          b += k.operation;
          b += " #";
          put_int(b, int64_t(i));
          b += *ph == 's' ? "\"}" : R"(","bp":"e"})";
          w.end();
        }
      }
    }
    auto fit = findings_of.find(r.world_rank);
    if (fit == findings_of.end()) continue;
    for (const check::Finding* f : fit->second) {
      if (f->seq >= 0 && (f->seq < opt.from || f->seq >= opt.to)) continue;
      const int64_t ts = finding_time(*f, r.world_rank, rank_end);
      int ci = tl.comm_index(f->comm.id);
      e = fmt::format(R"({{"ph":"i","s":"t","pid":{},"tid":{},"ts":{},"cat":"finding","name":{},"args":{{)",
                      pid, ci >= 0 ? host_tid(uint32_t(ci)) : 0, us(ts), quoted(check::kind_name(f->kind)));
      e += fmt::format(R"("summary":{},"explanation":{},"seq":{},"communicator":{})",
                       quoted(report::headline(*f)), quoted(f->explanation), f->seq, quoted(f->comm.name));
      if (!f->tensor.empty()) e += ",\"tensor\":" + quoted(f->tensor);
      e += "}}";
      w.event(e);
    }
  }
  w.raw(fmt::format(
      "\n],\"metadata\":{{\"tool\":\"lockstep\",\"ranks\":{},\"findings\":{},\"verdict\":{}}}}}\n",
      job.ranks.size(), result.findings.size(), quoted(report::verdict(result))));
  w.flush();
  return w.events();
}

}  // namespace lockstep::exporter
