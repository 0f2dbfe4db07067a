#!/usr/bin/env bash
# Installs the pinned CLIs of harness kinds, once per host, into DIR/<kind> (bound read-only
# into every box at /opt/warren/harness): `scripts/harness.sh DIR codex claude-code opencode`.
# An installed kind at its pinned version is left as it is; nothing is downloaded by a run.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?usage: scripts/harness.sh DIR [kind...]}
shift
declare -A pins=(
  [codex]="@openai/codex@0.169.0"
  [claude-code]="@anthropic-ai/claude-code@2.1.328"
  [opencode]="opencode-ai@1.18.33"
)

kinds=()
for k in "$@"; do
  IFS=',' read -ra parts <<<"$k"
  for p in "${parts[@]}"; do [[ -n $p ]] && kinds+=("$p"); done
done
((${#kinds[@]})) || exit 0

mkdir -p "$dir"
for kind in "${kinds[@]}"; do
  spec=${pins[$kind]:-}
  if [[ -z $spec ]]; then
    echo "harness: unknown kind $kind (known: ${!pins[*]})" >&2
    exit 2
  fi
  name=${spec%@*}
  version=${spec##*@}
  pkg="$dir/$kind/node_modules/$name/package.json"
  if [[ -f $pkg ]] && [[ $(node -p "JSON.parse(require(\"fs\").readFileSync(process.argv[1], \"utf8\")).version" "$pkg") == "$version" ]]; then
    continue
  fi
  echo "harness: installing $spec into $dir/$kind"
  rm -rf "$dir/$kind.new"
  mkdir -p "$dir/$kind.new"
  echo '{"private": true}' >"$dir/$kind.new/package.json"
  npm install --prefix "$dir/$kind.new" --no-audit --no-fund --loglevel=error --omit=dev "$spec"
  rm -rf "$dir/$kind"
  mv "$dir/$kind.new" "$dir/$kind"
  # readable and runnable by every agent's uid in the box, writable by nobody there
  chmod -R a+rX,go-w "$dir/$kind"
done
