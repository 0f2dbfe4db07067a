// A box's objects on Kubernetes, field by field: boxd as the Pod's one process, the
// machine's folder, its private run files and its users by sub-path of the workspaces claim,
// /data and the contracts from the shared claim, the limits,
// a restricted security context, no service account token, the labels, and a NetworkPolicy
// that lets only the server near the box.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sampleSpec } from "../../../test/support/box-spec.js";
import type { BoxSpec } from "../types.js";
import {
  boxLabelsOf,
  IN_POD,
  labelSelector,
  networkPolicyManifest,
  podManifest,
  podName,
  sharedSubPath,
  workspaceSubPaths,
  type PodSettings,
} from "./manifests.js";

const spec: BoxSpec = sampleSpec({
  id: "mch_1",
  org: "org_1",
  provider: "kubernetes",
  state: "/s",
  cpus: 1.5,
  tmpMib: 64,
  egress: true,
});

const settings: PodSettings = {
  namespace: "warren-boxes",
  image: "warren-box:1",
  sharedClaim: "warren-shared",
  workspacesClaim: "warren-workspaces",
  seccomp: { kind: "runtime-default" },
  orphanAfterS: 300,
};

test("names are DNS-1123, distinct for ids that differ only by case or _", () => {
  assert.match(podName("mch_1"), /^warren-box-mch-1-[a-z0-9]+$/);
  assert.notEqual(podName("mch_1"), podName("mch-1"));
  assert.notEqual(podName("Ab"), podName("ab"));
  assert.ok(podName("a".repeat(40)).length <= 63);
  assert.equal(sharedSubPath("/opt/warren/contracts"), "opt-warren-contracts");
});

test("boxd is the Pod's one process, with the socket, the helper, the filter, the bridges", () => {
  const pod = podManifest(spec, settings);
  assert.equal(pod.apiVersion, "v1");
  assert.equal(pod.kind, "Pod");
  assert.equal(pod.metadata?.name, podName("mch_1"));
  assert.equal(pod.metadata?.namespace, "warren-boxes");
  const [c, ...others] = pod.spec?.containers ?? [];
  assert.equal(others.length, 0);
  assert.ok(c);
  assert.equal(c.name, "boxd");
  assert.equal(c.image, "warren-box:1");
  assert.deepEqual(c.command, [
    IN_POD.boxd,
    "--socket",
    "/run/boxd/boxd.sock",
    "--spawn",
    IN_POD.spawnHelper,
    "--seccomp",
    IN_POD.seccomp,
    "--calls-socket",
    "/run/calls/calls.sock",
    "--cgroup-version",
    "2",
    "--bridge",
    "egress=3128",
    "--orphan-after-s",
    "300",
  ]);
  assert.equal(c.args, undefined);
  assert.deepEqual(c.env, [
    { name: "PATH", value: "/usr/local/bin:/usr/bin:/bin" },
    { name: "LANG", value: "C.UTF-8" },
  ]);
  assert.equal(pod.spec?.restartPolicy, "Never");
  assert.equal(pod.spec?.hostname, "box");
  assert.throws(
    () => podManifest({ ...spec, bridges: [{ name: "x y", port: 3128 }] }, settings),
    /bad bridge/,
  );
});

test("a machine's own image is the Pod's image; everything else as the boxes' image's Pod", () => {
  const own = podManifest({ ...spec, image: "registry.local/tools:2" }, settings);
  const plain = podManifest(spec, settings);
  assert.equal(own.spec?.containers[0]?.image, "registry.local/tools:2");
  assert.deepEqual({ ...own.spec?.containers[0], image: "" }, { ...plain.spec?.containers[0], image: "" });
  assert.deepEqual(own.spec?.securityContext, plain.spec?.securityContext);
});

test("limits: memory and CPU as limits and requests; pids recorded where no field holds it", () => {
  const pod = podManifest(spec, settings);
  const r = pod.spec?.containers[0]?.resources;
  assert.deepEqual(r?.limits, { memory: "512Mi", cpu: "1500m" });
  assert.deepEqual(r?.requests, { memory: "512Mi", cpu: "1500m" });
  assert.equal(pod.metadata?.annotations?.["warren.pids-limit"], "4096");
});

test("a restricted security context: no token, own user namespace, every capability dropped but boxd's", () => {
  const pod = podManifest(spec, settings);
  const ps = pod.spec;
  assert.equal(ps?.automountServiceAccountToken, false);
  assert.equal(ps?.enableServiceLinks, false);
  assert.equal(ps?.hostUsers, false);
  assert.equal(ps?.hostNetwork, false);
  assert.equal(ps?.hostPID, false);
  assert.equal(ps?.hostIPC, false);
  assert.deepEqual(ps?.securityContext?.seccompProfile, { type: "RuntimeDefault" });
  const sc = ps?.containers[0]?.securityContext;
  assert.equal(sc?.allowPrivilegeEscalation, false);
  assert.equal(sc?.privileged, false);
  assert.equal(sc?.readOnlyRootFilesystem, true);
  assert.equal(sc?.runAsUser, 0);
  assert.equal(sc?.runAsNonRoot, false);
  assert.deepEqual(sc?.capabilities?.drop, ["ALL"]);
  assert.deepEqual(sc?.capabilities?.add, [
    "SETUID",
    "SETGID",
    "SETPCAP",
    "KILL",
    "SYS_ADMIN",
    "DAC_READ_SEARCH",
  ]);
  assert.deepEqual(sc?.seccompProfile, { type: "RuntimeDefault" });
  const local = podManifest(spec, {
    ...settings,
    seccomp: { kind: "localhost", profile: "warren/box.json" },
  });
  assert.deepEqual(local.spec?.securityContext?.seccompProfile, {
    type: "Localhost",
    localhostProfile: "warren/box.json",
  });
  assert.deepEqual(local.spec?.containers[0]?.securityContext?.seccompProfile, {
    type: "Localhost",
    localhostProfile: "warren/box.json",
  });
});

test("mounts: the machine's folder, private files and users by sub-path of the workspaces claim, /data and the contracts read-only from the shared claim, memory for /tmp and boxd's sockets", () => {
  const pod = podManifest(spec, settings);
  const mounts = pod.spec?.containers[0]?.volumeMounts;
  assert.deepEqual(mounts, [
    { name: "workspaces", mountPath: "/home", subPath: "mch_1" },
    { name: "shared", mountPath: "/data", subPath: "data", readOnly: true },
    { name: "shared", mountPath: "/opt/warren/contracts", subPath: "opt-warren-contracts", readOnly: true },
    { name: "tmp-3", mountPath: "/tmp" },
    { name: "boxd", mountPath: "/run/boxd" },
    { name: "calls", mountPath: "/run/calls" },
    { name: "workspaces", mountPath: "/opt/warren/private", subPath: ".private/mch_1", readOnly: true },
    { name: "workspaces", mountPath: "/etc/passwd", subPath: ".users/mch_1/passwd", readOnly: true },
    { name: "workspaces", mountPath: "/etc/group", subPath: ".users/mch_1/group", readOnly: true },
  ]);
  assert.deepEqual(pod.spec?.volumes, [
    { name: "workspaces", persistentVolumeClaim: { claimName: "warren-workspaces", readOnly: false } },
    { name: "tmp-3", emptyDir: { medium: "Memory", sizeLimit: "64Mi" } },
    { name: "shared", persistentVolumeClaim: { claimName: "warren-shared", readOnly: false } },
    { name: "boxd", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
    { name: "calls", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
  ]);
  assert.equal(IN_POD.privateDir, "/opt/warren/private");
  assert.deepEqual(workspaceSubPaths("mch_1"), {
    home: "mch_1",
    private: ".private/mch_1",
    passwd: ".users/mch_1/passwd",
    group: ".users/mch_1/group",
  });
  // no sub-path can leave the claim: ids are checked
  assert.throws(() => workspaceSubPaths("../x"), /sub-path/);
  assert.throws(() => workspaceSubPaths(".private"), /sub-path/);
  // no hostPath anywhere: a restricted namespace refuses it
  assert.ok(!JSON.stringify(pod).includes("hostPath"));
  // no /tmp in the spec: one of the limits' size
  const noTmp = podManifest({ ...spec, mounts: spec.mounts.slice(0, 1) }, settings);
  assert.deepEqual(
    noTmp.spec?.volumes?.find((v) => v.name === "tmp"),
    {
      name: "tmp",
      emptyDir: { medium: "Memory", sizeLimit: "64Mi" },
    },
  );
});

test("labels for adoption, on every object, and read back", () => {
  const pod = podManifest(spec, settings);
  const want = { ...spec.labels, "warren.box": "mch_1" };
  assert.deepEqual(pod.metadata?.labels, want);
  const policy = networkPolicyManifest(spec, "warren-boxes", { kind: "cidr", cidr: "10.0.0.5/32" });
  assert.deepEqual(policy.metadata?.labels, want);
  assert.deepEqual(boxLabelsOf(want), spec.labels);
  assert.equal(boxLabelsOf({ "warren.kind": "other" }), null);
  assert.equal(
    labelSelector({ "warren.provider": "kubernetes", "warren.org": undefined }),
    "warren.provider=kubernetes",
  );
  assert.throws(
    () => podManifest({ ...spec, labels: { ...spec.labels, "warren.org": "a b" } }, settings),
    /label/,
  );
});

test("the NetworkPolicy: both directions closed but to and from the server", () => {
  const byPods = networkPolicyManifest(spec, "warren-boxes", {
    kind: "pods",
    labels: { "app.kubernetes.io/name": "warren" },
  });
  assert.equal(byPods.apiVersion, "networking.k8s.io/v1");
  assert.equal(byPods.kind, "NetworkPolicy");
  assert.deepEqual(byPods.spec?.podSelector, {
    matchLabels: { "warren.box": "mch_1", "warren.kind": "machine" },
  });
  assert.deepEqual(byPods.spec?.policyTypes, ["Ingress", "Egress"]);
  const peer = { podSelector: { matchLabels: { "app.kubernetes.io/name": "warren" } } };
  assert.deepEqual(byPods.spec?.ingress, [{ _from: [peer] }]);
  assert.deepEqual(byPods.spec?.egress, [{ to: [peer] }]);
  const byCidr = networkPolicyManifest(spec, "warren-boxes", { kind: "cidr", cidr: "10.0.0.5/32" });
  assert.deepEqual(byCidr.spec?.egress, [{ to: [{ ipBlock: { cidr: "10.0.0.5/32" } }] }]);
});
