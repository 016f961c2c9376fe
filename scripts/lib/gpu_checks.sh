# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU validation scripts, from the repository root, after scripts/lib/gpu_build.sh
# (which sets $gmt) and with $out set: the checks and the traced torchrun they share.
failures=0
mkdir -p "$out"
: >"$out/checks.txt"

# check NAME EXPECTED ACTUAL: one PASS or FAIL line; a FAIL is counted.
# Each line is also kept in $out/checks.txt, which check_summary prints: the GPU machine hands
# back only the end of a run's output, where long reports would push the checks out.
check() {
  local line
  if [ "$2" = "$3" ]; then line="PASS $1: $3"; else line="FAIL $1: expected $2, got $3"; failures=$((failures + 1)); fi
  echo "$line"
  echo "$line" >>"$out/checks.txt"
}

# check_summary: every check of this run so far, one line each, cut to 200 characters.
check_summary() {
  echo "--- the checks"
  [ -f "$out/checks.txt" ] && cut -c1-200 "$out/checks.txt"
  return 0
}

# json_field FILE EXPRESSION [ARG...]: the Python expression's value, with the file's JSON as d.
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# traced_torchrun NAME PORT ARG...: NPROC ranks (default 2) of tests/gpu/ranks.py ARG... under torchrun,
# traced into $out/NAME/ (one trace per rank); prints the run table and writes
# $out/NAME.report.json.
traced_torchrun() {
  local name=$1 port=$2
  shift 2
  rm -rf "${out:?}/$name" && mkdir -p "$out/$name"
  "$gmt" run -o "$out/$name/rank%r.%p.gmt" -- torchrun --nproc_per_node="${NPROC:-2}" --master_port="$port" \
    tests/gpu/ranks.py "$@" >"$out/$name.log" 2>&1 ||
    { echo "FAIL torchrun (see $name.log)"; tail -5 "$out/$name.log"; failures=$((failures + 1)); }
  "$gmt" report "$out/$name" | sed -n '/^run of/,$p'
  "$gmt" report --json "$out/$name" >"$out/$name.report.json"
}
