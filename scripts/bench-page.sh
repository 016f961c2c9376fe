#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures the HTML page on large synthetic traces: `gpumemtrace html` on 10 M events of driver
# allocations (10M) and on 10 M events of a PyTorch training loop behind its caching allocator
# with the roles hooks' scopes and tags (10M-blocks-roles; see scripts/bench-analyzer.sh for
# both generators). Prints a Markdown table (docs/benchmarks.md, "The HTML page", explains it):
# build seconds on one core, the page's size, and in headless Chromium the time from navigation
# to the page drawn, and the time one zoom of the timeline and of the allocation view takes to
# redraw (the median of 10 zooms each). Figures, not assertions: nothing here fails on a missed
# target; a missed one is shown as **missed**.
# Usage: [BENCH_BUILD_DIR=build-x] [BENCH_CASES="10M"] scripts/bench-page.sh [OUTPUT_FILE]
# BENCH_BUILD_DIR: an existing build to use (default: build-page-bench, configured and built
# here, RelWithDebInfo). Needs chromium (or $GMT_CHROMIUM) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

out_file="${1:-}"
dir="${BENCH_BUILD_DIR:-build-page-bench}"
source scripts/lib/cuda_args.sh
if [ -z "${BENCH_BUILD_DIR:-}" ]; then
  echo "bench-page: building in $dir (RelWithDebInfo)" >&2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_args[@]}" >/dev/null
fi
cmake --build "$dir" -j "$(nproc)" --target gpumemtrace synthetic_trace >/dev/null

chromium="${GMT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi

# name events [generator options]
all_cases=(
  "10M 10000000 --live 50000 --stacks 2000 --threads 4 --devices 2"
  "10M-blocks-roles 10000000 --framework-blocks"
)
cases=()
for c in "${all_cases[@]}"; do
  read -r name _ <<<"$c"
  if [ -z "${BENCH_CASES:-}" ] || [[ " $BENCH_CASES " == *" $name "* ]]; then cases+=("$c"); fi
done

# The browser's part: load, then ten zooms of the first timeline and of the first allocation
# view, each timed from the call to the end of its drawing (both draw synchronously).
cat >"$scratch/steps.json" <<'EOF'
[{"eval": "(() => { const time = (chart) => { const [a, b] = chart.full; const out = []; for (let i = 1; i <= 10; i += 1) { const w = (b - a) / (i + 1); const t0 = performance.now(); chart.zoom(a + w / 2, a + w / 2 + w); out.push(performance.now() - t0); } chart.zoom(a, b); out.sort((x, y) => x - y); return out[5]; }; const r = window.gmtReport; return {timeline_ms: time(r.charts[0]), allocations_ms: r.allocations.length > 0 ? time(r.allocations[0]) : null}; })()"}]
EOF

rows=()
for c in "${cases[@]}"; do
  read -r name events options <<<"$c"
  read -ra extra <<<"$options"
  trace="$scratch/$name.gmt"
  echo "bench-page: generating $name ($events events)" >&2
  "$dir/bin/synthetic_trace" --output "$trace" --events "$events" "${extra[@]}" >/dev/null
  cat "$trace" >/dev/null
  m=$(python3 tests/bench/measure_run.py "${pin[@]}" "$dir/bin/gpumemtrace" html "$trace" -o "$scratch/$name.html")
  build_s=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["wall_s"])' "$m")
  rss_mib=$(($(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["max_rss_kib"])' "$m") / 1024))
  page_mb=$(python3 -c "import os; print(f'{os.path.getsize(\"$scratch/$name.html\") / 1e6:.1f}')")
  load_ms="-" timeline_ms="-" allocations_ms="-"
  if [ -n "$chromium" ]; then
    if probe=$(python3 tests/integration/analysis/html_page_probe.py "$chromium" "$scratch/$name.html" "$scratch/steps.json"); then
      read -r load_ms timeline_ms allocations_ms errors <<<"$(python3 -c '
import json, sys
p = json.loads(sys.argv[1])
r = p["results"][0]
f = lambda v: "-" if v is None else f"{v:.0f}"
print(f(p["load_ms"]), f(r["timeline_ms"]), f(r["allocations_ms"]), len(p["errors"]))' "$probe")"
      if [ "$errors" != 0 ]; then echo "bench-page: $name: the page logged $errors errors" >&2; fi
    fi
  fi
  verdict() { if python3 -c "import sys; sys.exit(0 if $1 else 1)"; then echo "$2"; else echo "**$2**"; fi; }
  rows+=("| $name | $events | $(verdict "$build_s <= 10" "$build_s") | $rss_mib | $(verdict "$page_mb <= 30" "$page_mb") | $load_ms | $timeline_ms | $allocations_ms |")
  rm -f "$trace"
done

{
  echo "### The HTML page (\`gpumemtrace html\`, one core; Chromium headless)"
  echo
  echo "$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo
  echo "| trace | events | build s | peak RSS MiB | page MB | load ms | timeline zoom ms | allocation view zoom ms |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Targets: built in ≤ 10 s on one core, ≤ 30 MB, loaded in ≤ 3000 ms, a zoom redrawn in ≤ 100 ms;"
  echo "a figure in bold missed its target (build and size; the browser's figures are read by eye)."
} | if [ -n "$out_file" ]; then tee "$out_file"; else cat; fi
