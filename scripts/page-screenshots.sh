#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Refreshes the screenshots of the HTML page's views that docs/export.md shows, from workloads
# on the simulated GPU: every allocation over time (workload_roles_training),
# the caching allocator's segments at the fragmentation OOM (workload_cached_training fragment)
# and memory per step (workload_roles_training), into docs/html-allocations.png,
# docs/html-segments.png and docs/html-steps.png; and `diff --html`'s two runs side by side
# (workload_roles_training, then keeping twice the activations) into docs/html-diff.png.
# Usage: scripts/page-screenshots.sh [BUILD_DIR]   (default: build; it must have gpumemtrace,
# the preload, the simulated CUDA stack and the workloads built). Needs chromium (or
# $GMT_CHROMIUM) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:-build}"
chromium="${GMT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [ -z "$chromium" ]; then
  echo "page-screenshots: no Chromium (chromium, chromium-browser, google-chrome or \$GMT_CHROMIUM)" >&2
  exit 1
fi
for f in bin/gpumemtrace lib/libgpumemtrace.so workloads/workload_roles_training workloads/workload_cached_training; do
  if [ ! -e "$dir/$f" ]; then
    echo "page-screenshots: $dir/$f is missing: build gpumemtrace, gpumemtrace_preload and gmt_workloads" >&2
    exit 1
  fi
done
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# trace NAME [ENV...] -- PROGRAM ARGS...: the program traced on the simulated GPU into NAME.gmt.
trace() {
  local name=$1
  shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  env LD_LIBRARY_PATH="$dir/fakecuda/lib" LD_PRELOAD="$dir/lib/libgpumemtrace.so" \
    GPUMEMTRACE_OUTPUT="$scratch/$name.%p.gmt" "${env[@]}" "$@" >/dev/null
  "$dir/bin/gpumemtrace" html "$scratch/$name".*.gmt -o "$scratch/$name.html"
}

trace roles FAKECUDA_DEVICE_MEMORY=17179869184 FAKECUDA_CONTEXT_OVERHEAD=314572800 -- \
  "$dir/workloads/workload_roles_training"
trace fragment FAKECUDA_DEVICE_MEMORY=33554432 FAKECUDA_CONTEXT_OVERHEAD=0 -- \
  "$dir/workloads/workload_cached_training" fragment
trace roles2 FAKECUDA_DEVICE_MEMORY=17179869184 FAKECUDA_CONTEXT_OVERHEAD=314572800 -- \
  "$dir/workloads/workload_roles_training" 2
"$dir/bin/gpumemtrace" diff --html "$scratch/diff.html" "$scratch"/roles.*.gmt "$scratch"/roles2.*.gmt

# The roles page: the allocation view and the steps. (No tooltip: it would show the build's
# own paths, the workloads' file names.)
cat >"$scratch/roles.json" <<EOF
[{"shot": ".allocations", "path": "$scratch/allocations.png"},
 {"shot": ".steps", "path": "$scratch/steps.png"}]
EOF
cat >"$scratch/fragment.json" <<EOF
[{"shot": ".segments", "path": "$scratch/segments.png"}]
EOF
# The diff page's first device: both timelines and what moved by role and module (the runs'
# lines above it name the build's paths).
cat >"$scratch/diff.json" <<EOF
[{"shot": ".device.compared", "path": "$scratch/diff.png"}]
EOF
for page in roles fragment diff; do
  out=$(python3 tests/integration/analysis/html_page_probe.py "$chromium" "$scratch/$page.html" "$scratch/$page.json")
  errors=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["errors"]))' "$out")
  if [ "$errors" != 0 ]; then
    echo "page-screenshots: $page's page logged errors: $out" >&2
    exit 1
  fi
done
for view in allocations segments steps diff; do
  cp "$scratch/$view.png" "docs/html-$view.png"
  echo "docs/html-$view.png"
done
