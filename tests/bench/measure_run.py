#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a command with its stdout discarded and prints, as JSON, its wall time and peak RSS.

Usage: measure_run.py CMD ARGS...

The peak RSS is the child's own ru_maxrss, from wait4(): no /usr/bin/time needed, and nothing of
this script's memory is counted. Exits with the command's status.
"""
import json
import os
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: measure_run.py CMD ARGS...", file=sys.stderr)
        return 2
    start = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    print(json.dumps({"wall_s": round(wall, 3), "max_rss_kib": usage.ru_maxrss,
                      "user_s": round(usage.ru_utime, 3), "sys_s": round(usage.ru_stime, 3),
                      "status": child.returncode}))
    return 0 if child.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
