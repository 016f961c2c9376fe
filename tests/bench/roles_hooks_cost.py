# SPDX-License-Identifier: Apache-2.0
"""What the roles hooks (python/gpumemtrace_roles.py) cost a decode loop's tokens, on the CPU,
with a real PyTorch (any build: a CPU one will do, e.g. Debian's python3-torch) and no GPU.

The hooks run per module call, and per root forward they tag the key-value cache; in generate()
of a many-layer model, module calls are densest (scripts/gpu-bench.sh GMT_BENCH_MODEL=decode
measures the whole on the GPU). Here a Llama-shaped decoder of LAYERS layers (14 module calls a
layer, as transformers' LlamaDecoderLayer makes: norms, attention and its four projections, the
MLP and its three projections and activation) with tiny tensors, so that Python's work is nearly
all a token costs, decodes with a DynamicCache-like cache (a class named Cache from a
`transformers` module, grown by torch.cat), whose keys and values claim to be on the device so
that the hooks tag them. Tokens alternate between the hooks on and off (nn.Module.__call__ given
back its original) within one process.

Run it under the preload, which gives the hooks their entry points into the recorder:
  LD_PRELOAD=build/lib/libgpumemtrace.so GPUMEMTRACE_OUTPUT=/tmp/hooks.gmt \
    python3 tests/bench/roles_hooks_cost.py python/gpumemtrace_roles.py [LAYERS] [TOKENS]
Prints one JSON object: module calls per token, us per token with the hooks off and on, and the
ns the hooks add per module call (all of a token's added time divided by its module calls).
"""
import json
import statistics
import sys
import time
import types

import torch

LAYERS = int(sys.argv[2]) if len(sys.argv) > 2 else 32
TOKENS = int(sys.argv[3]) if len(sys.argv) > 3 else 64
HIDDEN, KV = 16, 8


class OnDevice(torch.Tensor):
    """A CPU tensor the hooks take for a device one (they tag only CUDA tensors); its methods
    cost what a plain tensor's do (no __torch_function__ dispatch)."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def is_cuda(self):
        return True


class Cache:
    pass


Cache.__module__ = "transformers.cache_utils"


class Layer:
    def __init__(self):
        self.keys = self.values = None


class DynamicCache(Cache):
    def __init__(self, layers):
        self.layers = [Layer() for _ in range(layers)]

    def update(self, index, keys, values):
        layer = self.layers[index]
        if layer.keys is None:
            layer.keys, layer.values = keys, values
        else:
            layer.keys = torch.cat((layer.keys, keys), dim=-2)
            layer.values = torch.cat((layer.values, values), dim=-2)
        layer.keys = layer.keys.as_subclass(OnDevice)
        layer.values = layer.values.as_subclass(OnDevice)
        return layer.keys, layer.values


class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(HIDDEN))

    def forward(self, x):
        return x * self.weight


class Attention(torch.nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.q_proj = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.k_proj = torch.nn.Linear(HIDDEN, KV, bias=False)
        self.v_proj = torch.nn.Linear(HIDDEN, KV, bias=False)
        self.o_proj = torch.nn.Linear(KV, HIDDEN, bias=False)

    def forward(self, x, past_key_values=None, cache_position=None):
        q = self.q_proj(x)
        k = self.k_proj(x).unsqueeze(1)  # (batch, heads, tokens, head dim)
        v = self.v_proj(x).unsqueeze(1)
        k, v = past_key_values.update(self.layer_idx, k, v)
        return self.o_proj(v.as_subclass(torch.Tensor)[:, 0, -1:, :] + q[..., :KV])


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.up_proj = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.down_proj = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(torch.nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = Attention(layer_idx)
        self.post_attention_layernorm = RMSNorm()
        self.mlp = MLP()

    def forward(self, x, past_key_values=None, cache_position=None):
        x = x + self.self_attn(self.input_layernorm(x), past_key_values=past_key_values,
                               cache_position=cache_position)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(100, HIDDEN)
        self.layers = torch.nn.ModuleList(DecoderLayer(i) for i in range(LAYERS))
        self.norm = RMSNorm()
        self.lm_head = torch.nn.Linear(HIDDEN, 100, bias=False)

    def forward(self, input_ids, past_key_values=None, cache_position=None):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, past_key_values=past_key_values, cache_position=cache_position)
        return {"logits": self.lm_head(self.norm(x)), "past_key_values": past_key_values}


def decode(model, tokens):
    """us per token of TOKENS single-token forwards after a 4-token prompt."""
    cache = DynamicCache(LAYERS)
    model(torch.zeros(1, 4, dtype=torch.long), past_key_values=cache,
          cache_position=torch.arange(4))
    ids = torch.zeros(1, 1, dtype=torch.long)
    start = time.perf_counter_ns()
    for t in range(tokens):
        model(ids, past_key_values=cache, cache_position=torch.arange(4 + t, 5 + t))
    return (time.perf_counter_ns() - start) / tokens / 1e3


def module_calls_per_token(model):
    calls = [0]

    def count(*_):
        calls[0] += 1

    cache = DynamicCache(LAYERS)
    model(torch.zeros(1, 4, dtype=torch.long), past_key_values=cache, cache_position=torch.arange(4))
    handle = torch.nn.modules.module.register_module_forward_pre_hook(count)
    model(torch.zeros(1, 1, dtype=torch.long), past_key_values=cache, cache_position=torch.arange(4, 5))
    handle.remove()
    return calls[0]


def main():
    with open(sys.argv[1]) as source:
        hooks = types.ModuleType("_gpumemtrace_roles")
        exec(compile(source.read(), sys.argv[1], "exec"), hooks.__dict__)
    module = torch.nn.Module
    wrapper = module.__call__
    original = getattr(wrapper, "__wrapped__", None)
    if original is None:
        sys.exit("the hooks did not wrap nn.Module.__call__ (run under the preload: see --help)")
    torch.set_grad_enabled(False)
    model = Decoder()
    calls = module_calls_per_token(model)
    on, off = [], []
    for i in range(16):
        hooks_on = (i % 4) in (0, 3)  # on, off, off, on...: neither side always first
        module.__call__ = wrapper if hooks_on else original
        (on if hooks_on else off).append(decode(model, TOKENS))
    module.__call__ = wrapper
    us_on, us_off = statistics.median(on), statistics.median(off)
    print(json.dumps({"layers": LAYERS, "module_calls_per_token": calls,
                      "us_per_token_off": round(us_off, 1), "us_per_token_on": round(us_on, 1),
                      "ns_added_per_module_call": round((us_on - us_off) * 1e3 / calls)}))


if __name__ == "__main__":
    main()
