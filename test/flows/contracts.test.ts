// Flows as files on real boxes: a contracts folder with two flows loads at boot and their
// instances run; an agent reads its own flow's folder at /opt/warren/contracts/self and cannot
// write it; a spec over its agent's permission bundle is refused; a reload brings a changed
// contract in (new instances carry the new revision, running ones keep theirs); a contract flow
// does not drift through the API; a broken contract stops the boot (and warren doctor) with
// its file and line.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { doctor } from "../../src/main.js";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { flowRun } from "../support/flows.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";

const POLICY = `workspace_classes:
  shared_instance:
    workspace_scope: per-flow-instance
permission_bundles:
  reader:
    description: reads and runs commands
    tools: [read_file, run_command]
    hosts: [api.example.com]
    secrets: []
`;

const contract = (name: string, agents: string[], extra = "") => `# the ${name} flow
name: ${name}
org: acme
description: ${name} things${extra}
agents:
${agents.map((a) => `  - name: ${a}\n    workspace_class: shared_instance\n    permission_bundle: reader`).join("\n")}
input:
  topic: { type: string, required: true }
files:
  - prompts/brief.md
`;

async function writeFlow(
  root: string,
  name: string,
  text: string,
  brief = `brief of ${name}\n`,
): Promise<void> {
  const dir = path.join(root, "contracts", name);
  await mkdir(path.join(dir, "prompts"), { recursive: true });
  await writeFile(path.join(dir, "flow.yaml"), text);
  await writeFile(path.join(dir, "prompts", "brief.md"), brief);
}

const env = { AUTH_MODE: "trusted-header" };

describe("flows as files on real boxes", { skip: boxSkipReason() ?? false }, () => {
  let root: string;
  let t: TestServer | undefined;
  const as =
    (email: string) =>
    (method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> => {
      if (!t) throw new Error("no server");
      return t.call(method, url, body, { "x-forwarded-email": email });
    };
  const owner = as(OWNER);
  /** A command run of the agent inside the instance, waited for until it ends. */
  const run = async (agentId: string, command: string, instanceId: string): Promise<{ body: any }> => ({
    body: await flowRun(owner, agentId, command, instanceId),
  });
  const agents: Record<string, string> = {};
  let orgId: string;
  const flows: Record<string, any> = {};

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "warren-contracts-"));
    await writeFile(path.join(root, "policy.yaml"), POLICY);
    // the organisation and its agents first, as an operator makes them before the contracts
    t = await startTestServer({ stateRoot: root, env });
    orgId = (await owner("POST", "/api/orgs", { name: "acme" })).body.id;
    assert.equal(
      (await owner("PUT", `/api/orgs/${orgId}/members`, { email: VIEWER, role: "viewer" })).status,
      200,
    );
    const m = (await owner("POST", "/api/machines", { org_id: orgId, name: "m" })).body;
    for (const name of ["writer", "editor", "checker"]) {
      const a = await owner("POST", "/api/agents", {
        org_id: orgId,
        machine_id: m.id,
        name,
        workspace_class: "shared_instance",
      });
      assert.equal(a.status, 201, JSON.stringify(a.body));
      agents[name] = a.body.id;
    }
    await t.close();
    t = undefined;
    await writeFlow(root, "review", contract("review", ["writer", "editor"]));
    await writeFlow(root, "audit", contract("audit", ["checker"]));
    t = await startTestServer({ stateRoot: root, env });
  });
  after(async () => {
    await t?.close();
    await rm(root, { recursive: true, force: true, maxRetries: 3 });
  });

  test("two contract flows load at boot and their instances run", async () => {
    const list = await owner("GET", `/api/flows?org_id=${orgId}`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    for (const f of list.body.items) flows[f.name] = f;
    assert.deepEqual(Object.keys(flows).sort(), ["audit", "review"]);
    assert.equal(flows.review.source, "contract");
    assert.match(flows.review.revision, /^sha256:[0-9a-f]{16}$/);
    assert.deepEqual(flows.review.agent_ids, [agents.writer, agents.editor].sort());
    assert.deepEqual(flows.audit.agent_ids, [agents.checker]);
    // the contract's input: required and typed
    const missing = await owner("POST", `/api/flows/${flows.review.id}/instances`, {});
    assert.equal(missing.status, 400, JSON.stringify(missing.body));
    assert.match(missing.body.error.message, /topic/);
    for (const [name, agent] of [
      ["review", agents.writer],
      ["audit", agents.checker],
    ] as const) {
      const i = await owner("POST", `/api/flows/${flows[name].id}/instances`, { input: { topic: "x" } });
      assert.equal(i.status, 201, JSON.stringify(i.body));
      assert.equal(i.body.revision, flows[name].revision);
      assert.deepEqual(i.body.input, { topic: "x" });
      const r = await run(agent!, "echo ran > /workspace/out && cat /workspace/out", i.body.id);
      assert.equal(r.body.status, "succeeded", JSON.stringify(r.body));
      assert.equal(r.body.output, "ran\n");
    }
  });

  test("an agent reads its own contract at /opt/warren/contracts/self and cannot write it", async () => {
    const i = (await owner("POST", `/api/flows/${flows.review.id}/instances`, { input: { topic: "y" } }))
      .body;
    const read = await run(
      agents.editor!,
      "cat /opt/warren/contracts/self/flow.yaml /opt/warren/contracts/self/prompts/brief.md",
      i.id,
    );
    assert.equal(read.body.status, "succeeded", JSON.stringify(read.body));
    assert.equal(read.body.output, `${contract("review", ["writer", "editor"])}brief of review\n`);
    const write = await run(
      agents.editor!,
      "echo x >> /opt/warren/contracts/self/flow.yaml; echo rc=$?; touch /opt/warren/contracts/self/new; echo rc=$?; touch /opt/warren/contracts/review/new; echo rc=$?",
      i.id,
    );
    assert.match(write.body.output, /rc=[1-9]\d*\n.*rc=[1-9]\d*\n.*rc=[1-9]\d*\n$/s, write.body.output);
    // the other flow's agent sees its own flow there
    const other = (await owner("POST", `/api/flows/${flows.audit.id}/instances`, { input: { topic: "z" } }))
      .body;
    const audit = await run(agents.checker!, "head -1 /opt/warren/contracts/self/flow.yaml", other.id);
    assert.equal(audit.body.output, "# the audit flow\n");
  });

  test("an agent spec over its permission bundle is refused with what is over", async () => {
    const over = await owner("PATCH", `/api/agents/${agents.writer}`, {
      tools: [
        { type: "builtin", name: "read_file" },
        { type: "builtin", name: "web_fetch" },
      ],
      sandbox_policy: { files: { read: [], write: [] }, network: { allow: ["evil.example.net"] } },
    });
    assert.equal(over.status, 400, JSON.stringify(over.body));
    assert.equal(over.body.error.code, "bundle.exceeded");
    assert.deepEqual(over.body.error.over, {
      tools: ["web_fetch"],
      hosts: ["evil.example.net"],
      secrets: [],
    });
    // a new version is held to the bundle too
    const version = await owner("POST", `/api/agents/${agents.writer}/versions`, {
      tools: [{ type: "builtin", name: "web_fetch" }],
    });
    assert.equal(version.status, 400, JSON.stringify(version.body));
    assert.deepEqual(version.body.error.over.tools, ["web_fetch"]);
    const within = await owner("PATCH", `/api/agents/${agents.writer}`, {
      tools: [{ type: "builtin", name: "read_file" }],
      sandbox_policy: { files: { read: [], write: [] }, network: { allow: ["api.example.com"] } },
    });
    assert.equal(within.status, 200, JSON.stringify(within.body));
  });

  test("a contract flow does not drift through the API", async () => {
    const patch = await owner("PATCH", `/api/flows/${flows.review.id}`, { name: "renamed" });
    assert.equal(patch.status, 409, JSON.stringify(patch.body));
    assert.equal(patch.body.error.code, "flow.from_contract");
    const twin = await owner("POST", "/api/flows", {
      org_id: orgId,
      name: "review",
      agent_ids: [agents.writer],
    });
    assert.equal(twin.status, 409, JSON.stringify(twin.body));
    assert.equal(twin.body.error.code, "flow.from_contract");
  });

  test("reload picks up a change: new instances carry the new revision, running ones keep theirs", async () => {
    const running = (
      await owner("POST", `/api/flows/${flows.review.id}/instances`, { input: { topic: "a" } })
    ).body;
    assert.equal(running.revision, flows.review.revision);
    assert.equal((await as(VIEWER)("POST", "/api/flows/reload")).status, 403);
    await writeFlow(root, "review", contract("review", ["writer", "editor"], " (second)"));
    const reload = await owner("POST", "/api/flows/reload");
    assert.equal(reload.status, 200, JSON.stringify(reload.body));
    const again = reload.body.flows.find((f: any) => f.name === "review");
    assert.equal(again.id, flows.review.id);
    assert.equal(again.file, "review/flow.yaml");
    assert.notEqual(again.revision, flows.review.revision);
    const fresh = (await owner("POST", `/api/flows/${flows.review.id}/instances`, { input: { topic: "b" } }))
      .body;
    assert.equal(fresh.revision, again.revision);
    assert.equal(
      (await owner("GET", `/api/flow-instances/${running.id}`)).body.revision,
      flows.review.revision,
    );
    const seen = await run(agents.editor!, "grep -c second /opt/warren/contracts/self/flow.yaml", fresh.id);
    assert.equal(seen.body.output, "1\n");
    // a broken contract refuses the reload, naming its file and line; nothing changes
    await writeFlow(
      root,
      "review",
      "name: review\norg: acme\nagents: [ {name: writer, permission_bundle: nope} ]\n",
    );
    const bad = await owner("POST", "/api/flows/reload");
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.error.code, "contract.invalid");
    assert.deepEqual(
      { file: bad.body.error.problem.file, line: bad.body.error.problem.line },
      { file: "review/flow.yaml", line: 3 },
    );
    assert.equal((await owner("GET", `/api/flows/${flows.review.id}`)).body.revision, again.revision);
  });
});

describe("a broken contract stops the boot", () => {
  test("the server refuses to start, and warren doctor says the same, with the file and line", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "warren-contracts-bad-"));
    try {
      await writeFile(path.join(root, "policy.yaml"), POLICY);
      await writeFlow(root, "good", contract("good", ["writer"]));
      await writeFlow(
        root,
        "broken",
        "name: broken\norg: acme\nagents:\n  - name: w\n    permission_bundle: reader\n    colour: blue\n",
      );
      await assert.rejects(startTestServer({ stateRoot: root }), (err: Error) => {
        assert.match(err.message, /contracts_loaded/);
        assert.match(err.message, /broken\/flow\.yaml does not hold at line 6: agents\.0\.colour/);
        return true;
      });
      let printed = "";
      const code = await doctor({ STATE_ROOT: root, LOG_LEVEL: "silent" }, async (text) => {
        printed += text;
      });
      assert.equal(code, 1);
      assert.match(printed, /contracts_loaded/);
      assert.match(printed, /broken\/flow\.yaml does not hold at line 6/);
    } finally {
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
    }
  });
});
