// A server killed with SIGKILL during runs, one inside a flow instance and one of a
// `memory: false` agent: the next server finds each run's part of its box and its workspaces
// by their labels, never by a name; the instance's workspace is kept, the run's own goes.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { DirRunStaging } from "../../src/runs/staging.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { startTestServer } from "../support/server.js";
import { crashableServe } from "../support/recovery.js";
import { builtCli } from "../support/serve.js";
import { stateWithPolicy } from "./support.js";

test(
  "a server killed mid-run: recovery finds the runs' box parts and workspaces by their labels",
  {
    skip:
      boxSkipReason() ?? (fs.existsSync(builtCli) ? false : "dist/cli/main.js is missing: run npm run build"),
  },
  async () => {
    const stateRoot = await stateWithPolicy();
    const served = await crashableServe(stateRoot);
    const { call, provider } = served;
    // the run parts' labels, read as recovery reads them (no name is guessed)
    const staging = new DirRunStaging((id) => provider.runFilesDir(id));
    try {
      await served.start();
      const org = (await call("POST", "/api/orgs", { name: "r" })).body;
      const m = (await call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
      const member = (
        await call("POST", "/api/agents", {
          org_id: org.id,
          machine_id: m.id,
          name: "member",
          workspace_class: "shared_instance",
        })
      ).body;
      const forgetful = (
        await call("POST", "/api/agents", {
          org_id: org.id,
          machine_id: m.id,
          name: "forgetful",
          workspace_class: "private_scratch",
          memory: false,
        })
      ).body;
      const flow = (await call("POST", "/api/flows", { org_id: org.id, name: "f", agent_ids: [member.id] }))
        .body;
      const inst = (await call("POST", `/api/flows/${flow.id}/instances`, { name: "one" })).body;
      const inFlow = await call("POST", `/api/flow-instances/${inst.id}/runs`, {
        agent_id: member.id,
        kind: "command",
        command: "echo kept > /workspace/seen && sleep 300",
      });
      assert.equal(inFlow.status, 202, JSON.stringify(inFlow.body));
      const own = await call("POST", `/api/agents/${forgetful.id}/runs`, {
        kind: "command",
        command: "echo gone > /workspace/mine && sleep 300",
      });
      assert.equal(own.status, 202, JSON.stringify(own.body));
      const seen = path.join(inst.workspace.host_path, "seen");
      await waitFor("the runs wrote in their workspaces", async () => {
        if (!fs.existsSync(seen)) return false;
        const r = (await call("GET", `/api/runs/${own.body.id}`)).body;
        return (
          r.status === "running" && (await staging.find([m.id], { "warren.run": own.body.id })).length > 0
        );
      });

      // each run's part of the box carries its labels: kind, owner, run, agent, flow instance
      const parts = await staging.find([m.id]);
      const flowPart = parts.find((p) => p.runId === inFlow.body.id);
      assert.deepEqual(flowPart?.labels, {
        "warren.kind": "flow",
        "warren.owner": org.id,
        "warren.run": inFlow.body.id,
        "warren.agent": member.id,
        "warren.machine": m.id,
        "warren.flow": flow.id,
        "warren.flow_instance": inst.id,
        "warren.reset.eligible": "true",
      });
      const ownPart = parts.find((p) => p.runId === own.body.id);
      assert.equal(ownPart?.labels["warren.kind"], "agent");
      assert.equal(ownPart?.labels["warren.owner"], org.id);
      assert.equal(ownPart?.labels["warren.agent"], forgetful.id);
      assert.equal(ownPart?.labels["warren.flow_instance"], undefined);

      await served.crash();

      const lines: string[] = [];
      const t = await startTestServer({
        stateRoot,
        env: { LOG_LEVEL: "info" },
        logDestination: { write: (line) => void lines.push(line) },
      });
      try {
        const found = lines
          .map((l) => JSON.parse(l) as { msg?: string; left?: unknown[] })
          .find((l) => l.msg === "what runs cut short left behind, found by label");
        assert.ok(found, "recovery says what it found");
        const left = found.left as {
          runId: string;
          machineId: string;
          labels: Record<string, string>;
          workspaces: { dir: string; kept: boolean }[];
        }[];
        const byRun = new Map(left.map((l) => [l.runId, l]));
        const f = byRun.get(inFlow.body.id);
        assert.equal(f?.machineId, m.id);
        assert.equal(f?.labels["warren.flow_instance"], inst.id);
        assert.deepEqual(f?.workspaces, [{ dir: path.dirname(inst.workspace.host_path), kept: true }]);
        const o = byRun.get(own.body.id);
        assert.equal(o?.workspaces.length, 1);
        assert.equal(o?.workspaces[0]?.kept, false);
        assert.ok(o?.workspaces[0]?.dir.includes(own.body.id), JSON.stringify(o));
        // the parts are gone, the run's own workspace too; the instance's is kept as it was
        assert.deepEqual(await staging.find([m.id]), []);
        assert.equal(fs.existsSync(o.workspaces[0].dir), false);
        assert.equal(fs.readFileSync(seen, "utf8"), "kept\n");
        for (const id of [inFlow.body.id, own.body.id])
          assert.equal((await t.call("GET", `/api/runs/${id}`)).body.status, "lost");
      } finally {
        await t.close();
      }
    } finally {
      await served.close();
    }
  },
);
