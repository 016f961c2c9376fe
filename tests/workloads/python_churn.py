# SPDX-License-Identifier: Apache-2.0
"""Allocations from many Python functions, each made with exec, called twice and dropped: past
the first walks (which read the frames through the checked path) and through the frames each
thread keeps, including code objects made at the address of one dropped before. Function
`made_I` allocates (2 * I + 1) KiB, then (2 * I + 2) KiB, from line `I % 5 + 2` of its source
`churn_I.py`.

Usage: python3 python_churn.py PATH_TO_LIBCUDART [PyDLL|CDLL] FUNCTIONS
"""
import sys

from cudart_loader import allocator

allocate = allocator(sys.argv[1], sys.argv[2])
KiB = 1 << 10


for i in range(int(sys.argv[3])):
    source = f"def made_{i}(n):\n" + "    pass\n" * (i % 5) + "    allocate(n)\n"
    scope = {"allocate": allocate}
    exec(compile(source, f"churn_{i}.py", "exec"), scope)
    scope[f"made_{i}"]((2 * i + 1) * KiB)
    scope[f"made_{i}"]((2 * i + 2) * KiB)
    del scope
