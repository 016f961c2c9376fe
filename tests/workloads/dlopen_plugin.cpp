// SPDX-License-Identifier: Apache-2.0
// Loads the allocating plugin, allocates through it, unloads it, and does it again: the report's
// peak sites must name the plugin's function both times, from modules recorded while it was
// loaded. Usage: workload_dlopen_plugin PATH_TO_PLUGIN
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

void* allocate_through_plugin(const char* path, size_t bytes) {
  void* plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    std::exit(2);
  }
  auto allocate = reinterpret_cast<void* (*)(size_t)>(dlsym(plugin, "plugin_allocate"));
  void* p = allocate != nullptr ? allocate(bytes) : nullptr;
  if (p == nullptr) std::exit(3);
  dlclose(plugin);  // the allocation outlives the library that made it
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 1;
  allocate_through_plugin(argv[1], 48 << 20);
  allocate_through_plugin(argv[1], 16 << 20);
  return 0;
}
