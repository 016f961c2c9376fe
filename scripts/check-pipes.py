#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a shell script pipes into a reader that stops before the end of its input.

Our scripts run under `set -o pipefail`. A reader that stops early (`grep -q`, `grep -m`, `head`,
`awk ... exit`, `sed ...q`) closes the pipe while the writer may still be writing; the writer then
dies of SIGPIPE, the pipeline fails, and `set -e` ends the script without a word, or the `||`
after it blames the wrong thing. Whether it happens depends on scheduling, so such a script fails
now and then: write the output to a file first, or read to the end (`sed -n 1,Np`, `grep -m1 FILE`
without a pipe in front, an awk flag instead of `exit`).

Usage: check-pipes.py [FILE...]   (default: every shell script git tracks)
"""
import re
import subprocess
import sys
from pathlib import Path

EARLY_READERS = [
    (re.compile(r"^grep\b.*\s(-[a-zA-Z]*[qm]|--quiet|--silent|--max-count)"), "grep that stops at a match"),
    (re.compile(r"^head\b"), "head"),
    (re.compile(r"^awk\b.*\bexit\b"), "awk that exits"),
    (re.compile(r"""^sed\b.*(['"/;]|\d)q\d*(['";\s]|$)"""), "sed that quits"),
]


# `<<WORD` but not a here-string's `<<<`.
HEREDOC = re.compile(r"""(?<!<)<<-?\s*['"]?(\w+)['"]?""")


def logical_lines(text):
    """Yields (first line number, line) with continuations (`\\`, or a line ending in `|`) joined;
    a here-document's body is text, not commands, and is left out."""
    start, parts, heredoc_end = None, [], None
    for number, line in enumerate(text.splitlines(), 1):
        if heredoc_end is not None:
            heredoc_end = None if line.strip() == heredoc_end else heredoc_end
            continue
        opened = HEREDOC.search(line.split(" #", 1)[0])
        heredoc_end = opened.group(1) if opened else None
        code = line.split(" #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        if start is None:
            start = number
        parts.append(code.rstrip("\\"))
        if code.endswith("\\") or (code.endswith("|") and not code.endswith("||")):
            continue
        yield start, " ".join(parts)
        start, parts = None, []
    if parts:
        yield start, " ".join(parts)


def piped_stages(line):
    """The commands of `line` that read a pipe: each runs from a `|` that is not half of `||`, up
    to the next `|`, `;`, `&` or `)`, none of them counted inside quotes."""
    stages, current, quote, piped, i = [], [], None, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quote != "'":
            current.append(line[i : i + 2])
            i += 1
        elif quote:
            quote = None if c == quote else quote
            current.append(c)
        elif c in "'\"":
            quote = c
            current.append(c)
        elif c == "|" and line[i + 1 : i + 2] == "|":
            if piped:
                stages.append("".join(current))
            current, piped, i = [], False, i + 1
        elif c in "|;&)":
            if piped:
                stages.append("".join(current))
            current, piped = [], c == "|"
        else:
            current.append(c)
        i += 1
    if piped:
        stages.append("".join(current))
    return stages


def problems(path):
    for number, line in logical_lines(Path(path).read_text()):
        for stage in piped_stages(line):
            for pattern, what in EARLY_READERS:
                if pattern.search(stage.strip()):
                    yield f"{path}:{number}: a pipe into {what} (`| {stage.strip()}`)"


def main(argv):
    files = argv[1:] or subprocess.run(
        ["git", "ls-files", "*.sh"], check=True, capture_output=True, text=True
    ).stdout.split()
    found = [problem for path in files for problem in problems(path)]
    for problem in found:
        print(problem)
    if found:
        print("under pipefail the writer may die of SIGPIPE: write to a file or read to the end",
              file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
