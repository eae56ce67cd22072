// The HTML report: the job's data as compact JSON inside one page, with the stylesheet and the script
// that draws it (html_report.css, html_report.js, embedded at build time). Nothing is fetched.
#include "lockstep/report/html.h"

#include <fmt/format.h>

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "json_model.h"
#include "lockstep/format/escape.h"
#include "lockstep/format/reader.h"

namespace lockstep::report {

namespace {

using Json = nlohmann::json;

#include "html_assets.inc"  // kHtmlCss, kHtmlJs

Json site_short(const check::Site& s) {
  Json j = {{"text", s.text()}};
  if (!s.function.empty()) j["function"] = s.function;
  if (!s.file.empty()) j["file"] = s.file;
  if (s.line > 0) j["line"] = s.line;
  return j;
}

// A lane's calls as runs of equal kinds: {kind, n}, ...
using Runs = std::vector<std::pair<uint32_t, uint64_t>>;
Runs runs_of(const Lane& lane) {
  Runs runs;
  for (size_t i = 0; i < lane.calls.size();) {
    size_t j = i;
    while (j < lane.calls.size() && lane.calls[j].kind == lane.calls[i].kind) ++j;
    runs.emplace_back(lane.calls[i].kind, j - i);
    i = j;
  }
  return runs;
}

// Every rank's lanes in job order (Timeline::lanes: the records read again, the costly part of the page),
// read ahead on `threads` threads while the caller groups the ranks before: a thread takes the next rank
// nobody has taken, as long as the ranks read and not yet done with hold fewer than kAheadCalls calls
// (the rank the caller waits for is always taken). With one thread, each rank is read when asked for.
class LaneReader {
 public:
  LaneReader(const check::Job& job, Timeline& tl, int threads) : job_(job), tl_(tl) {
    const size_t n = job.ranks.size();
    lanes_.resize(threads > 1 ? n : 1);
    if (threads <= 1) return;
    ready_.assign(n, 0);
    for (const check::Rank& r : job.ranks) {
      size_t calls = 0;
      for (auto& seq : r.seqs) calls += seq.size();
      calls_.push_back(calls);
    }
    for (int t = 0; t < threads && size_t(t) < n; ++t) threads_.emplace_back([this] { run(); });
  }
  LaneReader(const LaneReader&) = delete;
  LaneReader& operator=(const LaneReader&) = delete;
  ~LaneReader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Rank i's lanes (ranks asked for in order, each once, then done()); throws what reading it threw.
  const std::vector<Lane>& rank(size_t i) {
    if (threads_.empty()) {
      tl_.lanes(job_.ranks[i], lanes_[0]);
      return lanes_[0];
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return ready_[i] || error_; });
    if (!ready_[i]) std::rethrow_exception(error_);
    return lanes_[i];
  }
  void done(size_t i) {
    if (threads_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      spare_.push_back(std::move(lanes_[i]));  // its calls' storage, for a rank still to read
      lanes_[i].clear();
      held_ -= calls_[i];
      waited_ = i + 1;
    }
    changed_.notify_all();
  }

 private:
  static constexpr size_t kAheadCalls = size_t{8} << 20;  // about 400 MB of calls read ahead at most

  void run() {
    for (;;) {
      size_t i;
      std::vector<Lane> out;
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] {
          return stop_ || next_ >= calls_.size() || next_ == waited_ || held_ + calls_[next_] <= kAheadCalls;
        });
        if (stop_ || next_ >= calls_.size()) return;
        i = next_++;
        held_ += calls_[i];
        if (!spare_.empty()) {
          out = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      try {
        tl_.lanes(job_.ranks[i], out);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
        stop_ = true;
        changed_.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        lanes_[i] = std::move(out);
        ready_[i] = 1;
      }
      changed_.notify_all();
    }
  }

  const check::Job& job_;
  Timeline& tl_;
  std::vector<std::vector<Lane>> lanes_;  // by rank (one, reused, with one thread)
  std::vector<std::vector<Lane>> spare_;
  std::vector<uint8_t> ready_;
  std::vector<size_t> calls_;  // by rank
  size_t next_ = 0;            // the next rank to read
  size_t waited_ = 0;          // the rank the caller asks for next
  size_t held_ = 0;            // calls of the ranks taken and not done with
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::thread> threads_;
};

uint64_t lane_hash(const Lane& lane) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (auto& c : lane.calls) {
    h ^= uint64_t(c.kind) * 2 + !c.returned;
    h *= 0x100000001b3ull;
  }
  return h ^ lane.calls.size();
}

// Entry times as deltas in microseconds, durations in microseconds (-1: never returned).
Json times_of(const Lane& lane) {
  Json t = Json::array(), d = Json::array();
  int64_t prev = 0;
  for (auto& c : lane.calls) {
    int64_t us = c.t0_ns / 1000;
    t.push_back(us - prev);
    prev = us;
    d.push_back(c.returned ? (c.t1_ns - c.t0_ns) / 1000 : -1);
  }
  return {{"t", t}, {"d", d}};
}

std::string json_for_script(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  // Inside <script>, "</" would end the element early.
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> source_lines(const std::string& file, int line, int context, int* first) {
  std::vector<std::string> out;
  if (file.empty() || line <= 0) return out;
  std::ifstream in(file);
  if (!in) return out;
  int lo = std::max(1, line - context), hi = line + context;
  std::string text;
  for (int n = 1; n <= hi && std::getline(in, text); ++n)
    if (n >= lo) out.push_back(text.size() > 300 ? text.substr(0, 300) : text);
  if (int(out.size()) < line - lo + 1) return {};  // the file is shorter than the line: not this source
  *first = lo;
  return out;
}

std::string html(const check::Job& job, const check::Result& r, Timeline& tl, const Context& ctx,
                 const StaticReasons& reasons, const HtmlOptions& opt) {
  Json data;
  data["tool"] = {{"name", "lockstep"}, {"version", ctx.version}};
  data["directory"] = ctx.dir;
  data["verdict"] = verdict(r);
  data["in_lockstep"] = r.in_lockstep();
  data["summary"] = {{"ranks", r.summary.ranks},
                     {"world_size", r.summary.world_size},
                     {"communicators", r.summary.communicators},
                     {"collectives", r.summary.collectives},
                     {"records", r.summary.records},
                     {"job_id", r.summary.job_id}};
  data["missing_processes"] = r.missing_processes;
  data["warnings"] = r.warnings;

  // Lanes: every rank's calls, grouped by identical call lists per communicator.
  struct Group {
    std::vector<int32_t> ranks;
    Runs runs;
    size_t length = 0;
    std::vector<uint32_t> open;
  };
  std::vector<std::vector<Group>> groups(tl.comms.size());
  std::vector<std::unordered_map<uint64_t, size_t>> group_of(tl.comms.size());
  std::vector<Json> lanes(tl.comms.size(), Json::array());
  size_t times_left = opt.time_budget;
  bool times_dropped = false;
  LaneReader reader(job, tl, opt.threads);
  for (size_t ri = 0; ri < job.ranks.size(); ++ri) {
    for (const Lane& lane : reader.rank(ri)) {
      const TimelineComm& comm = tl.comms[lane.comm];
      uint64_t h = lane_hash(lane);
      auto [it, fresh] = group_of[lane.comm].try_emplace(h, groups[lane.comm].size());
      if (fresh) {
        Group g;
        g.runs = runs_of(lane);
        g.length = lane.calls.size();
        for (size_t i = 0; i < lane.calls.size(); ++i)
          if (!lane.calls[i].returned) g.open.push_back(uint32_t(i));
        groups[lane.comm].push_back(std::move(g));
      }
      Group& g = groups[lane.comm][it->second];
      g.ranks.push_back(lane.rank);
      const bool per_rank = comm.ranks.size() <= opt.lanes_per_rank_up_to;
      if (!per_rank && !fresh) continue;  // the group's lane is its first rank's
      Json l = {{"group", it->second}, {"rank", lane.rank}};
      if (lane.calls.size() <= times_left) {
        times_left -= lane.calls.size();
        Json t = times_of(lane);
        l["t"] = std::move(t["t"]);
        l["d"] = std::move(t["d"]);
      } else {
        times_dropped = true;
      }
      lanes[lane.comm].push_back(std::move(l));
    }
    reader.done(ri);
  }
  if (times_dropped)
    data["warnings"].push_back("call times were left out of some lanes (the time axis skips them)");
  // Kinds and call sites numbered as the page first uses them (communicators, groups, runs, in order):
  // the timeline numbers them as its threads meet them, which differs from run to run.
  std::unordered_map<uint32_t, uint32_t> kind_id, site_id;
  std::vector<uint32_t> kind_order, site_order;  // timeline index by page index
  Json comms = Json::array();
  for (size_t c = 0; c < tl.comms.size(); ++c) {
    const TimelineComm& comm = tl.comms[c];
    Json gj = Json::array();
    for (auto& g : groups[c]) {
      Json runs = Json::array();
      for (auto [raw, n] : g.runs) {
        auto [it, fresh] = kind_id.try_emplace(raw, uint32_t(kind_order.size()));
        if (fresh) kind_order.push_back(raw);
        runs.push_back({it->second, n});
      }
      gj.push_back({{"ranks", g.ranks}, {"runs", std::move(runs)}, {"length", g.length}, {"open", g.open}});
    }
    comms.push_back({{"id", hex_id(comm.ref.id)},
                     {"name", comm.ref.name},
                     {"size", comm.ref.size},
                     {"ranks", comm.ranks},
                     {"per_rank", comm.ranks.size() <= opt.lanes_per_rank_up_to},
                     {"groups", gj},
                     {"lanes", lanes[c]}});
  }
  data["comms"] = comms;
  Json kinds = Json::array();
  for (uint32_t raw : kind_order) {
    const CallKind& k = tl.kinds[raw];
    auto [site, fresh_site] = site_id.try_emplace(k.site, uint32_t(site_order.size()));
    if (fresh_site) site_order.push_back(k.site);
    Json kj = {{"op", k.op}, {"name", k.operation}, {"site", site->second}};
    if (k.dtype != LST_DT_NONE || k.count) {
      kj["count"] = k.count;
      kj["dtype"] = format::dtype_name(k.dtype);
      kj["bytes"] = k.count * k.dtype_size;
    }
    if (k.redop) kj["redop"] = format::redop_name(k.redop);
    if (k.root != LST_NONE) kj["root"] = k.root;
    if (k.peer != LST_NONE) kj["peer"] = k.peer;
    if (!k.tensor.empty()) kj["tensor"] = k.tensor;
    kinds.push_back(kj);
  }
  data["kinds"] = kinds;
  Json sites = Json::array();
  for (uint32_t raw : site_order) sites.push_back(site_short(tl.sites[raw]));
  data["sites"] = sites;
  data["end_us"] = tl.end_ns / 1000;

  // Findings, with the source lines of the culprit's call site (else the first rank's that has one).
  Json findings = Json::array();
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const check::Finding& f = r.findings[i];
    Json fj = finding_json(f);
    fj["comm_index"] = tl.comm_index(f.comm.id);
    const check::RankDetail* at = nullptr;
    for (auto& d : f.detail)
      for (int32_t c : f.culprits)
        if (!at && d.rank == c && d.present && !d.site.file.empty()) at = &d;
    for (auto& d : f.detail)
      if (!at && d.present && !d.site.file.empty()) at = &d;
    if (at) {
      int first = 0;
      std::vector<std::string> lines = source_lines(at->site.file, at->site.line, opt.source_context, &first);
      // Shown relative to where the report was written from, when the file is under it.
      std::error_code ec;
      std::filesystem::path shown = std::filesystem::path(at->site.file).lexically_normal();
      std::filesystem::path rel = shown.lexically_relative(std::filesystem::current_path(ec));
      if (!ec && !rel.empty() && *rel.begin() != "..") shown = rel;
      if (!lines.empty())
        fj["source"] = {{"file", shown.string()},
                        {"line", at->site.line},
                        {"first", first},
                        {"lines", lines},
                        {"rank", at->rank}};
    }
    auto rs = reasons.find(i);
    if (rs != reasons.end()) {
      fj["static"] = static_json(rs->second);
    }
    findings.push_back(fj);
  }
  data["findings"] = findings;

  Json hang = {
      {"hung", r.hung}, {"look_here", r.look_here}, {"wait_for", Json::array()}, {"ranks", Json::array()}};
  for (auto& e : r.wait_for) {
    Json ej = edge_json(e);
    for (auto& st : r.states)
      if (st.rank == e.from && st.blocked) ej["operation"] = st.in.operation;
    hang["wait_for"].push_back(ej);
  }
  for (auto& st : r.states) {
    Json s = {{"rank", st.rank},       {"host", st.host},
              {"pid", st.pid},         {"end", check::end_state_name(st.end)},
              {"blocked", st.blocked}, {"waits_for", st.waits_for}};
    if (st.end == check::EndState::kCrashed) s["signal"] = st.signal;
    if (st.under_way_with != LST_NONE) s["under_way_with"] = st.under_way_with;
    if (!st.at_stop.empty()) s["at_stop"] = check::at_stop_text(st.at_stop, st.at_stop_cpu, st.at_stop_wchan);
    if (st.blocked) {
      s["operation"] = st.in.operation;
      s["seq"] = st.in.seq;
      s["communicator"] = st.comm.name;
      s["site"] = st.in.site.text().empty() && st.in.callers.empty() ? std::string() : site_chain(st.in);
      if (!st.in.tensor.empty()) s["tensor"] = st.in.tensor;
    }
    hang["ranks"].push_back(s);
  }
  data["hang"] = hang;

  std::string out;
  out.reserve(1 << 16);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>lockstep report: " + format::xml_text(ctx.dir) + "</title>\n<style>\n";
  out += kHtmlCss;
  out += "</style></head>\n<body>\n";
  out += "<header id=\"top\"><h1>lockstep report</h1><p id=\"verdict\" class=\"" +
         std::string(r.in_lockstep() ? "ok" : "bad") + "\">" + format::xml_text(verdict(r)) + "</p>";
  out += "<p class=\"meta\">" + format::xml_text(ctx.dir) + " &middot; lockstep " +
         format::xml_text(ctx.version) + "</p>";
  out +=
      "<noscript><p>This report draws itself with JavaScript; the verdict above is the whole answer "
      "without it.</p></noscript></header>\n";
  out += "<main id=\"app\"></main>\n";
  out += "<script type=\"application/json\" id=\"lockstep-data\">";
  out += json_for_script(data);
  out += "</script>\n<script>\n";
  out += kHtmlJs;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace lockstep::report
