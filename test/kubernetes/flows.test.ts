// Flows on WARREN_PROVIDER=kubernetes, against the fake API server (test/support/fake-kube.ts)
// whose Pods are real local boxes: the contracts are the shared claim's `opt-warren-contracts`
// sub-path (WARREN_CONTRACTS on the server, /opt/warren/contracts in every Pod), and a flow
// instance's /workspace is a folder of the workspaces claim's `.flows` sub-path (the server's
// STATE_ROOT/workspaces/.flows, every Pod's /opt/warren/flows): what one agent writes there the
// other reads, in another Pod, and the server finds at the instance's host_path.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { podName } from "../../src/boxes/kubernetes/manifests.js";
import { boxSkipReason, ensureBuilt } from "../box/fixture.js";
import type { FakeKube } from "../support/fake-kube.js";
import type { TestServer } from "../support/server.js";
import { serveOnFakeKube } from "./support.js";
import { flowRun } from "../support/flows.js";

const POLICY = `workspace_classes:
  shared_instance:
    workspace_scope: per-flow-instance
permission_bundles:
  worker:
    tools: [run_command]
`;
const CONTRACT = `name: pair
org: k8s
agents:
  - { name: a, workspace_class: shared_instance, permission_bundle: worker }
  - { name: b, workspace_class: shared_instance, permission_bundle: worker }
files: [notes.md]
`;

describe(
  "flows on the kubernetes provider (fake API server, real boxes)",
  { skip: boxSkipReason() ?? false },
  () => {
    let root: string;
    let fake: FakeKube | undefined;
    let t: TestServer | undefined;
    const agents: Record<string, string> = {};
    const machines: Record<string, string> = {};

    const api = (): TestServer => {
      if (!t) throw new Error("the server did not start");
      return t;
    };
    const run = (agentId: string, command: string, instanceId: string) =>
      flowRun(api().call, agentId, command, instanceId);

    before(async () => {
      ensureBuilt();
      root = fs.mkdtempSync(path.join(os.tmpdir(), "wkf-"));
      const stateRoot = path.join(root, "server");
      const shared = path.join(root, "shared");
      const contracts = path.join(shared, "opt-warren-contracts");
      fs.mkdirSync(path.join(contracts, "pair"), { recursive: true, mode: 0o755 });
      fs.chmodSync(shared, 0o755);
      fs.writeFileSync(path.join(contracts, "pair", "flow.yaml"), CONTRACT);
      fs.writeFileSync(path.join(contracts, "pair", "notes.md"), "shipped notes\n");
      fs.mkdirSync(stateRoot, { recursive: true });
      fs.writeFileSync(path.join(stateRoot, "policy.yaml"), POLICY);
      t = await serveOnFakeKube(
        { root, stateRoot, shared, env: { WARREN_CONTRACTS: contracts } },
        (f) => (fake = f),
      );
      const org = (await api().call("POST", "/api/orgs", { name: "k8s" })).body;
      // each agent on a machine of its own: two Pods share the instance's /workspace
      for (const name of ["a", "b"]) {
        machines[name] = (
          await api().call("POST", "/api/machines", { org_id: org.id, name: `m${name}` })
        ).body.id;
        const a = await api().call("POST", "/api/agents", {
          org_id: org.id,
          machine_id: machines[name],
          name,
          workspace_class: "shared_instance",
        });
        assert.equal(a.status, 201, JSON.stringify(a.body));
        agents[name] = a.body.id;
      }
    });

    after(async () => {
      await t?.close();
      await fake?.close();
      if (root) fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    });

    it("a contract flow's instance shares /workspace on the workspaces claim across Pods; each agent reads its contract", async () => {
      // the agents were made after the boot: the reload brings the contract in
      const reload = await api().call("POST", "/api/flows/reload");
      assert.equal(reload.status, 200, JSON.stringify(reload.body));
      assert.equal(reload.body.flows.length, 1, JSON.stringify(reload.body));
      const flow = reload.body.flows[0];
      const i = await api().call("POST", `/api/flows/${flow.id}/instances`, {});
      assert.equal(i.status, 201, JSON.stringify(i.body));
      assert.equal(i.body.revision, flow.revision);
      assert.equal(
        i.body.workspace.host_path,
        path.join(api().stateRoot, "workspaces", ".flows", i.body.id, "workspace"),
      );
      const wrote = await run(
        agents.a!,
        "echo from a > /workspace/handoff && cat /opt/warren/contracts/self/notes.md",
        i.body.id,
      );
      assert.equal(wrote.status, "succeeded", JSON.stringify(wrote));
      assert.equal(wrote.output, "shipped notes\n");
      const read = await run(
        agents.b!,
        "cat /workspace/handoff; echo x > /opt/warren/contracts/self/notes.md || echo refused",
        i.body.id,
      );
      assert.equal(read.output, "from a\nrefused\n");
      assert.equal(fs.readFileSync(path.join(i.body.workspace.host_path, "handoff"), "utf8"), "from a\n");
      // each Pod mounts the instances' folder from the workspaces claim's .flows sub-path
      for (const m of Object.values(machines)) {
        const spec = fake?.objects.get(`pods/${podName(m)}`)?.spec as {
          containers: { volumeMounts: { name: string; mountPath: string; subPath?: string }[] }[];
        };
        const mount = spec.containers[0]?.volumeMounts.find((v) => v.mountPath === "/opt/warren/flows");
        assert.deepEqual(
          { name: mount?.name, subPath: mount?.subPath },
          { name: "workspaces", subPath: ".flows" },
        );
      }
    });
  },
);
