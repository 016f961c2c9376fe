#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The wheel (scripts/build-wheel.sh), installed with pip into a fresh venv that sees Debian's
# packages (pytest, xdist, pandas, jupyter_client, ipykernel): `gpumemtrace` on PATH, `python -m
# gpumemtrace run`, the Python API's figures of a trace, the pytest plugin on gpu_limits_cases.py,
# alone and with xdist's workers, and a notebook kernel's %%gpumemtrace cell, all on the
# simulated GPU.
# Usage: wheel_test.sh BUILD_DIR FAKECUDA_LIB_DIR
set -euo pipefail
build=$1 fakecuda=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
line_of() { grep -n "# site: $2\$" "$here/$1" | cut -d: -f1; }

# The wheel: its tag, what it carries, and the bundled libraries' names and search paths.
wheel=$("$root/scripts/build-wheel.sh" "$build" "$out/dist")
[ "$(basename "$wheel")" = "gpumemtrace-0.1.0-py3-none-linux_$(uname -m).whl" ] ||
  fail "unexpected wheel name $wheel"
/usr/bin/python3 -m zipfile -e "$wheel" "$out/unpacked"
native=$out/unpacked/gpumemtrace/_native
for f in bin/gpumemtrace lib/gpumemtrace/libgpumemtrace.so lib/libunwind.so.8; do
  [ -f "$native/$f" ] || fail "the wheel lacks gpumemtrace/_native/$f"
done
grep -qx "gpumemtrace = gpumemtrace.pytest_plugin" "$out"/unpacked/*.dist-info/entry_points.txt ||
  fail "no pytest11 entry point"
ls "$native/lib" | grep -E '^lib(stdc\+\+|c|m|gcc_s)[.-]' && fail "glibc or libstdc++ bundled"
[ "$(patchelf --print-rpath "$native/bin/gpumemtrace")" = '$ORIGIN/../lib' ] || fail "CLI RUNPATH"
[ "$(patchelf --print-rpath "$native/lib/gpumemtrace/libgpumemtrace.so")" = '$ORIGIN/..' ] ||
  fail "preload RUNPATH"
# The preload's libz is the bundle's, by a name no program's own libz can take.
patchelf --print-needed "$native/lib/gpumemtrace/libgpumemtrace.so" >"$out/needed.txt"
grep -qE '^libz-[0-9a-f]{8}\.so\.1$' "$out/needed.txt" ||
  fail "the preload does not need the bundled, renamed libz"

# Installed into a fresh venv, used from elsewhere: nothing of the tree on any path.
/usr/bin/python3 -m venv --system-site-packages "$out/venv"
"$out/venv/bin/pip" install --no-index --quiet "$wheel"
export PATH="$out/venv/bin:$PATH" LD_LIBRARY_PATH="$fakecuda"
python="$out/venv/bin/python"
cp "$here/api_program.py" "$here/gpu_limits_cases.py" "$out/"
cd "$out"
[ "$(command -v gpumemtrace)" = "$out/venv/bin/gpumemtrace" ] || fail "gpumemtrace is not on PATH"
[ "$(gpumemtrace --version)" = "gpumemtrace 0.1.0" ] || fail "gpumemtrace --version"
"$python" -m gpumemtrace run -o "$out/api.gmt" -- "$python" api_program.py >run.log 2>&1 ||
  { cat run.log; fail "python -m gpumemtrace run"; }
gpumemtrace dump "$out/api.gmt" >"$out/api.dump.jsonl"
grep -q "\"$out/venv/lib/python3[^/]*/site-packages/gpumemtrace/_native/lib/gpumemtrace/libgpumemtrace.so\"" "$out/api.dump.jsonl" ||
  fail "the program was not traced through the wheel's preload"

# The API: the figures of api_program.py, as the CLI's JSON gives them.
allocate_line=$(line_of api_program.py allocate)
"$python" - "$out/api.gmt" "api_program.py:$allocate_line" "api_program.py:$(line_of api_program.py kept)" \
  "api_program.py:$(line_of api_program.py temporary)" <<'PY' || fail "the API's figures"
import sys

import pandas

import gpumemtrace

path, site, kept, temporary = sys.argv[1:5]
MiB = 1 << 20
trace = gpumemtrace.load(path)
assert trace.peak_bytes == {0: 9 * MiB}, trace.peak_bytes
assert trace.live_at_exit_bytes == {0: 1 * MiB}, trace.live_at_exit_bytes
assert isinstance(trace.peak, pandas.DataFrame)
peak = trace.peak.sort_values("bytes", ascending=False)
assert list(peak["bytes"]) == [8 * MiB, 1 * MiB], peak
# Both rows are made at the helper's line: each is named by its caller, which tells them apart.
assert list(peak["site"]) == [f"{temporary} > {site}", f"{kept} > {site}"], list(peak["site"])
assert list(trace.leaks["bytes"]) == [1 * MiB] and list(trace.leaks["class"]) == ["unfreed"]
assert list(trace.leaks["site"]) == [site], list(trace.leaks["site"])
assert list(trace.failures["requested_bytes"]) == [1 << 50], trace.failures
assert list(trace.failures["error_name"]) == ["CUDA_ERROR_OUT_OF_MEMORY"]
assert list(trace.failures["site"]) == [site]
assert trace.timeline["resident_bytes"].max() == 9 * MiB
assert list(trace.views["moment"]) == ["at_peak", "at_exit"]
assert list(trace.views["tracked_bytes"]) == [9 * MiB, 1 * MiB]
try:
    gpumemtrace.load("api_program.py")
except gpumemtrace.AnalyzerError as error:
    assert "not a gpumemtrace trace" in str(error), error
else:
    raise AssertionError("a file that is no trace was loaded")
# A directory is refused at load, saying what reads one.
try:
    gpumemtrace.load(".")
except gpumemtrace.AnalyzerError as error:
    assert str(error) == ". is a directory: load() reads one trace file (`gpumemtrace report .` " \
        "reads a job's directory)", error
else:
    raise AssertionError("a directory was loaded")
assert trace.integrity == "exited", trace.integrity
assert gpumemtrace.__version__ == "0.1.0", gpumemtrace.__version__
PY
# A trace whose process still runs is `running`, not cut; `exited` once it has exited.
mkfifo "$out/live.in"
"$python" -m gpumemtrace run -o "$out/live.gmt" -- "$python" -c '
import ctypes, sys
pointer = ctypes.c_void_p()
assert ctypes.CDLL("libcudart.so.13").cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(1 << 20)) == 0
print("allocated", flush=True)
sys.stdin.readline()
' <"$out/live.in" >"$out/live.out" 2>&1 &
live=$!
exec 3>"$out/live.in"
for _ in $(seq 600); do grep -q allocated "$out/live.out" && break; sleep 0.1; done
"$python" -c '
import sys, gpumemtrace
trace = gpumemtrace.load(sys.argv[1])
assert trace.integrity == "running", trace.integrity
' "$out/live.gmt" || { cat "$out/live.out"; fail "a running process's trace is not running"; }
echo >&3
exec 3>&-
wait "$live" || { cat "$out/live.out"; fail "the running program"; }
"$python" -c '
import sys, gpumemtrace
assert gpumemtrace.load(sys.argv[1]).integrity == "exited"
' "$out/live.gmt" || fail "an exited process's trace is not exited"

# Without pandas, the same rows as lists of dicts.
"$python" -c '
import sys
sys.modules["pandas"] = None  # import pandas fails
import gpumemtrace
leaks = gpumemtrace.load(sys.argv[1]).leaks
assert isinstance(leaks, list) and [row["bytes"] for row in leaks] == [1 << 20], leaks
' "$out/api.gmt" || fail "the API without pandas"

# The plugin: two tests over their limits, named with their lines; three within theirs.
expect_failures() {  # LOG TRACE_DIR PROCESSES
  local peak leak
  peak="gpu_limits_cases.py:$(line_of gpu_limits_cases.py peak) > gpu_limits_cases.py:$(line_of gpu_limits_cases.py allocate)"
  leak="gpu_limits_cases.py:$(line_of gpu_limits_cases.py leak) > gpu_limits_cases.py:$(line_of gpu_limits_cases.py allocate)"
  grep -qF "gpumemtrace: test_peak_over_limit used 10.0 MiB (10485760 bytes) of GPU memory above what was live when it started, over its limit limit_gpu_memory(8.0 MiB); top site: $peak" "$1" ||
    { cat "$1"; fail "the peak failure's message"; }
  grep -qF "gpumemtrace: test_leak_over_limit left 3.0 MiB (3145728 bytes) of GPU memory in 1 allocation(s) live after it, over its limit limit_gpu_leaks(1.0 MiB); top site: $leak (3.0 MiB in 1)" "$1" ||
    { cat "$1"; fail "the leak failure's message"; }
  grep -qE "^=+ 2 failed, 3 passed" "$1" || { cat "$1"; fail "not 2 failed, 3 passed"; }
  # The plugin's section: one line for the count, one per limit passed.
  sed -n '/^=* gpumemtrace =*$/,/^=* short test summary/p' "$1" | sed '1d;$d' >"$1.section"
  printf '%s\n' "5 test(s) measured, 2 over their GPU memory limits" \
    "gpu_limits_cases.py::test_leak_over_limit: left live 3.0 MiB > 1.0 MiB, at $leak" \
    "gpu_limits_cases.py::test_peak_over_limit: peak 10.0 MiB > 8.0 MiB, at $peak" \
    "traces: $2 ($3 process(es))" | diff - "$1.section" || fail "the plugin's summary"
}
status=0
"$python" -m pytest -p no:cacheprovider --gpumemtrace --gpumemtrace-dir "$out/one" \
  gpu_limits_cases.py >one.log 2>&1 || status=$?
[ "$status" = 1 ] || { cat one.log; fail "pytest exited $status, not 1"; }
expect_failures one.log "$out/one" 1
[ "$(ls "$out"/one/pytest.*.gmt | wc -l)" = 1 ] || fail "not one trace for the session"
[ "$(ls "$out"/one/*.json | wc -l)" = 5 ] || fail "not one figures file per test"
# The trace is the one the preload names (gpumemtrace_trace_path).
"$python" -c '
import glob, json, sys
figures = json.load(open(sys.argv[1] + "/gpu_limits_cases.py_test_leak_within_limit.json"))
assert (figures["leaked_bytes"], figures["leaked_count"], figures["peak_bytes"]) == (1 << 20, 1, 5 << 20), figures
assert [figures["trace"]] == glob.glob(sys.argv[1] + "/pytest.*.gmt"), figures["trace"]
' "$out/one" || fail "a test's figures file"

# A marker that cannot be read stops the session with one line, whether or not it is traced; a
# limit nothing enforces is said once.
printf '%s\n' 'import pytest' '' '@pytest.mark.limit_gpu_memory("lots")' 'def test_bad():' \
  '    pass' >bad_marker_cases.py
status=0
"$python" -m pytest -p no:cacheprovider bad_marker_cases.py >bad.log 2>&1 || status=$?
[ "$status" = 4 ] || { cat bad.log; fail "a bad marker: pytest exited $status, not 4"; }
grep -qxF "ERROR: bad_marker_cases.py::test_bad: @pytest.mark.limit_gpu_memory: not a size: 'lots' (write bytes, or a number with KiB, MiB, GiB, TiB, KB, MB, GB or TB)" bad.log &&
  ! grep -q Traceback bad.log || { cat bad.log; fail "a bad marker's message"; }
status=0
"$python" -m pytest -p no:cacheprovider gpu_limits_cases.py >unenforced.log 2>&1 || status=$?
[ "$status" = 0 ] || { cat unenforced.log; fail "limits without --gpumemtrace: pytest exited $status"; }
grep -qF "gpumemtrace: 5 test(s) have limit_gpu_memory or limit_gpu_leaks markers, not enforced without --gpumemtrace (or \`gpumemtrace = true\` in the ini file)" unenforced.log ||
  { cat unenforced.log; fail "limits without --gpumemtrace are not said to be unenforced"; }

# With two xdist workers: the same failures, one trace per worker.
status=0
"$python" -m pytest -p no:cacheprovider -n 2 --gpumemtrace --gpumemtrace-dir "$out/two" \
  gpu_limits_cases.py >two.log 2>&1 || status=$?
[ "$status" = 1 ] || { cat two.log; fail "pytest -n 2 exited $status, not 1"; }
expect_failures two.log "$out/two" 2
[ "$(ls "$out"/two/pytest.*.gmt | wc -l)" = 2 ] || { ls "$out/two"; fail "not one trace per worker"; }
# The notebook kernel: its spec starts it under the preload; %%gpumemtrace gives the cell's figures
# from the kernel's own trace (the cell's helper at line 5 makes what it kept, called at line 7,
# and the peak's top site, called at line 8: the caller tells the peak's two rows apart).
"$python" -m gpumemtrace install-kernel --prefix "$out/jupyter" --trace-dir "$out/kernels" >/dev/null
"$python" "$here/kernel_cells.py" "$out/jupyter" >kernel.log 2>&1 || { cat kernel.log; fail "the kernel's cells"; }
grep -A3 -- "^--- %%gpumemtrace (ok)$" kernel.log >kernel.cell
grep -qx "gpumemtrace: peak 8.0 MiB above what was live before the cell; left live 3.0 MiB in 1 allocation(s)" kernel.cell &&
  grep -qE "^ +3.0 MiB +1  [0-9]+\.py:5$" kernel.cell &&
  grep -qE "^  peak's top site: ([0-9]+)\.py:8 > \1\.py:5$" kernel.cell ||
  { cat kernel.log; fail "%%gpumemtrace's figures"; }
grep -A20 -- "^--- %gpumemtrace top (ok)$" kernel.log >kernel.top
grep -qE "^ +3.00 MiB +1x  [0-9]+\.py:5 " kernel.top ||
  { cat kernel.log; fail "%gpumemtrace top"; }
[ "$(ls "$out"/kernels/kernel.*.gmt | wc -l)" = 1 ] || fail "not one trace for the kernel"
# In a kernel that is not traced, a %%gpumemtrace cell still runs (what it defines is defined),
# and says why it has no figures.
"$python" "$here/kernel_cells.py" "$out/jupyter" untraced >plain.log 2>&1 ||
  { cat plain.log; fail "the plain kernel's cells"; }
grep -A1 -- "^--- %%gpumemtrace (ok)$" plain.log >plain.cell
grep -qx "gpumemtrace: this kernel is not traced, so the cell ran without figures; start the kernel from the kernel spec that \`python -m gpumemtrace install-kernel\` writes" plain.cell ||
  { cat plain.log; fail "%%gpumemtrace in a kernel that is not traced"; }
grep -A1 -- "^--- print(answer) (ok)$" plain.log >plain.print
grep -qx 42 plain.print || { cat plain.log; fail "the %%gpumemtrace cell did not run"; }

echo "PASS: $(basename "$wheel") installed, traced, read through the API, gated by the plugin, in a kernel"
