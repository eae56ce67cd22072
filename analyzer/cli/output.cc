// The shared --format/-o and loading options and the report writer (output.h).
#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/command.h"

namespace lockstep::cli {

void add_format_option(CLI::App* sub, std::string& format, const std::vector<std::string>& formats) {
  format = formats.front();
  std::string list;
  for (size_t i = 0; i < formats.size(); ++i)
    list += (i == 0                    ? ""
             : i + 1 == formats.size() ? " or "
                                       : ", ") +
            formats[i] + (i == 0 ? " (default)" : "");
  sub->add_option("--format", format, list)->check(CLI::IsMember(formats));
}

void add_output_options(CLI::App* sub, std::string& format, std::string& path,
                        const std::vector<std::string>& formats) {
  add_format_option(sub, format, formats);
  sub->add_option("-o,--output", path, "write the report to FILE instead of standard output");
}

void add_load_options(CLI::App* sub, int& jobs, bool& no_symbolize) {
  sub->add_option("-j,--jobs", jobs, "threads reading trace files (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--no-symbolize", no_symbolize,
                "report call sites as module+offset (no llvm-symbolizer run)");
}

void write_output(const std::string& text, const std::string& path) {
  const bool to_stdout = path.empty() || path == "-";
  std::FILE* f = to_stdout ? stdout : std::fopen(path.c_str(), "w");
  if (!f) throw BadInput(path + ": cannot write: " + std::strerror(errno));
  errno = 0;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (to_stdout ? std::fflush(f) == 0 : std::fclose(f) == 0) && ok;
  if (!ok)
    throw BadInput((to_stdout ? std::string("standard output") : path) + ": write failed" +
                   (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

}  // namespace lockstep::cli
