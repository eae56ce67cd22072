// Pieces of the check command that `lockstep diff` shares: output file, --format, the symbolizer.
#pragma once

#include <string>

#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::check {
Symbolizer make_symbolizer();
void write_output(const std::string& text, const std::string& path);
report::Format format_option(const std::string& name, const char* cmd);
}  // namespace lockstep::check
