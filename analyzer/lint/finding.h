// A lint finding as the renderers see it: plain file/line/column data, no Clang types.
#pragma once

#include <string>
#include <vector>

namespace lockstep::lint {

struct SourcePoint {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

struct Note {
  SourcePoint at;
  std::string message;
};

struct Finding {
  std::string
      rule;  // stable id: conditional-collective, rank-dependent-argument, collective-after-error-exit
  SourcePoint at;
  std::string message;  // "<problem>; <remedy>"
  std::vector<Note> notes;
};

// A message from the tool itself about a file (a missing compile command, a parse error).
struct ToolNote {
  std::string file;
  std::string message;
};

struct RuleInfo {
  const char* id;
  const char* summary;
};
extern const RuleInfo kRules[3];

// Renderers; `findings` are sorted and free of duplicates.
std::string render_text(const std::vector<Finding>& findings);
std::string render_json(const std::vector<Finding>& findings, const std::vector<ToolNote>& notes);
std::string render_sarif(const std::vector<Finding>& findings, const std::vector<ToolNote>& notes,
                         const std::string& tool_version);

}  // namespace lockstep::lint
