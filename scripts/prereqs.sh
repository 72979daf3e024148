#!/usr/bin/env bash
# Checks what `make` needs before it starts, and says in one line per
# missing piece what to install: Go (the version go.mod asks for), Node.js
# 20 or newer with npm (to fetch the pinned runtimes and test clients; the
# test clients then run on the Node 22 that e2e/ installs), and the tools the
# scripts use. Silent when everything is there.
set -uo pipefail
cd "$(dirname "$0")/.."
missing=0
say() { echo "prereqs: $*" >&2; missing=1; }

# version_ge A B: is dotted version A >= B?
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

want_go=$(sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)
if ! command -v go >/dev/null; then
  say "Go $want_go or newer is needed and 'go' is not on PATH (https://go.dev/dl, or /usr/local/go/bin on PATH)"
else
  have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  # A newer toolchain is fetched by go itself when GOTOOLCHAIN allows it.
  if ! version_ge "${have_go:-0}" "$want_go" && [ "$(go env GOTOOLCHAIN 2>/dev/null)" = local ]; then
    say "Go $want_go or newer is needed (found $have_go; go.mod asks for $want_go)"
  fi
fi
if ! command -v node >/dev/null; then
  say "Node.js 20 or newer is needed and 'node' is not on PATH (Debian: apt-get install nodejs npm)"
else
  have_node=$(node --version | sed 's/^v//')
  if ! version_ge "$have_node" 20; then
    say "Node.js 20 or newer is needed (found $have_node); the test clients then run on the pinned Node 22"
  fi
fi
command -v npm >/dev/null || say "npm is needed to fetch the runtimes and the test clients (Debian: apt-get install npm)"
for tool in git tar sha256sum curl; do
  command -v "$tool" >/dev/null || say "'$tool' is needed and not on PATH"
done
exit $missing
