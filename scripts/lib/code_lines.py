# SPDX-License-Identifier: Apache-2.0
"""The lines of code (64 bytes each) of the preload library that a run executes per event, from a
callgrind profile made with --dump-instr=yes (scripts/code-lines.sh).

Between two events a traced program runs its own code, which pushes ours out of the core's first
caches: each line an event's path runs is then fetched again, and those fetches, more than the
instructions, are what an event costs. A line is run as often as the most run of its instructions
(each instruction's cost in the profile is how many times it ran, summed over its calling
contexts), and counts when that is at least THRESHOLD times per event (0.5: on the path of every
event; lower to count a path that a share of the events take, such as the stack of an
allocation, one event in three in a caching allocator's loop).

The 4 KiB pages those lines lie on are counted too: each is a translation the core's TLBs must
hold, and the program's work between two events evicts those as well.

Usage: python3 code_lines.py PROFILE LIBRARY_PATH EVENTS [THRESHOLD]
Prints the library's instructions per event, its lines per event and the pages they lie on,
then the lines by function, most first.
"""
import collections
import re
import sys


def hot_lines(path, library, events, threshold):
    names = {"ob": {}, "fn": {}}
    ours = False
    function = None
    last = 0
    skip_next = False
    runs = collections.Counter()  # by instruction address
    first_function = {}
    instructions = 0
    with open(path) as profile:
        for line in profile:
            line = line.rstrip("\n")
            named = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
            if named:
                called, kind, number, name = named.groups()
                if name:
                    names[kind][number] = name
                if not called:
                    if kind == "ob":
                        ours = names["ob"].get(number, "") == library
                    else:
                        function = names["fn"].get(number)
                continue
            if line.startswith("calls="):
                skip_next = True  # the next position line is the call's inclusive cost
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            fields = line.split()
            position = fields[0]
            if position.startswith("0x"):
                address = int(position, 16)
            elif position[0] in "+-":
                address = last + int(position)
            elif position == "*":
                address = last
            else:
                continue
            last = address
            if skip_next:
                skip_next = False
                continue
            if ours and len(fields) > 2:
                runs[address] += int(fields[2])
                instructions += int(fields[2])
                first_function.setdefault(address // 64, function)
    line_runs = collections.Counter()
    for address, count in runs.items():
        line_runs[address // 64] = max(line_runs[address // 64], count)
    hot = [l for l, count in line_runs.items() if count >= events * threshold]
    pages = len({l * 64 // 4096 for l in hot})
    return instructions, pages, collections.Counter(first_function[l].split("(")[0] for l in hot)


def main():
    path, library, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
    threshold = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
    instructions, pages, by_function = hot_lines(path, library, events, threshold)
    print(f"{instructions / events:6.0f} instructions/event {sum(by_function.values()):5} lines of"
          f" code per event on {pages} pages (those run >= {threshold} times an event)")
    for function, lines in by_function.most_common():
        print(f"{lines:4} {function}")


if __name__ == "__main__":
    main()
