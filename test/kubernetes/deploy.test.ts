// deploy/kubernetes/ against what the provider does: the Role grants exactly RBAC_NEEDS (the
// calls src/boxes/kubernetes/api.ts makes) and the ClusterRole exactly the boot checks' two
// cluster-wide reads, both bound to the account the Deployment runs as; the Deployment's
// variables are the server's own settings; and a fake API server made of the manifests (their
// namespace, claims and the Role's rules deciding every access review) passes every boot check
// of a provider configured as the Deployment configures it, while one rule fewer fails k8s_rbac.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { loadKubeConfig } from "../../src/boxes/kubernetes/api.js";
import { RBAC_NEEDS } from "../../src/boxes/kubernetes/checks.js";
import { sharedSubPath } from "../../src/boxes/kubernetes/manifests.js";
import { KubernetesProvider } from "../../src/boxes/kubernetes/provider.js";
import { parseConfig } from "../../src/config/index.js";
import { FakeKube, type FakeRule } from "../support/fake-kube.js";

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/kubernetes");

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: any;
};

const objects: Obj[] = fs
  .readdirSync(deployDir, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".yaml"))
  .flatMap((f) =>
    parseAllDocuments(fs.readFileSync(path.join(deployDir, f), "utf8")).map((d) => d.toJS() as Obj),
  )
  .filter((o) => o !== null);
const one = (kind: string, name?: string): Obj => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(found.length, 1, `one ${kind}${name ? ` ${name}` : ""} in deploy/kubernetes`);
  return found[0]!;
};
const deployment = one("Deployment");
const container = deployment.spec.template.spec.containers[0];
/** The Deployment's variables (a secret's reference stands for its value). */
const env: Record<string, string> = Object.fromEntries(
  (container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value ?? `(${e.name})`]),
);
const namespace = env.WARREN_K8S_NAMESPACE!;

/** "group resource[/subresource] verb" for each grant of some rules. */
const grants = (rules: FakeRule[]): string[] =>
  rules
    .flatMap((r) =>
      (r.apiGroups ?? []).flatMap((g) =>
        (r.resources ?? []).flatMap((res) =>
          r.verbs.map((v) => `${g} ${res} ${v}${r.resourceNames ? ` ${r.resourceNames.join(",")}` : ""}`),
        ),
      ),
    )
    .sort();

test("the Role grants exactly what the provider does, the ClusterRole exactly the boot checks' reads", () => {
  const role = one("Role");
  assert.equal(role.metadata.namespace, namespace);
  for (const r of role.rules as FakeRule[])
    for (const x of [...(r.apiGroups ?? []), ...(r.resources ?? []), ...r.verbs])
      assert.notEqual(x, "*", "no wildcard in the Role");
  const needs = RBAC_NEEDS.flatMap((n) =>
    n.verbs.map((v) => `${n.group} ${n.resource}${n.subresource ? `/${n.subresource}` : ""} ${v}`),
  ).sort();
  assert.deepEqual(grants(role.rules), needs);
  // cluster-wide: the namespace (by name) and the storage class the boot checks read
  assert.deepEqual(grants(one("ClusterRole").rules), [
    ` namespaces get ${namespace}`,
    "storage.k8s.io storageclasses get",
  ]);
  // both bound to the account the server's Pod runs as
  const account = deployment.spec.template.spec.serviceAccountName as string;
  assert.equal(one("ServiceAccount").metadata.name, account);
  for (const [binding, role_] of [
    ["RoleBinding", "Role"],
    ["ClusterRoleBinding", "ClusterRole"],
  ] as const) {
    const b = one(binding);
    assert.deepEqual(b.subjects, [{ kind: "ServiceAccount", name: account, namespace }]);
    assert.deepEqual(b.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: role_,
      name: one(role_).metadata.name,
    });
  }
});

test("the Deployment's variables are the server's settings, its claims the manifests' own", () => {
  const config = parseConfig({ ...env, WARREN_MASTER_KEY: "ab".repeat(32) }) as unknown as Record<
    string,
    unknown
  >;
  for (const [name, value] of Object.entries(env))
    if (name !== "WARREN_MASTER_KEY") assert.equal(String(config[name]), value, name);
  const claims = objects.filter((o) => o.kind === "PersistentVolumeClaim").map((o) => o.metadata.name);
  for (const name of ["WARREN_K8S_WORKSPACES_CLAIM", "WARREN_K8S_SHARED_CLAIM"])
    assert.ok(claims.includes(env[name]!), `${name}=${env[name]} is a claim of deploy/kubernetes`);
  for (const o of objects)
    if (o.metadata.namespace !== undefined) assert.equal(o.metadata.namespace, namespace, o.kind);
  assert.equal(one("Namespace").metadata.name, namespace);
  // the workspaces claim is mounted at STATE_ROOT/workspaces, where the provider writes homes
  const volume = deployment.spec.template.spec.volumes.find(
    (v: any) => v.persistentVolumeClaim?.claimName === env.WARREN_K8S_WORKSPACES_CLAIM,
  );
  assert.ok(volume, "the Deployment mounts the workspaces claim");
  assert.ok(
    container.volumeMounts.some(
      (m: any) =>
        m.name === volume.name && m.mountPath === path.join(env.STATE_ROOT!, "workspaces") && !m.subPath,
    ),
  );
  // the shared claim's sub-paths that boxes see at /data and /opt/warren/contracts are the
  // server's STATE_ROOT/data and its contracts folder (WARREN_CONTRACTS unset: STATE_ROOT/contracts)
  assert.equal(env.WARREN_CONTRACTS, undefined);
  const shared = deployment.spec.template.spec.volumes.find(
    (v: any) => v.persistentVolumeClaim?.claimName === env.WARREN_K8S_SHARED_CLAIM,
  );
  assert.ok(shared, "the Deployment mounts the shared claim");
  for (const [inBox, onServer] of [
    ["/data", "data"],
    ["/opt/warren/contracts", "contracts"],
  ] as const)
    assert.ok(
      container.volumeMounts.some(
        (m: any) =>
          m.name === shared.name &&
          m.subPath === sharedSubPath(inBox) &&
          m.mountPath === path.join(env.STATE_ROOT!, onServer),
      ),
      `the shared claim's ${sharedSubPath(inBox)} at STATE_ROOT/${onServer}`,
    );
});

test("the one-node trial's volumes (kind/volumes.yaml) bind the two ReadWriteMany claims", () => {
  const gib = (q: string) => {
    const m = /^(\d+)(Mi|Gi|Ti)$/.exec(q);
    assert.ok(m, q);
    return Number(m[1]) * { Mi: 1 / 1024, Gi: 1, Ti: 1024 }[m[2] as "Mi" | "Gi" | "Ti"];
  };
  const volumes = objects.filter((o) => o.kind === "PersistentVolume");
  const bound = new Set<string>();
  for (const pv of volumes) {
    const claim = one("PersistentVolumeClaim", pv.spec.claimRef.name);
    assert.equal(pv.spec.claimRef.namespace, claim.metadata.namespace);
    // the claim takes the cluster's default class: kind's `standard`, which the server checks
    assert.equal(claim.spec.storageClassName, undefined);
    assert.equal(pv.spec.storageClassName, env.WARREN_K8S_STORAGE_CLASS);
    assert.deepEqual(pv.spec.accessModes, claim.spec.accessModes);
    assert.ok(gib(pv.spec.capacity.storage) >= gib(claim.spec.resources.requests.storage), pv.metadata.name);
    bound.add(claim.metadata.name);
  }
  assert.deepEqual([...bound].sort(), [env.WARREN_K8S_SHARED_CLAIM, env.WARREN_K8S_WORKSPACES_CLAIM].sort());
});

describe("a fake API server made of the manifests", () => {
  let root = "";
  const fakes: FakeKube[] = [];
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "warren-k8s-deploy-"));
  });
  after(async () => {
    for (const f of fakes) await f.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  /** The boot checks of a provider configured as the Deployment, against a fake holding the manifests' objects. */
  async function checks(rules: FakeRule[]) {
    const dir = fs.mkdtempSync(path.join(root, "f-"));
    const fake = new FakeKube({
      root: dir,
      namespaces: objects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name),
      // the cluster's class: the one the Deployment names (kind's and the default's `standard`)
      storageClasses: [env.WARREN_K8S_STORAGE_CLASS!],
      claims: objects
        .filter((o) => o.kind === "PersistentVolumeClaim")
        .map((o) => ({ name: o.metadata.name, accessModes: o.spec.accessModes as string[] })),
      rbac: { namespace: one("Role").metadata.namespace!, rules },
      token: "t0ken",
      boxdBinary: "/nonexistent",
      bridgeBinary: "/nonexistent",
    });
    fakes.push(fake);
    await fake.listen();
    const provider = new KubernetesProvider({
      kubeConfig: loadKubeConfig(fake.kubeconfig(path.join(dir, "kubeconfig"))),
      namespace,
      image: env.WARREN_K8S_IMAGE!,
      storageClass: env.WARREN_K8S_STORAGE_CLASS!,
      sharedClaim: env.WARREN_K8S_SHARED_CLAIM!,
      workspacesClaim: env.WARREN_K8S_WORKSPACES_CLAIM!,
      stateRoot: path.join(dir, "state"),
    });
    try {
      const out: Record<string, { ok: boolean; detail: string }> = {};
      for (const [name, probe] of Object.entries(provider.hostProbes())) out[name] = await probe();
      return out;
    } finally {
      provider.close();
    }
  }

  test("every boot check passes with the Role's rules deciding the access reviews", async () => {
    const r = await checks(one("Role").rules);
    assert.deepEqual(Object.keys(r).sort(), [
      "k8s_api",
      "k8s_namespace",
      "k8s_rbac",
      "k8s_storage_class",
      "k8s_workspaces_claim",
    ]);
    for (const [name, v] of Object.entries(r)) assert.equal(v.ok, true, `${name}: ${v.detail}`);
  });

  test("the Role without its exec rule: k8s_rbac names what is denied", async () => {
    const rules = (one("Role").rules as FakeRule[]).filter((r) => !r.resources?.includes("pods/exec"));
    const r = await checks(rules);
    assert.equal(r.k8s_rbac?.ok, false);
    assert.equal(r.k8s_rbac?.detail, `RBAC denies create pods/exec, get pods/exec in ${namespace}`);
  });
});
