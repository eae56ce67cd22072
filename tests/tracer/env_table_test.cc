// The environment table (lockstep/env.h) against docs/tracer.md's table, both ways, and against the
// sources: no reader of a LOCKSTEP_* variable in the tracer or `lockstep run` bypasses the table.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/env.h"

namespace fs = std::filesystem;
using lockstep::env::Entry;
using lockstep::env::kTable;
using lockstep::env::Var;

namespace {

struct Row {
  std::string type, fallback, doc;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string unquote(const std::string& s) {
  return s.size() >= 2 && s.front() == '`' && s.back() == '`' ? s.substr(1, s.size() - 2) : s;
}

// The rows of the first table under "## Environment", keyed by variable name.
std::map<std::string, Row> doc_table(const fs::path& md) {
  std::ifstream in(md);
  EXPECT_TRUE(in) << md;
  std::map<std::string, Row> rows;
  std::string line;
  bool section = false, table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (section) break;
      section = line == "## Environment";
      continue;
    }
    if (!section) continue;
    if (line.empty() || line[0] != '|') {
      if (table) break;
      continue;
    }
    table = true;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(trim(cell));
    if (cells.size() < 4 || cells[0] == "variable" || cells[0].rfind("---", 0) == 0) continue;
    std::string name = unquote(cells[0]);
    EXPECT_EQ(rows.count(name), 0u) << name << " twice in " << md;
    rows[name] = {unquote(cells[1]), unquote(cells[2]), cells[3]};
  }
  return rows;
}

TEST(EnvTable, DocsListExactlyTheTable) {
  auto rows = doc_table(fs::path(LOCKSTEP_SOURCE_DIR) / "docs" / "tracer.md");
  ASSERT_FALSE(rows.empty()) << "no table under ## Environment in docs/tracer.md";
  for (const Entry& e : kTable) {
    auto it = rows.find(e.name);
    if (it == rows.end()) {
      ADD_FAILURE() << e.name << " is in lockstep/env.h but not in docs/tracer.md";
      continue;
    }
    EXPECT_EQ(it->second.type, e.type) << e.name;
    EXPECT_EQ(it->second.fallback, e.fallback) << e.name;
    EXPECT_EQ(it->second.doc, e.doc) << e.name;
  }
  for (const auto& [name, row] : rows)
    EXPECT_NE(lockstep::env::find(name.data(), name.size()), nullptr)
        << name << " is in docs/tracer.md but not in lockstep/env.h";
}

TEST(EnvTable, NamesAreUniqueAndPrefixed) {
  for (const Entry& e : kTable) {
    EXPECT_EQ(std::string(e.name).rfind("LOCKSTEP_", 0), 0u) << e.name;
    EXPECT_EQ(lockstep::env::find(e.name, std::strlen(e.name)), &e) << e.name;
  }
}

// Every reader goes through the table, so a new variable cannot be read without being documented.
TEST(EnvTable, NoDirectReadsOutsideTheTable) {
  const std::regex direct(R"(getenv\(\s*"LOCKSTEP_)");
  const fs::path root(LOCKSTEP_SOURCE_DIR);
  int files = 0;
  for (const char* dir : {"tracer/src", "tracer/cuda", "analyzer/run"}) {
    for (const auto& f : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = f.path().extension().string();
      if (ext != ".cc" && ext != ".h") continue;
      ++files;
      std::ifstream in(f.path());
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_FALSE(std::regex_search(text.str(), direct))
          << f.path() << " reads a LOCKSTEP_* variable without lockstep/env.h";
    }
  }
  EXPECT_GT(files, 10);
}

TEST(EnvTable, SwitchesFollowTheirDefaults) {
  ::unsetenv("LOCKSTEP_TRACE_P2P");
  ::unsetenv("LOCKSTEP_TRACE_CUPTI");
  EXPECT_TRUE(lockstep::env::on(Var::kTraceP2p));
  EXPECT_FALSE(lockstep::env::on(Var::kTraceCupti));
  ::setenv("LOCKSTEP_TRACE_P2P", "", 1);  // empty is not given
  EXPECT_TRUE(lockstep::env::on(Var::kTraceP2p));
  ::setenv("LOCKSTEP_TRACE_P2P", "0", 1);
  ::setenv("LOCKSTEP_TRACE_CUPTI", "yes", 1);
  EXPECT_FALSE(lockstep::env::on(Var::kTraceP2p));
  EXPECT_TRUE(lockstep::env::on(Var::kTraceCupti));
  ::unsetenv("LOCKSTEP_TRACE_P2P");
  ::unsetenv("LOCKSTEP_TRACE_CUPTI");
}

TEST(EnvTable, ValuesCheckedByType) {
  const Entry& ring = lockstep::env::entry(Var::kTraceRing);
  EXPECT_TRUE(lockstep::env::valid(ring, "4096"));
  EXPECT_FALSE(lockstep::env::valid(ring, "4k"));
  EXPECT_FALSE(lockstep::env::valid(ring, "-1"));
  EXPECT_FALSE(lockstep::env::valid(ring, "4294967296"));
  const Entry& clock = lockstep::env::entry(Var::kTraceClock);
  EXPECT_TRUE(lockstep::env::valid(clock, "monotonic"));
  EXPECT_TRUE(lockstep::env::valid(clock, "tsc"));
  EXPECT_FALSE(lockstep::env::valid(clock, "mono"));
  EXPECT_TRUE(lockstep::env::valid(lockstep::env::entry(Var::kTraceDir), "anything"));
}

}  // namespace
