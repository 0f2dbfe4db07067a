// Bridges through a real server: a command's connection to a bridge port in its box
// reaches the handler registered for that name, with the agent it comes from.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BOX_BRIDGES } from "../../src/boxes/index.js";
import type { BridgeWho } from "../../src/bridges/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("bridges through the server", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let machine: { id: string };
  let a: { id: string; uid: number };
  let b: { id: string; uid: number };
  const seen: BridgeWho[] = [];

  before(async () => {
    t = await startTestServer();
    const org = (await t.call("POST", "/api/orgs", { name: "bridges" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
    b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "b" })).body;
    t.server.bridges.register("gateway", (stream, who) => {
      seen.push(who);
      stream.end(`hello ${who.agentId} ${who.uid}\n`);
      stream.resume();
    });
  });
  after(async () => {
    await t?.server.runtime.stopAll("test over");
    await t?.close();
  });

  const exec = (agentId: string, command: string) =>
    t.call("POST", `/api/agents/${agentId}/exec`, { argv: ["/bin/bash", "-c", command] });
  const connect = (port: number) => `exec 3<>/dev/tcp/127.0.0.1/${port} || exit 7; cat <&3; echo "end $?"`;

  test("each agent's connection reaches the handler as that agent (isolated machine)", async () => {
    for (const agent of [a, b]) {
      const r = await exec(agent.id, connect(BOX_BRIDGES.gateway));
      assert.equal(r.body.exit_code, 0, JSON.stringify(r.body));
      assert.equal(r.body.stdout, `hello ${agent.id} ${agent.uid}\nend 0\n`);
    }
    assert.deepEqual(seen, [
      { machineId: machine.id, agentId: a.id, uid: a.uid },
      { machineId: machine.id, agentId: b.id, uid: b.uid },
    ]);
  });
});
