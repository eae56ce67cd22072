// Entry point of the `lockstep` command: builds the CLI from the registered subcommands and maps
// errors onto the project's exit codes.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <system_error>

#include "cli/command.h"
#include "lockstep/version.h"

namespace lockstep::cli {
namespace {
std::map<std::string, Setup>& registry() {
  static std::map<std::string, Setup> commands;
  return commands;
}
int g_exit_code = kClean;
}  // namespace

bool register_command(const char* name, Setup setup) {
  registry().emplace(name, std::move(setup));
  return true;
}
void set_exit_code(int code) { g_exit_code = code; }

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "lockstep: find collective-order bugs in distributed jobs.\n"
      "Trace every rank (run), check the traces (check, diff, show), lint the sources (lint)."};
  app.set_version_flag("--version", std::string("lockstep ") + LOCKSTEP_VERSION);
  app.require_subcommand(1);
  for (auto& [name, setup] : registry()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kBadInput;
  } catch (const BadInput& e) {
    std::fprintf(stderr, "lockstep: %s\n", e.what());
    return kBadInput;
  } catch (const std::system_error& e) {
    // fmt::print's failure to write (show prints with it), worded as every command words its own.
    if (std::string_view(e.what()).starts_with("cannot write to file"))
      std::fprintf(stderr, "lockstep: standard output: write failed: %s\n", std::strerror(e.code().value()));
    else
      std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return kBadInput;
  }
  // What a command printed and stdio still holds goes out now: a full disk must not pass for a verdict
  // (a CI gate would read a truncated report as the job's).
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed || std::ferror(stdout)) {
    std::fprintf(stderr, "lockstep: standard output: write failed%s%s\n", !flushed && errno ? ": " : "",
                 !flushed && errno ? std::strerror(errno) : "");
    return kBadInput;
  }
  return g_exit_code;
}

}  // namespace
}  // namespace lockstep::cli

int main(int argc, char** argv) {
  // What run() does not catch (building the parser, printing help) must not end in std::terminate.
  try {
    return lockstep::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "lockstep: error: unknown exception\n");
  }
  return lockstep::cli::kBadInput;
}
