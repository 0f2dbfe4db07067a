// Workspaces on real boxes: /workspace by class (per-agent, private, kept or fresh per run),
// per flow instance (shared by the instance's agents only, kept when it ends), /data and the
// contracts read-only under every class, and the boot checks that refuse.
import assert from "node:assert/strict";
import fs from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { TERMINAL_STATUSES } from "../support/agent-runs.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { agentLabels } from "../../src/workspaces/service.js";
import { WarrenClient } from "../../src/sdk/index.js";
import { tty, type Tty } from "../terminal/ws.js";
import { classAgent, commandRun, serverWithPolicy, stateWithPolicy } from "./support.js";

/** Runs a command run (optionally inside a flow instance) and waits until it ends. */
async function runCommand(
  t: TestServer,
  agentId: string,
  command: string,
  instanceId?: string,
): Promise<{ status: string; output: string; id: string }> {
  const r = await commandRun(t, agentId, command, instanceId);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

for (const leg of dbLegs)
  describe(`workspaces on real boxes (${leg.name})`, { skip: boxSkipReason() ?? leg.skip ?? false }, () => {
    let root: string;
    let t: TestServer;
    let org: { id: string };
    const machines: Record<"isolated" | "shared", { id: string }> = {} as never;
    const exec = (agentId: string, command: string) =>
      t.call("POST", `/api/agents/${agentId}/exec`, { command }).then((r) => {
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body as { exit_code: number; stdout: string; stderr: string };
      });
    const agent = async (machine: { id: string }, name: string, spec: Record<string, unknown> = {}) => {
      const r = await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machine.id,
        name,
        ...spec,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body as { id: string; uid: number; workspace_class: string | null; memory: boolean };
    };

    before(async () => {
      t = await serverWithPolicy({ leg });
      root = t.stateRoot;
      org = (await t.call("POST", "/api/orgs", { name: "ws" })).body;
      for (const trust of ["isolated", "shared"] as const)
        machines[trust] = (
          await t.call("POST", "/api/machines", { org_id: org.id, name: trust, memory_mib: 512, trust })
        ).body;
      await writeFile(path.join(root, "data", "ref.txt"), "reference\n");
      await writeFile(path.join(root, "contracts", "flow.yaml"), "contract\n");
    });
    after(async () => {
      await t?.close();
    });

    test("an agent's spec names a declared class; an undeclared one is refused", async () => {
      const r = await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machines.isolated.id,
        name: "bad",
        workspace_class: "nope",
      });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, "request.invalid");
      assert.match(r.body.error.message, /workspace_class: "nope".*private_scratch, shared_instance/);
      const none = await agent(machines.isolated, "none");
      assert.equal(none.workspace_class, null);
      assert.equal(none.memory, true);
      // without a class, /workspace is the box's empty, read-only mount point
      const e = await exec(none.id, "ls -A /workspace; touch /workspace/x 2>&1; echo $?");
      assert.match(e.stdout, /\n?[1-9]\d*\n$/);
    });

    for (const trust of ["isolated", "shared"] as const) {
      test(`per-agent: private to its agent, kept across runs, removed with it (${trust} machine)`, async () => {
        const m = machines[trust];
        const a = await agent(m, `a-${trust}`, { workspace_class: "private_scratch" });
        const b = await agent(m, `b-${trust}`, { workspace_class: "private_scratch" });
        // made when the agent is registered
        const host = path.join(root, "workspaces", m.id, ".workspaces", a.id);
        assert.ok(fs.statSync(path.join(host, "main")).isDirectory());
        assert.equal(fs.statSync(path.join(host, "main")).uid, a.uid);
        const labels = JSON.parse(fs.readFileSync(path.join(host, "labels.json"), "utf8"));
        assert.deepEqual(labels, {
          "warren.kind": "agent",
          "warren.owner": org.id,
          "warren.agent": a.id,
          "warren.machine": m.id,
        });

        const w = await runCommand(t, a.id, "echo mine > /workspace/a.txt && id -u && stat -c %u /workspace");
        assert.equal(w.status, "succeeded", JSON.stringify(w));
        assert.equal(w.output, `${a.uid}\n${a.uid}\n`);
        // kept across runs and commands (memory: true, the default)
        const again = await runCommand(t, a.id, "cat /workspace/a.txt");
        assert.equal(again.output, "mine\n");
        assert.equal((await exec(a.id, "cat /workspace/a.txt")).stdout, "mine\n");

        // another agent of the same machine: its own, empty workspace; A's by any path is closed
        assert.equal((await exec(b.id, "ls -A /workspace")).stdout, "");
        const peek = await exec(
          b.id,
          `cat /home/.workspaces/${a.id}/main/a.txt 2>&1; ls /home/.workspaces/${a.id}/main 2>&1; ls /home/.workspaces 2>&1; echo end`,
        );
        assert.doesNotMatch(peek.stdout, /mine/);
        assert.equal(peek.stdout.match(/Permission denied/g)?.length, 3, peek.stdout);
        assert.match(peek.stdout, /end\n$/);

        // removed with the agent
        assert.equal((await t.call("DELETE", `/api/agents/${a.id}`)).status, 204);
        assert.equal(fs.existsSync(host), false);
      });
    }

    test("the disk caps and measurement count an agent's workspace like its home", async () => {
      const a = await agent(machines.isolated, "big", { workspace_class: "private_scratch" });
      const r = await runCommand(t, a.id, "head -c 3145728 /dev/urandom > /workspace/big && echo ok");
      assert.equal(r.output, "ok\n");
      const usage = (await t.call("GET", `/api/agents/${a.id}/usage`)).body;
      assert.ok(usage.workspace_mib >= 3, JSON.stringify(usage));
      assert.ok(usage.machine.workspace_mib >= 3, JSON.stringify(usage));
      // over its cap, the next generation is refused like for a home
      assert.equal((await t.call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: 1 })).status, 200);
      const refused = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "command", command: "true" });
      assert.equal(refused.status, 507, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "workspace.full");
    });

    test("memory: false gets a fresh workspace for every run, gone after it", async () => {
      const c = await agent(machines.isolated, "forgetful", {
        workspace_class: "private_scratch",
        memory: false,
      });
      assert.equal(c.memory, false);
      const first = await runCommand(
        t,
        c.id,
        "ls -A /workspace; echo was-here > /workspace/x; cat /workspace/x",
      );
      assert.equal(first.status, "succeeded", JSON.stringify(first));
      assert.equal(first.output, "was-here\n");
      const second = await runCommand(t, c.id, "ls -A /workspace; echo ok");
      assert.equal(second.output, "ok\n");
      // nothing of either run is left on the host
      const runs = path.join(root, "workspaces", machines.isolated.id, ".workspaces", c.id, "runs");
      assert.deepEqual(fs.existsSync(runs) ? fs.readdirSync(runs) : [], []);
      // an exec is a unit of work of its own too
      assert.equal((await exec(c.id, "ls -A /workspace; touch /workspace/y; ls /workspace")).stdout, "y\n");
      assert.equal((await exec(c.id, "ls -A /workspace")).stdout, "");
    });

    test("per-flow-instance: shared by the instance's agents, invisible to another instance, kept when it ends", async () => {
      const f1 = await agent(machines.isolated, "f1", { workspace_class: "shared_instance" });
      const f2 = await agent(machines.shared, "f2", { workspace_class: "shared_instance" });
      const outsider = await agent(machines.isolated, "outsider", { workspace_class: "shared_instance" });
      const flow = await t.call("POST", "/api/flows", {
        org_id: org.id,
        name: "fulfilment",
        agent_ids: [f1.id, f2.id],
      });
      assert.equal(flow.status, 201, JSON.stringify(flow.body));
      assert.deepEqual([...flow.body.agent_ids].sort(), [f1.id, f2.id].sort());
      const i1 = await t.call("POST", `/api/flows/${flow.body.id}/instances`, { name: "order-1" });
      assert.equal(i1.status, 201, JSON.stringify(i1.body));
      assert.equal(i1.body.status, "running");
      assert.equal(i1.body.flow_id, flow.body.id);
      assert.equal(i1.body.workspace.path, "/workspace");
      const i2 = (await t.call("POST", `/api/flows/${flow.body.id}/instances`, {})).body;

      // two agents (on two machines) of one instance share it
      const w = await runCommand(
        t,
        f1.id,
        "echo from-f1 > /workspace/shared.txt && cat /workspace/shared.txt",
        i1.body.id,
      );
      assert.equal(w.status, "succeeded", JSON.stringify(w));
      const r = await runCommand(
        t,
        f2.id,
        "cat /workspace/shared.txt && echo from-f2 > /workspace/f2.txt",
        i1.body.id,
      );
      assert.equal(r.output, "from-f1\n");
      assert.equal(r.status, "succeeded", JSON.stringify(r));
      // a second instance sees none of it, by /workspace or by the first one's path
      const other = await runCommand(
        t,
        f2.id,
        `ls -A /workspace; cat /opt/warren/flows/${i1.body.id}/workspace/shared.txt 2>&1; ls /opt/warren/flows 2>&1; echo end`,
        i2.id,
      );
      assert.equal(
        other.output,
        `cat: /opt/warren/flows/${i1.body.id}/workspace/shared.txt: Permission denied\n` +
          "ls: cannot open directory '/opt/warren/flows': Permission denied\nend\n",
      );
      // outside an instance, a per-flow-instance agent has no workspace
      assert.doesNotMatch((await exec(f1.id, "ls -A /workspace; echo end")).stdout, /shared/);
      // an agent not of the flow cannot run in it
      const refused = await t.call("POST", `/api/flow-instances/${i1.body.id}/runs`, {
        agent_id: outsider.id,
        kind: "command",
        command: "true",
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, "request.invalid");

      const seen = (await t.call("GET", `/api/flow-instances/${i1.body.id}`)).body;
      assert.deepEqual(seen.run_ids, [w.id, r.id]);
      // ended: kept (with what its agents left there) and says where; no run starts in it
      const ended = await t.call("POST", `/api/flow-instances/${i1.body.id}/end`);
      assert.equal(ended.status, 200);
      assert.equal(ended.body.status, "ended");
      assert.ok(ended.body.ended_at);
      assert.equal(ended.body.workspace.host_path, path.join(root, "flows", i1.body.id, "workspace"));
      assert.equal(
        fs.readFileSync(path.join(ended.body.workspace.host_path, "shared.txt"), "utf8"),
        "from-f1\n",
      );
      assert.equal(fs.readFileSync(path.join(ended.body.workspace.host_path, "f2.txt"), "utf8"), "from-f2\n");
      assert.equal(ended.body.workspace.labels["warren.kind"], "flow");
      assert.equal(ended.body.workspace.labels["warren.flow_instance"], i1.body.id);
      const late = await t.call("POST", `/api/flow-instances/${i1.body.id}/runs`, {
        agent_id: f1.id,
        kind: "command",
        command: "true",
      });
      assert.equal(late.status, 409);
      assert.equal(late.body.error.code, "flow.instance_ended");
      // the agents' deletion leaves an instance's workspace in place (never cleaned automatically)
      assert.equal((await t.call("DELETE", `/api/agents/${f1.id}`)).status, 204);
      assert.ok(fs.existsSync(path.join(ended.body.workspace.host_path, "shared.txt")));
    });

    test("a conversation held in an instance: its turns work in the instance's workspace", async () => {
      const writer = await agent(machines.isolated, "writer", { workspace_class: "shared_instance" });
      const thinker = await agent(machines.shared, "thinker", {
        workspace_class: "shared_instance",
        kind: "assistant",
        model: { provider: "script", name: "s.json" },
        tools: [{ type: "builtin", name: "run_command" }],
        tool_policy: `permit(principal, action, resource);`,
      });
      const put = await t.inject({
        method: "PUT",
        url: `/api/agents/${thinker.id}/files/s.json`,
        payload: JSON.stringify([
          {
            tool_calls: [
              { name: "run_command", input: { command: "cat /workspace/notes.txt > /workspace/seen.txt" } },
            ],
          },
          { text: "done" },
        ]),
        headers: { "content-type": "application/octet-stream" },
      });
      assert.equal(put.statusCode, 204, put.body);
      const flow = (
        await t.call("POST", "/api/flows", {
          org_id: org.id,
          name: "talk",
          agent_ids: [writer.id, thinker.id],
        })
      ).body;
      const inst = (await t.call("POST", `/api/flows/${flow.id}/instances`, {})).body;
      const w = await runCommand(t, writer.id, "echo the-notes > /workspace/notes.txt", inst.id);
      assert.equal(w.status, "succeeded", JSON.stringify(w));

      const c = await t.call("POST", `/api/flow-instances/${inst.id}/conversations`, {
        agent_id: thinker.id,
      });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const m = await t.call("POST", `/api/conversations/${c.body.id}/messages`, { text: "read the notes" });
      assert.equal(m.status, 202, JSON.stringify(m.body));
      const end = Date.now() + 60_000;
      let run: any;
      for (;;) {
        run = (await t.call("GET", `/api/runs/${m.body.run_id}`)).body;
        if (TERMINAL_STATUSES.includes(run.status) || Date.now() > end) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.equal(fs.readFileSync(path.join(inst.workspace.host_path, "seen.txt"), "utf8"), "the-notes\n");
      const seen = (await t.call("GET", `/api/flow-instances/${inst.id}`)).body;
      assert.deepEqual(seen.conversation_ids, [c.body.id]);

      // once the instance ended, no turn starts in it
      assert.equal((await t.call("POST", `/api/flow-instances/${inst.id}/end`)).status, 200);
      const late = await t.call("POST", `/api/conversations/${c.body.id}/messages`, { text: "again" });
      assert.equal(late.status, 409);
      assert.equal(late.body.error.code, "flow.instance_ended");
    });

    test("/data and the contracts stay global and read-only under every class", async () => {
      const kept = await agent(machines.isolated, "ro-kept", { workspace_class: "private_scratch" });
      const fresh = await agent(machines.shared, "ro-fresh", {
        workspace_class: "private_scratch",
        memory: false,
      });
      const flowAgent = await agent(machines.isolated, "ro-flow", { workspace_class: "shared_instance" });
      const none = await agent(machines.shared, "ro-none");
      const flow = (
        await t.call("POST", "/api/flows", { org_id: org.id, name: "ro", agent_ids: [flowAgent.id] })
      ).body;
      const inst = (await t.call("POST", `/api/flows/${flow.id}/instances`, {})).body;
      const probe =
        "cat /data/ref.txt /opt/warren/contracts/flow.yaml; " +
        "for p in /data/new /data/ref.txt /opt/warren/contracts/new /opt/warren/contracts/flow.yaml; do " +
        '(echo x >> "$p") 2>/dev/null && echo "WROTE $p"; done; echo end';
      for (const [a, inInstance] of [
        [kept, undefined],
        [fresh, undefined],
        [flowAgent, inst.id],
        [none, undefined],
      ] as const) {
        const r = await runCommand(t, a.id, probe, inInstance);
        assert.equal(r.output, "reference\ncontract\nend\n", `${a.id}: ${r.output}`);
      }
      assert.equal(fs.readFileSync(path.join(root, "data", "ref.txt"), "utf8"), "reference\n");
    });
  });

describe("boot checks of workspaces", { skip: boxSkipReason() ?? false }, () => {
  test("a class an agent names but the policy file lacks refuses the boot, naming it; degraded, /health says so", async () => {
    const root = await stateWithPolicy();
    try {
      const t = await startTestServer({ stateRoot: root });
      let agentId: string;
      try {
        agentId = (await classAgent(t, "boot", "shared_instance")).a.id;
      } finally {
        await t.close();
      }
      await writeFile(
        path.join(root, "policy.yaml"),
        "workspace_classes:\n  private_scratch:\n    workspace_scope: per-agent\n",
      );
      await assert.rejects(startTestServer({ stateRoot: root }), (err: Error) => {
        assert.equal(err.name, "BootCheckError");
        assert.match(
          err.message,
          /cannot start: workspace_class_exists: agent \S+ names workspace_class "shared_instance"/,
        );
        assert.ok(err.message.includes(agentId));
        return true;
      });
      const d = await startTestServer({
        stateRoot: root,
        env: { WARREN_ALLOW_DEGRADED: "workspace_class_exists" },
      });
      try {
        const h = await d.call("GET", "/health");
        assert.equal(h.status, 200);
        assert.deepEqual(h.body.degraded, ["workspace_class_exists"]);
        const r = await d.call("POST", `/api/agents/${agentId}/exec`, { command: "true" });
        assert.equal(r.status, 409);
        assert.equal(r.body.error.code, "workspace.class_unknown");
      } finally {
        await d.close();
      }
    } finally {
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
    }
  });

  test("recovery finds an interrupted run's workspace by its labels and removes it; kept ones stay", async () => {
    const root = await stateWithPolicy();
    try {
      const t = await startTestServer({ stateRoot: root });
      let leftover: string;
      let kept: string;
      try {
        const { m, a } = await classAgent(t, "sweep", "private_scratch");
        // what a run cut short by a stop leaves: a unit of work's workspace with its labels
        const layout = t.server.workspaces.layout;
        leftover = await layout.prepareAgent(
          m.id,
          a.id,
          a.uid,
          agentLabels(a, "run_0000000000000000"),
          "run_0000000000000000",
        );
        kept = layout.agentHostDir(m.id, a.id);
        fs.writeFileSync(path.join(leftover, "x"), "x");
      } finally {
        await t.close();
      }
      const again = await startTestServer({ stateRoot: root });
      await again.close();
      assert.equal(fs.existsSync(leftover), false);
      assert.equal(fs.existsSync(kept), true);
    } finally {
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
    }
  });

  test("an unreadable /data and a policy file that does not hold refuse the boot, each named", async () => {
    const root = await stateWithPolicy("workspace_classes:\n  x:\n    workspace_scope: per-everyone\n");
    try {
      fs.mkdirSync(path.join(root, "data"), { mode: 0o700 });
      fs.chmodSync(path.join(root, "data"), 0o700);
      await assert.rejects(startTestServer({ stateRoot: root }), (err: Error) => {
        assert.equal(err.name, "BootCheckError");
        assert.match(
          err.message,
          /cannot start: data: the data folder \S+ is not readable by the boxes' agents/,
        );
        return true;
      });
      fs.chmodSync(path.join(root, "data"), 0o755);
      await assert.rejects(startTestServer({ stateRoot: root }), (err: Error) => {
        assert.match(
          err.message,
          /cannot start: policy: the policy file \S+policy.yaml does not hold: workspace_classes.x.workspace_scope/,
        );
        return true;
      });
    } finally {
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
    }
  });
});

describe("flows through the SDK", { skip: boxSkipReason() ?? false }, () => {
  test("a flow, an instance, a run in it, the end: the workspace kept where it says", async () => {
    const t = await serverWithPolicy({ listen: true });
    try {
      const client = new WarrenClient({ baseUrl: t.url! });
      const org = await client.orgs.create({ name: "sdk" });
      const m = await client.machines.create({ org_id: org.id, name: "m" });
      const a = await client.agents.create({
        org_id: org.id,
        machine_id: m.id,
        name: "a",
        workspace_class: "shared_instance",
      });
      assert.equal(a.workspace_class, "shared_instance");
      const flow = await client.flows.create({ org_id: org.id, name: "f", agent_ids: [a.id] });
      assert.deepEqual(
        (await client.flows.list(org.id)).items.map((f) => f.id),
        [flow.id],
      );
      const inst = await client.flows.start(flow.id, { name: "one" });
      const run = await client.flows.run(inst.id, {
        agent_id: a.id,
        kind: "command",
        command: "echo kept > /workspace/k",
      });
      const done = await client.runs.wait(run.id);
      assert.equal(done.status, "succeeded");
      const ended = await client.flows.end(inst.id);
      assert.equal(ended.status, "ended");
      assert.deepEqual(ended.run_ids, [run.id]);
      assert.equal(fs.readFileSync(path.join(ended.workspace.host_path, "k"), "utf8"), "kept\n");
      assert.deepEqual(
        (await client.flows.instances(flow.id)).items.map((i) => i.status),
        ["ended"],
      );
    } finally {
      await t.close();
    }
  });
});

describe("a terminal's /workspace", { skip: boxSkipReason() ?? false }, () => {
  test("a terminal of an agent with a class works in the same /workspace as its commands", async () => {
    const t = await serverWithPolicy({ listen: true });
    let x: Tty | undefined;
    try {
      const { a } = await classAgent(t, "tty", "private_scratch");
      const w = await t.call("POST", `/api/agents/${a.id}/exec`, {
        command: "echo from-exec > /workspace/e.txt",
      });
      assert.equal(w.body.exit_code, 0, JSON.stringify(w.body));
      x = await tty(`${t.url!.replace(/^http/, "ws")}/api/agents/${a.id}/cli/tty`);
      await x.message("attached");
      x.type("cat /workspace/e.txt; echo from-tty > /workspace/t.txt && echo wrote-$((6*7))\r");
      await x.expect(/from-exec[\s\S]*wrote-42/);
      const r = await t.call("POST", `/api/agents/${a.id}/exec`, { command: "cat /workspace/t.txt" });
      assert.equal(r.body.stdout, "from-tty\n");
    } finally {
      x?.ws.close();
      await t.close();
    }
  });
});
