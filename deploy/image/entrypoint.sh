#!/bin/sh
# The server image's entrypoint. On WARREN_PROVIDER=oci the engine runs on the host and binds
# boxd and its helpers into each box from a path of the host: they are copied to the state
# volume, which the host sees at the same path (mount it at its own host path), and
# WARREN_OCI_NATIVE_DIR names them there.
set -eu
if [ "${WARREN_PROVIDER:-local}" = oci ]; then
  native="${STATE_ROOT:?}/native"
  mkdir -p "$native"
  cp -a /opt/warren/dist/native/. "$native/"
  export WARREN_OCI_NATIVE_DIR="$native"
fi
exec /usr/local/bin/node /opt/warren/dist/cli/main.js "$@"
