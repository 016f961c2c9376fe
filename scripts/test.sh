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

for mode in normal sanitize; do
  step "$mode build"
  if [ "$mode" = sanitize ]; then
    scripts/build.sh --sanitize
    dir=build-sanitize
  else
    # Line tables only (-g1): the same code as -g, in a third less compile time (CMakeLists.txt).
    scripts/build.sh build -DGMT_LINE_TABLES_ONLY=ON
    dir=build
  fi
  step "$mode tests"
  if [ "$mode" = sanitize ]; then
    # LeakSanitizer (seen with GCC 12's runtime; kept for clang's, built from the same sources)
    # mistakes a dynamic TLS block (libunwind's, which our stacks dlopen) whose heap address
    # lies 16 bytes past a page boundary for glibc 2.19's layout, and reads a bogus range from
    # before it: it then crashes at exit, after the test passed, whenever the heap happens to lay
    # out so. Without the interception, leak checking still reaches those blocks through each
    # thread's DTV, which is in the heap it scans.
    LSAN_OPTIONS="intercept_tls_get_addr=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
      ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 300
  else
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 300
  fi
done

# The recorder's unit tests (threads, the sampler, phases, signals) and the analyzer's threads
# (read-ahead, worker pool) under ThreadSanitizer. Only unit tests: the preload cannot carry
# TSan's runtime into uninstrumented programs.
step "thread sanitizer: recorder and pipeline"
scripts/build.sh --tsan
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/recorder_tests
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/pipeline_tests

fuzz_seconds="${GMT_FUZZ_SECONDS:-60}"
if [ "$fuzz_seconds" -gt 0 ]; then
  step "fuzzing (${fuzz_seconds}s)"
  scripts/fuzz.sh "$fuzz_seconds"
fi
step "done"
