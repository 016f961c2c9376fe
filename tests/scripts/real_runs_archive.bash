# SPDX-License-Identifier: Apache-2.0
# Sourced, with the script's arguments, by the tests of real runs kept as archives in tests/data
# (traces recorded on a GPU, with PyTorch's own figures): sets `gmt` (the CLI) and `archive` from
# GPUMEMTRACE ARCHIVE, unpacks the archive into `work` (removed at exit), and sets `status` to 0
# for the checks to fail into.
set -euo pipefail
gmt=$1 archive=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$archive" -C "$work"
status=0
