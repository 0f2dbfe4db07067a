// The kubernetes provider against a fake API server (test/support/fake-kube.ts) whose Pods
// are real local boxes: the calls it makes (NetworkPolicy, Pod, watch, exec, delete), a real
// command run end to end through the API server's exec and box-bridge, the machine's folder
// on the workspaces claim (by sub-path) across a stop and a start, the box's users written
// there as homes come, adoption by a new provider, and removal.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { BOX_ROOT_HOST_ID } from "../../src/boxes/kit/boxd.js";
import { prepareHome, prepareMachineDir } from "../../src/boxes/kit/homes.js";
import { loadKubeConfig } from "../../src/boxes/kubernetes/api.js";
import { podName, policyName } from "../../src/boxes/kubernetes/manifests.js";
import { KubernetesProvider } from "../../src/boxes/kubernetes/provider.js";
import type { BoxSpec } from "../../src/boxes/types.js";
import { boxSkipReason, ensureBuilt, PATH, testBoxdBinary, waitFor } from "../box/fixture.js";
import { FakeKube } from "../support/fake-kube.js";

/** WARREN_TEST_K8S_KUBECONFIG: the same suite against a real cluster (docs/kubernetes.md). */
const real = process.env.WARREN_TEST_K8S_KUBECONFIG;
const skip = real ? null : boxSkipReason();
const NS = real ? (process.env.WARREN_TEST_K8S_NAMESPACE ?? "warren-boxes") : "warren-boxes";
/** A case that only the fake can show: skipped on a real cluster, with the reason. */
const fakeOnly = (why: string): { skip: string | false } => ({
  skip: real ? `needs the fake API server: ${why}` : false,
});

describe(
  "the kubernetes provider, against a fake API server backed by real boxes",
  { skip: skip ?? false },
  () => {
    let root: string;
    let fake: FakeKube | undefined;
    let kubeconfig: string;
    const providers: KubernetesProvider[] = [];
    const id = `k${process.pid.toString(36)}`;
    /** The server's mount of the workspaces claim (on a real cluster: WARREN_TEST_K8S_WORKSPACES). */
    let workspaces = "";
    let spec: BoxSpec;
    const makeSpec = (): BoxSpec => ({
      id,
      labels: {
        "warren.kind": "machine",
        "warren.org": "org-k8s",
        "warren.machine": id,
        "warren.provider": "kubernetes",
      },
      mounts: [
        { kind: "bind", source: path.join(workspaces, id), target: "/home", readOnly: false },
        { kind: "tmpfs", target: "/tmp", sizeMib: 32, mode: 0o1777 },
      ],
      limits: { memoryMib: 256, cpus: 0.5, pids: 512, tmpMib: 32 },
      bridges: [{ name: "egress", port: 3128 }],
    });
    const uid = 47000 + (process.pid % 900);
    const provider = (): KubernetesProvider => {
      const p = new KubernetesProvider({
        kubeConfig: loadKubeConfig(kubeconfig),
        namespace: NS,
        image: "warren-box:test",
        storageClass: real ? (process.env.WARREN_TEST_K8S_STORAGE_CLASS ?? "standard") : "standard",
        sharedClaim: "warren-shared",
        workspacesClaim: "warren-workspaces",
        workspacesRoot: workspaces,
        // the fake's Pods are local boxes: box root is the local provider's host id there
        boxRootId: real ? Number(process.env.WARREN_TEST_K8S_BOX_ROOT_ID ?? 0) : BOX_ROOT_HOST_ID,
        stateRoot: path.join(root, "state"),
        startTimeoutMs: 30_000,
      });
      providers.push(p);
      return p;
    };
    const echo = (p: KubernetesProvider, script: string) =>
      p.client(id).exec({
        argv: ["/bin/sh", "-c", script],
        env: { PATH },
        cwd: "/tmp",
        uid,
        gid: uid,
        timeoutMs: 20_000,
      });

    before(async () => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), "wk-"));
      workspaces = process.env.WARREN_TEST_K8S_WORKSPACES ?? path.join(root, "workspaces");
      spec = makeSpec();
      await prepareMachineDir(path.join(workspaces, id));
      if (real) {
        kubeconfig = real;
        return;
      }
      ensureBuilt();
      fake = new FakeKube({
        root,
        namespaces: [NS],
        storageClasses: ["standard"],
        claims: [{ name: "warren-workspaces", accessModes: ["ReadWriteMany"], dir: workspaces }],
        token: "fake-token",
        boxdBinary: testBoxdBinary,
        bridgeBinary: path.join(path.dirname(testBoxdBinary), "box-bridge"),
      });
      await fake.listen();
      kubeconfig = fake.kubeconfig(path.join(root, "kubeconfig"));
    });

    after(async () => {
      // on a real cluster, nothing of the suite's is left there whatever failed
      if (real) await providers[0]?.remove(id).catch(() => undefined);
      for (const p of providers) p.close();
      await fake?.close();
      if (root) fs.rmSync(root, { recursive: true, force: true });
    });

    it("starts a box as a Pod: NetworkPolicy, Pod, a watch until Running; and runs a command through exec", async () => {
      const p = provider();
      const created = await p.create(spec);
      assert.equal(created.state, "created");
      const h = await p.start(id);
      assert.equal(h.state, "running");
      assert.equal(h.endpoint.kind, "unix");

      // a real command, through the relay, the API server's exec and box-bridge, to boxd
      const before = fake?.calls.length ?? 0;
      const r = await echo(p, "echo hello from the pod; id -u");
      assert.equal(r.exitCode, 0, r.stderr.toString());
      assert.equal(r.stdout.toString(), `hello from the pod\n${uid}\n`);
      // stdin streams through, and a failing command's exit comes back as itself
      const cat = await p
        .client(id)
        .exec({ argv: ["/bin/cat"], env: { PATH }, cwd: "/tmp", uid, gid: uid, stdin: "piped\n" });
      assert.equal(cat.stdout.toString(), "piped\n");
      const fail = await echo(p, "echo err >&2; exit 7");
      assert.equal(fail.exitCode, 7);
      assert.equal(fail.stderr.toString(), "err\n");
      // what only the fake shows: the calls, in order, and their bodies as the API received them
      if (!fake) return;
      const base = `/api/v1/namespaces/${NS}`;
      const exec = fake.calls.slice(before).find((c) => c.path === `${base}/pods/${podName(id)}/exec`);
      assert.ok(exec, "the command went through exec");
      assert.deepEqual(exec.argv, ["/usr/lib/warren/box-bridge", "/run/boxd/boxd.sock"]);
      assert.equal(exec.query.container, "boxd");
      assert.equal(exec.query.stdin, "true");

      const calls = fake.calls.map((c) => `${c.method} ${c.path}`);
      const at = (what: string) => calls.indexOf(what);
      assert.equal(at(`POST ${base}/persistentvolumeclaims`), -1, "no claim per machine");
      assert.ok(
        at(`POST /apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`) >= 0,
        calls.join("\n"),
      );
      assert.ok(
        at(`POST ${base}/pods`) > at(`POST /apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`),
      );
      const watch = fake.calls.find(
        (c) => c.method === "GET" && c.path === `${base}/pods` && c.query.watch === "true",
      );
      assert.ok(watch, "the provider watches its Pod");
      assert.equal(watch.query.fieldSelector, `metadata.name=${podName(id)}`);
      assert.ok(Number(watch.query.resourceVersion) > 0, "from the created Pod's resourceVersion");
      assert.ok(fake.calls.every((c) => c.authorization === "Bearer fake-token"));

      // the bodies as the API received them (the client's serialization: `from`, not `_from`)
      const podBody = fake.calls.find((c) => c.method === "POST" && c.path === `${base}/pods`)?.body as {
        metadata: { name: string; labels: Record<string, string> };
        spec: {
          automountServiceAccountToken: boolean;
          hostUsers: boolean;
          containers: { securityContext: object }[];
        };
      };
      assert.equal(podBody.metadata.name, podName(id));
      assert.equal(podBody.metadata.labels["warren.machine"], id);
      assert.equal(podBody.spec.automountServiceAccountToken, false);
      assert.equal(podBody.spec.hostUsers, false);
      assert.deepEqual(podBody.spec.containers[0]?.securityContext, {
        runAsUser: 0,
        runAsGroup: 0,
        runAsNonRoot: false,
        privileged: false,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: {
          drop: ["ALL"],
          add: ["SETUID", "SETGID", "SETPCAP", "KILL", "SYS_ADMIN", "DAC_READ_SEARCH"],
        },
        seccompProfile: { type: "RuntimeDefault" },
      });
      const policy = fake.calls.find((c) => c.method === "POST" && c.path.endsWith("/networkpolicies"))
        ?.body as {
        spec: { ingress: object[] };
      };
      assert.deepEqual(policy.spec.ingress, [
        // the labels of deploy/kubernetes/server.yaml's Pods
        { from: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "warren-server" } } }] },
      ]);
    });

    it("the machine's folder is the workspaces claim's sub-path: a home the server writes is the box's, its user comes with refreshUsers, a file written in the box stays across a stop and a start", async () => {
      const p = provider();
      const machine = path.join(workspaces, id);
      await prepareHome(machine, "a1", uid, "isolated");
      // the new home's user, in the running Pod's /etc/passwd (a sub-path of the claim)
      await p.refreshUsers(id);
      assert.match(
        fs.readFileSync(path.join(workspaces, ".users", id, "passwd"), "utf8"),
        new RegExp(`^a1:x:${uid}:`, "m"),
      );
      await waitFor(
        "the agent's user in the box",
        async () => (await echo(p, "id -un")).stdout.toString() === "a1\n",
      );
      const w = await p.client(id).exec({
        argv: ["/bin/sh", "-c", "echo kept > /home/a1/note"],
        env: { PATH },
        cwd: "/home/a1",
        uid,
        gid: uid,
      });
      assert.equal(w.exitCode, 0, w.stderr.toString());
      if (!real) assert.equal(fs.readFileSync(path.join(machine, "a1", "note"), "utf8"), "kept\n");

      await p.stop(id);
      const del = fake?.calls.find((c) => c.method === "DELETE" && c.path.endsWith(`/pods/${podName(id)}`));
      if (fake) assert.equal(del?.query.gracePeriodSeconds, "0");
      assert.equal((await p.inspect(id))?.state, "stopped");
      if (fake) assert.equal(fake.objects.has(`pods/${podName(id)}`), false);
      await assert.rejects(
        echo(p, "true"),
        (err: Error & { code?: string }) => err.code === "box.unavailable",
      );

      await p.start(id);
      const r = await p
        .client(id)
        .exec({ argv: ["/bin/cat", "/home/a1/note"], env: { PATH }, cwd: "/", uid, gid: uid });
      assert.equal(r.stdout.toString(), "kept\n");
      assert.equal((await echo(p, "id -un")).stdout.toString(), "a1\n");
    });

    it("a new provider (a restarted server) finds the box by its labels and reaches its boxd", async () => {
      const p = provider();
      const listed = await p.list({ "warren.org": "org-k8s" });
      assert.deepEqual(
        listed.map((b) => [b.id, b.state, b.labels["warren.machine"]]),
        [[id, "running", id]],
      );
      const list = fake?.calls
        .filter((c) => c.method === "GET" && c.path === `/api/v1/namespaces/${NS}/pods` && !c.query.watch)
        .at(-1);
      if (fake) assert.equal(list?.query.labelSelector, "warren.org=org-k8s,warren.provider=kubernetes");
      assert.deepEqual(await p.list({ "warren.org": "another" }), []);
      const r = await echo(p, "echo adopted");
      assert.equal(r.stdout.toString(), "adopted\n");
    });

    it("pause is refused with box.unavailable, and the provider says it never pauses (a Pod cannot be frozen through the API)", async () => {
      const p = provider();
      // the idle timer asks this, and stops idle boxes instead (src/compose/services.ts)
      assert.equal(p.pauses, false);
      await assert.rejects(p.pause(id), (err: Error & { code?: string }) => {
        assert.equal(err.code, "box.unavailable");
        assert.match(err.message, /cannot pause/);
        return true;
      });
    });

    it(
      "a Pod that fails to run: start refuses with box.unavailable and the Pod's message, and deletes the Pod",
      fakeOnly("the fake's Pods fail when boxd cannot start"),
      async () => {
        const dir = fs.mkdtempSync(path.join(root, "broken-"));
        const broken = new FakeKube({
          root: dir,
          namespaces: [NS],
          storageClasses: ["standard"],
          claims: [{ name: "warren-workspaces", accessModes: ["ReadWriteMany"], dir: workspaces }],
          token: "fake-token",
          boxdBinary: path.join(dir, "no-boxd"),
          bridgeBinary: path.join(path.dirname(testBoxdBinary), "box-bridge"),
        });
        try {
          await broken.listen();
          const p = new KubernetesProvider({
            kubeConfig: loadKubeConfig(broken.kubeconfig(path.join(dir, "kubeconfig"))),
            namespace: NS,
            image: "warren-box:test",
            storageClass: "standard",
            sharedClaim: "warren-shared",
            workspacesClaim: "warren-workspaces",
            workspacesRoot: workspaces,
            boxRootId: BOX_ROOT_HOST_ID,
            stateRoot: path.join(dir, "state"),
            startTimeoutMs: 30_000,
          });
          providers.push(p);
          const other: BoxSpec = {
            ...spec,
            id: `${id}b`,
            labels: { ...spec.labels, "warren.machine": `${id}b` },
            mounts: [
              { kind: "bind", source: path.join(workspaces, `${id}b`), target: "/home", readOnly: false },
            ],
          };
          await p.create(other);
          await assert.rejects(p.start(other.id), (err: Error & { code?: string }) => {
            assert.equal(err.code, "box.unavailable");
            assert.match(err.message, new RegExp(`box ${other.id} did not start: the Pod is Failed: .+`));
            return true;
          });
          assert.equal(broken.objects.has(`pods/${podName(other.id)}`), false, "the failed Pod is deleted");
          assert.equal((await p.inspect(other.id))?.state, "stopped");
          await p.remove(other.id);
        } finally {
          await broken.close();
        }
      },
    );

    it("remove deletes the Pod, its NetworkPolicy and what the provider wrote on the claim; the machine's folder is the server's", async () => {
      const p = provider();
      await p.remove(id);
      assert.equal(await p.inspect(id), null);
      assert.equal(fs.existsSync(path.join(workspaces, ".private", id)), false);
      assert.equal(fs.existsSync(path.join(workspaces, ".users", id)), false);
      assert.equal(fs.existsSync(path.join(workspaces, id, "a1")), true);
      if (!fake) return;
      const deleted = fake.calls.filter((c) => c.method === "DELETE").map((c) => c.path);
      assert.ok(
        deleted.includes(`/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/${policyName(id)}`),
      );
      assert.deepEqual([...fake.objects.keys()], ["persistentvolumeclaims/warren-workspaces"]);
      assert.deepEqual(await fake.local.list(), [], "no box is left behind the Pod");
    });
  },
);
