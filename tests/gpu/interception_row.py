# SPDX-License-Identifier: Apache-2.0
"""One row of gpu-validate.sh's interception table, and the checks that go with it.

Usage: python3 interception_row.py FIGURES_JSON REPORT_JSON DUMP_JSONL
Prints: workload | our device peak | our live at exit | host pinned | framework figure | NVML
per-process | residual (NVML - our device-resident live bytes), then CHECK lines. Exit 1 if a
check fails.
"""
import json
import sys

MiB = 1 << 20


def main():
    figures = json.load(open(sys.argv[1]))
    report = json.load(open(sys.argv[2]))
    records = [json.loads(line) for line in open(sys.argv[3])]
    name = figures["workload"]
    dev = next((d for d in report["devices"] if d["device"] == 0), {"peak_bytes": 0, "live_at_exit_bytes": 0, "by_kind": {}})
    pinned = report["host_pinned"]["peak_bytes"]
    nvml = figures.get("nvml_process_bytes")
    residual = None if nvml is None else nvml - dev["live_at_exit_bytes"]
    print(f"ROW | {name:16} | peak {dev['peak_bytes'] / MiB:9.1f} MiB | live {dev['live_at_exit_bytes'] / MiB:9.1f} MiB"
          f" | pinned {pinned / MiB:6.1f} MiB | {figures['framework_label']} {figures['framework_bytes'] / MiB:9.1f} MiB"
          f" | NVML {'n/a' if nvml is None else f'{nvml / MiB:9.1f} MiB'}"
          f" | residual {'n/a' if residual is None else f'{residual / MiB:7.1f} MiB'}"
          f" | kinds {sorted(dev['by_kind'])}")
    failures = []

    def check(what, ok):
        print(f"CHECK {'PASS' if ok else 'FAIL'} {name}: {what}")
        if not ok:
            failures.append(what)

    allocs = {(r["address"], r["size"]) for r in records if r["record"] == "alloc" and r["kind"] == "device"}
    maps = [(r["address"], r["size"]) for r in records if r["record"] == "map"]
    if name == "torch_default":
        segments = {tuple(s) for s in figures["segments"]}
        check("every PyTorch segment is a cuMemAlloc of the same address and size", segments <= allocs)
        check("every cuMemAlloc is a PyTorch segment", allocs <= segments)
        check("peak == max_memory_reserved", dev["peak_bytes"] == figures["framework_bytes"])
    if name == "torch_expandable":
        covered = lambda a, s: sum(ms for ma, ms in maps if a <= ma < a + s) == s
        check("every PyTorch segment is covered exactly by our cuMemMap records",
              all(covered(a, s) for a, s in figures["segments"]))
        check("peak (vmm physical) >= max_memory_reserved", dev["peak_bytes"] >= figures["framework_bytes"])
    if name == "torch_async":
        check("stream-ordered peak >= max_memory_reserved",
              dev["by_kind"].get("stream_ordered", {}).get("peak_bytes", 0) >= figures["framework_bytes"])
    if name == "torch_pinned":
        check("pinned host peak >= the pinned tensor", pinned >= figures["framework_bytes"])
    if name == "jax_default":
        check("JAX's preallocation is seen at its full size (peak >= bytes_limit)",
              dev["peak_bytes"] >= figures["framework_bytes"])
    if name in ("cupy", "nccl", "jax_platform"):
        check("peak >= the framework's figure", dev["peak_bytes"] >= figures["framework_bytes"])
    # Native stacks, symbolized offline: the sites at the peak name the library that allocated.
    modules = {f.get("module") or "" for site in dev.get("peak_sites", []) for f in site["frames"]}
    owners = {"torch_default": "libc10_cuda", "torch_expandable": "libc10_cuda", "torch_async": "libc10_cuda",
              "nccl": "libnccl", "cupy": "cupy", "jax_default": "xla", "jax_platform": "xla"}
    if name in owners:
        print(f"INFO {name} peak site modules: {sorted(m.rsplit('/', 1)[-1] for m in modules if m)[:12]}")
        check(f"a peak site's stack goes through {owners[name]}", any(owners[name] in m for m in modules))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
