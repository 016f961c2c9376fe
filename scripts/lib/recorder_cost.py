# SPDX-License-Identifier: Apache-2.0
"""The self-time note of a trace (GPUMEMTRACE_SELF_TIME), for scripts/gpu-bench.sh and
scripts/gpu-bench-libraries.sh: its figures, and the same less the measurement's own clock reads.

The note's times hold one read per event and four more per stack (three of them in the stacks'
ns, one in the Python frames'); the step holds two per event and four more per stack. A recording
without the measurement makes none of them.
"""
import re
import subprocess

NOTE = re.compile(r"recorder cost: (\d+) events, (\d+) ns in the recorder, (\d+) ns of it "
                  r"taking (\d+) stacks \((\d+) ns of those reading Python frames, (\d+) native "
                  r"frames, (\d+) native stacks remembered, (\d+) by libunwind.*clock reads, "
                  r"(\d+) ns each")
FIELDS = ("events", "measured_ns", "measured_stack_ns", "stacks", "measured_python_ns",
          "native_frames", "remembered", "libunwind", "clock_read_ns")


def note_of(gmt, trace):
    """The note's figures as a dict, or None when the trace has none."""
    dump = subprocess.run([gmt, "dump", trace], capture_output=True, text=True).stdout
    match = NOTE.search(dump)
    return dict(zip(FIELDS, map(int, match.groups()))) if match else None


def corrected(note, steps, ms_per_step):
    """The recorder's ns (total, stacks, Python frames) less the measurement's reads, and its
    share of the step less them too, beside the share as measured."""
    read, events, stacks = note["clock_read_ns"], note["events"], note["stacks"]
    total = note["measured_ns"] - read * (events + 4 * stacks)
    plain_ms = ms_per_step - read * (2 * events + 4 * stacks) / steps / 1e6
    return {
        "total_ns": total,
        "stack_ns": note["measured_stack_ns"] - read * 3 * stacks,
        "python_ns": note["measured_python_ns"] - read * stacks,
        "share": total / steps / 1e6 / plain_ms,
        "measured_share": note["measured_ns"] / steps / 1e6 / ms_per_step,
    }
