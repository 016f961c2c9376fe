# SPDX-License-Identifier: Apache-2.0
"""The table of scripts/gpu-validate-whatif.sh: each change's prediction (`whatif --json`) beside
PyTorch's own figures in the rerun, the error, and whether the fits verdict was right.

    python3 whatif_table.py ROWS.jsonl TABLE.md

ROWS.jsonl: one {"case", "label", "change", "predicted": PATH, "rerun": PATH} a line. Targets
(issue 48): allocator settings within 2 % of the highest reserved, batch scales within 5 % of the
highest allocated, every verdict right. A rerun that ran out of memory stopped at its failure:
its figures are not the run's highest, so only its verdict is compared.
"""
import json
import sys

GiB = 1 << 30


def load(path):
    with open(path) as f:
        return json.load(f)


def error(predicted, real):
    return (predicted - real) / real * 100 if real else float("nan")


def row(r):
    predicted = load(r["predicted"])
    rerun = load(r["rerun"])
    device = predicted["devices"][0]
    p = device["predicted"]
    fits = bool(p["fits"])
    # Too close to call (within the model's margin of the capacity), or past a failure the
    # program caught and went on from (fits is null): no verdict to be wrong.
    unpredicted = p["fits"] is None
    close = bool(p.get("too_close", False)) or unpredicted
    oom = bool(rerun["oom"])
    verdict_right = close or fits != oom
    is_conf = r["label"] in ("expandable", "max_split")
    target = 2 if is_conf else 5
    measured = "max_memory_reserved" if is_conf else "max_memory_allocated"
    predicted_figure = p["max_reserved_bytes"] if is_conf else p["max_allocated_bytes"]
    err = error(predicted_figure, rerun[measured])
    within = "-" if oom or not (fits or close) else ("yes" if abs(err) <= target else "NO")
    return {
        "case": r["case"],
        "change": r["change"],
        "batch": rerun["batch"] if rerun["batch"] is not None else "-",
        "pred alloc": f"{p['max_allocated_bytes'] / GiB:.3f}",
        "real alloc": f"{rerun['max_memory_allocated'] / GiB:.3f}",
        "pred reserved": f"{p['max_reserved_bytes'] / GiB:.3f}",
        "real reserved": f"{rerun['max_memory_reserved'] / GiB:.3f}",
        "error": "-" if oom or not (fits or close) else f"{err:+.2f} % ({'reserved' if is_conf else 'allocated'})",
        f"within target": within,
        "pred fits": "not predicted" if unpredicted else "too close" if close else "fits" if fits else "OOM",
        "real": "OOM" if oom else "fits",
        "verdict": "none (past a caught failure)" if unpredicted else "none (too close)" if close else "right" if verdict_right else "WRONG",
        "fidelity": "exact" if predicted["fidelity"]["exact"] else "NOT exact",
    }, verdict_right and within != "NO"


def main():
    rows_path, table_path = sys.argv[1], sys.argv[2]
    with open(rows_path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    lines = []
    good = 0
    for r in rows:
        try:
            cells, ok = row(r)
        except (OSError, KeyError, ValueError) as e:
            cells, ok = {"case": r.get("case", "?"), "change": r.get("change", "?"),
                         "verdict": f"unreadable: {e}"}, False
        good += ok
        lines.append(cells)
    columns = ["case", "change", "batch", "pred alloc", "real alloc", "pred reserved",
               "real reserved", "error", "within target", "pred fits", "real", "verdict",
               "fidelity"]
    out = ["# whatif against the rerun (GiB; PyTorch's max_memory_allocated / reserved)", "",
           "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for cells in lines:
        out.append("| " + " | ".join(str(cells.get(c, "")) for c in columns) + " |")
    out += ["", f"{good} of {len(lines)} rows right (verdict, and within the target where both fit)."]
    with open(table_path, "w") as f:
        f.write("\n".join(out) + "\n")
    return 0 if good == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main())
