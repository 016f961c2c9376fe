#include "interpose/runtime.h"

#include <pthread.h>

#include <new>

#include "interpose/record/diagnostic.h"
#include "interpose/record/thread_id.h"

namespace gmt::interpose {

Runtime::Runtime()
    : config_(Config::from_environment(print_diagnostic)),
      writer_(config_),
      events_(writer_, config_) {}

Runtime& Runtime::get() {
  // Placement-new into static storage: no destructor is ever registered, so the runtime outlives
  // every exit-time free.
  alignas(Runtime) static unsigned char storage[sizeof(Runtime)];
  static Runtime* const instance = new (storage) Runtime();
  return *instance;
}

namespace {

void before_fork() {
  Runtime::get().writer().before_fork();
}
void after_fork_in_parent() {
  Runtime::get().writer().after_fork_in_parent();
}
void after_fork_in_child() {
  forget_thread_id();
  Runtime::get().writer().after_fork_in_child();
  Runtime::get().events().after_fork_in_child();
}

// Only registers fork handlers: loading the library must start no thread and open no file.
__attribute__((constructor)) void on_load() {
  Runtime::get();
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

__attribute__((destructor)) void on_unload() {
  Runtime::get().writer().finish();
}

}  // namespace
}  // namespace gmt::interpose
