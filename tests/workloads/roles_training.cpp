// SPDX-License-Identifier: Apache-2.0
// Two steps of a two-layer model behind a caching allocator reporting as PyTorch's trace tracker
// does (caching_allocator.h), with what python/gpumemtrace_roles.py reports from PyTorch's hooks
// played through the same entry points (gpumemtrace_framework_scope, _tags, _name): the root
// "Net" and its modules "fc1" and "fc2" in forward, backward() with the gradients made on an
// autograd thread of its own, AdamW's step with its state, the tags of parameters, gradients
// and state. Every size is a multiple of 512 bytes, so blocks are the sizes asked for:
//   parameters 2 x 4 MiB; per step an input of 2 MiB, per layer 8 MiB kept for backward and
//   1 MiB freed inside its forward; gradients 2 x 4 MiB; AdamW's state 2 x 2 x 4 MiB.
// The users hold the most in step 2, when fc2's gradient is made: parameters 8, state 16,
// input 2, activations 16, gradient 4 MiB. At its end the program holds parameters, gradients
// and state (32 MiB); then its teardown frees the state.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/workloads/caching_allocator.h"
#include "tests/workloads/framework_hooks.h"

namespace {

constexpr std::size_t kMiB = 1024 * 1024;

using sim::kBackward, sim::kEnter, sim::kEnterOutline, sim::kGradient, sim::kModule;
using sim::kOptimizer, sim::kOptimizerState, sim::kParameter, sim::kProgramEnd;
using Hooks = sim::FrameworkHooks;

void* must(void* p) {
  if (p == nullptr) {
    std::fprintf(stderr, "roles_training: out of memory\n");
    std::exit(1);
  }
  return p;
}

}  // namespace

// `roles_training [SCALE [BATCH [keep]]]`: each layer keeps SCALE x 8 MiB for backward (default 1),
// for `diff`. BATCH (default 1) is the batch, for `whatif --batch-from`: the input is BATCH x 2
// MiB and what each layer keeps SCALE x (6 x BATCH + 2) MiB, growing with the batch but not in
// proportion (2 MiB of it does not grow); the 1 MiB freed inside each forward does not grow.
// `keep`: zero_grad(set_to_none=False), for `whatif --set-to-none`: the gradients made in the
// first backward are kept, and each later one adds its new one (4 MiB, freed at once) into them
// ("-": set to None). STEPS (default 2): the steps run, every one after the first alike, for
// the replay that skips repeated steps.
int main(int argc, char** argv) {
  const std::size_t scale = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1;
  const std::size_t batch = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  const bool keep_gradients = argc > 3 && std::string_view(argv[3]) == "keep";
  const int steps = argc > 4 ? std::atoi(argv[4]) : 2;
  const Hooks hooks;
  sim::CachingAllocator allocator(0, sim::CachingAllocator::Reporting::kAsPytorch);
  void* weights[2] = {must(allocator.allocate(4 * kMiB)), must(allocator.allocate(4 * kMiB))};
  const char* names[2] = {"fc1.weight", "fc2.weight"};
  const char* modules[2] = {"fc1", "fc2"};
  void* grads[2] = {nullptr, nullptr};
  std::vector<void*> state;
  uint64_t peak_allocated = 0;
  for (int step = 0; step < steps; ++step) {
    void* input = must(allocator.allocate(batch * 2 * kMiB));
    // forward
    // The second forward in outline, as the hooks report most: its modules are the first's.
    const bool whole = step == 0;
    hooks.enter(kModule, "Net", whole ? kEnter : kEnterOutline);
    if (step == 0) hooks.tag(kParameter, {{weights[0], names[0]}, {weights[1], names[1]}});
    void* kept[2];
    for (int layer = 0; layer < 2; ++layer) {
      if (whole) hooks.enter(kModule, modules[layer]);
      kept[layer] = must(allocator.allocate(scale * (6 * batch + 2) * kMiB));
      allocator.free(must(allocator.allocate(1 * kMiB)));
      if (whole) hooks.exit(kModule);
    }
    hooks.exit(kModule);
    // backward: the engine's thread makes the gradients and releases what forward kept
    hooks.enter(kBackward, "backward");
    std::thread engine([&] {
      for (int layer = 1; layer >= 0; --layer) {
        void* made = must(allocator.allocate(4 * kMiB));
        if (grads[layer] == nullptr) grads[layer] = made;  // none yet: the new one is it
        if (allocator.allocated_bytes() > peak_allocated)
          peak_allocated = allocator.allocated_bytes();
        if (made != grads[layer]) allocator.free(made);  // added into the one kept
        allocator.free(kept[layer]);
      }
    });
    engine.join();
    hooks.exit(kBackward);
    // AdamW's step: its state on the first one; the gradients tagged before it, the state after
    hooks.enter(kOptimizer, "AdamW");
    hooks.tag(kGradient, {{grads[0], names[0]}, {grads[1], names[1]}});
    if (step == 0) {
      for (int i = 0; i < 4; ++i) state.push_back(must(allocator.allocate(4 * kMiB)));
      hooks.tag(kOptimizerState, {{state[0], "fc1.weight.exp_avg"},
                                  {state[1], "fc1.weight.exp_avg_sq"},
                                  {state[2], "fc2.weight.exp_avg"},
                                  {state[3], "fc2.weight.exp_avg_sq"}});
    }
    hooks.exit(kOptimizer);
    allocator.free(input);
    // zero_grad(set_to_none=True), except after the last step: its gradients stay to the end
    if (step + 1 < steps && !keep_gradients) {
      for (void*& g : grads) {
        allocator.free(g);
        g = nullptr;
      }
    }
  }
  const uint64_t allocated_at_end = allocator.allocated_bytes();
  // The program's end (Python's atexit), then its teardown frees the optimizer's state: "at exit"
  // is what the program held at its end.
  hooks.enter(kProgramEnd, "program end");
  for (void* s : state) allocator.free(s);
  std::printf("peak_allocated=%llu allocated=%llu reserved=%llu\n",
              static_cast<unsigned long long>(peak_allocated),
              static_cast<unsigned long long>(allocated_at_end),
              static_cast<unsigned long long>(allocator.reserved_bytes()));
  return 0;
}
