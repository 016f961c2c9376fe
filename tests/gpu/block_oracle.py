# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own snapshot against the trace: every active block that
torch.cuda.memory._snapshot() lists at the end of planted_leak_cached.py must be live in the
analyzer's model with the same address and size, and every segment in the trace's segment events
(0 missing, 0 extra); each segment must also be live at the driver level; and the analyzer's
figures at the end must equal torch.cuda.memory_allocated()/memory_reserved(): PyTorch's blocks
never freed (`leaks`, level `block`) add up to what it had allocated, and with its free cache
(level `cache`) to what it had reserved. (The program ends with os._exit right after the
snapshot, so its end is the trace's.)

The model's blocks are those of `export --format memviz` (its device trace replayed: "alloc" to
"free_completed"), whose sizes the analyzer rebuilt from the sizes asked for, which are all that
PyTorch's trace entries give. The raw trace's figures (the sizes asked for) are printed beside
them, and the views at exit (the last sample's, up to a sampler period earlier).

Usage: python3 block_oracle.py ORACLE_JSON DUMP_JSONL REPORT_JSON LEAKS_JSON MEMVIZ_PICKLE
Prints one line per figure and `blocks_missing=N blocks_extra=N segments_missing=N ...`.
"""
import json
import pickle
import sys

oracle = json.load(open(sys.argv[1]))
requested, segments, driver = {}, {}, {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    t = r.get("record")
    if t == "block" and r["allocator"] == 1:
        a, addr, size = r["action"], r["address"], r["size"]
        if a == 0:
            requested[addr] = size
        elif a == 2:
            requested.pop(addr, None)
        elif a == 3:
            segments[addr] = size
        elif a == 4:
            segments.pop(addr, None)
    elif t == "alloc" and r.get("address") and r.get("kind") == "device":
        # Device memory only: with expandable segments, PyTorch's reservation starts where its
        # first block does, and is no block of anyone's.
        driver[r["address"]] = r["size"]
    elif t == "free":
        driver.pop(r.get("address"), None)

snapshot = pickle.load(open(sys.argv[5], "rb"))
blocks = {}
for e in snapshot["device_traces"][0] if snapshot["device_traces"] else []:
    if e["action"] == "alloc":
        blocks[e["addr"]] = e["size"]
    elif e["action"] == "free_completed":
        blocks.pop(e["addr"], None)
# The export shows every other driver allocation too (cuBLAS's own cudaMalloc...), as one block
# of its size: a live driver allocation that is not one of PyTorch's segments is none of its
# blocks (which start there only when they start a segment).
outside = {a for a in driver if a not in segments}
outside_blocks = {a: s for a, s in blocks.items() if a in outside}
for a in outside_blocks:
    del blocks[a]

want_blocks = {(b["address"], b["size"]) for b in oracle["blocks"]}
want_segments = {(s["address"], s["size"]) for s in oracle["segments"]}
have_blocks = set(blocks.items())
have_segments = set(segments.items())
driver_missing = sum(1 for a, s in want_segments if driver.get(a) != s)

report = json.load(open(sys.argv[3]))
views = report["devices"][0]["views"]["at_exit"]
leaks = json.load(open(sys.argv[4]))["leaks"]
ours_allocated = sum(g["bytes"] for g in leaks if g.get("allocator") == "pytorch" and g.get("level") == "block")
ours_reserved = ours_allocated + sum(g["bytes"] for g in leaks if g.get("allocator") == "pytorch" and g.get("level") == "cache")
print(f"torch: {len(want_blocks)} active blocks, {len(want_segments)} segments, "
      f"allocated {oracle['memory_allocated']}, reserved {oracle['memory_reserved']}")
print(f"trace: {len(requested)} live blocks asking for {sum(requested.values())} bytes; "
      f"model: {len(have_blocks)} live blocks of {sum(blocks.values())} bytes, "
      f"{len(have_segments)} segments; outside PyTorch's allocator: {len(outside_blocks)} "
      f"driver allocations of {sum(outside_blocks.values())} bytes; framework_allocated_bytes {views.get('framework_allocated_bytes')}, "
      f"framework_reserved_bytes {views.get('framework_reserved_bytes')} (views at exit, the last sample); "
      f"at the end: allocated {ours_allocated}, reserved {ours_reserved}")
print(f"blocks_missing={len(want_blocks - have_blocks)} blocks_extra={len(have_blocks - want_blocks)} "
      f"segments_missing={len(want_segments - have_segments)} "
      f"segments_extra={len(have_segments - want_segments)} driver_segments_missing={driver_missing} "
      f"allocated_equal={ours_allocated == oracle['memory_allocated']} "
      f"reserved_equal={ours_reserved == oracle['memory_reserved']}")
