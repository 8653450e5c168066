#!/usr/bin/env bash
# The release artefacts installed the way a user installs them, offline and with no checkout in
# sight: `cargo xtask dist` packs a skillmem binary (default: target/debug/skillmem, which
# `cargo test` builds; SKILLMEM_BIN for another), then
# - npm: the launcher and the linux-x64 package go into a global prefix with
#   `npm install -g --offline`; the OpenCode and Pi packages are unpacked beside them as npm
#   would put them (their own dependencies would need the registry);
# - Python: the wheel goes into a venv with `pip install --no-index`;
# and each install runs `skillmem --version` and `skillmem setup <host>` for the six hosts into
# a temporary HOME, whose files must not name the checkout;
# - then, unless --no-hosts, the real hosts through those packages (test/: Claude Code with the
#   plugin installed from the marketplace and skillmem fetched by npx from a loopback registry;
#   OpenCode after `npm i -g skillmem @skillmem/opencode` from that registry and the installed
#   `skillmem setup opencode`) in a network namespace with only loopback (`unshare -n`, as root;
#   the hosts come from editors/e2e's npm install, the plugin's dependencies from editors/opencode's).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$(realpath "${SKILLMEM_BIN:-$repo/target/debug/skillmem}")"
hosts_too=1
[ "${1:-}" = --no-hosts ] && hosts_too=0
# What is tested is the packed binary: the launcher would run $SKILLMEM_BIN instead.
unset SKILLMEM_BIN
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
hosts=(claude-code opencode pi gemini-cli codex copilot)
failed=0 passed=0
check() { # NAME COMMAND...: runs it, counts it
  if "${@:2}"; then passed=$((passed + 1)); echo "ok: $1"; else failed=$((failed + 1)); echo "FAILED: $1"; fi
}

# A debug binary carries ~10x its code in debug info: packed without it.
cp "$bin" "$tmp/skillmem"
objcopy --strip-debug "$tmp/skillmem" 2>/dev/null || true
# --out relative to where xtask runs, as the release workflow passes it (`--out dist`).
(cd "$repo" && cargo xtask dist --bin "linux-x64=$tmp/skillmem" --out "$(realpath --relative-to="$repo" "$tmp/dist")" >/dev/null)
dist="$tmp/dist"

no_checkout_in() { # DIR: no file under it names the checkout
  if grep -rl --exclude='*.skillmem-backup' -F "$repo" "$1"; then echo "the files above name $repo"; return 1; fi
}

in_home() { # HOME SKILLMEM ARGS...: skillmem as the user runs it, from a folder outside the checkout
  local home=$1 sm=$2
  (cd "$tmp" && env -u XDG_CONFIG_HOME -u CODEX_HOME -u CLAUDE_CONFIG_DIR HOME="$home" SKILLMEM_HOME="$home/data" "$sm" "${@:3}")
}

quietly() { "$@" >/dev/null; }

pi_refused() { # HOME SKILLMEM: setup pi fails and names Pi's own install
  local out
  if out=$(in_home "$1" "$2" setup pi 2>&1); then return 1; fi
  grep -q 'pi install npm:@skillmem/pi' <<<"$out"
}

setup_all() { # NAME SKILLMEM HOME: the six setups (from pip, Pi's extension is not there)
  local name=$1 sm=$2 home=$3
  mkdir -p "$home"
  for h in "${hosts[@]}"; do
    if [ "$h" = pi ] && [ "$name" = pip ]; then
      check "$name: setup pi says how to get the extension" pi_refused "$home" "$sm"
    else
      check "$name: setup $h" quietly in_home "$home" "$sm" setup "$h"
    fi
  done
  check "$name: no configuration names the checkout" no_checkout_in "$home"
}

# npm, global prefix.
prefix="$tmp/npm"
(cd "$tmp" && npm install -g --offline --no-audit --no-fund --prefix "$prefix" \
  "$dist"/npm/skillmem-cli-linux-x64-*.tgz "$dist"/npm/skillmem-[0-9]*.tgz >/dev/null)
for p in opencode pi; do
  mkdir -p "$prefix/lib/node_modules/@skillmem/$p"
  tar -xzf "$dist"/npm/skillmem-$p-*.tgz -C "$prefix/lib/node_modules/@skillmem/$p" --strip-components=1
done
check "npm: skillmem --version" in_home "$tmp/home-npm" "$prefix/bin/skillmem" --version
setup_all npm "$prefix/bin/skillmem" "$tmp/home-npm"
check "npm: OpenCode wired from the installed package" \
  grep -qF "file://$prefix/lib/node_modules/@skillmem/opencode/src/index.ts" "$tmp/home-npm/.config/opencode/opencode.json"
check "npm: Pi wired from the installed package" \
  grep -qF "$prefix/lib/node_modules/@skillmem/pi/src/index.ts" "$tmp/home-npm/.pi/agent/settings.json"

# Python, a venv.
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --no-index "$dist"/skillmem_cli-*.whl
check "pip: skillmem --version" in_home "$tmp/home-pip" "$tmp/venv/bin/skillmem" --version
setup_all pip "$tmp/venv/bin/skillmem" "$tmp/home-pip"
check "pip: OpenCode gets the registry package" grep -q '"@skillmem/opencode@' "$tmp/home-pip/.config/opencode/opencode.json"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1

# The real hosts through the packages, with only loopback. SKILLMEM_BIN is the checkout's binary
# for the tests' own reading of the data (stats); the hosts never see it.
if [ "$hosts_too" = 1 ]; then
  (cd "$repo/editors/dist-e2e" && SKILLMEM_DIST="$dist" SKILLMEM_BIN="$bin" \
    unshare -n sh -c 'ip link set lo up && exec node --test --test-concurrency=1 test/')
fi
