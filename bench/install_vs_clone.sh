#!/usr/bin/env bash
# Install + seed of every skill of a repository against `git clone --depth 1` + `cp -r` of the
# same skill folders, run in turns (issue 16's comparison; any layout since issue 50: the
# folders copied are the subpaths the install reports).
#
#   bench/install_vs_clone.sh /path/to/clone [runs] [skillmem binary]
#
# Twice: from the local clone itself (skillmem reads it in place) and over git:// on loopback
# (`git daemon` serving the same clone: a network transport, where skillmem fetches depth 1).
# Prints one line per run with the times in seconds and the ratio.
set -euo pipefail
repo=$(realpath "$1")
runs=${2:-5}
bin=${3:-$(dirname "$0")/../target/release/skillmem}
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/srv"
ln -s "$(git -C "$repo" rev-parse --absolute-git-dir)" "$work/srv/repo.git"
git daemon --base-path="$work/srv" --export-all --listen=127.0.0.1 --port="$port" --reuseaddr &
daemon=$!
trap 'kill $daemon 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
now() { date +%s.%N; }
for transport in local git; do
  if [ $transport = local ]; then url=$repo; gurl=file://$repo; else url=git://127.0.0.1:$port/repo.git; gurl=$url; fi
  for i in $(seq "$runs"); do
    rm -rf "$work/d" "$work/cwd" "$work/sh" "$work/cp"
    mkdir -p "$work/cwd" "$work/cp"
    t0=$(now)
    "$bin" skills install "$url" --data-dir "$work/d" --json >"$work/installed.json"
    t1=$(now)
    mapfile -t names < <(jq -r '.skills[].name' "$work/installed.json")
    mapfile -t subpaths < <(jq -r '.skills[].subpath' "$work/installed.json")
    "$bin" seed --data-dir "$work/d" --cwd "$work/cwd" "${names[@]}" >/dev/null
    t2=$(now)
    git clone -q --depth 1 "$gurl" "$work/sh"
    cp -r "${subpaths[@]/#/$work/sh/}" "$work/cp/"
    t3=$(now)
    awk -v t=$transport -v i="$i" -v n="${#names[@]}" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {
      printf "%s run %d: %d skills: install %.2f s, seed %.2f s, install+seed %.2f s; clone --depth 1 + cp -r %.2f s; ratio %.2f\n",
        t, i, n, b - a, c - b, c - a, d - c, (c - a) / (d - c) }'
  done
done
