// Graceful stop: runs going on may finish within the grace period, the rest are recorded
// as interrupted; --stop-boxes stops the boxes instead of leaving them for adoption.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { parseConfig } from "../../src/config/index.js";
import { createServer, type Server } from "../../src/server.js";
import { boxSkipReason } from "../box/fixture.js";

describe("graceful stop", { skip: boxSkipReason() ?? false }, () => {
  test("a short run finishes, a long one is interrupted, boxes are stopped with stopBoxes", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "warren-stop-"));
    const config = parseConfig({ STATE_ROOT: root, LOG_LEVEL: "silent", WARREN_PORT: "0" });
    let s: Server | undefined = await createServer(config, { defaultMetrics: false });
    try {
      const call = async (method: "GET" | "POST", url: string, payload?: object) =>
        (await s!.app.inject({ method, url, ...(payload ? { payload } : {}) })).json();
      const org = await call("POST", "/api/orgs", { name: "stop" });
      const m = await call("POST", "/api/machines", { org_id: org.id, name: "m" });
      const a = await call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" });
      const b = await call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "b" });
      const short = await call("POST", `/api/agents/${a.id}/runs`, {
        kind: "command",
        command: "sleep 1; echo finished",
      });
      const long = await call("POST", `/api/agents/${b.id}/runs`, { kind: "command", command: "sleep 600" });
      const end = Date.now() + 30_000;
      while ((await call("GET", `/api/runs/${long.id}`)).status !== "running") {
        if (Date.now() > end) throw new Error("the long run never started");
        await new Promise((r) => setTimeout(r, 50));
      }
      await s.close({ graceMs: 4000, stopBoxes: true });
      const provider = s.provider;
      s = undefined;
      assert.deepEqual(
        (await provider.list()).map((x) => x.state),
        ["stopped"],
        "--stop-boxes: the box is stopped",
      );
      // the records, as the next server sees them
      s = await createServer(config, { defaultMetrics: false });
      const r1 = await call("GET", `/api/runs/${short.id}`);
      assert.equal(r1.status, "succeeded");
      assert.equal(r1.output, "finished\n");
      const r2 = await call("GET", `/api/runs/${long.id}`);
      assert.equal(r2.status, "cancelled");
      assert.match(r2.status_reason, /^interrupted: the server stopped \(the 4 s grace period was over\)$/);
    } finally {
      if (s) {
        for (const box of await s.provider.list()) await s.provider.remove(box.id).catch(() => {});
        await s.close();
      }
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
    }
  });
});
