#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns recorder_bench's JSON into the "recorder alone" table of docs/benchmarks.md.

Usage: recorder_table.py MODE BENCH_JSON [MODE BENCH_JSON ...]

MODE is the GPUMEMTRACE_STACKS value the benchmark ran under. Prints Markdown on stdout; exits 1
when a benchmark failed or a figure is missing.

Per thread count: the wall time per event as each thread sees it (threads / events per second:
on a machine with fewer cores than threads it includes waiting for a core) and the CPU time per
event (each thread's own, averaged). Medians over the repetitions. "No collapse" compares the CPU
time per event with 16 threads to one thread's: contention in the recorder (spinning on a lock,
cache lines moving between cores) costs CPU time whatever the number of cores, where waiting
for a core does not.
"""

import re
import statistics
import sys

from overhead_table import COLLAPSE_FACTOR, Failure, matching_runs

NAME = re.compile(r"^allocate_and_free/real_time/threads:(?P<threads>\d+)$")
HANDED = re.compile(r"^allocate_here_free_there/real_time/threads:(?P<threads>\d+)$")


def load(path, name=NAME):
    """{threads: ([wall ns per event per thread], [cpu ns per event])}"""
    _, matched = matching_runs(path, name, "name")
    runs = {}
    for b, m in matched:
        threads = int(m["threads"])
        wall = threads / b["items_per_second"] * 1e9
        wall_list, cpu_list = runs.setdefault(threads, ([], []))
        wall_list.append(wall)
        cpu_list.append(b["cpu_ns_per_event"])
    if not runs:
        raise Failure(f"{path}: no {name.pattern} runs")
    return runs


def rows(lines, argv, name):
    """Appends one table row per mode and thread count of the benchmark `name`."""
    for mode, path in zip(argv[0::2], argv[1::2]):
        runs = load(path, name)
        if 1 not in runs:
            raise Failure(f"{path}: no one-thread run")
        one = statistics.median(runs[1][1])
        for threads in sorted(runs):
            wall = statistics.median(runs[threads][0])
            cpu = statistics.median(runs[threads][1])
            ratio = cpu / one
            verdict = "" if threads == 1 else (
                "met" if ratio <= COLLAPSE_FACTOR else "**missed**")
            lines.append(f"| {mode} | {threads} | {wall:.0f} | {cpu:.0f} | {ratio:.2f} | "
                         f"{verdict} |")


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    lines = [
        "",
        "### The recorder alone (no driver): ns per event, 1 MiB allocate+free pairs",
        "",
        "| stacks | threads | wall ns/event per thread | CPU ns/event | CPU vs 1 thread | "
        f"no collapse (≤ {COLLAPSE_FACTOR}×) |",
        "|---|---|---|---|---|---|",
    ]
    try:
        rows(lines, argv, NAME)
        lines += [
            "",
            "### The recorder alone, each allocation freed by the next thread",
            "",
            "| stacks | threads | wall ns/event per thread | CPU ns/event | CPU vs 1 thread | "
            f"no collapse (≤ {COLLAPSE_FACTOR}×) |",
            "|---|---|---|---|---|---|",
        ]
        rows(lines, argv, HANDED)
    except (Failure, KeyError, ValueError, OSError) as e:
        print(f"recorder_table: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
