// Every Kubernetes object warren ships or writes, validated against the official Kubernetes
// OpenAPI schema (kubernetes-models: validators generated from it, not written here): the
// server's manifests in deploy/kubernetes/, and the Pod and NetworkPolicy the kubernetes
// provider writes, as they reach the (fake) API server over HTTP. A broken manifest fails.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Deployment } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from "kubernetes-models/rbac.authorization.k8s.io/v1";
import {
  Namespace,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Service,
  ServiceAccount,
} from "kubernetes-models/v1";
import { parseAllDocuments } from "yaml";
import { BOX_ROOT_HOST_ID } from "../../src/boxes/kit/boxd.js";
import { prepareMachineDir } from "../../src/boxes/kit/homes.js";
import { loadKubeConfig } from "../../src/boxes/kubernetes/api.js";
import {
  networkPolicyManifest,
  podManifest,
  SERVER_POD_LABELS,
  type PodSettings,
} from "../../src/boxes/kubernetes/manifests.js";
import { KubernetesProvider } from "../../src/boxes/kubernetes/provider.js";
import type { BoxSpec } from "../../src/boxes/types.js";
import { boxSkipReason, ensureBuilt, testBoxdBinary } from "../box/fixture.js";
import { FakeKube } from "../support/fake-kube.js";

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/kubernetes");

/** The official schema's validator of an object's kind (an unknown kind is a failure). */
const KINDS: Record<string, new (o: any) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/PersistentVolume": PersistentVolume,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "v1/Service": Service,
  "v1/Pod": Pod,
  "apps/v1/Deployment": Deployment,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
};

/**
 * Validates one object against the official schema; also refuses what the schema lets pass
 * but the API server would drop: a field name of the client's models (`_from`) left in.
 */
function validate(o: { apiVersion?: string; kind?: string }): void {
  const Kind = KINDS[`${o.apiVersion}/${o.kind}`];
  if (!Kind) throw new Error(`no schema for ${o.apiVersion}/${o.kind}`);
  new Kind(o).validate();
  const walk = (v: unknown, at: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}[${i}]`));
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k.startsWith("_")) throw new Error(`${at}.${k}: not a field of the API (a client model's name)`);
        walk(x, `${at}.${k}`);
      }
  };
  walk(o, o.kind ?? "object");
}

function manifests(): {
  file: string;
  obj: { apiVersion?: string; kind?: string; metadata?: { name?: string } };
}[] {
  const out = [];
  for (const file of fs
    .readdirSync(deployDir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".yaml")))
    for (const doc of parseAllDocuments(fs.readFileSync(path.join(deployDir, file), "utf8"))) {
      assert.deepEqual(doc.errors, [], `${file}: YAML errors`);
      const obj = doc.toJS() as { apiVersion?: string; kind?: string } | null;
      if (obj) out.push({ file, obj });
    }
  return out;
}

const settings: PodSettings = {
  namespace: "warren-boxes",
  image: "warren-box:1",
  sharedClaim: "warren-shared",
  workspacesClaim: "warren-workspaces",
  seccomp: { kind: "runtime-default" },
  orphanAfterS: 300,
};
const base: BoxSpec = {
  id: "mch_1",
  labels: {
    "warren.kind": "machine",
    "warren.org": "org_1",
    "warren.machine": "mch_1",
    "warren.provider": "kubernetes",
  },
  mounts: [
    { kind: "bind", source: "/s/workspaces/mch_1", target: "/home", readOnly: false },
    { kind: "bind", source: "/s/data", target: "/data", readOnly: true },
    { kind: "bind", source: "/s/contracts", target: "/opt/warren/contracts", readOnly: true },
    { kind: "tmpfs", target: "/tmp", sizeMib: 64, mode: 0o1777 },
  ],
  limits: { memoryMib: 512, cpus: 1.5, pids: 4096, tmpMib: 64 },
  bridges: [{ name: "egress", port: 3128 }],
};

test("deploy/kubernetes: every object validates, and the server's parts are all there", () => {
  const all = manifests();
  for (const { file, obj } of all)
    assert.doesNotThrow(() => validate(obj), `${file}: ${obj.kind} ${obj.metadata?.name}`);
  const kinds = new Set(all.map(({ obj }) => `${obj.kind}/${obj.metadata?.name}`));
  for (const want of [
    "Deployment/warren",
    "ServiceAccount/warren",
    "Role/warren-boxes",
    "RoleBinding/warren-boxes",
    "PersistentVolumeClaim/warren-workspaces",
    "PersistentVolumeClaim/warren-state",
    "Service/warren",
    "NetworkPolicy/warren-server",
    // kind/volumes.yaml, the walk-through's one-node ReadWriteMany volumes
    "PersistentVolume/warren-boxes-workspaces",
    "PersistentVolume/warren-boxes-shared",
  ])
    assert.ok(kinds.has(want), `deploy/kubernetes has no ${want}`);
  // the server's Pod runs as the account rbac.yaml gives rights to, and mounts the workspaces claim
  const dep = all.find(({ obj }) => obj.kind === "Deployment")?.obj as any;
  assert.equal(dep.spec.template.spec.serviceAccountName, "warren");
  assert.ok(
    dep.spec.template.spec.volumes.some(
      (v: any) => v.persistentVolumeClaim?.claimName === "warren-workspaces",
    ),
  );
  // boxes (warren.kind=machine) are not among the peers of the server's ports
  const np = all.find(({ obj }) => obj.kind === "NetworkPolicy")?.obj as any;
  assert.deepEqual(np.spec.ingress[0].from[0].podSelector.matchExpressions, [
    { key: "warren.kind", operator: "DoesNotExist" },
  ]);
  // the server's Pods carry the labels every box's policy names as its one peer, and the
  // server's own policy and Service select them by those labels
  const podLabels = dep.spec.template.metadata.labels as Record<string, string>;
  for (const [k, v] of Object.entries(SERVER_POD_LABELS)) assert.equal(podLabels[k], v, k);
  assert.deepEqual(np.spec.podSelector.matchLabels, SERVER_POD_LABELS);
  const svc = all.find(({ obj }) => obj.kind === "Service")?.obj as any;
  assert.deepEqual(svc.spec.selector, SERVER_POD_LABELS);
});

test("a broken manifest fails the schema", () => {
  const dep = structuredClone(manifests().find(({ obj }) => obj.kind === "Deployment")?.obj) as any;
  dep.spec.replicas = "one";
  assert.throws(() => validate(dep), /replicas must be integer/);
  const noName = structuredClone(manifests().find(({ obj }) => obj.kind === "Deployment")?.obj) as any;
  delete noName.spec.template.spec.containers[0].name;
  assert.throws(() => validate(noName), /must have required property 'name'|required property name/);
  const badPolicy = networkPolicyManifest(base, "warren-boxes", { kind: "cidr", cidr: "10.0.0.5/32" });
  // the client's model, not serialized: `_from` is no field of the API
  assert.throws(() => validate(badPolicy), /_from/);
  assert.throws(() =>
    validate({ apiVersion: "v1", kind: "Pod", spec: { containers: [{ name: 3 }] } } as any),
  );
});

/** A NetworkPolicy as the client sends it: its model's `_from` is the API's `from`. */
const wire = (o: object): object => JSON.parse(JSON.stringify(o).replaceAll('"_from":', '"from":')) as object;

test("every Pod and NetworkPolicy manifests.ts writes validates (the variants of its settings)", () => {
  const pods = [
    podManifest(base, settings),
    podManifest({ ...base, mounts: base.mounts.slice(0, 1), bridges: [] }, settings),
    podManifest(base, { ...settings, seccomp: { kind: "localhost", profile: "warren/boxd.json" } }),
  ];
  for (const pod of pods) validate(pod);
  for (const peer of [
    { kind: "pods" as const, labels: { "app.kubernetes.io/name": "warren-server" } },
    { kind: "cidr" as const, cidr: "10.0.0.5/32" },
  ])
    validate(wire(networkPolicyManifest(base, "warren-boxes", peer)));
});

describe(
  "the objects the provider sends to the API server validate",
  { skip: boxSkipReason() ?? false },
  () => {
    let root: string;
    let fake: FakeKube | undefined;
    let provider: KubernetesProvider | undefined;
    const id = `s${process.pid.toString(36)}`;
    before(async () => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), "warren-k8s-schema-"));
      const workspaces = path.join(root, "workspaces");
      await prepareMachineDir(path.join(workspaces, id));
      ensureBuilt();
      fake = new FakeKube({
        root,
        namespaces: ["warren-boxes"],
        storageClasses: ["standard"],
        claims: [{ name: "warren-workspaces", accessModes: ["ReadWriteMany"], dir: workspaces }],
        token: "fake-token",
        boxdBinary: testBoxdBinary,
        bridgeBinary: path.join(path.dirname(testBoxdBinary), "box-bridge"),
      });
      await fake.listen();
      provider = new KubernetesProvider({
        kubeConfig: loadKubeConfig(fake.kubeconfig(path.join(root, "kubeconfig"))),
        namespace: "warren-boxes",
        image: "warren-box:test",
        storageClass: "standard",
        sharedClaim: "warren-shared",
        workspacesClaim: "warren-workspaces",
        workspacesRoot: workspaces,
        boxRootId: BOX_ROOT_HOST_ID,
        stateRoot: path.join(root, "state"),
        startTimeoutMs: 30_000,
      });
    });
    after(async () => {
      await provider?.remove(id).catch(() => undefined);
      provider?.close();
      await fake?.close();
      fs.rmSync(root, { recursive: true, force: true });
    });

    test("a started box's Pod and NetworkPolicy, as received", async () => {
      const p = provider as KubernetesProvider;
      await p.create({
        ...base,
        id,
        labels: { ...base.labels, "warren.machine": id },
        mounts: [
          { kind: "bind", source: path.join(root, "workspaces", id), target: "/home", readOnly: false },
          { kind: "tmpfs", target: "/tmp", sizeMib: 32, mode: 0o1777 },
        ],
        limits: { memoryMib: 256, cpus: 0.5, pids: 512, tmpMib: 32 },
      });
      await p.start(id);
      const sent = [...(fake as FakeKube).objects.entries()].filter(
        ([k]) => k.startsWith("pods/") || k.startsWith("networkpolicies/"),
      );
      assert.ok(
        sent.some(([k]) => k.startsWith("pods/")),
        "a Pod was sent",
      );
      assert.ok(
        sent.some(([k]) => k.startsWith("networkpolicies/")),
        "a NetworkPolicy was sent",
      );
      for (const [k, o] of sent) {
        // what the fake added on its own (the Pod's status) is the API server's, not the request's
        const { status: _status, ...request } = o as { status?: unknown };
        const obj = { apiVersion: k.startsWith("pods/") ? "v1" : "networking.k8s.io/v1", ...request };
        assert.doesNotThrow(() => validate(obj), k);
      }
      // the box's one peer is the server's Pods as deploy/kubernetes/server.yaml labels them
      const serverPod = manifests().find(({ obj }) => obj.kind === "Deployment")?.obj as any;
      const policy = sent.find(([k]) => k.startsWith("networkpolicies/"))?.[1] as any;
      for (const rule of [
        ...policy.spec.ingress.map((r: any) => r.from),
        ...policy.spec.egress.map((r: any) => r.to),
      ])
        assert.deepEqual(rule, [{ podSelector: { matchLabels: serverPod.spec.template.metadata.labels } }]);
    });
  },
);
