// SPDX-License-Identifier: Apache-2.0
#include "interpose/frameworks/torch_tracker.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "interpose/frameworks/gpumemtrace_roles_source.h"
#include "interpose/frameworks/torch_settings_text.h"
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

bool off(const char* variable) {
  const char* v = std::getenv(variable);
  return v != nullptr && std::strcmp(v, "0") == 0;
}

bool disabled() {
  return off("GPUMEMTRACE_TORCH_BLOCKS");
}

// Runs on the interpreter's main thread with the GIL held, between two bytecodes (a pending
// call): no lock of PyTorch's or ours is held there, unlike in the hook that scheduled it, which
// may run under the caching allocator's lock. The source runs in a module of its own
// (sys.modules["_gpumemtrace_roles"]), never in the program's __main__, and reports its own
// failures as a note.
int run_roles_source(void*) {
  using AddModule = void* (*)(const char*);
  using GetDict = void* (*)(void*);
  using Compile = void* (*)(const char*, const char*, int);
  using Eval = void* (*)(void*, void*, void*);
  using Clear = void (*)();
  using DecRef = void (*)(void*);
  using GetBuiltins = void* (*)();
  using SetDefault = void* (*)(void*, void*, void*);
  using FromString = void* (*)(const char*);
  const auto add_module = reinterpret_cast<AddModule>(dlsym(RTLD_DEFAULT, "PyImport_AddModule"));
  const auto get_dict = reinterpret_cast<GetDict>(dlsym(RTLD_DEFAULT, "PyModule_GetDict"));
  const auto compile = reinterpret_cast<Compile>(dlsym(RTLD_DEFAULT, "Py_CompileString"));
  const auto eval = reinterpret_cast<Eval>(dlsym(RTLD_DEFAULT, "PyEval_EvalCode"));
  const auto clear = reinterpret_cast<Clear>(dlsym(RTLD_DEFAULT, "PyErr_Clear"));
  const auto decref = reinterpret_cast<DecRef>(dlsym(RTLD_DEFAULT, "Py_DecRef"));
  const auto builtins = reinterpret_cast<GetBuiltins>(dlsym(RTLD_DEFAULT, "PyEval_GetBuiltins"));
  const auto set_default = reinterpret_cast<SetDefault>(dlsym(RTLD_DEFAULT, "PyDict_SetDefault"));
  const auto from_string =
      reinterpret_cast<FromString>(dlsym(RTLD_DEFAULT, "PyUnicode_FromString"));
  if (add_module == nullptr || get_dict == nullptr || compile == nullptr || eval == nullptr ||
      clear == nullptr || decref == nullptr || builtins == nullptr || set_default == nullptr ||
      from_string == nullptr)
    return 0;
  void* module = add_module("_gpumemtrace_roles");  // borrowed
  if (module == nullptr) {
    clear();
    return 0;
  }
  void* globals = get_dict(module);  // borrowed
  // A module's dictionary has __builtins__, as exec() and import give it: PyEval_EvalCode only
  // reads the interpreter's when it is missing, and torch.compile (dynamo), tracing through our
  // wrapper of Module.__call__, reads it from the frame's globals (a KeyError otherwise: the
  // program's compiled forward fails).
  if (void* key = from_string("__builtins__"); key != nullptr) {
    void* builtins_dict = builtins();  // borrowed
    if (builtins_dict == nullptr || set_default(globals, key, builtins_dict) == nullptr) clear();
    decref(key);
  } else {
    clear();
    return 0;
  }
  constexpr int kFileInput = 257;  // Py_file_input
  // Its frames are named so in the traced program's stacks (the wrapped Module.__call__ is in
  // every module's), for the reports to know them as ours.
  void* code = compile(kGpumemtraceRolesSource, kRolesFileName, kFileInput);
  void* result = code != nullptr ? eval(code, globals, globals) : nullptr;
  if (code != nullptr) decref(code);
  if (result == nullptr) {
    clear();  // the source catches its own errors; never leave one pending in the program
  } else {
    decref(result);
  }
  return 0;
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
          if (settings_) writer_.record(*settings_);
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
  shim_ = dlopen(shim.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (shim_ != nullptr) {
    attach_ = reinterpret_cast<int (*)()>(dlsym(shim_, "gpumemtrace_torch_attach"));
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
  if (attached < 0) {
    return finish("pytorch block events unavailable (torch " + torch_version_ +
                  "): its CUDA allocator has no trace tracker (backend:cudaMallocAsync?)"
                  "; segments are traced as without them");
  }
  read_settings();
  std::string settings =
      "; its allocator's settings could not be read: block extents follow the "
      "default settings";
  if (settings_) {
    const std::string set = torch_settings_text(*settings_);
    settings = set.empty() ? "" : "; allocator settings " + set;
  }
  const std::string roles = schedule_roles();
  finish("pytorch block events on (torch " + torch_version_ + ")" + settings +
         (roles.empty() ? "" : "; " + roles));
}

// Read once, as the tracker attaches (settings changed later in the run are not seen).
void TorchTracker::read_settings() {
  using Settings = format::AllocatorSettingsRecord;
  using Read = int (*)(uint64_t*, uint64_t*, int);
  const auto read = reinterpret_cast<Read>(dlsym(shim_, "gpumemtrace_torch_settings"));
  if (read == nullptr) return;
  Settings settings;
  settings.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  settings.roundup_divisions.assign(Settings::kIntervals, 0);
  if (read(&settings.max_split_size, settings.roundup_divisions.data(),
           static_cast<int>(Settings::kIntervals)) != 1)
    return;
  settings_ = std::move(settings);
}

std::string TorchTracker::schedule_roles() {
  if (off("GPUMEMTRACE_ROLES")) return "roles and modules off (GPUMEMTRACE_ROLES=0)";
  using IsInitialized = int (*)();
  using AddPendingCall = int (*)(int (*)(void*), void*);
  const auto initialized = reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  const auto add_pending =
      reinterpret_cast<AddPendingCall>(dlsym(RTLD_DEFAULT, "Py_AddPendingCall"));
  if (initialized == nullptr || add_pending == nullptr || initialized() == 0)
    return "roles and modules unavailable (no Python interpreter in the process)";
  // Needs no GIL and no thread state: it queues the call for the main thread.
  if (add_pending(&run_roles_source, nullptr) != 0)
    return "roles and modules unavailable (the interpreter's pending calls are full)";
  return "";
}

void TorchTracker::finish(const std::string& note) {
  note_ = note;
  state_.store(kNotePending, std::memory_order_release);
  advance();
}

}  // namespace gmt::interpose
