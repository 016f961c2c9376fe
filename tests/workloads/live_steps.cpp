// SPDX-License-Identifier: Apache-2.0
// A program to be watched while it runs (`gpumemtrace top`): the allocations and frees named on
// its command line through cudaMalloc/cudaFree, with pauses at which it waits for its stdin.
//   device:N          make device N current
//   alloc:SLOT:BYTES  allocate into a named slot (must succeed)
//   free:SLOT         free that slot
//   oom:BYTES         an allocation that must fail
//   wait              print "waiting" on stdout, then wait for a line on stdin (or its end)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "live_steps: %s\n", what.c_str());
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, void*> slots;
  for (int i = 1; i < argc; ++i) {
    const std::string op = argv[i];
    const std::size_t colon = op.find(':');
    const std::string name = op.substr(0, colon);
    const std::string rest = colon == std::string::npos ? "" : op.substr(colon + 1);
    if (name == "device") {
      if (cudaSetDevice(std::atoi(rest.c_str())) != cudaSuccess) die("cudaSetDevice failed");
    } else if (name == "alloc") {
      const std::size_t second = rest.find(':');
      if (second == std::string::npos) die("alloc:SLOT:BYTES expected, got " + op);
      void* p = nullptr;
      if (cudaMalloc(&p, std::stoull(rest.substr(second + 1))) != cudaSuccess) die(op + " failed");
      slots[rest.substr(0, second)] = p;
    } else if (name == "free") {
      if (cudaFree(slots.at(rest)) != cudaSuccess) die(op + " failed");
      slots.erase(rest);
    } else if (name == "oom") {
      void* p = nullptr;
      if (cudaMalloc(&p, std::stoull(rest)) == cudaSuccess) die(op + " succeeded");
    } else if (name == "wait") {
      std::printf("waiting\n");
      std::fflush(stdout);
      char line[64];
      if (std::fgets(line, sizeof line, stdin) == nullptr) {
        // stdin closed: go on
      }
    } else {
      die("unknown operation " + op);
    }
  }
  return 0;
}
