#!/bin/sh
# @brief Compiler launcher of the Python package's build (python/bindings/CMakeLists.txt): runs the compile it is given
# and writes "hisparse build: N/TOTAL <file>" to the terminal, so a plain `pip install .` shows progress. pip keeps a
# build's own output to itself unless -v is given (a spinner meanwhile), and the build was 5-10 minutes of spinner
# on 2 cores (issue 40); the terminal (/dev/tty) is the one place pip does not capture. Without a terminal (CI, a
# log) it writes nothing: there `pip install -v` shows Ninja's [done/total] lines.
#   usage: build_progress.sh COUNTER_FILE TOTAL SOURCE_ROOT COMPILER_OR_LAUNCHER ARGS...
counter=$1 total=$2 root=$3
shift 3
"$@"
status=$?
if [ "$status" -eq 0 ]; then
  # One byte per finished compile; appends of one byte are atomic, so parallel compiles count each other.
  printf . >>"$counter"
  done_count=$(wc -c <"$counter")
  source_file=
  for arg in "$@"; do
    case "$arg" in *.cpp | *.cu | *.cc | *.cxx) source_file=$arg ;; esac
  done
  # A persistent build tree rebuilt without a new configure (which empties the counter) counts past the total. The
  # line starts with a carriage return: it overwrites the character of pip's spinner on the same line.
  of="/$total"
  [ "$done_count" -gt "$total" ] && of=
  { printf '\rhisparse build: %s%s compiled %s\n' "$done_count" "$of" "${source_file#"$root/"}" >/dev/tty; } 2>/dev/null
fi
exit "$status"
