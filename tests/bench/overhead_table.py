#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns hook_overhead_bench's JSON and trace_bytes' JSON into the tables of docs/benchmarks.md.

Usage: overhead_table.py MODE BENCH_JSON BYTES_JSON [MODE BENCH_JSON BYTES_JSON ...]

MODE is the GPUMEMTRACE_STACKS value the benchmark ran under. Prints Markdown on stdout. Exits 1
when a benchmark failed or a figure is missing (a missed target is reported, not a failure).

Every figure is the median over the repetitions, which a noisy machine disturbs least; the spread
column (interquartile range over median, of the noisier of the two sides) shows how far apart the
middle half of the repetitions were, so that a reader can tell noise from a result.
"""

import json
import re
import statistics
import sys

# The performance budget (docs/benchmarks.md).
TARGET_NS_PER_EVENT = {"none": 100, "native": 1000}
TARGET_BYTES_PER_EVENT = 16
# More threads than cores: ideal scaling halves the added time per event on 2 cores, a hook that
# serializes its callers keeps it equal; above this factor, threads get in each other's way.
COLLAPSE_FACTOR = 1.5
EVENT_TYPES = ("alloc", "free", "alloc_failed", "context_destroyed", "map", "unmap",
               "retain_handle")
STACK_TYPES = ("stack", "module", "python_code")  # "stacks excluded" leaves these out

NAME = re.compile(r"^(?P<variant>\w+)/depth:(?P<depth>\d+)/")
NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Failure(Exception):
    pass


def iterations(doc, path):
    """A Google Benchmark JSON document's runs (not its aggregates); Failure if one failed."""
    for b in doc.get("benchmarks", []):
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            raise Failure(f"{path}: {b['name']}: {b.get('error_message', 'failed')}")
        yield b


def matching_runs(path, pattern, field):
    """The Google Benchmark document at `path`, and its runs whose `field` matches `pattern`,
    each with its match."""
    with open(path) as f:
        doc = json.load(f)
    return doc, [(b, m) for b in iterations(doc, path) if (m := pattern.match(b[field]))]


def load_runs(path):
    """{(variant, depth, threads): [ns per pair, one per repetition]} and the run's context."""
    doc, matched = matching_runs(path, NAME, "run_name")
    runs = {}
    for b, m in matched:
        key = (m["variant"], int(m["depth"]), int(b["threads"]))
        runs.setdefault(key, []).append(b["real_time"] * NS_PER_UNIT[b["time_unit"]])
    return runs, doc["context"]


def median(runs, key, path):
    if key not in runs:
        raise Failure(f"{path}: no figures for {key[0]}/depth:{key[1]}/threads:{key[2]}")
    return statistics.median(runs[key])


def spread(values):
    """Interquartile range / median of the repetitions, in percent: a burst of load from
    elsewhere spoils a repetition or two, and should not spoil the measure of spread."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return 100.0 * (q3 - q1) / statistics.median(values)


def verdict(ok):
    return "met" if ok else "**missed**"


def time_tables(modes):
    out = ["### Time per allocate+free pair (2 events)", "",
           "| stacks | call depth | threads | untraced ns/pair | traced ns/pair "
           "| added ns/event | traced/untraced | spread (IQR) | target ns/event | |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    split = ["### Where the added time goes (call depth 0)", "",
             "| stacks | threads | added ns/event | two context queries ns/event "
             "| hook itself ns/event |",
             "|---|---|---|---|---|"]
    threads = ["### Threads: added time per event, 16 threads against 1", "",
               "| stacks | call depth | 1 thread | 16 threads | 16 / 1 | no collapse "
               f"(≤ {COLLAPSE_FACTOR}×) |",
               "|---|---|---|---|---|---|"]
    for mode, bench_path, _ in modes:
        runs, _ = load_runs(bench_path)
        target = TARGET_NS_PER_EVENT.get(mode, TARGET_NS_PER_EVENT["native"])
        depths = sorted({d for (_, d, _) in runs})
        counts = sorted({t for (_, _, t) in runs})
        for depth in depths:
            added = {}
            for n in counts:
                base = median(runs, ("untraced", depth, n), bench_path)
                traced = median(runs, ("traced", depth, n), bench_path)
                added[n] = (traced - base) / 2
                noise = max(spread(runs[("untraced", depth, n)]),
                            spread(runs[("traced", depth, n)]))
                out.append(f"| {mode} | {depth} | {n} | {base:.0f} | {traced:.0f} "
                           f"| {added[n]:.0f} | {traced / base:.2f} | {noise:.0f} % "
                           f"| {target} | {verdict(added[n] <= target)} |")
                if ("queries", depth, n) in runs:
                    queries = median(runs, ("queries", depth, n), bench_path)
                    split.append(f"| {mode} | {n} | {added[n]:.0f} | {(queries - base) / 2:.0f} "
                                 f"| {(traced - queries) / 2:.0f} |")
            lo, hi = min(counts), max(counts)
            if lo != hi:
                factor = added[hi] / added[lo] if added[lo] > 0 else float("inf")
                threads.append(f"| {mode} | {depth} | {added[lo]:.0f} | {added[hi]:.0f} "
                               f"| {factor:.2f} | {verdict(factor <= COLLAPSE_FACTOR)} |")
    return out + [""] + split + [""] + threads + [""]


def size_table(modes):
    out = ["### Trace size", "",
           "| stacks | events | event records B/event | stacks excluded B/event "
           "| all payload B/event | file B/event | stacks recorded (frames avg / max) "
           f"| target ≤ {TARGET_BYTES_PER_EVENT} B/event (stacks excluded) |",
           "|---|---|---|---|---|---|---|---|"]
    for mode, _, bytes_path in modes:
        with open(bytes_path) as f:
            t = json.load(f)
        types = t["types"]
        if t["bad_chunks"] or t["read_problems"]:
            raise Failure(f"{bytes_path}: the trace has damaged chunks")
        events = sum(types.get(k, {}).get("records", 0) for k in EVENT_TYPES)
        read_events = sum(t["read"].get(k, 0) for k in EVENT_TYPES)
        if events == 0 or events != read_events:
            raise Failure(f"{bytes_path}: {events} events in the chunks, {read_events} read back")
        event_bytes = sum(types.get(k, {}).get("bytes", 0) for k in EVENT_TYPES)
        stack_bytes = sum(types.get(k, {}).get("bytes", 0) for k in STACK_TYPES)
        payload = t["payload_bytes"]
        stacks = types.get("stack", {}).get("records", 0)
        frames = (f"{stacks} ({t['stack_frames'] / stacks:.0f} / {t['stack_frames_max']})"
                  if stacks else "0")
        excluded = (payload - stack_bytes) / events
        out.append(f"| {mode} | {events} | {event_bytes / events:.2f} | {excluded:.2f} "
                   f"| {payload / events:.2f} | {t['file_bytes'] / events:.2f} | {frames} "
                   f"| {verdict(excluded <= TARGET_BYTES_PER_EVENT)} |")
    return out + [""]


def header(modes):
    _, bench_path, _ = modes[0]
    runs, ctx = load_runs(bench_path)
    reps = max(len(v) for v in runs.values())
    load = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    return [f"{ctx.get('date', '')} · {ctx.get('host_name', '')} · {ctx.get('num_cpus')} CPUs "
            f"at {ctx.get('mhz_per_cpu')} MHz · load average at start {load} · median of {reps} "
            f"repetitions · GPUMEMTRACE_STACK_DEPTH={ctx.get('gpumemtrace_stack_depth')}", ""]


def main(argv):
    if len(argv) < 4 or (len(argv) - 1) % 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    modes = [tuple(argv[i:i + 3]) for i in range(1, len(argv), 3)]
    try:
        lines = header(modes) + time_tables(modes) + size_table(modes)
    except (Failure, OSError, KeyError, ValueError) as e:
        print(f"overhead_table: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
