#!/usr/bin/env bash
# Runs every Go fuzz target in the repository for FUZZTIME each (default
# 1m), one after another: `make fuzz FUZZTIME=10m`. `go test` (make test)
# runs only their seed corpora. A failing input is saved by Go under the
# package's testdata/fuzz/<Target>/ and fails the run; commit it as a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-1m}
status=0
while IFS= read -r line; do
  file=${line%%:*}
  target=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"${line#*:}")
  pkg=./$(dirname "$file")
  echo "== $target ($pkg) for $fuzztime"
  if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
    status=1
  fi
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' pkg cmd | grep -v '/testdata/' | sort)
exit $status
