#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (CPack): built from the build tree, its dependencies declared, and, unpacked
# into a fresh root, its gpumemtrace traces a program on the simulated GPU through its own preload.
# With GMT_DEB_INSTALL=1 (scripts/test.sh sets it where it may change the system: CI's machine),
# the package is also installed with dpkg -i, which refuses it unless every declared dependency is
# installed, and the installed /usr/bin/gpumemtrace runs a Python program; then it is removed. A
# gpumemtrace package installed already is left as it is (and the install not tested).
# Usage: deb_test.sh BUILD_DIR FAKECUDA_LIB_DIR WORKLOAD PYTHON_WORKLOAD
set -euo pipefail
build=$1 fakecuda=$2 workload=$3 python_workload=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$out" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out/pkg" >"$out/cpack.log" 2>&1) ||
  { cat "$out/cpack.log"; exit 1; }
deb=$(ls "$out"/pkg/gpumemtrace_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libunwind8 libdw1 libc6; do
  case "$depends" in *"$lib"*) ;; *) echo "FAIL: Depends lacks $lib: $depends"; exit 1 ;; esac
done
dpkg-deb -x "$deb" "$out/root"
[ -x "$out/root/usr/bin/gpumemtrace" ] || { echo "FAIL: no /usr/bin/gpumemtrace"; exit 1; }
[ -f "$out/root/usr/lib/gpumemtrace/libgpumemtrace.so" ] || { echo "FAIL: no preload"; exit 1; }
LD_LIBRARY_PATH="$fakecuda" "$out/root/usr/bin/gpumemtrace" run -o "$out/t.%p.gmt" -- "$workload" \
  alloc:a:1048576 free:a >"$out/run.log" 2>&1 || { cat "$out/run.log"; exit 1; }
"$out/root/usr/bin/gpumemtrace" dump "$out"/t.*.gmt >"$out/dump.jsonl"
grep -q "\"$out/root/usr/lib/gpumemtrace/libgpumemtrace.so\"" "$out/dump.jsonl" ||
  { echo "FAIL: the traced program did not load the package's preload"; exit 1; }

if [ "${GMT_DEB_INSTALL:-0}" = 1 ] &&
  [ "$(dpkg-query -W -f='${Status}' gpumemtrace 2>/dev/null)" = "install ok installed" ]; then
  echo "not installed with dpkg -i: a gpumemtrace package is installed already, left as it is"
elif [ "${GMT_DEB_INSTALL:-0}" = 1 ]; then
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then as_root=(sudo -n); fi
  trap '"${as_root[@]}" dpkg -P gpumemtrace >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
  "${as_root[@]}" dpkg -i "$deb" >"$out/dpkg.log" 2>&1 || { cat "$out/dpkg.log"; exit 1; }
  LD_LIBRARY_PATH="$fakecuda" /usr/bin/gpumemtrace run -o "$out/py.%p.gmt" -- \
    python3 "$python_workload" "$fakecuda/libcudart.so" >"$out/py.log" 2>&1 ||
    { cat "$out/py.log"; exit 1; }
  build_line=$(sed -n 's/^build_layer_line=//p' "$out/py.log")
  /usr/bin/gpumemtrace leaks "$out"/py.*.gmt >"$out/leaks.txt"
  grep -q "192 MiB in 3 " "$out/leaks.txt" &&
    grep -q "Model.build_layer  python_allocations.py:$build_line\$" "$out/leaks.txt" ||
    { echo "FAIL: the installed package's leaks:"; cat "$out/leaks.txt"; exit 1; }
  "${as_root[@]}" dpkg -P gpumemtrace >"$out/dpkg.log" 2>&1 || { cat "$out/dpkg.log"; exit 1; }
  [ ! -e /usr/bin/gpumemtrace ] || { echo "FAIL: dpkg -P left /usr/bin/gpumemtrace"; exit 1; }
  echo "PASS: installed with dpkg -i, traced python3 at its line, removed"
fi
echo "PASS: $(basename "$deb"), Depends: $depends"
