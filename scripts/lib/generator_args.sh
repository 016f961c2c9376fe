# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts: gmt_generator_args DIR sets the array `generator_args` to -G Ninja
# for a build folder not configured yet, where Ninja is installed (it compiles a target's files
# while the libraries it links are still being built, so both cores stay busy where make leaves
# one waiting), and to nothing for one that is (a folder keeps its generator).
gmt_generator_args() {
  generator_args=()
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null; then
    generator_args=(-G Ninja)
  fi
}
