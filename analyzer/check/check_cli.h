// Pieces of the check command that `lockstep diff` shares: output file, --format, the symbolizer.
#pragma once

#include <memory>
#include <string>

#include "lockstep/check/check.h"
#include "lockstep/report/report.h"
#include "symbolize/symbolize.h"

namespace lockstep::check {
Symbolizer make_symbolizer(std::shared_ptr<symbolize::Symbolizer> sym);
SiteKeys make_site_keys(const std::shared_ptr<symbolize::Symbolizer>& sym);
void write_output(const std::string& text, const std::string& path);
report::Format format_option(const std::string& name, const char* cmd);
}  // namespace lockstep::check
