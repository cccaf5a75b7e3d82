#!/bin/sh
# Installs what the browser tests use, where the machine offers it: Debian's
# chromium (headless) through apt-get, and the speedscope npm package into
# tools/browser/node_modules. Tests that need them skip when they are absent,
# so running this is optional; run it once, then `go test ./...`.
set -e
cd "$(dirname "$0")"
if ! command -v chromium >/dev/null 2>&1; then
	if command -v apt-cache >/dev/null 2>&1 && apt-cache show chromium >/dev/null 2>&1; then
		apt-get install -y --no-install-recommends chromium
	else
		echo "chromium is not available from apt here; the browser tests will skip" >&2
	fi
fi
if command -v npm >/dev/null 2>&1; then
	npm install --no-audit --no-fund --prefix . speedscope
else
	echo "npm is not available; the speedscope test will skip" >&2
fi
