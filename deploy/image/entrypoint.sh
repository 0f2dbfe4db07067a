#!/bin/sh
# The server image's entrypoint. On WARREN_PROVIDER=oci the engine runs on the host and binds
# boxd and its helpers into each box from a path of the host: they are copied to the state
# volume, which the host sees at the same path (mount it at its own host path), and
# WARREN_OCI_NATIVE_DIR names them there. boxd's socket there may be deeper than a unix
# address holds; the server reaches it through its folder.
set -eu
if [ "${WARREN_PROVIDER:-local}" = oci ]; then
  native="${STATE_ROOT:?}/native"
  mkdir -p "$native"
  # each file renamed into place: a box kept running across a restart runs the old boxd
  # (a copy over it would be refused: text file busy), and keeps it
  for f in /opt/warren/dist/native/*; do
    name=${f##*/}
    cp -a "$f" "$native/.$name.new"
    mv -f "$native/.$name.new" "$native/$name"
  done
  export WARREN_OCI_NATIVE_DIR="$native"
fi
exec /usr/local/bin/node /opt/warren/dist/cli/main.js "$@"
