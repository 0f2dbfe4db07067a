#!/bin/sh
# The kubernetes provider's image, built on this host without a registry:
#   scripts/k8s.sh image [NAME] [ARCHIVE]   builds NAME (default warren-box:latest) with
#                                           Podman and saves it to ARCHIVE (default
#                                           warren-box.tar) for `kind load image-archive`
#                                           or `k3s ctr images import`
#
# A Pod cannot bind this host's folders, so the image carries them: this Debian host's
# system folders (/usr and its usrmerge links) and the /etc entries a box sees, the box's
# mount points, and warren's native parts where the Pod's command expects them
# (src/boxes/kubernetes/manifests.ts, IN_POD): boxd, its helper, box-bridge and the agents'
# seccomp program in /usr/lib/warren, warren-secret in /opt/warren/bin. Run
# `npm run build` first (dist/native).
set -eu

root_dir=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
case "$cmd" in
image)
  name=${2:-warren-box:latest}
  archive=${3:-warren-box.tar}
  native="$root_dir/dist/native"
  for f in boxd boxd-spawn box-bridge warren-secret; do
    [ -x "$native/$f" ] || { echo "$native/$f is missing; run npm run build" >&2; exit 1; }
  done
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for d in etc proc dev sys tmp home data agent run/boxd run/calls usr/lib/warren opt/warren/contracts opt/warren/bin opt/warren/harness opt/warren/flows workspace; do
    mkdir -p "$root/$d"
  done
  chmod 1777 "$root/tmp"
  cp -a /usr/. "$root/usr/"
  for l in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$root/$l"; elif [ -d "/$l" ]; then cp -a "/$l" "$root/$l"; fi
  done
  # the /etc entries a local box sees (src/boxes/local/bwrap.ts, ETC_ALLOW), and users of the image
  (cd "$root_dir" && node --import tsx --input-type=module -e '
    const { etcEntries } = await import("./src/boxes/kit/record.ts");
    for (const e of etcEntries()) console.log(e.name);
  ') | while read -r e; do cp -a "/etc/$e" "$root/etc/$e" 2>/dev/null || true; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  install -m 0755 "$native/boxd" "$native/boxd-spawn" "$native/box-bridge" "$root/usr/lib/warren/"
  install -m 0755 "$native/warren-secret" "$root/opt/warren/bin/"
  (cd "$root_dir" && node --import tsx --input-type=module -e '
    const fs = await import("node:fs");
    const { encodeProgram, seccompProgram, hostSeccompArch } = await import("./src/boxes/kit/seccomp.ts");
    const arch = hostSeccompArch();
    if (!arch) throw new Error("no seccomp table for " + process.arch);
    fs.writeFileSync(process.argv[1], encodeProgram(seccompProgram(arch)), { mode: 0o600 });
  ' "$root/usr/lib/warren/seccomp.bpf")
  tar -C "$root" -cf - . | podman import --change 'LABEL warren.image=box-k8s' - "$name" >/dev/null
  podman save -o "$archive" "$name" >/dev/null
  echo "$name $archive"
  ;;
*)
  echo "usage: scripts/k8s.sh image [NAME] [ARCHIVE]" >&2
  exit 2
  ;;
esac
