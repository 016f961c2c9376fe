#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-pipes.py names each pipe into a reader that stops early (early_readers.bash) and
# no other, and finds none in the project's own shell scripts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
found=$(mktemp)
trap 'rm -f "$found"' EXIT
status=0
python3 "$root/scripts/check-pipes.py" early_readers.bash >"$found" 2>/dev/null || status=$?
[ "$status" = 1 ] || { echo "FAIL: exit $status on the cases, not 1"; exit 1; }
diff - "$found" <<'EXPECTED' || { echo "FAIL: the cases' findings differ"; exit 1; }
early_readers.bash:4: a pipe into grep that stops at a match (`| grep -q "preload"`)
early_readers.bash:5: a pipe into grep that stops at a match (`| grep -qE '^x'`)
early_readers.bash:6: a pipe into head (`| head -1`)
early_readers.bash:7: a pipe into head (`| head -n 30`)
early_readers.bash:8: a pipe into awk that exits (`| awk '/x86-64|x86_64/ {print $NF; exit}'`)
early_readers.bash:9: a pipe into sed that quits (`| sed 5q`)
early_readers.bash:11: a pipe into grep that stops at a match (`| grep -m1 complete`)
early_readers.bash:12: a pipe into head (`| head -8`)
early_readers.bash:22: a pipe into head (`| head -1`)
early_readers.bash:27: a pipe into sed that quits (`| sed '/a/q'`)
early_readers.bash:29: a pipe into head (`| head -1`)
early_readers.bash:32: a pipe into head (`| head -2`)
early_readers.bash:34: a pipe into head (`| head -1`)
early_readers.bash:36: a pipe into head (`| head -3`)
EXPECTED
cd "$root"
python3 scripts/check-pipes.py || { echo "FAIL: the project's scripts pipe into early readers"; exit 1; }
echo "PASS: 14 early readers found in the cases, none in the project's scripts"
