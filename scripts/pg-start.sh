#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server (Debian's postgresql) for the test suite: initdb into
# a temporary folder as an unprivileged user, on a free port. Prints `DATABASE_URL PGDIR PID`.
# Stop it with scripts/pg-stop.sh PGDIR.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bin/initdb ]] || { echo "pg-start: Debian's postgresql is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
user=postgres
id "$user" >/dev/null 2>&1 || user=nobody
dir=$(mktemp -d /tmp/warren-pg.XXXXXX)
chown "$user" "$dir"
chmod 700 "$dir"
run() { if [[ $(id -u) == 0 ]]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
run "$bin/initdb" -D "$dir/data" -U warren --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
run "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
  -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }
pid=$(head -1 "$dir/data/postmaster.pid")
echo "postgres://warren@127.0.0.1:$port/postgres $dir $pid"
