#!/usr/bin/env bash
# Runs the tests whose data depends on today's date (their emulators and ranges are placed relative
# to the clock) as if on other days, under libfaketime (Debian's faketime package), so that a
# dataset that only some days bring (a session at 00:00:00 on a window's edge, a month's end, a
# leap day) fails here rather than on the day CI happens to run. Not part of `npm test`.
#   bash test/dates.sh                         # the default days below
#   bash test/dates.sh '2027-03-01 00:02:00'   # given days, UTC (the clock starts there and runs on)
set -uo pipefail
cd "$(dirname "$0")/.."
command -v faketime >/dev/null || { echo "test/dates.sh needs libfaketime: apt-get install -y faketime" >&2; exit 2; }
days=("$@")
[ ${#days[@]} -gt 0 ] || days=('2026-12-01 03:00:00' '2027-01-01 00:30:00' '2028-02-29 12:00:00' '2027-03-15 23:10:00' '2027-06-30 06:00:00' '2027-10-31 18:45:00')
files=$(grep -l 'Date.now()' -r test --include='*.test.ts' | grep -v -e '^test/reliability/' -e 'browser.test.ts' | sort)
npm run build --silent || exit 1
failed=0
for day in "${days[@]}"; do
  echo "=== as if on $day UTC"
  # An offset from the real clock, the same in every process (a start date would restart the clock
  # in each process the tests spawn); monotonic time is left alone, so timers run as they would.
  offset=$(( $(date -u -d "$day" +%s) - $(date -u +%s) ))
  if ! FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "+$offset" npx vitest run $files; then
    failed=$((failed + 1))
    echo "=== FAILED as if on $day"
  fi
done
echo "$((${#days[@]} - failed)) of ${#days[@]} days passed"
[ "$failed" -eq 0 ]
