#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes the trace reader and the analyzer's replay with libFuzzer for a bounded time.
# Usage: scripts/fuzz.sh [SECONDS]   (default 60; GMT_FUZZ_WORKERS fuzzers at once, default one per
# core)
#
# Builds tests/fuzz/trace_fuzzer with clang (AddressSanitizer, UndefinedBehaviorSanitizer and
# libFuzzer's coverage) in build-fuzz/, then runs it for SECONDS over the seed corpus in
# tests/fuzz/corpus. New inputs it finds go to a temporary folder, not into the repository. Fails
# when the fuzzer finds a crash, a sanitizer report, an unexpected exception or an input that
# takes more than 10 s; the input is then kept under build-fuzz/artifacts/ and its path printed
# (replay it with: build-fuzz/bin/trace_fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  # libFuzzer takes -max_total_time=0 as "no limit".
  echo "fuzz: SECONDS must be a whole number above 0, not '$seconds'" >&2
  exit 2
fi
dir=build-fuzz

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

source scripts/lib/cuda_args.sh
source scripts/lib/generator_args.sh
gmt_generator_args "$dir"

echo "fuzz: building trace_fuzzer in $dir (clang)" >&2
cmake -S . -B "$dir" "${generator_args[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGMT_LINE_TABLES_ONLY=ON -DGMT_BUILD_TESTS=OFF -DGMT_BUILD_FUZZERS=ON \
  "${cuda_args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target trace_fuzzer >/dev/null

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
artifacts="$dir/artifacts"
mkdir -p "$artifacts"

workers="${GMT_FUZZ_WORKERS:-$(nproc)}"
echo "fuzz: running for ${seconds}s over tests/fuzz/corpus, $workers workers" >&2
# One fuzzer per core, each with its own seed and its own folder for what it finds (the seeds
# are only read): libFuzzer's -fork and -jobs modes restart processes and merge corpora, which
# cost more than they found in a minute. The seeds are traces of 4 KiB chunks: -max_len=16384
# holds the header and three chunks (larger seeds are read up to there), which reach every
# record type and chunk state, and keeps each input cheap; inputs of up to 256 KiB ran at a
# third of the speed. -entropic=0: the entropic schedule's bookkeeping took a third of the time
# (measured with perf), for a search this target does not need.
pids=()
for ((w = 0; w < workers; ++w)); do
  mkdir -p "$scratch/found-$w"
  "$dir/bin/trace_fuzzer" -seed=$((w + 1)) -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -entropic=0 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$scratch/found-$w" tests/fuzz/corpus \
    >"$scratch/log-$w" 2>&1 &
  pids+=($!)
done
failed=0
for ((w = 0; w < workers; ++w)); do
  if ! wait "${pids[$w]}"; then
    tail -n 60 "$scratch/log-$w" >&2
    failed=1
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED; the input is in $artifacts/:" >&2
  ls -t "$artifacts" | sed -n 1,3p | sed "s|^|  $artifacts/|" >&2
  exit 1
fi
# The inputs run by all workers together, and their rate: the figure the fuzzer is held to.
cat "$scratch"/log-* | awk -v seconds="$seconds" -v workers="$workers" '
  /^stat::number_of_executed_units:/ { units += $2 }
  /^stat::peak_rss_mb:/ { if ($2 > rss) rss = $2 }
  END { printf "fuzz: %d inputs in %ds by %d workers (%.0f per second), peak RSS %d MB per worker\n",
               units, seconds, workers, units / seconds, rss }' >&2
echo "fuzz: no crash in ${seconds}s" >&2
