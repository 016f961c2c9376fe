# SPDX-License-Identifier: Apache-2.0
"""Builds interpose/frameworks/torch_trace_shim.cpp against the torch that runs, the way the
preload library does, and checks it without the preload: attaching before the CUDA allocator is
initialized answers 0, after it 1, and block events then arrive (counted by a stand-in for
gpumemtrace_framework_block) and add up to torch.cuda.memory_allocated().

Usage: python3 tests/gpu/torch_tracker_probe.py WORKDIR
"""
import ctypes
import os
import subprocess
import sys

import torch

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
torch_root = os.path.dirname(torch.__file__)
counter_src = os.path.join(work, "counter.c")
with open(counter_src, "w") as f:
    f.write("""
#include <stdint.h>
long long counts[8]; long long live_bytes; int last_device;
void gpumemtrace_framework_block(uint32_t allocator, uint32_t action, int32_t device,
                                 uint64_t address, uint64_t size, uint64_t stream) {
  (void)allocator; (void)address; (void)stream;
  if (action < 8) counts[action]++;
  if (action == 0) live_bytes += (long long)size;
  if (action == 2) live_bytes -= (long long)size;
  last_device = device;
}
""")
counter = os.path.join(work, "libcounter.so")
subprocess.check_call(["cc", "-shared", "-fPIC", counter_src, "-o", counter])
lib = ctypes.CDLL(counter, mode=ctypes.RTLD_GLOBAL)

abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
cuda_inc = next(d for d in [os.environ.get("CUDA_HOME", "") + "/include", "/usr/local/cuda/include"]
                if os.path.exists(d + "/cuda_runtime_api.h"))
shim = os.path.join(work, "shim.so")
cmd = ["c++", "-shared", "-fPIC", "-O2", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
       f"-I{torch_root}/include", f"-I{torch_root}/include/torch/csrc/api/include", f"-I{cuda_inc}",
       os.path.join(repo, "interpose/frameworks/torch_trace_shim.cpp"), "-o", shim,
       f"-L{torch_root}/lib", "-lc10_cuda", "-lc10", f"-Wl,-rpath,{torch_root}/lib"]
print("build:", " ".join(cmd), flush=True)
subprocess.check_call(cmd)
s = ctypes.CDLL(shim)
s.gpumemtrace_torch_backend.restype = ctypes.c_char_p
before = s.gpumemtrace_torch_attach()
print("attach before CUDA init:", before, "backend:", s.gpumemtrace_torch_backend())
torch.cuda.init()
after = s.gpumemtrace_torch_attach()
print("attach after CUDA init:", after)
xs = [torch.empty(1 << 20, device="cuda") for _ in range(5)]
del xs[1]
torch.cuda.synchronize()
counts = (ctypes.c_longlong * 8).in_dll(lib, "counts")
live = ctypes.c_longlong.in_dll(lib, "live_bytes").value
print("events:", list(counts))
print("live blocks bytes:", live, "torch.cuda.memory_allocated():", torch.cuda.memory_allocated())
ok = before in (0, 1) and after == 1 and counts[0] == 5 and live == torch.cuda.memory_allocated()
print("PASS" if ok else "FAIL", "torch tracker probe")
sys.exit(0 if ok else 1)
