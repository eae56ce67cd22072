// Fault probe: an application's own fatal-signal handler, installed before or after MPI_Init, with the
// flags of the case; then a real fault. The handler prints one line per call (write(2): async-signal-
// safe) and returns, so what happens next is what the kernel does with the application's flags.
//   signal_chain CASE WHEN    CASE: resethand | resethand_siginfo | nodefer | default | ignore_term
//                             WHEN: before | after (MPI_Init)
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

volatile sig_atomic_t g_calls = 0;

void say(const char* s) { (void)!write(1, s, strlen(s)); }

void plain_handler(int) {
  g_calls = g_calls + 1;
  say("handler called\n");
  // SA_NODEFER: the signal is not blocked here, so raising it again runs this handler nested.
  if (g_calls == 1 && getenv("SIGNAL_CHAIN_NESTED")) raise(SIGSEGV);
  if (g_calls > 3) {
    say("handler looped\n");
    _exit(42);
  }
}

void info_handler(int, siginfo_t* info, void*) {
  g_calls = g_calls + 1;
  say(info && info->si_signo == SIGSEGV ? "siginfo handler called\n" : "siginfo handler: no siginfo\n");
  if (g_calls > 3) {
    say("handler looped\n");
    _exit(42);
  }
}

void install(const char* which) {
  struct sigaction a;
  memset(&a, 0, sizeof a);
  sigemptyset(&a.sa_mask);
  if (!strcmp(which, "resethand")) {
    a.sa_handler = plain_handler;
    a.sa_flags = SA_RESETHAND;
  } else if (!strcmp(which, "resethand_siginfo")) {
    a.sa_sigaction = info_handler;
    a.sa_flags = SA_RESETHAND | SA_SIGINFO;
  } else if (!strcmp(which, "nodefer")) {
    a.sa_handler = plain_handler;
    a.sa_flags = SA_RESETHAND | SA_NODEFER;
  } else if (!strcmp(which, "ignore_term")) {
    signal(SIGTERM, SIG_IGN);
    return;
  } else {
    return;  // default: no handler at all
  }
  sigaction(SIGSEGV, &a, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: signal_chain CASE before|after\n");
    return 2;
  }
  const bool before = !strcmp(argv[2], "before");
  if (before) install(argv[1]);
  MPI_Init(&argc, &argv);
  if (!before) install(argv[1]);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("allreduce %d\n", sum);
  std::fflush(stdout);
  if (!strcmp(argv[1], "ignore_term")) {
    raise(SIGTERM);  // ignored: the job goes on and finishes normally
    say("survived SIGTERM\n");
    MPI_Finalize();
    return 0;
  }
  volatile int* p = nullptr;
  *p = 1;  // a real fault: returning from a handler runs this store again
  say("after the fault\n");
  return 0;
}
