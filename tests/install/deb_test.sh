#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (CPack): built from the build tree, its dependencies declared, and, unpacked
# into a fresh root, its gpumemtrace traces a program on the simulated GPU through its own preload.
# Usage: deb_test.sh BUILD_DIR FAKECUDA_LIB_DIR WORKLOAD
set -euo pipefail
build=$1 fakecuda=$2 workload=$3
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
"$out/root/usr/bin/gpumemtrace" dump "$out"/t.*.gmt |
  grep -q "\"$out/root/usr/lib/gpumemtrace/libgpumemtrace.so\"" ||
  { echo "FAIL: the traced program did not load the package's preload"; exit 1; }
echo "PASS: $(basename "$deb"), Depends: $depends"
