// SPDX-License-Identifier: Apache-2.0
#include "interpose/runtime.h"

#include <pthread.h>

#include <new>

#include "interpose/common/diagnostic.h"
#include "interpose/common/thread_id.h"
#include "interpose/hooks/fatal_signals.h"

namespace gmt::interpose {

Runtime::Runtime()
    : config_(Config::from_environment(print_diagnostic)),
      writer_(config_),
      driver_views_(entry_points_),
      sampler_(writer_, config_, driver_views_),
      phases_(writer_),
      events_(writer_, config_, sampler_, phases_),
      torch_tracker_(writer_) {}

Runtime& Runtime::make() {
  // Placement-new into static storage: no destructor is ever registered, so the runtime outlives
  // every exit-time free.
  alignas(Runtime) static unsigned char storage[sizeof(Runtime)];
  static Runtime* const instance = new (storage) Runtime();
  made_.store(instance, std::memory_order_release);
  return *instance;
}

namespace {

// Every lock is taken before fork, in the order they nest, so that the child finds each table
// consistent and no lock held by a thread that does not exist there.
void before_fork() {
  Runtime& rt = Runtime::get();
  rt.events().before_fork();
  rt.phases().before_fork();
  rt.sampler().before_fork();
  rt.writer().before_fork();
}
void after_fork_in_parent() {
  Runtime& rt = Runtime::get();
  rt.writer().after_fork_in_parent();
  rt.sampler().after_fork_in_parent();
  rt.phases().after_fork_in_parent();
  rt.events().after_fork_in_parent();
}
void after_fork_in_child() {
  forget_thread_id();
  Runtime& rt = Runtime::get();
  rt.writer().after_fork_in_child();
  rt.sampler().after_fork_in_child();
  rt.phases().after_fork_in_child();
  rt.events().after_fork_in_child();
}

// Only registers fork handlers and the handlers of the signals that end the process (their
// record says why a trace ends): loading the library must start no thread and open no file.
__attribute__((constructor)) void on_load() {
  Runtime::get();
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  install_fatal_signal_handlers();
}

__attribute__((destructor)) void on_unload() {
  Runtime::get().events().finish();
  Runtime::get().writer().finish();
}

}  // namespace
}  // namespace gmt::interpose
