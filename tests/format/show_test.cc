// `lockstep show` end to end (the real binary on files written by the real Writer) and the call-site
// symbolizer it uses.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/format/reader.h"
#include "lockstep/format/writer.h"
#include "sample_trace.h"
#include "temp_dir.h"
#include "symbolize/symbolize.h"

namespace lockstep {
namespace {

using test::read_all;
using test::TempDir;
using test::write_all;

struct Result {
  int rc;
  std::string out, err;
};
Result show(const std::string& args, const std::string& scratch) {
  const std::string o = scratch + "/.out", e = scratch + "/.err";
  int status = std::system((std::string(LOCKSTEP_BIN) + " show " + args + " >" + o + " 2>" + e).c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_all(o), read_all(e)};
  unlink(o.c_str());
  unlink(e.c_str());
  return r;
}

// The call site every sample record carries: the return address of a call written on a known line.
__attribute__((noinline)) uint64_t return_address() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}
struct Site {
  uint64_t addr;
  int line;
};
__attribute__((noinline)) Site call_site() {
  const uint64_t addr = return_address(); const int line = __LINE__;
  return {addr, line};
}

std::string write_sample(const std::string& dir, int rank, Site site) {
  format::Writer w;
  char err[256];
  format::WriterConfig c = test::small_config(dir);
  c.cmdline = "./sample --steps 1";
  c.job_id = "show-test";
  EXPECT_TRUE(w.open(c, err, sizeof err)) << err;
  w.set_world(rank, 4);
  test::write_sample(w, site.addr);
  std::string p = w.path();
  w.close();
  return p;
}

TEST(Show, TableListsHeaderOpsAndCallSites) {
  TempDir d;
  const Site site = call_site();
  write_sample(d.path(), 2, site);
  Result r = show(d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* text : {"rank 2 of 4", "job show-test", "command: ./sample --steps 1", "records 15",
                           "dropped 0", "unpublished 0", "MPI_COMM_WORLD", "MPI_Allreduce", "MPI_Iallreduce",
                           "MPI_Wait", "MPI_Bcast", "ncclCommInitRank", "ncclGroupStart", "ncclSend",
                           "ncclAllReduce", "MPI_Finalize", "grad/dense_1", "members=[0,1,2,3]", "bfloat16"})
    EXPECT_NE(r.out.find(text), std::string::npos) << "missing '" << text << "' in:\n" << r.out;
  const std::string where = "show_test.cc:" + std::to_string(site.line);
  EXPECT_NE(r.out.find(where), std::string::npos) << where << " not in:\n" << r.out;
  // The collective still inside its call: state entered, no duration.
  size_t row = r.out.find("ncclAllReduce ");
  ASSERT_NE(row, std::string::npos);
  std::string line = r.out.substr(row, r.out.find('\n', row) - row);
  EXPECT_NE(line.find(" entered "), std::string::npos) << line;
  EXPECT_NE(line.find(" 8192 "), std::string::npos) << "4096 float16 = 8192 bytes: " << line;
}

TEST(Show, JsonCarriesEveryRecordAndTheCallSiteLine) {
  TempDir d;
  const Site site = call_site();
  const std::string p = write_sample(d.path(), 0, site);
  Result r = show(p + " --format json", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["traces"].size(), 1u);
  const auto& t = j["traces"][0];
  EXPECT_EQ(t["rank"], 0);
  EXPECT_EQ(t["path"], p);
  ASSERT_EQ(t["records"].size(), std::size(test::kSample));
  EXPECT_EQ(t["records"][3]["op"], "MPI_Iallreduce");
  EXPECT_EQ(t["records"][3]["seq"], 1);
  EXPECT_EQ(t["records"][2]["bytes"], 4096);
  EXPECT_EQ(t["records"][8]["root_or_peer"], 1);
  EXPECT_EQ(t["records"][10]["name"], "grad/dense_1");
  EXPECT_EQ(t["records"][1]["members"], nlohmann::json::array({0, 1, 2, 3}));
  EXPECT_EQ(t["records"][2]["call_site"][0]["line"], site.line);
  EXPECT_NE(t["records"][2]["call_site"][0]["function"].get<std::string>().find("call_site"), std::string::npos);
}

// Communicators without a name of their own go by how they were made, as `lockstep check` names them;
// two made the same way (two dups of the world) keep their ids after that name.
TEST(Show, CommunicatorsGoByTheNamesCheckGivesThem) {
  TempDir d;
  format::Writer w;
  char err[256];
  ASSERT_TRUE(w.open(test::small_config(d.path()), err, sizeof err)) << err;
  w.set_world(0, 4);
  constexpr uint64_t kSplit = 0x3000, kDupA = 0x4000, kDupB = 0x5000;
  auto comm = [&](uint64_t id, uint8_t op, uint64_t parent, int32_t color) {
    uint64_t rid = 0;
    lst_record* r = w.reserve(&rid);
    ASSERT_NE(r, nullptr);
    r->op = op;
    r->api = LST_API_MPI;
    r->comm = id;
    r->t_ns = w.header()->start_mono_ns + 1000 + rid * 10;
    r->u.comm.parent = parent;
    r->u.comm.color = color;
    r->u.comm.key = LST_NONE;
    r->u.comm.size = 4;
    r->u.comm.rank = 0;
    format::Writer::publish(r, LST_WORD(LST_KIND_COMM, 0, 0));
  };
  auto barrier = [&](uint64_t id) {
    test::SampleCall c{LST_KIND_COLLECTIVE, LST_API_MPI, LST_OP_BARRIER, 0, LST_STATE_RETURNED, id, 0, 0, 0, 0,
                       LST_NONE, nullptr};
    test::write_call(w, c, 0, 0);
  };
  comm(test::kWorld, LST_COMM_WORLD, 0, LST_NONE);
  comm(kSplit, LST_COMM_SPLIT, test::kWorld, 3);
  comm(kDupA, LST_COMM_DUP, test::kWorld, LST_NONE);
  comm(kDupB, LST_COMM_DUP, test::kWorld, LST_NONE);
  for (uint64_t id : {kSplit, kDupA, kDupB}) barrier(id);
  const std::string p = w.path();
  w.close();
  Result r = show(p + " --format json", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  std::map<uint64_t, std::string> names;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& rec : j["traces"][0]["records"])
    if (rec["kind"] == "collective") names[rec["comm"].get<uint64_t>()] = rec["comm_name"].get<std::string>();
  EXPECT_EQ(names[kSplit], "split(MPI_COMM_WORLD, color 3)");
  EXPECT_EQ(names[kDupA], "dup(MPI_COMM_WORLD) 0x4000");
  EXPECT_EQ(names[kDupB], "dup(MPI_COMM_WORLD) 0x5000");
  r = show(p, d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("split(MPI_COMM_WORLD, color 3)"), std::string::npos) << r.out;
}

TEST(Show, NoSymbolizeGivesModuleAndOffset) {
  TempDir d;
  write_sample(d.path(), 1, call_site());
  Result r = show(d.path() + " --no-symbolize", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("show_test+0x"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("show_test.cc:"), std::string::npos);
}

TEST(Show, DirectoryIsOrderedByRank) {
  TempDir d;
  write_sample(d.path(), 3, call_site());
  // A second file of the same process needs another name: move the first one aside.
  std::string first = format::find_traces(d.path())[0];
  ASSERT_EQ(rename(first.c_str(), (d.path() + "/rank-3.x.1.lstrace").c_str()), 0);
  write_sample(d.path(), 1, call_site());
  Result r = show(d.path(), d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  size_t r1 = r.out.find("rank 1 of 4"), r3 = r.out.find("rank 3 of 4");
  ASSERT_NE(r1, std::string::npos);
  ASSERT_NE(r3, std::string::npos);
  EXPECT_LT(r1, r3);
}

TEST(Show, TruncatedFileExitsTwoNamingFileAndByte) {
  TempDir d;
  const std::string p = write_sample(d.path(), 0, call_site());
  const std::string bytes = read_all(p);
  for (size_t cut : {size_t(0), size_t(100), size_t(5000), bytes.size() - 64}) {
    SCOPED_TRACE(cut);
    write_all(p, bytes.substr(0, cut));
    Result r = show(d.path(), d.path());
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.out, "") << "nothing printed for a bad input";
    EXPECT_NE(r.err.find(p + ": byte " + std::to_string(cut) + ":"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
}

TEST(Show, CorruptedRecordExitsTwoNamingTheRecord) {
  TempDir d;
  const std::string p = write_sample(d.path(), 0, call_site());
  std::string bytes = read_all(p);
  const uint64_t rec = format::TraceFile::open(p).header().records_offset;
  bytes[rec + 64 + 1] ^= 0x40;
  write_all(p, bytes);
  Result r = show(p, d.path());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(p + ": byte " + std::to_string(rec + 64) + ": record 1 does not match its check"),
            std::string::npos)
      << r.err;
}

// --first/--last: a part of each file, by record id, with the rest of the output as for the whole file.
TEST(Show, FirstAndLastShowThatManyRecords) {
  TempDir d;
  const std::string p = write_sample(d.path(), 0, call_site());
  const size_t n = std::size(test::kSample);
  Result all = show(p + " --format json", d.path());
  ASSERT_EQ(all.rc, 0) << all.err;
  const auto every = nlohmann::json::parse(all.out)["traces"][0]["records"];
  ASSERT_EQ(every.size(), n);
  for (const char* which : {"--last", "--first"}) {
    Result r = show(p + " --format json " + which + " 3", d.path());
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    const auto& t = doc["traces"][0];
    ASSERT_EQ(t["records"].size(), 3u) << which;
    const size_t from = std::string(which) == "--last" ? n - 3 : 0;
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t["records"][i], every[from + i]) << which << " " << i;
    EXPECT_EQ(t["shown_first_id"], every[from]["id"]);
    EXPECT_EQ(t["shown_end_id"].get<uint64_t>(), every[from + 2]["id"].get<uint64_t>() + 1);
  }
  // More than the file holds: all of it, and the table says nothing about a part.
  Result r = show(p + " --last 1000", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("showing records"), std::string::npos) << r.out;
  r = show(p + " --last 2", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("showing records " + std::to_string(every[n - 2]["id"].get<uint64_t>())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("MPI_Finalize"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MPI_Iallreduce"), std::string::npos) << r.out;
  // Not a count, or both at once: a usage error.
  for (const char* bad : {" --last 0", " --first -2", " --last x", " --first 2 --last 2"})
    EXPECT_EQ(show(p + bad, d.path()).rc, 2) << bad;
}

TEST(Show, NotATraceOrNothingToShowExitsTwo) {
  TempDir d;
  EXPECT_EQ(show(d.path(), d.path()).rc, 2) << "empty directory";
  write_all(d.path() + "/notes.txt", std::string(6000, 'x'));
  Result r = show(d.path() + "/notes.txt", d.path());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("notes.txt: byte 0: bad magic"), std::string::npos) << r.err;
  EXPECT_EQ(show(d.path() + "/missing.lstrace", d.path()).rc, 2);
  EXPECT_EQ(show(d.path() + " --format xml", d.path()).rc, 2);
}

std::vector<format::Module> own_modules(uint64_t addr) {
  TempDir d;
  format::Writer w;
  char err[256];
  format::WriterConfig c;
  c.dir = d.path().c_str();
  c.meta_slots = 64;
  c.chunk_records = 64;
  EXPECT_TRUE(w.open(c, err, sizeof err)) << err;
  w.note_module(addr);
  std::string p = w.path();
  w.close();
  return format::TraceFile::open(p).modules();
}

TEST(Symbolize, CallSiteLineWithLlvmSymbolizerAndAddr2line) {
  const Site site = call_site();
  const auto mods = own_modules(site.addr);
  for (const char* tool : {"", "addr2line"}) {
    SCOPED_TRACE(tool);
    symbolize::Options o;
    o.tool = tool;
    symbolize::Symbolizer s(o);
    ASSERT_FALSE(s.tool().empty());
    EXPECT_EQ(s.is_addr2line(), std::string(tool) == "addr2line");
    symbolize::Location l = s.call_site(mods, site.addr);
    EXPECT_EQ(l.line, uint32_t(site.line)) << l.site();
    EXPECT_EQ(l.site(true), "show_test.cc:" + std::to_string(site.line));
    EXPECT_EQ(l.function.find("lockstep::(anonymous namespace)::call_site"), 0u) << l.function;
    const int runs = s.runs();
    s.call_sites(mods, {site.addr, site.addr});
    EXPECT_EQ(s.runs(), runs) << "answered from the cache";
  }
}

TEST(Symbolize, UnknownModuleAndChangedBuildAreReportedNotGuessed) {
  const Site site = call_site();
  auto mods = own_modules(site.addr);
  symbolize::Symbolizer s;
  symbolize::Location none = s.call_site(mods, 0x10);
  EXPECT_FALSE(none.has_line());
  EXPECT_EQ(none.problem, "address in no known module");
  ASSERT_EQ(mods.size(), 1u);
  mods[0].build_id = "00ff";
  symbolize::Location changed = s.call_site(mods, site.addr);
  EXPECT_FALSE(changed.has_line());
  EXPECT_NE(changed.problem.find("changed"), std::string::npos);
  EXPECT_NE(changed.site(true).find("show_test+0x"), std::string::npos) << changed.site(true);
}

}  // namespace
}  // namespace lockstep
