// `warren flows ...` against a real server (trusted-header mode, PGlite, real boxes): a flow
// made of two agents, listed, an instance started, a run in it, the instance shown with its
// run, agents and workspace, then ended (its workspace kept where it says), and the refusals.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { runWarren, warrenJson } from "../support/cli.js";
import type { TestServer } from "../support/server.js";
import { serverWithPolicy } from "../workspaces/support.js";

describe("warren flows", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer | undefined;

  const warren = (argv: string[]) => runWarren(argv, { url: t?.url, as: "me@example.com" });
  const json = (argv: string[]) => warrenJson([...argv, "--json"], { url: t?.url, as: "me@example.com" });

  before(async () => {
    t = await serverWithPolicy({ listen: true, env: { AUTH_MODE: "trusted-header" } });
  });
  after(async () => {
    await t?.close();
  });

  test("create, list, start, run, show, end", async () => {
    const org = await json(["orgs", "create", "flows"]);
    const m = await json(["machines", "create", "m", "--org", org.id]);
    const agents = [];
    for (const name of ["one", "two"])
      agents.push(
        await json([
          "agents",
          "create",
          name,
          "--org",
          org.id,
          "--machine",
          m.id,
          "--workspace-class",
          "shared_instance",
        ]),
      );
    const [a, b] = agents;

    const made = await warren(["flows", "create", org.id, "review", "--agent", a.id, "--agent", b.id]);
    assert.equal(made.code, 0, made.stderr);
    const flowId = /^id\s+(flw_\S+)$/m.exec(made.stdout)?.[1];
    assert.ok(flowId, made.stdout);
    assert.match(made.stdout, /^name\s+review$/m);

    const list = await warren(["flows", "list", org.id]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+NAME\s+AGENTS/m);
    assert.match(list.stdout, new RegExp(`^${flowId}\\s+review\\s+\\S*${a.id}`, "m"));

    const started = await warren(["flows", "start", flowId, "--name", "first"]);
    assert.equal(started.code, 0, started.stderr);
    const instId = /^id\s+(fli_\S+)$/m.exec(started.stdout)?.[1];
    assert.ok(instId, started.stdout);
    assert.match(started.stdout, /^status\s+running$/m);

    // a run of each agent in the instance: they share its /workspace
    const first = await warren([
      "flows",
      "run",
      instId,
      "--agent",
      a.id,
      "--wait",
      "--",
      "sh",
      "-c",
      "echo hi > /workspace/note",
    ]);
    assert.equal(first.code, 0, first.stderr);
    const second = await warren([
      "flows",
      "run",
      instId,
      "--agent",
      b.id,
      "--wait",
      "--",
      "cat",
      "/workspace/note",
    ]);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, "hi\n");

    const shown = await warren(["flows", "show", instId]);
    assert.equal(shown.code, 0, shown.stderr);
    const inst = await json(["flows", "show", instId]);
    assert.equal(inst.runs.length, 2);
    for (const r of inst.runs) {
      assert.equal(r.status, "succeeded");
      assert.match(shown.stdout, new RegExp(`^${r.id}\\s+succeeded`, "m"));
    }
    assert.match(
      shown.stdout,
      new RegExp(`^workspace\\s+${inst.workspace.host_path.replace(/[/.]/g, "\\$&")}$`, "m"),
    );
    assert.match(shown.stdout, new RegExp(`^agents\\s+.*${a.id}`, "m"));

    const instances = await warren(["flows", "instances", flowId]);
    assert.match(instances.stdout, new RegExp(`^${instId}\\s+first\\s+running\\s+2`, "m"));

    const ended = await warren(["flows", "end", instId]);
    assert.equal(ended.code, 0, ended.stderr);
    assert.equal(ended.stdout, `${instId} ended; its workspace is kept at ${inst.workspace.host_path}\n`);
    assert.equal(fs.readFileSync(path.join(inst.workspace.host_path, "note"), "utf8"), "hi\n");

    // an ended instance takes no run; a run names exactly one agent; a flow names at least one
    const refused = await warren(["flows", "run", instId, "--agent", a.id, "--", "true"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /flow instance has ended/);
    const two = await warren(["flows", "run", instId, "--agent", a.id, "--agent", b.id, "--", "true"]);
    assert.equal(two.code, 2);
    assert.match(two.stderr, /name the agent that runs with --agent/);
    const none = await warren(["flows", "create", org.id, "empty"]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /name the flow's agents with --agent/);
  });
});
