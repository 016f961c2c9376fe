# SPDX-License-Identifier: Apache-2.0
"""Roles and modules of a traced PyTorch program's memory, with no change to the program.

libgpumemtrace.so runs this file inside the traced process, once PyTorch's CUDA caching
allocator is in use (its trace tracker attached), as a pending call of the interpreter: on the
main thread, with the GIL held, between two bytecodes, in a module of its own
(`_gpumemtrace_roles`). It installs PyTorch's global hooks and reports, through the library's
entry points (format 4.8's Scope and Tag records):

- scopes: each nn.Module's forward by its qualified name (`layer3.2.conv1`, as the root's
  `named_modules()` gives it; the root by its class name), backward() (torch.autograd.backward
  and torch.autograd.grad), each optimizer's step();
- tags: a model's parameters and buffers when its forward first runs (and again when they move),
  the gradients before each optimizer step, the optimizer's state after it when it changed.

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
    ENTER, EXIT = 0, 1
    MODULE, BACKWARD, OPTIMIZER, PROGRAM_END = 0, 1, 2, 3
    PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE = 0, 1, 2, 3

    compiler = getattr(torch, "compiler", None)
    compiling = getattr(compiler, "is_compiling", None)
    if compiling is None:
        dynamo = getattr(torch, "_dynamo", None)
        compiling = getattr(dynamo, "is_compiling", None) or (lambda: False)

    def name_id(text):
        return name_fn(text.encode("utf-8", "replace"))

    def emit(role, pairs):
        """Tags (address, name id) pairs with one role, in one call."""
        if not pairs:
            return
        addresses = array.array("Q", [a for a, _ in pairs])
        names = array.array("I", [n for _, n in pairs])
        tags_fn(role, len(pairs), addresses.buffer_info()[0], names.buffer_info()[0])

    modules = {}  # id(module) -> (weakref, name id)
    tensor_names = {}  # id(parameter) -> (weakref, qualified name)
    roots = {}  # id(root) -> _Root
    local = threading.local()

    class _Root:
        __slots__ = ("ref", "tensors", "last")

        def __init__(self, root):
            self.ref = weakref.ref(root)
            self.tensors = []  # (tensor, role, name id)
            for qualified, p in root.named_parameters():
                self.tensors.append((p, PARAMETER, name_id(qualified)))
                tensor_names[id(p)] = (weakref.ref(p), qualified)
            for qualified, b in root.named_buffers():
                self.tensors.append((b, BUFFER, name_id(qualified)))
            self.last = None

        def tag(self):
            # A root's tensors move only with .to()/.cuda(): compare addresses, tag on change.
            now = [t.data_ptr() if t.is_cuda else 0 for t, _, _ in self.tensors]
            if now == self.last:
                return
            self.last = now
            for role in (PARAMETER, BUFFER):
                emit(role, [(a, n) for a, (_, r, n) in zip(now, self.tensors) if r == role and a])

    def adopt(root):
        """Names a root module and everything under it, as named_modules() does."""
        for qualified, m in root.named_modules():
            known = modules.get(id(m))
            if known is not None and known[0]() is m:
                continue
            modules[id(m)] = (weakref.ref(m), name_id(qualified or type(root).__name__))
        roots[id(root)] = _Root(root)

    def module_name(m):
        known = modules.get(id(m))
        if known is None or known[0]() is not m:
            adopt(m)
            known = modules[id(m)]
        return known[1]

    failed = []

    def guarded(hook):
        """A hook that never raises into the program: its first failure becomes a note."""

        def run(*args):
            try:
                return hook(*args)
            except Exception as error:  # the program's forward must go on whatever we hit
                if not failed:
                    failed.append(error)
                    note("pytorch roles and modules: a hook failed, roles may be incomplete: %r"
                         % (error,))
                return None

        return run

    def pre_hook(m, args):
        if compiling():
            return None
        depth = getattr(local, "depth", 0)
        if depth == 0:
            root = roots.get(id(m))
            if root is None or root.ref() is not m:
                adopt(m)
                root = roots[id(m)]
            root.tag()
        local.depth = depth + 1
        scope(ENTER, MODULE, module_name(m))
        return None

    def post_hook(m, args, output):
        if compiling():
            return None
        depth = getattr(local, "depth", 0)
        if depth > 0:
            local.depth = depth - 1
            scope(EXIT, MODULE, 0)
        return None

    def tensor_name(p, suffix=""):
        known = tensor_names.get(id(p))
        if known is None or known[0]() is not p:
            return 0
        return name_id(known[1] + suffix)

    gradient_names = {}  # id(parameter) -> name id of its gradient, for the tags of every step
    last_state = {}  # id(optimizer) -> the state's addresses when last tagged

    def tag_gradients(parameters):
        """Tags the parameters' .grad. Gradients are new blocks whenever zero_grad() set them to
        None: tagged after every backward and before every step."""
        pairs = []
        for p in parameters:
            g = p.grad
            if g is None or not g.is_cuda:
                continue
            n = gradient_names.get(id(p))
            if n is None:
                n = tensor_name(p)
                if n:
                    gradient_names[id(p)] = n
            pairs.append((g.data_ptr(), n or 0))
        emit(GRADIENT, pairs)

    def model_parameters():
        for root in list(roots.values()):
            if root.ref() is None:
                continue
            for t, role, _ in root.tensors:
                if role == PARAMETER:
                    yield t

    def step_pre(optimizer, args, kwargs):
        scope(ENTER, OPTIMIZER, name_id(type(optimizer).__name__))
        tag_gradients(p for group in optimizer.param_groups for p in group["params"])

    def step_post(optimizer, args, kwargs):
        pairs = []
        for p, state in optimizer.state.items():
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and value.is_cuda:
                    pairs.append((value.data_ptr(), p, key))
        addresses = [a for a, _, _ in pairs]
        if last_state.get(id(optimizer)) != addresses:
            last_state[id(optimizer)] = addresses
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
                except Exception:  # never the program's problem
                    pass
                scope(EXIT, BACKWARD, 0)

        backward.__wrapped__ = function
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(backward, attribute, getattr(function, attribute, None))
        return backward

    module_mod.register_module_forward_pre_hook(guarded(pre_hook))
    if _takes_always_call(module_mod.register_module_forward_hook):
        # The scope closes even when forward raises.
        module_mod.register_module_forward_hook(guarded(post_hook), always_call=True)
    else:
        module_mod.register_module_forward_hook(guarded(post_hook))
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
    import atexit

    # What the program holds when its code is done, before the interpreter's teardown frees it:
    # the analyzer's "at exit".
    atexit.register(lambda: scope(ENTER, PROGRAM_END, name_id("program end")))
    note("pytorch roles and modules on (torch %s)" % getattr(torch, "__version__", "?"))


def _takes_always_call(register):
    import inspect

    try:
        return "always_call" in inspect.signature(register).parameters
    except (TypeError, ValueError):
        return False


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
