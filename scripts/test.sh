#!/usr/bin/env bash
# The whole suite: typecheck, lint, unused code (knip), format, migrations, then every test on
# PGlite and on a real PostgreSQL server started here (and stopped afterwards), then the box
# tests once more against boxd built with AddressSanitizer and UndefinedBehaviorSanitizer
# (skipped when TEST_FILES picks the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s globstar nullglob

scripts/setup.sh
npm run --silent build
echo "== typecheck"; npx tsc -p tsconfig.json --noEmit
echo "== lint"; npx eslint --max-warnings=0 .
echo "== unused files, exports and dependencies"; npx knip
echo "== format"; npx prettier --check . --log-level warn
echo "== migrations"; scripts/check-migrations.sh

# the codex, Claude Code and OpenCode CLIs for the harness end-to-end tests (test/runs/harness.test.ts), once per host
export WARREN_TEST_HARNESS_DIR=${WARREN_TEST_HARNESS_DIR:-$PWD/.state/harness}
scripts/harness.sh "$WARREN_TEST_HARNESS_DIR" codex claude-code opencode

read -r url pgdir _pid < <(scripts/pg-start.sh)
cleanup() { scripts/pg-stop.sh "$pgdir"; }
trap cleanup EXIT
echo "== PostgreSQL started for the suite"
export WARREN_TEST_DATABASE_URL=$url
export WARREN_REQUIRE_POSTGRES=1

files=(${TEST_FILES:-src/**/*.test.ts test/**/*.test.ts})
echo "== tests (${#files[@]} files)"
node --import tsx --test --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout=600000 "${files[@]}"

if [[ -z ${TEST_FILES:-} ]]; then
  echo "== box tests against boxd with AddressSanitizer and UndefinedBehaviorSanitizer"
  node scripts/build-native.mjs --sanitize
  # boxes run dist/native/boxd-asan; a report aborts it and fails the test (test/box/fixture.ts)
  WARREN_TEST_SANITIZE=1 node --import tsx --test --test-concurrency=1 --test-timeout=600000 \
    test/box/box.test.ts test/box/pty.test.ts test/hostile/hostile.test.ts
fi
