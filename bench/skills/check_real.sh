#!/usr/bin/env bash
# For each repository mirror named (owner+name under ${MIRRORS:-/work/.mirror}): what it offers
# (--list), install, list, resolve every name, seed every name into a fresh git repository,
# and the lines `git status --porcelain` prints there (0: git sees nothing seeded).
#
#   SKILLMEM=target/debug/skillmem bench/skills/check_real.sh wshobson+agents ...
set -euo pipefail
bin=${SKILLMEM:-$(dirname "$0")/../../target/debug/skillmem}
for r in "$@"; do
  d=${OUT:-/tmp/real}/$r; rm -rf "$d"; mkdir -p "$d/proj"
  src=${MIRRORS:-/work/.mirror}/$r/repo
  offered=$($bin skills install --list "$src" --data-dir "$d/data" --json | jq '.offered | length')
  problems=$($bin skills install --list "$src" --data-dir "$d/data" --json | jq '[.offered[] | select(.problem)] | length')
  plugins=$($bin skills install --list "$src" --data-dir "$d/data" --json | jq '[.offered[].plugin | select(.)] | unique | length')
  $bin skills install "$src" --data-dir "$d/data" --json > "$d/installed.json"
  n=$(jq '.skills | length' "$d/installed.json"); refused=$(jq '.refused | length' "$d/installed.json")
  pinned=$(jq -r '.skills[0].pinnedRef' "$d/installed.json")
  listed=$($bin skills list --data-dir "$d/data" --json | jq '[.sources[].skills[]] | length')
  mapfile -t names < <(jq -r '.skills[].name' "$d/installed.json")
  resolved=$($bin skills resolve --data-dir "$d/data" --json $(printf -- '--task %s ' "${names[@]}") | jq '.skills | length')
  git -C "$d/proj" init -q && echo x > "$d/proj/f" && git -C "$d/proj" add -A && git -C "$d/proj" -c user.name=t -c user.email=t@e commit -qm x
  $bin seed --data-dir "$d/data" --cwd "$d/proj" "${names[@]}" --json > "$d/seed.json"
  copies=$(jq '[.actions[] | select(.op=="copy")] | length' "$d/seed.json")
  status=$(git -C "$d/proj" status --porcelain | wc -l)
  echo "$r offered=$offered problems=$problems plugins=$plugins installed=$n refused=$refused pinned=${pinned:0:12} listed=$listed resolved=$resolved seeded=$copies git-status-lines=$status"
done
