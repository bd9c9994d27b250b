#!/usr/bin/env bash
# Runs one ctest entry that holds many test cases (e.g. every [isolation] case in one process):
# a failure of any case is the entry's failure, and only an entry whose cases all passed or
# skipped is reported skipped (exit 77, its SKIP_RETURN_CODE) when one of them printed the skip
# marker. ctest's SKIP_REGULAR_EXPRESSION would call the entry skipped on the marker alone, so
# one case's skip would hide another case's failure.
#
#   run_reporting_skips.sh MARKER COMMAND [ARG ...]
set -uo pipefail
marker="$1"
shift
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=$?
((status == 0)) || exit "$status"
if grep -qF -- "$marker" "$log"; then exit 77; fi
exit 0
