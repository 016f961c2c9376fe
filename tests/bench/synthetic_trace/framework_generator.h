// SPDX-License-Identifier: Apache-2.0
// --framework-blocks: what a PyTorch program traced with its block events and the roles hooks
// (python/gpumemtrace_roles.py) writes: torchvision's ResNet-50 trained with AMP and SGD with
// momentum, behind a caching allocator shaped like PyTorch's (torch_allocator.h: segments of
// 2 MiB for requests up to 1 MiB, 20 MiB up to 10 MiB, larger ones their own, rounded to 2 MiB;
// blocks split from them best fit, merged when freed), on one device. Its records are those of
// the recorder and the hooks, in their order: each segment's cudaMalloc (an Alloc record) then
// its kSegmentAlloc, then the block's kAlloc; each free's request and its completion, written as
// a BlockFreedAtOnce record when it follows the request in the chunk; the parameters and buffers
// tagged at the first forward (their names interned then, as the hooks do), every module's
// forward as nested Scope records in the root's first three forwards and one in sixteen (the
// others in outline), the backward's blocks on an autograd thread of their own, the gradients
// tagged after each backward, the optimizer's state tagged after its first step. --events N:
// whole steps until at least N events (its Block, Scope, Tag and Alloc records; the JSON it
// prints counts each kind); --stacks, --live, --threads, --devices, --vmm-one-in and
// --fail-one-in do not apply.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/records.h"
#include "tests/bench/synthetic_trace/options.h"
#include "tests/bench/synthetic_trace/rng.h"
#include "tests/bench/synthetic_trace/torch_allocator.h"
#include "tests/bench/synthetic_trace/trace_writer.h"

namespace gmt::bench {

// How many Python code objects the main thread's stacks name (framework_generator.cpp lists
// them).
inline constexpr std::size_t kPythonCodeCount = 22;

// A training loop of torchvision's ResNet-50 (AMP, SGD with momentum, batch 32, one device) as
// PyTorch's block events and the roles hooks report it: see the file's comment.
class FrameworkGenerator {
 public:
  explicit FrameworkGenerator(const Options& o);

  void run();

  uint64_t file_size() const { return file_.size(); }
  uint64_t events() const { return events_; }
  // The event mix, as JSON members.
  std::string mix() const;

 private:
  static constexpr uint64_t kBatch = 32;
  static constexpr uint64_t kSampleEvery = 20'000;
  static constexpr uint32_t kPytorch = static_cast<uint32_t>(gmt::format::BlockAllocator::kPytorch);

  enum class Op : uint8_t { kConv, kBn, kMaxPool, kAvgPool, kFc };
  // A module that does work in forward (its blocks) and backward.
  struct Layer {
    Layer(Op o, uint32_t m, std::string s) : op(o), module(m), site(std::move(s)) {}
    Op op;
    uint32_t module;        // index in modules_
    std::string site;       // its forward's allocation sites (stacks) begin so
    uint64_t in_bytes = 0;  // its input (fp16): what the gradient for it takes
    uint64_t out_bytes = 0;
    uint64_t weight = 0;  // its weight's elements
    uint64_t channels = 0;
    bool grad_input = true;        // its backward makes a gradient for its input
    bool workspace = false;        // cuDNN asks for a workspace
    std::vector<uint32_t> params;  // indices in tensors_: weight, bias
    std::vector<uint64_t> kept;    // the blocks its forward keeps for backward, this step
  };
  // A parameter or buffer of the model.
  struct Tensor {
    std::string name;  // qualified, as named_parameters() and named_buffers() give it
    uint64_t bytes = 0;
    bool buffer = false;
    uint32_t name_id = 0;
    uint64_t address = 0;
    uint64_t grad = 0;   // its .grad's block, 0 when None
    uint64_t state = 0;  // the optimizer's momentum buffer
  };
  // The root forward, in call order: a module's forward entered or left, or a layer's work.
  struct Call {
    enum Kind : uint8_t { kEnter, kExit, kLayer } kind;
    uint32_t index;  // in modules_ (enter), layers_ (layer)
  };
  struct Module {
    std::string name;  // qualified; the root's is its class name
    uint32_t name_id = 0;
  };

  static uint64_t act(uint64_t channels, uint64_t side);

  uint32_t module(const std::string& name);
  uint32_t tensor(const std::string& name, uint64_t bytes, bool buffer);
  uint32_t layer(Layer l);
  uint32_t conv(const std::string& name, const std::string& site, uint64_t in, uint64_t out,
                uint64_t k, uint64_t side_in, uint64_t side_out, bool grad_input = true);
  uint32_t bn(const std::string& name, const std::string& site, uint64_t c, uint64_t side);
  void call(uint32_t l);
  void enter_exit(uint32_t m);
  void build_model();

  Writer& main() { return writers_[0]; }
  Writer& autograd() { return writers_[1]; }
  Writer& sampler() { return writers_[2]; }
  Writer& stamp(Writer& w);
  void event();

  uint32_t name(Writer& w, const std::string& text);
  uint32_t stack(Writer& w, const std::string& site);
  uint64_t frame(Rng& r, std::size_t code);

  uint64_t alloc(Writer& w, uint64_t bytes, const std::string& site);
  void release(Writer& w, uint64_t address);
  void release_all(Writer& w, std::vector<uint64_t>& blocks);
  void block(Writer& w, gmt::format::BlockAction action, uint64_t address, uint64_t size,
             uint32_t stack_id);
  void scope(gmt::format::ScopeAction action, gmt::format::ScopeKind kind, uint32_t name_id);
  void tag(gmt::format::TagRole role, uint64_t address, uint32_t name_id);
  void attach_tracker(Writer& w);
  void note(Writer& w, const std::string& text);
  void sample(gmt::format::SampleReason reason);

  void prologue();
  bool root_whole(uint32_t& forwards);
  void step();
  void forward();
  void layer_forward(Layer& l);
  void loss_forward();
  void backward();
  void gradient(uint32_t param, const std::string& site);
  uint64_t layer_backward(Layer& l, uint64_t grad_out);
  void optimizer_step();
  void epilogue();

  const Options o_;
  Rng rng_;
  TraceFile file_;
  std::vector<Writer> writers_;
  TorchAllocator allocator_;
  std::vector<Module> modules_;
  std::vector<Tensor> tensors_;
  std::vector<Layer> layers_;
  std::vector<Call> calls_;
  std::unordered_map<std::string, uint32_t> names_;
  std::unordered_map<std::string, uint32_t> stacks_;
  std::array<bool, kPythonCodeCount> python_defined_{};
  bool tracker_attached_ = false;
  bool tagged_ = false;
  uint32_t backward_name_ = 0;
  uint32_t model_forwards_ = 0;
  uint32_t loss_forwards_ = 0;
  uint64_t images_ = 0;
  uint64_t labels_ = 0;
  uint64_t logits_ = 0;
  uint64_t loss_ = 0;
  std::vector<uint64_t> loss_kept_;
  uint64_t scaler_scale_ = 0;
  uint64_t scaler_growth_ = 0;
  uint64_t now_ = 1000;
  uint64_t events_ = 0;
  uint64_t next_sample_ = kSampleEvery;
  uint64_t block_events_ = 0;
  uint64_t scope_events_ = 0;
  uint64_t tag_events_ = 0;
  uint64_t driver_events_ = 0;
  uint64_t steps_ = 0;
};

}  // namespace gmt::bench
