#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a C++ source is not formatted as .clang-format says.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files -co --exclude-standard -- '*.cpp' '*.h' | grep -v '^build')
if [ -z "$files" ]; then exit 0; fi
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $files 2>/tmp/gmt-format.log; then
  grep -E '^[^ ].*: (error|warning)' /tmp/gmt-format.log | cut -d: -f1 | sort -u | sed 's/^/not formatted: /' >&2
  echo "run: clang-format -i \$(git ls-files '*.cpp' '*.h')" >&2
  exit 1
fi
