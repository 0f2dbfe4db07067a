#!/bin/bash
# Writes the checkout's .env once (`make up` runs it): STATE_ROOT made absolute, so that every
# start of the server, from any folder, finds the same state tree and master key. A .env that
# names STATE_ROOT already is left as it is. Prints the state root.
set -euo pipefail
cd "$(dirname "$0")/.."
file=.env
if [ -f "$file" ] && grep -qE '^(export +)?STATE_ROOT=' "$file"; then
  sed -nE 's/^(export +)?STATE_ROOT=//p' "$file" | tail -n 1
  exit 0
fi
root=${STATE_ROOT:-.state}
case "$root" in
/*) ;;
*) root=$PWD/$root ;;
esac
root=$(realpath -m "$root")
printf '# written by scripts/env.sh (make up); the server reads it wherever it is started from\nSTATE_ROOT=%s\n' "$root" >>"$file"
echo "$root"
