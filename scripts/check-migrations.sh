#!/usr/bin/env bash
# Fails when src/store/schema.ts and the checked-in migrations under drizzle/ differ.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r drizzle/. "$tmp/"
before=$(find "$tmp" -type f | sort | xargs sha256sum | sed "s#$tmp##")
DRIZZLE_OUT="$tmp" npx drizzle-kit generate --name drift >"$tmp.log" 2>&1 || { cat "$tmp.log" >&2; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"
after=$(find "$tmp" -type f | sort | xargs sha256sum | sed "s#$tmp##")
if [[ "$before" != "$after" ]]; then
  echo "migrations: src/store/schema.ts differs from drizzle/; run 'npm run db:generate' and commit the new migration" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "migrations: drizzle/ matches src/store/schema.ts"
