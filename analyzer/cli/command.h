// The `lockstep` command's subcommands register themselves here, one file each, so that run, show,
// check, diff, lint and report stay apart and the dispatcher knows none of them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>

namespace lockstep::cli {

// Exit codes used by every subcommand (docs/architecture.md): 0 clean, 1 findings, 2 usage or bad input.
enum Exit : int { kClean = 0, kFindings = 1, kBadInput = 2 };

// Thrown by a subcommand for bad input; main prints "lockstep <cmd>: <message>" and exits 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `setup` adds the subcommand to `app` and sets its callback; the callback stores its exit code
// with set_exit_code().
using Setup = std::function<void(CLI::App& app)>;
bool register_command(const char* name, Setup setup);
void set_exit_code(int code);

}  // namespace lockstep::cli

// In a subcommand's .cc file: LOCKSTEP_COMMAND(show, [](CLI::App& app) { ... });
#define LOCKSTEP_COMMAND(name, ...) \
  static const bool lockstep_command_registered_##name = ::lockstep::cli::register_command(#name, __VA_ARGS__)
