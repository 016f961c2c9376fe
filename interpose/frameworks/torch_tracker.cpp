// SPDX-License-Identifier: Apache-2.0
#include "interpose/frameworks/torch_tracker.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>

#include "interpose/frameworks/torch_shim_build.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {
namespace {

// The path of the loaded libc10_cuda.so, or "" when PyTorch's CUDA allocator is not loaded.
std::string loaded_c10_cuda() {
  void* handle = dlopen("libc10_cuda.so", RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return {};
  std::string path;
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr)
    path = map->l_name;
  dlclose(handle);
  return path;
}

bool disabled() {
  const char* v = std::getenv("GPUMEMTRACE_TORCH_BLOCKS");
  return v != nullptr && std::strcmp(v, "0") == 0;
}

}  // namespace

void TorchTracker::extension_loaded() {
  if (state_.load(std::memory_order_acquire) != kNoTorch) return;
  if (loaded_c10_cuda().empty()) return;
  int expected = kNoTorch;
  state_.compare_exchange_strong(expected, kTorchLoaded, std::memory_order_acq_rel);
}

void TorchTracker::advance() {
  switch (state_.load(std::memory_order_acquire)) {
    case kTorchLoaded: {
      int expected = kTorchLoaded;
      if (state_.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) load_shim();
      return;
    }
    case kShimLoaded:
      try_attach();
      return;
    case kNotePending:
      // The note waits for the trace: a process that never allocates gets no file for it.
      if (writer_.started()) {
        int expected = kNotePending;
        if (state_.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
          format::NoteRecord note;
          note.text = note_;
          writer_.record(note);
          state_.store(kSettled, std::memory_order_release);
        }
      }
      return;
    default:
      return;
  }
}

void TorchTracker::load_shim() {
  if (disabled()) return finish("pytorch block events off (GPUMEMTRACE_TORCH_BLOCKS=0)");
  const std::string c10_cuda = loaded_c10_cuda();
  const TorchShim shim = build_torch_shim(c10_cuda);
  torch_version_ = shim.version;
  if (shim.library.empty()) {
    return finish("pytorch block events unavailable (torch " + shim.version + "): " + shim.error +
                  "; segments are traced as without them");
  }
  void* handle = dlopen(shim.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) {
    attach_ = reinterpret_cast<int (*)()>(dlsym(handle, "gpumemtrace_torch_attach"));
  }
  if (attach_ == nullptr) {
    const char* why = dlerror();
    return finish("pytorch block events unavailable (torch " + shim.version + "): cannot load " +
                  shim.library + ": " + (why != nullptr ? why : "no attach function") +
                  "; segments are traced as without them");
  }
  state_.store(kShimLoaded, std::memory_order_release);
  try_attach();
}

void TorchTracker::try_attach() {
  int expected = kShimLoaded;
  if (!state_.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) return;
  const int attached = attach_();
  if (attached == 0) {
    state_.store(kShimLoaded, std::memory_order_release);
    return;
  }
  finish(attached > 0 ? "pytorch block events on (torch " + torch_version_ + ")"
                      : "pytorch block events unavailable (torch " + torch_version_ +
                            "): its CUDA allocator has no trace tracker (backend:cudaMallocAsync?)"
                            "; segments are traced as without them");
}

void TorchTracker::finish(const std::string& note) {
  note_ = note;
  state_.store(kNotePending, std::memory_order_release);
  advance();
}

}  // namespace gmt::interpose
