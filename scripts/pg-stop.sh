#!/usr/bin/env bash
# Stops a server started by pg-start.sh and removes its folder.
set -uo pipefail
dir=${1:?usage: pg-stop.sh PGDIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
user=postgres
id "$user" >/dev/null 2>&1 || user=nobody
if [[ -f $dir/data/postmaster.pid ]]; then
  if [[ $(id -u) == 0 ]]; then runuser -u "$user" -- "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1
  else "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1; fi
fi
rm -rf "$dir"
