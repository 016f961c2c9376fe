# SPDX-License-Identifier: Apache-2.0
"""Inference workloads for scripts/gpu-validate-inference.sh, built from configs (nothing is
downloaded). Each writes the figures the checks compare against to a JSON file.

  llama CACHE BATCH PROMPT NEW FILLER OUT.json
      A Llama-shaped LlamaForCausalLM (bf16, 8 layers, GQA: 16 heads, 4 key-value heads of 128)
      from LlamaConfig, generate() greedy for exactly NEW tokens after a PROMPT-token prompt, BATCH
      sequences, with CACHE "dynamic" (DynamicCache) or "static" (cache_implementation="static").
      FILLER bytes are taken first with one tensor (0: none), so that the device's free memory is
      what the run sets it to; "auto:GIB" takes all but GIB GiB of what is free once the model is
      loaded. The output (and its cache) is kept to the program's end. OUT gets: the cache's
      bytes (its keys' and values' storages, each rounded up to the allocator's 512 bytes), the
      bytes one token takes per sequence by the config (2 x layers x kv heads x head dim x 2),
      the tokens held, the filler's bytes, and whether generate() ran out of memory. NEW "max":
      until it runs out of memory; OUT gets the tokens generated before (a stopping criterion
      counts them as they come).
  kept BATCH PROMPT NEW OUT.json
      A hand-written decoder (8 layers) whose attention modules keep their keys and values as
      attributes, grown by torch.cat: OUT gets the bytes each module keeps at the end.
  graphed BATCH CAPACITY NEW OUT.json
      A hand-written decoder (8 layers) with keys and values preallocated for CAPACITY tokens,
      its decode step captured once in a CUDA graph (torch.cuda.graph) and replayed NEW times, as
      a serving loop does: OUT gets the bytes of the blocks live at the end in the graphs' private
      pools (memory_snapshot's segments of a pool other than the default), and those segments'
      bytes.
"""
import json
import sys

import torch

LAYERS, HEADS, KV_HEADS, HEAD_DIM, HIDDEN = 8, 16, 4, 128, 2048


def rounded(n):
    return (n + 511) // 512 * 512


def storage_bytes(t):
    return rounded(t.untyped_storage().nbytes())


def cache_tensors(cache):
    """The cache's tensors on the device: each layer's keys and values first, then what else a
    layer keeps there (a StaticLayer's cumulative_length)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        kv = [t for layer in layers for t in (layer.keys, layer.values) if t is not None]
        other = [t for layer in layers for name, t in vars(layer).items()
                 if name not in ("keys", "values") and isinstance(t, torch.Tensor) and t.is_cuda]
        return kv + other
    return list(cache.key_cache) + list(cache.value_cache)


def graph_pool_bytes():
    """The segments of CUDA graphs' private pools (memory_snapshot's of a pool other than the
    default), whole: their live blocks and their free space, which only the graphs use."""
    return sum(s["total_size"] for s in torch.cuda.memory_snapshot()
               if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0))


def take_filler(spec):
    if spec.startswith("auto:"):
        free, _ = torch.cuda.mem_get_info()
        reserved = torch.cuda.memory_reserved()
        keep = int(float(spec[5:]) * (1 << 30))
        n = max(0, free + (reserved - torch.cuda.memory_allocated()) - keep)
    else:
        n = int(spec)
    return (torch.empty(n, dtype=torch.uint8, device="cuda") if n > 0 else None), n


def llama(cache, batch, prompt, new, filler_spec, out_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=32000, hidden_size=HIDDEN, intermediate_size=5632, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
        max_position_embeddings=1 << 16)
    torch.manual_seed(0)
    if filler_spec != "0":
        # With the device nearly full, cuDNN's attention fails inside (its own workspace: a
        # RuntimeError, not an out-of-memory) before PyTorch's allocator does: the fit checks
        # compare the allocator's figures, so attention takes another backend.
        torch.backends.cuda.enable_cudnn_sdp(False)
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    facts = {"oom": False}
    try:
        filler, filler_bytes = take_filler(filler_spec)
    except torch.OutOfMemoryError as error:  # the device's free memory is not what it was
        facts.update(oom=True, error="the filler: " + str(error).splitlines()[0])
        json.dump(facts, open(out_path, "w"))
        print("OOM", facts["error"])
        return None
    ids = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda")
    facts.update(filler_bytes=filler_bytes, bytes_per_token=2 * LAYERS * KV_HEADS * HEAD_DIM * 2,
                 batch=batch)
    counted = {"tokens": 0}
    if new == "max":
        from transformers import StoppingCriteria, StoppingCriteriaList

        class Count(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                counted["tokens"] = int(input_ids.shape[-1]) - prompt
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        new = config.max_position_embeddings - prompt
        kwargs_more = dict(stopping_criteria=StoppingCriteriaList([Count()]))
    else:
        new = int(new)
        kwargs_more = {}
    kwargs = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                  return_dict_in_generate=True, pad_token_id=0, **kwargs_more)
    if cache == "static":
        kwargs["cache_implementation"] = "static"
    try:
        with torch.no_grad():
            result = model.generate(ids, **kwargs)
    except torch.OutOfMemoryError as error:
        facts["oom"] = True
        facts["error"] = str(error).splitlines()[0]
        facts["generated_before_oom"] = counted["tokens"]
        json.dump(facts, open(out_path, "w"))
        print("OOM", facts["error"])
        return None
    torch.cuda.synchronize()
    tensors = cache_tensors(result.past_key_values)
    # Each tensor's block, as the allocator handed it out (it leaves a block unsplit when what
    # would remain is small): the bytes the kv_cache role counts.
    blocks = {}
    for s in torch.cuda.memory_snapshot():
        address = s["address"]
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                blocks[address] = b["size"]
            address += b["size"]
    facts.update(
        kv_cache_bytes=sum(blocks.get(t.untyped_storage().data_ptr(), -1) for t in tensors),
        kv_cache_storage_bytes=sum(storage_bytes(t) for t in tensors),
        cache_class=type(result.past_key_values).__name__,
        tokens=int(tensors[0].shape[-2]),
        # What the cache holds, as it says (read back from the device: a static cache's keys
        # are their full capacity long).
        written=int(result.past_key_values.get_seq_length()),
        generated=int(result.sequences.shape[1] - prompt),
        max_memory_allocated=torch.cuda.max_memory_allocated(),
        max_memory_reserved=torch.cuda.max_memory_reserved(),
        # generate() compiles the decode step (mode reduce-overhead: CUDA graphs) for a static cache
        compiled_graphs=compiled_graphs(),
        graph_pool_bytes=graph_pool_bytes())
    json.dump(facts, open(out_path, "w"))
    print(json.dumps(facts))
    return model, result, filler  # kept to the program's end


def compiled_graphs():
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:  # a torch without dynamo's counters
        return 0


class KeptAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.kv = torch.nn.Linear(HIDDEN, 2 * KV_HEADS * HEAD_DIM, bias=False)
        self.o = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.keys = None
        self.values = None

    def forward(self, x):
        b, t, _ = x.shape
        k, v = self.kv(x).view(b, t, 2, KV_HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        k, v = k.contiguous(), v.contiguous()  # a block each, as a cache of its own holds them
        self.keys = k if self.keys is None else torch.cat([self.keys, k], dim=2)
        self.values = v if self.values is None else torch.cat([self.values, v], dim=2)
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        rep = HEADS // KV_HEADS
        keys = self.keys.repeat_interleave(rep, dim=1)
        values = self.values.repeat_interleave(rep, dim=1)
        a = torch.nn.functional.scaled_dot_product_attention(q, keys, values, is_causal=t > 1)
        return self.o(a.transpose(1, 2).reshape(b, t, HIDDEN))


class KeptDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32000, HIDDEN)
        self.layers = torch.nn.ModuleList(KeptAttention() for _ in range(LAYERS))
        self.head = torch.nn.Linear(HIDDEN, 32000, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x[:, -1:])


def kept(batch, prompt, new, out_path):
    torch.manual_seed(0)
    model = KeptDecoder().to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, 32000, (batch, prompt), device="cuda")
    with torch.no_grad():
        logits = model(ids)
        for _ in range(new):
            logits = model(logits.argmax(-1))
    torch.cuda.synchronize()
    modules = {}
    for name, m in model.named_modules():
        if isinstance(m, KeptAttention):
            modules[name] = storage_bytes(m.keys) + storage_bytes(m.values)
    json.dump({"state_by_module": modules}, open(out_path, "w"))
    print(json.dumps(modules))
    return model, logits


class StaticAttention(torch.nn.Module):
    def __init__(self, batch, capacity):
        super().__init__()
        self.q = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.kv = torch.nn.Linear(HIDDEN, 2 * KV_HEADS * HEAD_DIM, bias=False)
        self.o = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        shape = (batch, KV_HEADS, capacity, HEAD_DIM)
        self.keys = torch.zeros(shape, dtype=torch.bfloat16, device="cuda")
        self.values = torch.zeros(shape, dtype=torch.bfloat16, device="cuda")

    def forward(self, x, position):
        b, t, _ = x.shape
        k, v = self.kv(x).view(b, t, 2, KV_HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        self.keys.index_copy_(2, position, k)
        self.values.index_copy_(2, position, v)
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        rep = HEADS // KV_HEADS
        a = torch.nn.functional.scaled_dot_product_attention(
            q, self.keys.repeat_interleave(rep, dim=1), self.values.repeat_interleave(rep, dim=1))
        return self.o(a.transpose(1, 2).reshape(b, t, HIDDEN))


class StaticDecoder(torch.nn.Module):
    def __init__(self, batch, capacity):
        super().__init__()
        self.embed = torch.nn.Embedding(32000, HIDDEN)
        self.layers = torch.nn.ModuleList(StaticAttention(batch, capacity) for _ in range(LAYERS))
        self.head = torch.nn.Linear(HIDDEN, 32000, bias=False)

    def forward(self, ids, position):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer(x, position)
        return self.head(x)


def graphed(batch, capacity, new, out_path):
    torch.manual_seed(0)
    model = StaticDecoder(batch, capacity).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
    position = torch.zeros(1, dtype=torch.long, device="cuda")
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture, as torch.cuda.graph's docs ask
            for _ in range(3):
                model(ids, position)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = model(ids, position)
        for step in range(new):
            position.fill_(step)
            graph.replay()
            ids.copy_(logits.argmax(-1))
    torch.cuda.synchronize()
    pooled = 0
    for segment in torch.cuda.memory_snapshot():
        if tuple(segment.get("segment_pool_id", (0, 0))) != (0, 0):
            pooled += sum(b["size"] for b in segment["blocks"] if b["state"] == "active_allocated")
    facts = {"graph_pool_live_bytes": pooled, "graph_pool_bytes": graph_pool_bytes()}
    json.dump(facts, open(out_path, "w"))
    print(json.dumps(facts))
    return model, graph, logits, ids, position


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "llama":
        cache, batch, prompt, new, filler, out = sys.argv[2:8]
        kept_objects = llama(cache, int(batch), int(prompt), new, filler, out)
    elif kind == "kept":
        batch, prompt, new, out = sys.argv[2:6]
        kept_objects = kept(int(batch), int(prompt), int(new), out)
    elif kind == "graphed":
        batch, capacity, new, out = sys.argv[2:6]
        kept_objects = graphed(int(batch), int(capacity), int(new), out)
    else:
        sys.exit("usage: inference_models.py llama|kept|graphed ...")
