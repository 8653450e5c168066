#!/bin/sh
# The skillmem command of the plugin's hooks and MCP server: $SKILLMEM_BIN, else skillmem from
# PATH, else the npm package `skillmem` of this plugin's version through npx, which fetches it
# once into npm's cache (the binary of this platform comes with it) and runs it from there.
# Arguments, standard streams and the exit status pass through; npx writes only to stderr, so
# the MCP server's stdout stays frames only.
# VERSION is Cargo.toml's (cargo xtask version --set writes it; a test checks it).
VERSION=0.1.0
if [ -n "${SKILLMEM_BIN:-}" ] && [ -x "$SKILLMEM_BIN" ]; then exec "$SKILLMEM_BIN" "$@"; fi
if command -v skillmem >/dev/null 2>&1; then exec skillmem "$@"; fi
if command -v npx >/dev/null 2>&1; then
  exec npx --yes --prefer-offline --loglevel=error "skillmem@$VERSION" "$@"
fi
echo "skillmem: not on PATH, and no npx to fetch it with: npm i -g skillmem, pipx install skillmem-cli, or docs/install.md of skillmem" >&2
exit 127
