# SPDX-License-Identifier: Apache-2.0
"""A JAX program that keeps one array (256 MiB, made by keep()) and makes and drops eight
temporary ones. For scripts/gpu-validate.sh, run under XLA's default allocator (its pool hides
the arrays: the reports note it) and under `run --jax-allocator=platform` (each array its own
allocation: the kept one at keep()'s line). Prints keep_line=N and keep_bytes=N.

Usage: python3 jax_kept_array.py
"""
import inspect

import jax.numpy as jnp

MiB = 1024 * 1024


def keep():
    print(f"keep_line={inspect.currentframe().f_lineno + 1}")
    return jnp.ones((64 * MiB,), dtype=jnp.float32)


def main():
    kept = keep()
    kept.block_until_ready()
    for i in range(8):
        temporary = jnp.full((16 * MiB,), i, dtype=jnp.float32)
        temporary.block_until_ready()
        del temporary
    print(f"keep_bytes={kept.nbytes}")


if __name__ == "__main__":
    main()
