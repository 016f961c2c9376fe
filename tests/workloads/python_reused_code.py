# SPDX-License-Identifier: Apache-2.0
"""Functions that each take a dropped one's place in memory: made from one code object by
replacing its name and file (`fn_I`, `file_I.py`, I in four digits), each called once and
dropped, so that CPython gives the next one's code object, name and file the very addresses of
one before it. Function I allocates (I + 1) KiB at `call_line`. Prints `call_line=N` and
`reused=N`: how many functions took all three addresses of an earlier one.

Usage: python3 python_reused_code.py PATH_TO_LIBCUDART [PyDLL|CDLL] FUNCTIONS
"""
import sys

from cudart_loader import allocator

allocate = allocator(sys.argv[1], sys.argv[2])
KiB = 1 << 10


def template(n):
    allocate(n)


print(f"call_line={template.__code__.co_firstlineno + 1}")
seen = set()
reused = 0
for i in range(int(sys.argv[3])):
    name, file = f"fn_{i:04d}", f"file_{i:04d}.py"
    names = {"co_name": name, "co_filename": file}
    if hasattr(template.__code__, "co_qualname"):  # 3.11 on
        names["co_qualname"] = name
    code = template.__code__.replace(**names)
    made = type(template)(code, globals())
    made((i + 1) * KiB)
    addresses = (id(code), id(code.co_name), id(code.co_filename))
    reused += addresses in seen
    seen.add(addresses)
    del made, code, name, file, names
print(f"reused={reused}")
