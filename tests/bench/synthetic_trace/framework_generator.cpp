// SPDX-License-Identifier: Apache-2.0
// The ResNet-50 training loop of framework_generator.h: the model built once, then each step's
// blocks, scopes and tags, and the stacks and Python frames they name.
#include "tests/bench/synthetic_trace/framework_generator.h"

#include <algorithm>
#include <string_view>

namespace gmt::bench {

using gmt::format::Api;
using gmt::format::BlockAction;
using gmt::format::MemoryKind;
using gmt::format::ScopeAction;
using gmt::format::ScopeKind;
using gmt::format::TagRole;

namespace {

// Python code objects the main thread's stacks name (PythonCodeRecord ids from 1, in order).
struct PythonCode {
  std::string_view name;
  std::string_view file;
};
constexpr std::string_view kSitePackages = "/opt/venv/lib/python3.12/site-packages/";
constexpr std::array<PythonCode, kPythonCodeCount> kPythonCodes = {{
    {"<module>", "train.py"},
    {"main", "train.py"},
    {"train_one_epoch", "train.py"},
    {"call", "<gpumemtrace>/gpumemtrace_roles.py"},
    {"Module._call_impl", "torch/nn/modules/module.py"},
    {"ResNet.forward", "torchvision/models/resnet.py"},
    {"ResNet._forward_impl", "torchvision/models/resnet.py"},
    {"Sequential.forward", "torch/nn/modules/container.py"},
    {"Bottleneck.forward", "torchvision/models/resnet.py"},
    {"Conv2d.forward", "torch/nn/modules/conv.py"},
    {"Conv2d._conv_forward", "torch/nn/modules/conv.py"},
    {"_BatchNorm.forward", "torch/nn/modules/batchnorm.py"},
    {"batch_norm", "torch/nn/functional.py"},
    {"MaxPool2d.forward", "torch/nn/modules/pooling.py"},
    {"AdaptiveAvgPool2d.forward", "torch/nn/modules/pooling.py"},
    {"Linear.forward", "torch/nn/modules/linear.py"},
    {"CrossEntropyLoss.forward", "torch/nn/modules/loss.py"},
    {"cross_entropy", "torch/nn/functional.py"},
    {"Module._apply", "torch/nn/modules/module.py"},
    {"SGD.step", "torch/optim/sgd.py"},
    {"_multi_tensor_sgd", "torch/optim/sgd.py"},
    {"GradScaler.unscale_", "torch/amp/grad_scaler.py"},
}};

}  // namespace

FrameworkGenerator::FrameworkGenerator(const Options& o)
    : o_(o), rng_(o.seed), file_(o.output, o.chunk_size), allocator_(0x7f0000000000ull) {
  writers_.reserve(3);
  writers_.emplace_back(file_, 0, 4000, "python");
  writers_.emplace_back(file_, 1, 4001, "pt_autograd_0");  // the autograd engine's CUDA thread
  writers_.emplace_back(file_, 2, 4002, "gpumemtrace-smp");
  build_model();
}

void FrameworkGenerator::run() {
  prologue();
  while (events_ < o_.events) step();
  epilogue();
  for (Writer& w : writers_) w.flush();
}

std::string FrameworkGenerator::mix() const {
  return "\"block_events\": " + std::to_string(block_events_) +
         ", \"scope_events\": " + std::to_string(scope_events_) +
         ", \"tag_events\": " + std::to_string(tag_events_) +
         ", \"driver_events\": " + std::to_string(driver_events_) +
         ", \"steps\": " + std::to_string(steps_) +
         ", \"stacks\": " + std::to_string(stacks_.size()) +
         ", \"names\": " + std::to_string(names_.size()) +
         ", \"segments_bytes\": " + std::to_string(allocator_.reserved());
}

uint64_t FrameworkGenerator::act(uint64_t channels, uint64_t side) {
  return kBatch * channels * side * side * 2;
}

uint32_t FrameworkGenerator::module(const std::string& name) {
  modules_.push_back(Module{name, 0});
  return static_cast<uint32_t>(modules_.size() - 1);
}

uint32_t FrameworkGenerator::tensor(const std::string& name, uint64_t bytes, bool buffer) {
  Tensor t;
  t.name = name;
  t.bytes = bytes;
  t.buffer = buffer;
  tensors_.push_back(t);
  return static_cast<uint32_t>(tensors_.size() - 1);
}

uint32_t FrameworkGenerator::layer(Layer l) {
  layers_.push_back(std::move(l));
  return static_cast<uint32_t>(layers_.size() - 1);
}

uint32_t FrameworkGenerator::conv(const std::string& name, const std::string& site, uint64_t in,
                                  uint64_t out, uint64_t k, uint64_t side_in, uint64_t side_out,
                                  bool grad_input) {
  Layer l(Op::kConv, module(name), site);
  l.in_bytes = act(in, side_in);
  l.out_bytes = act(out, side_out);
  l.weight = out * in * k * k;
  l.channels = out;
  l.grad_input = grad_input;
  l.workspace = k > 1;
  l.params = {tensor(name + ".weight", l.weight * 4, false)};
  return layer(std::move(l));
}

uint32_t FrameworkGenerator::bn(const std::string& name, const std::string& site, uint64_t c,
                                uint64_t side) {
  Layer l(Op::kBn, module(name), site);
  l.in_bytes = l.out_bytes = act(c, side);
  l.channels = c;
  l.params = {tensor(name + ".weight", c * 4, false), tensor(name + ".bias", c * 4, false)};
  tensor(name + ".running_mean", c * 4, true);
  tensor(name + ".running_var", c * 4, true);
  tensor(name + ".num_batches_tracked", 8, true);
  return layer(std::move(l));
}

void FrameworkGenerator::call(uint32_t l) {
  calls_.push_back({Call::kEnter, layers_[l].module});
  calls_.push_back({Call::kLayer, l});
  calls_.push_back({Call::kExit, 0});
}

void FrameworkGenerator::enter_exit(uint32_t m) {
  calls_.push_back({Call::kEnter, m});
  calls_.push_back({Call::kExit, 0});
}

// torchvision's resnet50(): modules in named_modules() order, the forward in call order.
void FrameworkGenerator::build_model() {
  module("ResNet");  // the root
  const uint32_t conv1 = conv("conv1", "stem/conv1", 3, 64, 7, 224, 112, false);
  const uint32_t bn1 = bn("bn1", "stem/bn1", 64, 112);
  const uint32_t relu = module("relu");
  Layer pool(Op::kMaxPool, module("maxpool"), "stem/maxpool");
  pool.in_bytes = act(64, 112);
  pool.out_bytes = act(64, 56);
  const uint32_t maxpool = layer(std::move(pool));
  call(conv1);
  call(bn1);
  enter_exit(relu);
  call(maxpool);
  struct Stage {
    int blocks;
    uint64_t width;
    uint64_t stride;
  };
  constexpr std::array<Stage, 4> kStages = {{{3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}}};
  uint64_t in = 64, side = 56;
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    const std::string stage = "layer" + std::to_string(s + 1);
    calls_.push_back({Call::kEnter, module(stage)});
    for (int i = 0; i < kStages[s].blocks; ++i) {
      const std::string p = stage + "." + std::to_string(i);
      // A stage's blocks after its first are made by the same lines: the same stacks.
      const std::string site = stage + (i == 0 ? "/first/" : "/rest/");
      const uint64_t w = kStages[s].width, out = 4 * w;
      const uint64_t side_out = i == 0 ? side / kStages[s].stride : side;
      const uint32_t block = module(p);
      const uint32_t c1 = conv(p + ".conv1", site + "conv1", in, w, 1, side, side);
      const uint32_t b1 = bn(p + ".bn1", site + "bn1", w, side);
      const uint32_t c2 = conv(p + ".conv2", site + "conv2", w, w, 3, side, side_out);
      const uint32_t b2 = bn(p + ".bn2", site + "bn2", w, side_out);
      const uint32_t c3 = conv(p + ".conv3", site + "conv3", w, out, 1, side_out, side_out);
      const uint32_t b3 = bn(p + ".bn3", site + "bn3", out, side_out);
      const uint32_t r = module(p + ".relu");
      calls_.push_back({Call::kEnter, block});
      call(c1);
      call(b1);
      enter_exit(r);
      call(c2);
      call(b2);
      enter_exit(r);
      call(c3);
      call(b3);
      if (i == 0) {
        const uint32_t ds = module(p + ".downsample");
        const uint32_t dc =
            conv(p + ".downsample.0", site + "downsample.0", in, out, 1, side, side_out);
        const uint32_t db = bn(p + ".downsample.1", site + "downsample.1", out, side_out);
        calls_.push_back({Call::kEnter, ds});
        call(dc);
        call(db);
        calls_.push_back({Call::kExit, 0});
      }
      enter_exit(r);
      calls_.push_back({Call::kExit, 0});
      in = out;
      side = side_out;
    }
    calls_.push_back({Call::kExit, 0});
  }
  Layer avg(Op::kAvgPool, module("avgpool"), "head/avgpool");
  avg.in_bytes = act(2048, 7);
  avg.out_bytes = kBatch * 2048 * 2;
  const uint32_t avgpool = layer(std::move(avg));
  Layer fc(Op::kFc, module("fc"), "head/fc");
  fc.in_bytes = kBatch * 2048 * 2;
  fc.out_bytes = kBatch * 1000 * 2;
  fc.weight = 1000 * 2048;
  fc.channels = 1000;
  fc.params = {tensor("fc.weight", fc.weight * 4, false), tensor("fc.bias", 1000 * 4, false)};
  const uint32_t head = layer(std::move(fc));
  call(avgpool);
  call(head);
}

// The next record's time, on `w`.
Writer& FrameworkGenerator::stamp(Writer& w) {
  now_ += 200 + rng_.below(1800);
  w.time_ns = now_;
  return w;
}

// One event written: the sampler looks at the device every kSampleEvery.
void FrameworkGenerator::event() {
  if (++events_ >= next_sample_) {
    sample(gmt::format::SampleReason::kPeriodic);
    next_sample_ += kSampleEvery;
  }
}

// A name's id, its Name record written on `w` the first time, as the hooks' name_id() does.
uint32_t FrameworkGenerator::name(Writer& w, const std::string& text) {
  auto [it, inserted] = names_.try_emplace(text, static_cast<uint32_t>(names_.size() + 1));
  if (inserted) {
    gmt::format::NameRecord n;
    n.time_ns = w.time_ns;
    n.id = it->second;
    n.text = text;
    w.record(n);
  }
  return it->second;
}

// The stack of an allocation site, defined (with its Python code objects) by the thread that
// first uses it: the main thread's stacks have Python frames, the autograd thread's none.
uint32_t FrameworkGenerator::stack(Writer& w, const std::string& site) {
  auto [it, inserted] = stacks_.try_emplace(site, static_cast<uint32_t>(stacks_.size() + 1));
  if (!inserted) return it->second;
  const uint32_t id = it->second;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: the same on every platform
  for (const char c : site) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  Rng frames(o_.seed * 7919 + h);
  gmt::format::StackRecord s;
  s.time_ns = w.time_ns;
  s.id = id;
  const bool driver = site.ends_with("#cudaMalloc");
  const std::size_t depth = 16 + frames.below(24);
  for (std::size_t f = 0; f < depth; ++f) {
    // cudaMalloc's stacks begin in the driver and the runtime, the allocator's callbacks in
    // libc10_cuda; then PyTorch, and the interpreter at the bottom of the main thread's.
    uint64_t m = 3 + frames.below(3);
    if (driver && f < 2) m = 1 + f;
    if (!driver && f == 0) m = 3;
    if (&w == &main() && f + 2 >= depth) m = 0;
    s.frames.push_back(0x7e0000000000ull + (m << 32) + 0x1000 + frames.below(48u << 20));
  }
  if (&w == &main()) {
    // Outermost first: the script, then module calls through the hooks' wrapper, as many
    // levels as the site is deep; reversed below (innermost first).
    std::vector<uint64_t> python = {frame(frames, 0), frame(frames, 1), frame(frames, 2)};
    const std::size_t levels =
        1 + static_cast<std::size_t>(std::count(site.begin(), site.end(), '/'));
    for (std::size_t l = 0; l < levels; ++l) {
      python.push_back(frame(frames, 3));
      python.push_back(frame(frames, 4));
      python.push_back(frame(frames, 5 + frames.below(kPythonCodes.size() - 5)));
    }
    s.python.assign(python.rbegin(), python.rend());
  }
  w.record(s);
  return id;
}

// A Python frame of code `code` (its record written first if new) at some line.
uint64_t FrameworkGenerator::frame(Rng& r, std::size_t code) {
  if (!python_defined_[code]) {
    python_defined_[code] = true;
    gmt::format::PythonCodeRecord c;
    c.time_ns = main().time_ns;
    c.id = static_cast<uint32_t>(code + 1);
    c.name = std::string(kPythonCodes[code].name);
    c.file = kPythonCodes[code].file.starts_with("train.py")
                 ? "/home/user/train.py"
                 : std::string(kPythonCodes[code].file.starts_with("<") ? "" : kSitePackages) +
                       std::string(kPythonCodes[code].file);
    main().record(c);
  }
  return (static_cast<uint64_t>(code + 1) << 32) | (20 + r.below(600));
}

// A block handed out by the allocator on thread `w`, from site `site`: the segment's
// cudaMalloc and kSegmentAlloc first when it took one.
uint64_t FrameworkGenerator::alloc(Writer& w, uint64_t bytes, const std::string& site) {
  const TorchAllocator::Taken t = allocator_.allocate(bytes);
  stamp(w);
  if (t.segment != 0) {
    gmt::format::AllocRecord a;
    a.time_ns = w.time_ns;
    a.device = 0;
    a.kind = MemoryKind::kDevice;
    a.api = Api::kCuMemAlloc;
    a.public_api = Api::kCudaMalloc;
    a.address = t.segment;
    a.size = t.segment_size;
    a.context = 1;
    a.stack = stack(w, site + "#cudaMalloc");
    w.record(a);
    ++driver_events_;
    event();
    if (!tracker_attached_) attach_tracker(w);
    stamp(w);
    block(w, BlockAction::kSegmentAlloc, t.segment, t.segment_size, stack(w, site + "#segment"));
    stamp(w);
  }
  block(w, BlockAction::kAlloc, t.address, bytes, stack(w, site));
  return t.address;
}

// A block freed: the request and its completion, at once (as PyTorch completes nearly every
// free: no stream uses it).
void FrameworkGenerator::release(Writer& w, uint64_t address) {
  const uint64_t size = allocator_.free(address);
  stamp(w);
  block(w, BlockAction::kFreeRequested, address, size, 0);
  block(w, BlockAction::kFreeCompleted, address, size, 0);
}

void FrameworkGenerator::release_all(Writer& w, std::vector<uint64_t>& blocks) {
  for (uint64_t b : blocks) release(w, b);
  blocks.clear();
}

void FrameworkGenerator::block(Writer& w, BlockAction action, uint64_t address, uint64_t size,
                               uint32_t stack_id) {
  gmt::format::BlockRecord b;
  b.time_ns = w.time_ns;
  b.allocator = kPytorch;
  b.action = static_cast<uint32_t>(action);
  b.device = 0;
  b.address = address;
  b.size = size;
  b.stack = stack_id;
  w.block(b);
  ++block_events_;
  event();
}

void FrameworkGenerator::scope(ScopeAction action, ScopeKind kind, uint32_t name_id) {
  Writer& w = stamp(main());
  gmt::format::ScopeRecord s;
  s.time_ns = w.time_ns;
  s.action = static_cast<uint32_t>(action);
  s.kind = static_cast<uint32_t>(kind);
  s.name = name_id;
  w.record(s);
  ++scope_events_;
  event();
}

void FrameworkGenerator::tag(TagRole role, uint64_t address, uint32_t name_id) {
  Writer& w = stamp(main());
  gmt::format::TagRecord t;
  t.time_ns = w.time_ns;
  t.role = static_cast<uint32_t>(role);
  t.address = address;
  t.name = name_id;
  w.record(t);
  ++tag_events_;
  event();
}

// PyTorch's tracker attaching, before the allocator's first block event: its settings (the
// defaults) and the note.
void FrameworkGenerator::attach_tracker(Writer& w) {
  tracker_attached_ = true;
  gmt::format::AllocatorSettingsRecord settings;
  settings.time_ns = w.time_ns;
  settings.allocator = kPytorch;
  settings.max_split_size = UINT64_MAX;
  settings.roundup_divisions.assign(gmt::format::AllocatorSettingsRecord::kIntervals, 0);
  w.record(settings);
  note(w, "pytorch block events on (torch 2.9.1+cu130)");
}

void FrameworkGenerator::note(Writer& w, const std::string& text) {
  gmt::format::NoteRecord n;
  n.time_ns = w.time_ns;
  n.text = text;
  w.record(n);
}

void FrameworkGenerator::sample(gmt::format::SampleReason reason) {
  Writer& w = sampler();
  w.time_ns = now_;
  gmt::format::SampleRecord s;
  s.time_ns = now_;
  s.device = 0;
  s.reason = static_cast<uint32_t>(reason);
  s.present = gmt::format::kNvmlDeviceUsed | gmt::format::kNvmlDeviceTotal |
              gmt::format::kDriverFree | gmt::format::kDriverTotal;
  s.read_ns = 20'000;
  s.nvml_device_total = s.driver_total = 143'771'000'832ull;
  s.nvml_device_used = allocator_.reserved() + (600ull << 20);  // and the context's own
  s.driver_free = s.driver_total - s.nvml_device_used;
  w.record(s);
}

void FrameworkGenerator::prologue() {
  Writer& m = stamp(main());
  write_process(m, now_,
                {"python", "train.py", "--model", "resnet50", "--amp", "--batch-size", "32"});
  gmt::format::ContextRecord context;
  context.time_ns = now_;
  context.id = 1;
  context.handle = 0x5500000000ull;
  context.device = 0;
  m.record(context);
  gmt::format::DeviceRecord device;
  device.time_ns = now_;
  device.device = 0;
  device.pci_bus_id = "0000:10:00.0";
  device.nvml_index = 0;
  device.name = "NVIDIA H200";
  device.total_bytes = 143'771'000'832ull;
  sampler().time_ns = now_;
  sampler().record(device);
  sample(gmt::format::SampleReason::kFirst);
  // model.cuda(): every module's parameters, then its buffers.
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    Tensor& t = tensors_[i];
    t.address = alloc(main(), t.bytes, t.buffer ? "init/buffer" : "init/parameter");
    if (i == 0) {
      // The hooks install themselves once the tracker attached (a pending call).
      note(main(), "pytorch roles and modules on (torch 2.9.1+cu130)");
      backward_name_ = name(main(), "backward");
    }
  }
  scaler_scale_ = alloc(main(), 4, "scaler/scale");
  scaler_growth_ = alloc(main(), 4, "scaler/growth_tracker");
}

// A root module's forward (python/gpumemtrace_roles.py's root_call): reported whole in its
// first three and one in sixteen after, the others in outline.
bool FrameworkGenerator::root_whole(uint32_t& forwards) {
  const uint32_t n = forwards++;
  return n < 3 || n % 16 == 0;
}

void FrameworkGenerator::step() {
  Writer& m = main();
  // The loader's next batch: the last one's tensors go as the names are rebound.
  if (images_ != 0) release(m, images_);
  if (labels_ != 0) release(m, labels_);
  images_ = alloc(m, kBatch * 3 * 224 * 224 * 4, "input/images");
  labels_ = alloc(m, kBatch * 8, "input/labels");
  forward();
  loss_forward();
  const uint64_t scaled = alloc(m, 4, "scaler/scale_loss");
  // optimizer.zero_grad(): set to None.
  for (Tensor& t : tensors_) {
    if (t.grad != 0) release(m, t.grad);
    t.grad = 0;
  }
  backward();
  optimizer_step();
  release(m, scaled);
  release(m, logits_);
  release(m, loss_);
  ++steps_;
}

void FrameworkGenerator::forward() {
  Writer& m = main();
  Module& root = modules_[0];
  if (root.name_id == 0) {
    // adopt(): the modules' names, then _Root's: the parameters', then the buffers'.
    stamp(m);
    for (Module& mod : modules_) mod.name_id = name(m, mod.name);
    for (bool buffers : {false, true}) {
      for (Tensor& t : tensors_) {
        if (t.buffer == buffers) t.name_id = name(m, t.name);
      }
    }
  }
  const bool whole = root_whole(model_forwards_);
  if (!tagged_) {
    // The root's tensors, tagged when they moved: once, here.
    tagged_ = true;
    for (bool buffers : {false, true}) {
      for (const Tensor& t : tensors_) {
        if (t.buffer == buffers)
          tag(buffers ? TagRole::kBuffer : TagRole::kParameter, t.address, t.name_id);
      }
    }
  }
  scope(whole ? ScopeAction::kEnter : ScopeAction::kEnterOutline, ScopeKind::kModule, root.name_id);
  for (const Call& c : calls_) {
    switch (c.kind) {
      case Call::kEnter:
        if (whole) scope(ScopeAction::kEnter, ScopeKind::kModule, modules_[c.index].name_id);
        break;
      case Call::kExit:
        if (whole) scope(ScopeAction::kExit, ScopeKind::kModule, 0);
        break;
      case Call::kLayer:
        layer_forward(layers_[c.index]);
        break;
    }
  }
  scope(ScopeAction::kExit, ScopeKind::kModule, 0);
}

// A layer's work in forward, under autocast: its weights cast to half (kept for backward by
// autograd), its output (kept), cuDNN's workspace (freed at once).
void FrameworkGenerator::layer_forward(Layer& l) {
  Writer& m = main();
  const std::string& s = l.site;
  switch (l.op) {
    case Op::kConv: {
      l.kept.push_back(alloc(m, l.weight * 2, s + "/cast_weight"));
      if (!l.grad_input) l.kept.push_back(alloc(m, l.in_bytes, s + "/cast_input"));
      const uint64_t workspace = l.workspace ? alloc(m, l.out_bytes / 2, s + "/workspace") : 0;
      l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
      if (workspace != 0) release(m, workspace);
      break;
    }
    case Op::kBn:
      l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
      l.kept.push_back(alloc(m, l.channels * 4, s + "/save_mean"));
      l.kept.push_back(alloc(m, l.channels * 4, s + "/save_invstd"));
      break;
    case Op::kMaxPool:
      l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
      l.kept.push_back(alloc(m, l.out_bytes * 4, s + "/indices"));
      break;
    case Op::kAvgPool:
      l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
      break;
    case Op::kFc:
      l.kept.push_back(alloc(m, l.weight * 2, s + "/cast_weight"));
      l.kept.push_back(alloc(m, l.channels * 2, s + "/cast_bias"));
      logits_ = alloc(m, l.out_bytes, s + "/output");  // the program's `output`
      break;
  }
}

// criterion(output, target): a root of its own, in fp32 under autocast.
void FrameworkGenerator::loss_forward() {
  Writer& m = main();
  const uint32_t id = name(m, "CrossEntropyLoss");
  const bool whole = root_whole(loss_forwards_);
  scope(whole ? ScopeAction::kEnter : ScopeAction::kEnterOutline, ScopeKind::kModule, id);
  const uint64_t cast = alloc(m, kBatch * 1000 * 4, "loss/cast");
  loss_kept_.push_back(alloc(m, kBatch * 1000 * 4, "loss/log_softmax"));
  release(m, cast);
  loss_ = alloc(m, 4, "loss/nll_loss");
  loss_kept_.push_back(alloc(m, 4, "loss/total_weight"));
  scope(ScopeAction::kExit, ScopeKind::kModule, 0);
}

// scaler.scale(loss).backward(): the engine's thread makes the gradients and frees what
// forward kept; the hooks tag the gradients once it returns.
void FrameworkGenerator::backward() {
  scope(ScopeAction::kEnter, ScopeKind::kBackward, backward_name_);
  Writer& a = autograd();
  const uint64_t g = alloc(a, 4, "bw/mul");
  const uint64_t g_nll = alloc(a, kBatch * 1000 * 4, "bw/nll_loss");
  release(a, g);
  const uint64_t g_lsm = alloc(a, kBatch * 1000 * 4, "bw/log_softmax");
  release(a, g_nll);
  release_all(a, loss_kept_);
  uint64_t grad = alloc(a, kBatch * 1000 * 2, "bw/to_copy");
  release(a, g_lsm);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) grad = layer_backward(*it, grad);
  if (grad != 0) release(a, grad);
  for (const Tensor& t : tensors_) {
    if (!t.buffer) tag(TagRole::kGradient, t.grad, t.name_id);
  }
  scope(ScopeAction::kExit, ScopeKind::kBackward, 0);
}

// A parameter's gradient: in fp32 (the cast's backward), kept by AccumulateGrad as its .grad.
void FrameworkGenerator::gradient(uint32_t param, const std::string& site) {
  tensors_[param].grad = alloc(autograd(), tensors_[param].bytes, site);
}

// A layer's backward on the autograd thread: the gradient for its input, its parameters'
// gradients (through half-precision temporaries), what forward kept freed. Returns the
// gradient for the layer before it, 0 when none.
uint64_t FrameworkGenerator::layer_backward(Layer& l, uint64_t grad_out) {
  Writer& a = autograd();
  uint64_t grad_in = 0;
  switch (l.op) {
    case Op::kConv: {
      const uint64_t workspace = l.workspace ? alloc(a, l.out_bytes / 2, "bw/conv/workspace") : 0;
      if (l.grad_input) grad_in = alloc(a, l.in_bytes, "bw/conv/grad_input");
      const uint64_t half = alloc(a, l.weight * 2, "bw/conv/grad_weight");
      gradient(l.params[0], "bw/to_copy/weight");
      release(a, half);
      if (workspace != 0) release(a, workspace);
      break;
    }
    case Op::kBn:
      grad_in = alloc(a, l.in_bytes, "bw/batch_norm/grad_input");
      gradient(l.params[0], "bw/batch_norm/grad_weight");
      gradient(l.params[1], "bw/batch_norm/grad_bias");
      break;
    case Op::kMaxPool:
      grad_in = alloc(a, l.in_bytes, "bw/max_pool/grad_input");
      break;
    case Op::kAvgPool:
      grad_in = alloc(a, l.in_bytes, "bw/avg_pool/grad_input");
      break;
    case Op::kFc: {
      grad_in = alloc(a, l.in_bytes, "bw/addmm/grad_input");
      const uint64_t half_w = alloc(a, l.weight * 2, "bw/addmm/grad_weight");
      gradient(l.params[0], "bw/to_copy/weight");
      release(a, half_w);
      const uint64_t half_b = alloc(a, l.channels * 2, "bw/sum/grad_bias");
      gradient(l.params[1], "bw/to_copy/bias");
      release(a, half_b);
      break;
    }
  }
  release_all(a, l.kept);
  release(a, grad_out);
  return grad_in;
}

// scaler.step(optimizer): unscale_ (its temporaries), then SGD's foreach step (weight decay
// into new tensors; the momentum buffers made by the first step, the state tagged after it),
// then scaler.update().
void FrameworkGenerator::optimizer_step() {
  Writer& m = main();
  const uint64_t inv_scale = alloc(m, 4, "scaler/inv_scale");
  const uint64_t found_inf = alloc(m, 4, "scaler/found_inf");
  stamp(m);
  scope(ScopeAction::kEnter, ScopeKind::kOptimizer, name(m, "SGD"));
  std::vector<uint64_t> decayed;
  for (const Tensor& t : tensors_) {
    if (!t.buffer) decayed.push_back(alloc(m, t.bytes, "sgd/foreach_add"));
  }
  const bool first = tensors_[0].state == 0;
  if (first) {
    for (Tensor& t : tensors_) {
      if (!t.buffer) t.state = alloc(m, t.bytes, "sgd/clone");
    }
  }
  release_all(m, decayed);
  if (first) {
    // step_post: the state's addresses changed; their names interned as they are tagged.
    stamp(m);
    std::vector<uint32_t> ids;
    for (const Tensor& t : tensors_) {
      if (!t.buffer) ids.push_back(name(m, t.name + ".momentum_buffer"));
    }
    std::size_t i = 0;
    for (const Tensor& t : tensors_) {
      if (!t.buffer) tag(TagRole::kOptimizerState, t.state, ids[i++]);
    }
  }
  scope(ScopeAction::kExit, ScopeKind::kOptimizer, 0);
  release(m, found_inf);
  release(m, inv_scale);
}

// The program's end (atexit), then the interpreter's teardown frees its tensors, then the
// library's End; the segments stay with the process.
void FrameworkGenerator::epilogue() {
  Writer& m = stamp(main());
  scope(ScopeAction::kEnter, ScopeKind::kProgramEnd, name(m, "program end"));
  release(m, images_);
  release(m, labels_);
  for (Tensor& t : tensors_) {
    for (uint64_t* b : {&t.grad, &t.state, &t.address}) {
      if (*b != 0) release(m, *b);
      *b = 0;
    }
  }
  release(m, scaler_scale_);
  release(m, scaler_growth_);
  stamp(m);
  sample(gmt::format::SampleReason::kLast);
  gmt::format::EndRecord end;
  end.time_ns = now_;
  m.record(end);
}

}  // namespace gmt::bench
