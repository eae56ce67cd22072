// The tracer's fatal-signal handlers: note how the process ended in its trace, then hand the signal to
// whatever the application (or its MPI library) had installed, exactly as the kernel would have.
#pragma once

#include <signal.h>

namespace lockstep::trace {

// Puts the tracer's handler in front of the current disposition of each fatal signal (SIGSEGV, SIGBUS,
// SIGABRT, SIGFPE, SIGILL, SIGTERM), remembering that disposition to chain to. A signal the
// application ignores is left alone. Called when the trace opens and again after MPI_Init, whose
// library installs handlers of its own; a handler the application installs later replaces the
// tracer's and runs untouched.
void install_fatal_signal_handlers() noexcept;

// Defined by the session: records the signal in the trace (async-signal-safe, no allocation).
void record_fatal_signal(int sig, const siginfo_t* info) noexcept;

}  // namespace lockstep::trace
