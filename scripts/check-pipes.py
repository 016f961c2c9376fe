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
    (re.compile(r"^grep\b.*\s(-[a-zA-Z]*[qm]|--quiet|--silent|--max-count)"),
     "grep that stops at a match"),
    (re.compile(r"^head\b"), "head"),
    (re.compile(r"^awk\b.*\bexit\b"), "awk that exits"),
    (re.compile(r"""^sed\b.*(['"/;]|\d)q\d*(['";\s]|$)"""), "sed that quits"),
]

HEREDOC = re.compile(r"""<<-?\s*['"]?(\w+)['"]?""")


class Command:
    """One command being read: its text so far, whether a pipe feeds it, and its first line."""

    def __init__(self, line):
        self.text, self.piped, self.line = [], False, line


def piped_commands(text):
    """Yields (line, command) for each command that reads a pipe: from a `|` that is not half of
    `||` to the next `|`, `||`, `&`, `;`, `)`, or end of line (a line ending in `|` or `\\` goes
    on). Quotes, `$(...)` inside double quotes, comments and here-documents' bodies are followed
    as the shell does, closely enough for what scripts here write."""
    # "code" (a command list, nested in $(...) or (...)), "'" or '"', or the open parentheses of
    # an arithmetic $((...))
    stack = ["code"]
    commands = [Command(1)]  # one per "code" level of the stack
    heredocs, line, i = [], 1, 0

    def end(next_piped):
        command = commands[-1]
        if command.piped and "".join(command.text).strip():
            yield command.line, "".join(command.text).strip()
        commands[-1] = Command(line)
        commands[-1].piped = next_piped

    while i < len(text):
        c, top = text[i], stack[-1]
        if c == "\\" and top != "'":
            commands[-1].text.append(text[i : i + 2].replace("\n", " "))
            line += text[i : i + 2].count("\n")
            i += 2
            continue
        if isinstance(top, int):  # inside $((...)): parentheses counted, << is a shift
            commands[-1].text.append(c)
            stack[-1] += {"(": 1, ")": -1}.get(c, 0)
            if stack[-1] == 0:
                stack.pop()
            line += c == "\n"
        elif top in "'\"" and c != top and not (top == '"' and text.startswith("$(", i)):
            commands[-1].text.append(" " if c == "\n" else c)
            line += c == "\n"
        elif top in "'\"":
            if c == top:
                stack.pop()
                commands[-1].text.append(c)
            elif text.startswith("$((", i):  # arithmetic in double quotes
                stack.append(2)
                commands[-1].text.append("$((")
                i += 2
            else:  # $( in double quotes: a command list of its own
                stack.append("code")
                commands.append(Command(line))
                i += 1
        elif c in "'\"":
            stack.append(c)
            commands[-1].text.append(c)
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;("):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            opened = HEREDOC.match(text, i)
            if opened:
                heredocs.append(opened.group(1))
            commands[-1].text.append(text[i : opened.end() if opened else i + 2])
            i = opened.end() if opened else i + 2
            continue
        elif text.startswith("$((", i) or text.startswith("((", i):
            stack.append(2)
            commands[-1].text.append("$((")
            i += 3 if c == "$" else 2
            continue
        elif c == "(" or text.startswith("$(", i):
            stack.append("code")
            commands.append(Command(line))
            i += 2 if c == "$" else 1
            continue
        elif c == ")" and len(stack) > 1:
            yield from end(False)
            stack.pop()
            commands.pop()
            commands[-1].text.append("$(...)")
        elif c == "|" and text.startswith("||", i):
            yield from end(False)
            i += 1
        elif c in "|&;":
            yield from end(c == "|")
        elif c == "\n":
            if not (commands[-1].piped and not "".join(commands[-1].text).strip()):
                yield from end(False)
            line += 1
            while heredocs:  # the bodies start after this line; each ends at its word alone
                word = heredocs.pop(0)
                while i + 1 < len(text):
                    body_end = text.find("\n", i + 1)
                    body_end = len(text) if body_end < 0 else body_end
                    body = text[i + 1 : body_end]
                    i, line = body_end, line + 1
                    if body.strip() == word:
                        break
            commands[-1].line = line
        else:
            commands[-1].text.append(c)
        i += 1
    yield from end(False)


def problems(path):
    for number, command in piped_commands(Path(path).read_text()):
        for pattern, what in EARLY_READERS:
            if pattern.search(command):
                yield f"{path}:{number}: a pipe into {what} (`| {command}`)"


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
