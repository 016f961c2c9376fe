# SPDX-License-Identifier: Apache-2.0
"""Roles and modules of a traced PyTorch program's memory, with no change to the program.

libgpumemtrace.so runs this file inside the traced process, once PyTorch's CUDA caching
allocator is in use (its trace tracker attached), as a pending call of the interpreter: on the
main thread, with the GIL held, between two bytecodes, in a module of its own
(`_gpumemtrace_roles`). It wraps nn.Module.__call__, torch.autograd.backward and
torch.autograd.grad, installs the optimizers' global step hooks, and reports through the
library's entry points (format 4.8's Scope and Tag records):

- scopes: each root module's forward (a module called outside any other's: the model, the loss)
  by its class name; inside it, each module's forward by its qualified name (`layer3.2.conv1`, as
  the root's `named_modules()` gives it) in the root's first three forwards and one in sixteen
  after (the others in outline); backward(); each optimizer's step(); each CUDA graph's capture
  (torch.cuda.graph, which torch.compile's CUDA graphs use too), and CUDA graph trees' other
  allocations in the graphs' pool (the warm-up, the recording's inputs); the program's end
  (atexit);
  inside a root forward that autograd does not record (no_grad, inference_mode), a no-grad scope;
- tags: a model's parameters and buffers in its forwards reported whole (when they moved), the
  gradients after each backward (or before a step), the optimizer's state after each step when it
  changed.

The analyzer infers the rest (activations, temporaries, inputs) from these scopes and the
blocks' lifetimes. Nothing here touches CUDA or takes a lock of PyTorch's. Inside a region that
torch.compile traces, the hooks do nothing (a call into the library there would break the graph).
Every failure ends in a note in the trace, never in the program. GPUMEMTRACE_ROLES=0 turns it off.
"""


def _install():
    import array
    import ctypes
    import sys
    import threading
    import weakref

    lib = ctypes.CDLL(None)
    note_fn = lib.gpumemtrace_framework_note
    note_fn.argtypes = [ctypes.c_char_p]
    note_fn.restype = None

    def note(text):
        note_fn(text.encode("utf-8", "replace"))

    torch = sys.modules.get("torch")
    module_mod = sys.modules.get("torch.nn.modules.module")
    if torch is None or module_mod is None or not hasattr(
        module_mod, "register_module_forward_pre_hook"
    ):
        note("pytorch roles and modules unavailable: torch.nn is not loaded, or has no global hooks")
        return

    name_fn = lib.gpumemtrace_framework_name
    name_fn.argtypes = [ctypes.c_char_p]
    name_fn.restype = ctypes.c_uint32
    scope = lib.gpumemtrace_framework_scope
    scope.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
    scope.restype = None
    tags_fn = lib.gpumemtrace_framework_tags
    tags_fn.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
    tags_fn.restype = None

    # format/records.h: ScopeAction, ScopeKind, TagRole.
    ENTER, EXIT, ENTER_OUTLINE = 0, 1, 2
    MODULE, BACKWARD, OPTIMIZER, PROGRAM_END, CUDA_GRAPH, NO_GRAD, KV_CACHE_LENGTH = range(7)
    PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE, KV_CACHE, OUTPUT = range(6)

    compiler = getattr(torch, "compiler", None)
    compiling = getattr(compiler, "is_compiling", None)
    if compiling is None:
        dynamo = getattr(torch, "_dynamo", None)
        compiling = getattr(dynamo, "is_compiling", None) or (lambda: False)

    def name_id(text):
        return name_fn(text.encode("utf-8", "replace"))

    # Whether autograd records (False under no_grad and inference_mode): what a forward running at
    # a failure made is then activations, else temporaries. One C call per root forward.
    grad_enabled = getattr(torch, "is_grad_enabled", None) or (lambda: True)

    def emit_arrays(role, addresses, names):
        """Tags each address with its name id (arrays of "Q" and "I"), one role, in one call: the
        arrays, named here, live until the call returns."""
        tags_fn(role, len(names), addresses.buffer_info()[0], names.buffer_info()[0])

    def emit(role, pairs):
        """Tags (address, name id) pairs with one role, in one call."""
        if pairs:
            emit_arrays(role, array.array("Q", [a for a, _ in pairs]),
                        array.array("I", [n for _, n in pairs]))

    # What the hooks know of the program's objects is keyed by id(), a weak reference beside it:
    # they keep nothing alive, and an object that takes a freed one's id inherits nothing of it.
    def recalled(table, obj):
        entry = table.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def remember(table, obj, value):
        table[id(obj)] = (weakref.ref(obj), value)

    modules = {}  # module -> name id
    tensor_names = {}  # parameter or buffer -> qualified name
    roots = {}  # id(root) -> _Root
    local = threading.local()

    def known_name(t, qualified):
        """A tensor's name under the outermost root that named it: a module of the model called
        as a root of its own (activation checkpointing recomputes `layer1` on the autograd thread)
        keeps the model's names (`layer1.0.conv1.weight`), not its own (`0.conv1.weight`); a root
        that holds the one that named it first names it anew."""
        known = recalled(tensor_names, t)
        if known is not None and not qualified.endswith("." + known):
            return known
        remember(tensor_names, t, qualified)
        return qualified

    def address_of(t):
        return t.data_ptr() if t is not None and t.is_cuda else 0

    def block_of(t):
        """The address of the allocator's block that holds `t`: its storage's, which a view
        (a slice of a returned tuple, a preallocated cache's row) shares."""
        storage = getattr(t, "untyped_storage", None)
        return storage().data_ptr() if storage is not None else t.data_ptr()

    # A root forward's result: its CUDA tensors, tagged as outputs after each root forward (a
    # hint: a block nothing else places is an output the program kept). Only the first levels of
    # tuples, lists and dicts (a ModelOutput is one): a result is a few tensors, not a tree.
    Tensor = getattr(torch, "Tensor", None)

    def outputs_of(result, found, depth=0):
        if Tensor is not None and isinstance(result, Tensor):
            if result.is_cuda:
                found.append((block_of(result), 0))
        elif depth < 2 and isinstance(result, (tuple, list)):
            for item in result[:64]:
                outputs_of(item, found, depth + 1)
        elif depth < 2 and isinstance(result, dict):
            for item in list(result.values())[:64]:
                if not is_cache(item):
                    outputs_of(item, found, depth + 1)

    # Hugging Face transformers' key-value caches (DynamicCache, StaticCache...): a Cache object
    # the model was given (past_key_values) or returned. Its keys and values are tagged after
    # each root forward that used it, each by the attention module of its layer.
    def is_cache(obj):
        if obj is None or isinstance(obj, (Tensor or (), tuple, list, dict)):
            return False
        return any(
            c.__name__ == "Cache" and c.__module__.startswith("transformers")
            for c in type(obj).__mro__
        )

    def cache_of(args, kwargs, result):
        for candidate in (
            kwargs.get("past_key_values"),
            getattr(result, "past_key_values", None) if not isinstance(result, tuple) else None,
        ):
            if is_cache(candidate):
                return candidate
        return None

    def cache_layers(cache):
        """(keys, values) of each layer of a Cache, those it has made so far: transformers 5's
        `layers` (each with .keys and .values), or the older key_cache and value_cache lists."""
        layers = getattr(cache, "layers", None)
        if layers is not None:
            return [(getattr(l, "keys", None), getattr(l, "values", None)) for l in layers]
        keys = getattr(cache, "key_cache", None) or []
        values = getattr(cache, "value_cache", None) or []
        return list(zip(keys, values))

    def cache_layer_state(cache):
        """(layer index, name, tensor) of what else each layer of a transformers 5 Cache keeps on
        the device beside its keys and values: a StaticLayer's `cumulative_length`, the tokens it
        has written (one small tensor a layer)."""
        for index, layer in enumerate(getattr(cache, "layers", None) or []):
            for name, t in getattr(layer, "__dict__", {}).items():
                if name not in ("keys", "values") and isinstance(t, Tensor) and t.is_cuda:
                    yield index, name, t

    def attention_modules(root):
        """The module of each layer index (`layer_idx`, as transformers' attention modules keep
        it), the innermost one where several have it."""
        found = {}
        for qualified, m in root.named_modules():
            index = getattr(m, "layer_idx", None)
            if isinstance(index, int) and qualified:
                if index not in found or len(qualified) > len(found[index]):
                    found[index] = qualified
        return found

    def forward_tokens(args, kwargs):
        """The tokens a forward writes into its cache, from shapes alone (a tensor's values are
        on the device: reading one would wait for it): generate()'s cache_position, else the
        input ids' or embeddings' length; None when neither is given."""
        if Tensor is None:
            return None
        position = kwargs.get("cache_position")
        if isinstance(position, Tensor) and position.dim() == 1:
            return position.shape[0]
        ids = kwargs.get("input_ids", args[0] if args else None)
        if isinstance(ids, Tensor) and ids.dim() == 2:
            return ids.shape[-1]
        embeds = kwargs.get("inputs_embeds")
        if isinstance(embeds, Tensor) and embeds.dim() == 3:
            return embeds.shape[-2]
        return None

    # By preallocated cache (id): [weak reference, tokens written so far, the last forward's].
    # A forward of several tokens after one of a single token starts a new sequence (a prompt
    # after decoding: generate() resets a cache it reuses). Where torch.compile was asked for,
    # forwards may run compiled, past this wrapper (generate() compiles its decode step for a
    # static cache): their tokens cannot be counted, so none are (None: not known).
    filled = {}
    compiled = [False]
    original_compile = getattr(torch, "compile", None)
    if callable(original_compile):

        def compile_and_note(*args, **kwargs):
            compiled[0] = True
            return original_compile(*args, **kwargs)

        compile_and_note.__wrapped__ = original_compile
        compile_and_note.__doc__ = getattr(original_compile, "__doc__", None)
        torch.compile = compile_and_note

    def fill(cache, tokens, root_module):
        if compiled[0] or type(root_module).__name__ == "OptimizedModule":
            return None
        entry = filled.get(id(cache))
        if entry is None or entry[0]() is not cache:
            entry = filled[id(cache)] = [weakref.ref(cache), 0, 0]
        if tokens is None:
            entry[1] = None
        elif entry[1] is not None:
            entry[1] = tokens if tokens > 1 and entry[2] == 1 else entry[1] + tokens
        entry[2] = tokens
        return entry[1]

    def tag_cache(root, cache, tokens_written):
        """Tags a cache's keys and values with the module of their layer, and reports its length:
        the sequences, the tokens each holds, the capacity of a preallocated one and the bytes one
        more token takes per sequence."""
        growing = not type(cache).__name__.startswith(("Static", "Offloaded", "Hybrid", "Sliding"))
        written = None if growing else fill(cache, tokens_written, root.ref())
        if root.layer_modules is None:
            root.layer_modules = attention_modules(root.ref())
        # Tagged after every forward of a decode loop (a growing cache's tensors are new blocks
        # each token): the names are looked up once, by layer.
        names = root.cache_names

        def name_of(index, kind):
            name = names.get((index, kind))
            if name is None:
                module = root.layer_modules.get(index, "layers.%d" % index)
                name = names[(index, kind)] = name_id(module + "." + kind)
            return name

        addresses = []
        ids = []
        per_token = 0
        first = None
        for index, (keys, values) in enumerate(cache_layers(cache)):
            for kind, t in (("keys", keys), ("values", values)):
                if Tensor is None or not isinstance(t, Tensor) or not t.is_cuda:
                    continue
                shape = t.shape
                if len(shape) < 2:
                    continue
                if first is None:
                    first = t
                size = t.element_size()
                # (batch, heads, tokens, head dim): one token of one sequence is all but two
                # of the dimensions.
                per_token += size * (t.numel() // max(1, shape[0] * shape[-2]))
                # The block's address as block_of() gives it, without a storage object made.
                addresses.append(t.data_ptr() - t.storage_offset() * size)
                ids.append(name_of(index, kind))
        if not addresses:
            return
        layers = len(addresses) // 2
        for index, name, t in cache_layer_state(cache):
            addresses.append(block_of(t))
            ids.append(name_of(index, name))
        emit_arrays(KV_CACHE, array.array("Q", addresses), array.array("I", ids))
        # A cache that grows holds as many tokens as its tensors are long. A preallocated one
        # (StaticCache) is as long as its capacity; how much of it is filled the device knows
        # (get_seq_length() reads it back, a synchronisation per forward), so the tokens its
        # forwards wrote are counted instead; unsaid (0) where a forward's count is not known.
        capacity = 0 if growing else first.shape[-2]
        tokens = first.shape[-2] if growing else min(capacity, written or 0)
        text = "batch=%d tokens=%d capacity=%d bytes_per_token=%d layers=%d" % (
            first.shape[0], tokens, capacity, per_token, layers)
        scope(ENTER, KV_CACHE_LENGTH, name_id(text))

    class _Root:
        __slots__ = ("ref", "tensors", "last", "forwards", "layer_modules", "cache_names")

        def __init__(self, root):
            self.ref = weakref.ref(root)
            # Weak references: a model the program lets go of is freed, parameters and all,
            # whatever the hooks saw of it.
            self.tensors = []  # (weak reference to the tensor, role, name id)
            named = ((PARAMETER, root.named_parameters()), (BUFFER, root.named_buffers()))
            for role, tensors in named:
                for qualified, t in tensors:
                    self.tensors.append((weakref.ref(t), role, name_id(known_name(t, qualified))))
            self.last = None
            self.forwards = 0
            self.layer_modules = None  # layer index -> attention module, once a cache is seen
            self.cache_names = {}  # (layer index, what) -> name id of the cache's tensors

        def live(self, role):
            for ref, r, _ in self.tensors:
                t = ref()
                if r == role and t is not None:
                    yield t

        def tag(self):
            # A root's tensors move only with .to()/.cuda(): compare addresses, tag on change.
            now = [address_of(ref()) for ref, _, _ in self.tensors]
            if now == self.last:
                return
            self.last = now
            for role in (PARAMETER, BUFFER):
                emit(role, [(a, n) for a, (_, r, n) in zip(now, self.tensors) if r == role and a])

    def adopt(root):
        """Names a root module and everything under it, as named_modules() does."""
        for qualified, m in root.named_modules():
            if recalled(modules, m) is None:
                remember(modules, m, name_id(qualified or type(root).__name__))
        roots[id(root)] = _Root(root)

    def module_name(m):
        known = recalled(modules, m)
        if known is None:
            adopt(m)
            known = recalled(modules, m)
        return known

    failed = []

    def fail(error):
        if not failed:
            failed.append(error)
            note("pytorch roles and modules: a hook failed, roles may be incomplete: %r" % (error,))

    def guarded(hook):
        """A hook that never raises into the program: its first failure becomes a note."""

        def run(*args):
            try:
                return hook(*args)
            except Exception as error:  # the program's forward must go on whatever we hit
                fail(error)
                return None

        return run

    Module = module_mod.Module
    original_call = Module.__call__
    # Root forwards reported whole (every module a scope): each root's first ones, then one in
    # WHOLE_EVERY. The others are reported in outline (the root's scope alone): the analyzer gives
    # their blocks the modules that made the same blocks in the last whole one. A module call
    # costs a Python call and two dictionary reads in an outline forward, against two calls into
    # the library in a whole one.
    WHOLE_FIRST, WHOLE_EVERY = 3, 16

    def entered(m):
        """Opens an inner module's scope; False when naming it failed (then no scope)."""
        try:
            scope(ENTER, MODULE, module_name(m))
            return True
        except Exception as error:
            fail(error)
            return False

    def call(self, *args, **kwargs):
        if compiling():  # first: dynamo traces through here, and nothing else must be seen
            return original_call(self, *args, **kwargs)
        # The forward this thread runs: absent outside any (this call is a root), False in an
        # outline one, True in a whole one. An outline forward's module calls, nearly all of a
        # decode loop's, cost this function's call and one dictionary read.
        whole = local.__dict__.get("whole")
        if whole is None:
            return root_call(self, local.__dict__, args, kwargs)
        opened = whole and entered(self)
        # One line calls the module in whole and outline forwards alike: the analyzer tells an
        # outline forward's blocks by their stacks, which hold this frame's line.
        try:
            return original_call(self, *args, **kwargs)
        finally:
            if opened:
                scope(EXIT, MODULE, 0)

    def root_call(m, state, args, kwargs):
        try:
            root = roots.get(id(m))
            if root is None or root.ref() is not m:
                adopt(m)
                root = roots[id(m)]
            n = root.forwards
            root.forwards = n + 1
            whole = n < WHOLE_FIRST or n % WHOLE_EVERY == 0
            if whole:
                root.tag()
            scope(ENTER if whole else ENTER_OUTLINE, MODULE, module_name(m))
        except Exception as error:
            fail(error)
            return original_call(m, *args, **kwargs)
        no_grad = not grad_enabled()
        if no_grad:
            scope(ENTER, NO_GRAD, 0)
        state["whole"] = whole
        try:
            result = original_call(m, *args, **kwargs)
        finally:
            del state["whole"]
            if no_grad:
                scope(EXIT, NO_GRAD, 0)
            scope(EXIT, MODULE, 0)
        try:
            kept = []
            outputs_of(result, kept)
            emit(OUTPUT, kept)
            cache = cache_of(args, kwargs, result)
            if cache is not None:
                tag_cache(root, cache, forward_tokens(args, kwargs))
        except Exception as error:
            fail(error)
        return result

    def tensor_name(p, suffix=""):
        known = recalled(tensor_names, p)
        return 0 if known is None else name_id(known + suffix)

    gradient_names = {}  # parameter -> name id of its gradient, for the tags of every step
    last_state = {}  # optimizer -> the state's addresses when last tagged

    def tag_gradients(parameters):
        """Tags the parameters' .grad. Gradients are new blocks whenever zero_grad() set them to
        None: tagged after every backward and before every step."""
        pairs = []
        for p in parameters:
            g = p.grad
            if g is None or not g.is_cuda:
                continue
            n = recalled(gradient_names, p)
            if n is None:
                n = tensor_name(p)
                if n:
                    remember(gradient_names, p, n)
            pairs.append((g.data_ptr(), n))
        emit(GRADIENT, pairs)

    def model_parameters():
        for key, root in list(roots.items()):
            if root.ref() is None:  # the program let go of this model
                if roots.get(key) is root:  # not a new root of the same id, adopted meanwhile
                    roots.pop(key, None)
                continue
            yield from root.live(PARAMETER)

    tagged_since_step = [False]

    def step_pre(optimizer, args, kwargs):
        scope(ENTER, OPTIMIZER, name_id(type(optimizer).__name__))
        # Tagged after backward already, unless they came another way (torch.autograd.grad).
        if not tagged_since_step[0]:
            tag_gradients(p for group in optimizer.param_groups for p in group["params"])
        tagged_since_step[0] = False

    def step_post(optimizer, args, kwargs):
        pairs = []
        for p, state in optimizer.state.items():
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and value.is_cuda:
                    pairs.append((value.data_ptr(), p, key))
        addresses = [a for a, _, _ in pairs]
        if recalled(last_state, optimizer) != addresses:
            remember(last_state, optimizer, addresses)
            emit(OPTIMIZER_STATE, [(a, tensor_name(p, "." + key)) for a, p, key in pairs])
        scope(EXIT, OPTIMIZER, 0)

    backward_name = name_id("backward")

    def scoped_backward(function):
        def backward(*args, **kwargs):
            if compiling():
                return function(*args, **kwargs)
            scope(ENTER, BACKWARD, backward_name)
            try:
                return function(*args, **kwargs)
            finally:
                try:
                    tag_gradients(model_parameters())
                    tagged_since_step[0] = True
                except Exception as error:  # never the program's problem
                    fail(error)
                scope(EXIT, BACKWARD, 0)

        backward.__wrapped__ = function
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(backward, attribute, getattr(function, attribute, None))
        return backward

    # A CUDA graph's capture: what it allocates stays in the graph's private pool for its replays.
    # The scope opens once the capture has begun (after the synchronize and empty_cache that
    # precede it) and closes once it has ended.
    def wrap_graph_capture(graph):
        if not isinstance(graph, type) or hasattr(graph.__enter__, "__wrapped__"):
            return
        capture_name = name_id("cuda graph capture")
        original_enter, original_exit = graph.__enter__, graph.__exit__

        def enter(self):
            result = original_enter(self)
            scope(ENTER, CUDA_GRAPH, capture_name)
            return result

        def exit_(self, *exc_info):
            try:
                return original_exit(self, *exc_info)
            finally:
                scope(EXIT, CUDA_GRAPH, 0)

        enter.__wrapped__ = original_enter
        exit_.__wrapped__ = original_exit
        graph.__enter__ = enter
        graph.__exit__ = exit_

    # CUDA graph trees (torch.compile's "reduce-overhead") also allocate in their graphs' private
    # pool outside any capture: the warm-up run and the recording's inputs, inside
    # torch._inductor.cudagraph_trees._use_cuda_memory_pool_manager, which turns the pool on
    # through these functions of torch._C. Those are wrapped rather than the manager (its module
    # is imported only when a compiled graph first runs), and only the calls made from
    # torch._inductor open the scope: a user's torch.cuda.MemPool goes through the same functions
    # and is not a graph's.
    def wrap_graph_pool_allocation(c_module):
        if c_module is None:
            return
        pool_name = name_id("cuda graph pool allocation")
        # Per thread, each begin not yet ended, and whether it opened a scope: an end closes only
        # what its own begin opened (nested pools, or a pool ended by other code).
        begun = {}

        def wrap_begin(original):
            def begin(*args, **kwargs):
                result = original(*args, **kwargs)
                opened = False
                try:
                    caller = sys._getframe(1).f_globals.get("__name__") or ""
                    opened = caller.startswith("torch._inductor.")
                    if opened:
                        scope(ENTER, CUDA_GRAPH, pool_name)
                except Exception as error:  # never the program's problem
                    fail(error)
                begun.setdefault(threading.get_ident(), []).append(opened)
                return result

            return begin

        def wrap_end(original):
            def end(*args, **kwargs):
                try:
                    return original(*args, **kwargs)
                finally:
                    stack = begun.get(threading.get_ident())
                    if stack and stack.pop():
                        scope(EXIT, CUDA_GRAPH, 0)

            return end

        # The names differ between PyTorch versions.
        for names, wrap in (
            (("_cuda_beginAllocateCurrentThreadToPool", "_cuda_beginAllocateCurrentStreamToPool"),
             wrap_begin),
            (("_cuda_endAllocateToPool", "_cuda_endAllocateCurrentThreadToPool",
              "_cuda_endAllocateCurrentStreamToPool"), wrap_end),
        ):
            for attribute in names:
                original = getattr(c_module, attribute, None)
                if original is None or hasattr(original, "__wrapped__"):
                    continue
                wrapped = wrap(original)
                wrapped.__wrapped__ = original
                wrapped.__name__ = attribute
                setattr(c_module, attribute, wrapped)

    # Module.__call__ rather than the global forward hooks: with any global hook registered, every
    # module call takes _call_impl's slow path (about 5 us a call on the H200, 4.5 % of a
    # ResNet-50 AMP step), whether or not the hook reports anything.
    call.__wrapped__ = original_call
    call.__name__ = getattr(original_call, "__name__", "__call__")
    call.__qualname__ = getattr(original_call, "__qualname__", "Module.__call__")
    Module.__call__ = call
    optimizer_mod = sys.modules.get("torch.optim.optimizer")
    if optimizer_mod is not None and hasattr(optimizer_mod, "register_optimizer_step_pre_hook"):
        optimizer_mod.register_optimizer_step_pre_hook(guarded(step_pre))
        optimizer_mod.register_optimizer_step_post_hook(guarded(step_post))
    autograd = sys.modules.get("torch.autograd")
    if autograd is not None:
        for attribute in ("backward", "grad"):
            function = getattr(autograd, attribute, None)
            if function is not None and not hasattr(function, "__wrapped__"):
                setattr(autograd, attribute, scoped_backward(function))
    wrap_graph_capture(getattr(getattr(torch, "cuda", None), "graph", None))
    wrap_graph_pool_allocation(getattr(torch, "_C", None))
    import atexit

    # What the program holds when its code is done, before the interpreter's teardown frees it:
    # the analyzer's "at exit".
    atexit.register(lambda: scope(ENTER, PROGRAM_END, name_id("program end")))
    note("pytorch roles and modules on (torch %s)" % getattr(torch, "__version__", "?"))


try:
    _install()
except Exception as error:  # never the program's problem
    try:
        import ctypes

        note = ctypes.CDLL(None).gpumemtrace_framework_note
        note.argtypes = [ctypes.c_char_p]
        note(("pytorch roles and modules unavailable: %r" % (error,)).encode("utf-8", "replace"))
    except Exception:
        pass
