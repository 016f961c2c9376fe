#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python wheel `gpumemtrace` from this tree into dist/: the Python package
# (python/gpumemtrace, the helper modules beside it), the CLI and the preload in the installed
# layout (gpumemtrace/_native/bin, lib/gpumemtrace), and the shared libraries they need beyond
# glibc and libstdc++, bundled as auditwheel does: renamed with a hash of their content (the
# preload lives in other programs, whose own libz must stay theirs) and found through an $ORIGIN
# RUNPATH. Only Debian's packages: python3-build (or pip), python3-setuptools, python3-wheel and
# patchelf; PYTHON picks the interpreter (default /usr/bin/python3).
# Usage: scripts/build-wheel.sh [BUILD_DIR [DIST_DIR]]   (default build/ and dist/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
dist=$(realpath -m "${2:-$root/dist}")
python=${PYTHON:-/usr/bin/python3}

for tool in patchelf ldd strip; do
  command -v "$tool" >/dev/null || { echo "build-wheel: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
"$python" -c 'import setuptools, wheel' 2>/dev/null ||
  { echo "build-wheel: $python lacks setuptools or wheel (python3-setuptools, python3-wheel)" >&2; exit 1; }
# python3-build where it is installed, else pip (a host's Python with torch has pip, often not
# build): the same setup.py either way, no registry asked.
if "$python" -c 'import build' 2>/dev/null; then
  make_wheel=("$python" -m build --wheel --no-isolation --outdir)
elif "$python" -m pip --version >/dev/null 2>&1; then
  make_wheel=("$python" -m pip wheel --no-deps --no-build-isolation --no-index --wheel-dir)
else
  echo "build-wheel: $python has neither build nor pip (python3-build)" >&2; exit 1
fi

# The two native targets only, configured as scripts/build.sh does when the folder is new.
if [ ! -f "$build/CMakeCache.txt" ]; then
  source "$root/scripts/lib/cuda_args.sh"
  cmake -S "$root" -B "$build" -DGMT_BUILD_TESTS=OFF "${cuda_args[@]}" >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target gpumemtrace gpumemtrace_preload >/dev/null

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -r "$root/python/gpumemtrace" "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp "$root"/python/gpumemtrace_*.py "$root/python/wheel/setup.py" "$root/python/wheel/pyproject.toml" \
  "$stage/"
native=$stage/gpumemtrace/_native
mkdir -p "$native/bin" "$native/lib/gpumemtrace"
install -m 755 "$build/bin/gpumemtrace" "$native/bin/gpumemtrace"
install -m 755 "$build/lib/libgpumemtrace.so" "$native/lib/gpumemtrace/libgpumemtrace.so"
strip "$native/bin/gpumemtrace" "$native/lib/gpumemtrace/libgpumemtrace.so"

# libunwind is opened by name at run time (native stacks through libunwind): bundled under its
# own name, found through the preload's RUNPATH, which dlopen searches.
# (awk reads to the end: a reader that stops early kills ldconfig with SIGPIPE, which pipefail
# turns into a silent failure of this script)
libunwind=$(/sbin/ldconfig -p | awk '!found && $1 == "libunwind.so.8" && /x86-64|x86_64|64bit/ {print $NF; found = 1}')
[ -n "$libunwind" ] || { echo "build-wheel: libunwind.so.8 not found (libunwind-dev)" >&2; exit 1; }
install -m 644 "$libunwind" "$native/lib/libunwind.so.8"

# What the loader finds everywhere (the manylinux policy's libraries): not bundled.
system='^(linux-vdso|ld-linux.*|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so'
elves=("$native/bin/gpumemtrace" "$native/lib/gpumemtrace/libgpumemtrace.so" "$native/lib/libunwind.so.8")
declare -A renamed=()
for elf in "$build/bin/gpumemtrace" "$build/lib/libgpumemtrace.so" "$libunwind"; do
  while read -r soname path; do
    [[ "$soname" =~ $system ]] && continue
    [ -n "${renamed[$soname]:-}" ] && continue
    [ -f "$path" ] || { echo "build-wheel: $elf needs $soname, which is not found" >&2; exit 1; }
    hash=$(sha256sum "$path" | cut -c1-8)
    new="${soname%%.so*}-$hash.so${soname#*.so}"
    install -m 644 "$path" "$native/lib/$new"
    patchelf --set-soname "$new" "$native/lib/$new"
    renamed[$soname]=$new
    elves+=("$native/lib/$new")
  done < <(ldd "$elf" | awk '$2 == "=>" {print $1, $3}')
done
for elf in "${elves[@]}"; do
  for soname in "${!renamed[@]}"; do
    patchelf --replace-needed "$soname" "${renamed[$soname]}" "$elf"
  done
done
patchelf --set-rpath '$ORIGIN/../lib' "$native/bin/gpumemtrace"
patchelf --set-rpath '$ORIGIN/..' "$native/lib/gpumemtrace/libgpumemtrace.so"
for elf in "${elves[@]:2}"; do patchelf --set-rpath '$ORIGIN' "$elf"; done

version=$(sed -n 's/^project(gpumemtrace VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
mkdir -p "$dist"
GPUMEMTRACE_VERSION=$version "${make_wheel[@]}" "$dist" "$stage" \
  >"$stage/build.log" 2>&1 || { cat "$stage/build.log"; exit 1; }
wheel="$dist/gpumemtrace-$version-py3-none-linux_$(uname -m).whl"
[ -f "$wheel" ] || { echo "build-wheel: $wheel was not made" >&2; cat "$stage/build.log"; exit 1; }
echo "$wheel"
