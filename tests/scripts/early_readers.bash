#!/usr/bin/env bash
# The cases of check_pipes_test.sh: the lines it names pipe into readers that stop early; the
# others read to the end or read no pipe.
gpumemtrace dump t.gmt | grep -q "preload"
gpumemtrace dump t.gmt | grep -qE '^x' || fail "no x"
ls traces | head -1
gpumemtrace leaks t.gmt | head -n 30
ldconfig -p | awk '/x86-64|x86_64/ {print $NF; exit}'
printf 'a\nb\n' | sed 5q
gpumemtrace info t.gmt |
  grep -m1 complete
gpumemtrace leaks t.gmt | grep -B1 'thread' | head -8 && echo "two readers"
grep -q "preload" dump.jsonl || fail "a || is no pipe | head"
grep -m1 -n 'loss.backward()' train.py | cut -d: -f1
ls traces | sed -n 1p
echo "a | head -1 inside quotes"
awk '!found && /x|y/ { print; found = 1 }' file | sort
find . -name '*.gmt' | grep -v tmp | wc -l
cat <<'TEXT'
what a here-document holds is text: ls | head -1
TEXT
python3 - <<PY | head -1
print("the line that opens it is read")
PY
grep -q "x" <<<"$(ls | sort)"
printf 'q\n' | sed 's/q/x/'
printf 'a\n' | sed '/a/q'
printf 'a\n' | sed -n '$q'
echo "$(ls "$out"/t.*.gmt | head -1)"
python3 -c 'print(1 << 20)
print("a | head -1 in a string of two lines")'
ls | head -2  # a line after a shift is read
# ls | head -3 in a comment is no command
echo $((1 << (2 + 1))) | head -1
echo "limit $((2 << 20)) bytes"
ls | head -3
