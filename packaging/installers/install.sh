#!/bin/sh
# skillmem's installer for Linux and macOS: downloads the release archive of this machine's
# platform, checks it against the release's SHA256SUMS, and puts `skillmem` in
# $SKILLMEM_INSTALL_DIR (default ~/.local/bin).
#   curl -fsSL https://github.com/@REPO@/releases/latest/download/skillmem-installer.sh | sh
# The release workflow writes @REPO@ and @VERSION@; SKILLMEM_DOWNLOAD_URL overrides where the
# archives are fetched from (a folder URL, file:// too).
set -eu

repo="@REPO@"
version="@VERSION@"
base="${SKILLMEM_DOWNLOAD_URL:-https://github.com/$repo/releases/download/v$version}"
dir="${SKILLMEM_INSTALL_DIR:-$HOME/.local/bin}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-gnu ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-gnu ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64) target=aarch64-apple-darwin ;;
  *)
    echo "skillmem: no release binary for $(uname -s) $(uname -m); try npm i -g skillmem, pipx install skillmem-cli or cargo install" >&2
    exit 1
    ;;
esac

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl --proto '=https,file' -fsSL "$1" -o "$2"
  else
    wget -q "$1" -O "$2"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
archive="skillmem-$target.tar.gz"
fetch "$base/$archive" "$tmp/$archive"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS"
want="$(grep " $archive\$" "$tmp/SHA256SUMS" | cut -d' ' -f1)"
have="$(sha256 "$tmp/$archive")"
if [ -z "$want" ] || [ "$want" != "$have" ]; then
  echo "skillmem: $archive does not match SHA256SUMS (expected ${want:-nothing}, got $have)" >&2
  exit 1
fi
tar -xzf "$tmp/$archive" -C "$tmp"
mkdir -p "$dir"
cp "$tmp/skillmem-$target/skillmem" "$dir/skillmem.tmp"
chmod 755 "$dir/skillmem.tmp"
mv "$dir/skillmem.tmp" "$dir/skillmem"
echo "installed $("$dir/skillmem" --version) to $dir/skillmem"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "add $dir to PATH (e.g. in ~/.profile: export PATH=\"$dir:\$PATH\")" ;;
esac
echo "next: skillmem setup claude-code   (or opencode, pi, gemini-cli, codex, copilot)"
