// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/fatal_signals.h"

#include <signal.h>

#include <cerrno>
#include <cstdint>

#include "format/records.h"
#include "interpose/runtime.h"

namespace gmt::interpose {
namespace {

// The signals whose default action ends the process (with or without a core), but SIGKILL,
// which no handler sees, and those left alone: SIGINT, which an interpreter takes only while it
// is at its default (Python's KeyboardInterrupt: a handler of ours there would take Ctrl-C from
// it), and SIGALRM, SIGUSR1, SIGUSR2 and SIGXFSZ, which programs that use them handle (and the
// recorder keeps SIGXFSZ's default).
constexpr int kFatalSignals[] = {SIGHUP, SIGQUIT, SIGILL,  SIGTRAP, SIGABRT, SIGBUS,
                                 SIGFPE, SIGSEGV, SIGPIPE, SIGTERM, SIGXCPU, SIGSYS};

// A fault of the thread's own instruction: returning runs the instruction again, which faults
// again, under the default action.
bool fault(int sig, const siginfo_t* info) {
  return info != nullptr && info->si_code > 0 &&
         (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  // From here on, the signal's default action, as the program set it.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(sig, &default_action, nullptr);

  format::SignalRecord rec;
  rec.signal = static_cast<uint32_t>(sig);
  if (info != nullptr) {
    rec.code = info->si_code;
    if (fault(sig, info)) rec.address = reinterpret_cast<uintptr_t>(info->si_addr);
    // kill(), sigqueue(), tgkill() (abort() included) say who sent it.
    if (info->si_code <= 0) rec.sender = static_cast<uint64_t>(info->si_pid);
  }
  Runtime::get().writer().record_from_handler(rec);

  // A signal that was sent is sent again: blocked while this handler runs, it comes as it
  // returns, and ends the process. A fault comes again by itself.
  if (!fault(sig, info)) raise(sig);
  errno = saved_errno;
}

}  // namespace

void install_fatal_signal_handlers() {
  for (const int sig : kFatalSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    // The program's own handler, or a signal it ignores (SIGHUP under nohup): not ours to touch.
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    // SA_ONSTACK: a stack overflow's SIGSEGV runs on the program's alternate stack, if it has one.
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

}  // namespace gmt::interpose
