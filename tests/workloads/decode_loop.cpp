// SPDX-License-Identifier: Apache-2.0
// generate() of a decoder behind a caching allocator reporting as PyTorch's trace tracker does
// (caching_allocator.h), with what python/gpumemtrace_roles.py reports from PyTorch's hooks
// played through the same entry points: the root "Decoder" under no_grad, its attention
// modules "layers.N.attn", each growing its layer's keys and values by concatenation as
// transformers' DynamicCache does (the new, one token longer, made before the old is freed),
// the keys and values tagged as the cache, and after each forward the cache's length.
//   4 sequences, 4 key-value heads of 64 bf16 numbers, 4 layers: a layer's keys are 2 KiB a
//   token, one more token takes 4 layers x 2 x 2 KiB / 4 sequences = 4 KiB per sequence.
//   Each forward, per layer: its keys and values made anew, the attention's scores (fp16,
//   one row a query, one column a cached token) and its output; then the last token's logits
//   (fp32, a 32,000-word vocabulary), kept to the next forward. Between forwards the token ids
//   grow by concatenation too (int64).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tests/workloads/caching_allocator.h"
#include "tests/workloads/framework_hooks.h"

namespace {

constexpr std::size_t kSequences = 4, kHeads = 4, kHeadDim = 64, kLayers = 4, kModel = 256;
constexpr std::size_t kVocabulary = 32000;
constexpr std::size_t kKeysPerToken = kSequences * kHeads * kHeadDim * 2;  // one layer's keys

using sim::kExit, sim::kKvCache, sim::kKvCacheLength, sim::kModule, sim::kNoGrad;
using sim::kParameter, sim::kProgramEnd;

// The hooks' entry points, named by std::string, a tensor tagged at a time.
struct Hooks : sim::FrameworkHooks {
  void enter(uint32_t kind, const std::string& text) const {
    FrameworkHooks::enter(kind, text.c_str());
  }
  void tag(uint32_t role, void* p, const std::string& text) const {
    FrameworkHooks::tag(role, {{p, text.c_str()}});
  }
};

struct Layer {
  void* weight = nullptr;
  void* keys = nullptr;
  void* values = nullptr;
};

class Decoder {
 public:
  Decoder(sim::CachingAllocator& allocator, const Hooks& hooks)
      : allocator_(allocator), hooks_(hooks) {}

  bool load() {
    for (std::size_t i = 0; i < kLayers; ++i) {
      layers_[i].weight = allocator_.allocate(4 * kModel * kModel * 2);
      if (layers_[i].weight == nullptr) return false;
      hooks_.tag(kParameter, layers_[i].weight, "layers." + std::to_string(i) + ".attn.weight");
    }
    return true;
  }

  // One forward of `queries` tokens per sequence, `length` cached before it; its logits in
  // `logits`. False: a request failed.
  bool forward(std::size_t queries, std::size_t length, void*& logits) {
    hooks_.enter(kModule, "Decoder");
    hooks_.enter(kNoGrad, "no_grad");
    void* hidden = allocator_.allocate(kSequences * queries * kModel * 2);
    bool ok = hidden != nullptr;
    for (std::size_t i = 0; ok && i < kLayers; ++i) ok = attention(i, queries, length, hidden);
    if (ok) logits = allocator_.allocate(kSequences * kVocabulary * 4);
    allocator_.free(hidden);
    hooks_.exit(kNoGrad);
    hooks_.exit(kModule);
    return ok && logits != nullptr;
  }

  uint64_t cached_bytes() const { return cached_; }

 private:
  bool attention(std::size_t i, std::size_t queries, std::size_t length, void*& hidden) {
    const std::string module = "layers." + std::to_string(i) + ".attn";
    hooks_.enter(kModule, module);
    Layer& l = layers_[i];
    const std::size_t grown = length + queries;
    bool ok = true;
    for (void** kv : {&l.keys, &l.values}) {
      void* made = allocator_.allocate(grown * kKeysPerToken);
      if (made == nullptr) {
        ok = false;
        break;
      }
      hooks_.tag(kKvCache, made, module + (kv == &l.keys ? ".keys" : ".values"));
      allocator_.free(*kv);
      *kv = made;
    }
    cached_ = grown;
    void* scores = ok ? allocator_.allocate(kSequences * kHeads * queries * grown * 2) : nullptr;
    void* out =
        scores != nullptr ? allocator_.allocate(kSequences * queries * kModel * 2) : nullptr;
    allocator_.free(scores);
    if (out != nullptr) {
      allocator_.free(hidden);
      hidden = out;
    }
    hooks_.exit(kModule);
    return out != nullptr;
  }

  sim::CachingAllocator& allocator_;
  const Hooks& hooks_;
  Layer layers_[kLayers];
  uint64_t cached_ = 0;
};

}  // namespace

// `decode_loop PROMPT NEW`: generate() of NEW tokens after a PROMPT-token prompt, NEW forwards
// (the prompt's, then one a token); prints "generated NEW" and exits 0, or "out of memory after
// N tokens" and exits 3. NEW `max`: until a request fails, then "generated N" and 0.
// `decode_loop PROMPT NEW train`: then the decoder's next forward with autograd on (a training
// step on the model, not a decode step), whose 64 GiB request fails; prints "train failed", and
// the forward goes on with 1 MiB instead.
int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: decode_loop PROMPT NEW|max\n");
    return 2;
  }
  const std::size_t prompt = std::strtoul(argv[1], nullptr, 10);
  const bool until_full = std::string_view(argv[2]) == "max";
  const std::size_t wanted = until_full ? SIZE_MAX : std::strtoul(argv[2], nullptr, 10);
  const Hooks hooks;
  sim::CachingAllocator allocator(0, sim::CachingAllocator::Reporting::kAsPytorch);
  Decoder decoder(allocator, hooks);
  if (!decoder.load()) {
    std::printf("out of memory loading the weights\n");
    return 3;
  }
  void* ids = allocator.allocate(kSequences * prompt * 8);
  void* logits = nullptr;
  std::size_t generated = 0;
  std::size_t length = 0;
  while (generated < wanted) {
    // The last forward's logits go before the next, as generate() drops its outputs.
    allocator.free(logits);
    logits = nullptr;
    const std::size_t queries = generated == 0 ? prompt : 1;
    if (!decoder.forward(queries, length, logits)) break;
    length += queries;
    hooks.enter(kKvCacheLength, "batch=" + std::to_string(kSequences) + " tokens=" +
                                    std::to_string(length) + " capacity=0 bytes_per_token=" +
                                    std::to_string(kLayers * 2 * kKeysPerToken / kSequences) +
                                    " layers=" + std::to_string(kLayers));
    ++generated;
    // The new token appended to the ids: made anew, one longer.
    void* longer = allocator.allocate(kSequences * (prompt + generated) * 8);
    if (longer == nullptr) break;
    allocator.free(ids);
    ids = longer;
  }
  if (argc > 3 && std::string_view(argv[3]) == "train") {
    hooks.enter(kModule, "Decoder");
    if (allocator.allocate(std::size_t{64} << 30) == nullptr) {
      // Tried another way, as cuDNN's benchmark tries another algorithm: a smaller workspace.
      std::printf("train failed\n");
      allocator.free(allocator.allocate(std::size_t{1} << 20));
    }
    hooks.exit(kModule);
  }
  hooks.enter(kProgramEnd, "program end");
  if (until_full || generated == wanted) {
    std::printf("generated %zu\n", generated);
    return 0;
  }
  std::printf("out of memory after %zu tokens\n", generated);
  return 3;
}
