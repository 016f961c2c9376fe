#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the fuzzer's seed corpus: small synthetic traces and hand-made damaged ones.

Usage: make_corpus.py SYNTHETIC_TRACE_BINARY OUTPUT_DIR [SEED_WRITER_BINARY]

The traces come from tests/bench/synthetic_trace/ (the preload library's layout) with small
chunks, so that the seeds stay small; the damaged ones are made from the smallest trace, one
kind of damage each, as the reader must survive them: an empty file, a short one, a text file,
the header page alone, a wrong major version, a bad chunk size, a file cut inside a chunk, a
checksum mismatch, a damaged chunk magic, a published length past the chunk. The files are
committed in tests/fuzz/corpus; run this again when the format changes. Two seeds are not made
here, kept because the reader still reads their versions: format3-four-threads.gmt is
four-threads.gmt as format 3.0 wrote it (zlib's CRC-32 per chunk), format40-four-threads.gmt as
format 4.0 wrote it (no record counts in the chunk headers).

With SEED_WRITER_BINARY (tests/fuzz/seed_writer.cpp), it also writes the seeds that reach every
record type and both chunk states (every-record-type.gmt: a sealed chunk and an open one), and
the early ends of a recording (stopped.gmt, exec.gmt, header-only-stopped.gmt), and a bounded
trace whose oldest chunks were reused (bounded.gmt: format 4.7, rebuilt from a checkpoint).
"""
import os
import struct
import subprocess
import sys
import tempfile

FIRST_CHUNK = 4096
CHUNK = 4096


def synthetic(binary, path, *args):
    subprocess.run([binary, "--output", path, "--chunk-size", str(CHUNK), *args], check=True,
                   stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        return f.read()


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) == 4:
        subprocess.run([sys.argv[3], out], check=True)
    seeds = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = os.path.join(scratch, "t.gmt")
        seeds["tiny.gmt"] = synthetic(binary, tmp, "--events", "60", "--threads", "1",
                                      "--devices", "1", "--stacks", "6", "--live", "10",
                                      "--vmm-one-in", "10", "--fail-one-in", "20")
        seeds["two-threads.gmt"] = synthetic(binary, tmp, "--events", "400", "--threads", "2",
                                             "--devices", "2", "--stacks", "12", "--live", "40",
                                             "--vmm-one-in", "25", "--fail-one-in", "60",
                                             "--seed", "2")
        seeds["four-threads.gmt"] = synthetic(binary, tmp, "--events", "1200", "--threads", "4",
                                              "--devices", "3", "--stacks", "30", "--live", "100",
                                              "--vmm-one-in", "40", "--fail-one-in", "150",
                                              "--seed", "3")
    tiny = seeds["tiny.gmt"]
    seeds["empty.gmt"] = b""
    seeds["short.gmt"] = tiny[:10]
    seeds["text.gmt"] = b"this is not a trace\n"
    seeds["header-only.gmt"] = tiny[:FIRST_CHUNK]
    seeds["wrong-version.gmt"] = tiny[:8] + struct.pack("<H", 2) + tiny[10:]
    seeds["bad-chunk-size.gmt"] = tiny[:12] + struct.pack("<I", 3000) + tiny[16:]
    seeds["cut-in-chunk.gmt"] = tiny[:FIRST_CHUNK + CHUNK + 100]
    flipped = bytearray(tiny)
    flipped[FIRST_CHUNK + CHUNK + 32 + 40] ^= 0x10  # a payload byte of the second chunk
    seeds["flipped-crc.gmt"] = bytes(flipped)
    magic = bytearray(tiny)
    magic[FIRST_CHUNK] ^= 0xff
    seeds["bad-chunk-magic.gmt"] = bytes(magic)
    length = bytearray(tiny)
    struct.pack_into("<I", length, FIRST_CHUNK + 16, CHUNK)  # published length past the chunk
    seeds["length-past-chunk.gmt"] = bytes(length)
    counted = bytearray(tiny)
    struct.pack_into("<I", counted, FIRST_CHUNK + 28, 1000)  # a record count that is wrong
    seeds["wrong-record-count.gmt"] = bytes(counted)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds, {sum(len(d) for d in seeds.values())} bytes in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
