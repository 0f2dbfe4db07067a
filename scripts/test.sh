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

# each file's time, for the 15 slowest printed at the end (scripts/test-times.mjs)
export WARREN_TEST_TIMES=$PWD/.state/test-times.tsv
mkdir -p .state && : >"$WARREN_TEST_TIMES"
reporters=(--test-reporter=tap --test-reporter-destination=stdout
  --test-reporter=./scripts/test-times.mjs --test-reporter-destination=/dev/null)
slowest() {
  [[ -s $WARREN_TEST_TIMES ]] || return 0
  echo "== the 15 slowest test files (seconds, summed over the phases)"
  # every line is read (no head): a reader that leaves early ends sort with SIGPIPE, and under
  # pipefail that turned a green suite red
  awk -F'\t' '{t[$2] += $1} END {for (f in t) printf "%8.1f  %s\n", t[f] / 1000, f}' "$WARREN_TEST_TIMES" |
    sort -rn | awk 'NR <= 15'
}
suite_start=$SECONDS

read -r url pgdir _pid < <(scripts/pg-start.sh)
# the report never decides the suite's status: the exit status is the tests' own
cleanup() {
  local status=${1:-$?}
  slowest || echo "== (the slowest files could not be listed)"
  echo "== the suite took $((SECONDS - suite_start)) s"
  scripts/pg-stop.sh "$pgdir" || true
  exit "$status"
}
trap cleanup EXIT
echo "== PostgreSQL started for the suite"
export WARREN_TEST_DATABASE_URL=$url
export WARREN_REQUIRE_POSTGRES=1

files=(${TEST_FILES:-src/**/*.test.ts test/**/*.test.ts examples/**/*.test.ts})
echo "== tests (${#files[@]} files)"
node --import tsx --test "${reporters[@]}" --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout=600000 "${files[@]}"

if [[ -z ${TEST_FILES:-} ]]; then
  echo "== box tests against boxd with AddressSanitizer and UndefinedBehaviorSanitizer"
  node scripts/build-native.mjs --sanitize
  # boxes run dist/native/boxd-asan; a report aborts it and fails the test (test/box/fixture.ts)
  WARREN_TEST_SANITIZE=1 node --import tsx --test "${reporters[@]}" --test-concurrency=1 --test-timeout=600000 \
    test/box/box.test.ts test/box/pty.test.ts test/hostile/hostile.test.ts
fi

# The box suites once more on the oci provider: real Podman containers through the Docker
# Engine API (docs/boxes.md, "oci", lists the cases that differ and why).
if [[ -z ${TEST_FILES:-} ]]; then
  if command -v podman >/dev/null; then
    echo "== box suites on the oci provider (Podman)"
    read -r oci_socket oci_pid < <(scripts/oci.sh service "$PWD/.state/oci/podman.sock")
    trap 'cleanup_status=$?; kill "$oci_pid" || true; cleanup "$cleanup_status"' EXIT
    scripts/oci.sh image warren-box:latest
    WARREN_PROVIDER=oci WARREN_OCI_SOCKET=$oci_socket WARREN_OCI_IMAGE=warren-box:latest \
      node --import tsx --test "${reporters[@]}" --test-concurrency=1 --test-timeout=600000 \
      test/box/*.test.ts test/api/exec.test.ts test/api/pause.test.ts test/homes/files-api.test.ts \
      test/runs/runs.test.ts test/terminal/shell.test.ts test/egress/record.test.ts \
      test/secrets/secrets.test.ts test/hostile/apart.test.ts test/hostile/egress-wall.test.ts \
      test/hostile/hostile.test.ts test/api/warm.test.ts src/boxes/oci/provider.test.ts \
      test/flows/contracts.test.ts test/workspaces/workspaces.test.ts \
      test/oci/*.test.ts
  else
    echo "== box suites on the oci provider: skipped, podman is not installed (scripts/setup.sh installs it)"
  fi
fi
