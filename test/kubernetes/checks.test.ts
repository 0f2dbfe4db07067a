// The boot checks of WARREN_PROVIDER=kubernetes against the fake API server: each missing
// part (the API server, the namespace, the storage class, the workspaces claim or its
// ReadWriteMany, a permission) refuses with its
// own line naming the fix, and the server does not start.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { loadKubeConfig } from "../../src/boxes/kubernetes/api.js";
import { RBAC_NEEDS } from "../../src/boxes/kubernetes/checks.js";
import { KubernetesProvider } from "../../src/boxes/kubernetes/provider.js";
import { parseConfig } from "../../src/config/index.js";
import { createServer } from "../../src/server.js";
import { FakeKube, type FakeKubeOptions } from "../support/fake-kube.js";

const NS = "warren-boxes";

describe("the kubernetes provider's boot checks", () => {
  let root: string;
  const fakes: FakeKube[] = [];

  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "wkc-"));
  });
  after(async () => {
    for (const f of fakes) await f.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  /** A fake with everything present but what `o` leaves out, and a provider of it. */
  /** A provider of the kubeconfig `file` in `dir` (one the test wrote, not the fake's own). */
  const providerOf = (dir: string, file: string) =>
    new KubernetesProvider({
      kubeConfig: loadKubeConfig(path.join(dir, file)),
      namespace: NS,
      image: "i",
      storageClass: "standard",
      sharedClaim: "s",
      workspacesClaim: "w",
      stateRoot: path.join(dir, "state2"),
    });
  async function setup(o: Partial<FakeKubeOptions> = {}) {
    const dir = fs.mkdtempSync(path.join(root, "f-"));
    const fake = new FakeKube({
      root: dir,
      namespaces: [NS],
      storageClasses: ["standard"],
      claims: [{ name: "warren-workspaces", accessModes: ["ReadWriteMany"] }],
      token: "t0ken",
      boxdBinary: "/nonexistent",
      bridgeBinary: "/nonexistent",
      ...o,
    });
    fakes.push(fake);
    await fake.listen();
    const kubeconfig = fake.kubeconfig(path.join(dir, "kubeconfig"));
    const provider = new KubernetesProvider({
      kubeConfig: loadKubeConfig(kubeconfig),
      namespace: NS,
      image: "warren-box:test",
      storageClass: "standard",
      sharedClaim: "warren-shared",
      workspacesClaim: "warren-workspaces",
      stateRoot: path.join(dir, "state"),
    });
    // a server of this fake, as an operator would configure it
    const serverConfig = parseConfig({
      STATE_ROOT: path.join(dir, "server"),
      LOG_LEVEL: "silent",
      WARREN_PROVIDER: "kubernetes",
      WARREN_K8S_KUBECONFIG: kubeconfig,
      WARREN_K8S_NAMESPACE: NS,
    });
    const probes = provider.hostProbes();
    const run = async () => {
      const out: Record<string, { ok: boolean; detail: string; fix: string }> = {};
      for (const [name, probe] of Object.entries(probes)) out[name] = await probe();
      return out;
    };
    return { fake, kubeconfig, dir, run, serverConfig };
  }

  /** The server refuses to start, with `line` for the missing part and no line for the others. */
  async function refusesToStart(o: Partial<FakeKubeOptions>, line: RegExp, others: RegExp) {
    const { serverConfig } = await setup(o);
    await assert.rejects(createServer(serverConfig, { defaultMetrics: false }), (err: Error) => {
      assert.match(err.message, line);
      assert.doesNotMatch(err.message, others);
      return true;
    });
  }

  it("everything present: every check passes, and RBAC is asked per verb and resource", async () => {
    const { fake, run } = await setup();
    const r = await run();
    assert.deepEqual(Object.keys(r), [
      "k8s_api",
      "k8s_namespace",
      "k8s_storage_class",
      "k8s_workspaces_claim",
      "k8s_rbac",
    ]);
    for (const [name, v] of Object.entries(r)) assert.equal(v.ok, true, `${name}: ${v.detail}`);
    assert.match(r.k8s_api!.detail, /answers \(v1\.33\.0-fake\)/);
    assert.equal(r.k8s_workspaces_claim!.detail, "the claim warren-workspaces exists and is ReadWriteMany");
    assert.ok(
      fake.calls.some(
        (c) =>
          c.method === "GET" &&
          c.path === `/api/v1/namespaces/${NS}/persistentvolumeclaims/warren-workspaces`,
      ),
    );
    const reviews = fake.calls
      .filter((c) => c.path === "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
      .map((c) => {
        const a = (c.body as { spec: { resourceAttributes: Record<string, string> } }).spec
          .resourceAttributes;
        return `${a.namespace} ${a.group}/${a.resource}${a.subresource ? `/${a.subresource}` : ""} ${a.verb}`;
      });
    const want = RBAC_NEEDS.flatMap((n) =>
      n.verbs.map((v) => `${NS} ${n.group}/${n.resource}${n.subresource ? `/${n.subresource}` : ""} ${v}`),
    );
    assert.deepEqual(reviews, want);
    assert.ok(reviews.includes(`${NS} /pods/exec create`));
    assert.ok(reviews.includes(`${NS} networking.k8s.io/networkpolicies create`));
  });

  it("no API server: k8s_api fails and says where it looked", async () => {
    const { kubeconfig, dir } = await setup();
    // a port nothing listens on
    const free = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const text = fs
      .readFileSync(kubeconfig, "utf8")
      .replace(/https:\/\/127\.0\.0\.1:\d+/, `https://127.0.0.1:${free}`);
    fs.writeFileSync(path.join(dir, "gone"), text);
    const p = providerOf(dir, "gone");
    const r = await p.hostProbes().k8s_api!();
    assert.equal(r.ok, false);
    assert.match(r.detail, new RegExp(`the API server at https://127\\.0\\.0\\.1:${free} does not answer`));
    assert.match(r.fix, /WARREN_K8S_KUBECONFIG/);
  });

  it("a wrong token: the checks fail with the API's 401", async () => {
    const { kubeconfig, dir } = await setup();
    fs.writeFileSync(path.join(dir, "bad"), fs.readFileSync(kubeconfig, "utf8").replace("t0ken", "wrong"));
    const p = providerOf(dir, "bad");
    const r = await p.hostProbes().k8s_namespace!();
    assert.equal(r.ok, false);
    assert.match(r.detail, /cannot be read \(status 401\)/);
  });

  it("no namespace: k8s_namespace fails alone, naming it", async () => {
    const { run } = await setup({ namespaces: [] });
    const r = await run();
    assert.equal(r.k8s_api!.ok, true);
    assert.equal(r.k8s_storage_class!.ok, true);
    assert.equal(r.k8s_namespace!.ok, false);
    assert.equal(r.k8s_namespace!.detail, `the namespace ${NS} does not exist`);
    assert.match(r.k8s_namespace!.fix, /kubectl create namespace warren-boxes/);
  });

  it("no storage class: k8s_storage_class fails alone, naming it", async () => {
    const { run } = await setup({ storageClasses: ["fast"] });
    const r = await run();
    assert.equal(r.k8s_namespace!.ok, true);
    assert.equal(r.k8s_storage_class!.ok, false);
    assert.equal(r.k8s_storage_class!.detail, "the storage class standard does not exist");
    assert.match(r.k8s_storage_class!.fix, /WARREN_K8S_STORAGE_CLASS/);
  });

  it("no workspaces claim: k8s_workspaces_claim fails alone, naming it", async () => {
    const { run } = await setup({ claims: [] });
    const r = await run();
    for (const name of ["k8s_api", "k8s_namespace", "k8s_storage_class", "k8s_rbac"])
      assert.equal(r[name]!.ok, true, name);
    assert.equal(r.k8s_workspaces_claim!.ok, false);
    assert.equal(r.k8s_workspaces_claim!.detail, `the claim warren-workspaces does not exist in ${NS}`);
    assert.match(r.k8s_workspaces_claim!.fix, /ReadWriteMany claim warren-workspaces/);
    assert.match(r.k8s_workspaces_claim!.fix, /WARREN_K8S_WORKSPACES_CLAIM/);
  });

  it("a workspaces claim that is ReadWriteOnce: k8s_workspaces_claim fails, saying why", async () => {
    const { run } = await setup({ claims: [{ name: "warren-workspaces", accessModes: ["ReadWriteOnce"] }] });
    const r = await run();
    assert.equal(r.k8s_workspaces_claim!.ok, false);
    assert.equal(
      r.k8s_workspaces_claim!.detail,
      "the claim warren-workspaces is ReadWriteOnce, not ReadWriteMany: the server and every box mount it",
    );
  });

  it("RBAC without exec or reading claims: k8s_rbac fails naming what is denied", async () => {
    const { run } = await setup({ deny: ["create pods/exec", "get persistentvolumeclaims"] });
    const r = await run();
    assert.equal(r.k8s_rbac!.ok, false);
    assert.equal(r.k8s_rbac!.detail, `RBAC denies create pods/exec, get persistentvolumeclaims in ${NS}`);
    assert.match(r.k8s_rbac!.fix, /deploy\/kubernetes\/rbac\.yaml/);
  });

  it("everything present: the server starts on kubernetes, lists its boxes by label, and /health answers", async () => {
    const { fake, serverConfig: config } = await setup();
    const server = await createServer(config, { defaultMetrics: false });
    try {
      const h = await server.app.inject({ method: "GET", url: "/health" });
      assert.equal(h.statusCode, 200, h.body);
      const lists = fake.calls.filter(
        (c) => c.method === "GET" && c.path === `/api/v1/namespaces/${NS}/pods`,
      );
      assert.ok(lists.length > 0, "the server looks for boxes to adopt");
      assert.ok(lists.every((c) => c.query.labelSelector?.includes("warren.provider=kubernetes")));
    } finally {
      await server.close();
    }
  });

  it("the server refuses to start on kubernetes without the workspaces claim, with its line", async () => {
    await refusesToStart(
      { claims: [] },
      new RegExp(
        `cannot start: k8s_workspaces_claim: the claim warren-workspaces does not exist in ${NS}; fix: create a ReadWriteMany claim`,
      ),
      /k8s_namespace|k8s_rbac|k8s_api|k8s_storage_class/,
    );
  });

  it("the server refuses to start on kubernetes with the missing part's line", async () => {
    await refusesToStart(
      { storageClasses: [] },
      /cannot start: k8s_storage_class: the storage class standard does not exist; fix: /,
      /k8s_namespace|k8s_rbac|k8s_api|k8s_workspaces_claim/,
    );
  });
});
