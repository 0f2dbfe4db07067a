// An agent's work on WARREN_PROVIDER=kubernetes, end to end through the HTTP API, against
// the fake API server (test/support/fake-kube.ts) whose Pods are real local boxes. The
// server's STATE_ROOT/workspaces is the workspaces claim's folder (as the server's Pod
// mounts the claim), and each Pod mounts its sub-paths: what an agent's command writes in
// its home is what the files API reads, and the other way round; the agent is a user in the
// box; a run's private files (its input) reach the Pod, its secret is redacted; the home's
// cap counts files written in the Pod; and the files are there after a stop and a start.
import assert from "node:assert/strict";
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { BOX_ROOT_HOST_ID } from "../../src/boxes/kit/boxd.js";
import { podName } from "../../src/boxes/kubernetes/manifests.js";
import { boxSkipReason, ensureBuilt, waitFor } from "../box/fixture.js";
import type { FakeKube } from "../support/fake-kube.js";
import type { TestServer } from "../support/server.js";
import { serveOnFakeKube } from "./support.js";
import { newAgent, orgAndMachine } from "../support/org.js";

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

describe(
  "an agent's work on the kubernetes provider (fake API server, real boxes)",
  { skip: boxSkipReason() ?? false },
  () => {
    let root: string;
    let stateRoot: string;
    let fake: FakeKube | undefined;
    let t: TestServer | undefined;
    let machine: { id: string };
    let agent: { id: string; uid: number };
    const secret = randomBytes(24).toString("base64url");

    const api = (): TestServer => {
      if (!t) throw new Error("the server did not start");
      return t;
    };
    const exec = async (command: string) => {
      const r = await api().call("POST", `/api/agents/${agent.id}/exec`, { command });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { exit_code: number; stdout: string; stderr: string };
    };
    const run = async (body: Record<string, unknown>) =>
      api().call("POST", `/api/agents/${agent.id}/runs`, { kind: "command", ...body });
    const finished = async (id: string, ms = 30_000) => {
      const end = Date.now() + ms;
      for (;;) {
        const r = (await api().call("GET", `/api/runs/${id}`)).body;
        if (terminal.includes(r.status)) return r;
        if (Date.now() > end) throw new Error(`run ${id} still ${r.status}`);
        await new Promise((res) => setTimeout(res, 30));
      }
    };
    const pod = () => fake?.objects.get(`pods/${podName(machine.id)}`);

    before(async () => {
      ensureBuilt();
      root = fs.mkdtempSync(path.join(os.tmpdir(), "wka-"));
      stateRoot = path.join(root, "server");
      t = await serveOnFakeKube({ root, stateRoot }, (f) => (fake = f));
      const made = await orgAndMachine(api().call, "k8s", { max_workspace_mib: 200 });
      machine = made.machine;
      agent = await newAgent(api().call, made, { name: "a", max_workspace_mib: 5 });
    });

    after(async () => {
      // the server's close removes every box it knows (each Pod, so each local box); the fake's
      // close removes any left
      await t?.close();
      await fake?.close();
      if (root) fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    });

    it("exec runs in the Pod as the agent's user, and its file is what the files API reads", async () => {
      const r = await exec("echo from the pod > note.txt && id -un && pwd");
      assert.equal(r.exit_code, 0, r.stderr);
      assert.equal(r.stdout, `${agent.id}\n/home/${agent.id}\n`);
      // the box is a Pod whose /home is the machine's sub-path of the workspaces claim
      const spec = pod()?.spec as {
        containers: { volumeMounts: { mountPath: string; subPath?: string }[] }[];
      };
      assert.equal(
        spec.containers[0]?.volumeMounts.find((m) => m.mountPath === "/home")?.subPath,
        machine.id,
      );
      const got = await api().inject({ method: "GET", url: `/api/agents/${agent.id}/files/note.txt` });
      assert.equal(got.statusCode, 200, got.body);
      assert.equal(got.body, "from the pod\n");
      const folder = await api().call("GET", `/api/agents/${agent.id}/folder?path=`);
      assert.ok(folder.body.entries.some((e: { name: string }) => e.name === "note.txt"));
    });

    it("a file written through the files API is the agent's, in the Pod", async () => {
      const put = await api().inject({
        method: "PUT",
        url: `/api/agents/${agent.id}/files/from-api.txt`,
        headers: { "content-type": "application/octet-stream" },
        payload: Buffer.from("written by the server\n"),
      });
      assert.equal(put.statusCode, 204, put.body);
      const r = await exec("cat from-api.txt && stat -c %U from-api.txt");
      assert.equal(r.exit_code, 0, r.stderr);
      assert.equal(r.stdout, `written by the server\n${agent.id}\n`);
    });

    it("an agent added while the Pod runs is a user in it at once (its passwd on the claim, rewritten in place)", async () => {
      assert.ok(pod(), "the Pod runs");
      const org = (await api().call("GET", `/api/agents/${agent.id}`)).body.org_id;
      const b = await api().call("POST", "/api/agents", { org_id: org, machine_id: machine.id, name: "b" });
      assert.equal(b.status, 201, JSON.stringify(b.body));
      const passwd = fs.readFileSync(
        path.join(stateRoot, "workspaces", ".users", machine.id, "passwd"),
        "utf8",
      );
      assert.match(passwd, new RegExp(`^${b.body.id}:x:${b.body.uid}:`, "m"));
      // the Pod sees the file as a bind shows it (the fake carries each change into the box)
      await waitFor("the new agent's user in the Pod", async () => {
        const r = await api().call("POST", `/api/agents/${b.body.id}/exec`, { command: "id -un" });
        return r.body.stdout === `${b.body.id}\n`;
      });
      const r = await exec(`getent passwd ${b.body.uid} | cut -d: -f1,3,6`);
      assert.equal(r.stdout, `${b.body.id}:${b.body.uid}:/home/${b.body.id}\n`);
    });

    it("a run with a secret: its private input reaches the Pod, the secret is redacted, and its files go after", async () => {
      const s = await api().call("POST", "/api/secrets", {
        org_id: (await api().call("GET", `/api/agents/${agent.id}`)).body.org_id,
        name: "K8S_TOKEN",
        value: secret,
        grants: [{ scope: "agent", id: agent.id }],
      });
      assert.equal(s.status, 201, JSON.stringify(s.body));
      const r = await run({
        command: 'cat /agent/input; echo " $K8S_TOKEN"; ls -ld /agent | cut -c1-10',
        input: "hello input",
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const done = await finished(r.body.id);
      assert.equal(done.status, "succeeded", JSON.stringify(done));
      assert.equal(done.output, "hello input [redacted]\ndr-x------\n");
      assert.ok(!JSON.stringify(done).includes(secret));
      // staged on the claim beside the machine's folder, box root's; gone once the run ended
      const privateDir = path.join(stateRoot, "workspaces", ".private", machine.id);
      const st = fs.statSync(privateDir);
      assert.equal(st.mode & 0o777, 0o700);
      assert.equal(st.uid, BOX_ROOT_HOST_ID);
      assert.deepEqual(fs.readdirSync(path.join(privateDir, "runs")), []);
      // an agent cannot reach the box's private folder
      const peek = await exec("ls /opt/warren/private 2>&1; echo $?");
      assert.match(peek.stdout, /Permission denied/);
    });

    it("the home's cap counts what the Pod wrote: over it, a run is refused; freed, it runs", async () => {
      const fill = await finished((await run({ command: "head -c 8388608 /dev/urandom > big.bin" })).body.id);
      assert.equal(fill.status, "succeeded", JSON.stringify(fill));
      assert.equal(
        fs.statSync(path.join(stateRoot, "workspaces", machine.id, agent.id, "big.bin")).size,
        8388608,
      );
      const usage = (await api().call("GET", `/api/agents/${agent.id}/usage`)).body;
      assert.ok(usage.workspace_mib >= 8, JSON.stringify(usage));
      const refused = await run({ command: "true" });
      assert.equal(refused.status, 507, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "workspace.full");
      assert.equal((await exec("rm big.bin && echo freed")).stdout, "freed\n");
      const ok = await run({ command: "true" });
      assert.equal(ok.status, 202, JSON.stringify(ok.body));
      assert.equal((await finished(ok.body.id)).status, "succeeded");
    });

    it("stop deletes the Pod; the files stay, and the next command's Pod sees them", async () => {
      const stopped = await api().call("POST", `/api/machines/${machine.id}/stop`);
      assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
      assert.equal(pod(), undefined, "the Pod is gone");
      const got = await api().inject({ method: "GET", url: `/api/agents/${agent.id}/files/note.txt` });
      assert.equal(got.body, "from the pod\n", "the files API reads the claim without a Pod");
      const r = await exec("cat note.txt from-api.txt && id -un");
      assert.equal(r.exit_code, 0, r.stderr);
      assert.equal(r.stdout, `from the pod\nwritten by the server\n${agent.id}\n`);
      assert.ok(pod(), "a new Pod runs the command");
    });

    it("deleting the agents and the machine deletes the Pod, its policy and everything of it on the claim", async () => {
      const agents = (await api().call("GET", `/api/agents?machine_id=${machine.id}`)).body.items as {
        id: string;
      }[];
      assert.equal(agents.length, 2);
      for (const a of agents) assert.equal((await api().call("DELETE", `/api/agents/${a.id}`)).status, 204);
      assert.equal((await api().call("DELETE", `/api/machines/${machine.id}`)).status, 204);
      assert.equal(pod(), undefined);
      assert.deepEqual(
        [...(fake?.objects.keys() ?? [])].filter((k) => !k.startsWith("persistentvolumeclaims/")),
        [],
      );
      const workspaces = path.join(stateRoot, "workspaces");
      for (const p of [machine.id, path.join(".private", machine.id), path.join(".users", machine.id)])
        assert.equal(fs.existsSync(path.join(workspaces, p)), false, p);
    });
  },
);
