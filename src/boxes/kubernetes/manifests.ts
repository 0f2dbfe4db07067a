// The objects of a box on Kubernetes, as pure functions of the box's spec and the
// provider's settings: a Pod with boxd as its one process, its machine's folder, private
// run files and users by sub-path of the one workspaces claim the server mounts too, and a
// NetworkPolicy that lets only the server near it. docs/kubernetes.md explains every field
// and what differs from a local box.
import path from "node:path";
import type {
  V1NetworkPolicy,
  V1NetworkPolicyPeer,
  V1Pod,
  V1SeccompProfile,
  V1Volume,
  V1VolumeMount,
} from "@kubernetes/client-node";
import { BOXD_CAPS } from "../kit/boxd.js";
import { BOX_PATHS } from "../paths.js";
import type { BoxLabels, BoxSpec } from "../types.js";

/** Where the box's parts are in the image (scripts put them there; docs/kubernetes.md). */
export const IN_POD = {
  boxd: "/usr/lib/warren/boxd",
  spawnHelper: "/usr/lib/warren/boxd-spawn",
  seccomp: "/usr/lib/warren/seccomp.bpf",
  /** Joins its stdin and stdout to boxd's socket: the API server's exec reaches boxd with it. */
  bridge: "/usr/lib/warren/box-bridge",
  socketDir: "/run/boxd",
  socket: "/run/boxd/boxd.sock",
  callsDir: "/run/calls",
  callsSocket: "/run/calls/calls.sock",
  /** The box's private run files (box root's, 0700): boxd binds a run's folder at /agent. */
  privateDir: "/opt/warren/private",
} as const;

/**
 * A box's sub-paths in the workspaces claim, which the server mounts at its workspaces root:
 * the machine's folder (the box's /home, where the server writes homes), its private run
 * files, and the passwd and group files the server writes from its homes.
 */
export function workspaceSubPaths(boxId: string): {
  home: string;
  private: string;
  passwd: string;
  group: string;
} {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(boxId))
    throw new Error(`box id ${JSON.stringify(boxId)} makes no sub-path`);
  return {
    home: boxId,
    private: `.private/${boxId}`,
    passwd: `.users/${boxId}/passwd`,
    group: `.users/${boxId}/group`,
  };
}

/** The one container of a box's Pod. */
export const CONTAINER = "boxd";

export interface PodSettings {
  namespace: string;
  /** The boxes' image: Debian's packages and warren's native parts at IN_POD. */
  image: string;
  /** A claim every box mounts read-only (or read-write for flows) at /data, the contracts and the harness CLIs, by sub-path. */
  sharedClaim: string;
  /** The ReadWriteMany claim of the machines' folders (workspaceSubPaths), which the server mounts too. */
  workspacesClaim: string;
  /** The seccomp profile of the Pod: the runtime's default, or a profile on every node. */
  seccomp: { kind: "runtime-default" } | { kind: "localhost"; profile: string };
  orphanAfterS: number;
}

/** Who may reach a box: the server's Pods by label, or (a server outside the cluster) its address block. */
export type ServerPeer = { kind: "pods"; labels: Record<string, string> } | { kind: "cidr"; cidr: string };

/** The labels of the server's own Pods (deploy/kubernetes/server.yaml): a box's default peer. */
export const SERVER_POD_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/name": "warren-server",
};

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 name from a box id (ids allow upper case and _, names do not). */
function dnsName(prefix: string, id: string): string {
  const base = id.toLowerCase().replace(/_/g, "-");
  // two ids differing only by case or _/- must not share a name: a short digest tells them apart
  let h = 0;
  for (const c of id) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const name = `${prefix}-${base}-${h.toString(36)}`.replace(/-+/g, "-");
  if (name.length > 63 || !NAME.test(name))
    throw new Error(`box id ${JSON.stringify(id)} makes no valid name`);
  return name;
}

export const podName = (boxId: string): string => dnsName("warren-box", boxId);
export const policyName = (boxId: string): string => dnsName("warren-box", boxId);

/** The label every object of a box carries with its id as it is (names are lowered). */
export const BOX_ID_LABEL = "warren.box";

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The box's labels as Kubernetes labels (values checked: at most 63 characters of the allowed ones). */
export function podLabels(spec: Pick<BoxSpec, "id" | "labels">): Record<string, string> {
  const out: Record<string, string> = { ...spec.labels, [BOX_ID_LABEL]: spec.id };
  for (const [k, v] of Object.entries(out))
    if (v.length > 63 || !LABEL_VALUE.test(v))
      throw new Error(`label ${k}=${JSON.stringify(v)} is not a valid Kubernetes label value`);
  return out;
}

/** A label selector (`a=b,c=d`) for list and watch calls. */
export function labelSelector(labels: Record<string, string | undefined>): string {
  return Object.entries(labels)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

/** Quantities: memory in mebibytes, CPU in millicores. */
const mib = (n: number): string => `${Math.round(n)}Mi`;
const millicores = (cpus: number): string => `${Math.max(1, Math.round(cpus * 1000))}m`;

/** A spec mount's sub-path in the shared claim: its target without the leading slash, `/` as `-`. */
export function sharedSubPath(target: string): string {
  return path.posix.normalize(target).replace(/^\/+/, "").replace(/\//g, "-");
}

/**
 * The sub-path of the workspaces claim that holds flow instances' workspaces: the server's
 * STATE_ROOT/workspaces/.flows (its flows folder on kubernetes), every Pod's /opt/warren/flows.
 * No machine id starts with a dot.
 */
export const FLOWS_SUBPATH = ".flows";
/** The sub-path that holds machines' environment layers (STATE_ROOT/workspaces/.environments), every Pod's /opt/warren/env. */
export const ENVIRONMENTS_SUBPATH = ".environments";

export function podManifest(spec: BoxSpec, s: PodSettings): V1Pod {
  const sub = workspaceSubPaths(spec.id);
  const volumes: V1Volume[] = [
    { name: "workspaces", persistentVolumeClaim: { claimName: s.workspacesClaim, readOnly: false } },
  ];
  const mounts: V1VolumeMount[] = [];
  let shared = false;
  spec.mounts.forEach((m, i) => {
    const target = path.posix.normalize(m.target);
    if (m.kind === "tmpfs") {
      const name = `tmp-${i}`;
      volumes.push({ name, emptyDir: { medium: "Memory", sizeLimit: mib(m.sizeMib) } });
      mounts.push({ name, mountPath: target });
    } else if (target === BOX_PATHS.homes) {
      mounts.push({ name: "workspaces", mountPath: target, subPath: sub.home });
    } else if (target === BOX_PATHS.flows) {
      // each flow instance's /workspace is a folder of it, bound per command as on local
      mounts.push({ name: "workspaces", mountPath: target, subPath: FLOWS_SUBPATH });
    } else if (target === BOX_PATHS.env) {
      // built by the server into the claim; each command reads its own machine's layer only
      mounts.push({ name: "workspaces", mountPath: target, subPath: ENVIRONMENTS_SUBPATH, readOnly: true });
    } else {
      shared = true;
      mounts.push({
        name: "shared",
        mountPath: target,
        subPath: sharedSubPath(target),
        readOnly: m.readOnly,
      });
    }
  });
  if (shared)
    volumes.push({ name: "shared", persistentVolumeClaim: { claimName: s.sharedClaim, readOnly: false } });
  if (!spec.mounts.some((m) => path.posix.normalize(m.target) === BOX_PATHS.tmp)) {
    volumes.push({ name: "tmp", emptyDir: { medium: "Memory", sizeLimit: mib(spec.limits.tmpMib) } });
    mounts.push({ name: "tmp", mountPath: BOX_PATHS.tmp });
  }
  // boxd's sockets: folders of the Pod's own (the server reaches boxd through exec, not a bind)
  volumes.push({ name: "boxd", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } });
  mounts.push({ name: "boxd", mountPath: IN_POD.socketDir });
  volumes.push({ name: "calls", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } });
  mounts.push({ name: "calls", mountPath: IN_POD.callsDir });
  // what the server writes for the box beside its machine's folder: read-only in the Pod
  mounts.push({ name: "workspaces", mountPath: IN_POD.privateDir, subPath: sub.private, readOnly: true });
  mounts.push({ name: "workspaces", mountPath: "/etc/passwd", subPath: sub.passwd, readOnly: true });
  mounts.push({ name: "workspaces", mountPath: "/etc/group", subPath: sub.group, readOnly: true });

  const seccompProfile: V1SeccompProfile =
    s.seccomp.kind === "localhost"
      ? { type: "Localhost", localhostProfile: s.seccomp.profile }
      : { type: "RuntimeDefault" };
  const command = [
    IN_POD.boxd,
    "--socket",
    IN_POD.socket,
    "--spawn",
    IN_POD.spawnHelper,
    "--seccomp",
    IN_POD.seccomp,
    "--calls-socket",
    IN_POD.callsSocket,
    "--cgroup-version",
    "2",
  ];
  for (const b of spec.bridges ?? []) {
    if (!/^[a-z0-9_-]{1,32}$/.test(b.name) || !Number.isInteger(b.port) || b.port < 1 || b.port >= 20000)
      throw new Error(`bad bridge ${JSON.stringify(b)}: a name of a-z0-9_- and a port below 20000`);
    command.push("--bridge", `${b.name}=${b.port}`);
  }
  command.push("--orphan-after-s", String(s.orphanAfterS));
  const limits = {
    memory: mib(spec.limits.memoryMib),
    cpu: millicores(spec.limits.cpus),
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: podName(spec.id),
      namespace: s.namespace,
      labels: podLabels(spec),
      // no Pod field limits processes (the kubelet's --pod-max-pids is per node): recorded here
      annotations: { "warren.pids-limit": String(spec.limits.pids) },
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // the Pod's own user namespace: its root (boxd) is an unprivileged id on the node
      hostUsers: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      hostname: "box",
      terminationGracePeriodSeconds: 5,
      securityContext: { seccompProfile },
      containers: [
        {
          name: CONTAINER,
          // a machine's own image carries boxd's parts at IN_POD as the boxes' image does (built FROM it)
          image: spec.image ?? s.image,
          imagePullPolicy: "IfNotPresent",
          command,
          env: [
            { name: "PATH", value: "/usr/local/bin:/usr/bin:/bin" },
            { name: "LANG", value: "C.UTF-8" },
          ],
          workingDir: "/",
          resources: { limits, requests: { ...limits } },
          securityContext: {
            // boxd becomes each agent (setuid): root of the Pod's user namespace, never the node's
            runAsUser: 0,
            runAsGroup: 0,
            runAsNonRoot: false,
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"], add: BOXD_CAPS.map((c) => c.replace(/^CAP_/, "")) },
            seccompProfile,
          },
          volumeMounts: mounts,
        },
      ],
      volumes,
    },
  };
}

/**
 * The box's Pod talks to nothing and nothing talks to it but the server: boxd's bridges
 * carry the agents' traffic over boxd's own connection, which exec carries through the API
 * server, so the box needs no network of its own.
 */
export function networkPolicyManifest(
  spec: Pick<BoxSpec, "id" | "labels">,
  namespace: string,
  server: ServerPeer,
): V1NetworkPolicy {
  const peer: V1NetworkPolicyPeer =
    server.kind === "cidr"
      ? { ipBlock: { cidr: server.cidr } }
      : { podSelector: { matchLabels: server.labels } };
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: policyName(spec.id), namespace, labels: podLabels(spec) },
    spec: {
      podSelector: { matchLabels: { [BOX_ID_LABEL]: spec.id, "warren.kind": "machine" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [{ _from: [peer] }],
      egress: [{ to: [peer] }],
    },
  };
}

/** The box's labels read back from an object (null when it is not a box's). */
export function boxLabelsOf(labels: Record<string, string> | undefined): BoxLabels | null {
  if (!labels || labels["warren.kind"] !== "machine" || !labels["warren.machine"] || !labels["warren.org"])
    return null;
  const { [BOX_ID_LABEL]: _id, ...rest } = labels;
  return { ...rest, "warren.provider": "kubernetes" } as BoxLabels;
}
