// What every report-writing subcommand shares: the --format and -o/--output options, the options of those
// that load a job, and the writer that puts a rendered report on standard output or into a file.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace lockstep::cli {

// Adds --format, stored in `format` (set to the first of `formats`, the default); any value not in
// `formats` is a usage error (exit 2).
void add_format_option(CLI::App* sub, std::string& format, const std::vector<std::string>& formats);
// --format as above, and -o/--output FILE stored in `path` (empty: standard output).
void add_output_options(CLI::App* sub, std::string& format, std::string& path,
                        const std::vector<std::string>& formats);

// -j/--jobs (loader threads, 0: one per core) and --no-symbolize, for the subcommands that load a job.
void add_load_options(CLI::App* sub, int& jobs, bool& no_symbolize);

// Writes `text` to `path` (empty or "-": standard output); a file that cannot be written is BadInput naming
// it.
void write_output(const std::string& text, const std::string& path);

}  // namespace lockstep::cli
