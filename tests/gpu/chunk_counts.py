#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the record counts in the chunk headers of format 4.1 traces against the records.

Usage: chunk_counts.py TRACE...

A writer seals a chunk as it leaves it: its header's count word (bytes 24-31: length in the
low half, records in the high half) then names the chunk's published length. A sealed chunk's
count must equal the number of framed records in those bytes, walked here from the framing alone
(varint type, varint length), apart from the C++ reader. A chunk whose thread was still running
at exit is not sealed (or was sealed before exit-time frees were added): counted, not checked.
Prints one line per trace and a total line "chunks C, sealed S, records R, mismatched M"; exits
non-zero when a trace is not 4.1 or a sealed chunk's count is wrong.
"""
import struct
import sys

CHUNK_MAGIC = 0x43544D47
FIRST_CHUNK = 4096
CHUNK_HEADER = 32


def varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def framed_records(payload):
    pos, n = 0, 0
    while pos < len(payload):
        _, pos = varint(payload, pos)
        length, pos = varint(payload, pos)
        pos += length
        n += 1
    if pos != len(payload):
        raise ValueError("the framing runs past the published bytes")
    return n


def check(path):
    data = open(path, "rb").read()
    major, minor, chunk_size = struct.unpack_from("<HHI", data, 8)
    if major != 4 or minor < 1:
        return 0, 0, 0, 0, f"format {major}.{minor}, not 4.1 or later"
    chunks = sealed = records = mismatched = 0
    for off in range(FIRST_CHUNK, len(data) - CHUNK_HEADER + 1, chunk_size):
        magic, = struct.unpack_from("<I", data, off)
        if magic != CHUNK_MAGIC:
            continue
        published, counted = struct.unpack_from("<QQ", data, off + 16)
        length = published & 0xFFFFFFFF
        payload = data[off + CHUNK_HEADER:off + CHUNK_HEADER + length]
        chunks += 1
        actual = framed_records(payload)
        records += actual
        if counted & 0xFFFFFFFF == length:
            sealed += 1
            mismatched += counted >> 32 != actual
    return chunks, sealed, records, mismatched, None


def main():
    total = [0, 0, 0, 0]
    bad = False
    for path in sys.argv[1:]:
        *figures, error = check(path)
        if error:
            print(f"{path}: {error}")
            bad = True
            continue
        print("%s: chunks %d, sealed %d, records %d, mismatched %d" % (path, *figures))
        total = [t + f for t, f in zip(total, figures)]
        bad = bad or figures[3] > 0
    print("chunks %d, sealed %d, records %d, mismatched %d" % tuple(total))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
