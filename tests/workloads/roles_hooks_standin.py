# SPDX-License-Identifier: Apache-2.0
"""python/gpumemtrace_roles.py (the PyTorch roles hooks) run against a stand-in of the parts of
PyTorch it touches, for the simulated GPU, where there is no PyTorch: nn.Module (its __call__,
named_modules(), named_parameters()), the optimizers' global step hooks, torch.autograd.backward
run on an engine thread of its own, tensors with data_ptr(), and a caching allocator reporting its
blocks through gpumemtrace_framework_block as PyTorch's trace tracker does, in one segment taken
with the simulated cudaMalloc. The hooks' source is run as the preload runs it: in a module of its
own, after torch is imported.

Five steps of a two-layer model (fc1, fc2: a 4 MiB weight each); the hooks report the 4th and
5th forwards of each root in outline, whose blocks take their modules from the last whole one. Each layer's forward frees 1 MiB
of scratch inside and keeps 8 MiB for backward. The loss (1 MiB) is made outside any module. The
backward recomputes fc2's forward on the engine thread before releasing what forward kept, as
activation checkpointing does: there fc2 is called outside any other module, a root of its own.
Gradients (4 MiB each) are made on the engine thread in the first backward; the optimizer's
state (4 MiB each) in the first step. Then:
  - the most is held in step 5 (its input is 3 MiB, the others' 2), when the recomputed output is
    made: parameters 8, gradients 8, state 8, the input 3, activations 24 (fc1 8, fc2 8 + 8
    recomputed), the loss 1 MiB;
  - at the program's end: parameters, gradients and state, 24 MiB.

With `delete`, the program then drops its model and optimizer, whose tensors are all freed, and
trains another model (enc, dec) for two steps, the second of which holds the run's most.

With `oom` (or `oom-no-grad`: under no_grad), the model's first forward fails in fc2, whose
64 GiB request the simulated device refuses (as PyTorch's allocator growing its cache would),
after fc1 kept its 8 MiB: at the failure, that forward is still running and has made fc1's 8 MiB
(activations, or temporaries under no_grad), beside the parameters (8 MiB) and the input
(2 MiB). The program catches the error and drops what the forward kept; there is no training.

With `graph`, the model's forward is then captured in a CUDA graph (torch.cuda.graph, which the
hooks wrap) and its outputs kept: at the program's end they are the graph's, 16 MiB. With
`graph-pool` the same, the capture's blocks handed out of a private pool, as PyTorch gives each
capture: a 32 MiB segment of its own, taken at the capture's first allocation.

With `graph-warmup`, the forward is first run as CUDA graph trees warm a graph up (torch.compile's
"reduce-overhead"): inside torch._inductor.cudagraph_trees' pool manager, outside any capture, in a
32 MiB segment of the graphs' pool taken then, and what it kept is dropped after; then a user's
memory pool (torch.cuda.MemPool, through the same torch._C functions) takes a 16 MiB segment and
frees its block. At the end the first segment, all free, is the graph's; the second is the cache.
Inside the warm-up, before its segment is taken, a user's pool is begun and ended, nested.

Usage: python3 roles_hooks_standin.py PATH_TO_LIBCUDART PATH_TO_GPUMEMTRACE_ROLES_PY [graph]
"""
import ctypes
import sys
import threading
import types

MiB = 1 << 20
cudart = ctypes.CDLL(sys.argv[1])
report_block = ctypes.CDLL(None).gpumemtrace_framework_block
report_block.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64,
                         ctypes.c_uint64, ctypes.c_uint64]
report_block.restype = None
PYTORCH = 1  # include/gpumemtrace.h: gpumemtrace_allocator, gpumemtrace_block_action
ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, OOM = 0, 1, 2, 3, 7


class Allocator:
    """Hands out blocks one after the other in one 512 MiB segment, never reusing one: each
    block's extent is then the size it reports (the rest of the segment stays far larger)."""

    def __init__(self, size):
        p = ctypes.c_void_p()
        assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)) == 0
        self.next, self.end = p.value, p.value + size
        report_block(PYTORCH, SEGMENT_ALLOC, 0, p.value, size, 0)

    def allocate(self, size):
        address = self.next
        self.next += size
        assert self.next <= self.end
        report_block(PYTORCH, ALLOC, 0, address, size, 0)
        return address

    def free(self, address, size):
        report_block(PYTORCH, FREE_REQUESTED, 0, address, size, 0)
        report_block(PYTORCH, FREE_COMPLETED, 0, address, size, 0)


allocator = Allocator(512 * MiB)


class Tensor:
    is_cuda = True

    def __init__(self, nbytes, shape=None, element_size=1):
        self.nbytes = nbytes
        self.address = allocator.allocate(nbytes)
        self.grad = None
        self.shape = shape or (nbytes,)
        self._element_size = element_size

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return self._element_size

    def data_ptr(self):
        return self.address

    def storage_offset(self):
        return 0

    def backward(self):
        sys.modules["torch.autograd"].backward(self)  # looked up at the call, as torch does

    def __del__(self):
        try:
            allocator.free(self.address, self.nbytes)
        except Exception:  # the interpreter's teardown: its globals may be gone
            pass


class Parameter(Tensor):
    pass


class Module:
    def __init__(self):
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_parameters", {})

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, Parameter):
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, module in self._modules.items():
            yield from module.named_modules(prefix + "." + name if prefix else name)

    def named_parameters(self):
        for prefix, module in self.named_modules():
            for name, p in module._parameters.items():
                yield (prefix + "." + name if prefix else name), p

    def named_buffers(self):
        return iter(())

    def parameters(self):
        return [p for _, p in self.named_parameters()]


step_hooks = {"pre": [], "post": []}


class Optimizer:
    def __init__(self, parameters):
        self.param_groups = [{"params": list(parameters)}]
        self.state = {}

    def step(self):
        for hook in step_hooks["pre"]:
            hook(self, (), {})
        for p in self.param_groups[0]["params"]:
            self.state.setdefault(p, {"exp_avg": Tensor(4 * MiB)})
        for hook in step_hooks["post"]:
            hook(self, (), {})


tape = []  # what forward kept for backward


def autograd_backward(loss):
    """Runs on an engine thread of its own, as PyTorch's autograd does for CUDA tensors."""

    def engine():
        model.fc2(tape[0])  # recomputed (activation checkpointing): fc2 is a root on this thread
        while tape:
            tape.pop()
        for p in model.parameters():
            if p.grad is None:
                p.grad = Tensor(4 * MiB)

    thread = threading.Thread(target=engine)
    thread.start()
    thread.join()


grad = {"enabled": True}


class NoGrad:
    """torch.no_grad: autograd records nothing inside."""

    def __enter__(self):
        self.before = grad["enabled"]
        grad["enabled"] = False

    def __exit__(self, *exc_info):
        grad["enabled"] = self.before
        return False


class GraphCapture:
    """torch.cuda.graph: the context manager around a CUDA graph's capture."""

    def __init__(self, cuda_graph):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


pool_calls = []  # (function, pool) as the allocator saw them


class CudaBindings(types.ModuleType):
    """torch._C: the calls that send a thread's allocations to a memory pool and back."""

    @staticmethod
    def _cuda_beginAllocateCurrentThreadToPool(device, pool):
        pool_calls.append(("begin", pool))

    @staticmethod
    def _cuda_endAllocateToPool(device, pool):
        pool_calls.append(("end", pool))


# torch/_inductor/cudagraph_trees.py's pool manager, run in a module of that name.
CUDAGRAPH_TREES = '''
import contextlib
import torch


@contextlib.contextmanager
def _use_cuda_memory_pool_manager(device, mem_pool, stream):
    torch._C._cuda_beginAllocateCurrentThreadToPool(device, mem_pool)
    try:
        yield
    finally:
        torch._C._cuda_endAllocateToPool(device, mem_pool)
'''


def stand_in_torch():
    torch = types.ModuleType("torch")
    torch.__version__ = "stand-in"
    torch.Tensor = Tensor
    torch.is_tensor = lambda t: isinstance(t, Tensor)
    torch.is_grad_enabled = lambda: grad["enabled"]
    torch.no_grad = NoGrad
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: False)
    torch.compile = lambda fn, **options: fn  # nothing compiles here: the hooks see it asked for
    torch.cuda = types.SimpleNamespace(graph=GraphCapture)
    module_mod = types.ModuleType("torch.nn.modules.module")
    module_mod.Module = Module
    module_mod.register_module_forward_pre_hook = lambda hook: None
    optimizer_mod = types.ModuleType("torch.optim.optimizer")
    optimizer_mod.register_optimizer_step_pre_hook = step_hooks["pre"].append
    optimizer_mod.register_optimizer_step_post_hook = step_hooks["post"].append
    autograd = types.ModuleType("torch.autograd")
    autograd.backward = autograd_backward
    torch._C = CudaBindings("torch._C")
    sys.modules.update({"torch": torch, "torch.nn.modules.module": module_mod,
                        "torch.optim.optimizer": optimizer_mod, "torch.autograd": autograd,
                        "torch._C": torch._C})
    trees = types.ModuleType("torch._inductor.cudagraph_trees")
    sys.modules["torch._inductor.cudagraph_trees"] = trees
    exec(CUDAGRAPH_TREES, trees.__dict__)


class Linear(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(4 * MiB)

    def forward(self, x):
        scratch = Tensor(1 * MiB)
        del scratch
        if self is failing["module"]:
            p = ctypes.c_void_p()
            status = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(64 << 30))
            report_block(PYTORCH, OOM, 0, 0, 64 << 30, 0)  # as PyTorch's tracker reports it
            raise MemoryError(f"CUDA out of memory (cudaMalloc: {status})")
        kept = Tensor(8 * MiB)
        tape.append(kept)
        return kept


failing = {"module": None}  # the layer whose forward runs out of memory


class Net(Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear()
        self.fc2 = Linear()

    def forward(self, x):
        return self.fc2(self.fc1(x))


class Cache:
    """transformers.cache_utils.Cache: the hooks know a key-value cache by this base class."""


Cache.__module__ = "transformers.cache_utils"


class DynamicLayer:
    def __init__(self):
        self.keys = None
        self.values = None


class DynamicCache(Cache):
    """Grows by concatenation, as transformers' DynamicCache does: each update makes the
    layer's keys and values anew, one token longer, and frees the old ones."""

    def __init__(self, layers):
        self.layers = [DynamicLayer() for _ in range(layers)]

    def update(self, layer_idx, tokens):
        layer = self.layers[layer_idx]
        for kind in ("keys", "values"):
            old = getattr(layer, kind)
            length = (old.shape[2] if old is not None else 0) + tokens
            setattr(layer, kind, kv_tensor(length))
            del old


class StaticCache(Cache):
    """Preallocated, as transformers' StaticCache is: each layer's keys and values made at their
    full capacity by the first update, then written in place, beside the count of tokens the
    layer has written (StaticLayer's cumulative_length: an int64 on the device)."""

    def __init__(self, layers, capacity):
        self.layers = [DynamicLayer() for _ in range(layers)]
        self.capacity = capacity

    def update(self, layer_idx, tokens):
        layer = self.layers[layer_idx]
        if layer.keys is None:
            layer.keys = kv_tensor(self.capacity)
            layer.values = kv_tensor(self.capacity)
            layer.cumulative_length = Tensor(8, (), 8)


class Positions(Tensor):
    """generate()'s cache_position: the positions this forward writes (the hooks read its length
    alone, never its values, which are on the device)."""

    is_cuda = False

    def __init__(self, tokens):
        self.shape = (tokens,)
        self.nbytes = 0

    def __del__(self):
        pass


KV_BATCH, KV_HEADS, KV_HEAD_DIM, KV_ELEMENT = 2, 2, 64, 2  # bf16: 2 bytes


def kv_tensor(tokens):
    shape = (KV_BATCH, KV_HEADS, tokens, KV_HEAD_DIM)
    return Tensor(KV_BATCH * KV_HEADS * tokens * KV_HEAD_DIM * KV_ELEMENT, shape, KV_ELEMENT)


class Output(dict):
    """A ModelOutput: a dict whose items are attributes too."""

    __getattr__ = dict.__getitem__


class Attention(Module):
    """An attention layer of a decoder: with a cache given, it appends its keys and values to
    it; without, it keeps them itself (`kept` mode), as a hand-written decoder does."""

    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.weight = Parameter(4 * MiB)
        self.keys = None

    def forward(self, tokens, cache):
        scratch = Tensor(1 * MiB)
        del scratch
        if cache is not None:
            cache.update(self.layer_idx, tokens)
        else:
            length = (self.keys.shape[2] if self.keys is not None else 0) + tokens
            self.keys = kv_tensor(length)


class Decoder(Module):
    def __init__(self):
        super().__init__()
        self.l0 = Attention(0)
        self.l1 = Attention(1)

    def forward(self, input_ids, tokens, past_key_values=None, cache_position=None):
        self.l0(tokens, past_key_values)
        self.l1(tokens, past_key_values)
        logits = Tensor(1 * MiB)
        return Output(logits=logits, past_key_values=past_key_values)


def generate(cache, prompt, new_tokens):
    """A prompt, then one token at a time under no_grad, as generate() does; the last step's
    logits kept at the end. A static cache is given the positions each forward writes."""
    decoder = Decoder()
    input_ids = Tensor(1 * MiB)
    out = None
    with sys.modules["torch"].no_grad():
        for step in range(new_tokens + 1):
            out = None  # the last step's logits go before the next forward, as generate() does
            tokens = prompt if step == 0 else 1
            positions = {"cache_position": Positions(tokens)} if isinstance(cache, StaticCache) else {}
            out = decoder(input_ids, tokens, past_key_values=cache, **positions)
    return decoder, cache, input_ids, out


stand_in_torch()
with open(sys.argv[2]) as source:
    hooks = types.ModuleType("_gpumemtrace_roles")
    exec(compile(source.read(), sys.argv[2], "exec"), hooks.__dict__)

class Coder(Net):
    """Another model, whose layers are enc and dec (the engine recomputes dec)."""

    def __init__(self):
        Module.__init__(self)
        self.enc = Linear()
        self.dec = Linear()

    @property
    def fc2(self):
        return self.dec

    def forward(self, x):
        return self.dec(self.enc(x))


def train(input_sizes):
    """A step per input size, of the global model and optimizer."""
    for size in input_sizes:
        x = Tensor(size)
        model(x)  # its output is what its second layer kept for backward
        loss = Tensor(1 * MiB)
        loss.backward()
        optimizer.step()
        del x, loss


model = Net()
optimizer = Optimizer(model.parameters())
mode = sys.argv[3] if len(sys.argv) > 3 else ""
if mode in ("decode", "decode-kept", "decode-static", "decode-static-compiled"):
    # Inference instead of training: a two-layer decoder, a prompt of 1024 tokens then 3 more,
    # its cache grown by concatenation, kept by the modules, or preallocated for 2048 tokens.
    del model, optimizer
    caches = {"decode": lambda: DynamicCache(2), "decode-kept": lambda: None,
              "decode-static": lambda: StaticCache(2, 2048),
              "decode-static-compiled": lambda: StaticCache(2, 2048)}
    if mode == "decode-static-compiled":
        # As generate() does for a static cache: its decode step compiled (here a no-op).
        sys.modules["torch"].compile(lambda: None, mode="reduce-overhead")
    kept = generate(caches[mode](), 1024, 3)
    print("decoded")
    sys.exit(0)
if mode.startswith("oom"):
    # The model's first forward fails, as a batch too large fails at once.
    failing["module"] = model.fc2
    x = Tensor(2 * MiB)
    try:
        if mode == "oom-no-grad":
            with sys.modules["torch"].no_grad():
                model(x)
        else:
            model(x)
    except MemoryError as error:
        print(f"failed: {error}")
    tape.clear()
    del x
else:
    train([2 * MiB] * 4 + [3 * MiB])
if mode in ("graph", "graph-pool"):
    # Then the forward captured in a CUDA graph, its outputs kept for replays: what it made is
    # the graph's (fc1's and fc2's 8 MiB); its static input, made before, is an input.
    static_in = Tensor(2 * MiB)
    with sys.modules["torch"].cuda.graph(object()):
        if mode == "graph-pool":
            shared_pool, allocator = allocator, Allocator(32 * MiB)
        model(static_in)
    if mode == "graph-pool":
        allocator = shared_pool
if mode == "graph-warmup":
    # CUDA graph trees' warm-up: the forward run in the graphs' pool, outside any capture.
    static_in = Tensor(2 * MiB)
    trees = sys.modules["torch._inductor.cudagraph_trees"]
    with trees._use_cuda_memory_pool_manager(0, (0, 1), None):
        # A user's pool begun and ended inside it: its end ends none of the graphs' pool.
        torch_c = sys.modules["torch"]._C
        torch_c._cuda_beginAllocateCurrentThreadToPool(0, (2, 0))
        torch_c._cuda_endAllocateToPool(0, (2, 0))
        shared_pool, allocator = allocator, Allocator(32 * MiB)
        model(static_in)
        allocator = shared_pool
    tape.clear()
    # A user's memory pool, through the same bindings: not a graph's.
    torch_c = sys.modules["torch"]._C
    torch_c._cuda_beginAllocateCurrentThreadToPool(0, (1, 0))
    shared_pool, allocator = allocator, Allocator(16 * MiB)
    scratch = Tensor(4 * MiB)
    del scratch
    allocator = shared_pool
    torch_c._cuda_endAllocateToPool(0, (1, 0))
    print(f"pool_calls={pool_calls}")
print(f"modules={','.join(name for name, _ in model.named_modules() if name)}")
if len(sys.argv) > 3 and sys.argv[3] == "delete":
    # Then the program lets go of its model and optimizer, as one that trains several models in
    # turn does: their parameters, gradients and state are freed, whatever the hooks saw of them.
    import gc
    import weakref

    weights = [weakref.ref(p) for p in model.parameters()]
    del model, optimizer
    gc.collect()
    print(f"parameters_alive={sum(w() is not None for w in weights)}")
    # The next model, two steps: the second holds the most of the whole run (53 MiB: its input
    # is 4 MiB), when every block is this model's, its modules named enc and dec.
    model = Coder()
    optimizer = Optimizer(model.parameters())
    train([2 * MiB, 4 * MiB])
    print(f"modules={','.join(name for name, _ in model.named_modules() if name)}")
