# SPDX-License-Identifier: Apache-2.0
"""The notebook kernel of `python -m gpumemtrace install-kernel`, started by jupyter_client from
the spec under PREFIX (wheel_test.sh): `%load_ext gpumemtrace`, then a `%%gpumemtrace` cell that
keeps 3 MiB and frees 5 MiB on the simulated GPU through one helper (line 5 makes both: their
callers, lines 7 and 8, tell them apart), and `%gpumemtrace top`. Prints each cell's
output, for the test to compare. With `untraced`, in a plain kernel of this Python instead (a spec
it writes under PREFIX): a `%%gpumemtrace` cell runs all the same, and defines what it defines.
Usage: python kernel_cells.py PREFIX [untraced]"""
import json
import os
import sys

from jupyter_client.manager import start_new_kernel

os.environ["JUPYTER_PATH"] = os.path.join(sys.argv[1], "share", "jupyter")
CELLS = [
    "%load_ext gpumemtrace",
    "%%gpumemtrace\n"
    "import ctypes\n"
    "cudart = ctypes.CDLL('libcudart.so.13')\n"
    "def allocate(size):\n"
    "    pointer = ctypes.c_void_p()\n"
    "    assert cudart.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(size)) == 0\n"
    "    return pointer\n"
    "kept = allocate(3 << 20)\n"
    "temporary = allocate(5 << 20)\n"
    "assert cudart.cudaFree(temporary) == 0\n",
    "%gpumemtrace top",
]


def run(client, code):
    text = []

    def keep(message):
        if message["msg_type"] == "stream":
            text.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            text.append("\n".join(message["content"]["traceback"]))

    reply = client.execute_interactive(code, output_hook=keep, timeout=60)
    return reply["content"]["status"], "".join(text)


kernel = "gpumemtrace"
if sys.argv[2:] == ["untraced"]:
    kernel = "plain-python"
    spec_dir = os.path.join(sys.argv[1], "share", "jupyter", "kernels", kernel)
    os.makedirs(spec_dir, exist_ok=True)
    with open(os.path.join(spec_dir, "kernel.json"), "w") as spec:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "plain", "language": "python"}, spec)
    CELLS = ["%load_ext gpumemtrace", "%%gpumemtrace\nanswer = 41 + 1\n", "print(answer)"]

manager, client = start_new_kernel(kernel_name=kernel, startup_timeout=60)
try:
    for cell in CELLS:
        status, output = run(client, cell)
        print(f"--- {cell.splitlines()[0]} ({status})")
        print(output, end="" if output.endswith("\n") or not output else "\n")
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=False)
