// SPDX-License-Identifier: Apache-2.0
// exec and its friends. A process that replaces itself with exec never exits, so without a
// word from us its trace reads as cut (killed, crashed or _exit). Before the real call the
// trace is marked as ended by exec; if the call returns, it failed, and the trace says so and
// goes on. glibc's exec functions call its internal execve directly, so each one the program
// can call is wrapped, the variadic ones by building the argument vector on the stack as
// glibc's own do (no allocation: exec may be called in a child of a multithreaded fork).
#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <string>

#include "interpose/common/real_dlsym.h"
#include "interpose/export.h"
#include "interpose/runtime.h"

namespace {

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using ExecveatFn = int (*)(int, const char*, char* const[], char* const[], int);

// Found when the library is loaded, not at the call: after a fork of a multithreaded program
// the loader's lock may be held by a thread that does not exist in the child.
struct RealExec {
  ExecveFn execve = nullptr;
  ExecvFn execv = nullptr;
  ExecvFn execvp = nullptr;
  ExecveFn execvpe = nullptr;
  FexecveFn fexecve = nullptr;
  ExecveatFn execveat = nullptr;
};
RealExec g_real;

template <class Fn>
Fn find(const char* name) {
  gmt::interpose::DlsymFn dlsym_fn = gmt::interpose::real_dlsym();
  return dlsym_fn != nullptr ? reinterpret_cast<Fn>(dlsym_fn(RTLD_NEXT, name)) : nullptr;
}

__attribute__((constructor)) void find_real_exec() {
  g_real.execve = find<ExecveFn>("execve");
  g_real.execv = find<ExecvFn>("execv");
  g_real.execvp = find<ExecvFn>("execvp");
  g_real.execvpe = find<ExecveFn>("execvpe");
  g_real.fexecve = find<FexecveFn>("fexecve");
  g_real.execveat = find<ExecveatFn>("execveat");
}

template <class Fn>
Fn real(Fn RealExec::*member, const char* name) {
  if (g_real.*member == nullptr) g_real.*member = find<Fn>(name);
  return g_real.*member;
}

// Marks the trace, runs the real call, and if it returns (a failure) says so in the trace,
// keeping errno as the call left it.
template <class Call>
int traced_exec(const char* program, Call call) {
  gmt::interpose::TraceWriter& writer = gmt::interpose::Runtime::get().writer();
  writer.exec_starting(program);
  const int result = call();
  const int error = errno;
  writer.exec_failed(error);
  errno = error;
  return result;
}

int missing() {
  errno = ENOSYS;
  return -1;
}

// The arguments of execl, execlp and execle, up to the null pointer, as a vector on the stack.
#define GMT_COLLECT_ARGS(first, args, out_envp)                           \
  std::size_t count = 1;                                                  \
  {                                                                       \
    va_list probe;                                                        \
    va_copy(probe, args);                                                 \
    while (va_arg(probe, const char*) != nullptr) ++count;                \
    va_end(probe);                                                        \
  }                                                                       \
  char** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*))); \
  argv[0] = const_cast<char*>(first);                                     \
  for (std::size_t i = 1; i <= count; ++i) argv[i] = va_arg(args, char*); \
  if (out_envp != nullptr) *out_envp = va_arg(args, char* const*);

}  // namespace

extern "C" {

GMT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) __THROW {
  auto fn = real(&RealExec::execve, "execve");
  if (fn == nullptr) return missing();
  return traced_exec(path, [&] { return fn(path, argv, envp); });
}

GMT_EXPORT int execv(const char* path, char* const argv[]) __THROW {
  auto fn = real(&RealExec::execv, "execv");
  if (fn == nullptr) return missing();
  return traced_exec(path, [&] { return fn(path, argv); });
}

GMT_EXPORT int execvp(const char* file, char* const argv[]) __THROW {
  auto fn = real(&RealExec::execvp, "execvp");
  if (fn == nullptr) return missing();
  return traced_exec(file, [&] { return fn(file, argv); });
}

GMT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) __THROW {
  auto fn = real(&RealExec::execvpe, "execvpe");
  if (fn == nullptr) return missing();
  return traced_exec(file, [&] { return fn(file, argv, envp); });
}

GMT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) __THROW {
  auto fn = real(&RealExec::fexecve, "fexecve");
  if (fn == nullptr) return missing();
  const std::string program = "descriptor " + std::to_string(fd);
  return traced_exec(program.c_str(), [&] { return fn(fd, argv, envp); });
}

GMT_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                        int flags) __THROW {
  auto fn = real(&RealExec::execveat, "execveat");
  if (fn == nullptr) return missing();
  return traced_exec(path, [&] { return fn(dirfd, path, argv, envp, flags); });
}

GMT_EXPORT int execl(const char* path, const char* arg, ...) __THROW {
  va_list args;
  va_start(args, arg);
  char* const** no_envp = nullptr;
  GMT_COLLECT_ARGS(arg, args, no_envp)
  va_end(args);
  return execv(path, argv);
}

GMT_EXPORT int execlp(const char* file, const char* arg, ...) __THROW {
  va_list args;
  va_start(args, arg);
  char* const** no_envp = nullptr;
  GMT_COLLECT_ARGS(arg, args, no_envp)
  va_end(args);
  return execvp(file, argv);
}

GMT_EXPORT int execle(const char* path, const char* arg, ...) __THROW {
  va_list args;
  va_start(args, arg);
  char* const* envp = nullptr;
  GMT_COLLECT_ARGS(arg, args, &envp)
  va_end(args);
  return execve(path, argv, envp);
}

}  // extern "C"
