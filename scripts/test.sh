#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds, and runs the whole test suite twice: a normal build, then
# one with AddressSanitizer and UndefinedBehaviorSanitizer; then fuzzes the trace reader and the
# replay for GMT_FUZZ_SECONDS (default 60; 0 skips it) with scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's time, so that a slow CI run shows where its minutes went.
step() {
  echo "=== $1 (at ${SECONDS}s) ==="
}

step "install"
scripts/install-deps.sh
scripts/check-format.sh

source scripts/lib/cuda_args.sh
source scripts/lib/generator_args.sh

# The Debian package's test also installs it with dpkg -i and removes it again where this may
# change the system (root or sudo without a password, as on CI's machine).
if [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; then
  export GMT_DEB_INSTALL=1
else
  echo "test: the .deb is unpacked, not installed (neither root nor sudo without a password)"
fi

# Twice as many tests at once as cores: many wait on the programs they run and trace, and a
# long one (a bounded-trace test, 37 s under the sanitizers) then holds a core alone less long
# (2 cores: the normal tests 71 -> 64 s, the sanitizers' 181 -> 167 s).
jobs=$(($(nproc) * 2))

# The next builds run beside each test suite at the lowest priority: the tests wait on the
# programs they trace and leave cores idle (over a whole CI run on 2 cores, 1.5 cores busy on
# average, 1.93 in the builds), which the build fills without taking CPU from the tests.
background=()
log_dir=$(mktemp -d)
cleanup() {
  for pid in "${background[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$log_dir"
}
trap cleanup EXIT
# beside NAME COMMAND...: COMMAND in the background, niced, in a process group of its own (so that
# a failing step can stop it and what it started), its output kept for finish_beside.
beside() {
  local name=$1
  shift
  setsid nice -n 19 "$@" >"$log_dir/$name.log" 2>&1 &
  background+=($!)
  eval "pid_$name=$!"
}
# finish_beside NAME: waits for it; on failure prints its output and fails.
finish_beside() {
  local pid_var="pid_$1"
  if ! wait "${!pid_var}"; then
    echo "test: the background step '$1' failed:" >&2
    tail -n 100 "$log_dir/$1.log" >&2
    exit 1
  fi
  echo "test: the background step '$1' done (at ${SECONDS}s)"
}

step "normal build"
# Line tables only (-g1): the same code as -g, in a third less compile time (CMakeLists.txt).
scripts/build.sh build -DGMT_LINE_TABLES_ONLY=ON

step "normal tests, the sanitizers' build beside them"
beside sanitize_build scripts/build.sh --sanitize
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300
finish_beside sanitize_build

fuzz_seconds="${GMT_FUZZ_SECONDS:-60}"

step "sanitize tests, ThreadSanitizer's and the fuzzer's builds beside them"
beside tsan_build scripts/build.sh --tsan
if [ "$fuzz_seconds" -gt 0 ]; then
  beside fuzz_build scripts/fuzz.sh --build-only
fi
# GCC 12's sanitizers mistake a dynamic TLS block (libunwind's, which our stacks dlopen)
# whose heap address lies 16 bytes past a page boundary for glibc 2.19's layout, and read a
# bogus range from before it: LeakSanitizer then crashes at exit, after the test passed,
# whenever the heap happens to lay out so. Without the interception, leak checking still
# reaches those blocks through each thread's DTV, which is in the heap it scans.
LSAN_OPTIONS="intercept_tls_get_addr=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs" --timeout 300
finish_beside tsan_build
if [ "$fuzz_seconds" -gt 0 ]; then
  finish_beside fuzz_build
fi

# The recorder's unit tests (threads, the sampler, phases, signals) and the analyzer's threads
# (read-ahead, worker pool) under ThreadSanitizer. Only unit tests: the preload cannot carry
# TSan's runtime into uninstrumented programs.
step "thread sanitizer: recorder and pipeline"
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/recorder_tests
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/pipeline_tests

if [ "$fuzz_seconds" -gt 0 ]; then
  step "fuzzing (${fuzz_seconds}s)"
  scripts/fuzz.sh "$fuzz_seconds"
fi
step "done"
