// A flow instance's workspace counts in the disk caps like a home: measured after each run
// in it (its `workspace.mib`), and over the host's WORKSPACE_MAX_MIB the next run in it is
// refused with workspace.full until space is freed.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { dbLegs } from "../support/db.js";
import { classAgent, commandRun, serverWithPolicy } from "./support.js";

for (const leg of dbLegs)
  test(
    `a flow instance's workspace is measured after each run and capped like a home (${leg.name})`,
    { skip: boxSkipReason() ?? leg.skip ?? false },
    async () => {
      const t = await serverWithPolicy({ leg, env: { WORKSPACE_MAX_MIB: "2" } });
      try {
        const { org, a } = await classAgent(t, "caps", "shared_instance");
        const flow = (await t.call("POST", "/api/flows", { org_id: org.id, name: "f", agent_ids: [a.id] }))
          .body;
        const inst = (await t.call("POST", `/api/flows/${flow.id}/instances`, {})).body;
        assert.equal(inst.workspace.mib, null, "not measured before a run");
        const run = (command: string) => commandRun(t, a.id, command, inst.id);
        const big = await run("head -c 3145728 /dev/urandom > /workspace/big && echo ok");
        assert.equal(big.body.status, "succeeded", JSON.stringify(big.body));
        const measured = (await t.call("GET", `/api/flow-instances/${inst.id}`)).body;
        assert.ok(measured.workspace.mib >= 3, JSON.stringify(measured.workspace));
        // the run's measurement names the instance's workspace too
        const events = (await t.call("GET", `/api/runs/${big.body.id}/events`)).body;
        const measurement = (events.items ?? events).find((e: { type: string }) => e.type === "measurement");
        assert.ok(measurement?.data?.flow_workspace_mib >= 3, JSON.stringify(measurement));

        // over the cap: the next run in the instance is refused before it starts
        const refused = await run("true");
        assert.equal(refused.status, 507, JSON.stringify(refused.body));
        assert.equal(refused.body.error.code, "workspace.full");
        assert.match(
          refused.body.error.message,
          new RegExp(`flow instance ${inst.id}'s workspace holds \\d+ MiB`),
        );
        // the agent outside the instance is not refused: the cap is the instance's
        const outside = await t.call("POST", `/api/agents/${a.id}/runs`, {
          kind: "command",
          command: "true",
        });
        assert.equal(outside.status, 202, JSON.stringify(outside.body));

        // space freed (from the host, where the instance says its workspace is) counts at once
        fs.rmSync(path.join(inst.workspace.host_path, "big"));
        const again = await run("echo fits");
        assert.equal(again.body.status, "succeeded", JSON.stringify(again.body));
        const after = (await t.call("GET", `/api/flow-instances/${inst.id}`)).body;
        assert.ok(after.workspace.mib < 2, JSON.stringify(after.workspace));
      } finally {
        await t.close();
      }
    },
  );
