// The tracer's fatal-signal handlers (signals.h). The handler runs with the flags and mask the
// application asked for, then does what the kernel would have done with the application's disposition:
// reset it first for SA_RESETHAND, call it the way SA_SIGINFO says, or restore the default action and
// raise again so that the process dies of the same signal.
#include "signals.h"

#include <errno.h>
#include <string.h>

#include <atomic>

namespace lockstep::trace {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM};
constexpr int kNumFatal = sizeof(kFatalSignals) / sizeof(kFatalSignals[0]);
// The disposition each signal had before the tracer's handler took its place.
struct sigaction g_previous[kNumFatal];

int index_of(int sig) {
  for (int i = 0; i < kNumFatal; ++i)
    if (kFatalSignals[i] == sig) return i;
  return -1;
}

bool is_handler(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

void on_fatal_signal(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;
  record_fatal_signal(sig, info);
  const int idx = index_of(sig);
  if (idx < 0) return;
  struct sigaction prev = g_previous[idx];
  if (prev.sa_flags & SA_SIGINFO ? prev.sa_sigaction == nullptr : prev.sa_handler == SIG_IGN) return;
  if (!is_handler(prev)) {
    // The default action: restore it and raise again. The signal is blocked while this handler runs
    // (unless SA_NODEFER), so it is delivered, with the default action, as soon as the handler
    // returns; a fault that raised it would fault again in the same place.
    sigaction(sig, &prev, nullptr);
    errno = saved_errno;
    raise(sig);
    return;
  }
  if (prev.sa_flags & SA_RESETHAND) {
    // The kernel resets a one-shot handler before running it: do the same, or a handler that returns
    // from a fault would be called again for ever instead of the default action ending the process.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    g_previous[idx] = dfl;
    sigaction(sig, &dfl, nullptr);
  }
  errno = saved_errno;
  if (prev.sa_flags & SA_SIGINFO)
    prev.sa_sigaction(sig, info, uctx);
  else
    prev.sa_handler(sig);
}

}  // namespace

void install_fatal_signal_handlers() noexcept {
  for (int i = 0; i < kNumFatal; ++i) {
    struct sigaction current;
    if (sigaction(kFatalSignals[i], nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fatal_signal) continue;
    // A signal the application ignores stays ignored: the tracer never changes behaviour.
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_fatal_signal;
    // The application's mask and flags, so that its handler runs as it asked: with the signals it
    // blocks, and with this one unblocked under SA_NODEFER. SA_RESETHAND is emulated in the handler;
    // SA_ONSTACK is added so a stack overflow can still be recorded where an alternate stack exists.
    ours.sa_mask = current.sa_mask;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & (SA_RESTART | SA_NODEFER));
    g_previous[i] = current;
    sigaction(kFatalSignals[i], &ours, nullptr);
  }
}

}  // namespace lockstep::trace
