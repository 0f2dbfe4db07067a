// The local-audited box provider, loaded from outside src/ through WARREN_EXTENSIONS into a
// real server: an exec runs in a real local box, and the box's lifecycle is in the audit file.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { boxSkipReason } from "../../test/box/fixture.js";
import { startTestServer, type TestServer } from "../../test/support/server.js";

const extension = path.join(path.dirname(fileURLToPath(import.meta.url)), "index.js");

describe("the local-audited provider (an extension)", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer | undefined;
  let dir: string;
  let log: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "warren-audit-"));
    log = path.join(dir, "audit.jsonl");
    t = await startTestServer({
      env: { WARREN_EXTENSIONS: extension, WARREN_PROVIDER: "local-audited", WARREN_AUDIT_LOG: log },
    });
  });
  // close() removes every box the provider knows, then stops the server
  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("an exec runs in a box the wrapped local provider made, and its start is audited", async () => {
    const s = t as TestServer;
    assert.equal(s.server.provider.name, "local", "the wrapped provider's boxes keep its name");
    const org = (await s.call("POST", "/api/orgs", { name: "audited" })).body;
    const machine = (await s.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 }))
      .body;
    const agent = (await s.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }))
      .body;
    const r = await s.call("POST", `/api/agents/${agent.id}/exec`, { command: "echo audited" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.stdout, "audited\n");
    const lines = (await readFile(log, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { op: string; box: string; ok: boolean });
    const boxes = await s.server.provider.list();
    assert.equal(boxes.length, 1);
    const mine = lines.filter((l) => l.box === boxes[0]?.id);
    assert.ok(
      mine.some((l) => l.op === "create" && l.ok) && mine.some((l) => l.op === "start" && l.ok),
      JSON.stringify(lines),
    );
    // a pause, the resume of the next command, and a stop go through the wrapper too
    const paused = await s.call("POST", `/api/machines/${machine.id}/pause`);
    assert.equal(paused.body.state, "paused", JSON.stringify(paused.body));
    const again = await s.call("POST", `/api/agents/${agent.id}/exec`, { command: "echo again" });
    assert.equal(again.body.stdout, "again\n", JSON.stringify(again.body));
    const stopped = await s.call("POST", `/api/machines/${machine.id}/stop`);
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    const ops = (await readFile(log, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { op: string; box: string; ok: boolean })
      .filter((l) => l.box === boxes[0]?.id && l.ok)
      .map((l) => l.op);
    assert.deepEqual(ops.slice(-3), ["pause", "resume", "stop"], JSON.stringify(ops));
  });

  test("an unknown provider is refused at start, naming the known ones", async () => {
    await assert.rejects(
      startTestServer({ env: { WARREN_PROVIDER: "no-such-provider" } }),
      /WARREN_PROVIDER must be one of local, oci, kubernetes/,
    );
  });
});
